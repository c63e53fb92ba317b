//! The polling family's execution: `walk` for POLL-001, `reconcile` for POLL-002.

/// Runs a planned `polling.*` check.
pub async fn run(
    plan: &super::plan::PollingPlan,
    ctx: &crate::context::CheckContext,
) -> crate::outcome::Outcome {
    match plan {
        super::plan::PollingPlan::CursorWalk(p) => super::walk::run(p, ctx).await,
        super::plan::PollingPlan::Reconcile(p) => super::reconcile::run(p, ctx).await,
    }
}
