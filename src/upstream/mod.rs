//! The scripted mock upstream: tminus plays the platform so an integration's
//! *client* can be judged (see `checks::client`).
//!
//! A [`Script`] says, per route, which answers to give in order (status,
//! headers, body, delay, `Retry-After` as seconds or an HTTP-date, or a fault:
//! drop the connection after reading the body, or never answer), then a final
//! answer for every later request. Every attempt is recorded (offset, method,
//! path, headers, body sha256, `Idempotency-Key`, the answer given), because
//! the judges work from that timeline, not from the script.
//!
//! A route without a method takes any mutating request (POST, PUT, PATCH,
//! DELETE) and one without a path any path, so a kind's default scenario
//! judges the client on its own operation; anything unscripted is a 404.
//!
//! Several clients share one upstream: client `n` is given the base URL
//! `http://127.0.0.1:PORT/c/n`, the prefix is stripped, and each client has its
//! own position in every route's script (a herd of K clients all see the same
//! sequence). Bounded: a `hang` answers after `hang_cap` at the latest, and
//! [`Upstream::shutdown`] aborts every connection.

mod conn;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use sha2::{Digest, Sha256};

use conn::{ConnKill, KillListener};

/// Longest a `hang` fault holds a request by default, so nothing waits forever.
pub const DEFAULT_HANG_CAP: Duration = Duration::from_secs(30);

/// How `Retry-After` is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfterForm {
    /// `Retry-After: 2` (delta seconds, rounded up).
    Seconds,
    /// `Retry-After: Wed, 21 Oct 2015 07:28:02 GMT`, with a `Date` header.
    HttpDate,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// `Content-Type` of `body` (JSON unless told otherwise).
    pub content_type: String,
    pub retry_after: Option<(Duration, RetryAfterForm)>,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: format!("{{\"status\":{status}}}"),
            content_type: "application/json".into(),
            retry_after: None,
        }
    }
    pub fn retry_after(mut self, after: Duration, form: RetryAfterForm) -> Self {
        self.retry_after = Some((after, form));
        self
    }
}

/// What the upstream does with one request.
#[derive(Debug, Clone)]
pub enum Action {
    Reply(Reply),
    /// Read the whole request body, then drop the connection without answering.
    Close,
    /// Never answer (until the client gives up or `hang_cap` passes, then drop).
    Hang,
}

/// An action and how long to wait before doing it.
#[derive(Debug, Clone)]
pub struct Step {
    pub action: Action,
    pub delay: Duration,
}

impl Step {
    pub fn reply(r: Reply) -> Self {
        Step {
            action: Action::Reply(r),
            delay: Duration::ZERO,
        }
    }
    pub fn fault(a: Action) -> Self {
        Step {
            action: a,
            delay: Duration::ZERO,
        }
    }
}

/// A fixed window of `limit` requests per client, announced with
/// `X-RateLimit-Limit/Remaining/Reset` (Reset in delta seconds, rounded up);
/// over the limit the answer is 429 with `Retry-After` until the window ends.
#[derive(Debug, Clone, Copy)]
pub struct RateWindow {
    pub limit: u32,
    pub window: Duration,
}

#[derive(Debug, Clone)]
pub struct RouteScript {
    /// `None`: any mutating method (POST, PUT, PATCH, DELETE), so a kind's
    /// scenario applies to whatever operation the client performs.
    pub method: Option<String>,
    /// `None`: any path.
    pub path: Option<String>,
    /// Used in order, one per request of a client.
    pub steps: Vec<Step>,
    /// Used for every request after `steps` ran out.
    pub then: Step,
    pub rate_limit: Option<RateWindow>,
    /// Failures injected into a steady stream (RETRY-007); replaces the step.
    pub inject: Option<Inject>,
}

/// A deterministic share of failures: request n (1-based, per client and
/// route, requests inside a hold not counted) gets `step` when
/// `floor(n * share) > floor((n - 1) * share)`, i.e. every 20th for 5 %. For
/// `hold` after such an answer, every request of that client on the route gets
/// the same answer too: the platform is still shedding load, so a client that
/// re-sends at once (a retry storm) meets more failures, while one that waits
/// does not.
#[derive(Debug, Clone)]
pub struct Inject {
    pub share: f64,
    pub step: Step,
    pub hold: Duration,
}

impl RouteScript {
    /// True when this route scripts `method path`.
    pub fn matches(&self, method: &str, path: &str) -> bool {
        let method_ok = match &self.method {
            Some(m) => m.eq_ignore_ascii_case(method),
            None => is_mutating(method),
        };
        method_ok && self.path.as_deref().is_none_or(|p| p == path)
    }
}

fn is_mutating(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH" | "DELETE")
}

impl Inject {
    /// True when the n-th counted request (1-based) gets the failure.
    pub fn fails(&self, n: u64) -> bool {
        n >= 1 && (n as f64 * self.share).floor() > ((n - 1) as f64 * self.share).floor()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Script {
    pub routes: Vec<RouteScript>,
    /// Longest a `Hang` holds a request (default [`DEFAULT_HANG_CAP`]).
    pub hang_cap: Option<Duration>,
    /// Answer a herd at one instant (`client.jitter`).
    pub herd: Option<Herd>,
}

/// Holds the first answer of the first route to every client until
/// `clients` clients have asked (or `cap` has passed), then answers them in
/// order of arrival, `stagger` apart. The herd gets its Retry-After after
/// every client has started, so the startup of slower clients does not
/// smear the retries; and clients that all wait exactly Retry-After wake
/// `stagger` apart instead of queueing for the same CPU cores, so their
/// offsets (each from its own answer) show their timing, not the test
/// machine's contention. Jitter is each client's own spread and is judged
/// from its own answer, so the staircase does not hide or add any.
///
/// A herd may carry a control group (`client.jitter`'s measure of the
/// machine's own noise): clients numbered from `control_from` on are
/// answered by the script's last route whatever they ask, are counted at the
/// barrier, and take places spread evenly through the staircase
/// ([`Herd::slot`]), so they wake amid the herd all along it and meet the
/// same contention: a stall that delays part of the staircase delays the
/// same share of the herd and of the control. (In arrival order the control,
/// started last, took the staircase's last steps; a stall during the herd's
/// steps spread a lockstep herd while the control, woken after it, stayed
/// tight, and the herd passed for jittered.)
#[derive(Debug, Clone, Copy)]
pub struct Herd {
    /// Clients awaited at the barrier, the control group included.
    pub clients: usize,
    pub cap: Duration,
    pub stagger: Duration,
    /// The first client of the control group, if there is one.
    pub control_from: Option<usize>,
}

impl Herd {
    /// The staircase step of `client`, the `arrival`-th to reach the
    /// barrier. Without a control group, arrival order. With one, by client
    /// number: control client `j` of `c` takes step `(2j + 1) n / 2c` of the
    /// `n`, the herd the other steps in order, so every stretch of the
    /// staircase holds its share of both.
    pub fn slot(&self, client: usize, arrival: usize) -> usize {
        let n = self.clients;
        let Some(k) = self.control_from.filter(|&k| k < n && client < n) else {
            return arrival;
        };
        let c = n - k;
        let control_step = |j: usize| (2 * j + 1) * n / (2 * c);
        if client >= k {
            return control_step(client - k);
        }
        // The herd client's step: the client-th step no control client holds.
        let mut taken = (0..c).map(control_step).peekable();
        let mut free = 0;
        for step in 0..n {
            if taken.peek() == Some(&step) {
                taken.next();
                continue;
            }
            if free == client {
                return step;
            }
            free += 1;
        }
        arrival
    }
}

/// What the client got for one attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Status {
        status: u16,
        /// The wait the answer asked for, in seconds: the delta, or for an
        /// HTTP-date the date minus the `Date` header.
        retry_after: Option<f64>,
        form: Option<RetryAfterForm>,
    },
    Closed,
    Hung,
}

impl Answer {
    pub fn status(&self) -> Option<u16> {
        match self {
            Answer::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
    pub fn retry_after(&self) -> Option<f64> {
        match self {
            Answer::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
    pub fn is_success(&self) -> bool {
        matches!(self.status(), Some(s) if (200..300).contains(&s))
    }
    /// `429 RA=1s`, `closed`, `hung`.
    pub fn short(&self) -> String {
        match self {
            Answer::Status {
                status,
                retry_after: Some(ra),
                form,
            } => format!(
                "{status} Retry-After {}{ra:.0}s",
                if *form == Some(RetryAfterForm::HttpDate) {
                    "(date) "
                } else {
                    ""
                }
            ),
            Answer::Status { status, .. } => status.to_string(),
            Answer::Closed => "connection dropped".into(),
            Answer::Hung => "no answer".into(),
        }
    }
}

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// Which client (the `/c/n` prefix; 0 without one).
    pub client: usize,
    /// Arrival, since the upstream started.
    pub at: Duration,
    /// When the answer went out (or the connection was dropped).
    pub answered_at: Duration,
    pub method: String,
    pub path: String,
    /// The query string as sent, without `?` (empty when none): the
    /// cursor a polling client asks for (`client.polling`).
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body_sha256: String,
    pub body_len: usize,
    pub content_type: Option<String>,
    pub idempotency_key: Option<String>,
    pub answer: Answer,
    /// Headers of the answer (empty for a dropped or hung one).
    pub answer_headers: Vec<(String, String)>,
    /// The answer was an injected failure (`held`: inside an injected hold).
    pub injected: Option<Injected>,
    /// Which scripted step answered (a rate-limit 429 or an injected failure
    /// replaces it; see `injected` and the answer).
    pub served: Served,
}

/// Which part of the script answered an attempt: the evidence that a
/// scripted step or fault was actually served (a judge passes nothing on an
/// answer the client never got).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// No route scripts this method and path: a 404 `NOT_SCRIPTED`.
    Unscripted,
    /// `steps[index]` of route `route`.
    Step { route: usize, index: usize },
    /// The route's `then` answer (its steps had run out).
    Then { route: usize },
    /// Refused with 413 before any route: the body (`size` bytes, as
    /// declared or at least the limit + 1) is over the upstream's limit.
    TooLarge { size: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injected {
    Fresh,
    Held,
}

impl Attempt {
    /// The value of an answer header (name case-insensitive).
    pub fn answer_header(&self, name: &str) -> Option<&str> {
        self.answer_headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn is_mutating(&self) -> bool {
        is_mutating(&self.method)
    }

    /// True when a route of the script answered (not a 404 `NOT_SCRIPTED`).
    pub fn is_scripted(&self) -> bool {
        matches!(self.served, Served::Step { .. } | Served::Then { .. })
    }
}

/// Requests counted for an inject pattern, and when the current hold ends.
type InjectState = (u64, Option<Instant>);

struct Inner {
    script: Script,
    started: Instant,
    attempts: Mutex<Vec<Attempt>>,
    /// (client, route) -> next step index.
    positions: Mutex<HashMap<(usize, usize), usize>>,
    /// (client, route) -> (window start, requests used).
    windows: Mutex<HashMap<(usize, usize), (Instant, u32)>>,
    /// (client, route) -> (requests counted for the inject pattern, hold end).
    injects: Mutex<HashMap<(usize, usize), InjectState>>,
    /// Clients held at the herd's barrier so far.
    arrived: tokio::sync::watch::Sender<usize>,
    hook: Option<Hook>,
    max_body: usize,
}

/// Most refused (413) attempts recorded: a client that loops on a body too
/// large must not grow the record without bound.
const MAX_ATTEMPTS: usize = 10_000;

/// The default largest request body the mock upstream accepts
/// (`--upstream-max-body`).
pub const DEFAULT_MAX_BODY: usize = 2 << 20;

/// Called with a client's number when its request arrives and again when
/// its answer goes out: the client is waiting on the upstream at both
/// moments, so whatever the hook reads of it (its CPU time) is current.
pub type Hook = Arc<dyn Fn(usize) + Send + Sync>;

/// A running mock upstream on 127.0.0.1.
pub struct Upstream {
    addr: SocketAddr,
    /// Served over https (`--upstream-cert`).
    https: bool,
    inner: Arc<Inner>,
    serving: crate::http::serve_task::ServeTask,
}

impl Upstream {
    /// Binds 127.0.0.1:0 and serves `script`.
    pub async fn start(script: Script) -> std::io::Result<Upstream> {
        Upstream::start_with(script, None, DEFAULT_MAX_BODY, None).await
    }

    /// [`Upstream::start`], calling `hook` at each request and each answer,
    /// refusing bodies over `max_body` bytes with 413 (recorded as
    /// [`Served::TooLarge`], so the check can name the limit); over https
    /// with `tls` (`--upstream-cert`).
    pub async fn start_with(
        script: Script,
        hook: Option<Hook>,
        max_body: usize,
        tls: Option<crate::http::tls_server::ServerTls>,
    ) -> std::io::Result<Upstream> {
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = tcp.local_addr()?;
        let https = tls.is_some();
        let listener = match tls {
            None => KillListener::Plain(tcp),
            Some(t) => KillListener::Tls(crate::http::tls_server::TlsIncoming::new(tcp, t.0)?),
        };
        let inner = Arc::new(Inner {
            script,
            started: Instant::now(),
            attempts: Mutex::new(Vec::new()),
            positions: Mutex::new(HashMap::new()),
            windows: Mutex::new(HashMap::new()),
            injects: Mutex::new(HashMap::new()),
            arrived: tokio::sync::watch::Sender::new(0),
            hook,
            max_body,
        });
        // The handler reads bodies itself, up to its own limit.
        let app = Router::new()
            .fallback(handle)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(inner.clone())
            .into_make_service_with_connect_info::<ConnKill>();
        let serving = crate::http::serve_task::ServeTask::spawn(|stop| async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stop.await;
            });
            let _ = serve.await;
        });
        Ok(Upstream {
            addr,
            https,
            inner,
            serving,
        })
    }

    /// Where the upstream listens (`${upstream.host}`, `${upstream.port}`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL client `n` is given.
    pub fn client_url(&self, n: usize) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}/c/{n}", self.addr)
    }

    /// Time since the upstream started (the origin of every offset).
    pub fn now(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// Every attempt so far, in arrival order.
    pub fn attempts(&self) -> Vec<Attempt> {
        let mut v = lock(&self.inner.attempts).clone();
        v.sort_by_key(|a| a.at);
        v
    }

    pub fn attempt_count(&self, client: usize) -> usize {
        lock(&self.inner.attempts)
            .iter()
            .filter(|a| a.client == client)
            .count()
    }

    /// Stops serving; hung requests and open connections are aborted within 1 s.
    pub async fn shutdown(self) {
        self.serving.shutdown().await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another handler panicked; the data is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Splits `/c/3/public/v1/x` into (3, `/public/v1/x`).
fn split_client(path: &str) -> (usize, String) {
    if let Some(rest) = path.strip_prefix("/c/") {
        let (n, tail) = rest.split_once('/').unwrap_or((rest, ""));
        if let Ok(n) = n.parse::<usize>() {
            return (n, format!("/{tail}"));
        }
    }
    (0, path.to_owned())
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    ConnectInfo(kill): ConnectInfo<ConnKill>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let at = inner.started.elapsed();
    let (client, path) = split_client(uri.path());
    let body: Bytes = match axum::body::to_bytes(body, inner.max_body).await {
        Ok(b) => b,
        Err(_) => {
            let size = headers
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(inner.max_body as u64 + 1);
            let mut attempts = lock(&inner.attempts);
            if attempts.len() < MAX_ATTEMPTS {
                attempts.push(Attempt {
                    client,
                    at,
                    answered_at: inner.started.elapsed(),
                    method: method.to_string(),
                    path,
                    query: uri.query().unwrap_or_default().to_owned(),
                    headers: Vec::new(),
                    body_sha256: String::new(),
                    body_len: 0,
                    content_type: None,
                    idempotency_key: None,
                    answer: Answer::Status {
                        status: 413,
                        retry_after: None,
                        form: None,
                    },
                    answer_headers: Vec::new(),
                    injected: None,
                    served: Served::TooLarge { size },
                });
            }
            return StatusCode::PAYLOAD_TOO_LARGE.into_response();
        }
    };
    if let Some(h) = &inner.hook {
        h(client);
    }
    let herd = inner.script.herd;
    let control = herd
        .and_then(|h| h.control_from)
        .is_some_and(|from| client >= from);
    let route = if control {
        inner.script.routes.len().checked_sub(1)
    } else {
        inner
            .script
            .routes
            .iter()
            .position(|r| r.matches(method.as_str(), &path))
    };
    let (mut step, served) = match route {
        Some(ri) => {
            let r = &inner.script.routes[ri];
            let mut pos = lock(&inner.positions);
            let p = pos.entry((client, ri)).or_insert(0);
            let s = match r.steps.get(*p) {
                Some(s) => (
                    s.clone(),
                    Served::Step {
                        route: ri,
                        index: *p,
                    },
                ),
                None => (r.then.clone(), Served::Then { route: ri }),
            };
            *p += 1;
            s
        }
        None => (
            Step::reply(Reply {
                body: format!("{{\"error\":{{\"code\":\"NOT_SCRIPTED\",\"message\":\"no script for {method} {path}\"}}}}"),
                ..Reply::status(404)
            }),
            Served::Unscripted,
        ),
    };
    let held = match served {
        Served::Step { route, index: 0 } => route == 0 || control,
        _ => false,
    };
    if let (Some(h), true) = (herd, held) {
        let mut rx = inner.arrived.subscribe();
        let mut rank = 0;
        inner.arrived.send_modify(|n| {
            rank = *n;
            *n += 1;
        });
        // Bounded: a client that never starts costs the others `cap`, no more.
        let _ = tokio::time::timeout(h.cap, rx.wait_for(|n| *n >= h.clients)).await;
        let step = h.slot(client, rank);
        tokio::time::sleep(h.stagger * step.min(10_000) as u32).await;
        if let Some(h) = &inner.hook {
            h(client);
        }
    }
    let mut extra: Vec<(String, String)> = Vec::new();
    if let Some(w) = route.and_then(|ri| inner.script.routes[ri].rate_limit.map(|w| (ri, w))) {
        let (ri, w) = w;
        let now = Instant::now();
        let mut wins = lock(&inner.windows);
        let e = wins.entry((client, ri)).or_insert((now, 0));
        if now.duration_since(e.0) >= w.window {
            *e = (now, 0);
        }
        e.1 += 1;
        let left = w.window.saturating_sub(now.duration_since(e.0));
        let reset = left.as_secs_f64().ceil().max(1.0) as u64;
        extra.push(("X-RateLimit-Limit".into(), w.limit.to_string()));
        extra.push((
            "X-RateLimit-Remaining".into(),
            w.limit.saturating_sub(e.1).to_string(),
        ));
        extra.push(("X-RateLimit-Reset".into(), reset.to_string()));
        if e.1 > w.limit {
            step = Step::reply(
                Reply::status(429).retry_after(Duration::from_secs(reset), RetryAfterForm::Seconds),
            );
        }
    }
    let mut injected = None;
    if let Some((ri, inj)) =
        route.and_then(|ri| inner.script.routes[ri].inject.as_ref().map(|i| (ri, i)))
    {
        let now = Instant::now();
        let mut st = lock(&inner.injects);
        let e = st.entry((client, ri)).or_insert((0, None));
        if e.1.is_some_and(|end| now < end) {
            step = inj.step.clone();
            injected = Some(Injected::Held);
        } else {
            e.0 += 1;
            if inj.fails(e.0) {
                step = inj.step.clone();
                injected = Some(Injected::Fresh);
                // The hold runs from the answer; the step's delay is part of it.
                e.1 = Some(now + step.delay + inj.hold);
            }
        }
    }
    if !step.delay.is_zero() {
        tokio::time::sleep(step.delay).await;
    }
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut record = Attempt {
        client,
        at,
        answered_at: at,
        method: method.to_string(),
        path: path.clone(),
        query: uri.query().unwrap_or_default().to_owned(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body_sha256: hex::encode(Sha256::digest(&body)),
        body_len: body.len(),
        content_type: headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        idempotency_key: key,
        answer: Answer::Closed,
        answer_headers: Vec::new(),
        injected,
        served,
    };
    let response = match step.action {
        Action::Close => {
            kill.kill();
            record.answered_at = inner.started.elapsed();
            lock(&inner.attempts).push(record);
            // The connection is marked dead: writing this fails and hyper drops it.
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        Action::Hang => {
            record.answer = Answer::Hung;
            record.answered_at = at;
            lock(&inner.attempts).push(record);
            // Dropped by hyper when the client disconnects; bounded by the cap.
            tokio::time::sleep(inner.script.hang_cap.unwrap_or(DEFAULT_HANG_CAP)).await;
            kill.kill();
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        Action::Reply(r) => r,
    };
    let mut out = (
        StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        response.body.clone(),
    )
        .into_response();
    let h = out.headers_mut();
    set(h, "content-type", &response.content_type);
    let mut ra_secs = None;
    let mut form = None;
    if let Some((after, f)) = response.retry_after {
        form = Some(f);
        match f {
            RetryAfterForm::Seconds => {
                let s = after.as_secs_f64().ceil() as u64;
                ra_secs = Some(s as f64);
                set(h, "retry-after", &s.to_string());
            }
            RetryAfterForm::HttpDate => {
                // Whole seconds on both headers, so date - Date is exactly the wait.
                let now = SystemTime::UNIX_EPOCH
                    + Duration::from_secs(
                        SystemTime::now()
                            .duration_since(SystemTime::UNIX_EPOCH)
                            .map(|d| d.as_secs())
                            .unwrap_or(0),
                    );
                let secs = after.as_secs_f64().ceil() as u64;
                ra_secs = Some(secs as f64);
                set(h, "date", &httpdate::fmt_http_date(now));
                set(
                    h,
                    "retry-after",
                    &httpdate::fmt_http_date(now + Duration::from_secs(secs)),
                );
            }
        }
    }
    for (k, v) in response.headers.iter().chain(extra.iter()) {
        set(h, k, v);
    }
    record.answer_headers = out
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    record.answer = Answer::Status {
        status: response.status,
        retry_after: ra_secs,
        form,
    };
    record.answered_at = inner.started.elapsed();
    lock(&inner.attempts).push(record);
    out
}

fn set(h: &mut HeaderMap, k: &str, v: &str) {
    if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
        h.insert(k, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_prefix() {
        assert_eq!(split_client("/c/3/public/v1/x"), (3, "/public/v1/x".into()));
        assert_eq!(split_client("/public/v1/x"), (0, "/public/v1/x".into()));
        assert_eq!(split_client("/c/7"), (7, "/".into()));
    }

    #[tokio::test]
    async fn scripts_in_order_per_client_and_records() {
        let script = Script {
            routes: vec![RouteScript {
                method: Some("POST".into()),
                path: Some("/p".into()),
                steps: vec![
                    Step::fault(Action::Close),
                    Step::reply(
                        Reply::status(429)
                            .retry_after(Duration::from_secs(2), RetryAfterForm::HttpDate),
                    ),
                ],
                then: Step::reply(Reply::status(201)),
                rate_limit: None,
                inject: None,
            }],
            hang_cap: Some(Duration::from_secs(1)),
            herd: None,
        };
        let up = Upstream::start(script).await.unwrap();
        let c = reqwest::Client::new();
        let url = format!("{}/p", up.client_url(1));
        let e = c
            .post(&url)
            .header("Idempotency-Key", "k1")
            .body("a=1")
            .send()
            .await;
        assert!(e.is_err(), "the close fault answers nothing");
        let r = c.post(&url).body("{}").send().await.unwrap();
        assert_eq!(r.status(), 429);
        let ra = httpdate::parse_http_date(r.headers()["retry-after"].to_str().unwrap()).unwrap();
        let date = httpdate::parse_http_date(r.headers()["date"].to_str().unwrap()).unwrap();
        assert_eq!(ra.duration_since(date).unwrap(), Duration::from_secs(2));
        assert_eq!(c.post(&url).send().await.unwrap().status(), 201);
        // Another client starts at the top of the script.
        let other = format!("{}/p", up.client_url(2));
        assert!(c.post(&other).send().await.is_err());
        let a = up.attempts();
        assert_eq!(a.len(), 4);
        assert_eq!(a[0].idempotency_key.as_deref(), Some("k1"));
        assert_eq!(a[0].answer, Answer::Closed);
        assert_eq!(a[0].served, Served::Step { route: 0, index: 0 });
        assert_eq!(a[1].answer.retry_after(), Some(2.0));
        assert_eq!(a[2].served, Served::Then { route: 0 });
        let stray = c
            .post(format!("{}/q", up.client_url(1)))
            .send()
            .await
            .unwrap();
        assert_eq!(stray.status(), 404);
        assert_eq!(up.attempts().last().unwrap().served, Served::Unscripted);
        assert_eq!(up.attempt_count(1), 4, "with the unscripted one");
        up.shutdown().await;
    }

    #[tokio::test]
    async fn a_herd_is_answered_together_in_a_staircase() {
        let script = Script {
            routes: vec![RouteScript {
                method: None,
                path: None,
                steps: vec![Step::reply(Reply::status(429))],
                then: Step::reply(Reply::status(201)),
                rate_limit: None,
                inject: None,
            }],
            hang_cap: None,
            herd: Some(Herd {
                clients: 3,
                cap: Duration::from_secs(10),
                stagger: Duration::from_millis(30),
                control_from: None,
            }),
        };
        let up = Upstream::start(script).await.unwrap();
        let c = reqwest::Client::new();
        let mut tasks = Vec::new();
        for n in 0..3u64 {
            let (c, url) = (c.clone(), format!("{}/p", up.client_url(n as usize)));
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(150 * n)).await;
                c.post(url).send().await.unwrap().status()
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), 429);
        }
        let a = up.attempts();
        let answered: Vec<f64> = a.iter().map(|x| x.answered_at.as_secs_f64()).collect();
        let arrived: Vec<f64> = a.iter().map(|x| x.at.as_secs_f64()).collect();
        assert!(arrived[2] - arrived[0] > 0.25, "{arrived:?}");
        // Answered after the last arrival, 30 ms apart in arrival order.
        assert!(answered[0] >= arrived[2], "{answered:?} {arrived:?}");
        for (i, t) in answered.iter().enumerate() {
            let step = t - answered[0];
            assert!(
                (step - 0.03 * i as f64).abs() < 0.02,
                "answer {i} at +{step:.3} s: {answered:?}"
            );
        }
        up.shutdown().await;
    }

    #[tokio::test]
    async fn a_control_group_is_answered_by_the_last_route_inside_the_staircase() {
        let route = |path: &str, status: u16| RouteScript {
            method: Some("POST".into()),
            path: Some(path.into()),
            steps: vec![Step::reply(Reply::status(status))],
            then: Step::reply(Reply::status(201)),
            rate_limit: None,
            inject: None,
        };
        let script = Script {
            routes: vec![route("/herd", 429), route("/control", 503)],
            hang_cap: None,
            herd: Some(Herd {
                clients: 3,
                cap: Duration::from_secs(10),
                stagger: Duration::from_millis(30),
                control_from: Some(2),
            }),
        };
        let up = Upstream::start(script).await.unwrap();
        let c = reqwest::Client::new();
        let mut tasks = Vec::new();
        // The control client asks for the herd's path: it is answered by the
        // control route all the same.
        for n in 0..3usize {
            let (c, url) = (c.clone(), format!("{}/herd", up.client_url(n)));
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100 * n as u64)).await;
                c.post(url).send().await.unwrap().status().as_u16()
            }));
        }
        let mut statuses = Vec::new();
        for t in tasks {
            statuses.push(t.await.unwrap());
        }
        assert_eq!(statuses, vec![429, 429, 503]);
        let a = up.attempts();
        assert_eq!(a[2].served, Served::Step { route: 1, index: 0 });
        // All three were held until the last (the control) arrived.
        assert!(a.iter().all(|x| x.answered_at >= a[2].at), "{a:?}");
        up.shutdown().await;
    }

    #[test]
    fn a_control_group_is_spread_through_the_staircase() {
        let herd = Herd {
            clients: 66,
            cap: Duration::from_secs(10),
            stagger: Duration::from_millis(20),
            control_from: Some(50),
        };
        let mut steps: Vec<usize> = (0..66).map(|c| herd.slot(c, 0)).collect();
        let control: Vec<usize> = steps[50..].to_vec();
        // Every step is someone's, once.
        steps.sort_unstable();
        assert_eq!(steps, (0..66).collect::<Vec<_>>());
        // 16 control steps about 66/16 apart, from the first quarter-gap on:
        // every quarter of the staircase holds four of them.
        for quarter in 0..4 {
            let n = control.iter().filter(|&&s| s * 4 / 66 == quarter).count();
            assert_eq!(n, 4, "quarter {quarter}: {control:?}");
        }
        // The herd keeps its order; without a control group, arrival order.
        assert!((1..50).all(|c| herd.slot(c, 0) > herd.slot(c - 1, 0)));
        let plain = Herd {
            control_from: None,
            ..herd
        };
        assert_eq!(plain.slot(7, 3), 3);
    }

    #[test]
    fn an_open_route_takes_any_mutating_request() {
        let r = RouteScript {
            method: None,
            path: None,
            steps: Vec::new(),
            then: Step::reply(Reply::status(201)),
            rate_limit: None,
            inject: None,
        };
        assert!(r.matches("POST", "/v1/customers") && r.matches("DELETE", "/x/1"));
        assert!(!r.matches("GET", "/v1/customers"));
        let narrowed = RouteScript {
            method: Some("put".into()),
            path: Some("/v1/customers".into()),
            ..r
        };
        assert!(narrowed.matches("PUT", "/v1/customers"));
        assert!(!narrowed.matches("POST", "/v1/customers") && !narrowed.matches("PUT", "/v1/c"));
    }

    #[test]
    fn inject_pattern_is_the_share() {
        let i = Inject {
            share: 0.05,
            step: Step::reply(Reply::status(503)),
            hold: Duration::ZERO,
        };
        let hits: Vec<u64> = (1..=100).filter(|n| i.fails(*n)).collect();
        assert_eq!(hits, vec![20, 40, 60, 80, 100]);
        let third = Inject {
            share: 1.0 / 3.0,
            ..i.clone()
        };
        assert_eq!((1..=9).filter(|n| third.fails(*n)).count(), 3);
        let none = Inject { share: 0.0, ..i };
        assert!(!(1..=1000).any(|n| none.fails(n)));
    }
}
