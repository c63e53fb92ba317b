//! Issue 13's "done when": integrations shaped like popular libraries'
//! defaults, certified with `profile: standard`, one `defaults:` block and no
//! `upstream:` rewrites.
//!
//! - A payments API (axum on 127.0.0.1:0): POST /v1/payments with an
//!   Idempotency-Key store that fingerprints the body, replays marked
//!   `Idempotent-Replayed: true`, 417 on a reused key with another body, and a
//!   rate limiter whose 429 carries Retry-After but no error code (as slowapi
//!   and express-rate-limit answer). Every check passes under `standard`;
//!   the same suite under `profile: botix` fails only the storm's error code.
//! - A client (python3, urllib) that posts to /v1/customers, honours
//!   Retry-After and reuses its key on every retry: the client kinds pass on
//!   the client's own path.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use common::{stderr, tminus, AppHandle};
use serde_json::{json, Value};

/// Requests /v1/ping may take per one-second window.
const LIMIT: u64 = 10;

#[derive(Default)]
struct Payments {
    executions: AtomicI64,
    /// key -> (request body, stored answer)
    stored: Mutex<HashMap<String, (Value, Value)>>,
    /// (window start in whole seconds, requests in it)
    window: Mutex<(u64, u64)>,
    ids: AtomicU64,
}

fn with_request_id(app: &Payments, mut r: Response) -> Response {
    let n = app.ids.fetch_add(1, Ordering::SeqCst);
    let id = format!("00000000-0000-4000-8000-{n:012x}");
    r.headers_mut()
        .insert("x-request-id", HeaderValue::from_str(&id).unwrap());
    r
}

async fn create(
    State(app): State<Arc<Payments>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let answer = |status: StatusCode, body: Value| (status, Json(body)).into_response();
    let Some(key) = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        let r = answer(
            StatusCode::BAD_REQUEST,
            json!({"detail": "Idempotency-Key required"}),
        );
        return with_request_id(&app, r);
    };
    let r = {
        let mut stored = app.stored.lock().unwrap();
        match stored.get(&key) {
            Some((first, _)) if *first != body => answer(
                StatusCode::EXPECTATION_FAILED,
                json!({"detail": "Idempotency-Key reused with another body"}),
            ),
            Some((_, kept)) => {
                let mut r = answer(StatusCode::CREATED, kept.clone());
                r.headers_mut()
                    .insert("idempotent-replayed", HeaderValue::from_static("true"));
                r
            }
            None => {
                let n = app.executions.fetch_add(1, Ordering::SeqCst) + 1;
                let kept = json!({"id": format!("pay_{n}"), "amount": body["amount"], "currency": body["currency"]});
                stored.insert(key, (body, kept.clone()));
                answer(StatusCode::CREATED, kept)
            }
        }
    };
    with_request_id(&app, r)
}

async fn count(State(app): State<Arc<Payments>>) -> Response {
    let r = Json(json!({"count": app.executions.load(Ordering::SeqCst)})).into_response();
    with_request_id(&app, r)
}

/// A fixed one-second window; the 429 says when it ends and carries no code.
async fn ping(State(app): State<Arc<Payments>>) -> Response {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let second = now.as_secs();
    let over = {
        let mut w = app.window.lock().unwrap();
        if w.0 != second {
            *w = (second, 0);
        }
        w.1 += 1;
        w.1 > LIMIT
    };
    let r = if over {
        let mut r = (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({"detail": "Too Many Requests"})),
        )
            .into_response();
        r.headers_mut()
            .insert("retry-after", HeaderValue::from_static("1"));
        r
    } else {
        Json(json!({"ok": true})).into_response()
    };
    with_request_id(&app, r)
}

async fn not_found(State(app): State<Arc<Payments>>) -> Response {
    let r = (StatusCode::NOT_FOUND, Json(json!({"detail": "Not Found"}))).into_response();
    with_request_id(&app, r)
}

fn payments_api() -> AppHandle {
    let state = Arc::new(Payments::default());
    AppHandle::start(
        Router::new()
            .route("/v1/payments", post(create))
            .route("/v1/ping", get(ping))
            .route("/count", get(count))
            .fallback(not_found)
            .with_state(state),
    )
}

/// Runs `suite` (YAML) against `url`; returns the exit code, stderr and the
/// checks of the JSON report.
fn run(dir: &Path, suite: &str, url: Option<&str>) -> (Option<i32>, String, Vec<Value>) {
    let path = dir.join("suite.yaml");
    std::fs::write(&path, suite).unwrap();
    let json = dir.join("report.json");
    let mut args = vec![
        "run".to_owned(),
        path.to_string_lossy().into_owned(),
        "--json".into(),
        json.to_string_lossy().into_owned(),
        "--report-dir".into(),
        dir.to_string_lossy().into_owned(),
    ];
    if let Some(u) = url {
        args.extend(["--target".to_owned(), u.to_owned()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = tminus(dir, &args, &[], Duration::from_secs(120));
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{}", stderr(&out)));
    let v: Value = serde_json::from_str(&text).unwrap();
    let checks = v["suites"][0]["checks"].as_array().unwrap().clone();
    (out.status.code(), stderr(&out), checks)
}

fn payments_suite(profile: &str) -> String {
    format!(
        r#"suite: payments
profile: {profile}
defaults:
  idempotency:
    effects: {{ request: {{ path: /count }}, value: $.count }}
    marker: {{ values: ["true"], policy: required }}
    reject_status: [417]
checks:
  - id: replay
    kind: idempotency.replay
    request: {{ method: POST, path: /v1/payments, json: {{ amount: 1000, currency: usd, description: "order ${{uuid}}" }} }}
  - id: mismatch
    kind: idempotency.mismatch
    request: {{ method: POST, path: /v1/payments, json: {{ amount: 1000, currency: usd, description: "order ${{uuid}}" }} }}
  - id: storm
    kind: rate_limit.storm
    request: {{ path: /v1/ping }}
    max_requests: 100
    concurrency: 4
    after: 1100ms
  - id: trace
    kind: trace.present
    request: {{ path: /v1/ping }}
"#
    )
}

#[test]
fn a_payments_api_passes_under_standard_and_botix_holds_it_to_its_contract() {
    let api = payments_api();
    let dir = tempfile::tempdir().unwrap();

    let (code, err, checks) = run(dir.path(), &payments_suite("standard"), Some(&api.url));
    let verdicts: Vec<(String, String)> = checks
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(code, Some(0), "{verdicts:?}\n{err}");
    assert!(
        verdicts.iter().all(|(_, v)| v == "pass"),
        "{verdicts:?}\n{err}"
    );
    // The inherited marker dialect was judged, not skipped.
    let replay = &checks[0];
    let marker = replay["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["property"] == "marker")
        .unwrap();
    assert_eq!(marker["verdict"], "pass", "{replay:#}");
    assert!(marker["message"]
        .as_str()
        .unwrap()
        .contains("Idempotent-Replayed: true"));
    // The mismatch answer is the API's 417, inherited from `defaults:`.
    assert!(
        checks[1]["assertions"].to_string().contains("417"),
        "{:#}",
        checks[1]
    );

    // `botix` expects its contract: a code in the 429 body (a MUST there,
    // issue 22 case 5: a failure without --strict) and 401 for an
    // unauthenticated probe (which this API, with no auth at all, cannot
    // provoke: the property is not exercised).
    let dir = tempfile::tempdir().unwrap();
    let (code, err, checks) = run(dir.path(), &payments_suite("botix"), Some(&api.url));
    assert_eq!(code, Some(3), "{err}");
    let storm = checks.iter().find(|c| c["id"] == "storm").unwrap();
    assert_eq!(storm["verdict"], "fail", "{storm:#}");
    assert!(
        storm["message"].as_str().unwrap().contains("error_code"),
        "{storm:#}"
    );
    let trace = checks.iter().find(|c| c["id"] == "trace").unwrap();
    assert_eq!(trace["verdict"], "error", "{trace:#}");
    assert!(
        trace["message"].as_str().unwrap().contains("401"),
        "{trace:#}"
    );
}

/// A urllib client: POST /v1/customers with one key per operation, reused on
/// every retry; waits Retry-After on 429/503 (a short backoff after a dropped
/// connection), stops on any other 4xx.
const CLIENT: &str = r#"
import http.client, os, sys, time, uuid, urllib.request, urllib.error
url = os.environ["TMINUS_UPSTREAM_URL"].rstrip("/") + "/v1/customers"
key = str(uuid.uuid4())
for attempt in range(6):
    req = urllib.request.Request(url, data=b'{"email":"a@example.com"}', method="POST",
        headers={"Idempotency-Key": key, "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=10)
        sys.exit(0)
    except urllib.error.HTTPError as e:
        if e.code not in (429, 503):
            sys.exit(2)
        time.sleep(float(e.headers.get("Retry-After") or "1"))
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException):
        time.sleep(0.2)
sys.exit(1)
"#;

#[test]
fn a_client_on_its_own_path_is_certified_without_upstream_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let client = format!(
        "{{ argv: [python3, -c, {}], timeout: 20s }}",
        serde_json::to_string(CLIENT).unwrap()
    );
    let suite = format!(
        r#"suite: customers-client
profile: standard
defaults:
  client:
    client: {client}
checks:
  - id: retry-after
    kind: client.respects_retry_after
  - id: no-retry-on-4xx
    kind: client.no_retry_on_4xx
  - id: keys
    kind: client.idempotency_keys
"#
    );
    let (code, err, checks) = run(dir.path(), &suite, None);
    let verdicts: Vec<(String, String, String)> = checks
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["verdict"].as_str().unwrap().to_owned(),
                c["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(code, Some(0), "{verdicts:#?}\n{err}");
    assert!(
        verdicts.iter().all(|(_, v, _)| v == "pass"),
        "{verdicts:#?}"
    );
    // The client's own path was what the scenario served.
    assert!(
        err.contains("/v1/customers")
            || checks
                .iter()
                .any(|c| c.to_string().contains("/v1/customers")),
        "{err}"
    );
}
