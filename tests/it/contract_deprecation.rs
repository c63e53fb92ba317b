//! `contract.deprecation` (CON-005) end to end: a suite that names no
//! document or a request to an operation the document does not deprecate is
//! refused before anything is sent (exit 2, at the check), and a target that
//! does nothing useful passes nothing: a 404 is an error (the operation was
//! not served), a bare 200 fails the presence properties. The reference's
//! healthy and broken answers are the defect harness's rows
//! (`tests/serial/defects.rs`, contract table).

use crate::common;

use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;

use common::{tminus, AppHandle};

/// A document with one deprecated operation (sunset on a date alone) and
/// one that is not.
const DOC: &str = r#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
  "paths": {
    "/old": {"get": {"operationId": "oldList", "deprecated": true, "x-sunset": "2027-06-30",
      "responses": {"200": {"description": "ok"}}}},
    "/new": {"get": {"operationId": "newList", "responses": {"200": {"description": "ok"}}}}}}"#;

fn run(suite: &str, target: &str) -> (std::process::Output, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("api.json"), DOC).unwrap();
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, suite).unwrap();
    let json = dir.path().join("r.json");
    let out = tminus(
        dir.path(),
        &[
            "run",
            path.to_str().unwrap(),
            "--target",
            target,
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    let report = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    (out, report)
}

fn suite(contract: bool, path: &str) -> String {
    format!(
        "suite: s\n{}checks:\n  - id: dep\n    kind: contract.deprecation\n    request: {{ path: {path} }}\n",
        if contract {
            "contract: { openapi: api.json }\n"
        } else {
            ""
        }
    )
}

#[test]
fn a_check_with_nothing_to_judge_is_refused_at_the_check() {
    let ok = AppHandle::start(Router::new().fallback(|| async { StatusCode::OK }));
    let cases = [
        (suite(false, "/old"), "add `contract: { openapi: FILE }`"),
        (
            suite(true, "/new"),
            "newList (GET /new) is not marked `deprecated: true` in",
        ),
        (suite(true, "/nowhere"), "GET /nowhere is no operation of"),
    ];
    for (text, why) in cases {
        let (out, _) = run(&text, &ok.url);
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}\n{err}");
        assert!(err.contains(why), "{why} not in:\n{err}");
        assert!(err.contains("s.yaml:"), "at the check's position:\n{err}");
    }
}

#[test]
fn a_useless_target_passes_nothing() {
    // 404: the deprecated operation was not served; nothing is judged.
    let gone = AppHandle::start(Router::new().fallback(|| async { StatusCode::NOT_FOUND }));
    let (out, report) = run(&suite(true, "/old"), &gone.url);
    assert_eq!(out.status.code(), Some(3), "{}", common::stdout(&out));
    let check = &report["suites"][0]["checks"][0];
    assert_eq!(check["verdict"], "error", "{check}");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains("oldList (GET /old) answered 404"),
        "{check}"
    );
    // A bare 200: no header, so both presence properties fail (SHOULD under
    // `standard`: warnings, and a run that exits 0 unless --strict), and
    // the syntax properties are not judged.
    let bare = AppHandle::start(Router::new().fallback(|| async { StatusCode::OK }));
    let (_, report) = run(&suite(true, "/old"), &bare.url);
    let check = &report["suites"][0]["checks"][0];
    let verdicts: Vec<(String, String)> = check["assertions"]
        .as_array()
        .expect("assertions")
        .iter()
        .map(|a| {
            (
                a["property"].as_str().unwrap().to_owned(),
                a["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // `contract` is the runner's: the document asks nothing of this 200.
    for (p, v) in verdicts.iter().filter(|(p, _)| p != "contract") {
        assert_ne!(v, "pass", "{p} passed on a bare 200: {check}");
    }
    assert!(
        verdicts.contains(&("sunset".into(), "warn".into()))
            || verdicts.contains(&("sunset".into(), "fail".into())),
        "{verdicts:?}"
    );
}
