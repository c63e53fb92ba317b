//! Exit 3 means tminus could not do its job (issue 22 case 6): a target or
//! client that lacks the feature a property is about gets a verdict instead.
//! A target that returns no trace id at all, and a client that never retries
//! a 429, are WARNs under `standard` (the specs do not require the feature:
//! exit 0) and FAILs under `botix`, whose contract requires it (exit 1);
//! never an error, never a pass.

use crate::common;

use std::path::Path;
use std::time::Duration;

use axum::http::StatusCode;
use axum::Router;

use common::{stderr, tminus, AppHandle};

/// Runs `checks` under `profile`; the exit code and (id, verdict, message).
fn run(
    dir: &Path,
    profile: &str,
    target: &str,
    checks: &str,
) -> (Option<i32>, Vec<(String, String, String)>) {
    let suite = dir.join(format!("{profile}.yaml"));
    std::fs::write(
        &suite,
        format!("suite: missing-feature\nprofile: {profile}\ntarget: {{ base_url: \"{target}\" }}\nchecks:\n{checks}"),
    )
    .unwrap();
    let out_dir = tempfile::tempdir_in(dir).unwrap();
    let json = out_dir.path().join("report.json");
    let out = tminus(
        dir,
        &[
            "run",
            suite.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            out_dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(90),
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no JSON report ({e}); stderr:\n{}", stderr(&out)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let checks = v["suites"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["verdict"].as_str().unwrap().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    (out.status.code(), checks)
}

fn assert_all(
    checks: &[(String, String, String)],
    want: &str,
    code: Option<i32>,
    expected_code: i32,
) {
    for (id, verdict, message) in checks {
        assert_eq!(verdict, want, "{id}: {message}");
    }
    assert_eq!(code, Some(expected_code), "{checks:#?}");
}

const TRACE_CHECKS: &str = r#"  - id: unique
    kind: trace.unique
    request: { path: /v1/things }
    count: 20
  - id: propagated
    kind: trace.propagated
    request: { path: /v1/things }
  - id: invalid-ignored
    kind: trace.invalid_ignored
    request: { path: /v1/things }
  - id: version-downgrade
    kind: trace.version_downgrade
    request: { path: /v1/things }
"#;

#[test]
fn a_target_without_tracing_warns_under_standard_and_fails_under_botix() {
    let server = AppHandle::start(Router::new().fallback(|| async { StatusCode::OK }));
    let dir = tempfile::tempdir().unwrap();

    let (code, checks) = run(dir.path(), "standard", &server.url, TRACE_CHECKS);
    assert_all(&checks, "warn", code, 0);
    let propagated = &checks.iter().find(|c| c.0 == "propagated").unwrap().2;
    assert!(
        propagated.contains("not observable") && propagated.contains("return_headers"),
        "{propagated}"
    );

    let (code, checks) = run(dir.path(), "botix", &server.url, TRACE_CHECKS);
    assert_all(&checks, "fail", code, 1);

    // No request id back at all: `echoed` says so; a warning in both.
    let hygiene =
        "  - id: hygiene\n    kind: trace.request_id_hygiene\n    request: { path: /v1/things }\n";
    for profile in ["standard", "botix"] {
        let (code, checks) = run(dir.path(), profile, &server.url, hygiene);
        assert_all(&checks, "warn", code, 0);
        assert!(checks[0].2.contains("not observable"), "{checks:?}");
    }
}

#[test]
fn a_client_that_never_retries_warns_under_standard_and_fails_under_botix() {
    let dir = tempfile::tempdir().unwrap();
    let client = "  - id: never-retries\n    kind: client.respects_retry_after\n    client: { argv: [\"${var.tminus_exe}\", reference, client, --max-attempts, \"1\"], timeout: 10s }\n";
    let (code, checks) = run(dir.path(), "standard", "http://127.0.0.1:9", client);
    assert_all(&checks, "warn", code, 0);
    assert!(checks[0].2.contains("not observable"), "{checks:?}");
    let (code, checks) = run(dir.path(), "botix", "http://127.0.0.1:9", client);
    assert_all(&checks, "fail", code, 1);
}
