//! The idempotency family against the reference integration: the healthy
//! reference passes every check of `suites/idempotency.yaml`, and each
//! idempotency defect fails exactly the checks meant to catch it while every
//! other check still passes. Plus the suite's behaviour without a second tenant.

mod common;

use std::collections::BTreeSet;
use std::time::Instant;

use common::{not_passing, run_suite_against, RefHandle};
use tminus::reference::Defect;

const SUITE: &str = "suites/idempotency.yaml";

/// Every check id of the suite, for the "all others pass" half of each row.
const ALL: &[&str] = &[
    "idem-missing-key",
    "idem-replay",
    "idem-distinct-keys",
    "idem-mismatch",
    "idem-concurrent",
    "idem-key-scope",
    "idem-errors-not-cached",
    "idem-in-flight",
    "idem-lost-response",
    "idem-key-syntax",
    "idem-endpoint-scope",
    "idem-expiry",
];

/// (defect, checks it must fail). `None` defect: the healthy reference.
fn table() -> Vec<(Option<Defect>, &'static [&'static str])> {
    vec![
        (None, &[]),
        (
            Some(Defect::NoIdempotency),
            &[
                "idem-missing-key",
                "idem-replay",
                "idem-mismatch",
                "idem-concurrent",
                "idem-in-flight",
                "idem-lost-response",
                "idem-key-syntax",
                "idem-expiry",
            ],
        ),
        (
            // Key syntax and expiry judge replays too (quoted = bare, before the TTL).
            Some(Defect::ReplayReexecutes),
            &[
                "idem-replay",
                "idem-in-flight",
                "idem-lost-response",
                "idem-key-syntax",
                "idem-expiry",
            ],
        ),
        (Some(Defect::ReplayWithoutMarker), &["idem-replay"]),
        // Another endpoint is a different fingerprint: replayed as well.
        (
            Some(Defect::MismatchReplayed),
            &["idem-mismatch", "idem-endpoint-scope"],
        ),
        (
            Some(Defect::RaceExecutesTwice),
            &["idem-concurrent", "idem-in-flight", "idem-lost-response"],
        ),
        (Some(Defect::ErrorsCached), &["idem-errors-not-cached"]),
        (Some(Defect::KeysGlobal), &["idem-key-scope"]),
        (Some(Defect::DedupeByBody), &["idem-distinct-keys"]),
        (Some(Defect::QuotedKeyDistinct), &["idem-key-syntax"]),
        (Some(Defect::AcceptsMalformedKeys), &["idem-key-syntax"]),
        (Some(Defect::KeysIgnoreEndpoint), &["idem-endpoint-scope"]),
        (Some(Defect::KeysNeverExpire), &["idem-expiry"]),
    ]
}

#[test]
fn each_defect_fails_exactly_its_checks() {
    let mut problems = Vec::new();
    for (defect, must_fail) in table() {
        let started = Instant::now();
        let reference = RefHandle::start(defect.as_slice());
        let (verdicts, out) = run_suite_against(SUITE, &reference.url, &[]);
        drop(reference);
        let name = defect.map(|d| d.name()).unwrap_or("healthy reference");
        let seen: BTreeSet<String> = verdicts.iter().map(|(id, _)| id.clone()).collect();
        for id in ALL {
            let full = format!("idempotency/{id}");
            let verdict = verdicts
                .iter()
                .find(|(i, _)| *i == full)
                .map(|(_, v)| v.as_str());
            let want = if must_fail.contains(id) {
                "fail"
            } else {
                "pass"
            };
            if verdict != Some(want) {
                problems.push(format!(
                    "{name}: {full} is {verdict:?}, expected {want}\n{}",
                    String::from_utf8_lossy(&out.stdout)
                ));
            }
        }
        assert_eq!(seen.len(), ALL.len(), "{name}: the suite ran {seen:?}");
        if defect.is_none() {
            assert!(not_passing(&verdicts).is_empty());
            assert_eq!(out.status.code(), Some(0), "{name}: exit code");
        } else {
            assert_eq!(out.status.code(), Some(1), "{name}: exit code");
        }
        eprintln!("{name}: {:?}", started.elapsed());
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Every idempotency defect appears in the table (a new one must get a row).
#[test]
fn every_idempotency_defect_has_a_row() {
    let rows: BTreeSet<&str> = table()
        .iter()
        .filter_map(|(d, _)| d.map(|d| d.name()))
        .collect();
    for name in [
        "no-idempotency",
        "replay-reexecutes",
        "replay-without-marker",
        "mismatch-replayed",
        "race-executes-twice",
        "errors-cached",
        "keys-global",
        "dedupe-by-body",
        "quoted-key-distinct",
        "accepts-malformed-keys",
        "keys-ignore-endpoint",
        "keys-never-expire",
    ] {
        assert!(rows.contains(name), "{name} has no row");
        assert!(name.parse::<Defect>().is_ok(), "{name} is not a defect");
    }
}

/// Without `second_tenant_headers`, key scope is skipped with a reason, not passed.
#[test]
fn key_scope_is_skipped_without_a_second_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("scope.yaml");
    std::fs::write(
        &suite,
        r#"suite: scope
target:
  headers: { Authorization: "Bearer ref_test_key_a" }
checks:
  - id: scope
    kind: idempotency.key_scope
    request: { method: POST, path: /public/v1/messages, json: { contact_id: 1, text: "s ${uuid}" } }
    effects: { request: { path: /__tminus/effects/messages.create }, value: $.count }
"#,
    )
    .unwrap();
    let reference = RefHandle::start(&[]);
    let (verdicts, out) = run_suite_against(suite.to_str().unwrap(), &reference.url, &[]);
    assert_eq!(
        verdicts,
        vec![("scope/scope".to_string(), "skipped".to_string())]
    );
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(text.contains("second_tenant_headers"), "{text}");
}

/// Bad parameters are reported at their position before anything is sent.
#[test]
fn bad_parameters_are_positioned_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("bad.yaml");
    std::fs::write(
        &suite,
        r#"suite: bad
checks:
  - id: a
    kind: idempotency.missing_key
    request: { method: POST, path: /x }
    effects: { request: { path: /c }, value: $.count }
    policy: sometimes
  - id: b
    kind: idempotency.concurrent
    request: { method: POST, path: /x }
    effects: { request: { path: /c }, value: $.count }
    concurrency: 1000
  - id: c
    kind: idempotency.replay
    request: { method: POST, path: /x }
    effects: { request: { path: /c }, value: $.count }
    marker: { policy: never }
    ignore: [nope]
"#,
    )
    .unwrap();
    let out = common::tminus(
        dir.path(),
        &["validate", suite.to_str().unwrap()],
        &[],
        std::time::Duration::from_secs(30),
    );
    let err = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown policy `sometimes`"), "{err}");
    assert!(err.contains("concurrency 1000 is out of range"), "{err}");
    assert!(err.contains("unknown policy `never`"), "{err}");
    assert!(err.contains("invalid JSON path `nope`"), "{err}");
    assert!(err.contains("bad.yaml:7:"), "{err}");
}

/// The reference's documented codes: malformed keys, quoted = bare, mismatch,
/// missing key, optional key on the older routes.
#[tokio::test]
async fn reference_key_handling_and_codes() {
    let reference = RefHandle::start(&[]);
    let c = reqwest::Client::new();
    let url = format!("{}/public/v1/messages", reference.url);
    let post = |key: Option<&str>, text: &str| {
        let mut b = c
            .post(&url)
            .bearer_auth("ref_test_key_a")
            .json(&serde_json::json!({"contact_id": 1, "text": text}));
        if let Some(k) = key {
            b = b.header("Idempotency-Key", k);
        }
        b.send()
    };
    let code = |v: serde_json::Value| v["error"]["code"].as_str().unwrap_or_default().to_owned();

    let r = post(None, "x").await.unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(code(r.json().await.unwrap()), "IDEMPOTENCY_KEY_REQUIRED");
    for bad in ["", "\"\"", &"k".repeat(256)] {
        let r = post(Some(bad), "x").await.unwrap();
        assert_eq!(r.status(), 400, "{bad:?}");
        assert_eq!(code(r.json().await.unwrap()), "IDEMPOTENCY_KEY_INVALID");
    }
    let key = uuid::Uuid::new_v4().to_string();
    let first = post(Some(&key), "same").await.unwrap();
    assert_eq!(first.status(), 201);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let quoted = post(Some(&format!("\"{key}\"")), "same").await.unwrap();
    assert_eq!(quoted.status(), 201);
    assert_eq!(quoted.headers()["idempotent-replayed"], "1");
    let other = post(Some(&key), "different").await.unwrap();
    assert_eq!(other.status(), 422);
    assert_eq!(
        code(other.json().await.unwrap()),
        "IDEMPOTENCY_KEY_MISMATCH"
    );

    // Bulk-create predates the key: keyless calls still execute.
    let r = c
        .post(format!("{}/public/v1/contacts/bulk-create", reference.url))
        .bearer_auth("ref_test_key_a")
        .json(&serde_json::json!({"contacts": [{"name": "a", "phone": "+1"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    drop(reference);
}
