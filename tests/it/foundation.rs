//! End-to-end tests of the foundation: the real binary, real servers on
//! 127.0.0.1:0, and the files it writes.

use crate::common;

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{repo, stderr, stdout, tminus, RefHandle};
use tminus::reference::Defect;

const DEADLINE: Duration = Duration::from_secs(60);

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

/// A TCP listener that only counts connections: proof that nothing was sent.
fn counting_listener() -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            n2.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
    (url, n)
}

#[test]
fn launch_checklist_against_embedded_reference_passes_and_writes_reports() {
    let dir = tempfile::tempdir().unwrap();
    let suite = repo().join("suites/launch-checklist.yaml");
    let out = tminus(dir.path(), &["run", suite.to_str().unwrap()], &[], DEADLINE);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{err}");
    assert!(
        err.contains("started the embedded reference integration at https://127.0.0.1:"),
        "{err}"
    );

    let junit = std::fs::read_to_string(dir.path().join("reports/junit.xml")).unwrap();
    let report = quick_junit::Report::deserialize_from_str(&junit).expect("JUnit parses");
    assert_eq!(report.test_suites.len(), 1);
    let suite_text = std::fs::read_to_string(&suite).unwrap();
    let declared = suite_text.matches("\n  - id: ").count();
    // One testcase per check, or one per property (`<id>.<property>`) for a
    // check that judges several.
    let ids: Vec<&str> = suite_text
        .split("\n  - id: ")
        .skip(1)
        .map(|rest| rest.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(ids.len(), declared);
    let names: Vec<&str> = report.test_suites[0]
        .test_cases
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    for id in &ids {
        let own = names
            .iter()
            .filter(|n| **n == *id || n.strip_prefix(id).is_some_and(|p| p.starts_with('.')))
            .count();
        assert!(own >= 1, "no testcase for {id}: {names:?}");
    }
    assert!(names.contains(&"idem-replay.single_effect"), "{names:?}");
    assert!(report.test_suites[0].test_cases.iter().all(|c| c
        .classname
        .as_ref()
        .map(|s| s.as_str())
        == Some("tminus.launch-checklist")));

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(
        json["totals"]["passed"].as_u64().unwrap() as usize,
        declared
    );
    validate_against_schema(&json);

    // Properties keep the type they were measured with: counts are integers,
    // latencies numbers, lists and ids strings (never parsed back).
    let props = |id: &str| {
        json["suites"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no check {id}"))["properties"]
            .clone()
    };
    let steps = props("message-create-and-count");
    assert!(steps["step1.latency_ms"].is_f64(), "{steps}");
    let replay = props("idem-replay");
    assert!(replay["executions"].is_i64(), "{replay}");
    let headers = props("rate-limit-headers");
    assert!(headers["dialects"].is_string(), "{headers}");
    let storm = props("rate-limit-storm");
    assert!(storm["requests"].is_u64(), "{storm}");
    assert!(storm["statuses"].is_string(), "{storm}");
}

fn validate_against_schema(json: &serde_json::Value) {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("schema/report.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(json)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "report does not match schema: {errors:#?}"
    );
}

const FAILING: &str = r#"suite: failing
checks:
  - id: wrong-status
    steps:
      - request: { path: /public/v1/contacts, headers: { Authorization: "Bearer ref_test_key_a" } }
        expect: { status: 418 }
  - id: still-fine
    steps:
      - request: { path: /healthz }
        expect: { status: 200 }
"#;

#[test]
fn failing_expectation_exits_1_with_failure_element() {
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let suite = write(dir.path(), "failing.yaml", FAILING);
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &reference.url],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(1), "stderr:\n{}", stderr(&out));
    let junit = std::fs::read_to_string(dir.path().join("reports/junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    assert!(junit.contains("expected: status 418"), "{junit}");
    assert!(junit.contains("actual:   status 200"), "{junit}");
    assert!(
        junit.contains("GET http://127.0.0.1:"),
        "request line in failure: {junit}"
    );
    assert!(
        junit.to_ascii_lowercase().contains("x-request-id: "),
        "request id in failure: {junit}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("expected: status 418") && err.contains("actual:   status 200"),
        "{err}"
    );
    validate_against_schema(
        &serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("reports/report.json")).unwrap(),
        )
        .unwrap(),
    );
}

#[test]
fn fail_fast_reports_the_rest_as_skipped() {
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let suite = write(dir.path(), "failing.yaml", FAILING);
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &reference.url, "--fail-fast"],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(1));
    let v = common::verdicts(&dir.path().join("reports/report.json"));
    assert_eq!(
        v,
        vec![
            ("failing/wrong-status".into(), "fail".into()),
            ("failing/still-fine".into(), "skipped".into())
        ]
    );
    let junit = std::fs::read_to_string(dir.path().join("reports/junit.xml")).unwrap();
    assert!(junit.contains("<skipped"), "{junit}");
}

#[test]
fn only_and_tag_select_checks() {
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let suite = repo().join("suites/launch-checklist.yaml");
    let s = suite.to_str().unwrap();
    let out = tminus(
        dir.path(),
        &["run", s, "--target", &reference.url, "--only", "trace-id*"],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ids: Vec<String> = common::verdicts(&dir.path().join("reports/report.json"))
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        ids,
        vec![
            "launch-checklist/trace-id-on-every-response",
            "launch-checklist/trace-ids-unique"
        ]
    );
    let out = tminus(
        dir.path(),
        &["run", s, "--target", &reference.url, "--tag", "security"],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(0));
    // Exactly the checks that carry the tag, and nothing else.
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/report.json")).unwrap(),
    )
    .unwrap();
    let checks = report["suites"][0]["checks"].as_array().unwrap();
    let suite_text = std::fs::read_to_string(&suite).unwrap();
    let tagged =
        suite_text.matches("tags: [security").count() + suite_text.matches(", security").count();
    assert_eq!(checks.len(), tagged, "{checks:#?}");
    assert!(checks.iter().all(|c| c["tags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "security")));
    assert!(checks.iter().any(|c| c["id"] == "auth-rejects-bad-key"));
}

fn assert_invalid(dir: &Path, suite: &str, expect_pos: &str, expect_msg: &str) {
    let (url, hits) = counting_listener();
    let out = tminus(dir, &["run", suite, "--target", &url], &[], DEADLINE);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{err}");
    assert!(
        err.contains(expect_pos),
        "position `{expect_pos}` in:\n{err}"
    );
    assert!(
        err.contains(expect_msg),
        "message `{expect_msg}` in:\n{err}"
    );
    assert!(err.contains("^"), "caret under the position:\n{err}");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "nothing may be sent for an invalid suite"
    );
}

#[test]
fn malformed_yaml_points_to_file_line_col() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        dir.path(),
        "bad.yaml",
        "suite: bad\nchecks:\n  - id: a\n    steps: [ { request: { path: /x }\n",
    );
    let out = tminus(dir.path(), &["run", &s], &[], DEADLINE);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("bad.yaml:"), "{err}");
    assert!(
        regex::Regex::new(r"bad\.yaml:\d+:\d+")
            .unwrap()
            .is_match(&err),
        "{err}"
    );
}

#[test]
fn unknown_key_suggests_the_right_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        dir.path(),
        "typo.yaml",
        "suite: typo\nchecks:\n  - id: a\n    steps:\n      - request: { path: /x }\n        expect:\n          stauts: 200\n",
    );
    assert_invalid(dir.path(), &s, "typo.yaml:7:11", "unknown field `stauts`");
    let out = tminus(dir.path(), &["validate", &s], &[], DEADLINE);
    assert!(
        stderr(&out).contains("did you mean `status`?"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn wrong_type_is_positioned() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        dir.path(),
        "types.yaml",
        "suite: types\nchecks:\n  - id: a\n    steps:\n      - request: { path: /x, timeout: soon }\n",
    );
    assert_invalid(dir.path(), &s, "types.yaml:5:", "invalid duration `soon`");
}

#[test]
fn missing_env_var_names_itself_and_every_error_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        dir.path(),
        "env.yaml",
        "suite: env\ntarget:\n  headers: { Authorization: \"Bearer ${secret.TMINUS_TEST_MISSING_KEY}\" }\nchecks:\n  - id: a\n    steps:\n      - request: { path: \"/x/${env.TMINUS_TEST_MISSING_VAR}\" }\n",
    );
    assert_invalid(
        dir.path(),
        &s,
        "env.yaml:7:",
        "environment variable `TMINUS_TEST_MISSING_VAR` is not set",
    );
    let out = tminus(dir.path(), &["validate", &s], &[], DEADLINE);
    let err = stderr(&out);
    assert!(
        err.contains("secret `TMINUS_TEST_MISSING_KEY` is not set"),
        "{err}"
    );
    assert!(err.contains("env.yaml:3:"), "{err}");
    assert!(err.contains("2 error(s)"), "{err}");
}

#[test]
fn validate_reports_errors_of_every_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.yaml",
        "suite: a\nchecks:\n  - id: x\n    kind: stpes\n    steps: []\n",
    );
    write(
        dir.path(),
        "b.yaml",
        "suite: b\nchecks:\n  - id: y\n    steps:\n      - request: { path: /x, method: FETCH }\n",
    );
    write(
        dir.path(),
        "c.yaml",
        "suite: c\nchecks:\n  - id: ok\n    steps:\n      - request: { path: /x }\n",
    );
    let out = tminus(
        dir.path(),
        &["validate", dir.path().to_str().unwrap()],
        &[],
        DEADLINE,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("a.yaml:") && err.contains("did you mean `steps`"),
        "{err}"
    );
    assert!(
        err.contains("b.yaml:5:") && err.contains("unknown HTTP method `FETCH`"),
        "{err}"
    );
    let ok = tminus(
        dir.path(),
        &["validate", &dir.path().join("c.yaml").to_string_lossy()],
        &[],
        DEADLINE,
    );
    assert_eq!(ok.status.code(), Some(0));
}

#[test]
fn unreachable_target_is_an_error_naming_the_address() {
    // Bind then drop: the port is closed, connections are refused.
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = repo().join("suites/launch-checklist.yaml");
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            &url,
            "--timeout",
            "2s",
        ],
        &[],
        DEADLINE,
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "stderr:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    let addr = format!("127.0.0.1:{port}");
    assert!(err.contains(&addr), "{err}");
    let junit = std::fs::read_to_string(dir.path().join("reports/junit.xml")).unwrap();
    assert!(junit.contains("<error"), "{junit}");
    assert!(
        junit.contains(&format!("cannot connect to {addr}")),
        "{junit}"
    );
}

#[test]
fn a_stalled_target_times_out_instead_of_hanging() {
    // Accepts connections and never answers.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
            let _ = s.read(&mut buf);
            held.push(s);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "slow.yaml", "suite: slow\nchecks:\n  - id: a\n    steps:\n      - request: { path: /x, timeout: 300ms }\n");
    let started = Instant::now();
    let out = tminus(dir.path(), &["run", &s, "--target", &url], &[], DEADLINE);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        stderr(&out).contains("no response within 300 ms"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn secrets_never_appear_in_any_output() {
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let secret = "sk_live_TOPSECRET_0123456789";
    // The secret travels in a header, a query string and an expectation, and
    // the check fails so it is printed with full evidence.
    let s = write(
        dir.path(),
        "secret.yaml",
        "suite: secret\ntarget:\n  headers: { Authorization: \"Bearer ${secret.TMINUS_TEST_SECRET}\", X-Api-Token: \"${secret.TMINUS_TEST_SECRET}\" }\nchecks:\n  - id: leaks-nothing\n    steps:\n      - request: { path: /public/v1/contacts, query: { token: \"${secret.TMINUS_TEST_SECRET}\" } }\n        expect: { status: 200, body_contains: \"${secret.TMINUS_TEST_SECRET}\" }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &s, "--target", &reference.url],
        &[("TMINUS_TEST_SECRET", secret)],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let junit = std::fs::read_to_string(dir.path().join("reports/junit.xml")).unwrap();
    let json = std::fs::read_to_string(dir.path().join("reports/report.json")).unwrap();
    let html = std::fs::read_to_string(dir.path().join("reports/report.html")).unwrap();
    assert!(html.contains("leaks-nothing"), "{html}");
    for (name, text) in [
        ("html", html),
        ("stdout", stdout(&out)),
        ("stderr", stderr(&out)),
        ("junit", junit.clone()),
        ("json", json.clone()),
    ] {
        assert!(!text.contains(secret), "secret leaked in {name}:\n{text}");
    }
    assert!(junit.contains("[REDACTED]"), "{junit}");
}

#[test]
fn checks_and_defects_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let out = tminus(dir.path(), &["checks"], &[], DEADLINE);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("steps"));
    let out = tminus(dir.path(), &["reference", "--list-defects"], &[], DEADLINE);
    assert_eq!(out.status.code(), Some(0));
    for d in Defect::all() {
        assert!(stdout(&out).contains(d.name()), "{}", stdout(&out));
    }
}

#[test]
fn bad_usage_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = tminus(
        dir.path(),
        &["run", "--target", "ftp://x", "nowhere.yaml"],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(2));
    let out = tminus(
        dir.path(),
        &["run", "--var", "novalue", "nowhere.yaml"],
        &[],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(2));
    let out = tminus(dir.path(), &["run", "nowhere.yaml"], &[], DEADLINE);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nowhere.yaml"));
}

#[test]
fn sigterm_mid_run_writes_partial_reports_and_exits_3() {
    // A target that accepts and never answers keeps the first check busy.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            held.push(s);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        dir.path(),
        "slow.yaml",
        "suite: slow\nchecks:\n  - id: a\n    steps:\n      - request: { path: /x, timeout: 30s }\n  - id: b\n    steps:\n      - request: { path: /y }\n",
    );
    let child = std::process::Command::new(common::bin())
        .current_dir(dir.path())
        .args(["run", &s, "--target", &url])
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let started = Instant::now();
    // SAFETY: signalling the child we just spawned, by its pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["cancelled"], true);
    let v = common::verdicts(&dir.path().join("reports/report.json"));
    assert_eq!(
        v,
        vec![
            ("slow/a".into(), "error".into()),
            ("slow/b".into(), "skipped".into())
        ]
    );
}
