//! Issue 16, the Markdown summary for CI: `--summary-md FILE` and
//! `$GITHUB_STEP_SUMMARY` (appended to), end to end with the real binary
//! against the embedded reference or a reference with a defect.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{repo, stderr, tminus, RefHandle};
use tminus::reference::Defect;

/// Runs the trace suite (only `only`) with `extra` flags and `envs`; returns
/// the exit code and the parsed JSON report.
fn run_trace(
    dir: &Path,
    target: Option<&str>,
    only: &[&str],
    extra: &[&str],
    envs: &[(&str, &str)],
) -> (Option<i32>, serde_json::Value) {
    run_suites(dir, &["suites/trace.yaml"], target, only, extra, envs)
}

fn run_suites(
    dir: &Path,
    suites: &[&str],
    target: Option<&str>,
    only: &[&str],
    extra: &[&str],
    envs: &[(&str, &str)],
) -> (Option<i32>, serde_json::Value) {
    let suites: Vec<String> = suites
        .iter()
        .map(|s| repo().join(s).to_str().unwrap().to_owned())
        .collect();
    let report_dir = dir.join("reports");
    let mut args = vec!["run"];
    args.extend(suites.iter().map(String::as_str));
    args.extend(["--report-dir", report_dir.to_str().unwrap()]);
    for o in only {
        args.extend(["--only", o]);
    }
    if let Some(t) = target {
        args.extend(["--target", t]);
    }
    args.extend_from_slice(extra);
    let out = tminus(dir, &args, envs, Duration::from_secs(90));
    let json = std::fs::read_to_string(report_dir.join("report.json"))
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{}", stderr(&out)));
    (
        out.status.code(),
        serde_json::from_str(&json).expect("JSON"),
    )
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn passing_run_has_verdict_counts_per_suite_and_report_paths() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("summary.md");
    let (code, _) = run_trace(
        dir.path(),
        None,
        &["trace-ids-unique", "traceparent-propagated"],
        &["--summary-md", md.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, Some(0));
    let s = read(&md);
    assert!(s.starts_with("## tminus: PASS\n"), "{s}");
    assert!(
        s.contains("2 passed, 0 failed, 0 warned, 0 errors, 0 skipped"),
        "{s}"
    );
    assert!(!s.contains("Failures, errors and warnings"), "{s}");
    assert!(s.contains("| trace | 2 | 0 | 0 | 0 | 0 |"), "{s}");
    assert!(
        s.contains("junit.xml`") && s.contains("report.html`"),
        "{s}"
    );
    assert!(!s.contains("### Burst"), "{s}");
}

#[test]
fn failing_run_lists_the_failure_first_with_its_reason_and_request_id() {
    let reference = RefHandle::start(&[Defect::NoIdempotency]);
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("summary.md");
    // The trace suite first, so the failure (in the second suite) is listed
    // first by the summary, not by the order the checks ran in.
    let (code, report) = run_suites(
        dir.path(),
        &["suites/trace.yaml", "suites/idempotency.yaml"],
        Some(&reference.url),
        &["traceparent-propagated", "idem-missing-key"],
        &["--summary-md", md.to_str().unwrap()],
        &[],
    );
    assert_eq!(code, Some(1));
    let failed = report["suites"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["checks"].as_array().unwrap())
        .find(|c| c["id"] == "idem-missing-key")
        .expect("the failing check");
    assert_eq!(failed["verdict"], "fail");
    let reason = failed["message"].as_str().unwrap();

    let s = read(&md);
    assert!(s.starts_with("## tminus: FAIL\n"), "{s}");
    assert!(
        s.contains("1 passed, 1 failed, 0 warned, 0 errors, 0 skipped"),
        "{s}"
    );
    let failures = s
        .find("### Failures, errors and warnings")
        .expect("failures section");
    let table = s.find("### Suites").expect("suites table");
    assert!(failures < table, "failures come first: {s}");
    let line = s[failures..table]
        .lines()
        .find(|l| l.starts_with("- **FAIL** `idempotency/idem-missing-key`"))
        .unwrap_or_else(|| panic!("failure line: {s}"));
    // The reason as the JSON report has it (Markdown escapes aside).
    let plain = line.replace('\\', "");
    assert!(plain.contains(reason), "{reason:?} not in {line:?}");
    let ids: Vec<&str> = failed["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["request_id"].as_str())
        .collect();
    let last = ids
        .last()
        .expect("the failing check's evidence has a request id");
    assert!(line.contains(&format!("(request id `{last}`)")), "{line}");
    assert!(
        !s[failures..table].contains("traceparent-propagated"),
        "{s}"
    );
    assert!(s.contains("| trace | 1 | 0 | 0 | 0 | 0 |"), "{s}");
    assert!(s.contains("| idempotency | 0 | 1 | 0 | 0 | 0 |"), "{s}");
    assert!(s.find("| trace |").unwrap() < s.find("| idempotency |").unwrap());
}

#[test]
fn github_step_summary_is_appended_to_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let step = dir.path().join("step_summary.md");
    std::fs::write(&step, "# an earlier step\n\nits own text\n").unwrap();
    let envs = [("GITHUB_STEP_SUMMARY", step.to_str().unwrap())];
    for _ in 0..2 {
        let (code, _) = run_trace(dir.path(), None, &["trace-ids-unique"], &[], &envs);
        assert_eq!(code, Some(0));
    }
    let s = read(&step);
    assert!(s.starts_with("# an earlier step\n\nits own text\n"), "{s}");
    assert_eq!(s.matches("## tminus: PASS").count(), 2, "{s}");
}

#[test]
fn without_either_destination_no_summary_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _) = run_trace(
        dir.path(),
        None,
        &["trace-ids-unique"],
        &[],
        &[("GITHUB_STEP_SUMMARY", "")],
    );
    assert_eq!(code, Some(0));
    let names: Vec<_> = std::fs::read_dir(dir.path().join("reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".md")), "{names:?}");
}

#[test]
fn summary_md_may_not_overwrite_another_report() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("same.xml");
    let out = tminus(
        dir.path(),
        &[
            "run",
            repo().join("suites/trace.yaml").to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--summary-md",
            junit.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--junit and --summary-md both write"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn github_step_summary_is_preflighted_like_every_output() {
    let dir = tempfile::tempdir().unwrap();
    // Pointed at the input suite: refused before anything is sent, the suite intact.
    let suite = dir.path().join("t.yaml");
    std::fs::copy(repo().join("suites/trace.yaml"), &suite).unwrap();
    let before = std::fs::read(&suite).unwrap();
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[("GITHUB_STEP_SUMMARY", suite.to_str().unwrap())],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("$GITHUB_STEP_SUMMARY")
            && stderr(&out).contains("would overwrite the suite"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(&suite).unwrap(),
        before,
        "the suite is untouched"
    );
    // Not appendable (a folder): exit 3 before any check ran.
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[("GITHUB_STEP_SUMMARY", dir.path().to_str().unwrap())],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("$GITHUB_STEP_SUMMARY: "),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("junit.xml").exists(), "nothing ran");
}

#[test]
fn a_cancelled_run_still_writes_the_summary() {
    // A target that accepts and never answers keeps the first check busy.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            held.push(s);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("slow.yaml");
    std::fs::write(
        &suite,
        "suite: slow\nchecks:\n  - id: a\n    steps:\n      - request: { path: /x, timeout: 30s }\n  - id: b\n    steps:\n      - request: { path: /y }\n",
    )
    .unwrap();
    let md = dir.path().join("summary.md");
    let child = std::process::Command::new(common::bin())
        .current_dir(dir.path())
        .args(["run", suite.to_str().unwrap(), "--target", &url])
        .args(["--summary-md", md.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(800));
    // SAFETY: signalling the child we just spawned, by its pid.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: the child we spawned, by its pid.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            panic!("tminus did not stop within 20 s of SIGTERM");
        }
    };
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let s = read(&md);
    assert!(s.starts_with("## tminus: INTERRUPTED\n"), "{s}");
    assert!(s.contains("- **ERROR** `slow/a`"), "{s}");
    assert!(s.contains("| slow | 0 | 0 | 0 | 1 | 1 |"), "{s}");
}
