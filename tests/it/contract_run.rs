//! `contract:` in a run: the suite against the embedded reference passes with
//! a `contract` property on every check that saw a documented response, and
//! the JSON report (valid against its committed schema) and the HTML report
//! carry the per-operation summary; a document that does not load is an
//! error at the `openapi:` value (file:line:col), before anything is sent.

use crate::common;

use std::time::Duration;

use common::{repo, stdout, tminus};

const DEADLINE: Duration = Duration::from_secs(60);

#[test]
fn a_contract_suite_reports_per_check_and_per_operation() {
    let dir = tempfile::tempdir().unwrap();
    let suite = repo().join("suites/contract.yaml");
    let reports = dir.path().join("r");
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--report-dir",
            reports.to_str().unwrap(),
        ],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("report.json")).unwrap())
            .unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("schema/report.schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let s = &report["suites"][0];
    for c in s["checks"].as_array().unwrap() {
        let contract = c["assertions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["property"] == "contract")
            .unwrap_or_else(|| panic!("no contract property on {}", c["id"]));
        assert_eq!(contract["verdict"], "pass", "{contract}");
        assert!(
            contract["message"].as_str().unwrap().contains("conform to"),
            "{contract}"
        );
    }
    let ops = s["contract"]["operations"].as_array().unwrap();
    let by_id = |id: &str| ops.iter().find(|o| o["operation"] == id).unwrap().clone();
    // The replay's three POSTs (the first, its replay, and the control:
    // the same body under a new key), the sink check's trigger and the
    // count's ten GETs, all conforming.
    let create = by_id("createMessage");
    assert_eq!(
        (create["seen"].as_u64(), create["conforming"].as_u64()),
        (Some(4), Some(4))
    );
    let count = by_id("countMessages");
    assert_eq!(
        (count["seen"].as_u64(), count["conforming"].as_u64()),
        (Some(10), Some(10))
    );
    // An operation no check reached is listed with 0.
    assert_eq!(by_id("runScenario")["seen"].as_u64(), Some(0));
    let html = std::fs::read_to_string(reports.join("report.html")).unwrap();
    assert!(html.contains("<h2>Contract</h2>"), "no contract section");
    assert!(html.contains("<td>createMessage</td>"));
}

#[test]
fn a_document_that_does_not_load_is_an_error_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.yaml"), "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n      responses:\n        '200': {$ref: '#/components/responses/Nope'}\n").unwrap();
    std::fs::write(
        dir.path().join("s.yaml"),
        "suite: s\ncontract:\n  openapi: api.yaml\nchecks:\n  - id: a\n    steps:\n      - request: { path: /healthz }\n",
    )
    .unwrap();
    let out = tminus(dir.path(), &["run", "s.yaml"], &[], DEADLINE);
    let text = format!("{}{}", stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("s.yaml:3:12"), "{text}");
    assert!(text.contains("leads nowhere"), "{text}");

    std::fs::write(
        dir.path().join("t.yaml"),
        "suite: t\ncontract:\n  openapi: missing.yaml\nchecks:\n  - id: a\n    steps:\n      - request: { path: /healthz }\n",
    )
    .unwrap();
    let out = tminus(dir.path(), &["run", "t.yaml"], &[], DEADLINE);
    let text = format!("{}{}", stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("t.yaml:3:12") && text.contains("missing.yaml"),
        "{text}"
    );

    std::fs::write(
        dir.path().join("u.yaml"),
        "suite: u\ncontract:\n  openapi: api.yaml\n  oops: 1\nchecks: []\n",
    )
    .unwrap();
    let out = tminus(dir.path(), &["run", "u.yaml"], &[], DEADLINE);
    let text = format!("{}{}", stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("u.yaml:4:"), "{text}");
}

/// The burst's sample is judged: against the healthy reference the
/// `delivered` result carries a passing `contract` property naming the
/// operations it saw; against a reference whose created message drifts (a
/// renamed field) that property fails, naming the operation and the
/// pointer, while the latency threshold still holds.
#[test]
fn the_burst_sample_is_judged_against_the_contract() {
    use tminus::reference::Defect;
    let delivered = |report: &std::path::Path| -> serde_json::Value {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
        v["suites"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "burst.delivered")
            .cloned()
            .expect("a delivered result")
    };
    let contract_of = |c: &serde_json::Value| -> serde_json::Value {
        c["assertions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["property"] == "contract")
            .cloned()
            .unwrap_or_else(|| panic!("no contract property on {c}"))
    };
    let suite = repo().join("tests/suites/contract-burst.yaml");

    let healthy = common::RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (json, out) = common::run_with_json(dir.path(), &suite, &healthy.url, &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let c = contract_of(&delivered(&json));
    assert_eq!(c["verdict"], "pass", "{c}");
    let m = c["message"].as_str().unwrap();
    assert!(
        m.contains("createMessage") && m.contains("countMessages") && m.contains("conform to"),
        "{m}"
    );

    let drifted = common::RefHandle::start(&[Defect::FieldRenamed]);
    let dir = tempfile::tempdir().unwrap();
    let (json, out) = common::run_with_json(dir.path(), &suite, &drifted.url, &[], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let d = delivered(&json);
    let c = contract_of(&d);
    assert_eq!(c["verdict"], "fail", "{c}");
    let m = c["message"].as_str().unwrap();
    assert!(
        m.contains("createMessage (POST /public/v1/messages): 201 body: \"contact_id\" is a required property"),
        "{m}"
    );
    // Only the contract broke: the delivery and the threshold still hold.
    let others: Vec<_> = d["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["property"] != "contract")
        .map(|a| a["verdict"].clone())
        .collect();
    assert!(others.iter().all(|v| v == "pass"), "{d}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for c in report["suites"][0]["checks"].as_array().unwrap() {
        if c["id"] != "burst.delivered" {
            assert_eq!(c["verdict"], "pass", "{c}");
        }
    }
}

/// `contract.ignore` and the side-effect counters (issue 37 item 5): a
/// document that describes the API only (no test hook, no health route)
/// judges the API's answers; the counter the replay reads is never judged,
/// and a route listed in `ignore` is not drift. Without `ignore`, the same
/// health route is reported as undocumented: the list is what exempts it.
#[test]
fn ignored_routes_and_effects_counters_are_not_drift() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("suites/reference.openapi.json")).unwrap(),
    )
    .unwrap();
    let paths = doc["paths"].as_object_mut().unwrap();
    paths.retain(|p, _| p.starts_with("/public/"));
    assert!(paths.contains_key("/public/v1/messages"));
    std::fs::write(dir.path().join("api.json"), doc.to_string()).unwrap();
    let suite = |ignore: &str| {
        format!(
            "suite: s\ncontract:\n  openapi: api.json\n{ignore}target:\n  headers:\n    Authorization: \"Bearer ref_test_key_a\"\nchecks:\n  - id: replay\n    kind: idempotency.replay\n    request:\n      method: POST\n      path: /public/v1/messages\n      json: {{ contact_id: 1, text: \"hi ${{uuid}}\" }}\n    effects:\n      request: {{ path: /__tminus/effects/messages.create }}\n      value: $.count\n  - id: health\n    steps:\n      - request: {{ path: /healthz }}\n        expect: {{ status: 200 }}\n"
        )
    };
    let contract_of = |name: &str, text: String| -> Vec<(String, String, String)> {
        let file = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&file, text).unwrap();
        let json = dir.path().join(format!("{name}.json"));
        let out = tminus(
            dir.path(),
            &[
                "run",
                file.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
                "--report-dir",
                dir.path().join(name).to_str().unwrap(),
            ],
            &[],
            DEADLINE,
        );
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&json)
                .unwrap_or_else(|_| panic!("no report: {}", stdout(&out))),
        )
        .unwrap();
        report["suites"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let a = c["assertions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|a| a["property"] == "contract");
                (
                    c["id"].as_str().unwrap().to_owned(),
                    a.map_or("none".into(), |a| a["verdict"].as_str().unwrap().to_owned()),
                    a.map_or(String::new(), |a| a["message"].as_str().unwrap().to_owned()),
                )
            })
            .collect()
    };
    let with = contract_of("with", suite("  ignore: [/healthz]\n"));
    let replay = &with[0];
    assert_eq!(replay.1, "pass", "{replay:?}");
    assert!(!replay.2.contains("__tminus"), "{replay:?}");
    // The health check saw no documented response: no contract property.
    assert_eq!(with[1].1, "none", "{:?}", with[1]);

    let without = contract_of("without", suite(""));
    assert_eq!(without[0].1, "pass", "{:?}", without[0]);
    let health = &without[1];
    assert!(
        health.1 != "pass" && health.1 != "none",
        "an undocumented route answered and was not reported: {health:?}"
    );
    assert!(
        health.2.contains("/healthz") && health.2.contains("no operation"),
        "{health:?}"
    );

    // A pattern that is no path is refused at its place.
    std::fs::write(dir.path().join("bad.yaml"), suite("  ignore: [healthz]\n")).unwrap();
    let out = tminus(dir.path(), &["validate", "bad.yaml"], &[], DEADLINE);
    let text = format!("{}{}", stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("bad.yaml:4:") && text.contains("from the first `/`"),
        "{text}"
    );
}
