//! One `tminus run` as a child process: this binary, the selected suites,
//! the canary's target, a report folder of its own, and a deadline after
//! which the child is killed (a hung run never holds a slot forever).

use std::path::Path;
use std::process::Stdio;

use super::runs::{RunSpec, Settings};
use super::verdict::{self, RunResult};

pub async fn run(settings: &Settings, spec: &RunSpec, dir: &Path) -> RunResult {
    if let Err(e) = std::fs::create_dir_all(dir) {
        return RunResult::error(None, format!("cannot create {}: {e}", dir.display()));
    }
    let console = match std::fs::File::create(dir.join("console.txt")) {
        Ok(f) => f,
        Err(e) => return RunResult::error(None, format!("cannot write {}: {e}", dir.display())),
    };
    let mut cmd = tokio::process::Command::new(&settings.exe);
    cmd.arg("run")
        .args(&spec.suites)
        .arg("--target")
        .arg(&spec.target)
        .arg("--report-dir")
        .arg(dir)
        .args(["--color", "never"]);
    for t in &spec.tags {
        cmd.arg("--tag").arg(t);
    }
    if settings.allow_remote_load {
        cmd.arg("--allow-remote-load");
    }
    if settings.strict {
        cmd.arg("--strict");
    }
    // The serve token is the gate's, never a suite's to read or report;
    // the child's own GitHub summary would land in the server's job.
    cmd.env_remove(super::TOKEN_ENV)
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null())
        .stdout(match console.try_clone() {
            Ok(f) => Stdio::from(f),
            Err(_) => Stdio::null(),
        })
        .stderr(Stdio::from(console))
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return RunResult::error(
                None,
                format!("cannot start {}: {e}", settings.exe.display()),
            )
        }
    };
    match tokio::time::timeout(settings.run_timeout, child.wait()).await {
        Ok(Ok(status)) => verdict::read(dir, status.code()),
        Ok(Err(e)) => RunResult::error(None, format!("lost the run: {e}")),
        Err(_) => {
            let _ = child.kill().await;
            RunResult::error(
                None,
                format!(
                    "the run took longer than --run-timeout {} and was stopped",
                    crate::fmt_duration(settings.run_timeout)
                ),
            )
        }
    }
}
