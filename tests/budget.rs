//! Rate-limit budget: a check's `after:` cooldown pauses the run before the
//! next check (and says so), and a cooldown longer than an hour is a suite
//! error with its position.

mod common;

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
