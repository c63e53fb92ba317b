//! Helpers every check family shares: send with evidence, read a side-effect
//! counter, describe a response in one line.

use crate::context::CheckContext;
use crate::context::{CounterPlan, RequestPlan, Scope};
use crate::http::{Exchange, Rendered, Target};
use crate::outcome::{Evidence, Outcome};

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
    send_on(&ctx.client, r, label).await
}

/// [`send`] through `client` (the check's, or one telling nobody).
async fn send_on(
    client: &crate::http::Client,
    r: &Rendered,
    label: &str,
) -> Result<Exchange, Outcome> {
    client
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
    // The counter is the suite's instrument, not the API under test: its
    // answers are neither judged by the contract nor taken as the target
    // serving the suite's routes.
    let r = ctx.target.render(&counter.request, scope);
    let ex = send_on(&ctx.client.unwatched(), &r, label).await?;
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

/// How far the side-effect counter moved from `before` to `after`, when
/// that can be evidence: a counter that went backwards (reset, wrapped
/// past i64::MAX, another tenant's) or moved by more than the `sent`
/// requests that could have moved it counts something else, and judging
/// it would turn garbage into a verdict (a wrap from i64::MAX to i64::MIN
/// read as one execution). `sent: None` when the check does not bound it.
pub fn counter_moved(
    before: i64,
    after: i64,
    sent: Option<u64>,
    counter: &str,
) -> Result<i64, String> {
    let moved = after.checked_sub(before).filter(|d| *d >= 0).ok_or_else(|| {
        format!(
            "the side-effect counter {counter} went backwards ({before} to {after}): it was reset, wrapped or counts something else, so it is no evidence of executions"
        )
    })?;
    if let Some(n) = sent.filter(|n| moved as u64 > *n) {
        return Err(format!(
            "the side-effect counter {counter} moved by {moved} ({before} to {after}) while this check sent {n} request(s): it counts more than this check's executions, so it is no evidence"
        ));
    }
    Ok(moved)
}

/// `201 (X-Request-Id: abc)` for failure messages, the id clipped (see
/// [`clip`]): a target that reflects a 10 kB hostile id must not flood the
/// report.
pub fn describe(ex: &Exchange) -> String {
    match ex.response.request_id() {
        Some((k, v)) => format!("{} ({k}: {})", ex.status(), clip(&v)),
        None => ex.status().to_string(),
    }
}

/// Evidence of an exchange with its request id clipped (see [`describe`]).
pub fn evidence(label: &str, ex: &Exchange) -> Evidence {
    let mut ev = Evidence::from_exchange(label, ex);
    if let Some((k, v)) = ex.response.request_id() {
        ev.request_id = Some(format!("{k}: {}", clip(&v)));
    }
    ev
}

/// Longest value quoted in a message, in characters.
pub const CLIP_MAX: usize = 80;

/// A value made safe and short for a message: control characters and
/// quotes escaped by [`crate::redact::quote`] (whose form of every secret
/// the redactor knows), at most [`CLIP_MAX`] characters, the original size
/// noted when cut (ids can be hostile 10 kB strings).
pub fn clip(s: &str) -> String {
    use crate::redact::quote;
    if s.chars().count() <= CLIP_MAX {
        quote(s)
    } else {
        format!(
            "{}… ({} bytes)",
            quote(&s.chars().take(CLIP_MAX).collect::<String>()),
            s.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{RecordedRequest, RecordedResponse};
    use std::time::Duration;

    fn exchange(status: u16, headers: &[(&str, &str)]) -> Exchange {
        Exchange {
            request: RecordedRequest {
                method: "GET".into(),
                url: "http://127.0.0.1:1/x".into(),
                headers: Vec::new(),
                body: Vec::new(),
            },
            response: RecordedResponse {
                status,
                headers: headers
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
                body: Vec::new(),
            },
            elapsed: Duration::from_millis(1),
            ttfb: Duration::from_millis(1),
        }
    }

    #[test]
    fn describe_names_the_status_and_request_id() {
        assert_eq!(describe(&exchange(204, &[])), "204");
        assert_eq!(
            describe(&exchange(200, &[("X-Request-Id", "abc")])),
            "200 (x-request-id: abc)"
        );
    }

    #[test]
    fn hostile_ids_are_clipped_and_escaped() {
        let long = "a".repeat(10_000);
        let d = describe(&exchange(200, &[("X-Request-Id", &long)]));
        assert!(d.len() < 200, "{d}");
        assert!(d.ends_with("… (10000 bytes))"), "{d}");
        let d = describe(&exchange(200, &[("X-Request-Id", "a\u{1b}[31mred\n")]));
        assert!(!d.contains('\u{1b}') && !d.contains('\n'), "{d}");
        let ev = evidence("probe", &exchange(200, &[("X-Request-Id", &long)]));
        assert!(ev.request_id.unwrap().len() < 150);
    }

    #[test]
    fn clip_counts_characters_not_bytes() {
        let s = "é".repeat(CLIP_MAX);
        assert_eq!(clip(&s), s);
        let cut = clip(&"é".repeat(CLIP_MAX + 1));
        assert!(cut.starts_with(&"é".repeat(CLIP_MAX)), "{cut}");
        assert!(cut.ends_with("… (162 bytes)"), "{cut}");
    }
}
