//! The webhook family beyond its defect table (which is in `tests/defects.rs`):
//! `tminus sign` on the published vector, and positioned suite mistakes.

mod common;

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
