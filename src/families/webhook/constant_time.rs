//! WH-013, `webhook.constant_time_compare`: a timing probe of the
//! receiver's signature comparison. tminus sends `samples` forged
//! deliveries in pairs, one request at a time (so queueing never mixes the
//! groups): in each pair, one signature shares no leading character with
//! the valid one and one shares all but the last, in random order, with the
//! same id, timestamp and body (a fresh delivery per pair keeps the
//! timestamp within tolerance). The decision rule is
//! `compare_timing::prefix_rule`.
//!
//! A plain `==` on 64 characters costs nanoseconds and is not visible over
//! a network; the probe bounds leaks of tens of microseconds and more (a
//! comparison that does work per matching character). Code review for a
//! constant-time compare is the real check.

use std::collections::{BTreeMap, BTreeSet};

use rand::Rng;

use super::compare_timing::{prefix_rule, Interval, PrefixVerdict};
use super::exec::unix_now;
use super::sender::Run;
use crate::families::common::describe;
use crate::outcome::{prop, Assertion, Evidence, Outcome, PropValue, Verdict};
use crate::signing::prefix_forgeries;

/// The property this kind judges, as `spec::KINDS` declares it.
pub const CONSTANT_TIME: &str = "constant_time";

/// How many unanswered requests end the probe early (besides the share
/// `compare_timing::MIN_ANSWERED` requires).
const MAX_TRANSPORT_ERRORS: usize = 50;

/// The two groups of forgeries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    /// Shares no leading character with the valid signature.
    Far,
    /// Shares all but the last significant character.
    Near,
}

impl Group {
    fn label(self) -> &'static str {
        match self {
            Group::Far => "forged signature sharing no prefix",
            Group::Near => "forged signature sharing all but the last character",
        }
    }
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

fn interval_text(i: &Interval) -> String {
    format!(
        "median difference {:+.1} µs, 99.9 % interval [{:+.1}, {:+.1}] µs over {} pairs",
        us(i.median),
        us(i.lo),
        us(i.hi),
        i.pairs
    )
}

pub(super) async fn run(r: &mut Run<'_>) -> Outcome {
    let p = r.p;
    let s = &p.scheme;
    let pairs = (p.samples / 2) as usize;
    let before = match r.count("effects before").await {
        Ok(b) => b,
        Err(o) => return o,
    };
    r.ctx.note(format!(
        "timing {} forged deliveries, one at a time",
        pairs * 2
    ));
    let mut rng = rand::rng();
    let mut diffs = Vec::with_capacity(pairs);
    let mut statuses: BTreeMap<(Group, u16), usize> = BTreeMap::new();
    let mut errors = 0usize;
    let mut first_error = None;
    let mut seen: BTreeSet<Group> = BTreeSet::new();
    let mut unexpected = None;
    for _ in 0..pairs {
        let d = r.delivery(unix_now());
        let (far, near) = prefix_forgeries(s, &p.key.0, &d);
        let mut order = [(Group::Far, far), (Group::Near, near)];
        if rng.random_bool(0.5) {
            order.swap(0, 1);
        }
        let mut took = [None, None];
        for (group, digest) in order {
            let req = r.with_signature(r.request(&d, None), s.signature_value(&d, &[digest]));
            match r.ctx.client.send(&req).await {
                Ok(ex) => {
                    let st = ex.status();
                    *statuses.entry((group, st)).or_default() += 1;
                    if seen.insert(group) {
                        r.evidence.push(Evidence::from_exchange(group.label(), &ex));
                    }
                    if !p.reject.matches(st) {
                        unexpected = Some((group, describe(&ex), st));
                        break;
                    }
                    took[group as usize] = Some(ex.elapsed);
                }
                Err(e) => {
                    errors += 1;
                    if first_error.is_none() {
                        r.evidence.push(Evidence::from_transport(group.label(), &e));
                        first_error = Some(e.to_string());
                    }
                }
            }
        }
        if unexpected.is_some() || errors > MAX_TRANSPORT_ERRORS {
            break;
        }
        if let [Some(f), Some(n)] = took {
            let diff = n.as_nanos() as i128 - f.as_nanos() as i128;
            diffs.push(diff.clamp(i64::MIN as i128, i64::MAX as i128) as i64);
        }
    }
    let shown = |statuses: &BTreeMap<(Group, u16), usize>, g: Group| {
        statuses
            .iter()
            .filter(|((gr, _), _)| *gr == g)
            .map(|((_, st), n)| format!("{n} × {st}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut props = vec![
        prop("pairs_planned", pairs),
        prop("pairs_answered", diffs.len()),
        prop(
            "floor_us",
            PropValue::rounded(p.floor.as_secs_f64() * 1e6, 1),
        ),
    ];
    let floor = crate::fmt_duration(p.floor);
    let verdict = prefix_rule(&diffs, pairs, p.floor);
    let constant_time = if let Some((group, what, st)) = unexpected {
        let why = if st < 300 {
            format!("the receiver accepted a forged signature ({}: {what}): that is webhook.rejects_forged's failure; timing says nothing about a receiver that does not reject", group.label())
        } else {
            format!(
                "the receiver answered a forged signature {what} ({}), not {}: timing is only compared between rejections",
                group.label(),
                p.reject
            )
        };
        Assertion::inconclusive(CONSTANT_TIME, why)
    } else {
        let far_st: Vec<u16> = statuses
            .keys()
            .filter(|(g, _)| *g == Group::Far)
            .map(|(_, st)| *st)
            .collect();
        let near_st: Vec<u16> = statuses
            .keys()
            .filter(|(g, _)| *g == Group::Near)
            .map(|(_, st)| *st)
            .collect();
        if far_st != near_st || far_st.len() > 1 {
            Assertion::inconclusive(
                CONSTANT_TIME,
                format!(
                    "the two groups were not rejected with one consistent status (no prefix: {}; all but the last character: {}): a receiver whose answer depends on the forgery is not timed",
                    shown(&statuses, Group::Far),
                    shown(&statuses, Group::Near)
                ),
            )
        } else {
            if let PrefixVerdict::Leak(i) | PrefixVerdict::NoLeak(i) | PrefixVerdict::Undecided(i) =
                verdict
            {
                props.push(prop("median_diff_us", PropValue::rounded(us(i.median), 1)));
                props.push(prop("ci_lo_us", PropValue::rounded(us(i.lo), 1)));
                props.push(prop("ci_hi_us", PropValue::rounded(us(i.hi), 1)));
            }
            match verdict {
                PrefixVerdict::Leak(i) => Assertion::fail(
                    CONSTANT_TIME,
                    format!(
                        "signatures sharing all but the last character with the valid one were rejected more slowly than ones sharing no prefix: {}, above the {floor} floor; the comparison exits early and does work per matching character: compare with a constant-time function (hmac verify, subtle, crypto.timingSafeEqual, hmac.compare_digest)",
                        interval_text(&i)
                    ),
                    format!("difference within ±{floor}"),
                    format!("{:+.1} µs (interval [{:+.1}, {:+.1}])", us(i.median), us(i.lo), us(i.hi)),
                ),
                PrefixVerdict::NoLeak(i) => Assertion::pass(
                    CONSTANT_TIME,
                    format!(
                        "no difference larger than {floor} detected over {} samples ({}); a black-box probe bounds a leak, it cannot prove a constant-time compare",
                        i.pairs * 2,
                        interval_text(&i)
                    ),
                ),
                PrefixVerdict::Undecided(i) => Assertion::inconclusive(
                    CONSTANT_TIME,
                    format!(
                        "the timing was too noisy to decide against the {floor} floor: {}; run on a quieter machine, closer to the receiver, or with more samples",
                        interval_text(&i)
                    ),
                ),
                PrefixVerdict::TooFew { answered, needed } => Assertion::inconclusive(
                    CONSTANT_TIME,
                    format!(
                        "only {answered} of {pairs} pairs were answered (at least {needed} needed){}",
                        first_error
                            .as_ref()
                            .map(|e| format!("; first error: {e}"))
                            .unwrap_or_default()
                    ),
                ),
            }
        }
    };
    let side_effect = match r.no_side_effect(before, "forged deliveries", &[]).await {
        Ok(a) => a,
        Err(o) => return o,
    };
    // Timing rejections shows something only when the receiver tells good
    // from bad: one valid control delivery, sent last (after the side-effect
    // count), must be accepted. A receiver that answers 404 everywhere
    // rejects both groups alike, in the same time, and passed without it.
    let constant_time = if matches!(constant_time.verdict, Verdict::Pass | Verdict::Fail) {
        let control = r.request(&r.delivery(unix_now()), None);
        let label = "valid control delivery";
        match r.ctx.client.send(&control).await {
            Ok(ex) if r.p.accept.matches(ex.status()) => constant_time,
            Ok(ex) => {
                r.evidence.push(Evidence::from_exchange(label, &ex));
                Assertion::not_exercised(
                    CONSTANT_TIME,
                    format!(
                        "the receiver refused a valid control delivery too ({}), so timing its rejections shows nothing about how it compares signatures: check `receiver:` and the secret",
                        describe(&ex)
                    ),
                )
            }
            Err(e) => {
                r.evidence.push(Evidence::from_transport(label, &e));
                Assertion::not_exercised(
                    CONSTANT_TIME,
                    format!("the valid control delivery was not answered ({e}), so the rejections timed show nothing about how the receiver compares signatures"),
                )
            }
        }
    } else {
        constant_time
    };
    Outcome::judged(vec![constant_time, side_effect])
        .with_evidence(std::mem::take(&mut r.evidence))
        .with_properties(props)
}
