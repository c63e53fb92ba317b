//! Request-id hygiene against servers that behave like the libraries real
//! integrations use (issue 13 "Request ids"): asgi-correlation-id keeps a
//! caller's id only when it is a valid UUID and replaces anything else with
//! a fresh UUIDv4; some servers always issue their own id. Replacing the
//! caller's id with a well-formed one meets the hygiene properties; echoing
//! is a SHOULD. tminus's own well-formed id must be a plain UUIDv4, or a
//! validating library would replace it and the echo could never be seen.

use crate::common;

use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::Router;

use common::{tminus, AppHandle};

/// How the test server answers `X-Request-Id`.
#[derive(Clone, Copy)]
enum Policy {
    /// asgi-correlation-id's default: keep a UUIDv4, replace anything else.
    KeepUuidV4,
    /// Always a fresh id of its own.
    AlwaysOwn,
}

/// A server answering every request with an `X-Request-Id` chosen by `policy`.
fn server(policy: Policy) -> AppHandle {
    AppHandle::start(
        Router::new().fallback(move |headers: HeaderMap| async move {
            let given = headers
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| uuid::Uuid::parse_str(v).ok())
                .filter(|u| u.get_version_num() == 4);
            let id = match (policy, given) {
                (Policy::KeepUuidV4, Some(u)) => u,
                _ => uuid::Uuid::new_v4(),
            };
            let mut out = HeaderMap::new();
            out.insert(
                "x-request-id",
                HeaderValue::from_str(&id.to_string()).expect("uuid header"),
            );
            (StatusCode::OK, out, "{}")
        }),
    )
}

/// Runs one `trace.request_id_hygiene` check; returns the check's JSON and
/// the exit code.
fn hygiene(url: &str, extra: &[&str]) -> (serde_json::Value, Option<i32>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let suite = dir.path().join("ids.yaml");
    std::fs::write(
        &suite,
        "suite: ids\nchecks:\n  - id: request-id-hygiene\n    kind: trace.request_id_hygiene\n    request: { path: /v1/things }\n",
    )
    .unwrap();
    let json = dir.path().join("report.json");
    let mut args = vec![
        "run",
        suite.to_str().unwrap(),
        "--target",
        url,
        "--json",
        json.to_str().unwrap(),
        "--report-dir",
        dir.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = tminus(dir.path(), &args, &[], Duration::from_secs(60));
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|_| panic!("no JSON report; stderr:\n{}", common::stderr(&out)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    (v["suites"][0]["checks"][0].clone(), out.status.code())
}

fn verdict_of<'a>(check: &'a serde_json::Value, property: &str) -> &'a str {
    check["assertions"]
        .as_array()
        .expect("assertions")
        .iter()
        .find(|a| a["property"] == property)
        .unwrap_or_else(|| panic!("no {property} in {check}"))["verdict"]
        .as_str()
        .unwrap()
}

/// asgi-correlation-id keeps only UUIDs: tminus's well-formed id survives
/// it (so it is a UUIDv4), the overlong and hostile ones are replaced, and
/// every property holds.
#[test]
fn a_uuid_validating_server_echoes_tminus_ids_and_passes() {
    let server = server(Policy::KeepUuidV4);
    let (check, code) = hygiene(&server.url, &["--strict"]);
    assert_eq!(check["verdict"], "pass", "{check}");
    for p in ["not_reflected", "well_formed_reply", "echoed"] {
        assert_eq!(verdict_of(&check, p), "pass", "{p}: {check}");
    }
    assert_eq!(code, Some(0));
}

/// A server that always issues its own well-formed id meets the MUST
/// properties; not echoing is a warning (a failure only under --strict).
#[test]
fn replacing_the_callers_id_with_a_well_formed_one_is_only_a_warning() {
    let server = server(Policy::AlwaysOwn);
    let (check, code) = hygiene(&server.url, &[]);
    assert_eq!(verdict_of(&check, "not_reflected"), "pass", "{check}");
    assert_eq!(verdict_of(&check, "well_formed_reply"), "pass", "{check}");
    assert_eq!(verdict_of(&check, "echoed"), "warn", "{check}");
    assert_eq!(check["verdict"], "warn", "{check}");
    assert_eq!(code, Some(0));

    let (check, code) = hygiene(&server.url, &["--strict"]);
    assert_eq!(verdict_of(&check, "echoed"), "fail", "{check}");
    assert_eq!(code, Some(1));
}
