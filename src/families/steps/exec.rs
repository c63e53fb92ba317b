//! The generic multi-step check: send each step's request in order, judge it
//! against its expectations, capture values for the steps after it.

use super::expect::evaluate;
use super::plan::{Action, StepsPlan};
use crate::context::CheckContext;
use crate::context::{CaptureSource, ExpectPlan, Scope};
use crate::outcome::{prop, Evidence, Outcome, PropValue};

/// How many things `e` checks.
fn expectations(e: &ExpectPlan) -> usize {
    usize::from(e.status.is_some())
        + e.headers.len()
        + e.json.len()
        + usize::from(e.body_contains.is_some())
        + usize::from(e.latency_under.is_some())
}

pub async fn run(plan: &StepsPlan, ctx: &CheckContext) -> Outcome {
    let mut scope = Scope::new();
    let mut evidence = Vec::new();
    let mut props = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let label = step.name.clone();
        let request = match &step.action {
            Action::Send(r) => r,
            Action::Wait(d) => {
                ctx.note(format!("{label}: waiting {}", crate::fmt_duration(*d)));
                tokio::time::sleep(*d).await;
                continue;
            }
        };
        let rendered = ctx.target.render(request, &scope);
        // A step that names 429 among its statuses is about the limit and
        // sees it; any other step (a `4xx` class too) waits a 429 out and
        // sends again: a 429 it did not ask for is the quota, not the answer.
        let names_429 = step.expect.status.as_ref().is_some_and(|st| {
            st.0.iter()
                .any(|p| matches!(p, crate::model::scalar::StatusPattern::Exact(429)))
        });
        let client = if names_429 {
            ctx.client.judging_limits()
        } else {
            ctx.client.clone()
        };
        let ex = match client.send(&rendered).await {
            Ok(ex) => ex,
            Err(e) => return Outcome::transport(&label, &e).with_evidence(evidence),
        };
        props.push(prop(
            format!("step{}.latency_ms", i + 1),
            PropValue::rounded(ex.elapsed.as_secs_f64() * 1000.0, 1),
        ));
        evidence.push(Evidence::from_exchange(&label, &ex));
        let mismatches = evaluate(&step.expect, &ex, &scope);
        if let Some(first) = mismatches.first() {
            let all: Vec<String> = mismatches
                .iter()
                .map(|m| format!("{}: expected {}, got {}", m.what, m.expected, m.actual))
                .collect();
            let msg = format!("{label}: {}", all.join("; "));
            return Outcome::fail(
                msg,
                format!("{} {}", first.what, first.expected),
                format!("{} {}", first.what, first.actual),
            )
            .with_evidence(evidence)
            .with_properties(props);
        }
        for c in &step.captures {
            let value = match &c.source {
                CaptureSource::Header(h) => ex.response.header(h).map(str::to_owned),
                CaptureSource::Json(p) => {
                    ex.response
                        .json()
                        .and_then(|d| p.select(&d))
                        .map(|v| match v {
                            serde_json::Value::String(s) => s,
                            other => other.to_string(),
                        })
                }
            };
            match value {
                Some(v) => {
                    scope.insert(c.name.clone(), v);
                }
                None => {
                    let from = match &c.source {
                        CaptureSource::Header(h) => format!("header {h}"),
                        CaptureSource::Json(p) => p.to_string(),
                    };
                    return Outcome::fail(
                        format!("{label}: capture `{}` found nothing at {from}", c.name),
                        format!("{from} present"),
                        "missing",
                    )
                    .with_evidence(evidence)
                    .with_properties(props);
                }
            }
        }
    }
    // Only what an `expect:` (or a capture) checked is evidence: a check whose
    // steps expect nothing would pass against any server that answers.
    let judged: usize = plan
        .steps
        .iter()
        .map(|s| expectations(&s.expect) + s.captures.len())
        .sum();
    if judged == 0 {
        return Outcome::error(format!(
            "no step has an `expect:` or a `capture:`, so nothing was judged: {} request(s) were only sent",
            plan.steps.len()
        ))
        .with_evidence(evidence)
        .with_properties(props);
    }
    Outcome::pass(format!(
        "{} step(s) passed, {judged} expectation(s) met",
        plan.steps.len()
    ))
    .with_evidence(evidence)
    .with_properties(props)
}
