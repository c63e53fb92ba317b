//! Helpers every check family shares: send with evidence, read a side-effect
//! counter, describe a response in one line.

use super::CheckContext;
use crate::http::{Exchange, Rendered, Target};
use crate::outcome::{Evidence, Outcome};
use crate::plan::{CounterPlan, RequestPlan, Scope};

/// Renders and sends a planned request; a transport failure becomes an
/// `Error` outcome naming the address.
pub async fn send_plan(
    ctx: &CheckContext,
    target: &Target,
    req: &RequestPlan,
    scope: &Scope,
    label: &str,
) -> Result<Exchange, Outcome> {
    let r = target.render(req, scope);
    send(ctx, &r, label).await
}

pub async fn send(ctx: &CheckContext, r: &Rendered, label: &str) -> Result<Exchange, Outcome> {
    ctx.client
        .send(r)
        .await
        .map_err(|e| Outcome::transport(label, &e))
}

/// Reads a side-effect counter: a number at the path, or the length of a
/// list/object there. Anything else is an `Error` (the suite is wrong for
/// this target), with the response as evidence.
pub async fn read_counter(
    ctx: &CheckContext,
    counter: &CounterPlan,
    scope: &Scope,
    label: &str,
) -> Result<(i64, Exchange), Outcome> {
    let ex = send_plan(ctx, &ctx.target, &counter.request, scope, label).await?;
    let value = ex.response.json().and_then(|d| counter.value.select(&d));
    let n = match &value {
        Some(serde_json::Value::Number(n)) => n.as_i64(),
        Some(serde_json::Value::Array(a)) => Some(a.len() as i64),
        Some(serde_json::Value::Object(o)) => Some(o.len() as i64),
        _ => None,
    };
    match n {
        Some(n) if (200..300).contains(&ex.status()) => Ok((n, ex)),
        _ => Err(Outcome::error(format!(
            "{label}: the side-effect counter {} gave no number (status {}, value {})",
            counter.value,
            ex.status(),
            value
                .map(|v| v.to_string())
                .unwrap_or_else(|| "missing".into())
        ))
        .with_evidence(vec![Evidence::from_exchange(label, &ex)])),
    }
}

/// `201 (X-Request-Id: abc)` for failure messages.
pub fn describe(ex: &Exchange) -> String {
    match ex.response.request_id() {
        Some((k, v)) => format!("{} ({k}: {v})", ex.status()),
        None => ex.status().to_string(),
    }
}
