//! The observability family's execution: a mark in the log source, the
//! requests sent (each with a fresh traceparent), then the source read
//! until what is looked for is there or the deadline passes. No evidence,
//! no verdict: a source that returned no line at all is an error naming the
//! source (exit 3), never a finding about the target; a read that stopped
//! at its cap leaves what it did not see undecided.

use std::time::Duration;

use tokio::time::Instant;

use super::plan::ObservabilityPlan;
use crate::context::{CheckContext, Scope};
use crate::families::common::{clip, evidence, send};
use crate::logs::{LogSource, Logs, Mark};
use crate::outcome::{prop, Evidence, Outcome};

/// Runs a planned `observability.*` check.
pub async fn run(plan: &ObservabilityPlan, ctx: &CheckContext) -> Outcome {
    match plan {
        ObservabilityPlan::LogsCorrelated(p) => super::correlated::run(p, ctx).await,
        ObservabilityPlan::LogsClean(p) => super::clean::run(p, ctx).await,
        ObservabilityPlan::RedMetrics(p) => super::red::run(p, ctx).await,
    }
}

/// A fresh W3C trace id and traceparent (`00-<trace>-<span>-01`).
pub fn new_traceparent() -> (String, String) {
    let trace = uuid::Uuid::new_v4().simple().to_string();
    let span: String = uuid::Uuid::new_v4().simple().to_string()[..16].to_owned();
    let tp = format!("00-{trace}-{span}-01");
    (trace, tp)
}

/// Where reading starts (the source's length now), or an error naming it.
pub async fn mark(source: &LogSource) -> Result<Mark, Outcome> {
    source
        .mark()
        .await
        .map_err(|e| Outcome::error(format!("{}: {e}", source.name())))
}

/// Reads the logs since `mark` until `done` holds of them or `deadline`
/// passes; the last read. An unreadable source is an error.
pub async fn read_until(
    source: &LogSource,
    mark: &Mark,
    ctx: &CheckContext,
    deadline: Instant,
    poll: Duration,
    mut done: impl FnMut(&Logs) -> bool,
) -> Result<Logs, Outcome> {
    loop {
        let logs = source
            .read(mark, &ctx.client, &ctx.target.base_url)
            .await
            .map_err(Outcome::error)?;
        if done(&logs) || Instant::now() + poll > deadline {
            return Ok(logs);
        }
        tokio::time::sleep(poll).await;
    }
}

/// The error for a source that returned nothing since the check began.
pub fn empty(source: &LogSource, waited: Duration) -> Outcome {
    Outcome::error(format!(
        "{} returned no log line at all in {} after the requests: tminus cannot judge logs it cannot read (is the source the target's, and does the target log requests?)",
        source.name(),
        crate::fmt_duration(waited)
    ))
}

/// What a read covered, for messages: `214 lines (18.2 KiB)`, with its cap.
pub fn covered(logs: &Logs, source: &LogSource) -> String {
    let mut s = format!("{} lines ({} bytes)", logs.lines.len(), logs.bytes);
    if logs.capped {
        s.push_str(&format!(
            ", stopped at the cap of {} bytes (max_bytes) or lines (max_lines)",
            source.max_bytes
        ));
    }
    if logs.cut_lines > 0 {
        s.push_str(&format!(", {} lines cut at 64 KiB", logs.cut_lines));
    }
    if let Some(n) = &logs.note {
        s.push_str(&format!("; {n}"));
    }
    s
}

/// Sends one request of a check with a fresh traceparent; its trace id,
/// request id (`X-Request-Id` or the first id header) and evidence.
pub struct Sent {
    pub trace_id: String,
    pub request_id: Option<String>,
    pub evidence: Evidence,
    pub status: u16,
    /// The request body as sent.
    pub body: Vec<u8>,
}

pub async fn send_traced(
    ctx: &CheckContext,
    request: &crate::context::RequestPlan,
    label: &str,
    before_send: impl FnOnce(&crate::http::Rendered),
) -> Result<Sent, Outcome> {
    let mut r = ctx.target.render(request, &Scope::default());
    let (trace_id, tp) = new_traceparent();
    r.set_header("traceparent", tp);
    r.remove_header("tracestate");
    before_send(&r);
    let ex = send(ctx, &r, label).await?;
    let mut ev = evidence(label, &ex);
    // The body excerpt could echo what the request carried; the request
    // id and the status are the evidence here.
    ev.detail = None;
    Ok(Sent {
        trace_id,
        request_id: ex.response.request_id().map(|(_, v)| v),
        evidence: ev,
        status: ex.status(),
        body: r.body,
    })
}

/// Properties every observability outcome carries.
pub fn figures(logs: &Logs) -> Vec<(String, crate::outcome::PropValue)> {
    vec![
        prop("log_lines_read", logs.lines.len() as i64),
        prop("log_bytes_read", logs.bytes as i64),
        prop("log_read_capped", logs.capped),
    ]
}

/// `abc…` for an id in a message.
pub fn short(id: &str) -> String {
    clip(id)
}
