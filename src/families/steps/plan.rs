//! Planning `kind: steps`: each step's request, expectations and captures,
//! with captures visible only to the steps after the one that makes them.

use super::spec::{StepsCheckSpec, StepsSpec};
use crate::plan::{CapturePlan, ExpectPlan, PlanCtx, RequestPlan};

#[derive(Debug, Clone)]
pub struct StepsPlan {
    pub steps: Vec<StepPlan>,
}

#[derive(Debug, Clone)]
pub struct StepPlan {
    pub name: String,
    pub request: RequestPlan,
    pub expect: ExpectPlan,
    pub captures: Vec<CapturePlan>,
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
        let request = ctx.request(&st.request, s.id.referenced);
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
            request,
            expect,
            captures,
        });
    }
    StepsPlan { steps }
}
