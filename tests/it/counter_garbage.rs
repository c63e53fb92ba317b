//! Verdicts from garbage (issue 24 item 14): a side-effect counter that
//! wraps (i64::MAX, then i64::MIN), goes backwards, or jumps by more than
//! the requests sent is no evidence: the property is an error, never a pass.
//! A real HTTP server on 127.0.0.1:0 plays the target.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use common::*;

/// A target that creates on POST /m (201, replaying a key with the marker)
/// and whose counter answers `counts` in turn (the last repeats).
fn target(
    counts: Vec<i64>,
) -> (
    String,
    std::thread::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let reads = Arc::new(AtomicUsize::new(0));
    let posts = Arc::new(AtomicUsize::new(0));
    let t = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let counts = Arc::new(counts);
            let app = Router::new()
                .route(
                    "/count",
                    get({
                        let (reads, counts) = (reads.clone(), counts.clone());
                        move || async move {
                            let i = reads.fetch_add(1, Ordering::SeqCst).min(counts.len() - 1);
                            axum::Json(serde_json::json!({ "count": counts[i] }))
                        }
                    }),
                )
                .route(
                    "/m",
                    post(move || {
                        let posts = posts.clone();
                        async move {
                            let n = posts.fetch_add(1, Ordering::SeqCst);
                            let replayed = if n > 0 { "1" } else { "0" };
                            (
                                axum::http::StatusCode::CREATED,
                                [("Idempotent-Replayed", replayed)],
                                axum::Json(serde_json::json!({ "id": "m_1" })),
                            )
                        }
                    }),
                );
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            axum::serve(l, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        });
    });
    (url, t, tx)
}

const SUITE: &str = "suite: garbage\nchecks:\n  - id: replay\n    kind: idempotency.replay\n    request: { method: POST, path: /m, json: { text: x } }\n    effects: { request: { path: /count }, value: $.count }\n    marker: { header: Idempotent-Replayed, values: [\"1\"], policy: required }\n    ignore: []\n";

fn replay_against(counts: Vec<i64>) -> serde_json::Value {
    let (url, t, stop) = target(counts);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    let (json, _) = run_with_json(dir.path(), &suite, &url, &[], &[]);
    let _ = stop.send(());
    t.join().unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    v["suites"][0]["checks"][0].clone()
}

#[test]
fn a_counter_that_wraps_is_no_evidence() {
    let c = replay_against(vec![i64::MAX, i64::MIN]);
    assert_eq!(c["verdict"], "error", "{c}");
    assert!(
        c["message"].as_str().unwrap().contains("went backwards"),
        "{c}"
    );
}

#[test]
fn a_counter_that_jumps_past_the_requests_sent_is_no_evidence() {
    let c = replay_against(vec![10, 1_000]);
    assert_eq!(c["verdict"], "error", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("while this check sent 1 request(s)"),
        "{c}"
    );
}

#[test]
fn an_honest_counter_still_judges() {
    // Before, after the first, after the replay, after the control (the
    // same body under a new key, which this target executes: +1).
    let c = replay_against(vec![10, 11, 11, 12]);
    assert_eq!(c["verdict"], "pass", "{c}");
}
