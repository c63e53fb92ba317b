//! POLL-002, `polling.reconciles_lost_webhooks`: tminus runs a sink that
//! refuses every delivery, the suite's triggers subscribe it and make the
//! target emit, and once each event has had its `attempts` deliveries and
//! the platform has been quiet for `quiet`, the event list is walked: every
//! event given up must be in it under the id its deliveries carried.
//!
//! Only events seen on exactly `attempts` deliveries count as given up: one
//! still being retried (fewer, or more after the quiet) could still be in
//! the list because the platform has not dropped it yet, which would be a
//! pass for the wrong reason.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::plan::{ReconcilePlan, SINK_URL_VAR};
use super::walk::{id_text, walk_list, End};
use crate::context::{CheckContext, Scope};
use crate::families::common::{clip, describe, evidence, send};
use crate::outcome::{prop, Assertion, Evidence, Outcome};
use crate::sink::{Received, Sink};

/// How often the deliveries are counted while waiting for the platform to give up.
const TICK: Duration = Duration::from_millis(50);

pub async fn run(p: &ReconcilePlan, ctx: &CheckContext) -> Outcome {
    let sink = match Sink::start(vec![p.respond], None, None, &ctx.sink).await {
        Ok(s) => s,
        Err(e) => {
            return Outcome::error(format!(
                "cannot start the webhook sink on {}: {e}",
                ctx.sink.listen
            ))
        }
    };
    let out = judge(p, ctx, &sink).await;
    sink.shutdown().await;
    out
}

/// The deliveries per event id, in arrival order; an error names a
/// delivery whose body has no id at `event_id`.
fn by_event(p: &ReconcilePlan, got: &[Received]) -> Result<BTreeMap<String, usize>, String> {
    let mut out = BTreeMap::new();
    for (i, d) in got.iter().enumerate() {
        let id = serde_json::from_slice::<serde_json::Value>(&d.body)
            .ok()
            .and_then(|j| p.event_id.select(&j))
            .as_ref()
            .and_then(id_text);
        match id {
            Some(id) => *out.entry(id).or_insert(0) += 1,
            None => {
                return Err(format!(
                    "delivery {} has no event id at {} in its body (set `event_id`): {}",
                    i + 1,
                    p.event_id,
                    clip(&String::from_utf8_lossy(&d.body))
                ))
            }
        }
    }
    Ok(out)
}

async fn judge(p: &ReconcilePlan, ctx: &CheckContext, sink: &Sink) -> Outcome {
    let mut ev: Vec<Evidence> = Vec::new();
    let mut scope = Scope::new();
    scope.insert(SINK_URL_VAR.into(), sink.url().to_owned());
    for (i, req) in p.trigger.iter().enumerate() {
        let label = format!("trigger {}", i + 1);
        let r = ctx.target.render(req, &scope);
        let ex = match send(ctx, &r, &label).await {
            Ok(ex) => ex,
            Err(o) => return o.with_evidence(ev),
        };
        ev.push(evidence(&label, &ex));
        if !(200..300).contains(&ex.status()) {
            return Outcome::error(format!(
                "{label} answered {}: the target did not accept the trigger, so nothing can be judged",
                describe(&ex)
            ))
            .with_evidence(ev);
        }
    }
    ctx.note(format!(
        "refusing every delivery with {}; waiting up to {} for the first",
        p.respond,
        crate::fmt_duration(p.wait)
    ));
    if sink.wait_for(1, p.wait).await.is_empty() {
        return Outcome::error(format!(
            "no delivery reached the sink within {}: tminus listened on {} and gave the target `{}` as `${{var.{SINK_URL_VAR}}}`; without a lost delivery there is nothing to reconcile",
            crate::fmt_duration(p.wait),
            sink.listen_addr(),
            sink.url(),
        ))
        .with_evidence(ev);
    }
    // Every event seen must reach `attempts` deliveries, within the bound.
    let want = p.attempts as usize;
    let started = Instant::now();
    ctx.note(format!(
        "waiting up to {} for {want} deliveries of each event",
        crate::fmt_duration(p.give_up_within)
    ));
    loop {
        let counts = match by_event(p, &sink.received()) {
            Ok(c) => c,
            Err(e) => return Outcome::error(e).with_evidence(ev),
        };
        if counts.values().all(|n| *n >= want) || started.elapsed() >= p.give_up_within {
            break;
        }
        tokio::time::sleep(TICK).await;
    }
    tokio::time::sleep(p.quiet).await;
    let got = sink.received();
    let counts = match by_event(p, &got) {
        Ok(c) => c,
        Err(e) => return Outcome::error(e).with_evidence(ev),
    };
    if let Some(d) = got.first() {
        ev.push(Evidence {
            label: format!("delivery 1 (tminus answered {})", d.answered),
            request: format!("POST {}", sink.url()),
            status: Some(d.answered),
            request_id: None,
            elapsed_ms: None,
            detail: Some(String::from_utf8_lossy(&d.body).chars().take(400).collect()),
        });
    }
    let given_up: BTreeSet<&str> = counts
        .iter()
        .filter(|(_, n)| **n == want)
        .map(|(id, _)| id.as_str())
        .collect();
    let still: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n != want)
        .map(|(id, n)| format!("{id} ({n})"))
        .collect();
    let mut props = vec![
        prop("events", counts.len()),
        prop("given_up", given_up.len()),
        prop("deliveries", got.len()),
    ];
    let not_given_up = if still.is_empty() {
        String::new()
    } else {
        format!(
            "; not counted as given up, with a number of deliveries other than {want}: {}",
            still.join(", ")
        )
    };
    if given_up.is_empty() {
        return Outcome::judged(vec![Assertion::not_exercised(
            "retrievable",
            format!(
                "no event had exactly {want} refused deliveries within {} and none after {} of quiet{not_given_up}: the platform did not give up on any, so losing one after the last retry was not exercised",
                crate::fmt_duration(p.give_up_within),
                crate::fmt_duration(p.quiet)
            ),
        )])
        .with_evidence(ev)
        .with_properties(props);
    }
    ctx.note(format!(
        "{} event(s) given up after {want} refused deliveries; polling",
        given_up.len()
    ));
    let walk = match walk_list(ctx, &p.list, &scope, "poll", None, &mut ev).await {
        Ok(w) => w,
        Err(o) => return o.with_properties(props),
    };
    props.push(prop("poll_pages", walk.pages.len()));
    let ids = walk.ids();
    let missing: Vec<&str> = given_up
        .iter()
        .copied()
        .filter(|id| !ids.contains(id))
        .collect();
    let verdict = if missing.is_empty() {
        Assertion::pass(
            "retrievable",
            format!(
                "all {} event(s) refused on every one of {want} deliveries are in the polled list ({} item(s) on {} page(s)){not_given_up}",
                given_up.len(),
                walk.items(),
                walk.pages.len()
            ),
        )
    } else if walk.end != End::Done {
        // The part of the list not walked may hold them.
        Assertion::not_exercised(
            "retrievable",
            format!(
                "{} of {} given-up event(s) not found, but the poll did not reach the end of the list: {}",
                missing.len(),
                given_up.len(),
                walk.not_ended("poll").unwrap_or_default()
            ),
        )
    } else {
        Assertion::fail(
            "retrievable",
            format!(
                "{} of {} event(s) whose {want} deliveries were all refused are missing from the polled list ({} item(s) on {} page(s)): {}; they are lost for good",
                missing.len(),
                given_up.len(),
                walk.items(),
                walk.pages.len(),
                missing.join(", ")
            ),
            "every given-up event in the list",
            format!("{} missing", missing.len()),
        )
    };
    Outcome::judged(vec![verdict])
        .with_evidence(ev)
        .with_properties(props)
}
