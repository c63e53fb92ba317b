//! Webhooks in the reference integration, both sides of catalogue §3.
//!
//! - Sender (platform side): `POST /public/v1/webhooks` subscribes a URL
//!   (`{url, events?, secret?}`, loopback URLs only, so the reference can never
//!   be pointed at the outside world). Creating a message emits
//!   `message.created` to the tenant's subscriptions, BOTIX-signed, from a
//!   spawned task (the API response never waits for a delivery), with one
//!   `X-Botix-Request-Id` for every attempt, the caller's trace-id in
//!   `traceparent`, and retries on the compressed schedule of
//!   `ReferenceConfig::webhook_schedule`, bounded in attempts and per-attempt
//!   time; no retry after a 2xx or a 410.
//! - Event log (the polling fallback, catalogue POLL-002): every emitted
//!   event is kept per tenant and listed by `GET /public/v1/events`
//!   (cursor-paginated, oldest first) with the id its deliveries carry, so an
//!   event whose webhook was lost after every retry can still be fetched; the
//!   `drops-lost-events` defect removes it after the last failed attempt.
//! - Receiver (integrator side): `POST /integrator/webhooks` verifies Standard
//!   Webhooks signatures over the raw bytes with
//!   `ReferenceConfig::webhook_secret`, rejects stale and future timestamps,
//!   dedupes on `webhook-id`, acknowledges at once, and counts each processed
//!   event in `/__tminus/effects/webhooks.processed`. A delivery carrying
//!   `X-Hub-Signature-256` (and no `webhook-signature`) is verified the GitHub
//!   way instead, with the same secret used as a raw string; as GitHub does not
//!   sign `X-GitHub-Delivery`, such deliveries are also deduped on their
//!   signature, so a captured one re-sent under a new id is not processed again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use bytes::Bytes;
use serde_json::{json, Value};

use super::auth::Tenant;
use super::defect::Defect;
use super::effects::Effect;
use super::errors::ApiError;
use super::state::AppState;
use super::trace::new_trace_id;
use crate::signing::{Delivery, Part, Scheme, VerifyError};

/// The receiver's timestamp tolerance (Standard Webhooks' library default).
const TOLERANCE_SECS: i64 = 300;
/// The `webhook-lag-under-load` defect's queue lets one delivery leave this
/// often (10 a second): a burst's events fall seconds behind, one by one
/// events are not delayed.
const LAG_STEP: Duration = Duration::from_millis(100);
/// How long the `receiver-slow-ack` defect holds the acknowledgement.
const SLOW_ACK: Duration = Duration::from_millis(2500);
/// Remembered delivery ids; the oldest are forgotten beyond this.
const MAX_SEEN: usize = 100_000;
/// Events the log keeps per tenant (the oldest are forgotten beyond it).
const MAX_EVENTS: usize = 100_000;
/// Subscriptions per tenant.
const MAX_SUBSCRIPTIONS: usize = 100;

#[derive(Clone, Debug)]
struct Subscription {
    url: String,
    events: Vec<String>,
    secret: String,
}

/// One emitted event as the event log keeps it (ascending `seq` per tenant).
#[derive(Clone, Debug)]
struct StoredEvent {
    seq: u64,
    id: String,
    body: Value,
}

#[derive(Default)]
pub(crate) struct WebhookState {
    seen: Mutex<(HashSet<String>, VecDeque<String>)>,
    subscriptions: Mutex<HashMap<String, Vec<Subscription>>>,
    client: OnceLock<reqwest::Client>,
    /// Every emitted event, per tenant, for `GET /public/v1/events`.
    events: Mutex<HashMap<String, Vec<StoredEvent>>>,
    /// The `webhook-lag-under-load` defect's one queue: when its next
    /// delivery may leave.
    lag_next: Mutex<Option<std::time::Instant>>,
}

impl WebhookState {
    fn events(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<StoredEvent>>> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `GET /public/v1/events?limit=&cursor=`: the tenant's events, oldest first.
pub(crate) async fn list_events(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    query: Result<
        axum::extract::Query<HashMap<String, String>>,
        axum::extract::rejection::QueryRejection,
    >,
) -> Result<Json<Value>, ApiError> {
    let axum::extract::Query(query) =
        query.map_err(|e| ApiError::validation("query", e.body_text()))?;
    let page_req = super::pagination::PageRequest::from_query(&query)?;
    let (page, next) = {
        let log = state.webhooks().events();
        let events = log.get(&tenant).map(Vec::as_slice).unwrap_or_default();
        super::pagination::paginate(&state, "events", events, |e| e.seq, &page_req)?
    };
    Ok(Json(super::pagination::page_body(&page, next, |e| {
        e.body.clone()
    })))
}

fn now() -> i64 {
    crate::model::time::unix_now()
}

/// `POST /public/v1/webhooks` `{url, events?, secret?}` -> 201.
pub(crate) async fn subscribe(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let obj = super::validate::json_object(&body?, false)?;
    let url = obj
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::validation("url", "required string"))?
        .to_owned();
    let loopback = ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"];
    if !loopback.iter().any(|p| url.starts_with(p)) {
        return Err(ApiError::validation(
            "url",
            "the reference only delivers to loopback http URLs",
        ));
    }
    let events: Vec<String> = match obj.get("events") {
        None => vec!["message.created".into()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(_) => return Err(ApiError::validation("events", "must be a list of strings")),
    };
    let secret = match obj.get("secret") {
        Some(Value::String(s)) if s.len() >= 8 => s.clone(),
        Some(_) => {
            return Err(ApiError::validation(
                "secret",
                "must be a string of at least 8 characters",
            ))
        }
        None => format!("whk_{}", new_trace_id()),
    };
    let id = format!("wh_{}", ulid::Ulid::new());
    let w = state.webhooks();
    let mut subs = w.subscriptions.lock().unwrap_or_else(|p| p.into_inner());
    let list = subs.entry(tenant).or_default();
    if list.len() >= MAX_SUBSCRIPTIONS {
        return Err(ApiError::validation("url", "too many subscriptions"));
    }
    list.push(Subscription {
        url: url.clone(),
        events: events.clone(),
        secret: secret.clone(),
    });
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": id, "url": url, "events": events, "secret": secret})),
    ))
}

/// Emits `event` to the tenant's subscribers; returns at once.
pub(crate) fn emit(
    state: &AppState,
    tenant: &str,
    event: &str,
    data: Value,
    trace_id: Option<String>,
) {
    let subs: Vec<Subscription> = {
        let s = state
            .webhooks()
            .subscriptions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        s.get(tenant)
            .map(|l| {
                l.iter()
                    .filter(|x| x.events.iter().any(|e| e == event || e == "*"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    };
    // The defect starts a new trace for the delivery, in the header and the body alike.
    let trace_id = if state.has(Defect::SenderDropsTrace) {
        Some(new_trace_id())
    } else {
        trace_id
    };
    // One event, one id: every subscription's deliveries and the event log
    // carry the same `id`, so a lost delivery can be found by polling.
    let id = format!("evt_{}", ulid::Ulid::new());
    let body = json!({
        "id": id,
        "type": event,
        "created_at": super::clock::now_rfc3339(),
        "trace_id": trace_id,
        "data": data,
    });
    {
        let mut log = state.webhooks().events();
        // Taken under the log's lock, so the tenant's list stays in `seq` order.
        let seq = state.next_seq();
        let list = log.entry(tenant.to_owned()).or_default();
        list.push(StoredEvent {
            seq,
            id: id.clone(),
            body: body.clone(),
        });
        // Bounded under a long burst: the oldest go first, in batches.
        if list.len() > MAX_EVENTS + MAX_EVENTS / 10 {
            list.drain(..MAX_EVENTS / 10);
        }
    }
    // The contract defect: the deliveries (not the log) lose a required field.
    let mut body = body;
    if state.has(Defect::WebhookMissingField) {
        if let Some(obj) = body.as_object_mut() {
            obj.remove("created_at");
        }
    }
    for sub in subs {
        let st = state.clone();
        let trace = trace_id.clone();
        let event = event.to_owned();
        let body = body.clone();
        let tenant = tenant.to_owned();
        tokio::spawn(async move { deliver(st, sub, event, body, trace, tenant).await });
    }
}

async fn deliver(
    state: AppState,
    sub: Subscription,
    event: String,
    body: Value,
    trace_id: Option<String>,
    tenant: String,
) {
    if state.has(Defect::WebhookLagUnderLoad) {
        // One queue for every delivery, 10 a second: the slot is taken
        // under the lock, the wait outside it.
        let slot = {
            let mut next = state
                .webhooks()
                .lag_next
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let now = std::time::Instant::now();
            let slot = next.map_or(now, |t| t.max(now));
            *next = Some(slot + LAG_STEP);
            slot
        };
        tokio::time::sleep_until(slot.into()).await;
    }
    let cfg = state.config();
    let client = state.webhooks().client.get_or_init(|| {
        reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default()
    });
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let scheme = Scheme::builtin("botix").expect("botix scheme");
    let request_id = uuid::Uuid::new_v4().to_string();
    let trace = trace_id.unwrap_or_else(new_trace_id);
    let max_attempts = cfg.webhook_schedule.len() + 1;
    let mut sent_extra = false;
    // The defect: an attempt may hang for a minute (still bounded).
    let attempt_timeout = if state.has(Defect::SenderNoTimeout) {
        Duration::from_secs(60)
    } else {
        cfg.webhook_attempt_timeout
    };
    let mut attempt = 0usize;
    // A Retry-After from the last answer (429/503) overrides a shorter scheduled delay.
    let mut retry_after: Option<Duration> = None;
    // Bounded: at most max_attempts (+1 under the retries-after-2xx defect), each with a timeout.
    loop {
        if attempt > 0 {
            let scheduled = if state.has(Defect::SenderIgnoresSchedule) {
                Duration::from_millis(10)
            } else {
                let s = &cfg.webhook_schedule;
                s.get(attempt - 1)
                    .or(s.last())
                    .copied()
                    .unwrap_or(Duration::ZERO)
            };
            let delay = scheduled.max(retry_after.unwrap_or(Duration::ZERO));
            tokio::time::sleep(delay).await;
        }
        let rid = if state.has(Defect::SenderNewRequestIdPerRetry) && attempt > 0 {
            uuid::Uuid::new_v4().to_string()
        } else {
            request_id.clone()
        };
        let parent: u64 = rand::random::<u64>().max(1);
        let mut req = client
            .post(&sub.url)
            .timeout(attempt_timeout)
            .header("Content-Type", "application/json")
            .header("X-Botix-Event", &event)
            .header("X-Botix-Request-Id", &rid)
            .header("traceparent", format!("00-{trace}-{parent:016x}-01"));
        if !state.has(Defect::SenderUnsigned) {
            let d = Delivery {
                id: rid.clone(),
                timestamp: now(),
                body: bytes.clone(),
            };
            let sig = scheme.signature_value(&d, &[scheme.digest(sub.secret.as_bytes(), &d)]);
            req = req.header("X-Botix-Signature", sig);
        }
        let answer = req.body(bytes.clone()).send().await.ok();
        let status = answer.as_ref().map(|r| r.status().as_u16());
        retry_after = answer
            .as_ref()
            .filter(|_| !state.has(Defect::SenderIgnoresRetryAfter))
            .and_then(|r| r.headers().get("retry-after"))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            // Bounded: a hostile Retry-After cannot park the task for days.
            .map(|s| Duration::from_secs(s.min(3600)));
        attempt += 1;
        let done = match status {
            Some(s) if (200..300).contains(&s) => {
                if state.has(Defect::SenderRetriesAfter2xx) && !sent_extra {
                    sent_extra = true;
                    false
                } else {
                    true
                }
            }
            Some(410) => !state.has(Defect::SenderRetriesGone),
            _ => false,
        };
        if done {
            return;
        }
        if attempt >= max_attempts + usize::from(sent_extra) {
            // Given up: the event stays in the log for polling (the defect
            // drops it, as if the log were only a retry queue).
            if !sent_extra && state.has(Defect::DropsLostEvents) {
                let id = body.get("id").and_then(Value::as_str).unwrap_or_default();
                if let Some(list) = state.webhooks().events().get_mut(&tenant) {
                    list.retain(|e| e.id != id);
                }
            }
            return;
        }
    }
}

fn reject(e: impl std::fmt::Display) -> (StatusCode, Json<Value>) {
    (
        StatusCode::UNAUTHORIZED,
        Json(json!({"error": {"code": "INVALID_SIGNATURE", "message": e.to_string()}})),
    )
}

/// The work `receiver-leaky-compare` does per matching byte.
const LEAK_PER_BYTE: std::time::Duration = std::time::Duration::from_micros(20);

/// The `receiver-leaky-compare` defect's comparison: byte by byte, out at
/// the first difference, busy for [`LEAK_PER_BYTE`] per matching byte. A
/// plain `==` exits early too, but its nanoseconds are lost in a network's
/// jitter; the busy wait stands for a comparison that does real work per
/// character, so the timing probe (WH-013) has a leak it can measure.
fn leaky_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return false;
        }
        let until = std::time::Instant::now() + LEAK_PER_BYTE;
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }
    true
}

/// `POST /integrator/webhooks`: the integrator-side receiver.
pub(crate) async fn receive(
    State(state): State<AppState>,
    raw: Option<axum::Extension<super::raw_head::RawHead>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, Json<Value>) {
    // The defect: only header names written in lower case are found (the
    // raw names, recorded under this defect only; see `raw_head`).
    let raw_names: Option<Vec<String>> = raw
        .filter(|_| state.has(Defect::ReceiverCaseSensitiveHeaders))
        .and_then(|r| r.0.names("/integrator/webhooks", &body));
    // Standard Webhooks, unless only a GitHub-style signature is present.
    let github =
        headers.contains_key("x-hub-signature-256") && !headers.contains_key("webhook-signature");
    let scheme =
        Scheme::builtin(if github { "github" } else { "standard" }).expect("built-in scheme");
    let key = match scheme.decode_secret(&state.config().webhook_secret) {
        Ok(k) => k,
        Err(e) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"error": {"code": "CONFIG", "message": e}})),
            )
        }
    };
    let get = |n: &str| {
        if let Some(names) = &raw_names {
            let lower = n.to_ascii_lowercase();
            if !names.contains(&lower) {
                return None;
            }
        }
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let first_only = state.has(Defect::ReceiverFirstSignatureOnly);
    let hdr = |n: &str| {
        let v = get(n)?;
        if first_only && n == scheme.signature_header {
            return v.split(' ').next().map(str::to_owned);
        }
        Some(v)
    };
    // The defect: verify over a re-serialization instead of the bytes received.
    let signed: Vec<u8> = if state.has(Defect::ReceiverVerifiesReserialized) {
        serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| serde_json::to_vec(&v).ok())
            .unwrap_or_else(|| body.to_vec())
    } else {
        body.to_vec()
    };
    let tolerance = (!state.has(Defect::ReceiverSkipsTimestamp)).then_some(TOLERANCE_SECS);
    let check_future = !state.has(Defect::ReceiverAcceptsFuture);
    let unsigned = hdr(&scheme.signature_header).is_none();
    let verified: Result<Delivery, VerifyError> =
        if unsigned && state.has(Defect::ReceiverSignatureOptional) {
            // The defect: no signature header, nothing verified, still processed.
            Ok(Delivery {
                id: scheme
                    .id_header
                    .as_deref()
                    .and_then(hdr)
                    .unwrap_or_else(|| format!("unsigned-{}", now())),
                timestamp: now(),
                body: signed.clone(),
            })
        } else if state.has(Defect::ReceiverAcceptsForged) {
            // Headers present and timestamp fresh, signature never compared.
            (|| {
                let need = |n: &str| hdr(n).ok_or_else(|| VerifyError::MissingHeader(n.into()));
                need(&scheme.signature_header)?;
                let id = match &scheme.id_header {
                    Some(h) => need(h)?,
                    None => String::new(),
                };
                let ts: i64 = match &scheme.timestamp_header {
                    Some(h) => need(h)?
                        .parse()
                        .map_err(|_| VerifyError::Malformed(h.clone()))?,
                    None => now(),
                };
                if let Some(t) = tolerance {
                    if ts < now() - t {
                        return Err(VerifyError::TooOld(ts));
                    }
                    if check_future && ts > now() + t {
                        return Err(VerifyError::TooNew(ts));
                    }
                }
                Ok(Delivery {
                    id,
                    timestamp: ts,
                    body: signed.clone(),
                })
            })()
        } else if state.has(Defect::ReceiverLeakyCompare) {
            scheme.verify_with(
                &key,
                &hdr,
                &signed,
                now(),
                tolerance,
                check_future,
                leaky_eq,
            )
        } else {
            // `verify` compares in constant time (`signing::ct_eq`).
            scheme.verify(&key, &hdr, &signed, now(), tolerance, check_future)
        };
    let d = match verified {
        Ok(d) => d,
        Err(e) => return reject(e),
    };
    // Standard Webhooks signs `id.ts.body`: a `.` in the id makes that ambiguous.
    if d.id.contains('.') && !state.has(Defect::ReceiverAcceptsDottedId) {
        return (
            StatusCode::BAD_REQUEST,
            Json(
                json!({"error": {"code": "INVALID_WEBHOOK_ID", "message": "webhook-id must not contain `.`"}}),
            ),
        );
    }
    let id_key = if state.has(Defect::ReceiverDedupesOnSignature) {
        format!(
            "{}:{}|{}",
            scheme.name,
            d.id,
            get(&scheme.signature_header).unwrap_or_default()
        )
    } else {
        format!("{}:{}", scheme.name, d.id)
    };
    let mut dedupe_keys = vec![id_key];
    // An id the signature does not cover can be changed by anyone who saw the
    // delivery, so the signed content is a dedupe key too (the defect forgets it).
    if !scheme.content.contains(&Part::Id) && !state.has(Defect::ReceiverDedupesByDeliveryId) {
        dedupe_keys.push(format!("mac:{}", scheme.digest(&key, &d)));
    }
    let fresh = state.has(Defect::ReceiverNoDedupe) || {
        let mut seen = state
            .webhooks()
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (set, order) = &mut *seen;
        let mut fresh = true;
        for k in dedupe_keys {
            if set.insert(k.clone()) {
                order.push_back(k);
            } else {
                fresh = false;
            }
        }
        while order.len() > MAX_SEEN {
            if let Some(old) = order.pop_front() {
                set.remove(&old);
            }
        }
        fresh
    };
    if fresh {
        // The defect: processing inline before acknowledging a new event.
        if state.has(Defect::ReceiverSlowAck) {
            tokio::time::sleep(SLOW_ACK).await;
        }
        state.effects().record(Effect::WebhooksProcessed);
    }
    // A duplicate is acknowledged with 2xx: a non-2xx would make the sender retry forever.
    (
        StatusCode::OK,
        Json(json!({"received": true, "duplicate": !fresh})),
    )
}
