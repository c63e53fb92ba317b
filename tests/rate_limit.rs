//! The rate-limit family against the reference integration: the healthy
//! reference passes every check of `suites/rate-limit.yaml`, each rate-limit
//! defect fails exactly its intended check, and a storm against a limit that
//! is never reached ends at its bound with a clear failure.

mod common;

use std::time::{Duration, Instant};

use common::{not_passing, run_suite_against, RefHandle};
use tminus::reference::{Defect, RateLimitConfig, ReferenceConfig};

const SUITE: &str = "suites/rate-limit.yaml";

/// (defects, the checks that must fail). Every other check must pass.
const TABLE: &[(&[Defect], &[&str])] = &[
    (&[], &[]),
    (&[Defect::NoRateLimitHeaders], &["rate-limit/rl-headers"]),
    (&[Defect::NoRetryAfter], &["rate-limit/rl-storm"]),
    (&[Defect::ShortRetryAfter], &["rate-limit/rl-recovery"]),
    (&[Defect::Storm5xx], &["rate-limit/rl-storm"]),
    (&[Defect::Slow429], &["rate-limit/rl-storm"]),
    (&[Defect::GlobalBucket], &["rate-limit/rl-partition"]),
];

#[test]
fn each_defect_fails_exactly_its_check() {
    // Rows run in parallel (each against its own reference): the suite is
    // mostly waiting for windows to reset.
    let handles: Vec<_> = TABLE
        .iter()
        .map(|(defects, failing)| {
            std::thread::spawn(move || {
                let r = RefHandle::start(defects);
                let (v, out) = run_suite_against(SUITE, &r.url, &[]);
                assert_eq!(v.len(), 4, "{v:?}");
                let mut bad = Vec::new();
                for (id, verdict) in &v {
                    let want = if failing.contains(&id.as_str()) {
                        "fail"
                    } else {
                        "pass"
                    };
                    if verdict != want {
                        bad.push(format!("{id}: expected {want}, got {verdict}"));
                    }
                }
                (
                    defects,
                    bad,
                    String::from_utf8_lossy(&out.stdout).into_owned(),
                )
            })
        })
        .collect();
    let mut problems = Vec::new();
    for h in handles {
        let (defects, bad, stdout) = h.join().expect("row thread");
        if !bad.is_empty() {
            problems.push(format!("defects {defects:?}: {bad:?}\n{stdout}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

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
