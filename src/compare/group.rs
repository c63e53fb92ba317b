//! One group of a burst's comparison (all requests, or one request kind):
//! its rows, each change widened by the run-to-run noise (`noise.rs`, the
//! calibrated band of `calibrate.rs`) and judged by the thresholds on it.

use super::calibrate::Bands;
use super::read::BurstData;
use super::stats::{self, Empirical, Z};
use super::threshold::{Measure, Threshold, Verdict};
use super::{Group, Row, SHOWN_PERCENTILES};

/// How many times its own lateness shift a percentile can move by when
/// the machine, not the target, changed: in A/A pairs on a 2-core machine
/// with two CPU hogs during one run, the target's p95 moved by up to 3.6
/// times the generator's p95 lateness shift (issue 38); 4 leaves room.
pub const HARNESS_FACTOR: f64 = 4.0;
use crate::families::load::stats::KindStats;
use crate::families::load::summary::Distribution;

/// One side of a group: the burst and the kind's (or all requests') figures.
pub struct Side<'a> {
    pub burst: &'a BurstData,
    pub stats: &'a KindStats,
}

/// The rows of one group: the shown percentiles and those the thresholds
/// name, throughput, error and 429 rates; each widened by its noise and
/// judged by the thresholds on it.
pub fn group<'a>(
    id: &str,
    kind: Option<&String>,
    b: Side<'a>,
    r: Side<'a>,
    thresholds: &[Threshold],
    bands: &Bands,
) -> Group {
    let (bb, bk, rb, rk) = (b.burst, b.stats, r.burst, r.stats);
    let applies: Vec<&Threshold> = thresholds
        .iter()
        .filter(|t| t.scope.as_ref() == kind)
        .collect();
    let mut rows: Vec<Row> = Vec::new();
    // Corrected first (what the thresholds of a burst judge), then raw.
    for raw in [false, true] {
        let variant = |q: f64| {
            if raw {
                Measure::RawPercentile(q)
            } else {
                Measure::Percentile(q)
            }
        };
        let mut percentiles: Vec<f64> = SHOWN_PERCENTILES.to_vec();
        for t in &applies {
            if let Measure::Percentile(q) | Measure::RawPercentile(q) = t.measure {
                if t.measure == variant(q) && !percentiles.iter().any(|p| (p - q).abs() < 1e-12) {
                    percentiles.push(q);
                }
            }
        }
        percentiles.sort_by(f64::total_cmp);
        let hist = |k: &KindStats| Empirical::new(if raw { &k.raw } else { &k.corrected });
        let slices = |d: &'a BurstData| -> &'a [Empirical] {
            if raw {
                &d.slices.raw
            } else {
                &d.slices.corrected
            }
        };
        let (be, re) = (hist(bk), hist(rk));
        let (bs, rs) = (slices(bb), slices(rb));
        let ms = |e: &Empirical, q: f64| e.quantile(q) as f64 / 1000.0;
        for q in percentiles {
            let measure = variant(q);
            let mut notes = Vec::new();
            let mut var = 0.0;
            for (who, s) in [("baseline", bs), ("run", rs)] {
                match super::noise::wander(s, q) {
                    Some(w) => {
                        var += (Z * w.sigma).powi(2);
                        if w.sigma > 0.0 {
                            notes.push(format!("{who} wandered {}", w.describe(q)));
                        }
                    }
                    None if s.is_empty() => notes.push(format!("{who}: no interval log")),
                    None => {}
                }
            }
            let band = bands.get(id, kind, measure);
            if band > 0.0 {
                notes.push(format!(
                    "calibrated band ±{:.1}%",
                    (band.exp() - 1.0) * 100.0
                ));
            }
            let extra = (var + band * band).sqrt();
            let harness = harness(bk, rk, q);
            if let Some((lb, lr)) = harness {
                notes.push(format!("tminus's own lateness {lb:.3} → {lr:.3} ms"));
            }
            rows.push(Row {
                measure,
                baseline: ms(&be, q),
                run: ms(&re, q),
                change: stats::widen(&stats::percentile_ratio(&be, &re, q), extra, true),
                noise: extra,
                noise_notes: notes,
                harness,
                verdicts: Vec::new(),
            });
        }
    }
    let per_s = |k: &KindStats, d: &BurstData| k.requests as f64 / d.elapsed_s.max(1e-9);
    let share = |n: u64, k: &KindStats| n as f64 / k.requests.max(1) as f64;
    let band_row = |measure: Measure, ratio: bool, change, baseline, run| {
        let band = bands.get(id, kind, measure);
        Row {
            measure,
            baseline,
            run,
            change: stats::widen(&change, band, ratio),
            noise: band,
            noise_notes: if band > 0.0 {
                vec!["calibrated band".into()]
            } else {
                Vec::new()
            },
            harness: None,
            verdicts: Vec::new(),
        }
    };
    rows.push(band_row(
        Measure::Throughput,
        true,
        stats::rate_ratio((bk.requests, bb.elapsed_s), (rk.requests, rb.elapsed_s)),
        per_s(bk, bb),
        per_s(rk, rb),
    ));
    for (measure, count) in [
        (
            Measure::ErrorRate,
            (|k: &KindStats| k.failed) as fn(&KindStats) -> u64,
        ),
        (Measure::Rate429, |k: &KindStats| k.r429),
    ] {
        rows.push(band_row(
            measure,
            false,
            stats::share_increase((count(bk), bk.requests), (count(rk), rk.requests)),
            share(count(bk), bk),
            share(count(rk), rk),
        ));
    }
    let unjudgeable = bb.cancelled || rb.cancelled;
    for t in applies {
        if let Some(row) = rows.iter_mut().find(|r| r.measure == t.measure) {
            let verdict = if unjudgeable {
                Verdict::Inconclusive("a cancelled burst's figures are partial".into())
            } else {
                explained(t.judge(row.baseline, row.run, &row.change), row)
            };
            row.verdicts.push((t.text.clone(), verdict));
        }
    }
    let label = kind.map_or("all requests".to_owned(), |k| k.clone());
    Group {
        kind: kind.cloned(),
        baseline_requests: bk.requests,
        run_requests: rk.requests,
        rows,
        baseline_curve: Distribution::new(label.clone(), bk),
        run_curve: Distribution::new(label, rk),
    }
}

/// The generator's own lateness at `q` in the two runs (ms), when both
/// have enough answers for it: how late tminus itself was, the machine's
/// share of any latency change.
fn harness(b: &KindStats, r: &KindStats, q: f64) -> Option<(f64, f64)> {
    let (lb, lr) = (Empirical::new(&b.lateness), Empirical::new(&r.lateness));
    let needed = stats::answers_needed(q);
    if lb.len() < needed || lr.len() < needed {
        return None;
    }
    Some((
        lb.quantile(q) as f64 / 1000.0,
        lr.quantile(q) as f64 / 1000.0,
    ))
}

/// What tminus's own lateness says about a verdict (both symmetric: the
/// same sizes either way round). A change smaller than twice the larger of
/// the two runs' lateness at the same percentile is below the harness's
/// resolution, a floor like `min` ("below the floor"): tminus's own
/// scheduling could have added it (a delay can strike the send and again
/// the read of the answer). A regression or an improvement that
/// [`HARNESS_FACTOR`] times the shift of that lateness could explain is
/// inconclusive: the machine changed between the runs, maybe not the
/// target.
fn explained(v: Verdict, row: &Row) -> Verdict {
    let Some((lb, lr)) = row.harness else {
        return v;
    };
    let change = (row.run - row.baseline).abs();
    if matches!(v, Verdict::NotCompared(_) | Verdict::BelowFloor) {
        return v;
    }
    if change < 2.0 * lb.max(lr) {
        return Verdict::BelowFloor;
    }
    if matches!(v, Verdict::Regression | Verdict::Improvement)
        && change <= HARNESS_FACTOR * (lr - lb).abs()
    {
        return Verdict::Inconclusive(format!(
            "tminus's own lateness at {} moved from {lb:.3} ms to {lr:.3} ms: the machine changed between the runs and could explain a change of {change:.3} ms (×{HARNESS_FACTOR} its shift); run both on a quiet machine",
            row.measure.label(),
        ));
    }
    v
}
