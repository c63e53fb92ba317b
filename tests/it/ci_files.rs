//! Issue 16, the deploy-gate action: `action.yml` and the example workflow
//! parse, have the shape GitHub requires, and use only `tminus run` flags
//! that exist (`tminus run --help`), so a renamed flag breaks this test
//! instead of every user's pipeline.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{repo, stderr, stdout, tminus};
use serde_json::Value;

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path} does not parse: {e}"))
}

/// The long flags `tminus run --help` lists.
fn run_flags() -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let out = tminus(dir.path(), &["run", "--help"], &[], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    flags(&stdout(&out))
}

fn flags(text: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"(?:^|[\s\[(])(--[a-z][a-z0-9-]*)").unwrap();
    re.captures_iter(text).map(|c| c[1].to_owned()).collect()
}

/// The text of every `tminus run` command line in a script (continuation
/// lines joined; the binary may be a quoted path such as
/// `"$RUNNER_TEMP/tminus/bin/tminus" run`), leaving out other commands such
/// as `cargo install`.
fn tminus_run_lines(script: &str) -> Vec<String> {
    let re = regex::Regex::new(r#"tminus"?\s+run\b"#).unwrap();
    script
        .replace("\\\n", " ")
        .lines()
        .filter_map(|l| re.find(l).map(|m| l[m.start()..].to_owned()))
        .collect()
}

fn steps(v: &Value) -> &Vec<Value> {
    v.as_array().expect("steps is a list")
}

#[test]
fn action_is_a_composite_that_runs_tminus_uploads_always_and_gates() {
    let a = yaml("action.yml");
    for input in ["suites", "target", "args"] {
        assert!(a["inputs"][input].is_object(), "input {input} missing");
    }
    assert_eq!(a["runs"]["using"], "composite");
    let steps = steps(&a["runs"]["steps"]);
    let install = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("cargo install"))
        .expect("an install step");
    assert!(
        install.contains("--locked") && install.contains("--path"),
        "{install}"
    );
    let upload = steps
        .iter()
        .find(|s| s["uses"] == "actions/upload-artifact@v4")
        .expect("an upload-artifact@v4 step");
    assert_eq!(upload["if"], "always()");
    // Composite `run` steps must name their shell.
    for s in steps.iter().filter(|s| s.get("run").is_some()) {
        assert!(s["shell"].is_string(), "a run step without shell: {s}");
    }
    let gate = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("case \"$CODE\""))
        .expect("a gate step on the exit code");
    for code in ["1)", "3)"] {
        let arm = gate
            .lines()
            .find(|l| l.trim_start().starts_with(code))
            .unwrap_or_else(|| panic!("no arm {code}: {gate}"));
        assert!(arm.contains(&format!("exit {}", &code[..1])), "{arm}");
    }
    let runs: Vec<String> = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .flat_map(tminus_run_lines)
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
}

#[test]
fn example_workflow_uses_the_action_with_secrets_in_env() {
    let w = yaml(".github/workflows/deploy-gate.example.yml");
    let jobs = w["jobs"].as_object().expect("jobs");
    let step = jobs
        .values()
        .flat_map(|j| steps(&j["steps"]))
        .find(|s| s["uses"] == "./" || s["uses"].as_str().is_some_and(|u| u.contains("tminus@")))
        .expect("a step using the action");
    assert!(step["with"]["suites"].is_string() && step["with"]["target"].is_string());
    let env = step["env"].as_object().expect("secrets passed through env");
    assert!(
        env.values()
            .any(|v| v.as_str().is_some_and(|v| v.contains("secrets."))),
        "{env:?}"
    );
}

#[test]
fn every_flag_in_the_ci_files_exists_in_tminus_run_help() {
    let known = run_flags();
    assert!(
        known.contains("--target") && known.contains("--summary-md"),
        "{known:?}"
    );
    let a = yaml("action.yml");
    let w = yaml(".github/workflows/deploy-gate.example.yml");
    let mut used = BTreeSet::new();
    for s in steps(&a["runs"]["steps"]) {
        for line in s["run"].as_str().map(tminus_run_lines).unwrap_or_default() {
            used.extend(flags(&line));
        }
    }
    for job in w["jobs"].as_object().unwrap().values() {
        for s in steps(&job["steps"]) {
            if let Some(args) = s["with"]["args"].as_str() {
                used.extend(flags(args));
            }
            for line in s["run"].as_str().map(tminus_run_lines).unwrap_or_default() {
                used.extend(flags(&line));
            }
        }
    }
    assert!(
        used.contains("--report-dir") && used.contains("--timeout"),
        "{used:?}"
    );
    let unknown: Vec<&String> = used.difference(&known).collect();
    assert!(
        unknown.is_empty(),
        "flags not in `tminus run --help`: {unknown:?}"
    );
}

#[test]
fn flag_extraction_ignores_prose_and_catches_flags() {
    assert_eq!(
        flags("tminus run x --target \"$T\" [--color <WHEN>] a-b --no")
            .into_iter()
            .collect::<Vec<_>>(),
        vec!["--color", "--no", "--target"]
    );
}
