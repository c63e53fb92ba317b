//! Payments: the reference's route that calls a dependency (a payment
//! provider), so the `dependency.*` checks have something to judge.
//!
//! - `PUT /public/v1/payment-provider` `{url}` -> 200: where the provider is
//!   (loopback http URLs only, like webhook subscriptions), as a merchant
//!   connects a provider in its settings; a check's `setup:` gives it tminus's
//!   dependency double (`${var.dependency_url}`). `--dependency-url` sets it
//!   at start.
//! - `POST /public/v1/payments` `{amount}` -> 201: charges through the
//!   provider (`POST {url}/v1/charges`, the caller's trace id in
//!   `traceparent`, one `Idempotency-Key` for every attempt of the payment).
//!
//! Healthy, it does what the seed's second launch mistake prescribes
//! ([`DependencyConfig`]): a per-try timeout and a total deadline within its
//! SLO, at most one retry after a jittered backoff (none when the provider's
//! Retry-After is longer than the time left), a breaker (`breaker.rs`), and a
//! bounded pool of provider calls that sheds at once with 503 + Retry-After
//! when it is full. Failures are deliberate answers: 502 (the provider
//! failed), 504 (it did not answer in time), 503 + Retry-After (breaker open,
//! pool full).
//!
//! Defects, one per property: `dependency-slow-timeout` (2 s per try, 3 tries,
//! no deadline), `dependency-retry-storm` (6 tries back to back, Retry-After
//! ignored), `breaker-missing`, `breaker-half-open-herd`, `breaker-flaps`,
//! `queues-instead-of-shedding` (a full pool queues), `dependency-cached`
//! (answers from a cache and never calls the provider).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use serde_json::json;

use super::breaker::{Admit, Breaker};
use super::defect::Defect;
use super::errors::ApiError;
use super::state::AppState;
use super::trace::RequestContext;
use super::validate;

/// How the reference calls its payment provider (`tminus reference
/// --dependency-*`): defaults for an API whose SLO is 1 s.
#[derive(Debug, Clone)]
pub struct DependencyConfig {
    /// The provider's base URL at start (`--dependency-url`).
    pub url: Option<String>,
    /// One attempt's time limit.
    pub try_timeout: Duration,
    /// The whole payment's time limit: no attempt runs past it.
    pub deadline: Duration,
    /// Backoff before the one retry: uniform in [min, max] (full jitter).
    pub backoff: (Duration, Duration),
    /// Failed attempts in a row that open the breaker.
    pub breaker_failures: u32,
    /// How long the breaker stays open before a probe.
    pub breaker_open_for: Duration,
    /// Provider calls at once; beyond, 503 + Retry-After at once.
    pub pool: usize,
}

impl Default for DependencyConfig {
    fn default() -> Self {
        DependencyConfig {
            url: None,
            try_timeout: Duration::from_millis(300),
            deadline: Duration::from_millis(800),
            backoff: (Duration::from_millis(20), Duration::from_millis(80)),
            breaker_failures: 10,
            breaker_open_for: Duration::from_secs(1),
            pool: 8,
        }
    }
}

/// The route's own state beside [`AppState`].
pub(crate) struct Payments {
    provider: Mutex<Option<String>>,
    http: reqwest::Client,
    breaker: Breaker,
    pool: tokio::sync::Semaphore,
}

/// What the handlers take.
pub(crate) type PaymentsState = (AppState, Arc<Payments>);

impl Payments {
    pub(crate) fn new(state: &AppState) -> Arc<Payments> {
        let c = &state.config().dependency;
        Arc::new(Payments {
            provider: Mutex::new(c.url.clone()),
            // No proxy: the provider is on loopback; connection reuse keeps
            // an attempt's time the provider's, not the handshake's.
            http: reqwest::Client::builder()
                .no_proxy()
                .connect_timeout(Duration::from_secs(2))
                .build()
                .unwrap_or_default(),
            breaker: Breaker::new(
                c.breaker_failures,
                c.breaker_open_for,
                state.has(Defect::BreakerMissing),
                state.has(Defect::BreakerHalfOpenHerd),
                state.has(Defect::BreakerFlaps),
            ),
            pool: tokio::sync::Semaphore::new(c.pool.max(1)),
        })
    }

    fn provider(&self) -> Option<String> {
        self.provider
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// `PUT /public/v1/payment-provider` `{url}`.
pub(crate) async fn set_provider(
    State((_, p)): State<PaymentsState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let obj = validate::json_object(&body?, false)?;
    let url = obj
        .get("url")
        .and_then(|v| v.as_str())
        .ok_or_else(|| ApiError::validation("url", "required string"))?
        .trim_end_matches('/')
        .to_owned();
    let loopback = ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"];
    if !loopback.iter().any(|l| url.starts_with(l)) {
        return Err(ApiError::validation(
            "url",
            "the reference only calls loopback http URLs",
        ));
    }
    *p.provider.lock().unwrap_or_else(|e| e.into_inner()) = Some(url.clone());
    Ok(Json(json!({ "url": url })))
}

/// How one payment's provider calls ended.
enum Charged {
    Ok(serde_json::Value),
    /// The provider answered this failure (with its Retry-After, seconds).
    Failed(u16, Option<u64>),
    TimedOut,
}

fn error(status: StatusCode, code: &str, message: &str, retry_after: Option<u64>) -> Response {
    let mut r = (
        status,
        Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response();
    if let Some(s) = retry_after.and_then(|s| HeaderValue::from_str(&s.max(1).to_string()).ok()) {
        r.headers_mut().insert("retry-after", s);
    }
    r
}

/// `POST /public/v1/payments` `{amount}`.
pub(crate) async fn create(
    State((state, p)): State<PaymentsState>,
    ctx: Option<axum::Extension<RequestContext>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let obj = validate::json_object(&body?, false)?;
    let amount = validate::positive_int(&obj, "amount", "amount")?;
    if state.has(Defect::DependencyCached) {
        // A cache in front of the provider: every charge "succeeds" without it.
        return Ok(created(
            amount,
            json!({"id": "ch_cached", "status": "succeeded"}),
        ));
    }
    let Some(url) = p.provider() else {
        return Ok(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "PROVIDER_NOT_CONFIGURED",
            "no payment provider is configured (PUT /public/v1/payment-provider)",
            None,
        ));
    };
    let admit = p.breaker.admit();
    if let Admit::Reject(left) = admit {
        return Ok(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "PROVIDER_CIRCUIT_OPEN",
            "the payment provider is failing; try again later",
            Some(left.as_secs_f64().ceil() as u64),
        ));
    }
    let _permit = if state.has(Defect::QueuesInsteadOfShedding) {
        p.pool.acquire().await.ok()
    } else {
        match p.pool.try_acquire() {
            Ok(permit) => Some(permit),
            Err(_) => {
                return Ok(error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "OVERLOADED",
                    "too many payments in flight; try again later",
                    Some(1),
                ))
            }
        }
    };
    let trace_id = ctx.map(|c| c.0.trace_id.clone());
    let charged = charge(&state, &p, &url, amount, trace_id, admit == Admit::Probe).await;
    Ok(match charged {
        Charged::Ok(v) => created(amount, v),
        Charged::Failed(status, ra) => error(
            StatusCode::BAD_GATEWAY,
            "PROVIDER_FAILED",
            &format!("the payment provider answered {status}"),
            ra,
        ),
        Charged::TimedOut => error(
            StatusCode::GATEWAY_TIMEOUT,
            "PROVIDER_TIMEOUT",
            "the payment provider did not answer in time",
            None,
        ),
    })
}

fn created(amount: u64, charge: serde_json::Value) -> Response {
    (
        StatusCode::CREATED,
        Json(json!({
            "id": format!("pay_{}", ulid::Ulid::new()),
            "amount": amount,
            "status": "succeeded",
            "charge": charge,
        })),
    )
        .into_response()
}

/// The retry policy in force: (tries, per-try timeout, deadline, backoff,
/// honour Retry-After).
struct Policy {
    tries: u32,
    try_timeout: Duration,
    deadline: Option<Duration>,
    backoff: (Duration, Duration),
    honour_retry_after: bool,
}

fn policy(state: &AppState) -> Policy {
    let c = &state.config().dependency;
    if state.has(Defect::DependencySlowTimeout) {
        Policy {
            tries: 3,
            try_timeout: Duration::from_secs(2),
            deadline: None,
            backoff: c.backoff,
            honour_retry_after: true,
        }
    } else if state.has(Defect::DependencyRetryStorm) {
        Policy {
            tries: 6,
            try_timeout: c.try_timeout,
            // Within the deadline still: the storm is in the attempts, not the time.
            deadline: Some(c.deadline),
            backoff: (Duration::ZERO, Duration::ZERO),
            honour_retry_after: false,
        }
    } else {
        Policy {
            tries: 2,
            try_timeout: c.try_timeout,
            deadline: Some(c.deadline),
            backoff: c.backoff,
            honour_retry_after: true,
        }
    }
}

async fn charge(
    state: &AppState,
    p: &Payments,
    url: &str,
    amount: u64,
    trace_id: Option<String>,
    probe: bool,
) -> Charged {
    let pol = policy(state);
    let started = Instant::now();
    let key = uuid::Uuid::new_v4().to_string();
    let tries = if probe { 1 } else { pol.tries };
    let mut last = Charged::TimedOut;
    for n in 1..=tries {
        let left = pol
            .deadline
            .map(|d| d.saturating_sub(started.elapsed()))
            .unwrap_or(Duration::MAX);
        let timeout = pol.try_timeout.min(left);
        if timeout < Duration::from_millis(20) {
            break;
        }
        let mut req = p
            .http
            .post(format!("{url}/v1/charges"))
            .timeout(timeout)
            .header("idempotency-key", &key)
            .json(&json!({"amount": amount}));
        if let Some(t) = &trace_id {
            let span = format!("{:016x}", rand::random::<u64>() | 1);
            req = req.header("traceparent", format!("00-{t}-{span}-01"));
        }
        let (ok, outcome) = match req.send().await {
            Ok(r) if r.status().is_success() => {
                let v = r.json().await.unwrap_or(serde_json::Value::Null);
                (true, Charged::Ok(v))
            }
            Ok(r) => {
                let ra = r
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                (false, Charged::Failed(r.status().as_u16(), ra))
            }
            Err(e) if e.is_timeout() => (false, Charged::TimedOut),
            Err(_) => (false, Charged::Failed(502, None)),
        };
        p.breaker.record(ok);
        last = outcome;
        if ok || n == tries {
            break;
        }
        let (lo, hi) = pol.backoff;
        let mut wait = if hi > lo {
            lo + (hi - lo).mul_f64(rand::random::<f64>())
        } else {
            lo
        };
        if let Charged::Failed(_, Some(ra)) = last {
            if pol.honour_retry_after {
                let ra = Duration::from_secs(ra);
                let left = pol
                    .deadline
                    .map(|d| d.saturating_sub(started.elapsed()))
                    .unwrap_or(Duration::MAX);
                if ra >= left {
                    break;
                }
                wait = wait.max(ra);
            }
        }
        tokio::time::sleep(wait).await;
        // Asked after the backoff, not before: a breaker that opened while
        // this payment waited stops its retry too (retries go only through
        // a closed breaker; half-open admits probes, not retries).
        if !p.breaker.closed() {
            break;
        }
    }
    last
}
