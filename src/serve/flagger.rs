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

use axum::body::Body;
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
    body: Body,
) -> Response {
    let body = match read_body(&headers, body).await {
        Ok(b) => b,
        Err(refused) => return refused,
    };
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
        &server.allowed,
        payload.meta("target"),
        payload.meta("suites"),
        payload.meta("tags"),
    ) {
        Ok(s) => s,
        Err(super::select::Refusal(status, e)) => return answer(status, e),
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
        Err(Refused::Conflict(id)) => {
            return answer(
                StatusCode::CONFLICT,
                format!("{}/{}: tminus run {id} of this hook is in progress for another target, suites or tags; nothing was started, call again when it ends", payload.namespace, payload.name),
            )
        }
    };
    let _waiting = match super::wait_place(&server, &handle) {
        Ok(p) => p,
        Err(refused) => return *refused,
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

/// The body, whole within [`super::MAX_BODY`] bytes and
/// [`super::listen::BODY_TIMEOUT`]: one trickled a byte at a time is cut
/// (408), one declared or sent larger is refused (413) before it is read.
async fn read_body(headers: &HeaderMap, body: Body) -> Result<axum::body::Bytes, Response> {
    let too_large = || {
        answer(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the body is larger than {} KiB, the most a hook reads; nothing was started",
                super::MAX_BODY >> 10
            ),
        )
    };
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > super::MAX_BODY as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(
        super::listen::BODY_TIMEOUT,
        axum::body::to_bytes(body, super::MAX_BODY),
    )
    .await
    {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) if is_too_large(&e) => Err(too_large()),
        Ok(Err(e)) => Err(answer(
            StatusCode::BAD_REQUEST,
            format!("cannot read the body: {e}; nothing was started"),
        )),
        Err(_) => Err(answer(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the body did not arrive within {} s; nothing was started",
                super::listen::BODY_TIMEOUT.as_secs()
            ),
        )),
    }
}

fn is_too_large(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = s.source();
    }
    false
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
