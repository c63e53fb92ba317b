//! A burst against a target that does nothing useful (404 for every path):
//! latency and throughput thresholds are not judged on failures (an error
//! naming what was not exercised, never a pass), and the error-rate
//! threshold fails.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;
use common::{stderr, tminus, AppHandle};

#[test]
fn latency_of_failed_answers_is_not_evidence() {
    let app = AppHandle::start(Router::new().fallback(|| async { StatusCode::NOT_FOUND }));
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("b.yaml");
    std::fs::write(
        &suite,
        r#"suite: nothing
load:
  id: burst
  users: 2
  hold: 1s
  max_rate: 40/s
  max_duration: 10s
  requests:
    - name: list
      request: { path: /v1/items }
  thresholds:
    - p95 < 400ms
    - "list: p99 < 1s"
    - throughput > 1/s
    - error_rate < 1%
"#,
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            &app.url,
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let checks = v["suites"][0]["checks"].as_array().unwrap();
    let verdict = |id: &str| {
        let c = checks
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no {id}: {checks:#?}"));
        (
            c["verdict"].as_str().unwrap().to_owned(),
            c["message"].as_str().unwrap().to_owned(),
        )
    };
    for id in ["burst.p95", "burst.list.p99", "burst.throughput"] {
        let (v, m) = verdict(id);
        assert_eq!(v, "error", "{id}: {m}");
        assert!(m.contains("none of the") && m.contains("404"), "{id}: {m}");
    }
    assert_eq!(verdict("burst.error_rate").0, "fail");
}
