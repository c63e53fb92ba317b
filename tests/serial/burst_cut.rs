//! A burst stops when it must (issue 24 items 5 and 6): against a target
//! that accepts connections and never answers, with a request timeout far
//! longer than the run, SIGTERM and `max_duration` each end the burst within
//! a tick, cut the requests in flight (counted as `cut`) and write every
//! report. Before, the burst waited out the requests' timeout (60 s here).

use crate::common;

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Writes `text` to `dir/name` and returns the name (tminus runs in `dir`).
fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_owned()
}

/// Accepts connections and never answers (each is held open); counts them.
fn silent_target() -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            held.push(s);
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    (url, accepted)
}

fn suite(hold: &str, max_duration: &str) -> String {
    format!(
        "suite: silent\ntarget:\n  timeout: 60s\nload:\n  id: silent\n  users: 4\n  hold: {hold}\n  ramp_down: 1s\n  max_rate: 20/s\n  max_duration: {max_duration}\n  requests:\n    - {{ name: get, request: {{ path: /x }} }}\n"
    )
}

fn cut_count(dir: &std::path::Path) -> u64 {
    let figures: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("reports/load-silent-silent.json")).unwrap(),
    )
    .unwrap();
    figures["overall"]["errors"]["cut"].as_u64().unwrap_or(0)
}

#[test]
fn sigterm_cuts_a_burst_in_flight_and_writes_the_reports() {
    let _alone = common::alone();
    let (url, accepted) = silent_target();
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "silent.yaml", &suite("60s", "120s"));
    let child = Command::new(common::bin())
        .current_dir(dir.path())
        .args(["run", &s, "--target", &url])
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    // Until the burst has requests in flight (they will never be answered):
    // on a loaded machine the debug binary takes seconds to get there.
    let waiting = Instant::now();
    while accepted.load(Ordering::SeqCst) < 4 {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "the burst sent nothing within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let signalled = Instant::now();
    // SAFETY: signalling the child we spawned, by its pid.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let out = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: as above; only the process we started.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            panic!("tminus did not stop within 30 s of SIGTERM");
        }
    };
    let took = signalled.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    // A CI runner sends SIGKILL some seconds after SIGTERM (10 s on
    // GitHub's, Kubernetes' default grace is 30 s): the reports must be out
    // well before.
    assert!(
        took < Duration::from_secs(8),
        "took {took:?} after SIGTERM\n{err}"
    );
    assert_eq!(out.status.code(), Some(3), "{err}");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(report["cancelled"], true, "{err}");
    assert!(dir.path().join("reports/junit.xml").exists());
    assert!(
        cut_count(dir.path()) > 0,
        "no request was counted as cut\n{err}"
    );
}

#[test]
fn max_duration_is_a_hard_bound_on_a_silent_target() {
    let _alone = common::alone();
    let (url, _) = silent_target();
    let dir = tempfile::tempdir().unwrap();
    // The profile (ramp 1 s, hold 2 s, ramp-down 1 s) fits max_duration;
    // its last requests never come back.
    let s = write(dir.path(), "silent.yaml", &suite("2s", "6s"));
    let started = Instant::now();
    let out = common::tminus(
        dir.path(),
        &["run", &s, "--target", &url],
        &[],
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    let err = common::stderr(&out);
    // 6 s of burst, plus start-up and the reports; far from the 60 s the
    // requests' timeout would have taken.
    assert!(took < Duration::from_secs(20), "took {took:?}\n{err}");
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("in flight when the burst was stopped"),
        "the error does not say the requests were cut:\n{err}"
    );
    assert!(
        cut_count(dir.path()) > 0,
        "no request was counted as cut\n{err}"
    );
}
