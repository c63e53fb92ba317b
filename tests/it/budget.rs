//! Rate-limit budget: a `wait:` step pauses inside a check, and a check's
//! `after:` cooldown pauses the run before the
//! next check (and says so), and a cooldown longer than an hour is a suite
//! error with its position.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{stderr, tminus, RefHandle};

fn suite(dir: &Path, after: &str) -> String {
    let src = format!(
        r#"suite: budget
target:
  headers: {{ Authorization: "Bearer ref_test_key_a" }}
checks:
  - id: first
    after: {after}
    steps:
      - request: {{ path: /public/v1/messages/count }}
        expect: {{ status: 200 }}
  - id: second
    steps:
      - request: {{ path: /public/v1/messages/count }}
        expect: {{ status: 200 }}
"#
    );
    let p = dir.join("budget.yaml");
    std::fs::write(&p, src).unwrap();
    p.to_str().unwrap().to_owned()
}

#[test]
fn after_pauses_between_checks() {
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let path = suite(dir.path(), "1500ms");
    let started = Instant::now();
    let out = tminus(
        dir.path(),
        &["run", &path, "--target", &reference.url],
        &[],
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("first: after: waiting 1.5 s"), "{err}");
    // The pause happened (a lower bound: nothing here measures speed).
    assert!(started.elapsed() >= Duration::from_millis(1500));
    let first = err.find("PASS  first").expect("first reported");
    let second = err.find("PASS  second").expect("second reported");
    assert!(
        first < err.find("after: waiting").unwrap() && err.find("after: waiting").unwrap() < second
    );
}

#[test]
fn an_hour_long_cooldown_is_refused_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = suite(dir.path(), "2h");
    let out = tminus(
        dir.path(),
        &["validate", &path],
        &[],
        Duration::from_secs(30),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("budget.yaml:6:") && err.contains("at most 1h"),
        "{err}"
    );
}

#[test]
fn a_wait_step_pauses_inside_a_check() {
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("wait.yaml");
    std::fs::write(
        &p,
        r#"suite: wait
target:
  headers: { Authorization: "Bearer ref_test_key_a" }
checks:
  - id: paced
    steps:
      - request: { path: /public/v1/messages/count }
        expect: { status: 200 }
      - wait: 1200ms
      - request: { path: /public/v1/messages/count }
        expect: { status: 200 }
"#,
    )
    .unwrap();
    let started = Instant::now();
    let out = tminus(
        dir.path(),
        &["run", p.to_str().unwrap(), "--target", &reference.url],
        &[],
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("step 2: waiting 1.2 s"), "{err}");
    assert!(started.elapsed() >= Duration::from_millis(1200));
}

#[test]
fn a_step_is_a_request_or_a_wait() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.yaml");
    std::fs::write(
        &p,
        "suite: bad\nchecks:\n  - id: x\n    steps:\n      - request: { path: / }\n        wait: 1s\n      - wait: 1s\n        expect: { status: 200 }\n",
    )
    .unwrap();
    let out = tminus(
        dir.path(),
        &["validate", p.to_str().unwrap()],
        &[],
        Duration::from_secs(30),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.yaml:6:") && err.contains("not both"),
        "{err}"
    );
    assert!(
        err.contains("bad.yaml:7:") && err.contains("takes no `expect:`"),
        "{err}"
    );
}
