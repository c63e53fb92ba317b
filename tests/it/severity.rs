//! Per-property verdicts and their severities end to end: a reference that
//! breaks only a SHOULD property (the replay marker) gives a warning, exit 0,
//! a passing JUnit testcase that says WARN and the other properties of the
//! same check passing; `--strict`, `strict: true` and `severity: { marker:
//! must }` turn it into a failure (exit 1), and so does `profile: botix`,
//! whose contract makes the marker a MUST; an override naming a property the
//! kind does not judge is a suite error with its position.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{stderr, tminus, RefHandle};
use tminus::reference::Defect;

/// A one-check suite: the shipped `idem-replay` entry with `extra` lines.
fn replay_suite(dir: &Path, top: &str, extra: &str) -> std::path::PathBuf {
    let src = format!(
        r#"suite: sev
{top}target:
  headers:
    Authorization: "Bearer ref_test_key_a"
checks:
  - id: idem-replay
    kind: idempotency.replay
    request:
      method: POST
      path: /public/v1/messages
      json: {{ contact_id: 1, text: "replay ${{uuid}}" }}
    effects:
      request: {{ path: /__tminus/effects/messages.create }}
      value: $.count
    marker: {{ header: Idempotent-Replayed, values: ["1", "true"], policy: required }}
{extra}"#
    );
    let path = dir.join("sev.yaml");
    std::fs::write(&path, src).unwrap();
    path
}

struct Run {
    code: Option<i32>,
    stderr: String,
    json: serde_json::Value,
    junit: String,
}

fn run(suite: &Path, url: &str, extra: &[&str]) -> Run {
    let dir = suite.parent().unwrap();
    let out_dir = tempfile::tempdir_in(dir).unwrap();
    let json = out_dir.path().join("report.json");
    let junit = out_dir.path().join("junit.xml");
    let mut args = vec![
        "run",
        suite.to_str().unwrap(),
        "--target",
        url,
        "--json",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--report-dir",
        out_dir.path().to_str().unwrap(),
        "--color",
        "never",
    ];
    args.extend_from_slice(extra);
    let out = tminus(dir, &args, &[], Duration::from_secs(60));
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{}", stderr(&out)));
    Run {
        code: out.status.code(),
        stderr: stderr(&out),
        json: serde_json::from_str(&text).unwrap(),
        junit: std::fs::read_to_string(&junit).unwrap(),
    }
}

fn check(r: &Run) -> &serde_json::Value {
    &r.json["suites"][0]["checks"][0]
}

fn property<'a>(r: &'a Run, name: &str) -> &'a serde_json::Value {
    check(r)["assertions"]
        .as_array()
        .expect("assertions")
        .iter()
        .find(|a| a["property"] == name)
        .unwrap_or_else(|| panic!("no assertion `{name}`: {}", check(r)))
}

#[test]
fn a_broken_should_is_a_warning_and_strict_makes_it_a_failure() {
    let reference = RefHandle::start(&[Defect::ReplayWithoutMarker]);
    let dir = tempfile::tempdir().unwrap();
    let suite = replay_suite(dir.path(), "", "");

    let r = run(&suite, &reference.url, &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(check(&r)["verdict"], "warn", "{}", check(&r));
    assert_eq!(r.json["verdict"], "warn");
    assert_eq!(r.json["totals"]["warned"], 1);
    let marker = property(&r, "marker");
    assert_eq!(marker["verdict"], "warn");
    assert_eq!(marker["severity"], "should");
    assert!(
        marker["message"]
            .as_str()
            .unwrap()
            .contains("carries no Idempotent-Replayed header"),
        "{marker}"
    );
    // The properties it meets are reported as met.
    for p in [
        "single_effect",
        "same_status",
        "same_body",
        "first_not_marked",
    ] {
        assert_eq!(property(&r, p)["verdict"], "pass", "{p}: {}", check(&r));
    }
    assert!(
        r.stderr.contains("WARN  idem-replay.marker (SHOULD)"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("1 warned"), "{}", r.stderr);
    // JUnit: one testcase per property; the warning passes and says WARN.
    for p in [
        "single_effect",
        "same_status",
        "same_body",
        "marker",
        "first_not_marked",
    ] {
        assert!(
            r.junit.contains(&format!("name=\"idem-replay.{p}\"")),
            "{p}: {}",
            r.junit
        );
    }
    assert!(!r.junit.contains("<failure"), "{}", r.junit);
    assert!(r.junit.contains("WARN: "), "{}", r.junit);

    let strict = run(&suite, &reference.url, &["--strict"]);
    assert_eq!(strict.code, Some(1), "{}", strict.stderr);
    assert_eq!(check(&strict)["verdict"], "fail");
    assert_eq!(property(&strict, "marker")["verdict"], "fail");
    assert_eq!(property(&strict, "single_effect")["verdict"], "pass");
    assert!(strict.junit.contains("<failure"), "{}", strict.junit);
}

#[test]
fn strict_in_the_suite_and_a_must_override_fail_the_same_warning() {
    let reference = RefHandle::start(&[Defect::ReplayWithoutMarker]);
    let dir = tempfile::tempdir().unwrap();

    let suite = replay_suite(dir.path(), "strict: true\n", "");
    let r = run(&suite, &reference.url, &[]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(property(&r, "marker")["verdict"], "fail");

    let suite = replay_suite(dir.path(), "", "    severity: { marker: must }\n");
    let r = run(&suite, &reference.url, &[]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(property(&r, "marker")["severity"], "must");
    assert_eq!(property(&r, "marker")["verdict"], "fail");

    // The other way: a MUST turned into a SHOULD is only a warning.
    let reference = RefHandle::start(&[Defect::ReplayReexecutes]);
    let suite = replay_suite(dir.path(), "", "    severity: { single_effect: should }\n");
    let r = run(&suite, &reference.url, &[]);
    let single = property(&r, "single_effect");
    assert_eq!(single["verdict"], "warn", "{}", check(&r));
    assert_eq!(single["severity"], "should");
}

/// Issue 22 case 5: under `profile: botix` the seed checklist's own test of
/// point 1 (a replay carries `Idempotent-Replayed: 1`) is a MUST, so the CI
/// gate (no `--strict`) exits 1; `standard` keeps the RFC level (a warning),
/// and a check's override still wins over the profile.
#[test]
fn the_botix_profile_makes_its_contract_a_must() {
    let reference = RefHandle::start(&[Defect::ReplayWithoutMarker]);
    let dir = tempfile::tempdir().unwrap();

    let suite = replay_suite(dir.path(), "profile: botix\n", "");
    let r = run(&suite, &reference.url, &[]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(check(&r)["verdict"], "fail", "{}", check(&r));
    let marker = property(&r, "marker");
    assert_eq!(marker["severity"], "must", "{marker}");
    assert_eq!(marker["verdict"], "fail", "{marker}");
    assert!(r.junit.contains("<failure"), "{}", r.junit);

    let suite = replay_suite(dir.path(), "profile: standard\n", "");
    let r = run(&suite, &reference.url, &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(property(&r, "marker")["severity"], "should");
    assert_eq!(property(&r, "marker")["verdict"], "warn");

    let suite = replay_suite(
        dir.path(),
        "profile: botix\n",
        "    severity: { marker: should }\n",
    );
    let r = run(&suite, &reference.url, &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(property(&r, "marker")["verdict"], "warn");
}

#[test]
fn an_override_of_an_unknown_property_is_a_suite_error_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let suite = replay_suite(dir.path(), "", "    severity: { markr: must }\n");
    let out = tminus(
        dir.path(),
        &["validate", suite.to_str().unwrap()],
        &[],
        Duration::from_secs(30),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("sev.yaml:16:"), "{err}");
    assert!(
        err.contains("`markr`") && err.contains("did you mean `marker`"),
        "{err}"
    );
}
