//! Runs a planned dependency check: the schedule (`drive.rs`), then the
//! kind's judge, with the setup requests and a sample of the slowest
//! answers as evidence.

use super::{breaker, drive, retry, shed, timeout};
use crate::context::CheckContext;
use crate::families::dependency::plan::DependencyPlan;
use crate::outcome::{Evidence, Outcome};

/// Slowest answers kept as evidence.
const EVIDENCE_SAMPLE: usize = 5;

pub async fn run(plan: &DependencyPlan, ctx: &CheckContext) -> Outcome {
    let run = match drive::run(plan.drive(), ctx).await {
        Ok(r) => r,
        Err(o) => return o,
    };
    let out = match plan {
        DependencyPlan::TimeoutBudget(p) => timeout::judge(p, &run),
        DependencyPlan::RetryBound(p) => retry::judge(p, &run),
        DependencyPlan::Breaker(p) => breaker::judge(p, &run),
        DependencyPlan::Shed(p) => shed::judge(p, &run),
    };
    let shown = {
        let r = ctx
            .target
            .render(&plan.drive().request, &crate::context::Scope::new());
        format!("{} {}", r.method, crate::redact::mask_userinfo(&r.url))
    };
    let mut slowest: Vec<usize> = (0..run.sent.len()).collect();
    slowest.sort_by_key(|i| std::cmp::Reverse(run.sent[*i].elapsed));
    let sample = slowest.iter().take(EVIDENCE_SAMPLE).map(|i| {
        let s = &run.sent[*i];
        Evidence {
            label: format!(
                "slow answer ({} phase, {} dependency attempt(s))",
                plan.drive().phases[s.stage].name,
                run.attempts_of(*i).len()
            ),
            request: shown.clone(),
            status: s.status(),
            request_id: Some(format!("traceparent trace id {}", s.id)),
            elapsed_ms: Some(s.elapsed.as_secs_f64() * 1000.0),
            detail: Some(s.line(*i)),
        }
    });
    let mut evidence = run.evidence.clone();
    evidence.extend(sample);
    out.with_evidence(evidence)
}
