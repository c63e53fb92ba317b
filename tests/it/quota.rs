//! tminus respects the quota it certifies (issue 21): the shipped CI gate
//! passes against rate-limited references (a tight per-key window with
//! headers, the same in a sliding window, and a limiter that sends no
//! headers at all with a declared `--quota`); outside the families that
//! judge rate limiting no check ever reports a 429 as the target's answer;
//! every check stays within the requests its plan states; a block longer
//! than the wait budget is an error naming the credential, never a wait.
//!
//! The windows are 5 s rather than the field's 60 s: the shape (how many
//! requests a window holds against what the gate needs) is what the budget
//! works against, and 5 s keeps each run under a minute. The 60 s figures
//! are measured by hand (see the closing note).

use crate::common;

use std::time::Duration;

use std::path::Path;

use common::{repo, run_with_json_within, tminus, AppHandle, RefHandle};
use serde_json::Value;
use tminus::reference::{RateLimitConfig, ReferenceConfig};

const GATE: &str = "suites/launch-checklist.yaml";

fn limited(limit: u64, window_s: u64, sliding: bool, headers: bool) -> RefHandle {
    RefHandle::start_with(ReferenceConfig {
        rate_limit: RateLimitConfig {
            limit,
            window: Duration::from_secs(window_s),
            sliding,
            headers,
            ..RateLimitConfig::default()
        },
        ..ReferenceConfig::default()
    })
}

/// Runs `suite` against `url`; returns the exit code, the JSON report and
/// the console output.
fn run(suite: &str, url: &str, extra: &[&str]) -> (i32, Value, String) {
    run_path(&repo().join(suite), url, extra)
}

fn run_path(suite: &Path, url: &str, extra: &[&str]) -> (i32, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let (json, out) =
        run_with_json_within(dir.path(), suite, url, extra, &[], Duration::from_secs(600));
    let console = format!("{}{}", common::stdout(&out), common::stderr(&out));
    let text = std::fs::read_to_string(&json).unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&text).unwrap(),
        console,
    )
}

/// Runs a one-off suite of `checks` (YAML under `checks:`) with the
/// suite's credential `Bearer KEY` against `url`.
fn run_checks(key: &str, checks: &str, url: &str, extra: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    std::fs::write(
        &suite,
        format!("suite: s\ntarget:\n  headers: {{ Authorization: \"Bearer {key}\" }}\nchecks:\n{checks}"),
    )
    .unwrap();
    let (code, _, console) = run_path(&suite, url, extra);
    (code, console)
}

fn checks(report: &Value) -> Vec<&Value> {
    report["suites"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["checks"].as_array().unwrap())
        .collect()
}

/// No check outside the rate-limit family shows a 429 as its evidence: a
/// 429 there was the quota, waited out, never the answer judged.
fn no_429_as_an_answer(report: &Value) {
    for c in checks(report) {
        let kind = c["kind"].as_str().unwrap();
        if kind.starts_with("rate_limit.") {
            continue;
        }
        for ev in c["evidence"].as_array().into_iter().flatten() {
            assert_ne!(
                ev["status"].as_u64(),
                Some(429),
                "{} ({kind}) reports a 429 as the target's answer: {ev}",
                c["id"]
            );
        }
        let message = c["message"].as_str().unwrap_or("");
        assert!(
            !names_status_429(message),
            "{} ({kind}) names a 429 in its verdict: {message}",
            c["id"]
        );
    }
}

/// Whether a verdict names the status 429: as a word of its own, so that a
/// trace id that happens to hold the digits (`…fd7429f0…`) does not count.
fn names_status_429(message: &str) -> bool {
    let bytes = message.as_bytes();
    message.match_indices("429").any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + 3).copied();
        let apart = |b: Option<u8>| b.is_none_or(|b| !b.is_ascii_alphanumeric());
        apart(before) && apart(after)
    })
}

#[test]
fn a_trace_id_holding_the_digits_is_not_a_429() {
    assert!(!names_status_429(
        "validation error -> 422 (Trace-Id: 57c5ad3d6fe3fd7429f0fb20)"
    ));
    assert!(names_status_429(
        "validation error answered 429 instead of 422"
    ));
    assert!(names_status_429("-> 429"));
}

/// Every check sent at most what its plan states.
fn within_budget(report: &Value) {
    for c in checks(report) {
        let p = &c["properties"];
        if let (Some(sent), Some(budget)) =
            (p["requests_own"].as_u64(), p["requests_budget"].as_u64())
        {
            assert!(
                sent <= budget,
                "{} sent {sent} requests, its plan states at most {budget}",
                c["id"]
            );
        }
    }
}

fn waited(report: &Value) -> f64 {
    checks(report)
        .iter()
        .filter_map(|c| c["properties"]["quota_wait_s"].as_f64())
        .sum()
}

fn assert_all_pass(code: i32, report: &Value, console: &str) {
    let bad: Vec<String> = checks(report)
        .iter()
        .filter(|c| c["verdict"] != "pass")
        .map(|c| format!("{}={} ({})", c["id"], c["verdict"], c["message"]))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}\n{console}");
    assert_eq!(code, 0, "{console}");
}

#[test]
fn the_gate_passes_under_a_tight_fixed_window() {
    // 30 requests per 5 s: the storm, recovery and partition each use a
    // window up, the concurrent rounds need one window each.
    let r = limited(30, 5, false, true);
    let (code, report, console) = run(GATE, &r.url, &[]);
    assert_all_pass(code, &report, &console);
    no_429_as_an_answer(&report);
    within_budget(&report);
    assert!(
        waited(&report) > 0.0,
        "no check waited for quota:\n{console}"
    );
    assert!(console.contains("quota: waiting"), "{console}");
    // The storm was sized from the advertised limit, not a fixed 1,000.
    let storm = checks(&report)
        .into_iter()
        .find(|c| c["id"] == "rate-limit-storm")
        .unwrap();
    let sent = storm["properties"]["requests"].as_u64().unwrap();
    assert!(
        sent < 400,
        "the storm sent {sent} requests against a limit of 30"
    );
}

#[test]
fn the_gate_passes_under_a_sliding_window() {
    // The reference's sliding log overstates Retry-After in about half its
    // answers (rate_limit README), which `rate-limit-recovery` rightly
    // warns about; every other check passes and nothing errors.
    let r = limited(60, 5, true, true);
    let (code, report, console) = run(GATE, &r.url, &[]);
    let bad: Vec<String> = checks(&report)
        .iter()
        .filter(|c| c["verdict"] != "pass" && c["id"] != "rate-limit-recovery")
        .map(|c| format!("{}={} ({})", c["id"], c["verdict"], c["message"]))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}\n{console}");
    assert!(code == 0 || code == 1, "{console}");
    no_429_as_an_answer(&report);
    within_budget(&report);
}

#[test]
fn a_headerless_limiter_is_paced_by_the_declared_quota() {
    // The limiter says nothing but 429 (no fields, no Retry-After): tminus
    // paces itself to `--quota` and none of its requests is limited. The
    // rate-limit checks correctly fail here (no headers is a finding), so
    // the gate is run without them; trace-ids-unique's 1,000 requests
    // would take 1,000/30 windows at this quota.
    let r = limited(30, 5, false, false);
    let (code, report, console) = run(
        GATE,
        &r.url,
        &[
            "--quota",
            "30/5s",
            "--only",
            "idem-*",
            "--only",
            "auth-*",
            "--only",
            "message-*",
            "--only",
            "validation-*",
            "--only",
            "pagination-*",
            "--only",
            "trace-id-on-every-response",
            "--only",
            "traceparent-propagated",
            "--only",
            "invalid-traceparent-ignored",
        ],
    );
    assert_all_pass(code, &report, &console);
    no_429_as_an_answer(&report);
    assert!(waited(&report) > 0.0, "{console}");
}

#[test]
fn a_block_past_the_wait_budget_is_an_error_naming_it() {
    use axum::http::{HeaderMap, StatusCode};
    let app = axum::Router::new().route(
        "/x",
        axum::routing::get(|| async {
            let mut h = HeaderMap::new();
            h.insert("retry-after", "86400".parse().unwrap());
            (StatusCode::TOO_MANY_REQUESTS, h, "slow down")
        }),
    );
    let a = AppHandle::start(app);
    let started = std::time::Instant::now();
    let (code, console) = run_checks(
        "k",
        "  - id: get\n    steps:\n      - request: { path: /x }\n        expect: { status: 200 }\n",
        &a.url,
        &["--max-quota-wait", "5m"],
    );
    assert_eq!(code, 3, "{console}");
    assert!(
        console.contains("the suite's credential is blocked for 24 h")
            && console.contains("--max-quota-wait is 5 m 00 s"),
        "{console}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn validate_prints_the_budget_and_the_least_wall_time() {
    let dir = tempfile::tempdir().unwrap();
    let suite = repo().join(GATE);
    let out = tminus(
        dir.path(),
        &["validate", suite.to_str().unwrap(), "--quota", "60/1m"],
        &[],
        Duration::from_secs(30),
    );
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("request budget"), "{err}");
    assert!(err.contains("idem-replay"), "{err}");
    assert!(err.contains("sized from the limit 60/1m"), "{err}");
    assert!(err.contains("at 60/1m: at least"), "{err}");
    // Beside the maximum, the inherent bound (issue 42): one exhaustion,
    // the health check's 1,000 probes left out by name, and the window
    // resets to wait for.
    let inherent = err
        .lines()
        .find(|l| l.contains("inherent at 60/1m"))
        .unwrap_or_else(|| panic!("no inherent bound: {err}"));
    assert!(
        inherent.contains("then one exhaustion of the limit")
            && inherent.contains("trace-ids-unique not counted")
            && inherent.contains("webhook-receiver-accepts-valid")
            && inherent.contains("window resets to wait for: at least"),
        "{inherent}"
    );
}

/// `(check, property)` pairs that did not pass, with their verdicts.
fn broken(report: &Value) -> Vec<String> {
    let mut out: Vec<String> = checks(report)
        .iter()
        .flat_map(|c| {
            c["assertions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|a| a["verdict"] != "pass")
                .map(move |a| format!("{}.{}={}", c["id"], a["property"], a["verdict"]))
        })
        .collect();
    out.sort();
    out
}

/// The defect harness's launch-checklist rows (and a defect of each
/// checklist point) fail the same properties under a tight quota as with
/// none: the quota changes how long the gate takes, never its verdicts.
/// One test per defect: each is two gate runs of 20 s or more, and run in
/// turn they were the `it` binary's last four minutes on their own.
fn fails_the_same_properties_under_a_quota(defect: tminus::reference::Defect) {
    let free = RefHandle::start(&[defect]);
    let (free_code, free_report, free_console) = run(GATE, &free.url, &[]);
    drop(free);
    let tight = RefHandle::start_with(ReferenceConfig {
        defects: vec![defect],
        rate_limit: RateLimitConfig {
            limit: 60,
            window: Duration::from_secs(5),
            ..RateLimitConfig::default()
        },
        ..ReferenceConfig::default()
    });
    let (code, report, console) = run(GATE, &tight.url, &[]);
    assert_eq!(free_code, 1, "{defect}: {free_console}");
    assert_eq!(code, 1, "{defect} under 60/5s: {console}");
    assert_eq!(
        broken(&report),
        broken(&free_report),
        "{defect}: under 60/5s\n{console}"
    );
    no_429_as_an_answer(&report);
}

#[test]
fn accept_any_key_fails_the_same_properties_under_a_quota() {
    fails_the_same_properties_under_a_quota(tminus::reference::Defect::AcceptAnyKey);
}

#[test]
fn broken_pagination_fails_the_same_properties_under_a_quota() {
    fails_the_same_properties_under_a_quota(tminus::reference::Defect::BrokenPagination);
}

#[test]
fn no_trace_id_fails_the_same_properties_under_a_quota() {
    fails_the_same_properties_under_a_quota(tminus::reference::Defect::NoTraceId);
}

#[test]
fn replay_reexecutes_fails_the_same_properties_under_a_quota() {
    fails_the_same_properties_under_a_quota(tminus::reference::Defect::ReplayReexecutes);
}

#[test]
fn no_retry_after_fails_the_same_properties_under_a_quota() {
    fails_the_same_properties_under_a_quota(tminus::reference::Defect::NoRetryAfter);
}

#[test]
fn receiver_accepts_forged_fails_the_same_properties_under_a_quota() {
    fails_the_same_properties_under_a_quota(tminus::reference::Defect::ReceiverAcceptsForged);
}

/// A per-day limit that is used up blocks until midnight UTC: hours, far
/// past any wait budget, so the check is an error at once naming the block
/// (the seed's platform answers 429 for the minute and for the day).
#[test]
fn a_used_up_day_is_an_error_not_a_wait() {
    let r = RefHandle::start_with(ReferenceConfig {
        rate_limit: RateLimitConfig {
            limit: 100,
            window: Duration::from_secs(60),
            daily: Some(3),
            ..RateLimitConfig::default()
        },
        ..ReferenceConfig::default()
    });
    let step =
        "      - request: { path: /public/v1/messages/count }\n        expect: { status: 200 }\n";
    let started = std::time::Instant::now();
    let (code, console) = run_checks(
        "ref_test_key_a",
        &format!("  - id: five\n    steps:\n{}", step.repeat(5)),
        &r.url,
        // Midnight may be minutes away: a budget no day's block fits.
        &["--max-quota-wait", "5s"],
    );
    assert_eq!(code, 3, "{console}");
    assert!(
        console.contains("the suite's credential is blocked for")
            && console.contains("--max-quota-wait is 5.0 s"),
        "{console}"
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{console}");
}
