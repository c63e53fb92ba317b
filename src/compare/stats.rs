//! How sure a comparison of two bursts is: a 95 % interval for every change
//! `tminus compare` reports, so that a verdict the noise of two finite runs
//! could explain is never a pass and never a fail.
//!
//! - **Percentiles** (p50, p95, p99 of the corrected latency): a bootstrap of
//!   the ratio run / baseline over the two HDR histograms. Each resample
//!   draws, for each histogram, as many values with replacement as it
//!   recorded and takes the percentile of the draw. Only the resample's
//!   percentile matters, and the k-th smallest of n draws from a
//!   distribution F is F⁻¹(U₍ₖ₎), with U₍ₖ₎ ~ Beta(k, n + 1 − k): so each
//!   resample draws that one Beta variate and reads the histogram's value at
//!   it. That is the same bootstrap distribution as drawing all n values, at
//!   a cost independent of n (no subsampling of large bursts is needed, and
//!   none changes the interval). [`RESAMPLES`] resamples; each histogram
//!   draws from its own stream, seeded from the fixed [`SEED`] and its own
//!   content: the same two folders always give the same interval, and the
//!   same two folders in the other order give exactly its reciprocal (a
//!   verdict cannot flip with the order of the arguments).
//! - **Throughput**: the ratio of two counts over their durations, each
//!   count taken as Poisson (a paced burst varies less, so the interval is
//!   wider than it needs to be, never narrower).
//! - **Error and 429 rates**: the difference of two binomial shares,
//!   Newcombe's hybrid score interval (from the two Wilson intervals), which
//!   keeps its coverage at 0 failures where a normal approximation collapses
//!   to a zero-width interval.
//!
//! What these intervals cover: the sampling noise of the two runs' requests,
//! taken as independent. Drift between two runs (the machine, the network,
//! the target's caches) is added by [`widen`] from what `noise.rs` measures
//! across each run's time slices and from a calibrated band
//! (`calibrate.rs`).

use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Bootstrap resamples per percentile comparison.
pub const RESAMPLES: usize = 2000;
/// The bootstrap's seed: compare's output is reproducible.
pub const SEED: u64 = 27;
/// Two-sided confidence of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// The standard normal quantile of 97.5 % (the two-sided 95 % interval).
pub const Z: f64 = 1.959_963_984_540_054;
/// Answers each run must have beyond a percentile for it to be compared:
/// p99 needs 500 answers, p95 100, p50 10. With fewer, the percentile is
/// one of the last few values and the bootstrap cannot say how it varies.
pub const MIN_BEYOND: f64 = 5.0;

/// A measured change and its interval (ratio or difference, see the caller).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// A change with its interval, or why it cannot be given one.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Known(Estimate),
    Unknown(String),
}

/// A histogram's recorded values in order with their cumulative counts,
/// for reading the value at any rank.
pub struct Empirical {
    values: Vec<u64>,
    cumulative: Vec<u64>,
}

impl Empirical {
    pub fn new(h: &Histogram<u64>) -> Self {
        let mut values = Vec::new();
        let mut cumulative = Vec::new();
        let mut total = 0u64;
        for v in h.iter_recorded() {
            total = total.saturating_add(v.count_at_value());
            values.push(v.value_iterated_to());
            cumulative.push(total);
        }
        Empirical { values, cumulative }
    }

    pub fn len(&self) -> u64 {
        self.cumulative.last().copied().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of rank `r` (1-based, clamped into 1..=len); 0 when empty.
    pub(crate) fn at_rank(&self, r: u64) -> u64 {
        let r = r.clamp(1, self.len().max(1));
        let i = self.cumulative.partition_point(|&c| c < r);
        self.values
            .get(i.min(self.values.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    }

    /// The percentile `q` (0..1) as the burst's summary reads it: the value
    /// of rank ⌈q·n⌉.
    pub fn quantile(&self, q: f64) -> u64 {
        self.at_rank(rank(q, self.len()))
    }

    /// A histogram made of `parts` added up (the time slices of a block).
    pub fn merged(parts: &[&Empirical]) -> Empirical {
        let mut counts: std::collections::BTreeMap<u64, u64> = Default::default();
        for p in parts {
            let mut before = 0u64;
            for (v, c) in p.values.iter().zip(&p.cumulative) {
                *counts.entry(*v).or_default() += c - before;
                before = *c;
            }
        }
        let mut total = 0u64;
        let (values, cumulative) = counts
            .into_iter()
            .map(|(v, c)| {
                total = total.saturating_add(c);
                (v, total)
            })
            .unzip();
        Empirical { values, cumulative }
    }

    /// A hash of the content and of `q` (FNV-1a: stable across builds),
    /// the seed of this histogram's bootstrap stream.
    fn fingerprint(&self, q: f64) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |x: u64| {
            for b in x.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        eat(q.to_bits());
        for (v, c) in self.values.iter().zip(&self.cumulative) {
            eat(*v);
            eat(*c);
        }
        h
    }

    /// The percentile `q` of one bootstrap resample (see the module doc).
    pub(crate) fn resampled_quantile(&self, q: f64, rng: &mut StdRng) -> u64 {
        let n = self.len();
        let k = rank(q, n);
        let u = beta(rng, k as f64, (n + 1 - k) as f64);
        self.at_rank((u * n as f64).ceil() as u64)
    }
}

/// ⌈q·n⌉ within 1..=n.
pub(crate) fn rank(q: f64, n: u64) -> u64 {
    ((q * n as f64).ceil() as u64).clamp(1, n.max(1))
}

/// Answers a run needs for percentile `q` to be compared.
pub fn answers_needed(q: f64) -> u64 {
    (MIN_BEYOND / (1.0 - q).max(1e-9)).ceil() as u64
}

/// run / baseline of percentile `q` (0..1) with its bootstrap interval.
pub fn percentile_ratio(base: &Empirical, run: &Empirical, q: f64) -> Change {
    let needed = answers_needed(q);
    for (name, e) in [("baseline", base), ("run", run)] {
        if e.len() < needed {
            return Change::Unknown(format!(
                "too few answers: the {name} has {}, p{} needs at least {needed} (so that {MIN_BEYOND} lie beyond it)",
                e.len(),
                percent(q)
            ));
        }
    }
    // One stream per histogram, from its content: swapping the two folders
    // swaps the streams with them, so every log ratio changes sign exactly.
    // Two identical histograms get two streams all the same.
    let (hb, mut hr) = (base.fingerprint(q), run.fingerprint(q));
    if hr == hb {
        hr = hr.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15;
    }
    let mut rng_b = StdRng::seed_from_u64(SEED ^ hb);
    let mut rng_r = StdRng::seed_from_u64(SEED ^ hr);
    let ln = |v: u64| (v.max(1) as f64).ln();
    let mut logs: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let b = base.resampled_quantile(q, &mut rng_b);
            let r = run.resampled_quantile(q, &mut rng_r);
            ln(r) - ln(b)
        })
        .collect();
    logs.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    // lo + hi = RESAMPLES - 1: the interval of the other order mirrors this one.
    let lo = ((tail * RESAMPLES as f64).floor() as usize).min(RESAMPLES / 2 - 1);
    let hi = RESAMPLES - 1 - lo;
    let point = ln(run.quantile(q)) - ln(base.quantile(q));
    Change::Known(Estimate {
        value: point.exp(),
        low: logs[lo].min(point).exp(),
        high: logs[hi].max(point).exp(),
    })
}

/// An interval widened by run-to-run noise: `extra` is the half-width to
/// add in quadrature, on the log scale for ratios (percentiles,
/// throughput) and as is for differences (rates). Each side of the
/// interval keeps its own width before: a stationary run (`extra` 0) is
/// left as it was.
pub fn widen(change: &Change, extra: f64, ratio: bool) -> Change {
    let Change::Known(e) = change else {
        return change.clone();
    };
    if extra <= 0.0 || !extra.is_finite() {
        return change.clone();
    }
    type Map = fn(f64) -> f64;
    let (to, from): (Map, Map) = if ratio {
        (|x: f64| x.max(1e-12).ln(), f64::exp)
    } else {
        (|x| x, |x| x)
    };
    let (v, l, h) = (to(e.value), to(e.low), to(e.high));
    let grow = |w: f64| (w.max(0.0).powi(2) + extra * extra).sqrt();
    Change::Known(Estimate {
        value: e.value,
        low: from(v - grow(v - l)),
        high: from(v + grow(h - v)),
    })
}

/// `q` as a percentile name: 0.95 → `95`, 0.999 → `99.9`.
pub fn percent(q: f64) -> String {
    let p = (q * 1e6).round() / 1e4;
    format!("{p}")
}

/// run / baseline of a rate (`count` over `seconds`), each count Poisson.
pub fn rate_ratio(base: (u64, f64), run: (u64, f64)) -> Change {
    let ((bc, bs), (rc, rs)) = (base, run);
    // Durations that are not positive numbers (NaN included) compare nothing.
    let positive = |s: f64| s.is_finite() && s > 0.0;
    if bc == 0 || rc == 0 || !positive(bs) || !positive(rs) {
        return Change::Unknown("no request was answered in one of the bursts".into());
    }
    let ratio = (rc as f64 / rs) / (bc as f64 / bs);
    let se = (1.0 / rc as f64 + 1.0 / bc as f64).sqrt();
    Change::Known(Estimate {
        value: ratio,
        low: ratio * (-Z * se).exp(),
        high: ratio * (Z * se).exp(),
    })
}

/// Wilson's interval of the share `k / n` (n > 0).
fn wilson(k: u64, n: u64) -> (f64, f64, f64) {
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    (p, (centre - half).max(0.0), (centre + half).min(1.0))
}

/// run − baseline of a share (`k` of `n`), Newcombe's hybrid interval.
pub fn share_increase(base: (u64, u64), run: (u64, u64)) -> Change {
    if base.1 == 0 || run.1 == 0 {
        return Change::Unknown("one of the bursts sent no request".into());
    }
    let (p1, l1, u1) = wilson(base.0, base.1);
    let (p2, l2, u2) = wilson(run.0, run.1);
    let d = p2 - p1;
    Change::Known(Estimate {
        value: d,
        low: d - ((p2 - l2).powi(2) + (u1 - p1).powi(2)).sqrt(),
        high: d + ((u2 - p2).powi(2) + (p1 - l1).powi(2)).sqrt(),
    })
}

/// A standard normal variate (Box–Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // in (0, 1]: ln is finite
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A Gamma(a, 1) variate for a ≥ 1 (Marsaglia and Tsang, 2000).
fn gamma(rng: &mut StdRng, a: f64) -> f64 {
    let d = a - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    // Accepts about 98 % of tries for any a ≥ 1; bounded all the same.
    for _ in 0..1000 {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u: f64 = 1.0 - rng.random::<f64>();
        if u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
    d
}

/// A Beta(a, b) variate for a, b ≥ 1.
fn beta(rng: &mut StdRng, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    let y = gamma(rng, b);
    x / (x + y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::load::stats::new_hist;

    /// A latency histogram of `n` draws, lognormal around `median_us`
    /// (a long right tail, as real latencies have).
    pub fn lognormal(rng: &mut StdRng, n: usize, median_us: f64) -> Histogram<u64> {
        let mut h = new_hist();
        for _ in 0..n {
            let v = median_us * (0.5 * normal(rng)).exp();
            h.record(v.round().max(1.0) as u64).unwrap();
        }
        h
    }

    fn known(c: Change) -> Estimate {
        match c {
            Change::Known(e) => e,
            Change::Unknown(why) => panic!("not compared: {why}"),
        }
    }

    #[test]
    fn identical_histograms_give_an_interval_around_one() {
        let mut rng = StdRng::seed_from_u64(1);
        let h = Empirical::new(&lognormal(&mut rng, 5_000, 20_000.0));
        for q in [0.5, 0.95, 0.99] {
            let e = known(percentile_ratio(&h, &h, q));
            assert_eq!(e.value, 1.0);
            assert!(e.low < 1.0 && e.high > 1.0, "p{q}: {e:?}");
            assert!(e.low > 0.85 && e.high < 1.15, "p{q}: {e:?}");
        }
    }

    #[test]
    fn a_threefold_shift_lies_beyond_ten_percent() {
        let mut rng = StdRng::seed_from_u64(2);
        let base = Empirical::new(&lognormal(&mut rng, 2_000, 20_000.0));
        let run = Empirical::new(&lognormal(&mut rng, 2_000, 60_000.0));
        for q in [0.5, 0.95, 0.99] {
            let e = known(percentile_ratio(&base, &run, q));
            assert!(e.low > 1.1, "p{q}: {e:?}");
            assert!((e.value - 3.0).abs() < 0.6, "p{q}: {e:?}");
        }
    }

    #[test]
    fn the_same_folders_give_the_same_interval() {
        let mut rng = StdRng::seed_from_u64(3);
        let base = Empirical::new(&lognormal(&mut rng, 800, 20_000.0));
        let run = Empirical::new(&lognormal(&mut rng, 800, 21_000.0));
        assert_eq!(
            percentile_ratio(&base, &run, 0.95),
            percentile_ratio(&base, &run, 0.95)
        );
    }

    #[test]
    fn the_other_order_gives_the_reciprocal_interval() {
        let mut rng = StdRng::seed_from_u64(7);
        let a = Empirical::new(&lognormal(&mut rng, 900, 20_000.0));
        let b = Empirical::new(&lognormal(&mut rng, 1_100, 23_000.0));
        for q in [0.5, 0.95, 0.99] {
            let (one, other) = (
                known(percentile_ratio(&a, &b, q)),
                known(percentile_ratio(&b, &a, q)),
            );
            let close = |x: f64, y: f64| (x.ln() + y.ln()).abs() < 1e-12;
            assert!(close(one.value, other.value), "p{q}: {one:?} {other:?}");
            assert!(
                close(one.low, other.high) && close(one.high, other.low),
                "p{q}: {one:?} {other:?}"
            );
            let (w1, w2) = (
                widen(&Change::Known(one), 0.2, true),
                widen(&Change::Known(other), 0.2, true),
            );
            let (w1, w2) = (known(w1), known(w2));
            assert!(
                close(w1.low, w2.high) && close(w1.high, w2.low),
                "{w1:?} {w2:?}"
            );
            assert!(w1.low < one.low && w1.high > one.high);
        }
        // No noise: the interval is left as it was.
        let e = known(percentile_ratio(&a, &b, 0.95));
        assert_eq!(widen(&Change::Known(e), 0.0, true), Change::Known(e));
    }

    #[test]
    fn too_few_answers_are_not_compared() {
        let mut rng = StdRng::seed_from_u64(4);
        let small = Empirical::new(&lognormal(&mut rng, 50, 20_000.0));
        let big = Empirical::new(&lognormal(&mut rng, 5_000, 20_000.0));
        let Change::Unknown(why) = percentile_ratio(&big, &small, 0.99) else {
            panic!("50 answers compared at p99")
        };
        assert!(
            why.contains("the run has 50, p99 needs at least 500"),
            "{why}"
        );
        // ... and a threshold on it is inconclusive, never a pass or a fail.
        let t = super::super::threshold::parse("p99_regression < 20%").unwrap();
        assert!(matches!(
            t.judge(20.0, 20.0, &percentile_ratio(&big, &small, 0.99)),
            super::super::threshold::Verdict::NotCompared(_)
        ));
        assert_eq!(answers_needed(0.95), 100);
        assert!(matches!(
            percentile_ratio(&Empirical::new(&new_hist()), &big, 0.5),
            Change::Unknown(_)
        ));
    }

    #[test]
    fn the_resampled_percentile_follows_its_order_statistic() {
        // Values 1..=100 once each: the 50th of 100 resampled values is the
        // value at rank ⌈100·U⌉, U ~ Beta(50, 51): a mean of about 50 and a
        // spread of about 5.
        let mut h = new_hist();
        for v in 1..=100u64 {
            h.record(v).unwrap();
        }
        let e = Empirical::new(&h);
        assert_eq!(e.quantile(0.5), 50);
        assert_eq!(e.quantile(0.95), 95);
        assert_eq!(e.quantile(1.0), 100);
        let mut rng = StdRng::seed_from_u64(5);
        let draws: Vec<f64> = (0..4_000)
            .map(|_| e.resampled_quantile(0.5, &mut rng) as f64)
            .collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let sd =
            (draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / draws.len() as f64).sqrt();
        assert!((mean - 50.0).abs() < 0.4, "{mean}");
        assert!((sd - 5.0).abs() < 0.8, "{sd}");
    }

    #[test]
    fn rates_and_shares_have_honest_intervals() {
        let e = known(rate_ratio((1_000, 10.0), (1_000, 10.0)));
        assert!(e.low < 1.0 && e.high > 1.0 && e.low > 0.9, "{e:?}");
        let e = known(rate_ratio((1_000, 10.0), (500, 10.0)));
        assert!(e.high < 0.6, "{e:?}");
        // No failure in either: the interval still has width.
        let e = known(share_increase((0, 400), (0, 400)));
        assert_eq!(e.value, 0.0);
        assert!(e.low < 0.0 && e.high > 0.0 && e.high < 0.01, "{e:?}");
        let e = known(share_increase((0, 1_000), (50, 1_000)));
        assert!(e.low > 0.03, "{e:?}");
        assert!(matches!(share_increase((0, 0), (1, 1)), Change::Unknown(_)));
    }

    /// The false-alarm share, stated in docs/ci.md: pairs of synthetic
    /// runs (5,000 answers each, lognormal latencies) judged by
    /// `p95_regression < 10%`. Drawn from one distribution, no pair may
    /// fail and nearly all pass; with the run slower by the limit itself
    /// (the worst case of a run that holds), at most 5 % may fail (a 95 %
    /// interval puts 2.5 % of them beyond it).
    #[test]
    fn unchanged_runs_never_fail_and_the_limit_fails_at_most_five_percent() {
        use super::super::threshold::{parse, Verdict};
        const TRIALS: usize = 300;
        const ANSWERS: usize = 5_000;
        // No floor: the interval alone decides.
        let t = parse("p95_regression < 10% min 0ms").unwrap();
        let judge = |b: &Empirical, r: &Empirical| {
            let ms = |e: &Empirical| e.quantile(0.95) as f64 / 1000.0;
            t.judge(ms(b), ms(r), &percentile_ratio(b, r, 0.95))
        };
        let mut rng = StdRng::seed_from_u64(6);
        let (mut same_passed, mut same_failed, mut edge_failed) = (0usize, 0usize, 0usize);
        for _ in 0..TRIALS {
            let base = Empirical::new(&lognormal(&mut rng, ANSWERS, 20_000.0));
            let same = Empirical::new(&lognormal(&mut rng, ANSWERS, 20_000.0));
            let edge = Empirical::new(&lognormal(&mut rng, ANSWERS, 22_000.0));
            match judge(&base, &same) {
                Verdict::NoChange | Verdict::BelowFloor => same_passed += 1,
                Verdict::Regression | Verdict::Improvement => same_failed += 1,
                Verdict::Inconclusive(_) | Verdict::NotCompared(_) => {}
            }
            if judge(&base, &edge) == Verdict::Regression {
                edge_failed += 1;
            }
        }
        eprintln!(
            "unchanged: {same_passed} of {TRIALS} passed, {same_failed} failed; 10 % slower: {edge_failed} of {TRIALS} failed"
        );
        assert_eq!(same_failed, 0);
        assert!(
            same_passed * 100 >= TRIALS * 97,
            "{same_passed} of {TRIALS}"
        );
        assert!(edge_failed * 20 <= TRIALS, "{edge_failed} of {TRIALS}");
    }
}
