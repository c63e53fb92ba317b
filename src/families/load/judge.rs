//! Judging one threshold of a burst: the measured value against the limit,
//! the chance band of a count (`chance.rs`), and for an open-arrival burst
//! whose pool bound the run, whether the verdict is the target's at all
//! (`pool.rs`): a breach that only a too-small pool explains is
//! inconclusive, never a latency FAIL.

use super::exec::Figures;
use super::plan::{LoadPlan, Metric, Threshold};
use super::pool::PoolRule;
use super::stats::KindStats;
use crate::chance::{percentile_band, rate_band};
use crate::outcome::{prop, PropValue};
use crate::outcome::{Outcome, Verdict};

/// Measures a threshold's metric; latencies in µs. `scheduled`: the slots
/// of the schedule (for `dropped`).
pub fn measure(
    t: &Threshold,
    k: &KindStats,
    elapsed: std::time::Duration,
    scheduled: f64,
) -> Option<f64> {
    let n = k.requests;
    let hist = |raw: bool| if raw { &k.raw } else { &k.corrected };
    match t.metric {
        Metric::Dropped => Some((1.0 - n as f64 / scheduled.max(1.0)).max(0.0)),
        _ if n == 0 => None,
        Metric::Percentile { q, raw } => Some(hist(raw).value_at_quantile(q / 100.0) as f64),
        Metric::Mean { raw } => Some(hist(raw).mean()),
        Metric::Max { raw } => Some(hist(raw).max() as f64),
        Metric::ErrorRate => Some(k.failed as f64 / n as f64),
        Metric::Rate429 => Some(k.r429 as f64 / n as f64),
        Metric::Throughput => Some(n as f64 / elapsed.as_secs_f64().max(1e-9)),
    }
}

fn show(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Percentile { .. } | Metric::Mean { .. } | Metric::Max { .. } => {
            format!("{:.1} ms", v / 1000.0)
        }
        Metric::ErrorRate | Metric::Rate429 | Metric::Dropped => format!("{:.2}%", v * 100.0),
        Metric::Throughput => format!("{v:.1}/s"),
    }
}

/// True for the metrics a pool too small to hold the rate can breach: the
/// corrected latencies (they carry the wait for a user), throughput and
/// the dropped share. Raw latencies and the error rates are the target's.
pub fn pool_sensitive(metric: Metric) -> bool {
    matches!(
        metric,
        Metric::Percentile { raw: false, .. }
            | Metric::Mean { raw: false }
            | Metric::Max { raw: false }
            | Metric::Throughput
            | Metric::Dropped
    )
}

/// What a breach on a pool-bound run says instead of FAIL.
pub fn pool_bound_message(rule: &PoolRule, plan: &LoadPlan, f: &Figures) -> String {
    let (peak, waited) = f
        .pool
        .as_ref()
        .map(|p| {
            (
                p.peak_in_use,
                p.counts.waited as f64 / f.overall.requests.max(1) as f64,
            )
        })
        .unwrap_or_default();
    format!(
        "inconclusive: the pool bound the run ({peak} of max_users {} in use, {:.1}% of slots waited for a user) and the target's own saturation is not shown (raw {:.1} ms while the pool was full, {:.1} ms under light load); the rate needed about {} users (rate × p99): raise max_users",
        plan.max_users,
        waited * 100.0,
        rule.bound_ms,
        rule.light_ms,
        rule.needed_users,
    )
}

/// The pool's properties on a result it may have decided.
pub fn pool_props(rule: &PoolRule) -> Vec<(String, PropValue)> {
    vec![
        prop("pool_bound", rule.bound),
        prop("target_saturated", rule.saturated),
        prop("needed_users", rule.needed_users),
    ]
}

/// Judges `t` on `f`; `rule`: the pool's verdict of an open-arrival burst.
pub fn judge(t: &Threshold, plan: &LoadPlan, f: &Figures, rule: Option<&PoolRule>) -> Outcome {
    let (k, scope) = match &t.scope {
        Some(name) => match plan.mix.iter().position(|m| &m.name == name) {
            Some(i) => (&f.kinds[i], name.as_str()),
            None => return Outcome::error(format!("no request kind `{name}` in the mix")),
        },
        None => (&f.overall, "in all"),
    };
    // Latency and throughput of answers that all failed say nothing about
    // the target's service: a 404 everywhere is fast. Not judged, never a pass.
    let succeeded = k
        .statuses
        .values()
        .sum::<u64>()
        .saturating_sub(k.failed + k.r429);
    let on_successes = !matches!(
        t.metric,
        Metric::ErrorRate | Metric::Rate429 | Metric::Dropped
    );
    if on_successes && k.requests > 0 && succeeded == 0 {
        return Outcome::error(format!(
            "`{}`: none of the {} {scope} requests succeeded ({}), so latency and throughput were not exercised",
            t.text,
            k.requests,
            k.statuses
                .iter()
                .map(|(s, n)| format!("{s}×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let Some(v) = measure(t, k, f.elapsed, f.scheduled) else {
        return Outcome::error(format!(
            "`{}`: no {scope} request completed, nothing to judge",
            t.text
        ));
    };
    let shown = show(t.metric, v);
    let limit = show(t.metric, t.limit);
    let which = match t.metric {
        Metric::Percentile { raw: false, .. }
        | Metric::Mean { raw: false }
        | Metric::Max { raw: false } => " (corrected for coordinated omission)",
        Metric::Percentile { raw: true, .. }
        | Metric::Mean { raw: true }
        | Metric::Max { raw: true } => " (raw)",
        _ => "",
    };
    let mut props = vec![
        prop("measured", PropValue::rounded(v, 3)),
        prop("measured_display", shown.clone()),
        prop("limit", t.limit),
        prop(
            "unit",
            match t.metric {
                Metric::ErrorRate | Metric::Rate429 | Metric::Dropped => "share",
                Metric::Throughput => "requests_per_s",
                _ => "us",
            },
        ),
        prop("requests", k.requests),
    ];
    // The zone of true shares where this run's verdict is chance (see
    // `chance`), and this run's share to compare with it: for a
    // percentile, the share of answers under the limit; for a rate, the
    // rate itself.
    let band = match t.metric {
        Metric::Percentile { q, raw } => {
            let h = if raw { &k.raw } else { &k.corrected };
            let under = h.count_between(0, (t.limit as u64).saturating_sub(1));
            percentile_band(q / 100.0, h.len()).map(|b| {
                (
                    b,
                    under as f64 / h.len().max(1) as f64,
                    h.len(),
                    "of answers under the limit",
                )
            })
        }
        Metric::ErrorRate | Metric::Rate429 => {
            rate_band(t.limit, k.requests).map(|b| (b, v, k.requests, "measured"))
        }
        _ => None,
    };
    let mut inconclusive = String::new();
    let mut conclusive = true;
    if let Some(((lo, hi), share, n, what)) = band {
        props.push(prop(
            "chance_band_low_pct",
            PropValue::rounded(lo * 100.0, 2),
        ));
        props.push(prop(
            "chance_band_high_pct",
            PropValue::rounded(hi * 100.0, 2),
        ));
        let inside = (lo..=hi).contains(&share);
        conclusive = !inside;
        if inside {
            inconclusive = format!(
                "; {:.2}% {what} is inside the chance band {:.2}%–{:.2}% for {n} requests, so another run may give the other verdict; send more requests to decide",
                share * 100.0,
                lo * 100.0,
                hi * 100.0,
            );
        }
    }
    if let Metric::Percentile { q, .. } = t.metric {
        props.push(prop(
            "raw_ms",
            PropValue::rounded(k.raw.value_at_quantile(q / 100.0) as f64 / 1000.0, 3),
        ));
        props.push(prop(
            "corrected_ms",
            PropValue::rounded(k.corrected.value_at_quantile(q / 100.0) as f64 / 1000.0, 3),
        ));
    }
    let holds = t.op.holds(v, t.limit);
    let pool_rule = rule.filter(|r| r.bound && pool_sensitive(t.metric));
    if let Some(r) = pool_rule {
        props.extend(pool_props(r));
    }
    // A breach the harness's pool explains is not the target's:
    // inconclusive (exit 4), with what the rate needed.
    if let Some(r) = pool_rule.filter(|r| r.inconclusive() && !holds) {
        props.push(prop("conclusive", false));
        return Outcome::inconclusive(format!(
            "{} measured {shown}{which} over {} requests ({scope}); {}",
            t.text,
            k.requests,
            pool_bound_message(r, plan, f)
        ))
        .with_properties(props);
    }
    if band.is_some() {
        props.push(prop("conclusive", conclusive));
    }
    // Inside the chance band the count could go either way on the next
    // run: neither a pass nor a fail (exit 4), whatever this run counted.
    if !conclusive {
        let verdict = if holds { "holds" } else { "breached" };
        return Outcome::inconclusive(format!(
            "inconclusive: {} measured {shown}{which} over {} requests ({scope}) ({verdict} on this run's count){inconclusive}",
            t.text, k.requests
        ))
        .with_properties(props);
    }
    let charged = match pool_rule {
        Some(r) if r.saturated => format!(
            "; every one of max_users {} was busy while slots waited, and the target's own latency rose from {:.1} ms to {:.1} ms on the full pool (saturation), so the wait is charged to it",
            plan.max_users, r.light_ms, r.bound_ms
        ),
        Some(_) => format!(
            "; the pool of max_users {} bound the run, and the threshold holds even with the wait for a user charged",
            plan.max_users
        ),
        None => String::new(),
    };
    let o = if holds {
        Outcome::pass(format!(
            "{}: {shown}{which} over {} requests ({scope}){charged}",
            t.text, k.requests
        ))
    } else {
        Outcome::fail(
            format!(
                "threshold breached: {} measured {shown}{which} over {} requests ({scope}){charged}",
                t.text, k.requests
            ),
            format!("{} {}", t.op.as_str(), limit),
            shown,
        )
    };
    debug_assert!(matches!(o.verdict, Verdict::Pass | Verdict::Fail));
    o.with_properties(props)
}
