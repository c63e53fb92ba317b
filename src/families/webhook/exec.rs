//! The webhook family's execution: `sender` signs deliveries and sends them,
//! valid and hostile, to the target's receiver; `sink` runs a receiver and
//! judges the deliveries the target makes.

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Runs a planned `webhook.*` check.
pub async fn run(
    plan: &super::plan::WebhookPlan,
    ctx: &crate::families::CheckContext,
) -> crate::outcome::Outcome {
    match plan {
        super::plan::WebhookPlan::Sender(p) => super::sender::run(p, ctx).await,
        super::plan::WebhookPlan::Sink(p) => super::sink::run(p, ctx).await,
    }
}
