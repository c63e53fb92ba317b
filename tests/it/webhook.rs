//! The webhook family beyond its defect table (which is in `tests/serial/defects.rs`):
//! `tminus sign` on the published vector, and positioned suite mistakes.

use crate::common;

use std::time::Duration;

use common::*;

#[test]
fn sign_prints_headers_for_the_published_vector_and_never_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.json");
    std::fs::write(
        &body,
        br#"{"email":"test@example.com","username":"test_user"}"#,
    )
    .unwrap();
    let secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    let out = tminus(
        dir.path(),
        &[
            "sign",
            "--scheme",
            "standard",
            "--secret",
            secret,
            "--id",
            "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
            "--timestamp",
            "1649367553",
            body.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(20),
    );
    let s = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        s.contains("webhook-signature: v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="),
        "{s}"
    );
    assert!(
        s.contains("webhook-id: msg_27UH4WbU6Z5A5EzD8u03UvzRbpk"),
        "{s}"
    );
    assert!(!s.contains("C2FVsBQIhrscChlQ") && !stderr(&out).contains("C2FVsBQIhrscChlQ"));

    std::fs::write(&body, b"Hello, World!").unwrap();
    let out = tminus(
        dir.path(),
        &[
            "sign",
            "--scheme",
            "github",
            "--secret",
            "It's a Secret to Everybody",
            body.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(20),
    );
    assert!(stdout(&out).contains(
        "X-Hub-Signature-256: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    ));
    let bad = tminus(
        dir.path(),
        &[
            "sign",
            "--scheme",
            "stripee",
            "--secret",
            "x",
            body.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("did you mean `stripe`"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn suite_mistakes_are_reported_with_positions() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("bad.yaml");
    std::fs::write(
        &suite,
        r#"suite: bad
checks:
  - id: a
    kind: webhook.rejects_forged
    receiver: integrator/webhooks
    scheme: stripee
    secret: "x"
  - id: b
    kind: webhook.accepts_valid
    receiver: /r
    secret: "whsec_!!notbase64"
  - id: c
    kind: webhook.sink_retries
    secret: s3cr3t-value
    trigger: []
    schedule: [1s]
    max_attempts: 5
"#,
    )
    .unwrap();
    let out = tminus(
        dir.path(),
        &["validate", suite.to_str().unwrap()],
        &[],
        Duration::from_secs(20),
    );
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    for want in [
        "did you mean `stripe`",
        "bad.yaml:6:13",
        "receiver must be a path",
        "not `whsec_` followed by base64",
        "bad.yaml:11:13",
        "needs `trigger:`",
        "max_attempts 5 needs 4 schedule delays",
        "5 error(s)",
    ] {
        assert!(e.contains(want), "missing `{want}` in:\n{e}");
    }
    assert!(!e.contains("s3cr3t-value"), "{e}");
}

#[test]
fn parameters_a_kind_does_not_read_and_missing_effects_are_plan_errors() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("kinds.yaml");
    std::fs::write(
        &suite,
        r#"suite: kinds
checks:
  - id: a
    kind: webhook.accepts_valid
    receiver: /r
    secret: "whsec_dG1pbnVz"
    count: 5
  - id: b
    kind: webhook.dedupes_replay
    receiver: /r
    secret: "whsec_dG1pbnVz"
  - id: c
    kind: webhook.replay_new_id
    receiver: /r
    scheme: stripe
    secret: s3cr3t-value
    effects: { request: { path: /c }, value: $.count }
  - id: d
    kind: webhook.sink_timeout
    secret: s3cr3t-value
    trigger: [{ method: POST, path: /t }]
    schedule: [1s]
"#,
    )
    .unwrap();
    let out = tminus(
        dir.path(),
        &["validate", suite.to_str().unwrap()],
        &[],
        Duration::from_secs(20),
    );
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    for want in [
        "kinds.yaml:7:12",
        "`count` only applies to webhook.burst, not to webhook.accepts_valid",
        "kinds.yaml:8:",
        "webhook.dedupes_replay needs `effects:`",
        "kinds.yaml:15:13",
        "scheme `stripe` has no id header",
        "kinds.yaml:22:15",
        "`schedule` only applies to",
        "4 error(s)",
    ] {
        assert!(e.contains(want), "missing `{want}` in:\n{e}");
    }
    assert!(!e.contains("s3cr3t-value"), "{e}");
}

/// A port free on 127.0.0.1 right now (bound, read, released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs one `webhook.sink_delivery` check against the embedded reference
/// with `extra` flags; returns (exit code, verdict, JSON report, stderr).
fn run_sink_check(extra: &[&str]) -> (Option<i32>, String, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("sink.yaml");
    std::fs::write(
        &suite,
        "suite: reach-sink\ntarget: { headers: { Authorization: \"Bearer ref_test_key_a\" } }\nchecks:\n  - id: delivery\n    kind: webhook.sink_delivery\n    scheme: botix\n    secret: sink_test_secret_1\n    event: message.created\n    trigger:\n      - { method: POST, path: /public/v1/webhooks, json: { url: \"${var.sink_url}\", events: [message.created], secret: sink_test_secret_1 } }\n      - { method: POST, path: /public/v1/messages, headers: { Idempotency-Key: \"${uuid}\" }, json: { contact_id: 1, text: probe } }\n    wait: 2s\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let mut args = vec![
        "run",
        suite.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--report-dir",
        dir.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = tminus(dir.path(), &args, &[], Duration::from_secs(60));
    let report = std::fs::read_to_string(&json).unwrap_or_default();
    let v = if json.exists() {
        verdicts(&json)
    } else {
        Vec::new()
    };
    let verdict = v.first().map(|(_, v)| v.clone()).unwrap_or_default();
    (out.status.code(), verdict, report, stderr(&out))
}

// Issue 13: tminus listens where told and gives the platform the public URL
// (here `localhost` with a path prefix, as a tunnel or proxy would keep it).
#[test]
fn sink_listens_where_told_and_is_reached_through_its_public_url() {
    let port = free_port().to_string();
    let listen = format!("127.0.0.1:{port}");
    let public = format!("http://localhost:{port}/hooks");
    let (code, verdict, report, err) =
        run_sink_check(&["--sink-listen", &listen, "--sink-url", &public]);
    assert_eq!(
        (code, verdict.as_str()),
        (Some(0), "pass"),
        "{report}\n{err}"
    );
    assert!(
        report.contains(&format!("POST {public}/sink/")),
        "the delivery evidence names the public URL: {report}"
    );
}

// When nothing reaches the sink, the platform is not blamed: an error (exit 3)
// that names where tminus listened and the URL it gave out.
#[test]
fn no_delivery_at_all_is_an_error_about_reachability() {
    let listen = format!("127.0.0.1:{}", free_port());
    let elsewhere = format!("http://127.0.0.1:{}", free_port());
    let (code, verdict, report, err) =
        run_sink_check(&["--sink-listen", &listen, "--sink-url", &elsewhere]);
    assert_eq!(
        (code, verdict.as_str()),
        (Some(3), "error"),
        "{report}\n{err}"
    );
    assert!(
        report.contains(&format!("listened on {listen}"))
            && report.contains(&format!("`{elsewhere}/sink/"))
            && report.contains("--sink-url"),
        "{report}"
    );

    // A public URL needs a fixed port to lead to.
    let (code, _, _, err) = run_sink_check(&["--sink-url", &elsewhere]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--sink-listen ADDR:PORT with a fixed port"),
        "{err}"
    );
}
