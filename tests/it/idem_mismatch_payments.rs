//! `idempotency.mismatch` on a payments API that validates its body (issue
//! 13): the default change must stay valid (never the `currency`), and a 4xx
//! caused by the changed body's own validation is not a mismatch rejection.
//!
//! The app (axum on 127.0.0.1:0) validates `currency` before it looks at the
//! key, like a framework that validates the body first. Its key store either
//! fingerprints the body (a mismatch gets 422) or keys on the key alone (a
//! changed body gets the stored answer replayed).

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use common::{stderr, tminus};
use serde_json::{json, Value};

#[derive(Default)]
struct Payments {
    /// Whether a reused key with another body is rejected (422).
    fingerprints: bool,
    count: AtomicI64,
    /// key -> (request body, stored answer)
    stored: Mutex<HashMap<String, (Value, Value)>>,
}

async fn create(
    State(app): State<Arc<Payments>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> impl IntoResponse {
    if !matches!(body["currency"].as_str(), Some("usd" | "eur")) {
        let err = json!({"error": {"code": "invalid_currency"}});
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(err));
    }
    let Some(key) = headers.get("idempotency-key").and_then(|v| v.to_str().ok()) else {
        return (StatusCode::BAD_REQUEST, Json(json!({"error": "key"})));
    };
    let mut stored = app.stored.lock().unwrap();
    if let Some((first, answer)) = stored.get(key) {
        if app.fingerprints && *first != body {
            let err = json!({"error": {"code": "idempotency_key_reused"}});
            return (StatusCode::UNPROCESSABLE_ENTITY, Json(err));
        }
        return (StatusCode::CREATED, Json(answer.clone()));
    }
    let n = app.count.fetch_add(1, Ordering::SeqCst) + 1;
    let answer =
        json!({"id": format!("pay_{n}"), "amount": body["amount"], "currency": body["currency"]});
    stored.insert(key.to_owned(), (body, answer.clone()));
    (StatusCode::CREATED, Json(answer))
}

async fn count(State(app): State<Arc<Payments>>) -> Json<Value> {
    Json(json!({"count": app.count.load(Ordering::SeqCst)}))
}

fn start(fingerprints: bool) -> String {
    let state = Arc::new(Payments {
        fingerprints,
        ..Default::default()
    });
    common::serve_on_thread("http", move |listener| async move {
        let app = Router::new()
            .route("/v1/payments", post(create))
            .route("/count", get(count))
            .with_state(state);
        axum::serve(listener, app).await.unwrap();
    })
}

/// Runs one mismatch check (`extra` YAML lines appended) and returns the
/// check from the JSON report.
fn mismatch(dir: &Path, url: &str, extra: &str) -> Value {
    let suite = dir.join("pay.yaml");
    std::fs::write(
        &suite,
        format!(
            r#"suite: pay
checks:
  - id: mismatch
    kind: idempotency.mismatch
    request:
      method: POST
      path: /v1/payments
      json: {{ amount: 1000, currency: usd, description: "order ${{uuid}}" }}
    effects: {{ request: {{ path: /count }}, value: $.count }}
    marker: {{ policy: optional }}
{extra}"#
        ),
    )
    .unwrap();
    let json = dir.join("report.json");
    let out = tminus(
        dir,
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            url,
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{}", stderr(&out)));
    let v: Value = serde_json::from_str(&text).unwrap();
    v["suites"][0]["checks"][0].clone()
}

/// `property -> (verdict, message)` of a check.
fn properties(check: &Value) -> HashMap<String, (String, String)> {
    check["assertions"]
        .as_array()
        .unwrap_or_else(|| panic!("no assertions: {check:#}"))
        .iter()
        .map(|a| {
            (
                a["property"].as_str().unwrap().to_owned(),
                (
                    a["verdict"].as_str().unwrap().to_owned(),
                    a["message"].as_str().unwrap().to_owned(),
                ),
            )
        })
        .collect()
}

/// A store that keys on the key alone replays the first payment for a
/// changed body. The default change leaves `currency` valid, so the replay
/// is seen (changing the currency would have drawn a validation 422 that
/// looked like a correct rejection).
#[test]
fn a_key_only_store_is_caught_with_the_default_change() {
    let dir = tempfile::tempdir().unwrap();
    let check = mismatch(dir.path(), &start(false), "");
    assert_eq!(check["verdict"], "fail", "{check:#}");
    let p = properties(&check);
    assert_eq!(p["rejected"].0, "fail", "{p:?}");
    assert!(p["rejected"].1.contains("silently replayed"), "{p:?}");
    assert_eq!(p["not_replayed"].0, "fail", "{p:?}");
    assert_eq!(p["not_executed"].0, "pass", "{p:?}");
}

/// A `changed:` request that breaks the body's validation draws a 422 even
/// from a store that never checks mismatches: that proves nothing, and the
/// check says so (an error naming the validation), never a pass.
#[test]
fn a_validation_error_of_the_changed_body_is_not_a_rejection() {
    let dir = tempfile::tempdir().unwrap();
    let changed = r#"    changed:
      method: POST
      path: /v1/payments
      json: { amount: 1000, currency: "usd (changed)", description: "order" }
"#;
    let check = mismatch(dir.path(), &start(false), changed);
    assert_eq!(check["verdict"], "error", "{check:#}");
    let p = properties(&check);
    for prop in ["rejected", "reject_status", "not_replayed", "not_executed"] {
        assert_eq!(p[prop].0, "error", "{prop}: {p:?}");
    }
    assert!(
        p["rejected"].1.contains("itself rejected under a new key")
            && p["rejected"].1.contains("validation error"),
        "{p:?}"
    );
}

/// A fingerprinting store passes with the default change: the 422 is about
/// the key, because the changed body alone is accepted.
#[test]
fn a_fingerprinting_store_passes_with_the_default_change() {
    let dir = tempfile::tempdir().unwrap();
    let check = mismatch(dir.path(), &start(true), "");
    assert_eq!(check["verdict"], "pass", "{check:#}");
    let p = properties(&check);
    for prop in ["rejected", "reject_status", "not_replayed", "not_executed"] {
        assert_eq!(p[prop].0, "pass", "{prop}: {p:?}");
    }
    assert!(
        p["rejected"].1.contains("free-text field $.description"),
        "{p:?}"
    );
}
