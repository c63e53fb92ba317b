//! `tminus serve` (issue 27) end to end: a real server process, a real
//! reference, and the payloads Flagger documents for its webhooks
//! (`{"name", "namespace", "phase", "metadata"}`) and the calls Argo
//! Rollouts' web provider makes. A call without the token starts nothing;
//! repeated calls answer from one run; a failing suite halts with a body
//! that names the failing check; confirm-promotion answers from the
//! canary's latest results.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, RefHandle};
use serde_json::json;

const TOKEN: &str = "serve-test-token-0123456789";

struct Serve {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(extra: &[&str]) -> Serve {
    start_in(extra, Reports::Flag)
}

/// Where serve is told to write its runs' reports.
enum Reports<'a> {
    /// `--reports DIR/reports`
    Flag,
    /// No flag; this folder as TMPDIR (the default is under it).
    TmpDir(&'a std::path::Path),
}

fn start_in(extra: &[&str], reports: Reports) -> Serve {
    let dir = tempfile::tempdir().unwrap();
    let suites = dir.path().join("suites");
    std::fs::create_dir(&suites).unwrap();
    std::fs::write(
        suites.join("gate.yaml"),
        "suite: gate\nchecks:\n  - id: health\n    steps:\n      - request: { path: /healthz }\n        expect: { status: 200 }\n",
    )
    .unwrap();
    std::fs::write(
        suites.join("broken.yaml"),
        "suite: broken\nchecks:\n  - id: teapot\n    steps:\n      - request: { path: /healthz }\n        expect: { status: 418 }\n",
    )
    .unwrap();
    let mut cmd = Command::new(bin());
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--suites"])
        .arg(&suites);
    match reports {
        Reports::Flag => {
            cmd.arg("--reports").arg(dir.path().join("reports"));
        }
        Reports::TmpDir(t) => {
            cmd.env("TMPDIR", t);
        }
    }
    let mut child = cmd
        .args(extra)
        .env(tminus::serve::TOKEN_ENV, TOKEN)
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tminus serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("tminus serve: listening on ")
        .unwrap_or_else(|| panic!("serve printed `{line}`"))
        .to_owned();
    Serve {
        child,
        url,
        _dir: dir,
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// One call: (status, body).
fn call(
    method: &str,
    url: &str,
    body: Option<serde_json::Value>,
    bearer: Option<&str>,
) -> (u16, String) {
    rt().block_on(async {
        let c = reqwest::Client::new();
        let mut b = c
            .request(method.parse().unwrap(), url)
            .timeout(Duration::from_secs(60));
        if let Some(t) = bearer {
            b = b.header("Authorization", format!("Bearer {t}"));
        }
        if let Some(j) = body {
            b = b.json(&j);
        }
        let r = b.send().await.expect("serve answers");
        (r.status().as_u16(), r.text().await.unwrap())
    })
}

/// Flagger's payload for a hook, as its docs show it.
fn flagger(name: &str, metadata: serde_json::Value) -> serde_json::Value {
    json!({"name": name, "namespace": "test", "phase": "Progressing", "metadata": metadata})
}

/// Calls until the answer is not "running" (bounded).
fn until_done(
    method: &str,
    url: &str,
    body: serde_json::Value,
    bearer: Option<&str>,
) -> (u16, String, usize) {
    let started = Instant::now();
    let mut calls = 0;
    loop {
        calls += 1;
        let (s, text) = call(method, url, Some(body.clone()), bearer);
        if !(s == 503 && text.contains("running")) {
            return (s, text, calls);
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "still running: {text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn flagger_hooks_gate_the_canary_and_never_start_a_second_run() {
    let target = RefHandle::start(&[]);
    let s = start(&["--hook-wait", "0s"]);
    let hook = |h: &str| format!("{}/flagger/{h}", s.url);

    // No token, a wrong one: 401, and nothing is started.
    let meta = json!({"target": target.url, "suites": "gate.yaml"});
    let (status, text) = call(
        "POST",
        &hook("pre-rollout"),
        Some(flagger("podinfo", meta.clone())),
        None,
    );
    assert_eq!(status, 401, "{text}");
    let wrong =
        json!({"target": target.url, "suites": "gate.yaml", "token": "not-the-token-0000000"});
    let (status, _) = call(
        "POST",
        &hook("pre-rollout"),
        Some(flagger("podinfo", wrong)),
        None,
    );
    assert_eq!(status, 401);
    let (status, text) = call(
        "POST",
        &hook("confirm-promotion"),
        Some(flagger("podinfo", json!({"token": TOKEN}))),
        None,
    );
    assert_eq!(status, 412, "nothing ran, nothing to confirm: {text}");
    assert!(text.contains("no finished run"), "{text}");

    // The token in metadata (Flagger sends no custom headers): the first
    // call starts the run and answers "running"; later ones answer from it.
    let mut meta = meta;
    meta["token"] = json!(TOKEN);
    let (status, text) = call(
        "POST",
        &hook("pre-rollout"),
        Some(flagger("podinfo", meta.clone())),
        None,
    );
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("tminus run 1: running") && text.contains("started by this call"),
        "{text}"
    );
    let (status, text, _) = until_done(
        "POST",
        &hook("pre-rollout"),
        flagger("podinfo", meta.clone()),
        None,
    );
    assert_eq!(status, 200, "{text}");
    assert!(
        text.starts_with("tminus run 1: pass: 1 of 1 checks passed"),
        "{text}"
    );
    // Kept: the same call answers from run 1.
    let (status, text) = call(
        "POST",
        &hook("pre-rollout"),
        Some(flagger("podinfo", meta.clone())),
        None,
    );
    assert_eq!(status, 200);
    assert!(text.starts_with("tminus run 1:"), "{text}");
    let (status, text) = call(
        "POST",
        &hook("confirm-promotion"),
        Some(flagger("podinfo", json!({"token": TOKEN}))),
        None,
    );
    assert_eq!(status, 200, "{text}");

    // A failing suite halts the canary; the body names the check.
    let bad = json!({"target": target.url, "suites": "broken.yaml", "token": TOKEN});
    let (status, text, _) = until_done("POST", &hook("rollout"), flagger("podinfo", bad), None);
    assert_eq!(status, 412, "{text}");
    assert!(
        text.contains("fail") && text.contains("broken/teapot: fail:"),
        "{text}"
    );
    assert!(!text.contains(TOKEN), "{text}");
    let (status, text) = call(
        "POST",
        &hook("confirm-promotion"),
        Some(flagger("podinfo", json!({"token": TOKEN}))),
        None,
    );
    assert_eq!(status, 412, "the latest rollout failed: {text}");

    // Bad selections are refused before anything runs.
    for (meta, needle) in [
        (json!({"token": TOKEN}), "no target"),
        (
            json!({"token": TOKEN, "target": target.url, "suites": "../gate.yaml"}),
            "file name",
        ),
        (
            json!({"token": TOKEN, "target": "file:///etc/passwd"}),
            "not an http(s) URL",
        ),
    ] {
        let (status, text) = call(
            "POST",
            &hook("pre-rollout"),
            Some(flagger("other", meta)),
            None,
        );
        assert_eq!(status, 400, "{text}");
        assert!(text.contains(needle), "{text}");
    }
    let (status, _) = call(
        "POST",
        &hook("post-rollout"),
        Some(flagger("podinfo", json!({"token": TOKEN}))),
        None,
    );
    assert_eq!(status, 404);
}

#[test]
fn argo_reads_a_verdict_and_figures_as_json() {
    let target = RefHandle::start(&[]);
    let s = start(&["--hook-wait", "60s"]);
    let url = format!(
        "{}/argo/test/podinfo?target={}&suites=gate.yaml",
        s.url, target.url
    );
    let (status, _) = call("GET", &url, None, None);
    assert_eq!(status, 401);
    let (status, text) = call("GET", &url, None, Some(TOKEN));
    assert_eq!(status, 200, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["status"], "done", "{v}");
    assert_eq!(v["verdict"], "pass", "{v}");
    assert_eq!(v["inconclusive"], false, "{v}");
    assert_eq!(v["exit_code"], 0, "{v}");
    let broken = format!(
        "{}/argo/test/podinfo?target={}&suites=broken.yaml",
        s.url, target.url
    );
    let (status, text) = call("GET", &broken, None, Some(TOKEN));
    assert_eq!(status, 200, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["verdict"], "fail", "{v}");
    assert!(
        v["failing"][0]
            .as_str()
            .unwrap()
            .starts_with("broken/teapot: fail:"),
        "{v}"
    );
}

#[test]
fn serve_refuses_to_start_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::tminus(
        dir.path(),
        &["serve", "--suites", "."],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("TMINUS_SERVE_TOKEN"),
        "{}",
        common::stderr(&out)
    );
}

/// Issue 46: a pod with a read-only root filesystem gives serve one
/// writable volume (an emptyDir) as TMPDIR or `--report-dir`; the runs'
/// reports land there, and a folder serve cannot write stops it at start
/// (exit 3, naming the fix) instead of failing every run later.
#[test]
fn serve_writes_reports_under_tmpdir_and_refuses_an_unwritable_folder() {
    let target = RefHandle::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let s = start_in(&["--hook-wait", "60s"], Reports::TmpDir(tmp.path()));
    let url = format!(
        "{}/argo/test/podinfo?target={}&suites=gate.yaml",
        s.url, target.url
    );
    let (status, text) = call("GET", &url, None, Some(TOKEN));
    assert_eq!(status, 200, "{text}");
    let folder = tmp
        .path()
        .join(format!("tminus-serve-{}", s.child.id()))
        .join("run-1");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("report.json"))
            .unwrap_or_else(|e| panic!("no report under TMPDIR ({}): {e}", folder.display())),
    )
    .unwrap();
    assert_eq!(report["totals"]["passed"], 1, "{report}");

    // `--report-dir` (the name `run` uses) is accepted too; a path under a
    // file cannot be created, as under a read-only root.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "").unwrap();
    for (args, env) in [
        (vec!["--report-dir", "file/reports"], vec![]),
        (vec![], vec![("TMPDIR", "file")]),
    ] {
        let mut all = vec!["serve", "--suites", ".", "--listen", "127.0.0.1:0"];
        all.extend(args);
        let mut envs = vec![(tminus::serve::TOKEN_ENV, TOKEN)];
        envs.extend(env);
        let out = common::tminus(dir.path(), &all, &envs, Duration::from_secs(20));
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(
            err.contains("cannot write the runs' reports") && err.contains("emptyDir"),
            "{err}"
        );
    }
}
