//! The rate-limit family against the reference integration, beyond its defect
//! table (which is in `tests/defects.rs`): a storm against a limit that is never
//! reached ends at its bound with a clear failure, a missing second tenant skips,
//! and bad parameters are positioned.

mod common;

use std::time::{Duration, Instant};

use common::{not_passing, run_suite_against, RefHandle};
use tminus::reference::{RateLimitConfig, ReferenceConfig};

const SUITE: &str = "suites/rate-limit.yaml";

#[test]
fn storm_against_a_limit_never_reached_fails_at_its_bound() {
    let r = RefHandle::start_with(ReferenceConfig {
        rate_limit: RateLimitConfig {
            limit: 1_000_000,
            ..RateLimitConfig::default()
        },
        ..ReferenceConfig::default()
    });
    let started = Instant::now();
    let (v, out) = run_suite_against(SUITE, &r.url, &["--only", "rl-storm"]);
    let took = started.elapsed();
    let stdout = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(
        not_passing(&v),
        vec!["rate-limit/rl-storm=fail".to_owned()],
        "{stdout}"
    );
    assert!(
        stdout.contains("the limit was never reached") && stdout.contains("max_requests 500"),
        "{stdout}"
    );
    assert!(took < Duration::from_secs(30), "took {took:?}");
    // The checks that need a limit cannot judge and say so (error, not a hang).
    let (v, out) = run_suite_against(SUITE, &r.url, &["--only", "rl-recovery"]);
    assert_eq!(
        not_passing(&v),
        vec!["rate-limit/rl-recovery=error".to_owned()],
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn partition_is_skipped_without_a_second_tenant() {
    let r = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    std::fs::write(
        &suite,
        "suite: s\ntarget:\n  headers: { Authorization: \"Bearer ref_test_key_a\" }\nchecks:\n  - id: p\n    kind: rate_limit.partition\n    request: { path: /public/v1/messages/count }\n",
    )
    .unwrap();
    let (v, _) = run_suite_against(suite.to_str().unwrap(), &r.url, &[]);
    assert_eq!(v, vec![("s/p".to_owned(), "skipped".to_owned())]);
}

#[test]
fn bad_parameters_are_suite_errors_with_positions() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    std::fs::write(
        &suite,
        "suite: s\nchecks:\n  - id: h\n    kind: rate_limit.headers\n    dialect: draft9\n    requests: [ { path: /x } ]\n  - id: s\n    kind: rate_limit.storm\n    concurrency: 0\n    request: { path: /x }\n",
    )
    .unwrap();
    let out = common::tminus(
        dir.path(),
        &["validate", suite.to_str().unwrap()],
        &[],
        Duration::from_secs(30),
    );
    let err = format!("{}{}", common::stderr(&out), common::stdout(&out));
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown dialect `draft9`") && err.contains(":5:"),
        "{err}"
    );
    assert!(
        err.contains("concurrency must be between 1 and 256"),
        "{err}"
    );
}
