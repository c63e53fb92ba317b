//! Argo Rollouts' web metric provider: `GET /argo/NAMESPACE/NAME?target=URL
//! [&suites=a.yaml,b.yaml][&tags=t]` with `Authorization: Bearer TOKEN`
//! runs (or answers from) the same keyed run as Flagger's hooks and
//! returns JSON for a `successCondition`: `result.verdict == "pass"`. A run
//! still going is a 503 (Argo counts a measurement error and asks again at
//! its next interval, up to `consecutiveErrorLimit`).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::runs::{Key, Refused};
use super::{unauthorized, Server};

pub async fn metric(
    State(server): State<Arc<Server>>,
    Path((namespace, name)): Path<(String, String)>,
    Query(q): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if !server.authorized(&headers, None) {
        return unauthorized();
    }
    let reply = |status: StatusCode, v: serde_json::Value| (status, axum::Json(v)).into_response();
    let get = |k: &str| q.get(k).map(String::as_str);
    let (spec, selection) = match super::select::select(
        &server.suites_dir,
        &server.allowed,
        get("target"),
        get("suites"),
        get("tags"),
    ) {
        Ok(s) => s,
        Err(super::select::Refusal(status, e)) => {
            return reply(status, json!({"status": "invalid", "error": e}))
        }
    };
    let key = Key {
        namespace,
        name,
        hook: "argo".into(),
        selection,
    };
    let mut handle = match server.runs.get_or_start(key, spec) {
        Ok((h, _)) => h,
        Err(Refused::Busy(n)) => {
            return reply(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"status": "busy", "running": n}),
            )
        }
        Err(Refused::Conflict(id)) => {
            return reply(
                StatusCode::CONFLICT,
                json!({"status": "conflict", "run": id, "error": "a run of this canary is in progress for another target, suites or tags; nothing was started"}),
            )
        }
    };
    let _waiting = match super::wait_place(&server, &handle) {
        Ok(p) => p,
        Err(refused) => return *refused,
    };
    match handle.wait(server.hook_wait).await {
        None => reply(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "running", "run": handle.id, "running_s": handle.started.elapsed().as_secs()}),
        ),
        Some(r) => reply(
            StatusCode::OK,
            json!({
                "status": "done",
                "run": handle.id,
                "verdict": r.verdict,
                "passed": r.passed(),
                "inconclusive": r.verdict == "inconclusive",
                "checks": r.checks,
                "checks_passed": r.passed,
                "p95_ms": r.p95_ms,
                "error_rate": r.error_rate,
                "exit_code": r.exit_code,
                "failing": r.failing,
            }),
        ),
    }
}
