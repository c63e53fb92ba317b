//! How much a percentile wanders with the environment inside one run, read
//! from the burst's interval log (one histogram a second, `.hlog`): the
//! run-to-run noise `tminus compare` adds to a percentile's interval.
//!
//! The seconds are grouped, in time order, into blocks of at least
//! [`BLOCK_ANSWERS`] answers and enough for the percentile (p95: 100). Each
//! block's percentile (on the log scale) varies by its own sampling error
//! and by whatever moved the machine, the network or the target meanwhile.
//! The sampling part is known (the order statistic's spread, as in
//! `stats.rs`); what the blocks vary by beyond it is the wander, estimated
//! as a random effect (DerSimonian and Laird's τ²), and counted only when
//! Cochran's Q shows it beyond doubt (p < 0.05). So a stationary run adds
//! nothing and keeps today's interval, and a run whose latency moved
//! widens its own comparison by as much as it moved.
//!
//! The interval log covers all requests of a burst, not each kind: a kind
//! takes the wander of its burst (the environment slows every kind).
//! A percentile too high for three blocks (p99 in a short burst) takes the
//! wander of the highest percentile that has them, and says so.

use super::stats::{answers_needed, percent, rank, Empirical};

/// Fewest answers of a block.
pub const BLOCK_ANSWERS: u64 = 50;
/// Fewest blocks a wander is estimated from.
pub const MIN_BLOCKS: usize = 3;
/// The percentiles a wander is borrowed from, highest first.
const FALLBACK: &[f64] = &[0.95, 0.9, 0.75, 0.5];

/// One run's wander of one percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wander {
    /// The standard deviation of the log percentile between blocks beyond
    /// sampling (0: stationary, or not shown beyond doubt).
    pub sigma: f64,
    /// The percentile it was measured at (`q` itself or a lower one).
    pub at: f64,
    pub blocks: usize,
}

impl Wander {
    pub fn describe(&self, q: f64) -> String {
        let at = if (self.at - q).abs() > 1e-9 {
            format!(" (measured at p{})", percent(self.at))
        } else {
            String::new()
        };
        format!(
            "±{:.1}% over {} blocks{at}",
            (self.sigma.exp() - 1.0) * 100.0,
            self.blocks
        )
    }
}

/// The wander of percentile `q` over `slices` (time order), or `None`
/// when no percentile has [`MIN_BLOCKS`] blocks.
pub fn wander(slices: &[Empirical], q: f64) -> Option<Wander> {
    std::iter::once(q)
        .chain(FALLBACK.iter().copied().filter(|f| *f < q))
        .find_map(|at| {
            let (sigma, blocks) = sigma_at(slices, at)?;
            Some(Wander { sigma, at, blocks })
        })
}

/// τ (log scale) and the number of blocks for percentile `q`.
fn sigma_at(slices: &[Empirical], q: f64) -> Option<(f64, usize)> {
    let need = answers_needed(q).max(BLOCK_ANSWERS);
    let mut blocks: Vec<Empirical> = Vec::new();
    let mut pending: Vec<&Empirical> = Vec::new();
    let mut count = 0u64;
    for s in slices.iter().filter(|s| !s.is_empty()) {
        pending.push(s);
        count += s.len();
        if count >= need {
            blocks.push(Empirical::merged(&pending));
            pending.clear();
            count = 0;
        }
    }
    if !pending.is_empty() {
        // The last seconds join the last block (or are one if there is none).
        if let Some(last) = blocks.pop() {
            pending.push(&last);
            blocks.push(Empirical::merged(&pending));
        }
    }
    if blocks.len() < MIN_BLOCKS {
        return None;
    }
    let points: Vec<(f64, f64)> = blocks.iter().map(|b| log_quantile(b, q)).collect();
    Some((tau(&points), blocks.len()))
}

/// A block's log percentile and its sampling variance: the order
/// statistic's rank moves by sd √(q(1−q)n); half the log distance between
/// the values one such step either side is its standard error.
fn log_quantile(e: &Empirical, q: f64) -> (f64, f64) {
    let n = e.len();
    let k = rank(q, n);
    let step = ((q * (1.0 - q) * n as f64).sqrt().ceil() as u64).max(1);
    let ln = |v: u64| (v.max(1) as f64).ln();
    let (lo, hi) = (
        ln(e.at_rank(k.saturating_sub(step))),
        ln(e.at_rank(k + step)),
    );
    // A histogram bucket's width (3 significant digits) is the least
    // resolution: never a zero variance.
    let se = ((hi - lo) / 2.0).max(1e-3);
    (ln(e.quantile(q)), se * se)
}

/// DerSimonian–Laird's between-block variance, as a standard deviation,
/// when Cochran's Q exceeds its 95 % point (else 0).
fn tau(points: &[(f64, f64)]) -> f64 {
    let k = points.len();
    let w: Vec<f64> = points.iter().map(|(_, v)| 1.0 / v).collect();
    let sw: f64 = w.iter().sum();
    let mean = points.iter().zip(&w).map(|((x, _), w)| w * x).sum::<f64>() / sw;
    let q: f64 = points
        .iter()
        .zip(&w)
        .map(|((x, _), w)| w * (x - mean).powi(2))
        .sum();
    let df = (k - 1) as f64;
    if q <= chi2_95(df) {
        return 0.0;
    }
    let c = sw - w.iter().map(|w| w * w).sum::<f64>() / sw;
    ((q - df) / c).max(0.0).sqrt()
}

/// The 95 % point of χ² with `df` degrees of freedom (Wilson–Hilferty;
/// within 2 % of the table from 2 degrees up, a little high at 1).
fn chi2_95(df: f64) -> f64 {
    let z = 1.644_853_626_951_472;
    let a = 2.0 / (9.0 * df);
    df * (1.0 - a + z * a.sqrt()).powi(3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::load::stats::new_hist;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// `seconds` slices of `per` answers, lognormal around `median_us`
    /// times the slice's factor.
    fn slices(rng: &mut StdRng, factors: &[f64], per: usize, median_us: f64) -> Vec<Empirical> {
        factors
            .iter()
            .map(|f| {
                let mut h = new_hist();
                for _ in 0..per {
                    let u: f64 = rng.random::<f64>().max(1e-12);
                    let v: f64 = rng.random();
                    let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
                    h.record((median_us * f * (0.4 * z).exp()).max(1.0) as u64)
                        .unwrap();
                }
                Empirical::new(&h)
            })
            .collect()
    }

    #[test]
    fn a_stationary_run_adds_no_wander() {
        let mut rng = StdRng::seed_from_u64(11);
        let mut zero = 0;
        for _ in 0..40 {
            let s = slices(&mut rng, &[1.0; 8], 250, 800.0);
            let w = wander(&s, 0.95).unwrap();
            assert_eq!(w.at, 0.95);
            if w.sigma == 0.0 {
                zero += 1;
            }
        }
        // Q beyond its 95 % point by chance: about 2 in 40.
        assert!(zero >= 35, "{zero} of 40 stationary runs had no wander");
    }

    #[test]
    fn a_run_that_moves_widens_by_about_as_much() {
        let mut rng = StdRng::seed_from_u64(12);
        let s = slices(
            &mut rng,
            &[1.0, 1.0, 2.0, 2.0, 1.0, 2.0, 1.0, 2.0],
            250,
            800.0,
        );
        let w = wander(&s, 0.95).unwrap();
        // Blocks at ×1 and ×2: a log spread of about ln 2 / 2 = 0.35.
        assert!(w.sigma > 0.2 && w.sigma < 0.6, "{w:?}");
        // p99 needs 500 answers a block: 4 blocks of 2 seconds.
        let w99 = wander(&s, 0.99).unwrap();
        assert_eq!((w99.at, w99.blocks), (0.99, 4));
        // Too short for p99 blocks: it borrows p95's.
        let short = &s[..4];
        let w = wander(short, 0.99).unwrap();
        assert_eq!(w.at, 0.95);
        assert!(w.describe(0.99).contains("measured at p95"), "{w:?}");
        assert!(wander(&s[..1], 0.5).is_none());
        assert!(chi2_95(4.0) > 9.3 && chi2_95(4.0) < 9.7);
    }
}
