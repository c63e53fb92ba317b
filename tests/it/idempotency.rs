//! The idempotency family against the reference integration, beyond its defect
//! table (which is in `tests/serial/defects.rs`): the suite's behaviour without a second
//! tenant, positioned parameter errors, the reference's key handling, an
//! in-flight retry that met nothing in flight (not exercised, never judged),
//! and concurrent rounds under a rate limit (redone, never failed).

use crate::common;

use common::{run_suite_against, RefHandle};
use tminus::reference::{RateLimitConfig, ReferenceConfig};

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
    rounds: 0
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
    assert!(
        err.contains("rounds 0 is out of range: use 1 to 50"),
        "{err}"
    );
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

/// Without a slow hook the first attempt is done before the "in-flight"
/// retry leaves: nothing was in flight, so the conflict property is not
/// exercised (an error naming why), never judged on a replay that came after
/// completion; the execution count and the replay are still judged.
#[test]
fn in_flight_without_a_slow_first_attempt_is_not_exercised() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("inflight.yaml");
    std::fs::write(
        &suite,
        r#"suite: inflight
target:
  headers: { Authorization: "Bearer ref_test_key_a" }
checks:
  - id: fast
    kind: idempotency.in_flight
    request: { method: POST, path: /public/v1/messages, json: { contact_id: 1, text: "f ${uuid}" } }
    effects: { request: { path: /__tminus/effects/messages.create }, value: $.count }
    retry_after: 300ms
"#,
    )
    .unwrap();
    let reference = RefHandle::start(&[]);
    let json = dir.path().join("report.json");
    let out = common::tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            &reference.url,
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        std::time::Duration::from_secs(60),
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", common::stderr(&out)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let check = &v["suites"][0]["checks"][0];
    assert_eq!(check["verdict"], "error", "{check:#}");
    let verdict_of = |p: &str| {
        check["assertions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["property"] == p)
            .unwrap_or_else(|| panic!("no {p}: {check:#}"))
            .clone()
    };
    let conflict = verdict_of("conflict_while_in_flight");
    assert_eq!(conflict["verdict"], "error", "{conflict:#}");
    assert!(
        conflict["message"]
            .as_str()
            .unwrap()
            .contains("nothing was in flight"),
        "{conflict:#}"
    );
    assert_eq!(verdict_of("single_effect")["verdict"], "pass");
    assert_eq!(verdict_of("replay_after_completion")["verdict"], "pass");
    assert_eq!(out.status.code(), Some(3), "{}", common::stderr(&out));
}

/// Rounds of `idempotency.concurrent` against a rate limit: a round whose
/// requests got 429 (and that executed once at most) is redone with a new key
/// after the wait, so a correct target behind a limit passes on full rounds.
#[test]
fn concurrent_rounds_are_redone_after_a_rate_limit_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("limited.yaml");
    std::fs::write(
        &suite,
        r#"suite: limited
target:
  headers: { Authorization: "Bearer ref_test_key_a" }
checks:
  - id: concurrent
    kind: idempotency.concurrent
    request: { method: POST, path: /public/v1/messages, json: { contact_id: 1, text: "limited ${uuid}" } }
    effects: { request: { path: /__tminus/effects/messages.create }, value: $.count }
    concurrency: 4
    rounds: 4
"#,
    )
    .unwrap();
    // 6 requests per fixed 1 s window: one full round of 4 (and its counter
    // read) per window, and the 16 requests cannot all fit in the (at most
    // two) windows the rounds span without waiting. The run's request budget
    // reserves each round before it is sent, so the rounds wait for their
    // window instead of meeting 429s (a round that meets one anyway is
    // redone, never failed).
    let reference = RefHandle::start_with(ReferenceConfig {
        rate_limit: RateLimitConfig {
            limit: 6,
            ..RateLimitConfig::default()
        },
        ..ReferenceConfig::default()
    });
    let (verdicts, out) = run_suite_against(suite.to_str().unwrap(), &reference.url, &[]);
    let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(
        verdicts,
        vec![("limited/concurrent".to_string(), "pass".to_string())],
        "{text}"
    );
    assert!(
        text.contains("quota: waiting") || text.contains("were rate limited (429); redoing it"),
        "{text}"
    );
    assert!(!text.contains("even after"), "{text}");
}

/// Runs `checks` (YAML list items) against a fresh reference with `defects`;
/// the report's checks by id and the process output.
fn run_checks(
    defects: &[tminus::reference::Defect],
    checks: &str,
    extra: &[&str],
) -> (
    std::collections::BTreeMap<String, serde_json::Value>,
    std::process::Output,
) {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    std::fs::write(
        &suite,
        format!(
            "suite: s\ntarget:\n  headers: {{ Authorization: \"Bearer ref_test_key_a\" }}\nchecks:\n{checks}"
        ),
    )
    .unwrap();
    let reference = RefHandle::start(defects);
    let (json, out) = common::run_with_json(dir.path(), &suite, &reference.url, extra, &[]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let checks = v["suites"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), c.clone()))
        .collect();
    (checks, out)
}

/// A property of a check in the report: `(verdict, message)`.
fn property(check: &serde_json::Value, p: &str) -> (String, String) {
    let a = check["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["property"] == p)
        .unwrap_or_else(|| panic!("no {p}: {check:#}"));
    (
        a["verdict"].as_str().unwrap().to_owned(),
        a["message"].as_str().unwrap_or_default().to_owned(),
    )
}

const EFFECTS: &str =
    "effects: { request: { path: /__tminus/effects/messages.create }, value: $.count }";

/// Issue 37 item 7: the replay's control sends the same body under a new
/// key. The healthy reference executes it; a reference that de-duplicates by
/// body does not, and then the replay's passes are not decided (errors), the
/// control fails, and the verdict is a failure, never a pass.
#[test]
fn the_replay_control_tells_dedupe_by_content_from_the_key() {
    let checks = format!(
        "  - id: replay\n    kind: idempotency.replay\n    request: {{ method: POST, path: /public/v1/messages, json: {{ contact_id: 1, text: \"c ${{uuid}}\" }} }}\n    {EFFECTS}\n"
    );
    let (healthy, out) = run_checks(&[], &checks, &[]);
    let c = &healthy["replay"];
    assert_eq!(c["verdict"], "pass", "{c:#}\n{}", common::stderr(&out));
    let (v, m) = property(c, "key_not_content");
    assert_eq!(v, "pass", "{m}");
    assert!(m.contains("the key, not the content, decides"), "{m}");

    let (deduped, _) = run_checks(&[tminus::reference::Defect::DedupeByBody], &checks, &[]);
    let c = &deduped["replay"];
    assert_eq!(c["verdict"], "fail", "{c:#}");
    let (v, m) = property(c, "key_not_content");
    assert_eq!(v, "fail", "{m}");
    assert!(m.contains("the target de-duplicates by content"), "{m}");
    for p in ["single_effect", "same_status", "same_body", "marker"] {
        let (v, m) = property(c, p);
        assert_eq!(v, "skipped", "{p}: {m}");
        assert!(
            m.contains("not judged: the same body under a new key"),
            "{p}: {m}"
        );
    }
}

/// Issue 37 item 7: the counter is read after each request of
/// `idempotency.mismatch`. On a target that de-duplicates by body, a first
/// request whose body was seen executes nothing while the changed body
/// executes: +1 overall, which the old before/after reading passed as "the
/// first executed, the changed body did not". Now `not_executed` fails; and
/// when neither executes it is not exercised (an error), never a pass.
#[test]
fn mismatch_attributes_each_execution_to_its_request() {
    let body =
        "{ method: POST, path: /public/v1/messages, json: { contact_id: 1, text: \"seen\" } }";
    let changed = "{ method: POST, path: /public/v1/messages, json: { contact_id: 1, text: \"seen, changed\" } }";
    let mismatch = |id: &str| {
        format!("  - id: {id}\n    kind: idempotency.mismatch\n    request: {body}\n    changed: {changed}\n    {EFFECTS}\n")
    };
    let checks = format!(
        "  - id: seed\n    kind: idempotency.distinct_keys\n    request: {body}\n    {EFFECTS}\n{}{}",
        mismatch("first-seen"),
        mismatch("both-seen")
    );
    let (healthy, _) = run_checks(&[], &checks, &[]);
    // The healthy reference executes the first and refuses the changed body.
    for id in ["first-seen", "both-seen"] {
        let (v, m) = property(&healthy[id], "not_executed");
        assert_eq!(v, "pass", "{id}: {m}");
    }
    let (deduped, _) = run_checks(&[tminus::reference::Defect::DedupeByBody], &checks, &[]);
    let c = &deduped["first-seen"];
    assert_eq!(c["verdict"], "fail", "{c:#}");
    let (v, m) = property(c, "not_executed");
    assert_eq!(v, "fail", "{c:#}");
    assert!(m.contains("the changed body executed"), "{m}");
    assert!(m.contains("the first executed nothing"), "{m}");
    let c = &deduped["both-seen"];
    assert_eq!(c["verdict"], "error", "{c:#}");
    let (v, m) = property(c, "not_executed");
    assert_eq!(v, "error", "{c:#}");
    assert!(m.contains("the first request executed nothing"), "{m}");
}

/// Issue 37 item 7: parallel requests that all executed fail
/// `others_conflict_or_replay` whatever their statuses (all 201 here, which
/// `allow_replay` took as replays): the counter rose by the concurrency.
#[test]
fn concurrent_others_that_executed_are_not_replays() {
    let checks = format!(
        "  - id: race\n    kind: idempotency.concurrent\n    request: {{ method: POST, path: /public/v1/messages, json: {{ contact_id: 1, text: \"r ${{uuid}}\" }} }}\n    {EFFECTS}\n    concurrency: 4\n    rounds: 2\n    slow_headers: {{ X-Tminus-Test-Delay-Ms: 150 }}\n"
    );
    let (healthy, _) = run_checks(&[], &checks, &["--strict"]);
    let (v, m) = property(&healthy["race"], "others_conflict_or_replay");
    assert_eq!(v, "pass", "{m}");
    let (racy, _) = run_checks(
        &[tminus::reference::Defect::RaceExecutesTwice],
        &checks,
        &["--strict"],
    );
    let c = &racy["race"];
    assert_eq!(property(c, "single_effect").0, "fail", "{c:#}");
    let (v, m) = property(c, "others_conflict_or_replay");
    assert_eq!(v, "fail", "{c:#}");
    assert!(
        m.contains("3 of the other 3 request(s) executed, whatever their statuses said"),
        "{m}"
    );
}
