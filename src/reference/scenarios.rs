//! Scenario runs: an asynchronous operation that answers 202 + `Location` and
//! exposes a status resource (catalogue TRC-008).
//!
//! Runs complete instantly; the status resource reports `completed` from the first
//! read, which is enough for clients to exercise the 202-then-poll flow. Its
//! `trace_id` is the one of the request that started the run; the
//! `async-status-loses-trace` defect reports the status request's own instead.

use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use serde_json::{json, Value};

use super::auth::Tenant;
use super::clock::now_rfc3339;
use super::defect::Defect;
use super::effects::Effect;
use super::errors::ApiError;
use super::state::{AppState, ScenarioRun};
use super::trace::RequestContext;
use super::validate;

/// Scenario ids are path segments; keep them to a safe alphabet so they can be
/// echoed in JSON and logs without surprises.
fn valid_scenario_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// `POST /public/v1/scenarios/{id}/run` with optional `{"params": {...}}` -> 202.
pub(crate) async fn run(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    Extension(ctx): Extension<RequestContext>,
    Path(scenario_id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    if !valid_scenario_id(&scenario_id) {
        return Err(ApiError::validation(
            "scenario_id",
            "must be 1 to 64 characters of [A-Za-z0-9_-]",
        ));
    }
    let obj = validate::json_object(&body?, true)?;
    let params = match obj.get("params") {
        None | Some(Value::Null) => json!({}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => return Err(ApiError::validation("params", "must be an object")),
    };

    let run = ScenarioRun {
        run_id: format!("run_{}", ulid::Ulid::new()),
        scenario_id,
        params,
        trace_id: ctx.trace_id,
        created_at: now_rfc3339(),
    };
    state.with_tenant(&tenant, |t| t.runs.insert(run.run_id.clone(), run.clone()));
    state.effects().record(Effect::ScenariosRun);

    let location = format!("/public/v1/scenario-runs/{}", run.run_id);
    let mut resp = (
        StatusCode::ACCEPTED,
        Json(json!({"run_id": run.run_id, "status": "queued"})),
    )
        .into_response();
    // run_id is `run_` + a ULID, always a valid header value.
    if let Ok(v) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}

/// `GET /public/v1/scenario-runs/{run_id}`: 404 for unknown runs and for runs of
/// another tenant (not 403, which would confirm the id exists).
pub(crate) async fn status(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    Extension(ctx): Extension<RequestContext>,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let mut run = state
        .with_tenant(&tenant, |t| t.runs.get(&run_id).cloned())
        .ok_or_else(|| ApiError::NotFound(format!("no scenario run `{run_id}`")))?;
    // The defect: the status resource is stamped with the trace of the request
    // reading it, so it no longer joins back to the request that started the run.
    if state.has(Defect::AsyncStatusLosesTrace) {
        run.trace_id = ctx.trace_id;
    }
    Ok(Json(json!({
        "run_id": run.run_id,
        "scenario_id": run.scenario_id,
        "status": "completed",
        "params": run.params,
        "trace_id": run.trace_id,
        "created_at": run.created_at,
    })))
}
