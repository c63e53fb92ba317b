//! Planning `kind: steps`: each step's request, expectations and captures,
//! with captures visible only to the steps after the one that makes them.

use super::spec::{StepsCheckSpec, StepsSpec};
use crate::context::{CapturePlan, ExpectPlan, PlanCtx, RequestPlan};

#[derive(Debug, Clone)]
pub struct StepsPlan {
    pub steps: Vec<StepPlan>,
}

#[derive(Debug, Clone)]
pub struct StepPlan {
    pub name: String,
    pub action: Action,
    pub expect: ExpectPlan,
    pub captures: Vec<CapturePlan>,
}

/// What a step does: send a request, or pause.
#[derive(Debug, Clone)]
pub enum Action {
    Send(RequestPlan),
    Wait(std::time::Duration),
}

/// Plans a check of the steps family.
pub fn plan(ctx: &mut PlanCtx<'_>, spec: &StepsSpec) -> StepsPlan {
    match spec {
        StepsSpec::Steps(s) => plan_steps(ctx, s),
    }
}

fn plan_steps(ctx: &mut PlanCtx<'_>, s: &StepsCheckSpec) -> StepsPlan {
    if s.steps.is_empty() {
        ctx.error(
            s.id.referenced,
            format!("check `{}` has no steps", s.id.value),
        );
    }
    let mut steps = Vec::new();
    for (i, st) in s.steps.iter().enumerate() {
        let action = match (&st.request, &st.wait) {
            (Some(r), None) => Action::Send(ctx.request(r, s.id.referenced)),
            (None, Some(w)) => {
                if w.value.0 > crate::context::MAX_PAUSE {
                    ctx.error(w.referenced, "`wait:` may be at most 1h");
                }
                if st.expect.is_some() || !st.capture.is_empty() {
                    ctx.error(
                        w.referenced,
                        "a `wait:` step sends nothing, so it takes no `expect:` or `capture:`",
                    );
                }
                Action::Wait(w.value.0.min(crate::context::MAX_PAUSE))
            }
            (Some(_), Some(w)) => {
                ctx.error(
                    w.referenced,
                    "a step is a `request:` or a `wait:`, not both",
                );
                Action::Wait(w.value.0)
            }
            (None, None) => {
                ctx.error(
                    s.id.referenced,
                    format!("step {} has neither `request:` nor `wait:`", i + 1),
                );
                Action::Wait(std::time::Duration::ZERO)
            }
        };
        let expect = st
            .expect
            .as_ref()
            .map(|e| ctx.expect(e))
            .unwrap_or_default();
        let captures: Vec<CapturePlan> = st
            .capture
            .iter()
            .filter_map(|(name, spec)| ctx.capture(name, spec))
            .collect();
        // Captures become visible to the following steps only.
        for c in &captures {
            ctx.captures.insert(c.name.clone());
        }
        steps.push(StepPlan {
            name: match &st.name {
                Some(n) => format!("step {} ({n})", i + 1),
                None => format!("step {}", i + 1),
            },
            action,
            expect,
            captures,
        });
    }
    StepsPlan { steps }
}

impl StepsPlan {
    /// One request per step that sends (`context::budget`).
    pub fn requests(&self) -> crate::context::budget::Requests {
        let sends = self
            .steps
            .iter()
            .filter(|s| matches!(s.action, Action::Send(_)))
            .count();
        crate::context::budget::Requests::own(sends as u64)
    }
}
