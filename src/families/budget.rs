//! What each kind sends per credential: the most requests one check spends
//! of the suite's credential (`own`) and of the second tenant's (`second`).
//!
//! The runner reserves this much of the target's quota before the check
//! starts (waiting for the window when less is left), so a check is not cut
//! across a reset by accident; `tminus validate` adds it up. The figures are
//! maxima from the plan (steps, samples, probes and rounds counted from the
//! suite; side-effect counter reads included), and every shipped check is
//! held to its figure by `tests/quota.rs`, which compares it with what the
//! run's own book counted.
//!
//! Checks that exhaust the quota on purpose (`rate_limit.storm`, `recovery`,
//! `partition`) state what they reserve *before* the storm: nothing, since
//! they are sized from the advertised limit while they run (see
//! `rate_limit::exec`), and the block they leave is waited out by the next
//! check's reservation.

use super::{idempotency, rate_limit, steps, trace, webhook, CheckPlan};

/// Requests one check sends at most, per credential.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    /// Of the suite's credential, in the whole check.
    pub own: u64,
    /// Of the second tenant's.
    pub second: u64,
    /// Of the suite's credential, the most that must fall inside one window
    /// (what the runner reserves; a check of rounds reserves each round).
    pub window: u64,
}

impl Requests {
    const fn own(n: u64) -> Self {
        Requests {
            own: n,
            second: 0,
            window: n,
        }
    }
}

/// Reads of a side-effect counter around one judged send (before, after).
const COUNTER_READS: u64 = 2;

impl CheckPlan {
    /// The most requests this check sends per credential.
    pub fn requests(&self) -> Requests {
        match self {
            CheckPlan::Steps(p) => Requests::own(
                p.steps
                    .iter()
                    .filter(|s| matches!(s.action, steps::plan::Action::Send(_)))
                    .count() as u64,
            ),
            CheckPlan::Idempotency(p) => idempotency_requests(p),
            CheckPlan::RateLimit(p) => match p.as_ref() {
                rate_limit::plan::RateLimitPlan::Headers(h) => {
                    Requests::own(u64::from(h.samples.max(1)) * h.requests.len().max(1) as u64)
                }
                // Sized from the advertised limit while they run.
                _ => Requests::default(),
            },
            CheckPlan::Trace(p) => trace_requests(p),
            CheckPlan::Webhook(p) => match p.as_ref() {
                webhook::plan::WebhookPlan::Sender(s) => {
                    let counters = if s.effects.is_some() {
                        COUNTER_READS
                    } else {
                        0
                    };
                    let sends = match s.case {
                        webhook::plan::SenderCase::Burst => u64::from(s.count),
                        // Every hostile case sends a delivery and a control.
                        _ => 3,
                    };
                    Requests::own(sends + counters)
                }
                webhook::plan::WebhookPlan::Sink(s) => Requests::own(s.trigger.len() as u64),
            },
            // The client under certification talks to tminus's own mock
            // platform, never to the target.
            CheckPlan::Client(_) => Requests::default(),
        }
    }
}

fn idempotency_requests(p: &idempotency::plan::IdemPlan) -> Requests {
    use idempotency::plan::Mode as M;
    let c = COUNTER_READS;
    match &p.mode {
        M::Replay { .. } | M::DistinctKeys { .. } => Requests::own(2 + c),
        // first, changed body, and the changed body alone under a new key
        M::Mismatch { .. } => Requests::own(3 + c),
        // Each round (its n requests and the counter read after it) is
        // reserved on its own (`idempotency::exec`), so every round falls
        // inside one window; a round rate limited anyway is redone.
        M::Concurrent { n, rounds, .. } => {
            let round = *n as u64 + 1;
            let redone = u64::from(idempotency::exec::RATE_LIMIT_WAITS);
            Requests {
                own: 1 + round * (*rounds as u64 + redone),
                second: 0,
                window: round + 1,
            }
        }
        // the slow first, up to a retry every 100 ms within `retry_within`
        M::LostResponse { retry_within, .. } => {
            Requests::own(1 + (retry_within.as_millis() as u64 / 100).clamp(1, 50) + c)
        }
        M::Errors { .. } => Requests::own(3 + c),
        M::InFlight { .. } => Requests::own(3 + c),
        // no key, the keyed twin, and a probe of the rejection alone
        M::MissingKey { .. } => Requests::own(3 + c),
        M::KeyScope { .. } => Requests {
            own: 1 + c,
            second: 1,
            window: 1 + c,
        },
        M::KeySyntax { .. } => Requests::own(16 + c),
        M::EndpointScope { .. } => Requests::own(3 + 2 * c),
        M::Expiry { .. } => Requests::own(3 + c),
    }
}

fn trace_requests(p: &trace::plan::TracePlan) -> Requests {
    use trace::plan::TracePlan as T;
    match p {
        T::Present(p) => Requests::own(p.probes.len() as u64),
        T::Unique(u) => Requests::own(u.count),
        T::Propagated(_) | T::VersionDowngrade(_) => Requests::own(2),
        T::InvalidIgnored(p) => Requests::own(p.cases.len() as u64 + 1),
        T::RequestIdHygiene(_) => Requests::own(4),
        // the create, and polls of its status
        T::AsyncStatus(_) => Requests::own(6),
        T::Tracestate(_) => Requests::own(3),
    }
}
