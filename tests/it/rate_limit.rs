//! The rate-limit family against the reference integration, beyond its defect
//! table (which is in `tests/serial/defects.rs`): a storm against a limit that is never
//! reached ends at its bound with a clear failure, a missing second tenant skips,
//! bad parameters are positioned, and a broken SHOULD property (Retry-After,
//! header presence) warns alone while the properties it leaves unexercised
//! are skipped, never passed.

use crate::common;

use std::time::{Duration, Instant};

use common::{not_passing, run_suite_against, RefHandle};
use tminus::reference::{Defect, RateLimitConfig, ReferenceConfig};

const SUITE: &str = "suites/rate-limit.yaml";

#[test]
fn storm_against_a_limit_never_reached_fails_at_its_bound() {
    // A limiter that advertises nothing and never limits: the storm ends at
    // its planned bound with a failure that says so.
    let r = RefHandle::start_with(ReferenceConfig {
        rate_limit: RateLimitConfig {
            limit: 1_000_000,
            headers: false,
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
        stdout.contains("the limit was never reached") && stdout.contains("1000 requests"),
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
fn storm_under_a_ceiling_below_the_advertised_limit_is_an_error_not_a_failure() {
    // The limit is advertised (and enforced) but the storm's ceiling is below
    // it: tminus cannot reach it, which is tminus's problem, not the target's.
    let r = RefHandle::start_with(ReferenceConfig {
        rate_limit: RateLimitConfig {
            limit: 5_000,
            ..RateLimitConfig::default()
        },
        ..ReferenceConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    std::fs::write(
        &suite,
        "suite: s\ntarget:\n  headers: { Authorization: \"Bearer ref_test_key_a\" }\nchecks:\n  - id: storm\n    kind: rate_limit.storm\n    request: { path: /public/v1/messages/count }\n    max_requests: 300\n",
    )
    .unwrap();
    let (v, out) = run_suite_against(suite.to_str().unwrap(), &r.url, &[]);
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(not_passing(&v), vec!["s/storm=error".to_owned()], "{text}");
    assert!(
        text.contains("max_requests 300 is below the advertised limit of 5000"),
        "{text}"
    );
    assert!(!text.contains("never reached"), "{text}");
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

/// Runs `--only <id>` of the shipped suite against `url` (not strict) and
/// returns `(check verdict, property -> verdict)` from the JSON report.
fn properties_of(url: &str, id: &str) -> (String, std::collections::BTreeMap<String, String>) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let suite = common::repo().join(SUITE);
    let out = common::tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            url,
            "--only",
            id,
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(120),
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{}", common::stderr(&out)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let check = &v["suites"][0]["checks"][0];
    let props = check["assertions"]
        .as_array()
        .unwrap_or_else(|| panic!("no assertions: {check:#}"))
        .iter()
        .map(|a| {
            (
                a["property"].as_str().unwrap().to_owned(),
                a["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (check["verdict"].as_str().unwrap().to_owned(), props)
}

/// 429s without Retry-After break only `retry_after_present` (a SHOULD in
/// RFC 6585, a MUST under the shipped suite's `botix` profile since issue 22:
/// a failure without --strict); the limit, the status and the rest still
/// pass, and `retry_after_valid` is skipped: there was no Retry-After to read.
#[test]
fn storm_without_retry_after_warns_on_that_property_alone() {
    let r = RefHandle::start(&[Defect::NoRetryAfter]);
    let (verdict, p) = properties_of(&r.url, "rl-storm");
    assert_eq!(verdict, "fail", "{p:?}");
    assert_eq!(p["retry_after_present"], "fail", "{p:?}");
    assert_eq!(p["retry_after_valid"], "skipped", "{p:?}");
    for prop in ["limit_reached", "no_5xx", "no_drops", "fast_rejections"] {
        assert_eq!(p[prop], "pass", "{prop}: {p:?}");
    }
}

/// No headers at all: `present` fails (a MUST under `botix`, the shipped
/// suite's profile; a warning under `standard`), and the syntax and
/// consistency of fields never sent are not judged (skipped, never passed).
#[test]
fn headers_absent_are_a_presence_warning_and_nothing_else_passes() {
    let r = RefHandle::start(&[Defect::NoRateLimitHeaders]);
    let (verdict, p) = properties_of(&r.url, "rl-headers");
    assert_eq!(verdict, "fail", "{p:?}");
    assert_eq!(p["present"], "fail", "{p:?}");
    assert_eq!(p["syntax"], "skipped", "{p:?}");
    assert_eq!(p["consistency"], "skipped", "{p:?}");
    // The healthy reference passes all three.
    let healthy = RefHandle::start(&[]);
    let (verdict, p) = properties_of(&healthy.url, "rl-headers");
    assert_eq!(verdict, "pass", "{p:?}");
    assert!(p.values().all(|v| v == "pass"), "{p:?}");
}

/// Runs the shipped suite's `rl-recovery` against `url` (not strict):
/// `(exit code, the check's JSON)`.
fn recovery_run(url: &str) -> (Option<i32>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let suite = common::repo().join(SUITE);
    let out = common::tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            url,
            "--only",
            "rl-recovery",
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(120),
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{}", common::stderr(&out)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    (out.status.code(), v["suites"][0]["checks"][0].clone())
}

fn two_second_windows(defects: &[Defect]) -> RefHandle {
    RefHandle::start_with(ReferenceConfig {
        defects: defects.to_vec(),
        rate_limit: RateLimitConfig {
            window: Duration::from_secs(2),
            ..RateLimitConfig::default()
        },
        ..ReferenceConfig::default()
    })
}

/// Issue 22, case 1: a Retry-After rounded down (`int(reset - now)`) is up
/// to 1 s short, which a recovery probe 50 ms after it sees only when the
/// limited answer was not late in its second. The samples take their limited
/// answer at phases tminus chose against the target's `Date` (0.1, 0.5 and
/// 0.95 s past a tick), so the first one catches it; the verdict names the
/// phase. The shipped suite fails it without `--strict` (exit 1), on the
/// reference's 1 s windows (Retry-After 0) and on 2 s windows.
#[test]
fn recovery_catches_a_retry_after_rounded_down_at_phases_it_controls() {
    for r in [
        RefHandle::start(&[Defect::RetryAfterTruncated]),
        two_second_windows(&[Defect::RetryAfterTruncated]),
    ] {
        let (code, check) = recovery_run(&r.url);
        let text = check.to_string();
        assert_eq!(check["verdict"], "fail", "{check:#}");
        assert_eq!(code, Some(1), "{check:#}");
        let served = check["assertions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["property"] == "served_after_retry_after")
            .unwrap_or_else(|| panic!("{check:#}"));
        assert_eq!(served["verdict"], "fail", "{check:#}");
        assert!(
            text.contains("s past a tick of the target's Date"),
            "{check:#}"
        );
        for other in ["limited_until_retry_after", "retry_after_not_before_reset"] {
            let a = check["assertions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["property"] == other);
            assert!(
                a.is_none_or(|a| a["verdict"] != "fail"),
                "{other}: {check:#}"
            );
        }
    }
}

/// The honest reference (Retry-After rounded up) passes at every phase,
/// on 1 s and 2 s windows, and the samples' phases are spread (the pass
/// carries no caveat).
#[test]
fn recovery_passes_an_honest_limiter_at_spread_phases() {
    for r in [RefHandle::start(&[]), two_second_windows(&[])] {
        let (code, check) = recovery_run(&r.url);
        let text = check.to_string();
        assert_eq!(check["verdict"], "pass", "{check:#}");
        assert_eq!(code, Some(0), "{check:#}");
        assert!(
            text.contains("s past a tick of the target's Date"),
            "{check:#}"
        );
        assert!(!text.contains("are not spread"), "{check:#}");
    }
}
