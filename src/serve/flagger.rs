//! Flagger's webhook contract (docs: usage/webhooks). Flagger POSTs
//! `{"name", "namespace", "phase", "metadata"}`, where `metadata` is the
//! string map the Canary's webhook entry declares; the hook's type is not
//! in the payload, so it is the URL's last segment. 2xx advances the
//! canary, anything else halts it, and Flagger logs the body as the
//! reason: the body names the checks that did not pass.
//!
//! `pre-rollout` and `rollout` run the selected suites against
//! `metadata.target` (`metadata.suites`, `metadata.tags` select); Flagger
//! calls rollout hooks on every analysis iteration and retries failed
//! pre-rollout hooks, so a call for a run in progress or kept answers from
//! it. `confirm-promotion` answers from the canary's latest results.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use super::runs::{Key, Refused};
use super::{answer, unauthorized, Server};

#[derive(Debug, Deserialize)]
struct Payload {
    name: String,
    namespace: String,
    #[serde(default)]
    #[allow(dead_code)]
    phase: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, serde_json::Value>,
}

impl Payload {
    fn meta(&self, key: &str) -> Option<&str> {
        self.metadata.get(key).and_then(|v| v.as_str())
    }
}

const HOOKS: &[&str] = &["pre-rollout", "rollout", "confirm-promotion"];

pub async fn hook(
    State(server): State<Arc<Server>>,
    Path(hook): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let payload: Result<Payload, _> = serde_json::from_slice(&body);
    let token = payload.as_ref().ok().and_then(|p| p.meta("token"));
    if !server.authorized(&headers, token) {
        return unauthorized();
    }
    let payload = match payload {
        Ok(p) => p,
        Err(e) => {
            return answer(
                StatusCode::BAD_REQUEST,
                format!("not a Flagger webhook payload ({{\"name\", \"namespace\", \"phase\", \"metadata\"}}): {e}"),
            )
        }
    };
    if !HOOKS.contains(&hook.as_str()) {
        return answer(
            StatusCode::NOT_FOUND,
            format!("no hook `{hook}`: tminus serves {}", HOOKS.join(", ")),
        );
    }
    if hook == "confirm-promotion" {
        return confirm(&server, &payload);
    }
    let (spec, selection) = match super::select::select(
        &server.suites_dir,
        payload.meta("target"),
        payload.meta("suites"),
        payload.meta("tags"),
    ) {
        Ok(s) => s,
        Err(e) => return answer(StatusCode::BAD_REQUEST, e),
    };
    let key = Key {
        namespace: payload.namespace.clone(),
        name: payload.name.clone(),
        hook,
        selection,
    };
    let (mut handle, started) = match server.runs.get_or_start(key, spec) {
        Ok(h) => h,
        Err(Refused::Busy(n)) => {
            return answer(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("busy: {n} runs in progress (--max-runs); call again"),
            )
        }
    };
    match handle.wait(server.hook_wait).await {
        Some(r) => answer(status_of(r.verdict), r.text(handle.id)),
        None => answer(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "tminus run {}: running for {} s ({}); call again",
                handle.id,
                handle.started.elapsed().as_secs(),
                if started {
                    "started by this call"
                } else {
                    "started by an earlier call"
                }
            ),
        ),
    }
}

/// 200 advances; a failed gate is 412, a run that could not judge 503.
pub fn status_of(verdict: &str) -> StatusCode {
    match verdict {
        "pass" => StatusCode::OK,
        "fail" => StatusCode::PRECONDITION_FAILED,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// Promotes only when the canary's latest run of every hook passed.
fn confirm(server: &Server, p: &Payload) -> Response {
    let (latest, running) = server.runs.latest(&p.namespace, &p.name);
    if running {
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{}/{}: a run is still in progress; call again",
                p.namespace, p.name
            ),
        );
    }
    if latest.is_empty() {
        return answer(
            StatusCode::PRECONDITION_FAILED,
            format!(
                "{}/{}: no finished run to confirm (call pre-rollout or rollout first, within --keep)",
                p.namespace, p.name
            ),
        );
    }
    let mut text = String::new();
    let mut worst = StatusCode::OK;
    for (hook, r) in &latest {
        let status = status_of(r.verdict);
        if status != StatusCode::OK && worst == StatusCode::OK {
            worst = status;
        }
        text.push_str(&format!("{hook}: {}\n", r.text(0)));
    }
    answer(worst, text.trim_end().to_owned())
}
