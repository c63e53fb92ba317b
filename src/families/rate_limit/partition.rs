//! `rate_limit.partition` (RL-004): tenant A at its limit (reached here,
//! or handed on by the check before: `handover.rs`), tenant B must still
//! be served, and A is probed again to prove it was limited all along.

use std::time::SystemTime;

use super::exec::{cool_down, exhaust, with_warning};
use super::fields;
use super::handover::{block_of, handed_block};
use crate::context::{CheckContext, Scope};
use crate::families::common::describe;
use crate::families::rate_limit::plan::PartitionPlan;
use crate::outcome::{prop, Assertion, Evidence, Outcome};

/// `rate_limit.partition` (RL-004).
pub async fn partition(p: &PartitionPlan, ctx: &CheckContext) -> Outcome {
    let Some(b_target) = ctx.target.as_second_tenant() else {
        return Outcome::skipped(
            "no second tenant: set target.second_tenant_headers to check per-key partitioning",
        );
    };
    let x = &p.exhaust;
    let a = ctx.target.render(&x.request, &Scope::new());
    let b = b_target.render(&x.request, &Scope::new());
    // Who reached tenant A's limit, when an earlier check handed it on.
    let mut handed: Option<String> = None;
    for attempt in 1..=3 {
        let given = match attempt {
            1 => match handed_block(ctx, &a, x.limited_status).await {
                Ok(g) => g,
                Err(o) => return o,
            },
            _ => None,
        };
        let lim = match given {
            Some((l, by)) => {
                handed = Some(by);
                l
            }
            None => match exhaust(ctx, &a, x, "tenant A").await {
                Ok(l) => l,
                Err(o) => return o,
            },
        };
        let hint = fields::retry_after(&lim.ex.response, SystemTime::now()).ok();
        let bex = match ctx.client.send(&b).await {
            Ok(ex) => ex,
            Err(e) => return Outcome::transport("tenant B", &e),
        };
        let mut evidence = vec![
            Evidence::from_exchange("tenant A limited", &lim.ex),
            Evidence::from_exchange("tenant B", &bex),
        ];
        if bex.status() == x.limited_status {
            ctx.exhaustion.clear();
            let w1 = cool_down(ctx, &a, x.limited_status, hint, x.cooldown_max).await;
            let w2 = cool_down(ctx, &b, x.limited_status, None, x.cooldown_max).await;
            return with_warning(
                Outcome::judged(vec![Assertion::fail(
                    "isolated",
                    format!(
                        "tenant B is limited because tenant A was: A got {} after {} requests, then B got {}",
                        describe(&lim.ex),
                        lim.sent,
                        describe(&bex)
                    ),
                    "tenant B unaffected by tenant A's quota",
                    describe(&bex),
                )])
                .with_evidence(evidence),
                w1.or(w2),
            );
        }
        // Confirm A is still limited, or B's success proves nothing.
        let again = match ctx.client.send(&a).await {
            Ok(ex) => ex,
            Err(e) => return Outcome::transport("tenant A again", &e),
        };
        evidence.push(Evidence::from_exchange("tenant A again", &again));
        if again.status() != x.limited_status && attempt < 3 {
            ctx.note("tenant A's window rolled over mid-check; trying again");
            continue;
        }
        // Still limited and needed by the next check: handed on as it is.
        let warn = if ctx.exhaustion.hand_on() && again.status() == x.limited_status {
            let mut b = block_of(ctx, &a, lim.ex.clone(), lim.sent, lim.served);
            if let Some(by) = &handed {
                b.by = by.clone();
            }
            ctx.exhaustion.leave(b);
            None
        } else {
            ctx.exhaustion.clear();
            cool_down(ctx, &a, x.limited_status, hint, x.cooldown_max).await
        };
        let props: Vec<_> = handed
            .iter()
            .map(|by| prop("limit_reached_by", by.clone()))
            .collect();
        if again.status() != x.limited_status {
            return with_warning(
                Outcome::error(format!(
                    "tenant A's limit kept resetting before tenant B could be probed (3 attempts); last: {}",
                    describe(&again)
                ))
                .with_evidence(evidence),
                warn,
            );
        }
        // B's answer shows isolation only if it is what A got while under
        // its limit: a 401 for B's credentials is not "served".
        let served_class = lim.served.map(|s| s / 100).unwrap_or(2);
        if bex.status() / 100 != served_class {
            return with_warning(
                Outcome::judged(vec![Assertion::not_exercised(
                    "isolated",
                    format!(
                        "tenant B got {}, not the {}xx tenant A was served before its limit{}: B's request is not served, so partitioning was not exercised (check target.second_tenant_headers)",
                        describe(&bex),
                        served_class,
                        lim.served.map(|s| format!(" ({s})")).unwrap_or_default()
                    ),
                )])
                .with_evidence(evidence)
                .with_properties(props),
                warn,
            );
        }
        return with_warning(
            Outcome::judged(vec![Assertion::pass(
                "isolated",
                format!(
                    "tenant A limited ({}, still at {}) while tenant B was served ({}){}",
                    describe(&lim.ex),
                    describe(&again),
                    describe(&bex),
                    handed
                        .as_ref()
                        .map(|by| format!("; A's limit as {by} reached it"))
                        .unwrap_or_default()
                ),
            )])
            .with_evidence(evidence)
            .with_properties(props),
            warn,
        );
    }
    unreachable!("the loop returns on its last attempt")
}
