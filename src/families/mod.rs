//! Check families, one module each, dispatched by an exhaustive match on the
//! planned kind. A family reads its plan and a `CheckContext` and returns an
//! `Outcome`; it never prints and never knows about reporters.

pub mod common;

pub mod client;
pub mod idempotency;
pub mod load;
pub mod rate_limit;
pub mod steps;
pub mod trace;
pub mod webhook;

use tokio::sync::mpsc::UnboundedSender;

pub use crate::outcome::{Evidence, Outcome, Verdict};

use crate::http::{Client, Target};
use crate::plan::CheckPlan;
use crate::redact::Redactor;

/// What a check may use while it runs.
#[derive(Clone)]
pub struct CheckContext {
    pub client: Client,
    pub target: Target,
    /// Progress notes ("waiting 3 s for Retry-After") shown live on the console.
    pub notes: UnboundedSender<String>,
    pub redactor: Redactor,
}

impl CheckContext {
    pub fn note(&self, msg: impl Into<String>) {
        let _ = self.notes.send(msg.into());
    }
}

pub async fn execute(plan: &CheckPlan, ctx: &CheckContext) -> Outcome {
    match plan {
        CheckPlan::Steps(p) => steps::exec::run(p, ctx).await,
        // family: idempotency
        CheckPlan::Idempotency(p) => idempotency::exec::run(p, ctx).await,

        // family: rate_limit
        CheckPlan::RateLimitHeaders(p) => rate_limit::exec::headers(p, ctx).await,
        CheckPlan::RateLimitStorm(p) => rate_limit::exec::storm(p, ctx).await,
        CheckPlan::RateLimitRecovery(p) => rate_limit::exec::recovery(p, ctx).await,
        CheckPlan::RateLimitPartition(p) => rate_limit::exec::partition(p, ctx).await,

        // family: trace
        CheckPlan::Trace(p) => trace::exec::run(p, ctx).await,
        // family: webhook
        CheckPlan::WebhookSender(p) => webhook::sender::run(p, ctx).await,
        CheckPlan::WebhookSink(p) => webhook::sink::run(p, ctx).await,
        // family: client
        CheckPlan::Client(p) => client::exec::run(p, ctx).await,
        // family: end
    }
}
