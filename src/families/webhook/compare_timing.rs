//! The decision rule of `webhook.constant_time_compare` (catalogue WH-013),
//! as a pure function over latency pairs, so its error rates can be measured
//! by simulation (the tests below judge 10,000 synthetic receivers per case;
//! the rates are in the family README, which becomes `docs/checks.md`).
//!
//! The probe sends forged signatures in pairs: one that shares no leading
//! character with the valid signature ("far") and one that shares all but
//! the last significant character ("near"), in random order within the
//! pair, one request at a time. A receiver that compares with an early exit
//! answers "near" later by the cost of the matching characters.
//!
//! The statistic is the median of the paired differences `near - far`:
//! pairing by adjacent time slots cancels the machine's drift, and the
//! random order inside a pair makes the differences of a constant-time
//! receiver symmetric about 0 whatever the order effect (a warm connection,
//! a cache) is. The interval is the sign test's (order statistics of a
//! Binomial(n, ½)), so stalls of milliseconds and heavy tails do not widen
//! it the way they widen a mean's. Verdicts against `floor`:
//!
//! - leak: the whole 99.9 % interval lies above `floor`;
//! - no leak: the whole interval lies within ± `floor` (what a pass means:
//!   no difference larger than `floor` detected over the pairs sent; a
//!   black-box probe bounds a leak, it cannot prove constant time);
//! - undecided: anything else (a noisy machine, too few pairs).

use std::time::Duration;

/// The two-sided 99.9 % normal quantile: the interval's coverage.
pub const Z: f64 = 3.29;
/// The fewest answered pairs the rule judges.
pub const MIN_PAIRS: usize = 100;
/// The share of the planned pairs that must have been answered.
pub const MIN_ANSWERED: f64 = 0.9;

/// The median of the paired differences and its interval, in nanoseconds
/// (`near - far`: positive when the prefix group is slower).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub lo: i64,
    pub median: i64,
    pub hi: i64,
    /// Pairs it rests on.
    pub pairs: usize,
}

/// What the rule concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixVerdict {
    /// The prefix group is slower by more than `floor`.
    Leak(Interval),
    /// No difference larger than `floor` either way.
    NoLeak(Interval),
    /// The interval straddles `floor` (or lies below `-floor`).
    Undecided(Interval),
    /// Too few pairs were answered to judge.
    TooFew { answered: usize, needed: usize },
}

/// The sign test's interval for the median of `diffs` (nanoseconds) at
/// the coverage of [`Z`]; `None` for fewer than [`MIN_PAIRS`].
pub fn median_interval(diffs: &[i64]) -> Option<Interval> {
    let n = diffs.len();
    if n < MIN_PAIRS {
        return None;
    }
    // Ranks n/2 ± z·√n/2 (normal approximation of Binomial(n, ½)).
    let half = Z * (n as f64).sqrt() / 2.0;
    let k = ((n as f64 / 2.0 - half).floor().max(0.0)) as usize;
    let mut d = diffs.to_vec();
    let lo = *d.select_nth_unstable(k).1;
    let hi = *d.select_nth_unstable(n - 1 - k).1;
    let median = *d.select_nth_unstable(n / 2).1;
    Some(Interval {
        lo,
        median,
        hi,
        pairs: n,
    })
}

/// The rule: `diffs` are the answered pairs' `near - far` latencies
/// (nanoseconds), `planned` the pairs the probe meant to send.
pub fn prefix_rule(diffs: &[i64], planned: usize, floor: Duration) -> PrefixVerdict {
    let needed = ((planned as f64 * MIN_ANSWERED).ceil() as usize).max(MIN_PAIRS);
    let Some(i) = median_interval(diffs).filter(|_| diffs.len() >= needed) else {
        return PrefixVerdict::TooFew {
            answered: diffs.len(),
            needed,
        };
    };
    let f = i64::try_from(floor.as_nanos()).unwrap_or(i64::MAX);
    if i.lo > f {
        PrefixVerdict::Leak(i)
    } else if i.hi < f && i.lo > -f {
        PrefixVerdict::NoLeak(i)
    } else {
        PrefixVerdict::Undecided(i)
    }
}

#[cfg(test)]
mod simulation {
    //! Error rates of the rule over synthetic receivers: `leaky` ones pay a
    //! cost per matching character (the reference's
    //! `receiver-leaky-compare`), constant-time ones do not; both answer
    //! through the same noise: a loopback base latency, a drift of the
    //! machine over the run, jitter, and stalls.
    //!
    //! The rule reads the differences only through how many lie at or
    //! below `-floor` and at or below `floor` (the interval's ends are order
    //! statistics), so a receiver is simulated by drawing, for each of its
    //! pairs, which of the three bins its difference falls in, from the
    //! receiver's own difference distribution; the rule then judges a vector
    //! with those counts. That is exact for the rule and fast enough to
    //! judge 10,000 receivers of 2,500 pairs per case in a debug build. The
    //! distribution of a pair's noise (two adjacent requests: drift between
    //! the slots, jitter, stalls) is the empirical one of 200,000 draws.

    use super::*;
    use crate::families::webhook::spec::defaults as d;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const TRIALS: usize = 10_000;
    /// The bound on the wrong verdicts: 0.1 %, i.e. 10 in 10,000.
    const MAX_ERRORS: usize = TRIALS / 1000;
    /// Draws of a noise's pair difference.
    const TABLE: usize = 200_000;

    fn exp(rng: &mut StdRng, mean: f64) -> f64 {
        -mean * (1.0 - rng.random_range(0.0f64..1.0)).ln()
    }

    /// A machine's noise, in microseconds.
    #[derive(Clone, Copy)]
    struct Noise {
        name: &'static str,
        /// Mean of the exponential jitter on every request.
        jitter: f64,
        /// Share of requests that meet a stall, and its largest length.
        stall_p: f64,
        stall_max: f64,
        /// Amplitude of the slow drift, and its shortest period in requests.
        drift: f64,
        period: f64,
    }

    const QUIET: Noise = Noise {
        name: "quiet loopback",
        jitter: 30.0,
        stall_p: 0.01,
        stall_max: 2_000.0,
        drift: 100.0,
        period: 50.0,
    };
    /// A 2-core machine compiling while the suite runs.
    const LOADED: Noise = Noise {
        name: "loaded 2-core machine",
        jitter: 250.0,
        stall_p: 0.08,
        stall_max: 20_000.0,
        drift: 1_000.0,
        period: 20.0,
    };
    /// Beyond what the rule resolves at the default floor.
    const HOSTILE: Noise = Noise {
        name: "hostile (jitter 3 ms)",
        jitter: 3_000.0,
        stall_p: 0.2,
        stall_max: 50_000.0,
        drift: 5_000.0,
        period: 10.0,
    };

    /// The sorted differences (µs) between two adjacent requests of a pair
    /// under `n`, with no leak and no order effect.
    fn pair_noise(rng: &mut StdRng, n: &Noise) -> Vec<f64> {
        let one = |rng: &mut StdRng, drift: f64| {
            let stall = if rng.random_bool(n.stall_p) {
                rng.random_range(0.0..n.stall_max)
            } else {
                0.0
            };
            drift + exp(rng, n.jitter) + stall
        };
        let mut t: Vec<f64> = (0..TABLE)
            .map(|_| {
                let (phase, period) = (
                    rng.random_range(0.0..std::f64::consts::TAU),
                    rng.random_range(n.period..10.0 * n.period),
                );
                let a = one(rng, n.drift * phase.sin());
                let b = one(rng, n.drift * (phase + 1.0 / period).sin());
                a - b
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t
    }

    /// P(difference <= x) from the sorted table.
    fn cdf(table: &[f64], x: f64) -> f64 {
        table.partition_point(|v| *v <= x) as f64 / table.len() as f64
    }

    /// Counts of (leak, no leak, undecided, too few) over TRIALS receivers,
    /// each with its own order effect (what the second request of a pair
    /// gains or loses: ±20 µs) and a leak of `leak_us`; a share `lost` of
    /// the pairs is never answered.
    fn verdicts(
        rng: &mut StdRng,
        table: &[f64],
        samples: u32,
        floor: Duration,
        leak_us: f64,
        lost: f64,
    ) -> [usize; 4] {
        let pairs = samples as usize / 2;
        let f = floor.as_secs_f64() * 1e6;
        let fi = i64::try_from(floor.as_nanos()).expect("a small floor");
        let mut c = [0; 4];
        let mut diffs = Vec::with_capacity(pairs);
        // splitmix64: millions of uniforms per case, cheap in a debug build.
        let mut state: u64 = rng.random();
        let mut uniform = || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as f64 / u64::MAX as f64
        };
        for _ in 0..TRIALS {
            let order = rng.random_range(-20.0..20.0);
            // The random order inside a pair: the order effect counts
            // for or against the near group with even odds.
            let at =
                |x: f64| (cdf(table, x - leak_us - order) + cdf(table, x - leak_us + order)) / 2.0;
            let (low, le) = (at(-f), at(f));
            diffs.clear();
            for _ in 0..pairs {
                if lost > 0.0 && uniform() < lost {
                    continue;
                }
                let u = uniform();
                diffs.push(if u < low {
                    -fi - 1
                } else if u < le {
                    0
                } else {
                    fi + 1
                });
            }
            let i = match prefix_rule(&diffs, pairs, floor) {
                PrefixVerdict::Leak(_) => 0,
                PrefixVerdict::NoLeak(_) => 1,
                PrefixVerdict::Undecided(_) => 2,
                PrefixVerdict::TooFew { .. } => 3,
            };
            c[i] += 1;
        }
        c
    }

    fn report(case: &str, n: &Noise, samples: u32, c: [usize; 4]) {
        eprintln!(
            "{case}, {samples} samples, {}: {} fail, {} pass, {} inconclusive, {} too few (of {TRIALS})",
            n.name, c[0], c[1], c[2], c[3]
        );
    }

    /// A constant-time receiver is never failed, on any machine; a leak of
    /// 63 × 2 µs is never passed with the defaults (5,000 samples, 50 µs),
    /// nor the reference defect's 42 × 20 µs with `suites/webhooks.yaml`'s
    /// 4,000 samples and 250 µs floor.
    #[test]
    fn prefix_rule_error_rates() {
        let mut rng = StdRng::seed_from_u64(13);
        let cases = [
            (d::SAMPLES, d::FLOOR, 126.0, "leak 63 × 2 µs"),
            (4_000, Duration::from_micros(250), 840.0, "leak 42 × 20 µs"),
        ];
        for n in [QUIET, LOADED, HOSTILE] {
            let table = pair_noise(&mut rng, &n);
            for (samples, floor, leak, case) in cases {
                let honest = verdicts(&mut rng, &table, samples, floor, 0.0, 0.0);
                report("constant time", &n, samples, honest);
                assert!(honest[0] <= MAX_ERRORS, "{} honest failed", honest[0]);
                let leaky = verdicts(&mut rng, &table, samples, floor, leak, 0.0);
                report(case, &n, samples, leaky);
                assert!(leaky[1] <= MAX_ERRORS, "{} leaky passed", leaky[1]);
                if n.name != HOSTILE.name {
                    // Where the machine allows, the rule decides.
                    assert!(honest[1] >= TRIALS * 8 / 10, "{honest:?}");
                    assert!(leaky[0] >= TRIALS - MAX_ERRORS, "{leaky:?}");
                }
            }
        }
    }

    /// The band: a leak at the floor is passed at most half the time; the
    /// leak of a plain `==` (nanoseconds) is passed, undetectable over a
    /// network (code review is the real check).
    #[test]
    fn prefix_rule_band_and_undetectable_leaks() {
        let mut rng = StdRng::seed_from_u64(63);
        let table = pair_noise(&mut rng, &QUIET);
        let at_floor = verdicts(&mut rng, &table, d::SAMPLES, d::FLOOR, 50.0, 0.0);
        report("leak 50 µs (the floor)", &QUIET, d::SAMPLES, at_floor);
        assert!(at_floor[1] <= TRIALS / 2, "{at_floor:?}");
        let memcmp = verdicts(&mut rng, &table, d::SAMPLES, d::FLOOR, 0.02, 0.0);
        report("leak of a plain == (20 ns)", &QUIET, d::SAMPLES, memcmp);
        assert!(memcmp[1] >= TRIALS - MAX_ERRORS, "{memcmp:?}");
    }

    /// Never a pass on too few answers: a receiver that answered 80 % of
    /// the pairs is not judged.
    #[test]
    fn prefix_rule_never_passes_on_too_few_answers() {
        let mut rng = StdRng::seed_from_u64(80);
        let table = pair_noise(&mut rng, &QUIET);
        let c = verdicts(&mut rng, &table, d::SAMPLES, d::FLOOR, 0.0, 0.2);
        report("constant time, 20 % lost", &QUIET, d::SAMPLES, c);
        assert_eq!(c[3], TRIALS, "{c:?}");
    }

    #[test]
    fn rule_on_examples() {
        let us = |v: i64| v * 1000;
        let floor = Duration::from_micros(50);
        let zeros = vec![0i64; 200];
        assert!(matches!(
            prefix_rule(&zeros, 200, floor),
            PrefixVerdict::NoLeak(_)
        ));
        let slow = vec![us(200); 200];
        assert!(matches!(
            prefix_rule(&slow, 200, floor),
            PrefixVerdict::Leak(_)
        ));
        // Half the pairs 0, half 200 µs: the interval straddles the floor.
        let split: Vec<i64> = (0..200)
            .map(|i| if i % 2 == 0 { 0 } else { us(200) })
            .collect();
        assert!(matches!(
            prefix_rule(&split, 200, floor),
            PrefixVerdict::Undecided(_)
        ));
        assert_eq!(
            prefix_rule(&zeros[..150], 200, floor),
            PrefixVerdict::TooFew {
                answered: 150,
                needed: 180
            }
        );
        assert_eq!(
            prefix_rule(&zeros[..99], 99, floor),
            PrefixVerdict::TooFew {
                answered: 99,
                needed: 100
            }
        );
        let i = median_interval(&(0..1000).collect::<Vec<i64>>()).unwrap();
        assert_eq!((i.lo, i.median, i.hi, i.pairs), (447, 500, 552, 1000));
    }
}
