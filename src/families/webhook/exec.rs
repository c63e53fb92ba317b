//! The webhook family's execution: `sender` signs deliveries and sends them,
//! valid and hostile, to the target's receiver; `sink` runs a receiver and
//! judges the deliveries the target makes.

/// The clock `sender` and `sink` read (it lives in `model`).
pub use crate::model::time::unix_now;

/// Runs a planned `webhook.*` check.
pub async fn run(
    plan: &super::plan::WebhookPlan,
    ctx: &crate::context::CheckContext,
) -> crate::outcome::Outcome {
    match plan {
        super::plan::WebhookPlan::Sender(p) => super::sender::run(p, ctx).await,
        super::plan::WebhookPlan::Sink(p) => super::sink::run(p, ctx).await,
    }
}
