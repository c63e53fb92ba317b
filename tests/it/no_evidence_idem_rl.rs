//! No pass without evidence (issue 12 §3) for the idempotency and rate-limit
//! families: every kind of both families runs against targets that do
//! nothing useful, and no property may pass.
//!
//! The targets are small axum apps on 127.0.0.1:0: one answers 404 to every
//! path, one answers 200 `{}` with no headers to every path, and one does the
//! same but serves a side-effect counter that never moves (so the checks get
//! past their counter reads and reach their judging code). Each check's
//! verdict must be fail or error, and each property fail, error or skipped
//! (a property whose sibling failed is "not judged"), never pass.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Router;
use common::{stderr, tminus};

/// How a useless target answers.
#[derive(Clone, Copy, Debug)]
enum Useless {
    /// 404, empty body, for every path.
    NotFound,
    /// 200 `{}` with no headers for every path.
    EmptyOk,
    /// 200 `{}` everywhere, and `{"count": 0}` at `/count`: a counter that
    /// never moves.
    EmptyOkStillCounter,
}

/// Starts the app on a thread of its own; returns its base URL.
fn start(kind: Useless) -> String {
    common::serve_on_thread("http", move |listener| async move {
        let app = Router::new().fallback(move |uri: axum::http::Uri| async move {
            match kind {
                Useless::NotFound => StatusCode::NOT_FOUND.into_response(),
                Useless::EmptyOkStillCounter if uri.path() == "/count" => {
                    (StatusCode::OK, r#"{"count":0}"#).into_response()
                }
                _ => (StatusCode::OK, "{}").into_response(),
            }
        });
        axum::serve(listener, app).await.unwrap();
    })
}

/// One check of every kind of both families, with small bounds.
const SUITE: &str = r#"suite: useless
target:
  headers: { Authorization: "Bearer a" }
  second_tenant_headers: { Authorization: "Bearer b" }
checks:
  - id: replay
    kind: idempotency.replay
    request: &req { method: POST, path: /v1/payments, json: { amount: 1000, currency: usd, description: "p ${uuid}" } }
    effects: &effects { request: { path: /count }, value: $.count }
    id_path: $.id
  - id: distinct
    kind: idempotency.distinct_keys
    request: *req
    effects: *effects
    id_path: $.id
  - id: mismatch
    kind: idempotency.mismatch
    request: *req
    effects: *effects
  - id: concurrent
    kind: idempotency.concurrent
    request: *req
    effects: *effects
    concurrency: 4
  - id: lost
    kind: idempotency.lost_response
    request: *req
    effects: *effects
    settle: 100ms
  - id: errors
    kind: idempotency.errors_not_cached
    request: *req
    effects: *effects
    invalid: { method: POST, path: /v1/payments, json: { amount: -1 } }
  - id: in-flight
    kind: idempotency.in_flight
    request: *req
    effects: *effects
    retry_within: 2s
  - id: missing-key
    kind: idempotency.missing_key
    request: *req
    effects: *effects
  - id: key-scope
    kind: idempotency.key_scope
    request: *req
    effects: *effects
    id_path: $.id
  - id: key-syntax
    kind: idempotency.key_syntax
    request: *req
    effects: *effects
  - id: endpoint-scope
    kind: idempotency.endpoint_scope
    request: *req
    effects: *effects
    other_request: { method: POST, path: /v1/refunds }
    other_effects: *effects
  - id: expiry
    kind: idempotency.expiry
    request: *req
    effects: *effects
    ttl: 1s
    margin: 100ms
  - id: rl-headers
    kind: rate_limit.headers
    requests: [{ path: /v1/payments }, { path: /nope }]
    samples: 4
  - id: rl-storm
    kind: rate_limit.storm
    request: { path: /v1/payments }
    max_requests: 60
    concurrency: 4
  - id: rl-recovery
    kind: rate_limit.recovery
    request: { path: /v1/payments }
    max_requests: 60
    concurrency: 4
  - id: rl-partition
    kind: rate_limit.partition
    request: { path: /v1/payments }
    max_requests: 60
    concurrency: 4
"#;

fn every_kind() -> BTreeSet<&'static str> {
    use tminus::families::{idempotency, rate_limit};
    idempotency::spec::KINDS
        .iter()
        .chain(rate_limit::spec::KINDS)
        .map(|k| k.name)
        .collect()
}

/// Runs the suite with `--strict` (a broken SHOULD is a failure, never a
/// warning that could hide a pass) and returns the JSON report's checks.
fn run(dir: &Path, url: &str) -> Vec<serde_json::Value> {
    let suite = dir.join("useless.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    run_path(dir, &suite, url)
}

/// [`run`] with each check in a suite of its own (a folder of suites), so
/// a target that serves no route is met by every kind: within one suite,
/// the runner stops at the first few 404s (src/run/unserved.rs).
fn run_one_suite_per_check(dir: &Path, url: &str) -> Vec<serde_json::Value> {
    let whole: serde_json::Value = serde_saphyr::from_str(SUITE).unwrap();
    let suites = dir.join("suites");
    std::fs::create_dir(&suites).unwrap();
    for check in whole["checks"].as_array().unwrap() {
        let mut one = whole.clone();
        let id = check["id"].as_str().unwrap();
        one["suite"] = serde_json::Value::from(format!("useless-{id}"));
        one["checks"] = serde_json::json!([check]);
        // JSON is YAML: the suite reader takes it as it is.
        std::fs::write(suites.join(format!("{id}.yaml")), one.to_string()).unwrap();
    }
    run_path(dir, &suites, url)
}

fn run_path(dir: &Path, suite: &Path, url: &str) -> Vec<serde_json::Value> {
    let json = dir.join("report.json");
    let out = tminus(
        dir,
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            url,
            "--strict",
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(240),
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{}", stderr(&out)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_ne!(out.status.code(), Some(0), "a useless target cannot pass");
    v["suites"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["checks"].as_array().unwrap().clone())
        .collect()
}

/// Asserts that no check and no property passed; returns the ids of the
/// checks that reached per-property judging.
fn assert_nothing_passes(kind: Useless, checks: &[serde_json::Value]) -> BTreeSet<String> {
    let kinds: BTreeSet<&str> = checks.iter().filter_map(|c| c["kind"].as_str()).collect();
    if !kinds.is_empty() {
        assert_eq!(
            kinds,
            every_kind(),
            "the suite covers every kind of both families"
        );
    }
    assert_eq!(checks.len(), every_kind().len(), "{checks:#?}");
    let mut judged = BTreeSet::new();
    for c in checks {
        let id = c["id"].as_str().unwrap().to_owned();
        let verdict = c["verdict"].as_str().unwrap();
        eprintln!("{kind:?} {id}: {verdict}: {}", c["message"]);
        assert!(
            matches!(verdict, "fail" | "error"),
            "{kind:?}: check {id} is {verdict}, not fail or error: {c:#}"
        );
        let assertions = c["assertions"].as_array().cloned().unwrap_or_default();
        for a in &assertions {
            let v = a["verdict"].as_str().unwrap();
            assert!(
                matches!(v, "fail" | "error" | "skipped"),
                "{kind:?}: {id}.{} is {v} against a target that does nothing useful: {a:#}",
                a["property"]
            );
        }
        if !assertions.is_empty() {
            judged.insert(id);
        }
    }
    judged
}

#[test]
fn a_target_that_answers_404_everywhere_passes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = start(Useless::NotFound);
    assert_nothing_passes(
        Useless::NotFound,
        &run_one_suite_per_check(dir.path(), &url),
    );
}

/// All of them in one suite: stopped early, with one error that says the
/// routes are not served; nothing passes.
#[test]
fn a_suite_whose_routes_all_answer_404_stops_early() {
    let dir = tempfile::tempdir().unwrap();
    let url = start(Useless::NotFound);
    let checks = run(dir.path(), &url);
    let verdicts: Vec<&str> = checks
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert!(
        verdicts
            .iter()
            .all(|v| matches!(*v, "fail" | "error" | "skipped")),
        "{verdicts:?}"
    );
    let stopped = checks
        .iter()
        .filter(|c| {
            c["message"]
                .as_str()
                .unwrap_or_default()
                .contains("does not serve this suite's routes: all")
        })
        .count();
    assert_eq!(stopped, 1, "{checks:#?}");
    // The checks that read a side-effect counter first end on that read's
    // 404 (an error of their own, one request each; counter reads are not
    // the suite's routes), so the stop comes after them: the rest is skipped.
    assert!(verdicts.contains(&"skipped"), "{verdicts:?}");
}

#[test]
fn a_target_that_answers_200_empty_everywhere_passes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = start(Useless::EmptyOk);
    assert_nothing_passes(Useless::EmptyOk, &run(dir.path(), &url));
}

/// With a counter that reads (and never moves), the checks get as far as
/// judging their properties: each one must still find nothing to pass.
#[test]
fn a_target_whose_counter_never_moves_passes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = start(Useless::EmptyOkStillCounter);
    let judged = assert_nothing_passes(Useless::EmptyOkStillCounter, &run(dir.path(), &url));
    // Every idempotency check but errors_not_cached (its invalid request is
    // answered 200, so it errors before judging) reached its properties, as
    // did the header and storm checks.
    for id in [
        "replay",
        "distinct",
        "mismatch",
        "concurrent",
        "lost",
        "in-flight",
        "missing-key",
        "key-scope",
        "key-syntax",
        "endpoint-scope",
        "expiry",
        "rl-headers",
        "rl-storm",
    ] {
        assert!(
            judged.contains(id),
            "{id} did not reach its properties: {judged:?}"
        );
    }
}
