//! The webhook sink: a receiver tminus runs on 127.0.0.1:0 while a sink check
//! makes the target deliver. It records every delivery (arrival time, headers,
//! raw body bytes) and answers a scripted status per attempt, so a check can
//! judge signatures over the exact bytes, retry timing and stopping.
//!
//! The first attempt can be held open (`hang_first`) to see whether the
//! sender times out and whether it retries in parallel (WHS-004).
//!
//! Only requests on the sink's own random path are recorded; anything else
//! (a stale subscription from an earlier run that reached a reused port) gets
//! 410 Gone, which tells a well-behaved sender to stop.
//!
//! Where it listens and the URL the platform is given are a [`SinkEndpoint`]:
//! 127.0.0.1:0 and that address by default; a platform that is not on this
//! machine needs `--sink-listen` (a fixed address it can reach, or a tunnel
//! leads to) and `--sink-url` (the public base URL), to which the sink's
//! random path is appended. A request is recorded when its path ends with
//! that random path, so a proxy that keeps a prefix (`/hooks/sink/…`) works.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Router;
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;

/// One delivery as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    pub at: Instant,
    pub headers: Vec<(String, String)>,
    /// The raw body; empty when it was not kept (`body_len` says how long it was).
    pub body: Vec<u8>,
    /// The body's length as it arrived.
    pub body_len: usize,
    /// False when the body was dropped: the recorded bodies had spent
    /// [`RECORDED_BODY_BUDGET`].
    pub body_kept: bool,
    /// What the sink answered.
    pub answered: u16,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone)]
struct Shared {
    path: String,
    respond: Arc<Vec<u16>>,
    retry_after: Option<u64>,
    /// Hold the first attempt this long before answering (WHS-004).
    hang_first: Option<Duration>,
    /// When the first attempt's request ended, and whether it ended by our answer.
    first_ended: Arc<Mutex<Option<(Instant, bool)>>>,
    log: Arc<Mutex<Vec<Received>>>,
    notify: Arc<Notify>,
    /// Body bytes kept so far, and deliveries past `MAX_RECORDED`.
    kept: Arc<Mutex<(usize, usize)>>,
    max_body: usize,
    /// Sizes of the deliveries refused with 413 (over `max_body`).
    refused: Arc<Mutex<Vec<u64>>>,
    /// Sees every accepted delivery on the sink's path, past the recorded
    /// ones too (a burst's events outnumber `MAX_RECORDED`).
    hook: Option<DeliveryHook>,
}

/// Called with the arrival time and body of every accepted delivery.
pub type DeliveryHook = Arc<dyn Fn(Instant, &[u8]) + Send + Sync>;

/// Where the sink listens and how the platform is told to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkEndpoint {
    pub listen: SocketAddr,
    /// Public base URL that leads to `listen` (no trailing `/`); `None`: the
    /// listen address itself.
    pub public_url: Option<String>,
    /// The largest delivery body accepted (`--sink-max-body`); larger ones
    /// are answered 413 and named in the check's verdict.
    pub max_body: usize,
    /// `--sink-cert`/`--sink-key`: serve https with that certificate.
    pub tls: Option<crate::http::tls_server::ServerTls>,
}

/// The default largest delivery body: 2 MiB (most platforms cap webhook
/// payloads well below: Stripe and GitHub at 25 MB, most at 1 MB or less).
pub const DEFAULT_MAX_BODY: usize = 2 << 20;

impl Default for SinkEndpoint {
    fn default() -> Self {
        SinkEndpoint {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            public_url: None,
            max_body: DEFAULT_MAX_BODY,
            tls: None,
        }
    }
}

pub struct Sink {
    url: String,
    addr: SocketAddr,
    shared: Shared,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// Upper bound on recorded deliveries, so a runaway sender cannot grow memory.
const MAX_RECORDED: usize = 1000;

/// The most body bytes the sink keeps over all recorded deliveries; past it
/// a delivery is still recorded (time, headers, length, answer) without
/// its body, so a sender posting 1,000 bodies of 2 MiB holds 64 MiB, not 2 GiB.
pub const RECORDED_BODY_BUDGET: usize = 64 << 20;

async fn receive(
    State(s): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Body,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if !uri.path().ends_with(&s.path) {
        return StatusCode::GONE.into_response();
    }
    let declared = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let body: Bytes = match axum::body::to_bytes(body, s.max_body).await {
        Ok(b) => b,
        Err(_) => {
            // Over the limit (or a broken stream): refused, and remembered so
            // the verdict can name the limit instead of "nothing arrived".
            let size = declared.unwrap_or(s.max_body as u64 + 1);
            let mut r = s.refused.lock().unwrap_or_else(|p| p.into_inner());
            if r.len() < MAX_RECORDED {
                r.push(size);
            }
            drop(r);
            s.notify.notify_waiters();
            return StatusCode::PAYLOAD_TOO_LARGE.into_response();
        }
    };
    if let Some(h) = &s.hook {
        h(Instant::now(), &body);
    }
    // A block, not drop(): the guard must not live across the await below.
    let (n, code) = {
        let mut log = s.log.lock().unwrap_or_else(|p| p.into_inner());
        let n = log.len();
        let code = s
            .respond
            .get(n)
            .or(s.respond.last())
            .copied()
            .unwrap_or(200);
        let mut kept = s.kept.lock().unwrap_or_else(|p| p.into_inner());
        if n >= MAX_RECORDED {
            kept.1 += 1;
        }
        // The budget holds at least one body of the largest size accepted.
        let keep_body = kept.0 + body.len() <= RECORDED_BODY_BUDGET.max(s.max_body);
        if n < MAX_RECORDED {
            if keep_body {
                kept.0 += body.len();
            }
            log.push(Received {
                at: Instant::now(),
                headers: headers
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.as_str().to_owned(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect(),
                body: if keep_body { body.to_vec() } else { Vec::new() },
                body_len: body.len(),
                body_kept: keep_body,
                answered: code,
            });
        }
        (n, code)
    };
    s.notify.notify_waiters();
    if let (0, Some(hang)) = (n, s.hang_first) {
        // Dropped when the sender gives up (hyper drops this future on a
        // closed connection) or when we answer: either way the time is kept.
        let mut guard = EndGuard {
            slot: s.first_ended.clone(),
            notify: s.notify.clone(),
            answered: false,
        };
        tokio::time::sleep(hang).await;
        guard.answered = true;
    }
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    match s.retry_after {
        Some(secs) if code == 429 || code == 503 => {
            (status, [("retry-after", secs.to_string())]).into_response()
        }
        _ => status.into_response(),
    }
}

struct EndGuard {
    slot: Arc<Mutex<Option<(Instant, bool)>>>,
    notify: Arc<Notify>,
    answered: bool,
}

impl Drop for EndGuard {
    fn drop(&mut self) {
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((Instant::now(), self.answered));
        self.notify.notify_waiters();
    }
}

impl Sink {
    /// Starts a sink answering `respond[i]` to attempt `i` (the last repeats).
    /// `retry_after` adds `Retry-After: N` to 429 and 503 answers.
    /// It listens on `at.listen` and is reached at `at.public_url` + its path.
    pub async fn start(
        respond: Vec<u16>,
        retry_after: Option<u64>,
        hang_first: Option<Duration>,
        at: &SinkEndpoint,
    ) -> std::io::Result<Sink> {
        Self::start_with(respond, retry_after, hang_first, at, None).await
    }

    /// A sink answering `respond` whose `hook` sees every accepted delivery
    /// as it arrives (a burst's event latencies, LOAD-006).
    pub async fn start_observed(
        respond: Vec<u16>,
        at: &SinkEndpoint,
        hook: DeliveryHook,
    ) -> std::io::Result<Sink> {
        Self::start_with(respond, None, None, at, Some(hook)).await
    }

    async fn start_with(
        respond: Vec<u16>,
        retry_after: Option<u64>,
        hang_first: Option<Duration>,
        at: &SinkEndpoint,
        hook: Option<DeliveryHook>,
    ) -> std::io::Result<Sink> {
        let listener = tokio::net::TcpListener::bind(at.listen).await?;
        let addr = listener.local_addr()?;
        let scheme = if at.tls.is_some() { "https" } else { "http" };
        let base = at
            .public_url
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{addr}"));
        let path = format!("/sink/{}", uuid::Uuid::new_v4().simple());
        let shared = Shared {
            path: path.clone(),
            respond: Arc::new(respond),
            retry_after,
            hang_first,
            first_ended: Arc::new(Mutex::new(None)),
            log: Arc::new(Mutex::new(Vec::new())),
            notify: Arc::new(Notify::new()),
            kept: Arc::new(Mutex::new((0, 0))),
            max_body: at.max_body,
            refused: Arc::new(Mutex::new(Vec::new())),
            hook,
        };
        // The sink reads bodies itself, up to its own limit.
        let app = Router::new()
            .fallback(receive)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(shared.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let stopped = async move {
            let _ = rx.await;
        };
        let task = match &at.tls {
            None => tokio::spawn(async move {
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(stopped)
                    .await;
            }),
            Some(tls) => {
                let incoming = crate::http::tls_server::TlsIncoming::new(listener, tls.0.clone())?;
                tokio::spawn(async move {
                    let _ = axum::serve(incoming, app)
                        .with_graceful_shutdown(stopped)
                        .await;
                })
            }
        };
        Ok(Sink {
            url: format!("{}{path}", base.trim_end_matches('/')),
            addr,
            shared,
            stop: Some(tx),
            task: Some(task),
        })
    }

    /// When the first (held) attempt ended: `(time, true)` if by our answer,
    /// `(time, false)` if the sender closed it.
    pub fn first_ended(&self) -> Option<(Instant, bool)> {
        *self
            .shared
            .first_ended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the first attempt ended or `deadline` passed.
    pub async fn wait_first_ended(&self, deadline: Duration) -> Option<(Instant, bool)> {
        let end = tokio::time::Instant::now() + deadline;
        loop {
            let notified = self.shared.notify.notified();
            if let Some(e) = self.first_ended() {
                return Some(e);
            }
            if tokio::time::Instant::now() >= end {
                return None;
            }
            let tick = end.min(tokio::time::Instant::now() + Duration::from_millis(50));
            let _ = tokio::time::timeout_at(tick, notified).await;
        }
    }

    /// The URL the platform is given (`${var.sink_url}`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where the sink listens (the port is the bound one).
    pub fn listen_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sizes of the deliveries refused as larger than the sink's limit.
    pub fn refused(&self) -> Vec<u64> {
        self.shared
            .refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The largest body the sink accepts.
    pub fn max_body(&self) -> usize {
        self.shared.max_body
    }

    /// Deliveries that arrived past the recorded ones (counted, not kept).
    pub fn unrecorded(&self) -> usize {
        self.shared.kept.lock().unwrap_or_else(|p| p.into_inner()).1
    }

    /// Waits until `n` deliveries arrived or `deadline` passed; returns what arrived.
    pub async fn wait_for(&self, n: usize, deadline: Duration) -> Vec<Received> {
        let end = tokio::time::Instant::now() + deadline;
        loop {
            let notified = self.shared.notify.notified();
            let got = self.received();
            if got.len() >= n || tokio::time::Instant::now() >= end {
                return got;
            }
            // Bounded by the deadline; a short tick also covers a missed wake-up.
            let _ = tokio::time::timeout_at(
                end.min(tokio::time::Instant::now() + Duration::from_millis(50)),
                notified,
            )
            .await;
        }
    }

    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(mut t) = self.task.take() {
            if tokio::time::timeout(Duration::from_millis(500), &mut t)
                .await
                .is_err()
            {
                t.abort();
            }
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn recorded_bodies_stay_within_the_byte_budget_and_are_still_counted() {
        let sink = Sink::start(vec![200], None, None, &SinkEndpoint::default())
            .await
            .unwrap();
        let c = reqwest::Client::new();
        let body = vec![b'x'; DEFAULT_MAX_BODY];
        let n = RECORDED_BODY_BUDGET / DEFAULT_MAX_BODY + 4;
        for _ in 0..n {
            let r = c.post(sink.url()).body(body.clone()).send().await.unwrap();
            assert_eq!(r.status(), 200);
        }
        let got = sink.received();
        assert_eq!(got.len(), n, "every delivery is recorded");
        let kept: usize = got.iter().map(|d| d.body.len()).sum();
        assert!(kept <= RECORDED_BODY_BUDGET, "{kept}");
        assert!(got.iter().all(|d| d.body_len == DEFAULT_MAX_BODY));
        assert_eq!(got.iter().filter(|d| !d.body_kept).count(), 4);
        // One byte over the limit: refused, and remembered with its size.
        let over = vec![b'x'; DEFAULT_MAX_BODY + 1];
        let r = c.post(sink.url()).body(over).send().await.unwrap();
        assert_eq!(r.status(), 413);
        assert_eq!(sink.refused(), vec![DEFAULT_MAX_BODY as u64 + 1]);
        assert_eq!(sink.received().len(), n);
        sink.shutdown().await;
    }
}
