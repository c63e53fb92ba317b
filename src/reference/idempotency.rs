//! Idempotency for the reference's mutating routes (catalogue §1, IDEM-001..010).
//!
//! A middleware between auth and the handlers of `POST /public/v1/messages`,
//! `POST /public/v1/contacts/bulk-create` and `POST /public/v1/scenarios/{id}/run`:
//!
//! - keys are scoped per (API key, `Idempotency-Key`) and live for
//!   `ReferenceConfig::idempotency_ttl` (24 h by default);
//! - the key is required on `POST /public/v1/messages` (400
//!   `IDEMPOTENCY_KEY_REQUIRED`, switchable with `idempotency_key_required`) and
//!   optional on the two other routes, which predate it (BOTIX keeps them
//!   backward compatible); a malformed key (empty, over 255 characters, control
//!   characters) is 400 `IDEMPOTENCY_KEY_INVALID`; a structured-field string
//!   (`"abc"`) and the bare token `abc` are the same key (IDEM-006);
//! - a completed 2xx is replayed with the same status and body plus
//!   `Idempotent-Replayed: 1`; a different fingerprint (method, path, body) is 422
//!   `IDEMPOTENCY_KEY_MISMATCH`; a key whose first request is still running is 409
//!   `IDEMPOTENCY_KEY_IN_USE`; errors (4xx/5xx) are not stored, so a corrected
//!   retry executes (IDEM-008), which is safe only because of the 409 (IDEM-009).
//!
//! Test hooks: `X-Tminus-Test-Delay-Ms: N` (capped at [`MAX_TEST_DELAY_MS`]) slows
//! the handler AFTER the key is reserved, so races and in-flight retries are
//! deterministic; `X-Tminus-Test-Idempotency-Ttl-Ms: N` on the executing request
//! stores its answer for N ms instead of the TTL (never longer than the
//! configured TTL), so expiry (IDEM-007) is testable in a second while the
//! default stays 24 h. The handler runs in its own task: a client that drops the
//! connection (a lost response) does not cancel the execution or leave the key
//! reserved forever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::auth::Tenant;
use super::defect::Defect;
use super::state::AppState;

/// The request header carrying the key.
pub const KEY_HEADER: &str = "idempotency-key";
/// The marker set on replayed responses.
pub const REPLAY_HEADER: &str = "idempotent-replayed";
/// The test hook header: milliseconds to wait after the key is reserved.
pub const TEST_DELAY_HEADER: &str = "x-tminus-test-delay-ms";
/// The test hook header shortening the stored answer's TTL (milliseconds).
pub const TEST_TTL_HEADER: &str = "x-tminus-test-idempotency-ttl-ms";
/// Upper bound of the test hook, so a suite cannot park a handler for long.
pub const MAX_TEST_DELAY_MS: u64 = 5_000;
/// Longest accepted key (Stripe's limit, IDEM-006).
pub const MAX_KEY_LEN: usize = 255;
/// Largest body buffered for fingerprinting (axum's default body limit).
const MAX_BODY: usize = 2 * 1024 * 1024;
/// Stored entries above which expired ones are swept, keeping memory bounded.
const SWEEP_ABOVE: usize = 10_000;

/// The middleware's state: the app state plus the key store.
#[derive(Clone)]
pub(crate) struct Idempotency {
    app: AppState,
    store: Arc<Mutex<HashMap<(String, String), Entry>>>,
}

#[derive(Clone)]
enum Entry {
    InFlight,
    Done {
        fingerprint: [u8; 32],
        stored: Stored,
        expires: Instant,
    },
}

#[derive(Clone)]
struct Stored {
    status: StatusCode,
    content_type: Option<HeaderValue>,
    location: Option<HeaderValue>,
    body: Bytes,
}

impl Idempotency {
    pub(crate) fn new(app: AppState) -> Self {
        Idempotency {
            app,
            store: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), Entry>> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

/// The mutating routes idempotency applies to.
fn is_mutating(method: &Method, path: &str) -> bool {
    method == Method::POST
        && (path == "/public/v1/messages"
            || path == "/public/v1/contacts/bulk-create"
            || (path.starts_with("/public/v1/scenarios/") && path.ends_with("/run")))
}

/// Parses a key: a bare token or a structured-field string (`"..."`), which are
/// the same key. `Err` carries the reason it is malformed.
pub fn parse_key(raw: &[u8]) -> Result<String, &'static str> {
    let text = std::str::from_utf8(raw).map_err(|_| "is not valid UTF-8")?;
    let text = text.trim_matches(|c| c == ' ' || c == '\t');
    let inner = match text.strip_prefix('"') {
        Some(rest) => rest
            .strip_suffix('"')
            .ok_or("has an unterminated quoted string")?,
        None => text,
    };
    if inner.is_empty() {
        return Err("is empty");
    }
    if inner.chars().count() > MAX_KEY_LEN {
        return Err("is longer than 255 characters");
    }
    if inner.chars().any(|c| c.is_control()) {
        return Err("holds control characters");
    }
    Ok(inner.to_owned())
}

fn fingerprint(method: &Method, path: &str, body: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(method.as_str().as_bytes());
    h.update([0]);
    h.update(path.as_bytes());
    h.update([0]);
    h.update(body);
    h.finalize().into()
}

fn replay(stored: &Stored, marker: bool) -> Response {
    let mut resp = Response::new(Body::from(stored.body.clone()));
    *resp.status_mut() = stored.status;
    let h = resp.headers_mut();
    if let Some(ct) = &stored.content_type {
        h.insert(header::CONTENT_TYPE, ct.clone());
    }
    if let Some(loc) = &stored.location {
        h.insert(header::LOCATION, loc.clone());
    }
    if marker {
        h.insert(REPLAY_HEADER, HeaderValue::from_static("1"));
    }
    resp
}

/// The middleware (see the module doc).
pub(crate) async fn guard(State(idem): State<Idempotency>, req: Request, next: Next) -> Response {
    let app = &idem.app;
    let path = req.uri().path().to_owned();
    if !is_mutating(req.method(), &path) {
        return next.run(req).await;
    }
    let delay = req
        .headers()
        .get(TEST_DELAY_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|ms| Duration::from_millis(ms.min(MAX_TEST_DELAY_MS)));
    // The test TTL can only shorten the configured one.
    let ttl = req
        .headers()
        .get(TEST_TTL_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(app.config().idempotency_ttl)
        .min(app.config().idempotency_ttl);
    if app.has(Defect::NoIdempotency) {
        // The defect: no key handling at all (the test hook still applies).
        return execute(next, req, delay).await;
    }
    let key = match req.headers().get(KEY_HEADER) {
        None if path == "/public/v1/messages" && app.config().idempotency_key_required => {
            return error(
                StatusCode::BAD_REQUEST,
                "IDEMPOTENCY_KEY_REQUIRED",
                "POST /public/v1/messages requires an Idempotency-Key header (a UUIDv4 or ULID)",
            );
        }
        None => return execute(next, req, delay).await,
        Some(v) => match parse_key(v.as_bytes()) {
            // The defect: the quotes stay part of the key.
            Ok(_) if app.has(Defect::QuotedKeyDistinct) => {
                String::from_utf8_lossy(v.as_bytes()).trim().to_owned()
            }
            Ok(k) => k,
            // The defect: whatever was sent is the key.
            Err(_) if app.has(Defect::AcceptsMalformedKeys) => {
                String::from_utf8_lossy(v.as_bytes()).into_owned()
            }
            Err(why) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "IDEMPOTENCY_KEY_INVALID",
                    &format!("Idempotency-Key {why}"),
                )
            }
        },
    };
    let tenant = req
        .extensions()
        .get::<Tenant>()
        .map(|t| t.0.clone())
        .unwrap_or_default();
    let (parts, body) = req.into_parts();
    let bytes = match to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                "request body too large",
            )
        }
    };
    // The defect: the fingerprint leaves the path out, so the same key and body
    // on another endpoint looks like the same request.
    let fp_path = if app.has(Defect::KeysIgnoreEndpoint) {
        ""
    } else {
        path.as_str()
    };
    let fp = fingerprint(&parts.method, fp_path, &bytes);
    let req = Request::from_parts(parts, Body::from(bytes));
    // The scope of a key: the API key that sent it (IDEM-005), unless broken.
    let scope = if app.has(Defect::KeysGlobal) {
        String::new()
    } else {
        tenant.clone()
    };
    let slot = (scope.clone(), key);
    let race = app.has(Defect::RaceExecutesTwice);
    {
        let mut store = idem.lock();
        let now = Instant::now();
        if store.len() > SWEEP_ABOVE {
            store.retain(|_, e| !matches!(e, Entry::Done { expires, .. } if *expires <= now));
        }
        let mut current = store.get(&slot).cloned();
        let never_expire = app.has(Defect::KeysNeverExpire);
        if let Some(Entry::Done { expires, .. }) = &current {
            if *expires <= now && !never_expire {
                store.remove(&slot);
                current = None;
            }
        }
        if current.is_none() && app.has(Defect::DedupeByBody) {
            // The defect: any completed request of this tenant with the same
            // fingerprint counts as "the same operation", whatever its key.
            current = store
                .iter()
                .find(|((s, _), e)| {
                    s == &scope
                        && matches!(e, Entry::Done { fingerprint, expires, .. }
                            if *fingerprint == fp && *expires > now)
                })
                .map(|(_, e)| e.clone());
        }
        match current {
            Some(Entry::Done {
                fingerprint,
                stored,
                ..
            }) => {
                if fingerprint != fp && !app.has(Defect::MismatchReplayed) {
                    return error(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "IDEMPOTENCY_KEY_MISMATCH",
                        "this Idempotency-Key was used with a different request (method, path or body)",
                    );
                }
                if !app.has(Defect::ReplayReexecutes) {
                    return replay(&stored, !app.has(Defect::ReplayWithoutMarker));
                }
                // The defect: fall through and run the handler again.
            }
            Some(Entry::InFlight) if !race => {
                return error(
                    StatusCode::CONFLICT,
                    "IDEMPOTENCY_KEY_IN_USE",
                    "a request with this Idempotency-Key is still being processed; retry later",
                );
            }
            _ => {}
        }
        if !race {
            store.insert(slot.clone(), Entry::InFlight);
        }
    }
    // The store is updated inside the handler's task, so a client that drops
    // the connection (the middleware future is then cancelled) still leaves
    // the key completed, not reserved forever.
    let release = Release {
        idem: idem.clone(),
        slot: Some(slot.clone()),
    };
    let app2 = app.clone();
    let finish = move |resp: &Response, body: &Bytes| {
        let mut release = release;
        let slot = release.slot.take().expect("slot set until finish");
        let cacheable = resp.status().is_success() || app2.has(Defect::ErrorsCached);
        let mut store = release.idem.lock();
        if cacheable {
            let stored = Stored {
                status: resp.status(),
                content_type: resp.headers().get(header::CONTENT_TYPE).cloned(),
                location: resp.headers().get(header::LOCATION).cloned(),
                body: body.clone(),
            };
            store.insert(
                slot,
                Entry::Done {
                    fingerprint: fp,
                    stored,
                    expires: Instant::now() + ttl,
                },
            );
        } else if matches!(store.get(&slot), Some(Entry::InFlight)) {
            // Errors are not stored: the key is free again (IDEM-008).
            store.remove(&slot);
        }
    };
    run_task(next, req, delay, finish).await
}

/// Frees a reserved key if the handler's task ends without completing (panic).
struct Release {
    idem: Idempotency,
    slot: Option<(String, String)>,
}

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let mut store = self.idem.lock();
            if matches!(store.get(&slot), Some(Entry::InFlight)) {
                store.remove(&slot);
            }
        }
    }
}

/// Without a key: run the handler as is (in its own task, like keyed requests).
async fn execute(next: Next, req: Request, delay: Option<Duration>) -> Response {
    run_task(next, req, delay, |_: &Response, _: &Bytes| {}).await
}

/// Runs the handler in its own task (so a dropped client connection cannot
/// cancel it half-way) after the optional test delay, buffers its body and
/// calls `finish` with the result, still inside the task.
async fn run_task(
    next: Next,
    req: Request,
    delay: Option<Duration>,
    finish: impl FnOnce(&Response, &Bytes) + Send + 'static,
) -> Response {
    let task = tokio::spawn(async move {
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        let resp = next.run(req).await;
        let (parts, body) = resp.into_parts();
        let bytes = to_bytes(body, MAX_BODY).await.ok()?;
        let resp = Response::from_parts(parts, Body::from(bytes.clone()));
        finish(&resp, &bytes);
        Some(resp)
    });
    match task.await {
        Ok(Some(resp)) => resp,
        _ => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "the handler failed",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_bare_and_quoted_as_the_same() {
        assert_eq!(parse_key(b"abc-1").unwrap(), "abc-1");
        assert_eq!(parse_key(b"\"abc-1\"").unwrap(), "abc-1");
        assert_eq!(parse_key(b"").unwrap_err(), "is empty");
        assert_eq!(parse_key(b"\"\"").unwrap_err(), "is empty");
        assert!(parse_key(b"\"abc").is_err());
        assert!(parse_key("a".repeat(256).as_bytes()).is_err());
        assert!(parse_key("a".repeat(255).as_bytes()).is_ok());
        assert!(parse_key(b"a\x01b").is_err());
    }

    #[test]
    fn only_mutating_routes() {
        assert!(is_mutating(&Method::POST, "/public/v1/messages"));
        assert!(is_mutating(&Method::POST, "/public/v1/scenarios/x/run"));
        assert!(!is_mutating(&Method::GET, "/public/v1/messages"));
        assert!(!is_mutating(&Method::POST, "/public/v1/messages/count"));
    }
}
