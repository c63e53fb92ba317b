//! A client's descendant that left its process group with `setsid()` does
//! not outlive `tminus run` (issue 24 item 8): tminus is the subreaper of
//! what it starts and ends every orphan a client left behind.

use crate::common;

use std::time::Duration;

use common::*;

/// Processes whose command line holds `marker`.
fn running(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(marker) {
                found.push(format!("{name}: {c}"));
            }
        }
    }
    found
}

#[test]
fn a_setsid_grandchild_does_not_outlive_the_run() {
    if !cfg!(target_os = "linux") || which("setsid").is_none() {
        return;
    }
    // A unique sleep length marks the escapee: `sleep 300.<pid><nanos>`.
    let marker = format!(
        "300.{}{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    // The client daemonises a helper (setsid, new session and group), then
    // does its job as the reference client.
    std::fs::write(
        &suite,
        format!(
            "suite: escapee\nchecks:\n  - id: keys\n    kind: client.idempotency_keys\n    client: {{ argv: [sh, -c, \"setsid sleep {marker} </dev/null >/dev/null 2>&1 & exec \\\"$0\\\" reference client\", \"${{var.tminus_exe}}\"], timeout: 20s }}\n"
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    let left = running(&marker);
    // Clean up whatever a failing run left (only our own marked sleep).
    for l in &left {
        if let Some(pid) = l.split(':').next().and_then(|p| p.parse::<i32>().ok()) {
            // SAFETY: kill only sends a signal to the marked process we started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(left.is_empty(), "outlived tminus run: {left:?}");
}

fn which(cmd: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(cmd))
            .find(|f| f.is_file())
    })
}
