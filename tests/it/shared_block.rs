//! One exhaustion of the limit serves the storm, the partition and the
//! recovery (issue 42): the runner orders the checks by their needs (the
//! served checks first, whatever order the author wrote), the storm hands
//! its block on, the partition asks the second tenant while that block
//! holds, and the recovery takes all its samples from it. A defect still
//! fails its check when judged from the shared block.
//!
//! Windows are 10 s (the reference's `rate_limit` knobs), and each run
//! starts just after a window turns, so the storm's block lasts long enough
//! for the recovery's three samples (a block too short for them is taken on
//! fresh limits, which is the old, slower path and not what these pin).

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{run_with_json_within, RefHandle};
use serde_json::Value;
use tminus::reference::{Defect, RateLimitConfig, ReferenceConfig};

const WINDOW_S: u64 = 10;

/// The author's order puts the recovery first and a served check last:
/// the runner must still run the served check before the storm.
const SUITE: &str = "suite: s
target:
  headers: { Authorization: \"Bearer ref_test_key_a\" }
  second_tenant_headers: { Authorization: \"Bearer ref_test_key_b\" }
checks:
  - id: rl-recovery
    kind: rate_limit.recovery
    request: { path: /public/v1/messages/count }
  - id: rl-partition
    kind: rate_limit.partition
    request: { path: /public/v1/messages/count }
  - id: rl-storm
    kind: rate_limit.storm
    request: { path: /public/v1/messages/count }
    stop_after: 50
    p95_under: 250ms
  - id: count
    steps:
      - request: { path: /public/v1/messages/count }
        expect: { status: 200 }
";

fn limited(defects: &[Defect]) -> RefHandle {
    RefHandle::start_with(ReferenceConfig {
        defects: defects.to_vec(),
        rate_limit: RateLimitConfig {
            limit: 30,
            window: Duration::from_secs(WINDOW_S),
            ..RateLimitConfig::default()
        },
        ..ReferenceConfig::default()
    })
}

/// Sleeps until 0.3 s past the next turn of the reference's epoch-aligned
/// window, so a run begun now has most of a window ahead of it.
fn just_after_a_turn() {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let into = Duration::from_secs_f64(now.as_secs_f64() % WINDOW_S as f64);
    let to_turn = Duration::from_secs(WINDOW_S) - into;
    std::thread::sleep(to_turn + Duration::from_millis(300));
}

/// Runs [`SUITE`] against `url`: the exit code, the JSON report, the console.
fn run(url: &str) -> (i32, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    just_after_a_turn();
    let (json, out) = run_with_json_within(
        dir.path(),
        Path::new(&suite),
        url,
        &[],
        &[],
        Duration::from_secs(180),
    );
    let console = format!("{}{}", common::stdout(&out), common::stderr(&out));
    let report = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (out.status.code().unwrap_or(-1), report, console)
}

fn checks(report: &Value) -> Vec<&Value> {
    report["suites"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .collect()
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    checks(report)
        .into_iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

fn evidence_labels(c: &Value) -> Vec<String> {
    c["evidence"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["label"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn one_exhaustion_serves_the_storm_the_partition_and_the_recovery() {
    let r = limited(&[]);
    let started = Instant::now();
    let (code, report, console) = run(&r.url);
    let took = started.elapsed();
    let order: Vec<&str> = checks(&report)
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        ["count", "rl-storm", "rl-partition", "rl-recovery"],
        "{console}"
    );
    let bad: Vec<String> = checks(&report)
        .iter()
        .filter(|c| c["verdict"] != "pass")
        .map(|c| format!("{}={} ({})", c["id"], c["verdict"], c["message"]))
        .collect();
    assert!(bad.is_empty(), "{bad:#?}\n{console}");
    assert_eq!(code, 0, "{console}");
    // The storm handed its block on; the partition judged tenant B while
    // that block held, and says whose limit it was.
    let storm = check(&report, "rl-storm");
    assert_eq!(storm["properties"]["block"], "handed on", "{console}");
    let partition = check(&report, "rl-partition");
    assert_eq!(
        partition["properties"]["limit_reached_by"], "rl-storm",
        "{console}"
    );
    // The recovery took samples 2 and 3 from sample 1's block, each with
    // its own early and recovery probe.
    let recovery = check(&report, "rl-recovery");
    let labels = evidence_labels(recovery);
    for n in [2, 3] {
        assert!(
            labels
                .iter()
                .any(|l| l.starts_with(&format!("sample {n}: "))
                    && l.contains("in the block of sample 1")),
            "sample {n} not from the block: {labels:#?}\n{console}"
        );
        for probe in ["early probe", "recovery probe"] {
            assert!(
                labels.contains(&format!("sample {n}: {probe}")),
                "{labels:#?}"
            );
        }
    }
    assert_eq!(recovery["properties"]["samples"], 3, "{console}");
    // One window's reset waited for, not one per check (the old order took
    // four: storm, partition, and a window per recovery sample).
    assert!(
        took < Duration::from_secs(2 * WINDOW_S + 15),
        "took {took:?}\n{console}"
    );
    assert!(console.contains("inherent bound"), "{console}");
}

/// The defects each of the three checks must catch, judged from the one
/// block: a Retry-After rounded down or a block that outlasts it (the
/// recovery), one bucket for every
/// key (the partition), no Retry-After (the storm; a SHOULD under the
/// `standard` profile, so a warning rather than a failure).
#[test]
fn a_defect_still_fails_its_check_from_the_shared_block() {
    for (defect, failing, property) in [
        (
            Defect::RetryAfterTruncated,
            "rl-recovery",
            "served_after_retry_after",
        ),
        (
            Defect::ShortRetryAfter,
            "rl-recovery",
            "served_after_retry_after",
        ),
        (Defect::GlobalBucket, "rl-partition", "isolated"),
        (Defect::NoRetryAfter, "rl-storm", "retry_after_present"),
    ] {
        let r = limited(&[defect]);
        let (_, report, console) = run(&r.url);
        let c = check(&report, failing);
        assert_ne!(c["verdict"], "pass", "{defect}: {console}");
        let broken: Vec<&str> = c["assertions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["verdict"] != "pass" && a["verdict"] != "skipped")
            .filter_map(|a| a["property"].as_str())
            .collect();
        assert!(
            broken.contains(&property),
            "{defect}: {failing} did not fail {property}: {c:#}\n{console}"
        );
        assert_eq!(check(&report, "count")["verdict"], "pass", "{console}");
    }
}
