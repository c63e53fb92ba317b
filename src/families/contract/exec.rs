//! Runs a planned `contract.*` check.

use super::plan::ContractPlan;
use crate::context::CheckContext;
use crate::outcome::Outcome;

pub async fn run(plan: &ContractPlan, ctx: &CheckContext) -> Outcome {
    match plan {
        ContractPlan::Deprecation(p) => super::deprecation::run(p, ctx).await,
    }
}
