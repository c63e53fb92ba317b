//! Issue 40, DEP-005: `load.capacity` against a target that really queues
//! (`tminus reference --latency 50ms --max-concurrency 4`: 80/s). The knee's
//! bracket holds 80/s within ±15 %; a ceiling below it is "bound not
//! found"; a pool too small for the rate is a lower bound, never a knee.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{self, repo, RefHandle};

fn queueing_reference() -> RefHandle {
    RefHandle::start_with(tminus::reference::ReferenceConfig {
        latency: Duration::from_millis(50),
        max_concurrency: Some(4),
        ..Default::default()
    })
}

/// Runs one check of tests/suites/capacity.yaml: (verdict, message, properties, exit).
fn capacity(only: &str) -> (String, String, serde_json::Value, Option<i32>) {
    let reference = queueing_reference();
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let (json, out) = common::run_with_json(
        dir.path(),
        &repo().join("tests/suites/capacity.yaml"),
        &reference.url,
        &["--only", only],
        &[],
    );
    eprintln!("{only}: {:.1} s", t0.elapsed().as_secs_f64());
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(&json)).unwrap()).unwrap();
    let c = report["suites"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == only)
        .unwrap_or_else(|| panic!("no result {only}: {report}\n{}", common::stderr(&out)))
        .clone();
    (
        c["verdict"].as_str().unwrap_or_default().to_owned(),
        c.to_string(),
        c["properties"].clone(),
        out.status.code(),
    )
}

fn num(props: &serde_json::Value, key: &str) -> Option<f64> {
    match props {
        serde_json::Value::Object(m) => m.get(key).and_then(|v| v.as_f64()),
        serde_json::Value::Array(a) => a
            .iter()
            .find(|p| p["name"] == key || p[0] == key)
            .and_then(|p| p["value"].as_f64().or_else(|| p[1].as_f64())),
        _ => None,
    }
}

#[test]
fn the_knee_is_bracketed_around_the_true_capacity() {
    let _alone = common::alone();
    let (verdict, msg, props, code) = capacity("knee");
    assert_eq!(verdict, "pass", "{msg}");
    assert!(msg.contains("capacity between"), "{msg}");
    let lo = num(&props, "capacity_low").unwrap_or_else(|| panic!("{msg}"));
    let hi = num(&props, "capacity_high").unwrap_or_else(|| panic!("{msg}"));
    assert!(lo <= 80.0 && hi >= 80.0, "{lo}..{hi}: {msg}");
    assert!(
        lo >= 68.0 && hi <= 92.0,
        "wider than ±15 %: {lo}..{hi}: {msg}"
    );
    assert_eq!(code, Some(0), "{msg}");
}

#[test]
fn a_ceiling_below_capacity_is_bound_not_found() {
    let _alone = common::alone();
    let (verdict, msg, props, _) = capacity("ceiling");
    assert_eq!(verdict, "pass", "{msg}");
    assert!(msg.contains("bound not found, capacity >= 40.0/s"), "{msg}");
    assert_eq!(num(&props, "capacity_high"), None, "{msg}");
}

#[test]
fn a_generator_bound_search_says_lower_bound() {
    let _alone = common::alone();
    let (verdict, msg, props, code) = capacity("tiny-pool");
    assert_eq!(verdict, "error", "{msg}");
    assert!(msg.contains("lower bound: "), "{msg}");
    assert!(
        msg.contains("raise max_users") || msg.contains("dropped"),
        "{msg}"
    );
    assert_eq!(num(&props, "capacity_high"), None, "never a knee: {msg}");
    assert_eq!(code, Some(4), "{msg}");
}
