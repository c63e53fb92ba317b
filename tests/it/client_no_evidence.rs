//! No pass without evidence (issue 12 §3), client family: every `client.*`
//! kind run against clients that do nothing useful (one that never calls,
//! one that only calls a path the scenario does not answer, so it gets
//! nothing but `404 NOT_SCRIPTED`) reports no passing property: each check
//! is an error that names what was not exercised.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::*;

/// One check of every client kind, narrowed to `/v1/scripted` by `match:`
/// (or by its `path:`, for the polling list).
fn every_kind(client: &str) -> String {
    let kinds = [
        ("respects", "client.respects_retry_after", ""),
        ("backoff", "client.exponential_backoff", "    clients: 4\n"),
        ("jitter", "client.jitter", "    clients: 4\n"),
        ("bounded", "client.bounded", "    max_total: 3s\n"),
        ("no-retry", "client.no_retry_on_4xx", ""),
        ("policy", "client.retry_503_policy", ""),
        ("keys", "client.idempotency_keys", ""),
        ("slows", "client.slows_before_limit", ""),
        ("amplification", "client.retry_amplification", ""),
        ("replay", "client.replay_is_success", ""),
        ("traceparent", "client.traceparent", ""),
        // The polling mock is narrowed by its list's path, not by `match:`.
        ("polling", "client.polling", "    path: /v1/scripted\n"),
    ];
    let kinds_in_table: Vec<&str> = tminus::families::client::spec::KINDS
        .iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(
        kinds.iter().map(|k| k.1).collect::<Vec<_>>(),
        kinds_in_table,
        "every client kind is run"
    );
    kinds
        .iter()
        .map(|(id, kind, extra)| {
            let narrow = if extra.contains("path:") {
                ""
            } else {
                "    match: { method: POST, path: /v1/scripted }\n"
            };
            format!("  - id: {id}\n    kind: {kind}\n{narrow}    client: {client}\n{extra}")
        })
        .collect()
}

/// Runs the checks; returns the JSON report.
fn run(dir: &Path, checks: &str) -> serde_json::Value {
    let suite = dir.join("s.yaml");
    std::fs::write(
        &suite,
        format!(
            "suite: useless\ntarget: {{ base_url: \"http://127.0.0.1:9\" }}\nchecks:\n{checks}"
        ),
    )
    .unwrap();
    let json = dir.join("r.json");
    let out = tminus(
        dir,
        &[
            "run",
            suite.to_str().unwrap(),
            "--strict",
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(120),
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "errors exit 3: {}",
        stderr(&out)
    );
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// Every check is an error and none of its properties passed; returns
/// (id, message) per check.
fn assert_nothing_passes(report: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in report["suites"][0]["checks"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap().to_owned();
        let message = c["message"].as_str().unwrap_or_default().to_owned();
        assert_eq!(c["verdict"], "error", "{id}: {c:#}");
        for a in c["assertions"].as_array().into_iter().flatten() {
            assert_ne!(a["verdict"], "pass", "{id}: a property passed: {a:#}");
            assert_ne!(a["verdict"], "warn", "{id}: a property was judged: {a:#}");
        }
        out.push((id, message));
    }
    assert_eq!(out.len(), 12, "{report:#}");
    out
}

#[test]
fn a_client_that_never_calls_passes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(
        dir.path(),
        &every_kind("{ argv: [sh, -c, \"exit 0\"], timeout: 5s }"),
    );
    for (id, message) in assert_nothing_passes(&report) {
        assert!(message.contains("sent no request"), "{id}: {message}");
    }
}

// The known case: `client.no_retry_on_4xx` passed a client whose requests all
// got 404 NOT_SCRIPTED (a 404 is one of its statuses), and a client that
// retried everything passed the same way. This one re-sends every request.
#[test]
fn a_client_on_an_unscripted_path_passes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let client = r#"
import os, sys, time, urllib.request, urllib.error, uuid
url = os.environ["TMINUS_UPSTREAM_URL"] + "/v1/customers"
for attempt in range(4):
    req = urllib.request.Request(url, data=b'{"name":"x"}', method="POST",
        headers={"Idempotency-Key": str(uuid.uuid4()), "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=5)
    except urllib.error.HTTPError:
        pass
    time.sleep(0.02)
sys.exit(1)
"#;
    let client = format!(
        "{{ argv: [python3, -c, {}], timeout: 10s }}",
        serde_json::to_string(client).unwrap()
    );
    let report = run(dir.path(), &every_kind(&client));
    for (id, message) in assert_nothing_passes(&report) {
        assert!(
            message.contains("the client never received the scripted")
                && message.contains("it requested POST /v1/customers, not scripted"),
            "{id}: {message}"
        );
    }
    let no_retry = &report["suites"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"].as_str().unwrap().ends_with("no-retry"))
        .unwrap()["message"];
    assert!(
        no_retry
            .as_str()
            .unwrap()
            .contains("the client never received the scripted 401: it requested POST /v1/customers, not scripted"),
        "{no_retry}"
    );
}
