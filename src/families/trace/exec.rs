//! The trace-correlation family (`trace.*`, catalogue §4): request/trace ids on
//! every response, uniqueness, W3C traceparent propagation, invalid traceparents
//! ignored, higher versions continued, tracestate mutated by the rules,
//! X-Request-Id hygiene and async status resources joined by trace id.
//! Every failure names the responses' request/trace ids (`common::describe`,
//! which clips hostile ids), so a partner can attach them to a ticket.

use super::{probes, traceparent, tracestate, unique};
use crate::context::CheckContext;
use crate::families::common::clip;
use crate::families::trace::plan::TracePlan;
use crate::families::trace::spec::IdFormat;
use crate::http::Exchange;
use crate::outcome::Outcome;

pub async fn run(plan: &TracePlan, ctx: &CheckContext) -> Outcome {
    match plan {
        TracePlan::Present(p) => probes::present(p, ctx).await,
        TracePlan::Unique(p) => unique::run(p, ctx).await,
        TracePlan::Propagated(p) => probes::propagated(p, ctx).await,
        TracePlan::InvalidIgnored(p) => probes::invalid_ignored(p, ctx).await,
        TracePlan::RequestIdHygiene(p) => probes::request_id_hygiene(p, ctx).await,
        TracePlan::AsyncStatus(p) => probes::async_status(p, ctx).await,
        TracePlan::VersionDowngrade(p) => probes::version_downgrade(p, ctx).await,
        TracePlan::Tracestate(p) => tracestate::run(p, ctx).await,
    }
}

/// The trace id in `header` of a response (its trace-id field when the value
/// is traceparent-shaped).
pub fn trace_id(ex: &Exchange, header: &str) -> Option<String> {
    ex.response
        .header(header)
        .map(traceparent::trace_id_of)
        .filter(|v| !v.is_empty())
}

/// `None` when `id` has the expected format, else why not.
pub fn format_problem(id: &str, format: IdFormat) -> Option<String> {
    match format {
        IdFormat::Any if id.is_empty() => Some("empty".into()),
        IdFormat::Any => None,
        IdFormat::W3c if traceparent::is_w3c_trace_id(id) => None,
        IdFormat::W3c => Some(format!(
            "`{}` is not 32 lowercase hex digits, not all zeros",
            clip(id)
        )),
    }
}
