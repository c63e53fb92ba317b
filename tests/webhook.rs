//! The webhook family against the reference: healthy, every check passes;
//! each webhook defect makes exactly its intended checks fail and every other
//! check still pass. Plus `tminus sign` on the published vector.

mod common;

use std::time::Duration;

use common::*;
use tminus::reference::Defect;

const SUITE: &str = "suites/webhooks.yaml";

/// Defect -> the checks it must make fail (all others must pass).
const TABLE: &[(&str, &[&str])] = &[
    (
        "receiver-accepts-forged",
        &[
            "wh-rejects-forged",
            "wh-rejects-tampered",
            "wh-rejects-reserialized",
            "wh-rejects-truncated",
            "wh-rejects-wrong-scheme",
        ],
    ),
    (
        "receiver-verifies-reserialized",
        &["wh-accepts-raw-bytes", "wh-rejects-reserialized"],
    ),
    (
        "receiver-skips-timestamp",
        &["wh-rejects-stale", "wh-rejects-future"],
    ),
    ("receiver-accepts-future", &["wh-rejects-future"]),
    (
        "receiver-no-dedupe",
        &["wh-dedupes-replay", "wh-dedupes-retry", "wh-replay-new-id"],
    ),
    ("receiver-dedupes-on-signature", &["wh-dedupes-retry"]),
    ("receiver-dedupes-by-delivery-id", &["wh-replay-new-id"]),
    ("receiver-slow-ack", &["wh-accepts-valid", "wh-burst-ack"]),
    ("receiver-first-signature-only", &["wh-key-rotation"]),
    ("receiver-accepts-dotted-id", &["wh-rejects-dotted-id"]),
    ("sender-unsigned", &["whs-delivery-signed"]),
    (
        "sender-new-request-id-per-retry",
        &["whs-retries-on-schedule"],
    ),
    ("sender-ignores-schedule", &["whs-retries-on-schedule"]),
    ("sender-drops-trace", &["trc-webhook-trace-join"]),
    ("sender-retries-after-2xx", &["whs-stops-after-success"]),
    ("sender-retries-gone", &["whs-stops-on-gone"]),
    ("sender-ignores-retry-after", &["whs-respects-retry-after"]),
    ("sender-no-timeout", &["whs-times-out-hanging-receiver"]),
];

fn check_defect(name: &str, intended: &[&str]) -> Result<(), String> {
    let defect: Defect = name.parse().map_err(|e: String| e)?;
    let r = RefHandle::start(&[defect]);
    let (v, out) = run_suite_against(SUITE, &r.url, &[]);
    let mut problems = Vec::new();
    for (id, verdict) in &v {
        let short = id.trim_start_matches("webhooks/");
        let want = if intended.contains(&short) {
            "fail"
        } else {
            "pass"
        };
        if verdict != want {
            problems.push(format!("{short}: {verdict}, expected {want}"));
        }
    }
    for i in intended {
        if !v.iter().any(|(id, _)| id.ends_with(&format!("/{i}"))) {
            problems.push(format!("{i}: not in the report"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "defect {name}: {}\n{}",
            problems.join("; "),
            stdout(&out)
        ))
    }
}

#[test]
fn reference_passes_and_each_defect_fails_only_its_checks() {
    let r = RefHandle::start(&[]);
    let (v, out) = run_suite_against(SUITE, &r.url, &[]);
    assert_eq!(v.len(), 23, "{}", stdout(&out));
    assert!(
        not_passing(&v).is_empty(),
        "healthy reference: {:?}\n{}",
        not_passing(&v),
        stdout(&out)
    );
    assert_eq!(out.status.code(), Some(0));
    drop(r);

    // Every webhook defect is in the table.
    for d in Defect::all() {
        let n = d.name();
        if n.starts_with("receiver-") || n.starts_with("sender-") {
            assert!(TABLE.iter().any(|(t, _)| *t == n), "defect {n} has no row");
        }
    }
    // Runs are mostly waiting on sockets and timers, so a few at a time.
    let mut errors = Vec::new();
    for chunk in TABLE.chunks(4) {
        let handles: Vec<_> = chunk
            .iter()
            .map(|(n, i)| std::thread::spawn(move || check_defect(n, i)))
            .collect();
        for h in handles {
            if let Err(e) = h.join().expect("defect thread") {
                errors.push(e);
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

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
