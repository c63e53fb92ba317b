//! A burst against a target that does nothing useful (404 for every path):
//! latency and throughput thresholds are not judged on failures (an error
//! naming what was not exercised, never a pass), and the error-rate
//! threshold fails.

use crate::common;

use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;
use common::{stderr, tminus, AppHandle};

#[test]
fn latency_of_failed_answers_is_not_evidence() {
    let _alone = common::alone();
    let app = AppHandle::start(Router::new().fallback(|| async { StatusCode::NOT_FOUND }));
    let (out, v) = burst(
        &app.url,
        "  thresholds:\n    - p95 < 400ms\n    - \"list: p99 < 1s\"\n    - throughput > 1/s\n    - error_rate < 1%\n",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    for id in ["burst.p95", "burst.list.p99", "burst.throughput"] {
        let (v, m) = check(&v, id);
        assert_eq!(v, "error", "{id}: {m}");
        assert!(m.contains("none of the") && m.contains("404"), "{id}: {m}");
    }
    assert_eq!(check(&v, "burst.error_rate").0, "fail");
}

/// A burst of `users: 2, hold: 1s` at 40/s against `url`, with `thresholds`.
fn burst(url: &str, thresholds: &str) -> (std::process::Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("b.yaml");
    std::fs::write(
        &suite,
        format!(
            r#"suite: transport
load:
  id: burst
  users: 2
  hold: 1s
  max_rate: 40/s
  max_duration: 10s
  requests:
    - name: list
      request: {{ path: /v1/items }}
{thresholds}"#
        ),
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            url,
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    let v = serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_default())
        .unwrap_or(serde_json::Value::Null);
    (out, v)
}

fn check<'a>(v: &'a serde_json::Value, id: &str) -> (&'a str, &'a str) {
    let checks = v["suites"][0]["checks"].as_array().expect("checks");
    let c = checks
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no {id}: {checks:#?}"));
    (
        c["verdict"].as_str().unwrap(),
        c["message"].as_str().unwrap(),
    )
}

/// Issue 24 item 15: a burst with no thresholds against a dead port used to
/// pass (`delivered` PASS, "7 failed", exit 0). Requests that mostly fail at
/// the transport certify nothing: an error naming the address and counts.
#[test]
fn a_burst_against_a_dead_port_is_an_error_not_a_pass() {
    let _alone = common::alone();
    // A port that was just free: nothing listens there.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let (out, v) = burst(&url, "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let (verdict, m) = check(&v, "burst.delivered");
    assert_eq!(verdict, "error", "{m}");
    assert!(
        m.contains(&url) && m.contains("failed at the transport") && m.contains("connect×"),
        "{m}"
    );
    assert!(m.contains("none was answered"), "{m}");
}

/// A target that answers 503 answered: no transport error, the burst is
/// judged (the error rate fails, exit 1), never turned into an error.
#[test]
fn a_target_answering_5xx_is_judged_not_an_error() {
    let _alone = common::alone();
    let app =
        AppHandle::start(Router::new().fallback(|| async { StatusCode::SERVICE_UNAVAILABLE }));
    let (out, v) = burst(&app.url, "  thresholds:\n    - error_rate < 1%\n");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(check(&v, "burst.error_rate").0, "fail");
    // Delivered or not (a busy machine may drop slots), judged, not an error.
    let (verdict, m) = check(&v, "burst.delivered");
    assert_ne!(verdict, "error", "{m}");
    assert!(!m.contains("transport"), "{m}");
}

/// A raw HTTP/1.1 server on 127.0.0.1:0 that answers 200 and closes, but
/// closes every `nth` connection without answering.
fn flaky_server(nth: usize) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for (i, s) in l.incoming().enumerate() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                if (i + 1) % nth != 0 {
                    let _ = s.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    );
                }
            });
        }
    });
    url
}

/// An occasional transport error among many answers is judged: reported on
/// the delivery, counted by `error_rate`, never an error of the whole burst.
#[test]
fn occasional_transport_errors_are_judged_and_reported() {
    let _alone = common::alone();
    let url = flaky_server(10);
    let (out, v) = burst(&url, "  thresholds:\n    - error_rate < 50%\n");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(check(&v, "burst.error_rate").0, "pass");
    let (verdict, m) = check(&v, "burst.delivered");
    assert_eq!(verdict, "pass", "{m}");
    assert!(m.contains("failed at the transport"), "{m}");
}
