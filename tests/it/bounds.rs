//! Bounded inputs (issue 24 items 1, 2, 4): every file tminus reads has a
//! cap that is named when it is passed, and a body over the sink's or the
//! mock upstream's limit is named in the verdict (with the flag that raises
//! it), not reported as "nothing arrived". The sink's byte budget for
//! recorded bodies is unit-tested in `src/sink.rs`.

use crate::common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn an_endless_suite_is_refused_at_the_cap() {
    if !std::path::Path::new("/dev/zero").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = tminus(
        dir.path(),
        &["validate", "/dev/zero"],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("/dev/zero is larger than 16 MiB, the most tminus reads of it"),
        "{}",
        stderr(&out)
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn sign_refuses_a_body_file_past_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.bin");
    // Sparse: 65 MiB that take no disk.
    std::fs::File::create(&big)
        .unwrap()
        .set_len(65 << 20)
        .unwrap();
    let out = tminus(
        dir.path(),
        &[
            "sign",
            "--scheme",
            "botix",
            "--secret",
            "s3cr3t_value_x",
            big.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is larger than 64 MiB, the most tminus reads of it"),
        "{}",
        stderr(&out)
    );
}

/// Runs `suite` (text) with `extra` flags against the embedded reference;
/// returns the first check's (verdict, message).
fn first_check(suite: &str, extra: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, suite).unwrap();
    let json = dir.path().join("r.json");
    let mut args = vec![
        "run",
        path.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--report-dir",
        dir.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = tminus(dir.path(), &args, &[], Duration::from_secs(90));
    let text =
        std::fs::read_to_string(&json).unwrap_or_else(|_| panic!("no report: {}", stderr(&out)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let c = &v["suites"][0]["checks"][0];
    (
        c["verdict"].as_str().unwrap().to_owned(),
        c["message"].as_str().unwrap_or("").to_owned(),
    )
}

#[test]
fn a_delivery_over_the_sinks_limit_is_named_with_the_limit() {
    let suite = "suite: big-delivery\ntarget: { headers: { Authorization: \"Bearer ref_test_key_a\" } }\nchecks:\n  - id: delivery\n    kind: webhook.sink_delivery\n    scheme: botix\n    secret: sink_test_secret_1\n    event: message.created\n    trigger:\n      - { method: POST, path: /public/v1/webhooks, json: { url: \"${var.sink_url}\", events: [message.created], secret: sink_test_secret_1 } }\n      - { method: POST, path: /public/v1/messages, headers: { Idempotency-Key: \"${uuid}\" }, json: { contact_id: 1, text: probe } }\n    wait: 2s\n";
    let (verdict, message) = first_check(suite, &["--sink-max-body", "64"]);
    assert_eq!(verdict, "error", "{message}");
    assert!(
        message.contains("over the sink's body limit of 64 bytes; raise it with --sink-max-body"),
        "{message}"
    );
    assert!(
        !message.contains("no delivery reached the sink"),
        "{message}"
    );
    // With the default limit the same delivery is judged.
    let (verdict, message) = first_check(suite, &[]);
    assert_eq!(verdict, "pass", "{message}");
}

#[test]
fn a_client_request_over_the_upstreams_limit_is_named_with_the_limit() {
    let suite = "suite: big-request\nchecks:\n  - id: keys\n    kind: client.idempotency_keys\n    client: { argv: [\"${var.tminus_exe}\", reference, client], timeout: 20s }\n";
    let (verdict, message) = first_check(suite, &["--upstream-max-body", "16"]);
    assert_eq!(verdict, "error", "{message}");
    assert!(
        message.contains("over the mock upstream's limit of 16 bytes, and was answered 413; raise it with --upstream-max-body"),
        "{message}"
    );
    let (verdict, message) = first_check(suite, &[]);
    assert_eq!(verdict, "pass", "{message}");
}
