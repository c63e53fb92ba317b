//! The `payload` property of the sink kinds (catalogue CON-004): when the
//! suite's `contract:` document describes its events (OpenAPI 3.1
//! `webhooks:`), every delivery the sink received is judged against the
//! entry of its event type (`contract::webhooks`). A missing required field,
//! a wrong type, an event the document does not describe, a body that is
//! not JSON: each fails it, naming the delivery and the JSON pointer. Without
//! such a document the property is not reported.

use crate::contract::webhooks::{judge, Payload};
use crate::families::webhook::plan::WebhookSinkPlan;
use crate::outcome::{Assertion, Outcome};
use crate::sink::Received;

pub const PROPERTY: &str = "payload";

/// Problems quoted in the message; the rest are counted.
const MAX_QUOTED: usize = 3;

/// `out` with the `payload` assertion over `received`, when the plan has a
/// document with event schemas and the check judged anything.
pub fn add(out: Outcome, p: &WebhookSinkPlan, received: &[Received]) -> Outcome {
    let Some(contract) = &p.contract else {
        return out;
    };
    if received.is_empty() || out.assertions.is_empty() {
        return out;
    }
    let a = assess(
        contract.webhooks(),
        &contract.source,
        p.scheme.event_header.as_deref(),
        p.scheme.id_header.as_deref(),
        received,
    );
    out.with_assertion(a)
}

fn assess(
    events: &[crate::contract::webhooks::WebhookEvent],
    doc: &str,
    event_header: Option<&str>,
    id_header: Option<&str>,
    received: &[Received],
) -> Assertion {
    let mut judged = 0usize;
    let mut conforming = 0usize;
    let mut untyped = 0usize;
    let mut problems: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (i, d) in received.iter().enumerate() {
        if !d.body_kept {
            continue;
        }
        let who = match id_header.and_then(|h| d.header(h).map(|v| format!(" ({h}: {v})"))) {
            Some(id) => format!("delivery {}{id}", i + 1),
            None => format!("delivery {}", i + 1),
        };
        let problem = match judge(events, event_header.and_then(|h| d.header(h)), &d.body) {
            Payload::Untyped => {
                untyped += 1;
                continue;
            }
            Payload::Conforms { event } => {
                if !names.contains(&event) {
                    names.push(event);
                }
                judged += 1;
                conforming += 1;
                continue;
            }
            Payload::Violations { event, errors } => format!(
                "{who}, event {event}: {} (#/webhooks/{event})",
                errors.join("; ")
            ),
            Payload::Undocumented { event_type } => {
                let known: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
                format!(
                    "{who}: event type `{event_type}` is none of the document's webhooks ({})",
                    known.join(", ")
                )
            }
            Payload::NotJson(e) => format!("{who}: the body is not JSON ({e})"),
        };
        judged += 1;
        if problems.len() < MAX_QUOTED {
            problems.push(problem);
        }
    }
    if judged == 0 {
        return Assertion::skipped(
            PROPERTY,
            format!(
                "no delivery could be matched to an event of {doc} ({untyped} without an event type{}): not judged",
                event_header
                    .map(|h| format!(" in {h} or the body's `type`"))
                    .unwrap_or_else(|| " in the body's `type`".into())
            ),
        );
    }
    let broken = judged - conforming;
    if broken == 0 {
        return Assertion::pass(
            PROPERTY,
            format!(
                "{judged} deliver{} conform to {doc}'s webhooks ({})",
                if judged == 1 { "y" } else { "ies" },
                names.join(", ")
            ),
        );
    }
    Assertion::fail(
        PROPERTY,
        format!(
            "{}{}",
            problems.join("; "),
            if broken > problems.len() {
                format!(" ({broken} of {judged} deliveries differ)")
            } else {
                String::new()
            }
        ),
        format!("every delivery as {doc}'s `webhooks:` describes it"),
        format!("{broken} of {judged} deliveries differ"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict as V;
    use std::time::Instant;

    const DOC: &str = r#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
      "webhooks": {"message.created": {"post": {"requestBody": {"content": {"application/json":
        {"schema": {"type": "object", "required": ["id", "created_at"]}}}},
        "responses": {"200": {"description": "ok"}}}}}}"#;

    fn delivery(event: &str, body: &str) -> Received {
        Received {
            at: Instant::now(),
            headers: vec![
                ("x-event".into(), event.into()),
                ("x-id".into(), "d-1".into()),
            ],
            body: body.as_bytes().to_vec(),
            body_len: body.len(),
            body_kept: true,
            answered: 200,
        }
    }

    #[test]
    fn every_delivery_is_judged_and_the_broken_ones_named() {
        let c = crate::contract::Contract::from_text(DOC, "api.json").unwrap();
        let ev = c.webhooks();
        let ok = delivery("message.created", r#"{"id": "e", "created_at": "t"}"#);
        let a = assess(
            ev,
            "api.json",
            Some("x-event"),
            Some("x-id"),
            std::slice::from_ref(&ok),
        );
        assert_eq!(a.verdict, V::Pass, "{}", a.message);
        let missing = delivery("message.created", r#"{"id": "e"}"#);
        let a = assess(
            ev,
            "api.json",
            Some("x-event"),
            Some("x-id"),
            &[ok, missing],
        );
        assert_eq!(a.verdict, V::Fail);
        assert!(
            a.message.starts_with("delivery 2 (x-id: d-1), event message.created: \"created_at\" is a required property at #"),
            "{}",
            a.message
        );
        let other = delivery("order.paid", r#"{}"#);
        let a = assess(ev, "api.json", Some("x-event"), None, &[other]);
        assert!(
            a.message.contains(
                "event type `order.paid` is none of the document's webhooks (message.created)"
            ),
            "{}",
            a.message
        );
        // No type anywhere: nothing judged, never a pass.
        let untyped = delivery("", r#"{"id": "e"}"#);
        let a = assess(ev, "api.json", None, None, &[untyped]);
        assert_eq!(a.verdict, V::Skipped, "{}", a.message);
    }
}
