//! The observability family (issue 45) end to end: the one log source read
//! from a file, a command and Loki's HTTP API (a recorded `query_range`
//! exchange served on 127.0.0.1: no runnable Loki ships in Debian or PyPI;
//! Debian's `loki` package is a genetics tool), a source that returns
//! nothing is an error naming it, an endless command stops at its cap, and
//! no report of a run against `logs-secrets` + `logs-pii` holds the key,
//! the card number or the email.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::Query;
use axum::routing::get;
use axum::{Json, Router};
use common::{tminus, AppHandle, RefHandle};
use tminus::reference::{Defect, ReferenceConfig};

const API_KEY: &str = "ref_test_key_a";

fn reference(log: &Path, defects: &[Defect]) -> RefHandle {
    RefHandle::start_with(ReferenceConfig {
        defects: defects.to_vec(),
        log_file: Some(log.to_owned()),
        ..ReferenceConfig::default()
    })
}

/// A suite of both log kinds reading `logs` (the YAML of `observe.logs`).
fn suite(logs: &str) -> String {
    format!(
        r#"suite: obs
target:
  headers: {{ Authorization: "Bearer ${{secret.KEY:-{API_KEY}}}" }}
  timeout: 5s
observe:
  logs:
{logs}
checks:
  - id: correlated
    kind: observability.logs_correlated
    request: {{ path: /public/v1/contacts }}
    requests: 3
    deadline: 2s
  - id: clean
    kind: observability.logs_clean
    request:
      method: POST
      path: /public/v1/payments
      json: {{ amount: 1, card: {{ number: "4242 4242 4242 4242" }}, email: ada@example.com }}
    deadline: 2s
"#
    )
}

struct Run {
    code: i32,
    checks: Vec<serde_json::Value>,
    /// Console output and every report file, concatenated.
    everything: String,
}

fn run(dir: &Path, suite_text: &str, target: &str, envs: &[(&str, &str)]) -> Run {
    let path = dir.join("obs.yaml");
    std::fs::write(&path, suite_text).unwrap();
    let reports = dir.join("reports");
    let out = tminus(
        dir,
        &[
            "run",
            path.to_str().unwrap(),
            "--target",
            target,
            "--report-dir",
            reports.to_str().unwrap(),
        ],
        envs,
        Duration::from_secs(60),
    );
    let mut everything = format!("{}{}", common::stdout(&out), common::stderr(&out));
    let mut checks = Vec::new();
    for e in std::fs::read_dir(&reports).expect("reports written") {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        if p.file_name().is_some_and(|n| n == "report.json") {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            checks = v["suites"][0]["checks"].as_array().unwrap().clone();
        }
        everything.push_str(&text);
    }
    Run {
        code: out.status.code().unwrap_or(-1),
        checks,
        everything,
    }
}

fn check<'a>(r: &'a Run, id: &str) -> &'a serde_json::Value {
    r.checks
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("{id} not reported: {}", r.everything))
}

fn verdicts(r: &Run) -> Vec<(String, String)> {
    r.checks
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn both(v: &str) -> Vec<(String, String)> {
    vec![("correlated".into(), v.into()), ("clean".into(), v.into())]
}

#[test]
fn logs_read_by_a_command_correlate_with_the_requests() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("api.log");
    let r = reference(&log, &[]);
    let logs = format!("    command: [cat, \"{}\"]\n    timeout: 5s", log.display());
    let out = run(dir.path(), &suite(&logs), &r.url, &[]);
    assert_eq!(verdicts(&out), both("pass"), "{}", out.everything);
    assert_eq!(out.code, 0);
    assert!(
        check(&out, "correlated")["assertions"][0]["message"]
            .as_str()
            .unwrap()
            .contains("3/3 sampled requests"),
        "{}",
        out.everything
    );
}

/// The reference's own log lines, answered as Loki's `query_range` does
/// (the shape recorded from Loki 3: `streams`, nanosecond strings), from
/// the `start` tminus asks for.
fn loki_for(log: std::path::PathBuf, seen: Arc<Mutex<Vec<HashMap<String, String>>>>) -> Router {
    Router::new().route(
        "/loki/api/v1/query_range",
        get(move |Query(q): Query<HashMap<String, String>>| {
            let log = log.clone();
            let seen = seen.clone();
            async move {
                let start: u128 = q["start"].parse().unwrap();
                seen.lock().unwrap().push(q);
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let values: Vec<serde_json::Value> = text
                    .lines()
                    .filter_map(|l| {
                        let v: serde_json::Value = serde_json::from_str(l).ok()?;
                        let ns = u128::from(v["ts_ms"].as_u64()?) * 1_000_000;
                        (ns >= start).then(|| serde_json::json!([ns.to_string(), l]))
                    })
                    .collect();
                Json(serde_json::json!({
                    "status": "success",
                    "data": {
                        "resultType": "streams",
                        "result": [{ "stream": { "app": "reference", "level": "info" }, "values": values }],
                        "stats": { "summary": { "totalEntriesReturned": 0 } }
                    }
                }))
            }
        }),
    )
}

#[test]
fn logs_read_from_loki_correlate_and_the_query_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("api.log");
    let r = reference(&log, &[]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let loki = AppHandle::start(loki_for(log, seen.clone()));
    let logs = format!(
        "    loki: {}\n    query: '{{app=\"reference\"}}'\n    max_lines: 1000",
        loki.url
    );
    let out = run(dir.path(), &suite(&logs), &r.url, &[]);
    assert_eq!(verdicts(&out), both("pass"), "{}", out.everything);
    let seen = seen.lock().unwrap();
    let q = seen.first().expect("Loki was asked");
    assert_eq!(q["query"], "{app=\"reference\"}");
    assert_eq!(q["direction"], "forward");
    assert_eq!(q["limit"], "1000");
    assert!(q["start"].parse::<u128>().unwrap() < q["end"].parse::<u128>().unwrap());
}

#[test]
fn a_source_that_returns_nothing_is_an_error_naming_it() {
    // A target that does nothing useful: 200 and nothing else to every
    // request, no log.
    let useless = AppHandle::start(Router::new().fallback(|| async { axum::http::StatusCode::OK }));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("never-written.log");
    std::fs::write(&file, "").unwrap();
    let cases = [
        (
            format!("    file: \"{}\"", file.display()),
            format!("log file {}", file.display()),
        ),
        (
            "    command: [\"true\"]".to_owned(),
            "log command `true`".to_owned(),
        ),
    ];
    for (logs, name) in cases {
        let out = run(dir.path(), &suite(&logs), &useless.url, &[]);
        assert_eq!(verdicts(&out), both("error"), "{}", out.everything);
        assert_eq!(out.code, 3, "{}", out.everything);
        for id in ["correlated", "clean"] {
            let m = check(&out, id)["message"].as_str().unwrap().to_owned();
            assert!(
                m.contains(&format!("{name} returned no log line at all")),
                "{id}: {m}"
            );
        }
    }
    // A command that fails: its stderr (bounded) says why.
    let logs = "    command: [\"echo no such deployment >&2; exit 2\"]\n    shell: true";
    let out = run(dir.path(), &suite(logs), &useless.url, &[]);
    assert_eq!(out.code, 3, "{}", out.everything);
    let m = check(&out, "correlated")["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        m.contains("log command (a shell line): exited with exit status: 2: no such deployment"),
        "{m}"
    );
}

#[test]
fn an_endless_command_stops_at_the_cap_and_leaves_missing_ids_undecided() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("api.log");
    let r = reference(&log, &[]);
    // Endless output (`yes`), none of it the requests' lines.
    let logs = "    command: [yes, '{\"msg\":\"noise\"}']\n    max_bytes: 1MiB\n    timeout: 10s";
    let started = Instant::now();
    let out = run(dir.path(), &suite(logs), &r.url, &[]);
    let c = check(&out, "correlated");
    assert_eq!(c["verdict"], "error", "{}", out.everything);
    let m = c["message"].as_str().unwrap();
    assert!(m.contains("stopped at its cap"), "{m}");
    assert_eq!(out.code, 4, "inconclusive: {}", out.everything);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn no_report_holds_the_secret_or_the_personal_data_the_logs_leaked() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("api.log");
    let r = reference(&log, &[Defect::LogsSecrets, Defect::LogsPii]);
    let logs = format!("    file: \"{}\"", log.display());
    let out = run(dir.path(), &suite(&logs), &r.url, &[]);
    assert_eq!(out.code, 1, "{}", out.everything);
    let c = check(&out, "clean");
    let props: Vec<(String, String)> = c["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["property"].as_str().unwrap().into(),
                a["verdict"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        props,
        [
            ("no_secrets".into(), "fail".into()),
            ("no_pii".into(), "fail".into())
        ]
    );
    // The logs hold them (so the run had something to leak)...
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains(API_KEY) && logged.contains("4242 4242 4242 4242"));
    // ...and nothing tminus wrote does: console, JUnit, JSON, HTML.
    for leaked in [
        API_KEY,
        "4242 4242 4242 4242",
        "4242424242424242",
        "ada@example.com",
    ] {
        assert!(
            !out.everything.contains(leaked),
            "`{leaked}` is in a report:\n{}",
            out.everything
        );
    }
    assert!(
        out.everything.contains("a card number at line"),
        "{}",
        out.everything
    );
}

#[test]
fn a_log_check_without_a_source_and_a_source_with_two_are_suite_errors() {
    let dir = tempfile::tempdir().unwrap();
    let none = "suite: s\nchecks:\n  - id: c\n    kind: observability.logs_correlated\n    request: { path: /x }\n";
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, none).unwrap();
    let out = tminus(
        dir.path(),
        &["validate", path.to_str().unwrap()],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = common::stderr(&out);
    assert!(
        err.contains("s.yaml:3:9") && err.contains("give the suite `observe: { logs:"),
        "{err}"
    );
    let two = "suite: s\nobserve:\n  logs:\n    file: a.log\n    command: [cat, a.log]\nchecks:\n  - id: c\n    kind: observability.logs_correlated\n    request: { path: /x }\n";
    std::fs::write(&path, two).unwrap();
    let out = tminus(
        dir.path(),
        &["validate", path.to_str().unwrap()],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = common::stderr(&out);
    assert!(
        err.contains("reads one source, not file and command"),
        "{err}"
    );
}

#[test]
fn red_metrics_on_a_page_with_no_sample_is_an_error_not_a_pass() {
    // 200 with an empty body everywhere: the routes "answer", /metrics holds nothing.
    let useless = AppHandle::start(Router::new().fallback(|| async { axum::http::StatusCode::OK }));
    let dir = tempfile::tempdir().unwrap();
    let text = "suite: obs\nchecks:\n  - id: red\n    kind: observability.red_metrics\n    routes: [{ route: GET /v1/things, request: { path: /v1/things } }]\n";
    let out = run(dir.path(), text, &useless.url, &[]);
    let c = check(&out, "red");
    assert_eq!(c["verdict"], "error", "{}", out.everything);
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("holds no sample at all"),
        "{c}"
    );
    assert_eq!(out.code, 3);
}
