//! The dependency double: tminus plays the API's own dependency (a payment
//! provider, a CRM), the fifth role (`dependency.*` checks).
//!
//! The API under test is pointed at [`Double::url`] (through the check's
//! `setup:` requests and `${var.dependency_url}`, or by its own configuration
//! with `--dependency-listen` at a fixed address). The check drives the
//! double through [`Phase`]s (healthy, slow, hang, 5xx, 503 + Retry-After)
//! while it sends its own requests, and the double journals every attempt:
//! when it arrived, when it ended and whether the caller abandoned it (closed
//! the connection before the answer went out), and which tminus request it
//! belongs to, read from the `traceparent` trace id the API propagated (or a
//! configured header). The judges work from that journal.
//!
//! Abandonment is seen the way the webhook sink sees it: hyper drops a
//! handler's future when its connection closes, and a guard in the handler
//! records the moment it was dropped. Bounded: a `hang` answers 504 after
//! [`HANG_CAP`], the journal keeps at most [`MAX_ATTEMPTS`] attempts, bodies
//! are read up to [`MAX_BODY`] bytes, and [`Double::shutdown`] aborts every
//! connection.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;

/// Longest a `hang` holds an attempt (then 504), so nothing waits forever.
pub const HANG_CAP: Duration = Duration::from_secs(30);
/// Most attempts journaled; later ones are counted in [`Double::overflow`].
pub const MAX_ATTEMPTS: usize = 100_000;
/// Largest request body read (bigger ones are answered 413 and journaled).
pub const MAX_BODY: usize = 1 << 20;

/// Where the double listens and how the API reaches it.
#[derive(Debug, Clone)]
pub struct DependencyEndpoint {
    pub listen: SocketAddr,
    /// Base URL that leads to `listen` (no trailing `/`); `None`: the listen
    /// address itself.
    pub public_url: Option<String>,
}

impl Default for DependencyEndpoint {
    fn default() -> Self {
        DependencyEndpoint {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            public_url: None,
        }
    }
}

/// How the double answers while a phase lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    /// 200 at once.
    Healthy,
    /// 200 after the delay.
    Slow(Duration),
    /// No answer until the caller gives up (or [`HANG_CAP`]).
    Hang,
    /// This status (a 5xx) after the delay.
    Fail(u16, Duration),
    /// 503 with `Retry-After: N` seconds, at once.
    Unavailable { retry_after_secs: u64 },
}

impl Phase {
    /// `slow 300ms`, `hang`, `503 after 100ms`, ...
    pub fn describe(&self) -> String {
        match self {
            Phase::Healthy => "healthy".into(),
            Phase::Slow(d) => format!("slow {}", crate::fmt_duration(*d)),
            Phase::Hang => "hang".into(),
            Phase::Fail(s, d) if d.is_zero() => format!("{s}"),
            Phase::Fail(s, d) => format!("{s} after {}", crate::fmt_duration(*d)),
            Phase::Unavailable { retry_after_secs } => {
                format!("503 Retry-After {retry_after_secs}")
            }
        }
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The double answered this status.
    Answered(u16),
    /// The caller closed the connection before the answer went out.
    Abandoned,
    /// Still open when the journal was read.
    Open,
}

/// One attempt as the double saw it.
#[derive(Debug, Clone)]
pub struct DepAttempt {
    /// Arrival, since the double started.
    pub at: Duration,
    /// When it ended (answered or abandoned); `None` while open.
    pub ended_at: Option<Duration>,
    pub end: End,
    pub method: String,
    pub path: String,
    /// The tminus request it belongs to: the trace id of its `traceparent`
    /// (or the value of the configured attribution header).
    pub request: Option<String>,
    pub idempotency_key: Option<String>,
    /// The phase that answered it (index into the phases set so far).
    pub phase: usize,
}

impl DepAttempt {
    /// How long the attempt lasted, if it ended.
    pub fn held(&self) -> Option<Duration> {
        self.ended_at.map(|e| e.saturating_sub(self.at))
    }
}

struct Inner {
    started: Instant,
    /// (phase, index of the phase since the start).
    phase: Mutex<(Phase, usize)>,
    journal: Mutex<Vec<DepAttempt>>,
    overflow: Mutex<u64>,
    /// `None`: the trace id of `traceparent`.
    attribution: Option<String>,
}

/// A running double on its listen address.
pub struct Double {
    addr: SocketAddr,
    url: String,
    inner: Arc<Inner>,
    serving: crate::http::serve_task::ServeTask,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a handler panicked; the data is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Double {
    /// Binds `at.listen`, healthy until told otherwise. `attribution` names a
    /// header carrying the tminus request's id; `None`: `traceparent`.
    pub async fn start(
        at: &DependencyEndpoint,
        attribution: Option<String>,
    ) -> std::io::Result<Double> {
        let listener = tokio::net::TcpListener::bind(at.listen).await?;
        let addr = listener.local_addr()?;
        let url = at
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{addr}"));
        let inner = Arc::new(Inner {
            started: Instant::now(),
            phase: Mutex::new((Phase::Healthy, 0)),
            journal: Mutex::new(Vec::new()),
            overflow: Mutex::new(0),
            attribution: attribution.map(|h| h.to_ascii_lowercase()),
        });
        let app = Router::new()
            .fallback(handle)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(inner.clone());
        let serving = crate::http::serve_task::ServeTask::spawn(|stop| async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stop.await;
            });
            let _ = serve.await;
        });
        Ok(Double {
            addr,
            url,
            inner,
            serving,
        })
    }

    /// The base URL the API is given (`${var.dependency_url}`).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn listen_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Time since the double started (the origin of every offset).
    pub fn now(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// Answers every later attempt as `phase`; returns the phase's index.
    pub fn set_phase(&self, phase: Phase) -> usize {
        let mut p = lock(&self.inner.phase);
        p.1 += 1;
        p.0 = phase;
        p.1
    }

    /// Every attempt so far, in arrival order.
    pub fn journal(&self) -> Vec<DepAttempt> {
        let mut v = lock(&self.inner.journal).clone();
        v.sort_by_key(|a| a.at);
        v
    }

    /// Attempts not journaled (past [`MAX_ATTEMPTS`]).
    pub fn overflow(&self) -> u64 {
        *lock(&self.inner.overflow)
    }

    /// Stops serving; open attempts are aborted within 1 s.
    pub async fn shutdown(self) {
        self.serving.shutdown().await;
    }
}

/// The trace id (second field) of a W3C `traceparent`, lowercase.
pub fn traceparent_trace_id(v: &str) -> Option<String> {
    let mut parts = v.trim().split('-');
    let (_version, id) = (parts.next()?, parts.next()?);
    (id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_ascii_lowercase())
}

/// Records the attempt's end when dropped: by the answer, or by hyper when
/// the caller closed the connection first.
struct EndGuard {
    inner: Arc<Inner>,
    slot: Option<usize>,
    answered: Option<u16>,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        let Some(i) = self.slot else { return };
        let now = self.inner.started.elapsed();
        if let Some(a) = lock(&self.inner.journal).get_mut(i) {
            a.ended_at = Some(now);
            a.end = match self.answered {
                Some(s) => End::Answered(s),
                None => End::Abandoned,
            };
        }
    }
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let at = inner.started.elapsed();
    let (phase, index) = *lock(&inner.phase);
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let request = match &inner.attribution {
        None => header("traceparent").and_then(|v| traceparent_trace_id(&v)),
        Some(h) => header(h).filter(|v| !v.is_empty()),
    };
    let slot = {
        let mut j = lock(&inner.journal);
        if j.len() < MAX_ATTEMPTS {
            j.push(DepAttempt {
                at,
                ended_at: None,
                end: End::Open,
                method: method.to_string(),
                path: uri.path().to_owned(),
                request,
                idempotency_key: header("idempotency-key"),
                phase: index,
            });
            Some(j.len() - 1)
        } else {
            *lock(&inner.overflow) += 1;
            None
        }
    };
    let mut guard = EndGuard {
        inner: inner.clone(),
        slot,
        answered: None,
    };
    if axum::body::to_bytes(body, MAX_BODY).await.is_err() {
        guard.answered = Some(413);
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    }
    let (status, delay, retry_after) = match phase {
        Phase::Healthy => (200, Duration::ZERO, None),
        Phase::Slow(d) => (200, d, None),
        Phase::Hang => (504, HANG_CAP, None),
        Phase::Fail(s, d) => (s, d, None),
        Phase::Unavailable { retry_after_secs } => (503, Duration::ZERO, Some(retry_after_secs)),
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    guard.answered = Some(status);
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = if (200..300).contains(&status) {
        format!(
            "{{\"id\":\"ch_{}\",\"status\":\"succeeded\"}}",
            uuid::Uuid::new_v4().simple()
        )
    } else {
        format!("{{\"error\":{{\"status\":{status}}}}}")
    };
    let mut resp = (code, [("content-type", "application/json")], body).into_response();
    if let Some(s) = retry_after {
        if let Ok(v) = axum::http::HeaderValue::from_str(&s.to_string()) {
            resp.headers_mut().insert("retry-after", v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_are_read_from_traceparent() {
        assert_eq!(
            traceparent_trace_id("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),
            Some("4bf92f3577b34da6a3ce929d0e0e4736".into())
        );
        assert_eq!(traceparent_trace_id("00-abc-00f067aa0ba902b7-01"), None);
        assert_eq!(traceparent_trace_id(""), None);
    }

    /// The journal ties each attempt to its trace id, records answers, and
    /// sees an attempt the caller abandoned (its connection closed) at the
    /// moment it was abandoned, not when the slow answer would have gone out.
    #[tokio::test]
    async fn journals_answers_and_abandoned_attempts() {
        let d = Double::start(&DependencyEndpoint::default(), None)
            .await
            .unwrap();
        let c = reqwest::Client::new();
        let tp = "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01";
        let r = c
            .post(format!("{}/v1/charges", d.url()))
            .header("traceparent", tp)
            .header("idempotency-key", "k1")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        d.set_phase(Phase::Slow(Duration::from_secs(5)));
        let slow = c
            .post(format!("{}/v1/charges", d.url()))
            .timeout(Duration::from_millis(200))
            .send()
            .await;
        assert!(slow.is_err(), "the caller gave up");
        d.set_phase(Phase::Unavailable {
            retry_after_secs: 2,
        });
        let r = c.get(d.url()).send().await.unwrap();
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "2");
        // The abandonment is seen once hyper notices the closed connection.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let j = d.journal();
        assert_eq!(j.len(), 3);
        assert_eq!(
            j[0].request.as_deref(),
            Some("0123456789abcdef0123456789abcdef")
        );
        assert_eq!(j[0].idempotency_key.as_deref(), Some("k1"));
        assert_eq!(j[0].end, End::Answered(200));
        assert_eq!(j[1].end, End::Abandoned);
        let held = j[1].held().unwrap();
        assert!(
            held >= Duration::from_millis(150) && held < Duration::from_secs(2),
            "{held:?}"
        );
        assert_eq!((j[1].phase, j[2].phase), (1, 2));
        assert_eq!(j[2].end, End::Answered(503));
        d.shutdown().await;
    }
}
