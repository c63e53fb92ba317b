//! What a check may use while it runs (`CheckContext`), and the rule that
//! keeps high-volume checks and bursts on loopback targets unless
//! `--allow-remote-load` is given.

use tokio::sync::mpsc::UnboundedSender;

use crate::http::{Client, Target};
use crate::redact::Redactor;

/// What a check may use while it runs.
#[derive(Clone)]
pub struct CheckContext {
    pub client: Client,
    pub target: Target,
    /// Progress notes ("waiting 3 s for Retry-After") shown live on the console.
    pub notes: UnboundedSender<String>,
    pub redactor: Redactor,
    /// `--allow-remote-load`: high-volume checks may go to a non-loopback target.
    pub allow_remote_load: bool,
    /// Where a sink check's webhook receiver listens and how it is reached.
    pub sink: crate::sink::SinkEndpoint,
    /// The largest request body a `client.*` check's mock upstream accepts.
    pub upstream_max_body: usize,
    /// `--upstream-cert`: the mock upstream serves https.
    pub upstream_tls: Option<crate::http::tls_server::ServerTls>,
    /// Where a `dependency.*` check's double listens and how it is reached.
    pub dependency: crate::double::DependencyEndpoint,
    /// The limit an earlier check reached and handed on, and whether this
    /// check hands its own on (`run::order`).
    pub exhaustion: super::block::Exhaustion,
    /// The embedded reference's production twin (`auth.sandbox_isolated`
    /// without `production.base_url`), for a suite run against the
    /// embedded reference only.
    pub production_twin: Option<String>,
    /// The ids the run's other answers carried (`trace.unique` counts them).
    pub seen: super::seen::Seen,
}

/// A check that sends more requests than this, or more at once than
/// [`HIGH_VOLUME_CONCURRENCY`], is load: like a burst, it goes only to a
/// loopback target unless `--allow-remote-load` is given.
pub const HIGH_VOLUME_REQUESTS: u64 = 1000;
pub const HIGH_VOLUME_CONCURRENCY: u64 = 32;

/// How many requests a planned check may send at most, and how many at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Volume {
    pub requests: u64,
    pub concurrency: u64,
}

impl Volume {
    pub fn is_high(self) -> bool {
        self.requests > HIGH_VOLUME_REQUESTS || self.concurrency > HIGH_VOLUME_CONCURRENCY
    }
}

impl CheckContext {
    pub fn note(&self, msg: impl Into<String>) {
        let _ = self.notes.send(msg.into());
    }
}

/// Why load sent to `url` would leave this machine, or `None` when it
/// stays on it: the loopback rule is about the destination, and a proxy
/// between is someone else's machine whatever the destination (load goes
/// through a proxy only with `--allow-remote-load`).
pub fn remote_because(url: &str) -> Option<String> {
    if let Some(p) = crate::http::proxy::installed_for(url) {
        return Some(format!(
            "it goes through the proxy {}",
            crate::http::proxy::shown(p)
        ));
    }
    (!is_loopback(url)).then(|| "not a loopback address".to_owned())
}

/// True when `base_url` points at this machine (127.0.0.0/8, ::1, localhost).
pub fn is_loopback(base_url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = u.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
