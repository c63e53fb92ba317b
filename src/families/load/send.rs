//! Sending one request of a burst to its last body byte: on the user's
//! own HTTP/1.1 connection (`lean.rs`) or through the reqwest client (a
//! proxied target), with the origin guard, a due OAuth2 token renewed, the
//! request's timeout and the burst's cut; what came back as a status or a
//! transport error kind, and the contract sample's share of the answers.

use std::time::Instant;

use super::engine::{Pick, Shared, CUT, TLS};
use super::sample;
use super::stats::Result_;
use crate::families::load::engine::on_origin;
use crate::http::{RecordedRequest, RecordedResponse, Rendered};

impl Shared {
    /// `rendered` with a fresh OAuth2 token when it carries one of the
    /// suite's that is due (the keeper was late, or a duplicate resends an
    /// old request): the user waits for the fetch before its send, so an
    /// expired token is never the target's 401. `None`: send it as it is
    /// (no token of ours, still fresh, or no new one to be had: the keeper
    /// reports that).
    async fn renewed_token(&self, rendered: &Rendered) -> Option<Rendered> {
        let auth = self.target.auth.as_ref()?;
        let header = rendered.header("authorization")?;
        if !auth.is_stale_bearer(header) {
            return None;
        }
        let token = auth.token().await.ok()?;
        let mut r = rendered.clone();
        r.set_header("Authorization", format!("Bearer {token}"));
        Some(r)
    }

    /// Sends `p` to its last body byte: (sent, done, result). A request that
    /// is not where the guard allowed its kind to go is not sent.
    pub(super) async fn send(
        &self,
        client: &reqwest::Client,
        conn: &mut Option<super::lean::UserConn>,
        p: &Pick,
    ) -> (Instant, Instant, Result_) {
        let rendered = &p.rendered;
        let origin = &self.origins[p.kind];
        if !on_origin(&rendered.url, origin) {
            let now = Instant::now();
            return (now, now, Result_::Transport("destination"));
        }
        let renewed = self.renewed_token(rendered).await;
        let rendered = renewed.as_ref().unwrap_or(rendered);
        if let Some(kind) = &self.lean[p.kind] {
            // A renewed token is in `rendered`, not in the fixed head.
            let key = p
                .keyed
                .then(|| {
                    let h = &self.plan.idempotency_header;
                    rendered.header(h).map(|v| (h.as_str(), v))
                })
                .flatten();
            let fixed_ok = renewed.is_none();
            if let Some(req) = super::lean::request(kind, rendered, key, fixed_ok) {
                return self.send_lean(kind, conn, req, p, rendered).await;
            }
        }
        let mut b = client.request(rendered.method.clone(), &rendered.url);
        for (k, v) in &rendered.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        if !rendered.body.is_empty() {
            b = b.body(rendered.body.clone());
        }
        let mut cut = self.cut.subscribe();
        let sent = Instant::now();
        let exchange = tokio::time::timeout(rendered.timeout, async {
            let mut resp = b.send().await?;
            let status = resp.status().as_u16();
            let sampled = self
                .sample
                .as_ref()
                .is_some_and(|s| s.wants(p.kind, status));
            let followed = self.follows(p.kind, status);
            let mut kept =
                (sampled || followed).then(|| (sample::headers_of(resp.headers()), Vec::new()));
            // To the last byte (goose's own clock would stop at the first),
            // dropping each chunk (but the contract sample's): a huge body
            // costs no memory.
            while let Some(chunk) = resp.chunk().await? {
                if let Some((_, body)) = &mut kept {
                    if body.len() + chunk.len() > sample::MAX_BODY {
                        kept = None;
                    } else {
                        body.extend_from_slice(&chunk);
                    }
                }
            }
            Ok::<_, reqwest::Error>((status, kept, sampled, followed))
        });
        let res = unless_cut(&mut cut, exchange).await;
        let done = Instant::now();
        let result = match res {
            None => Result_::Transport(CUT),
            Some(Err(_)) => Result_::Transport("timeout"),
            // A failed handshake reads as `connect` to reqwest: name it, so
            // the burst's error says TLS, not "is the target up".
            Some(Ok(Err(e))) if crate::http::tls::explain(&e).is_some() => Result_::Transport(TLS),
            Some(Ok(Err(e))) => Result_::Transport(if e.is_connect() {
                "connect"
            } else if e.is_timeout() {
                "timeout"
            } else if e.is_body() || e.is_decode() {
                "body"
            } else {
                "transport"
            }),
            Some(Ok(Ok((status, kept, sampled, followed)))) => {
                if followed {
                    self.record_created(kept.as_ref(), sent, done);
                }
                if let (Some(s), Some((headers, body)), true) = (&self.sample, kept, sampled) {
                    // Judged after `done`: the sample's cost is not latency.
                    let response = RecordedResponse {
                        status,
                        headers,
                        body,
                    };
                    s.judge(&RecordedRequest::capture(rendered), &response);
                }
                Result_::Status {
                    status,
                    success: self.plan.mix[p.kind].success.matches(status),
                }
            }
        };
        (sent, done, result)
    }

    /// Whether this answer's body is read for the id of its event (LOAD-006).
    fn follows(&self, kind: usize, status: u16) -> bool {
        self.created
            .as_ref()
            .is_some_and(|c| c.wants(kind, self.plan.mix[kind].success.matches(status)))
    }

    /// Hands a followed success to the event tracker; `kept` is None when
    /// its body was over the cap.
    fn record_created(&self, kept: Option<&super::lean::Kept>, sent: Instant, done: Instant) {
        if let Some(c) = &self.created {
            c.record(kept.map(|(_, body)| body.as_slice()), sent, done);
        }
    }

    /// [`Shared::send`] on the user's own connection (`lean.rs`).
    async fn send_lean(
        &self,
        kind: &super::lean::LeanKind,
        conn: &mut Option<super::lean::UserConn>,
        req: http::Request<http_body_util::Full<bytes::Bytes>>,
        p: &Pick,
        rendered: &Rendered,
    ) -> (Instant, Instant, Result_) {
        let mut cut = self.cut.subscribe();
        let sample = self.sample.as_ref();
        let sent = Instant::now();
        let exchange = tokio::time::timeout(rendered.timeout, async {
            let mut req = req;
            // Once more on a new connection when the first was closed
            // before the request was written (an idle keep-alive timeout).
            for _ in 0..2 {
                if !conn.as_ref().is_some_and(|c| c.usable()) {
                    *conn = Some(super::lean::open(&kind.origin, self.cut.subscribe()).await?);
                }
                let Some(c) = conn.as_mut() else {
                    return Err("connect");
                };
                let mut flags = (false, false);
                let keep = |status| {
                    flags = (
                        sample.is_some_and(|s| s.wants(p.kind, status)),
                        self.follows(p.kind, status),
                    );
                    flags.0 || flags.1
                };
                match super::lean::exchange(c, req, keep, sample::MAX_BODY).await {
                    Ok(a) => return Ok((a, flags)),
                    Err(super::lean::Failed::NotSent(back)) => {
                        *conn = None;
                        req = *back;
                    }
                    Err(super::lean::Failed::Kind(k)) => return Err(k),
                }
            }
            Err("transport")
        });
        let res = unless_cut(&mut cut, exchange).await;
        let done = Instant::now();
        let result = match res {
            None => Result_::Transport(CUT),
            Some(Err(_)) => Result_::Transport("timeout"),
            Some(Ok(Err(kind))) => Result_::Transport(kind),
            Some(Ok(Ok((answer, (sampled, followed))))) => {
                if followed {
                    self.record_created(answer.kept.as_ref(), sent, done);
                }
                if let (Some(s), Some((headers, body)), true) = (sample, answer.kept, sampled) {
                    let response = RecordedResponse {
                        status: answer.status,
                        headers,
                        body,
                    };
                    s.judge(&RecordedRequest::capture(rendered), &response);
                }
                Result_::Status {
                    status: answer.status,
                    success: self.plan.mix[p.kind].success.matches(answer.status),
                }
            }
        };
        // A connection that failed or was left mid-answer is not reused.
        if !matches!(result, Result_::Status { .. }) {
            *conn = None;
        }
        (sent, done, result)
    }
}

/// `f`'s output, or None when the burst is cut first: the cut wins over an
/// exchange still in flight, and dropping it closes the connection, so the
/// burst ends within a tick of its deadline.
async fn unless_cut<F: std::future::Future>(
    cut: &mut tokio::sync::watch::Receiver<bool>,
    f: F,
) -> Option<F::Output> {
    tokio::select! {
        biased;
        _ = cut.wait_for(|c| *c) => None,
        r = f => Some(r),
    }
}
