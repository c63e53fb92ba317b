//! No pass without evidence (issue 12 §3) for the webhook, trace and steps
//! families: every kind runs against a target that does nothing useful (one
//! answering 404 to every request, one answering 200 with no headers and an
//! empty body to every request; for the sink kinds, a platform that never
//! delivers) and no check and no property may pass.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;

use common::{tminus, AppHandle};

/// A target answering every request with `status` and nothing else.
fn useless(status: StatusCode) -> AppHandle {
    AppHandle::start(Router::new().fallback(move || async move { status }))
}

const SECRET: &str = "whsec_dG1pbnVzLXVzZWxlc3MtdGFyZ2V0LWtleQ==";

/// One check per kind of the three families. `effects` is the counter
/// entry for the sender kinds that take one (always for those that need
/// it); `trigger` subscribes the sink and asks for an event, as a real
/// suite would.
fn suite(all_effects: bool) -> String {
    let effects = "    effects: { request: { path: /effects }, value: $.count }\n";
    let sender = |kind: &str, needs_effects: bool, extra: &str| {
        format!(
            "  - id: {id}\n    kind: webhook.{kind}\n    receiver: /webhooks\n    scheme: standard\n    secret: \"{SECRET}\"\n{fx}{extra}",
            id = kind.replace('_', "-"),
            fx = if needs_effects || all_effects { effects } else { "" },
        )
    };
    let sink = |kind: &str, extra: &str| {
        format!(
            "  - id: {id}\n    kind: webhook.{kind}\n    secret: sink-secret\n    wait: 300ms\n    trigger:\n      - {{ method: POST, path: /subscriptions, json: {{ url: \"${{var.sink_url}}\" }} }}\n      - {{ method: POST, path: /messages, json: {{ text: hi }} }}\n{extra}",
            id = kind.replace('_', "-"),
        )
    };
    let trace = |kind: &str, extra: &str| {
        format!(
            "  - id: {id}\n    kind: trace.{kind}\n    request: {{ method: GET, path: /v1/things }}\n{extra}",
            id = kind.replace('_', "-"),
        )
    };
    let mut s = String::from("suite: does-nothing-useful\nchecks:\n");
    for kind in [
        "accepts_valid",
        "rejects_missing_headers",
        "rejects_forged",
        "accepts_raw_bytes",
        "rejects_reserialized",
        "rejects_truncated",
        "rejects_wrong_scheme",
        "rejects_stale",
        "rejects_future",
        "rejects_tampered",
        "key_rotation",
        "rejects_dotted_id",
        "accepts_header_case",
    ] {
        s.push_str(&sender(kind, false, ""));
    }
    for kind in ["dedupes_replay", "replay_new_id", "dedupes_retry"] {
        s.push_str(&sender(kind, true, ""));
    }
    s.push_str(&sender("burst", false, "    count: 5\n    over: 100ms\n"));
    s.push_str(&sender(
        "constant_time_compare",
        false,
        "    samples: 200\n",
    ));
    s.push_str(&sink("sink_delivery", ""));
    let fast = "    schedule: [100ms, 200ms]\n    quiet: 200ms\n";
    s.push_str(&sink("sink_retries", fast));
    s.push_str(&sink("sink_stops_on_success", fast));
    s.push_str(&sink("sink_stops_on_gone", fast));
    s.push_str(&sink("sink_trace", ""));
    s.push_str(&sink(
        "sink_respects_retry_after",
        "    retry_after: 1\n    schedule: [100ms]\n",
    ));
    s.push_str(&sink(
        "sink_timeout",
        "    hang: 2s\n    max_sender_timeout: 1s\n",
    ));
    s.push_str(&trace("present", ""));
    s.push_str(&trace("unique", "    count: 20\n"));
    s.push_str(&trace("propagated", ""));
    s.push_str(&trace("invalid_ignored", ""));
    s.push_str(&trace("request_id_hygiene", ""));
    s.push_str(&trace("async_status", ""));
    s.push_str(&trace("version_downgrade", ""));
    s.push_str(&trace("tracestate", ""));
    s.push_str(
        "  - id: steps\n    steps:\n      - name: create\n        request: { method: POST, path: /v1/things, json: { name: a } }\n        expect: { status: 201, json: { $.id: { exists: true } } }\n",
    );
    s
}

/// Runs the suite against `url` and returns the JSON report's checks.
/// With `one_suite_per_check`, each check runs in a suite of its own (a
/// folder of suites), so a target that serves no route is met by every
/// kind: within one suite, the runner stops at the first few 404s
/// (src/run/unserved.rs).
fn run(url: &str, all_effects: bool, one_suite_per_check: bool) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().expect("tempdir");
    let suite_path = if one_suite_per_check {
        let whole: serde_json::Value = serde_saphyr::from_str(&suite(all_effects)).unwrap();
        let folder = dir.path().join("suites");
        std::fs::create_dir(&folder).unwrap();
        for check in whole["checks"].as_array().unwrap() {
            let id = check["id"].as_str().unwrap();
            let mut one = whole.clone();
            one["suite"] = serde_json::Value::from(format!("useless-{id}"));
            one["checks"] = serde_json::json!([check]);
            // JSON is YAML: the suite reader takes it as it is.
            std::fs::write(folder.join(format!("{id}.yaml")), one.to_string()).unwrap();
        }
        folder
    } else {
        let path = dir.path().join("useless.yaml");
        std::fs::write(&path, suite(all_effects)).unwrap();
        path
    };
    let json = dir.path().join("report.json");
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite_path.to_str().unwrap(),
            "--target",
            url,
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(180),
    );
    let text = std::fs::read_to_string(&json).unwrap_or_else(|_| {
        panic!(
            "no JSON report; stdout:\n{}\nstderr:\n{}",
            common::stdout(&out),
            common::stderr(&out)
        )
    });
    let v: serde_json::Value = serde_json::from_str(&text).expect("report parses");
    v["suites"]
        .as_array()
        .expect("suites")
        .iter()
        .flat_map(|s| s["checks"].as_array().expect("checks").clone())
        .collect()
}

/// Every kind of the three families is in the suite, and nothing passed:
/// neither a check nor any of its properties.
fn assert_nothing_passes(checks: &[serde_json::Value], target: &str) {
    let kinds: BTreeSet<&str> = checks.iter().filter_map(|c| c["kind"].as_str()).collect();
    let families: BTreeSet<&str> = tminus::families::webhook::spec::KINDS
        .iter()
        .chain(tminus::families::trace::spec::KINDS)
        .chain(tminus::families::steps::spec::KINDS)
        .map(|k| k.name)
        .collect();
    assert_eq!(kinds, families, "the suite must run every kind once");
    let mut passed = Vec::new();
    for c in checks {
        let id = c["id"].as_str().unwrap_or("?");
        if c["verdict"] == "pass" {
            passed.push(format!("{id}: {}", c["message"]));
        }
        for a in c["assertions"].as_array().into_iter().flatten() {
            if a["verdict"] == "pass" {
                passed.push(format!("{id}.{}: {}", a["property"], a["message"]));
            }
        }
    }
    assert!(
        passed.is_empty(),
        "against {target}, these passed without evidence:\n  {}",
        passed.join("\n  ")
    );
}

#[test]
fn a_target_answering_404_everywhere_passes_nothing() {
    let server = useless(StatusCode::NOT_FOUND);
    let checks = run(&server.url, false, true);
    assert_nothing_passes(&checks, "a 404-everywhere target");
    // The rejection kinds say why: the valid control was refused as well.
    let forged = checks
        .iter()
        .find(|c| c["id"] == "rejects-forged")
        .expect("rejects-forged ran");
    assert_eq!(forged["verdict"], "error", "{forged}");
    assert!(
        forged["message"]
            .as_str()
            .unwrap()
            .contains("refused a valid control delivery too (404)"),
        "{forged}"
    );
}

#[test]
fn a_target_answering_200_with_nothing_passes_nothing() {
    let server = useless(StatusCode::OK);
    // With a side-effect counter on every sender check, as a suite that
    // means to prove processing has: a 2xx alone proves only an answer.
    let checks = run(&server.url, true, false);
    assert_nothing_passes(&checks, "a 200-everywhere target");
    let hygiene = checks
        .iter()
        .find(|c| c["id"] == "request-id-hygiene")
        .expect("request-id-hygiene ran");
    // Issue 22 case 6: no request id back is a verdict (a warning under
    // `standard`, saying it is not observable), not an error.
    assert_eq!(hygiene["verdict"], "warn", "{hygiene}");
    assert!(
        hygiene["message"]
            .as_str()
            .unwrap()
            .contains("no response carried X-Request-Id"),
        "{hygiene}"
    );
}
