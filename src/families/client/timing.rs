//! The decision rules of the client family's timing properties, as pure
//! functions over numbers (waits and offsets in seconds), so their error
//! rates can be measured by simulation without processes or sleeping (the
//! tests below judge ≥ 10,000 synthetic clients per rule; the rates are in
//! the family README, which becomes `docs/checks.md`).
//!
//! - Retry-After (`client.respects_retry_after`, the pacing of
//!   `client.bounded`): every wait after an answer with Retry-After is at
//!   least the wait asked for minus a tolerance, over several samples. The
//!   default scenarios ask for waits long enough that a client running its
//!   own short backoff cannot meet them by chance.
//! - Jitter (`client.jitter`): the width of the narrowest window that holds
//!   half the herd's retry offsets (the "shorth"). It measures the herd
//!   where it is densest, which is what a platform feels, and it ignores the
//!   stragglers a loaded machine's scheduling produces (the herd's own
//!   timing noise): a lockstep herd cannot pass on a few late clients, as it
//!   does with a standard deviation or an interquartile range, and a
//!   jittered herd cannot fail on a few early ones.
//! - Backoff growth (`client.exponential_backoff`): a herd of clients, each
//!   told 429 without Retry-After `failures` times; per attempt, the herd's
//!   mean gap without its lowest and highest quarter (robust to the
//!   stragglers a loaded machine adds, unlike a plain mean, and unlike a
//!   median still moved by a backoff whose typical wait grows slowly but
//!   whose mean grows, as decorrelated jitter's does); the later half of the
//!   attempts must wait at least `growth` × the earlier half and at least
//!   `min_increase` longer. One client cannot be judged: its own jitter
//!   (full jitter draws each wait from 0 up) makes 8 gaps of a growing
//!   client look flat and 8 random gaps of a flat one look growing, several
//!   per cent of the time either way.
//! - Retry amplification (`client.retry_amplification`) is a count, not a
//!   timing rule; its simulation below models the upstream's injected
//!   failures and hold exactly, to show where the count depends on timing.

/// One wait the client was asked for and the gap it left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wait {
    /// From the answer carrying Retry-After to the next attempt, seconds.
    pub gap: f64,
    /// The least gap that honours it (Retry-After − tolerance, − 1 s more
    /// for an HTTP-date's whole-second precision).
    pub required: f64,
}

/// What the Retry-After rule concludes from the waits it saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WaitRule {
    /// The first wait shorter than required (index into the waits).
    Early(usize),
    /// Fewer than `samples` waits and none early: not enough evidence.
    TooFew,
    /// Every one of at least `samples` waits honoured.
    Held,
}

/// The Retry-After rule: any early wait fails; otherwise at least `samples`
/// waits are needed to pass.
pub fn retry_after_rule(waits: &[Wait], samples: usize) -> WaitRule {
    match waits.iter().position(|w| w.gap < w.required) {
        Some(i) => WaitRule::Early(i),
        None if waits.len() < samples.max(1) => WaitRule::TooFew,
        None => WaitRule::Held,
    }
}

/// The narrowest window holding half (rounded up) of `values`: its start
/// and end. `None` for no values.
pub fn densest_half(values: &[f64]) -> Option<(f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len().div_ceil(2);
    v.windows(m.max(1))
        .map(|w| (w[0], w[w.len() - 1]))
        .min_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)))
}

/// The jitter rule without the machine's noise: the herd's retries are
/// spread when the narrowest window holding half of them is at least
/// `min_spread` seconds wide. (The old rule, kept for the simulation that
/// shows what it passes on a saturated machine; the judge uses [`jitter_judgement`].)
pub fn jitter_rule(offsets: &[f64], min_spread: f64) -> bool {
    densest_half(offsets).is_some_and(|(from, to)| to - from >= min_spread)
}

/// Standard errors on each side of a measured width that a verdict must
/// clear: two, so that each side errs in about 2 % of runs at the very edge
/// of the threshold and far less further away (the simulation measures it).
pub const JITTER_Z: f64 = 2.0;

/// The least control clients whose retries measure the machine's noise.
pub const LEAST_CONTROL: usize = 4;

/// What the jitter rule concludes once the machine's own noise is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// Clearly narrower than `min_spread`: noise only widens a herd, so a
    /// narrow herd is narrow whatever the machine did.
    Narrow,
    /// Wider than `min_spread` by more than the machine's own spread and the
    /// measurement's uncertainty.
    Spread,
    /// The machine's noise, not measured or too high, could explain the width.
    Noisy,
    /// Within the measurement's own uncertainty of the threshold.
    Borderline,
}

/// The jitter judgement, with the figures its message shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterJudgement {
    pub from: f64,
    pub to: f64,
    /// The densest half's width, seconds.
    pub width: f64,
    /// `JITTER_Z` standard errors of that width: about `width / sqrt(n)`
    /// each (the densest half of `n` draws from a spread of width `2w` is
    /// `w` give or take `w / sqrt(n)`).
    pub uncertainty: f64,
    /// The control group's densest half (its width, the machine's own
    /// spread), when at least [`LEAST_CONTROL`] of it retried.
    pub noise: Option<f64>,
    /// The noise's upper bound: the control's width plus `JITTER_Z` standard
    /// errors, or the herd's CPU bound if larger.
    pub noise_bound: Option<f64>,
    /// The densest half of the herd's offsets less the control's at the
    /// same instants ([`jitter_judgement_in_time`]), when that was judged.
    pub in_time: Option<f64>,
    pub verdict: Spread,
}

/// The jitter rule, judged against the machine's own noise: `offsets` are the
/// herd's retry offsets, `control` those of clients without jitter (tminus's
/// reference client) run alongside it, so that their spread is what the
/// machine's scheduling alone made of a lockstep herd at that moment.
///
/// Narrow when the width plus its uncertainty is under `min_spread`; spread
/// when the width minus its uncertainty is at least `min_spread` plus the
/// noise's upper bound (the machine could have widened a lockstep herd that
/// far, so only the excess is the client's); otherwise noisy (the noise
/// could explain it, or was not measured) or borderline. The bound is the
/// larger of the control's and `cpu_bound`, the spread the herd's own CPU
/// work could make (a light control is served first by the scheduler and
/// does not feel a heavy herd's queue). `None` for no offsets.
pub fn jitter_judgement(
    offsets: &[f64],
    control: &[f64],
    cpu_bound: Option<f64>,
    min_spread: f64,
) -> Option<JitterJudgement> {
    let (from, to) = densest_half(offsets)?;
    let width = to - from;
    let uncertainty = JITTER_Z * width / (offsets.len() as f64).sqrt();
    let (noise, noise_bound) = if control.len() >= LEAST_CONTROL {
        let (a, b) = densest_half(control)?;
        let w = b - a;
        let b = w * (1.0 + JITTER_Z / (control.len() as f64).sqrt());
        (Some(w), Some(b.max(cpu_bound.unwrap_or(0.0))))
    } else {
        (None, None)
    };
    let verdict = if width + uncertainty < min_spread {
        Spread::Narrow
    } else {
        match noise_bound {
            None => Spread::Noisy,
            Some(b) if width - uncertainty >= min_spread + b => Spread::Spread,
            Some(_) if width - uncertainty >= min_spread => Spread::Noisy,
            Some(_) => Spread::Borderline,
        }
    };
    Some(JitterJudgement {
        from,
        to,
        width,
        uncertainty,
        noise,
        noise_bound,
        in_time: None,
        verdict,
    })
}

/// One retry of a herd: when the client was due to retry (its answer plus
/// Retry-After, seconds on the upstream's clock) and how late it came.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    pub due: f64,
    pub offset: f64,
}

/// The control's offset expected at `due`: interpolated between the control
/// retries due just before and just after it (the nearest one alone at the
/// ends). `control` sorted by `due`.
fn control_at(control: &[Timed], due: f64) -> Option<f64> {
    let before = control.iter().rev().find(|c| c.due <= due);
    let after = control.iter().find(|c| c.due > due);
    match (before, after) {
        (Some(a), Some(b)) => {
            let f = (due - a.due) / (b.due - a.due);
            Some(a.offset + f * (b.offset - a.offset))
        }
        (Some(x), None) | (None, Some(x)) => Some(x.offset),
        (None, None) => None,
    }
}

/// The jitter rule in time: [`jitter_judgement`] on the offsets, and a
/// spread passes only if it also holds once the machine's noise at each
/// instant is taken out. The machine's noise varies in time (a stall delays
/// every client due in it, the earliest most, and a staircase of lockstep
/// clients spread over a second then looks like uniform jitter), and the
/// control clients, woken amid the herd, measure it at their instants: each
/// herd offset less the control's offset interpolated at its due time, and
/// these residuals must still show `min_spread`. Real jitter is each client's
/// own and survives; a spread the machine made in time does not, and is
/// then `Noisy`, never `Spread`.
///
/// (The control's own residuals are not a fair bound here: one straggler
/// among 16 control clients bends the interpolation for its neighbours,
/// and bounding by them left 13 % of real 0.5 s jitter on a busy machine
/// inconclusive in the simulation, against 0 % this way.)
pub fn jitter_judgement_in_time(
    herd: &[Timed],
    control: &[Timed],
    cpu_bound: Option<f64>,
    min_spread: f64,
) -> Option<JitterJudgement> {
    let offsets: Vec<f64> = herd.iter().map(|t| t.offset).collect();
    let raw_control: Vec<f64> = control.iter().map(|t| t.offset).collect();
    let mut j = jitter_judgement(&offsets, &raw_control, cpu_bound, min_spread)?;
    if j.verdict != Spread::Spread {
        return Some(j);
    }
    let mut sorted = control.to_vec();
    sorted.sort_by(|a, b| a.due.total_cmp(&b.due));
    let residual: Vec<f64> = herd
        .iter()
        .filter_map(|t| Some(t.offset - control_at(&sorted, t.due)?))
        .collect();
    // The residuals must still show `min_spread` beyond their uncertainty
    // (the control's stragglers make the residuals noisier, never
    // narrower, so this takes nothing from real jitter).
    let Some((from, to)) = densest_half(&residual) else {
        j.verdict = Spread::Noisy;
        return Some(j);
    };
    let width = to - from;
    j.in_time = Some(width);
    if width * (1.0 - JITTER_Z / (residual.len() as f64).sqrt()) < min_spread {
        j.verdict = Spread::Noisy;
    }
    Some(j)
}

/// Share of the herd dropped at each end before the per-attempt mean.
pub const TRIM: f64 = 0.25;

/// The mean of `values` without the lowest and the highest `trim` share.
/// `None` for no values.
pub fn trimmed_mean(values: &[f64], trim: f64) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let cut = (v.len() as f64 * trim).floor() as usize;
    let kept = v.get(cut..v.len() - cut)?;
    (!kept.is_empty()).then(|| kept.iter().sum::<f64>() / kept.len() as f64)
}

/// How a herd's gaps grow over the attempts judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Growth {
    /// The herd's trimmed mean gap at each attempt, seconds.
    pub per_attempt: Vec<f64>,
    /// Their mean over the earlier half of the attempts.
    pub early: f64,
    /// Their mean over the later half.
    pub late: f64,
}

impl Growth {
    /// `late / early` (infinite when the earlier half never waited).
    pub fn ratio(&self) -> f64 {
        if self.early > 0.0 {
            self.late / self.early
        } else {
            f64::INFINITY
        }
    }
}

/// The herd's growth over the first `attempts` gaps of every client that
/// left at least that many (`gaps[c]`: client c's gaps in order). `None`
/// without such a client or with fewer than two attempts.
pub fn herd_growth(gaps: &[Vec<f64>], attempts: usize) -> Option<Growth> {
    let full: Vec<&Vec<f64>> = gaps.iter().filter(|g| g.len() >= attempts).collect();
    if full.is_empty() || attempts < 2 {
        return None;
    }
    let per_attempt = (0..attempts)
        .map(|i| trimmed_mean(&full.iter().map(|g| g[i]).collect::<Vec<_>>(), TRIM))
        .collect::<Option<Vec<f64>>>()?;
    let half = attempts / 2;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    Some(Growth {
        early: mean(&per_attempt[..half]),
        late: mean(&per_attempt[half..]),
        per_attempt,
    })
}

/// The least clients of a herd of `k` that must leave every judged gap: a
/// program's copies behave alike, and fewer clients let the machine's
/// stragglers weigh too much (the simulation below).
pub fn least_judged(k: usize) -> usize {
    (k * 4).div_ceil(5).max(1)
}

/// The backoff rule: the later half waits at least `growth` × the earlier
/// half, and at least `min_increase` seconds longer (so that a herd retrying
/// at once, whose gaps are only the machine's noise, cannot pass on it).
pub fn backoff_rule(g: &Growth, growth: f64, min_increase: f64) -> bool {
    g.late >= growth * g.early && g.late - g.early >= min_increase
}

#[cfg(test)]
mod simulation {
    //! Error rates of the rules with their default parameters, over
    //! synthetic clients: `violates` is the documented way of breaking the
    //! property, `meets` a client that keeps it under realistic noise.

    use super::*;
    use crate::families::client::spec::defaults as d;
    use rand::rngs::{SmallRng, StdRng};
    use rand::{Rng, SeedableRng};

    const CLIENTS: usize = 10_000;
    /// The bound on both error rates (issue 12): 0.1 %, i.e. 10 in 10,000.
    const MAX_ERRORS: usize = CLIENTS / 1000;

    fn secs(d: std::time::Duration) -> f64 {
        d.as_secs_f64()
    }

    /// Waits of one client over `samples` answers with Retry-After `ra`
    /// (`date`: the HTTP-date form), its gaps drawn by `gap(rng, n, ra, frac)`
    /// where `frac` is how far into its second the answer went out.
    fn waits(
        rng: &mut StdRng,
        ra: f64,
        date: bool,
        samples: usize,
        gap: &dyn Fn(&mut StdRng, usize, f64, f64) -> f64,
    ) -> Vec<Wait> {
        let tolerance = secs(d::TOLERANCE);
        (0..samples)
            .map(|n| {
                let frac = rng.random_range(0.0..1.0);
                Wait {
                    gap: gap(rng, n, ra, if date { frac } else { 0.0 }) + loaded_stall(rng),
                    required: ra - if date { 1.0 } else { 0.0 } - tolerance,
                }
            })
            .collect()
    }

    /// A loaded 2-core machine delays a client's retry (never advances it):
    /// 5 % of waits by up to 50 ms more, 1 % by up to 1 s (a process starved
    /// of CPU). A late retry can only help a client that waits too little.
    fn loaded_stall(rng: &mut StdRng) -> f64 {
        let p: f64 = rng.random_range(0.0..1.0);
        if p < 0.01 {
            rng.random_range(0.0..1.0)
        } else if p < 0.06 {
            rng.random_range(0.0..0.05)
        } else {
            0.0
        }
    }

    /// (passes among violators, fails among meeters) of the Retry-After rule.
    fn retry_after_rates(ra: f64, date: bool, samples: usize) -> (usize, usize) {
        let mut rng = StdRng::seed_from_u64(12);
        // Ignores Retry-After and waits its own backoff: uniform 0.5–1.0 s
        // every time (tenacity's wait_exponential_jitter, first wait), or
        // growing ×2 per retry as exponential backoff does; up to 10 ms of
        // overhead.
        let ignores = |rng: &mut StdRng, _: usize, _: f64, _: f64| {
            rng.random_range(0.5..1.0) + rng.random_range(0.0..0.01)
        };
        let grows = |rng: &mut StdRng, n: usize, _: f64, _: f64| {
            rng.random_range(0.5..1.0) * 2f64.powi(n as i32) + rng.random_range(0.0..0.01)
        };
        // Honours it, counting from when it sent the request (up to 40 ms
        // before the answer) and, for a date, from its own clock reading of
        // a whole-second Date (`frac` of a second already gone), plus up to
        // 500 ms of jitter.
        let honours = |rng: &mut StdRng, _: usize, ra: f64, frac: f64| {
            ra - frac - rng.random_range(0.0..0.04) + rng.random_range(0.0..0.5)
        };
        let mut passed = 0;
        for violator in [
            &ignores as &dyn Fn(&mut StdRng, usize, f64, f64) -> f64,
            &grows,
        ] {
            passed += (0..CLIENTS)
                .filter(|_| {
                    retry_after_rule(&waits(&mut rng, ra, date, samples, violator), samples)
                        == WaitRule::Held
                })
                .count();
        }
        let failed = (0..CLIENTS)
            .filter(|_| {
                retry_after_rule(&waits(&mut rng, ra, date, samples, &honours), samples)
                    != WaitRule::Held
            })
            .count();
        (passed, failed)
    }

    #[test]
    fn retry_after_rule_error_rates_with_the_defaults() {
        let samples = d::SAMPLES as usize;
        for (ra, date) in [
            (secs(d::RETRY_AFTER_WAIT), false),
            (secs(d::RETRY_AFTER_WAIT_DATE), true),
        ] {
            let (passed, failed) = retry_after_rates(ra, date, samples);
            eprintln!(
                "Retry-After {ra} s{}, {samples} samples: {passed} of {} violators passed, {failed} of {CLIENTS} meeting clients failed",
                if date { " (HTTP-date)" } else { "" },
                2 * CLIENTS
            );
            assert!(passed <= MAX_ERRORS, "{passed} violators passed");
            assert!(failed <= MAX_ERRORS, "{failed} meeting clients failed");
        }
        // The old rule (one sample of Retry-After 1 s) passed ~10 % of
        // clients that ignore it: the simulation sees that too.
        let (passed, _) = retry_after_rates(1.0, false, 1);
        assert!(passed > 500, "the old rule's flaw is visible: {passed}");
    }

    /// Offsets of a herd of `k` clients: `spread` seconds of uniform jitter
    /// on top of the herd's own timing noise on a loaded 2-core machine:
    /// wake-ups served one after another over up to 80 ms, a few ms of
    /// exponential network and scheduling delay, and 10 % stragglers up to
    /// 1 s late.
    fn herd(rng: &mut StdRng, k: usize, spread: f64) -> Vec<f64> {
        let queue = rng.random_range(0.0..0.08);
        (0..k)
            .map(|_| {
                let mut o = rng.random_range(0.0..=queue)
                    - 0.003 * (1.0 - rng.random_range(0.0f64..1.0)).ln();
                if rng.random_bool(0.10) {
                    o += rng.random_range(0.0..1.0);
                }
                if spread > 0.0 {
                    o += rng.random_range(0.0..spread);
                }
                o
            })
            .collect()
    }

    /// The machine a herd runs on, for the judgement with a control group.
    #[derive(Clone, Copy, Debug)]
    enum Machine {
        /// The staircase's machine above: wake-ups queued over up to 80 ms.
        Busy,
        /// Saturated (CPU hogs on both cores, or a herd of heavy clients):
        /// the run's wake-ups queue over 0.1–0.4 s (the 50 client
        /// processes on 2 loaded cores spread over 112–411 ms), every process
        /// anywhere in that queue; plus the few ms and the 10 % stragglers.
        Saturated,
    }

    /// One run: the herd's offsets (`spread` s of uniform jitter, or
    /// `fraction` of Retry-After 1 s as jitter when given) and the control
    /// group's (no jitter), both on the same machine at the same moment.
    fn run_with_control(
        rng: &mut StdRng,
        k: usize,
        c: usize,
        spread: f64,
        machine: Machine,
    ) -> (Vec<f64>, Vec<f64>) {
        let queue = match machine {
            Machine::Busy => rng.random_range(0.0..0.08),
            Machine::Saturated => rng.random_range(0.1..0.4),
        };
        let mut one = |jitter: f64| {
            let mut o =
                rng.random_range(0.0..=queue) - 0.003 * (1.0 - rng.random_range(0.0f64..1.0)).ln();
            if rng.random_bool(0.10) {
                o += rng.random_range(0.0..1.0);
            }
            if jitter > 0.0 {
                o += rng.random_range(0.0..jitter);
            }
            o
        };
        let herd: Vec<f64> = (0..k).map(|_| one(spread)).collect();
        let control: Vec<f64> = (0..c).map(|_| one(0.0)).collect();
        (herd, control)
    }

    /// The upstream's staircase for `k` herd clients and `c` control ones:
    /// client -> the instant it is due, seconds.
    fn staircase(k: usize, c: usize) -> impl Fn(usize) -> f64 {
        let herd = crate::upstream::Herd {
            clients: k + c,
            cap: std::time::Duration::from_secs(10),
            stagger: d::HERD_STAGGER,
            control_from: (c > 0).then_some(k),
        };
        move |client| herd.slot(client, client) as f64 * secs(herd.stagger)
    }

    /// [`run_with_control`]'s offsets placed on the staircase (the noise
    /// there does not vary in time).
    fn timed_run(
        rng: &mut StdRng,
        k: usize,
        c: usize,
        spread: f64,
        machine: Machine,
    ) -> (Vec<Timed>, Vec<Timed>) {
        let (h, ctl) = run_with_control(rng, k, c, spread, machine);
        let due = staircase(k, c);
        let timed = |from: usize, o: Vec<f64>| -> Vec<Timed> {
            o.into_iter()
                .enumerate()
                .map(|(i, offset)| Timed {
                    due: due(from + i),
                    offset,
                })
                .collect()
        };
        (timed(0, h), timed(k, ctl))
    }

    /// (pass, fail, inconclusive) of the judgement over `CLIENTS` runs.
    fn judged(seed: u64, k: usize, spread: f64, machine: Machine) -> (usize, usize, usize) {
        let mut rng = StdRng::seed_from_u64(seed);
        let c = d::CONTROL_CLIENTS as usize;
        let min = secs(d::MIN_SPREAD);
        let mut t = (0, 0, 0);
        for _ in 0..CLIENTS {
            let (h, ctl) = timed_run(&mut rng, k, c, spread, machine);
            match jitter_judgement_in_time(&h, &ctl, None, min)
                .unwrap()
                .verdict
            {
                Spread::Spread => t.0 += 1,
                Spread::Narrow => t.1 += 1,
                Spread::Noisy | Spread::Borderline => t.2 += 1,
            }
        }
        t
    }

    #[test]
    fn jitter_judgement_error_rates_on_a_busy_and_a_saturated_machine() {
        let k = d::CLIENTS as usize;
        let mut lines = Vec::new();
        let mut results = Vec::new();
        for machine in [Machine::Busy, Machine::Saturated] {
            for n in [k, k / 2] {
                let lock = judged(21, n, 0.0, machine);
                let real = judged(22, n, 0.5, machine);
                let edge = judged(23, n, 0.2, machine);
                lines.push(format!(
                    "{machine:?}, {n} clients: lockstep {lock:?}, 0.5 s {real:?}, 0.2 s {edge:?} (pass, fail, inconclusive)"
                ));
                results.push((machine, n, lock, real, edge));
            }
        }
        eprintln!("{}", lines.join("\n"));
        for (machine, n, lock, real, edge) in results {
            // Lockstep: never a pass, on any machine.
            assert!(lock.0 <= MAX_ERRORS, "{machine:?} {n} lockstep: {lock:?}");
            // Jitter over 0.5 s: never a fail.
            assert!(real.1 <= MAX_ERRORS, "{machine:?} {n} jittered: {real:?}");
            // 0–20 % of Retry-After 1 s (0.2 s): its densest half is about
            // the threshold, so it is inconclusive (run more clients), and a
            // verdict either way is rare instead of a coin flip (the old
            // rule's 77 vs 82 ms).
            // (With the default herd; half of it is the edge's own business.)
            if n == k {
                assert!(
                    edge.0 + edge.1 <= CLIENTS / 20,
                    "{machine:?} {n} 0.2 s: {edge:?}"
                );
                assert!(
                    edge.0.min(edge.1) <= CLIENTS / 100,
                    "{machine:?} {n} 0.2 s: {edge:?}"
                );
            }
        }
        // On the busy machine the check still does its job with 50 clients.
        let real = judged(24, k, 0.5, Machine::Busy);
        assert!(real.0 >= CLIENTS * 97 / 100, "busy, 0.5 s: {real:?}");
        // The old rule passed lockstep herds on a saturated machine.
        let mut rng = StdRng::seed_from_u64(25);
        let old = (0..CLIENTS)
            .filter(|_| {
                let (h, _) = run_with_control(&mut rng, k, 0, 0.0, Machine::Saturated);
                jitter_rule(&h, secs(d::MIN_SPREAD))
            })
            .count();
        assert!(old > CLIENTS / 2, "the old rule's flaw is visible: {old}");
        eprintln!("old rule, saturated, lockstep: {old} of {CLIENTS} passed");
    }

    /// One run on a machine that stalls: the `k + c` clients wake on the
    /// upstream's staircase (step `slot(client)`, [`d::HERD_STAGGER`] apart),
    /// and for 0.2–2.5 s from a random instant in it nothing runs, so every
    /// client due in the stall wakes at its end (the 6 of 126 wrong passes
    /// seen under 9 concurrent runs and a compile). Plus the few ms of
    /// scheduling and `spread` s of uniform jitter for the herd. (herd,
    /// control) offsets.
    fn stalled_run(
        rng: &mut StdRng,
        k: usize,
        c: usize,
        spread: f64,
        slot: &dyn Fn(usize) -> f64,
    ) -> (Vec<Timed>, Vec<Timed>) {
        let stair = (k + c) as f64 * secs(d::HERD_STAGGER);
        let start = rng.random_range(-0.5..stair);
        let end = start + rng.random_range(0.2..2.5);
        let mut timed = |client: usize, jitter: f64| {
            let at = slot(client);
            let due = at
                + if jitter > 0.0 {
                    rng.random_range(0.0..jitter)
                } else {
                    0.0
                };
            let woke = if (start..end).contains(&due) {
                end
            } else {
                due
            };
            Timed {
                due: at,
                offset: woke - at - 0.003 * (1.0 - rng.random_range(0.0f64..1.0)).ln(),
            }
        };
        let herd = (0..k).map(|i| timed(i, spread)).collect();
        let control = (k..k + c).map(|i| timed(i, 0.0)).collect();
        (herd, control)
    }

    /// A jitter judgement of (herd, control, CPU bound, min spread).
    type Judgement = fn(&[Timed], &[Timed], Option<f64>, f64) -> Option<JitterJudgement>;

    /// (pass, fail, inconclusive) of lockstep herds on a stalling machine,
    /// the control placed by `slot`.
    fn stalled(
        seed: u64,
        spread: f64,
        slot: &dyn Fn(usize) -> f64,
        judge: Judgement,
    ) -> (usize, usize, usize) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (k, c) = (d::CLIENTS as usize, d::CONTROL_CLIENTS as usize);
        let min = secs(d::MIN_SPREAD);
        let mut t = (0, 0, 0);
        for _ in 0..CLIENTS {
            let (h, ctl) = stalled_run(&mut rng, k, c, spread, slot);
            match judge(&h, &ctl, None, min).unwrap().verdict {
                Spread::Spread => t.0 += 1,
                Spread::Narrow => t.1 += 1,
                Spread::Noisy | Spread::Borderline => t.2 += 1,
            }
        }
        t
    }

    #[test]
    fn a_stall_that_spreads_a_lockstep_herd_spreads_its_control_too() {
        let (k, c) = (d::CLIENTS as usize, d::CONTROL_CLIENTS as usize);
        let spread_through = staircase(k, c);
        let at_the_end = |client: usize| client as f64 * secs(d::HERD_STAGGER);
        // The offsets alone, as the judge had them before.
        let offsets_only = |h: &[Timed], ctl: &[Timed], cpu: Option<f64>, min: f64| {
            let o = |t: &[Timed]| t.iter().map(|t| t.offset).collect::<Vec<_>>();
            jitter_judgement(&o(h), &o(ctl), cpu, min)
        };
        let lock = stalled(31, 0.0, &spread_through, jitter_judgement_in_time);
        let real = stalled(32, 0.5, &spread_through, jitter_judgement_in_time);
        let spread_alone = stalled(31, 0.0, &spread_through, offsets_only);
        let old = stalled(31, 0.0, &at_the_end, offsets_only);
        eprintln!(
            "stalls of 0.2-2.5 s, {k} clients + {c} control: lockstep {lock:?}, 0.5 s jitter {real:?}; offsets alone: control spread through the staircase, lockstep {spread_alone:?}; control at its end, lockstep {old:?} (pass, fail, inconclusive)"
        );
        // Never a pass for a herd without jitter, and a real spread is not
        // failed. The offsets alone passed lockstep herds, the more so with
        // the control at the staircase's end (arrival order): what this
        // guards against.
        assert!(lock.0 <= MAX_ERRORS, "lockstep: {lock:?}");
        assert!(real.1 <= MAX_ERRORS, "jittered: {real:?}");
        assert!(real.0 >= CLIENTS / 4, "jittered: {real:?}");
        assert!(
            spread_alone.0 > MAX_ERRORS,
            "offsets alone: {spread_alone:?}"
        );
        assert!(
            old.0 > 10 * MAX_ERRORS,
            "the old placement's flaw is visible: {old:?}"
        );
    }

    #[test]
    fn jitter_rule_error_rates_with_the_defaults() {
        let k = d::CLIENTS as usize;
        let min = secs(d::MIN_SPREAD);
        let mut rng = StdRng::seed_from_u64(5);
        // Lockstep: no jitter at all, only the noise.
        let passed = (0..CLIENTS)
            .filter(|_| jitter_rule(&herd(&mut rng, k, 0.0), min))
            .count();
        // Real jitter: uniform over 0.5 s (stdev ≈ 0.14 s).
        let failed = (0..CLIENTS)
            .filter(|_| !jitter_rule(&herd(&mut rng, k, 0.5), min))
            .count();
        // Half the herd retried (the least the judge accepts).
        let failed_half = (0..CLIENTS)
            .filter(|_| !jitter_rule(&herd(&mut rng, k / 2, 0.5), min))
            .count();
        let passed_half = (0..CLIENTS)
            .filter(|_| jitter_rule(&herd(&mut rng, k / 2, 0.0), min))
            .count();
        eprintln!(
            "jitter, {k} clients, densest half >= {min} s: {passed} of {CLIENTS} lockstep herds passed, {failed} of {CLIENTS} jittered (0.5 s) herds failed; with {} clients: {passed_half} passed, {failed_half} failed",
            k / 2
        );
        for n in [passed, failed, passed_half, failed_half] {
            assert!(n <= MAX_ERRORS, "{n} wrong verdicts in {CLIENTS}");
        }
    }

    #[test]
    fn pacing_rule_error_rates_with_the_defaults() {
        let ra = secs(d::BOUNDED_RETRY_AFTER);
        let tolerance = secs(d::TOLERANCE);
        let mut rng = StdRng::seed_from_u64(3);
        let run = |rng: &mut StdRng, attempts: usize, gap: &dyn Fn(&mut StdRng) -> f64| {
            let w: Vec<Wait> = (1..attempts)
                .map(|_| Wait {
                    gap: gap(rng) + loaded_stall(rng),
                    required: ra - tolerance,
                })
                .collect();
            retry_after_rule(&w, 1)
        };
        // 10 attempts with 0 ms between them: loopback and scheduling only.
        let passed = (0..CLIENTS)
            .filter(|_| run(&mut rng, 10, &|r| r.random_range(0.0..0.02)) == WaitRule::Held)
            .count();
        // Ignores Retry-After but backs off 0.5–1.0 s: not the pacing rule's
        // violator (that is `client.respects_retry_after`'s, with 2 s), so
        // only reported: 10 % per gap passes.
        let passed_backoff = (0..CLIENTS)
            .filter(|_| run(&mut rng, 4, &|r| r.random_range(0.5..1.0)) == WaitRule::Held)
            .count();
        // Honours Retry-After (counted from its request) plus full jitter.
        let failed = (0..CLIENTS)
            .filter(|_| {
                run(&mut rng, 4, &|r| {
                    ra - r.random_range(0.0..0.04) + r.random_range(0.0..0.2)
                }) != WaitRule::Held
            })
            .count();
        eprintln!(
            "pacing, Retry-After {ra} s: {passed} of {CLIENTS} zero-wait clients and {passed_backoff} of {CLIENTS} 0.5–1.0 s backoff clients passed, {failed} of {CLIENTS} honouring clients failed"
        );
        for n in [passed, failed] {
            assert!(n <= MAX_ERRORS, "{n} wrong verdicts in {CLIENTS}");
        }
    }

    /// One client's backoff: its gaps (seconds) over `n` attempts. (A
    /// small fast generator: 260,000 herds of 30 are drawn.)
    type Backoff = fn(&mut SmallRng, usize) -> Vec<f64>;

    /// AWS "decorrelated jitter": each wait random between the base and 3 ×
    /// the last, capped (Polly.Contrib's V1). Its mean grows 1.5 × per
    /// retry, its median far more slowly.
    fn decorrelated(rng: &mut SmallRng, n: usize) -> Vec<f64> {
        let (base, cap) = (0.01, 10.0);
        let mut s: f64 = base;
        (0..n)
            .map(|_| {
                s = rng.random_range(base..=s * 3.0).min(cap);
                s
            })
            .collect()
    }

    /// Polly's `DecorrelatedJitterBackoffV2` (the default jittered
    /// exponential backoff of Polly v8), median first delay 10 ms.
    fn polly_v2(rng: &mut SmallRng, n: usize) -> Vec<f64> {
        let (p_factor, rp_scaling, median_first) = (4.0f64, 1.0 / 1.4, 0.01);
        let mut prev = 0.0;
        (0..n)
            .map(|i| {
                let t = i as f64 + rng.random_range(0.0..1.0);
                let next = 2f64.powf(t) * (p_factor * t).sqrt().tanh();
                let d = (next - prev) * rp_scaling * median_first;
                prev = next;
                d
            })
            .collect()
    }

    /// Clients that do not back off, and how each waits.
    const FLAT: &[(&str, Backoff)] = &[
        ("retries at once", |_, n| vec![0.0; n]),
        ("constant 10 ms", |_, n| vec![0.01; n]),
        ("constant 100 ms", |_, n| vec![0.1; n]),
        ("uniform 0–100 ms", |r, n| {
            (0..n).map(|_| r.random_range(0.0..0.1)).collect()
        }),
        ("uniform 0–1 s (tenacity wait_random)", |r, n| {
            (0..n).map(|_| r.random_range(0.0..1.0)).collect()
        }),
        ("uniform 0.5–1 s", |r, n| {
            (0..n).map(|_| r.random_range(0.5..1.0)).collect()
        }),
    ];

    /// Clients that back off as common libraries do, with a small base so a
    /// test stays short (the smaller the base, the more the machine's noise
    /// weighs).
    const GROWING: &[(&str, Backoff)] = &[
        (
            "full jitter, base 10 ms x2 (AWS SDKs, backoff, tenacity)",
            |r, n| {
                (0..n)
                    .map(|i| r.random_range(0.0..=0.01 * 2f64.powi(i as i32)))
                    .collect()
            },
        ),
        ("full jitter, base 10 ms, capped at 0.5 s", |r, n| {
            (0..n)
                .map(|i| r.random_range(0.0..=(0.01 * 2f64.powi(i as i32)).min(0.5)))
                .collect()
        }),
        ("equal jitter, base 10 ms x2 (Stripe)", |r, n| {
            (0..n)
                .map(|i| 0.01 * 2f64.powi(i as i32) * r.random_range(0.5..=1.0))
                .collect()
        }),
        (
            "full jitter over 2 x delay, x1.3, 20 ms (google-api-core)",
            |r, n| {
                (0..n)
                    .map(|i| r.random_range(0.0..=2.0 * 0.02 * 1.3f64.powi(i as i32)))
                    .collect()
            },
        ),
        (
            "x1.5, randomization 0.5, 10 ms (cenkalti/backoff)",
            |r, n| {
                (0..n)
                    .map(|i| 0.01 * 1.5f64.powi(i as i32) * r.random_range(0.5..=1.5))
                    .collect()
            },
        ),
        (
            "decorrelated jitter, base 10 ms x3 (AWS blog, Polly V1)",
            decorrelated,
        ),
        ("Polly DecorrelatedJitterBackoffV2, 10 ms", polly_v2),
    ];

    /// The machine's share of each measured gap: a few ms of exponential
    /// delay, and `stragglers` of the gaps up to `late` seconds longer (a
    /// client process waiting for a CPU core).
    fn measured(rng: &mut SmallRng, waits: Vec<f64>, stragglers: f64, late: f64) -> Vec<f64> {
        waits
            .into_iter()
            .map(|w| {
                let mut g = w - 0.002 * (1.0 - rng.random_range(0.0f64..1.0)).ln();
                if rng.random_bool(stragglers) {
                    g += rng.random_range(0.0..late);
                }
                g
            })
            .collect()
    }

    /// How many of `CLIENTS` herds of `backoff` clients the rule passes,
    /// under the noise (`stragglers`, `late`).
    fn herds_passed(seed: u64, k: usize, backoff: Backoff, stragglers: f64, late: f64) -> usize {
        let n = d::FAILURES as usize;
        let (growth, floor) = (d::GROWTH, secs(d::MIN_INCREASE));
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..CLIENTS)
            .filter(|_| {
                let gaps: Vec<Vec<f64>> = (0..k)
                    .map(|_| {
                        let waits = backoff(&mut rng, n);
                        measured(&mut rng, waits, stragglers, late)
                    })
                    .collect();
                herd_growth(&gaps, n).is_some_and(|g| backoff_rule(&g, growth, floor))
            })
            .count()
    }

    #[test]
    fn backoff_rule_error_rates_with_the_defaults() {
        let k = d::BACKOFF_CLIENTS as usize;
        // A quiet machine (5 % of gaps up to 50 ms late) and a loaded one
        // (10 % up to 1 s late); the whole herd, and the least of it the
        // judge accepts (`least_judged`).
        for (herd, stragglers, late) in [
            (k, 0.05, 0.05),
            (k, 0.10, 1.0),
            (least_judged(k), 0.10, 1.0),
        ] {
            let noise = format!("{herd} clients, noise {stragglers}/{late} s");
            for (seed, (name, backoff)) in FLAT.iter().enumerate() {
                let passed = herds_passed(seed as u64, herd, *backoff, stragglers, late);
                eprintln!("backoff, {noise}: {name}: {passed} of {CLIENTS} herds passed");
                assert!(
                    passed <= MAX_ERRORS,
                    "{name}: {passed} herds without growth passed"
                );
            }
            for (seed, (name, backoff)) in GROWING.iter().enumerate() {
                let failed =
                    CLIENTS - herds_passed(100 + seed as u64, herd, *backoff, stragglers, late);
                eprintln!("backoff, {noise}: {name}: {failed} of {CLIENTS} herds failed");
                assert!(
                    failed <= MAX_ERRORS,
                    "{name}: {failed} growing herds failed"
                );
            }
        }
        // Linear backoff (50 ms × n) grows 2.6 × from the first four gaps
        // to the last four: over eight retries it is not told from an
        // exponential one with a small multiplier, and passes (reported).
        let linear = herds_passed(
            7,
            k,
            |_, n| (1..=n).map(|i| 0.05 * i as f64).collect(),
            0.05,
            0.05,
        );
        eprintln!("backoff: linear 50 ms x n: {linear} of {CLIENTS} herds passed");
    }

    /// A client of `client.retry_amplification`: `layers` nested retry
    /// loops (an application loop around an SDK's) of `retries` each around
    /// one request, waiting `wait(rng, retry)` seconds after a failure.
    struct Retrier {
        layers: u32,
        retries: u32,
        wait: fn(&mut SmallRng, u32) -> f64,
    }

    /// The upstream of `client.retry_amplification` with its defaults (the
    /// real inject pattern, a hold from each injected answer) and one client
    /// performing `ops` operations one after the other.
    struct Steady {
        rng: SmallRng,
        inject: crate::upstream::Inject,
        t: f64,
        counted: u64,
        hold_end: f64,
        requests: usize,
    }

    impl Steady {
        fn new(seed: u64) -> Self {
            let step =
                crate::upstream::Step::reply(crate::upstream::Reply::status(d::FAILURE_STATUS));
            Steady {
                rng: SmallRng::seed_from_u64(seed),
                inject: crate::upstream::Inject {
                    share: d::FAILURE_SHARE,
                    step,
                    hold: d::HOLD,
                },
                t: 0.0,
                counted: 0,
                hold_end: f64::NEG_INFINITY,
                requests: 0,
            }
        }

        /// One request over loopback (0.5 ms plus exponential delay); true
        /// when it was served.
        fn send(&mut self) -> bool {
            self.requests += 1;
            self.t += 0.0005 - 0.001 * (1.0 - self.rng.random_range(0.0f64..1.0)).ln();
            if self.t < self.hold_end {
                return false;
            }
            self.counted += 1;
            if self.inject.fails(self.counted) {
                self.hold_end = self.t + secs(d::HOLD);
                return false;
            }
            true
        }

        fn attempt(&mut self, c: &Retrier, layer: u32) -> bool {
            for k in 0..=c.retries {
                let ok = if layer == 0 {
                    self.send()
                } else {
                    self.attempt(c, layer - 1)
                };
                if ok {
                    return true;
                }
                if k < c.retries {
                    self.t += (c.wait)(&mut self.rng, k);
                }
            }
            false
        }

        /// Requests ÷ operations for `ops` operations of client `c`.
        fn amplification(mut self, c: &Retrier, ops: usize) -> f64 {
            for _ in 0..ops {
                self.attempt(c, c.layers - 1);
            }
            self.requests as f64 / ops as f64
        }
    }

    #[test]
    fn amplification_rule_error_rates_with_the_defaults() {
        const OPS: usize = 40;
        let ra = secs(d::RETRY_AFTER);
        let max = d::MAX_AMPLIFICATION;
        let passed = |c: &Retrier, seed: u64| {
            (0..CLIENTS as u64)
                .filter(|i| Steady::new(seed * 1_000_000 + i).amplification(c, OPS) <= max)
                .count()
        };
        // Amplifies: re-sends at once (loopback and scheduling only), or
        // retries at two layers at once.
        let violators = [
            (
                "one layer, 3 retries at once",
                Retrier {
                    layers: 1,
                    retries: 3,
                    wait: |r, _| r.random_range(0.0..0.002),
                },
            ),
            (
                "two layers of 2 retries, at once",
                Retrier {
                    layers: 2,
                    retries: 2,
                    wait: |r, _| r.random_range(0.0..0.002),
                },
            ),
            (
                "one layer, 5 retries, 0-10 ms",
                Retrier {
                    layers: 1,
                    retries: 5,
                    wait: |r, _| r.random_range(0.0..0.01),
                },
            ),
        ];
        // Does not: waits out Retry-After (plus up to 0.5 s of jitter), at
        // one layer or two.
        let conformers = [
            (
                "one layer, 3 retries, Retry-After + 0-0.5 s",
                Retrier {
                    layers: 1,
                    retries: 3,
                    wait: |r, _| 1.0 + r.random_range(0.0..0.5),
                },
            ),
            (
                "two layers of 3 retries, Retry-After",
                Retrier {
                    layers: 2,
                    retries: 3,
                    wait: |r, _| 1.0 + r.random_range(0.0..0.05),
                },
            ),
        ];
        for (seed, (name, c)) in violators.iter().enumerate() {
            let n = passed(c, seed as u64);
            eprintln!("amplification: {name}: {n} of {CLIENTS} passed");
            assert!(n <= MAX_ERRORS, "{name}: {n} passed");
        }
        for (seed, (name, c)) in conformers.iter().enumerate() {
            let n = CLIENTS - passed(c, 10 + seed as u64);
            eprintln!("amplification: {name}: {n} of {CLIENTS} failed");
            assert!(n <= MAX_ERRORS, "{name}: {n} failed");
        }
        assert_eq!(ra, 1.0, "the conformers above wait the default Retry-After");
        // Between them (reported): ignores Retry-After and backs off with
        // full jitter from 50 ms, so a retry lands inside the 100 ms hold
        // only sometimes; its amplification is a matter of chance.
        let band = Retrier {
            layers: 1,
            retries: 3,
            wait: |r, k| r.random_range(0.0..0.05 * 2f64.powi(k as i32)),
        };
        let n = passed(&band, 20);
        eprintln!("amplification: one layer, 3 retries, full jitter from 50 ms, ignoring Retry-After: {n} of {CLIENTS} passed");
    }

    #[test]
    fn one_client_cannot_be_judged_as_the_herd_is() {
        // The old rule (one client, later half >= 2 x the earlier half)
        // passed a flat uniform 0–1 s client several per cent of the time.
        let mut rng = StdRng::seed_from_u64(9);
        let passed = (0..CLIENTS)
            .filter(|_| {
                let g: Vec<f64> = (0..8).map(|_| rng.random_range(0.0..1.0)).collect();
                let (early, late): (f64, f64) = (g[..4].iter().sum(), g[4..].iter().sum());
                late >= 2.0 * early
            })
            .count();
        assert!(
            passed > 300,
            "the single-client rule's flaw is visible: {passed}"
        );
    }

    #[test]
    fn trimmed_mean_drops_a_quarter_at_each_end() {
        let v = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 100.0];
        assert_eq!(trimmed_mean(&v, TRIM), Some(1.0));
        assert_eq!(trimmed_mean(&[2.0], TRIM), Some(2.0));
        assert_eq!(trimmed_mean(&[], TRIM), None);
        let g = herd_growth(
            &[
                vec![0.1, 0.1, 0.4, 0.4],
                vec![0.1, 0.1, 0.4, 0.4],
                vec![0.1],
            ],
            4,
        )
        .unwrap();
        assert_eq!(g.per_attempt.len(), 4);
        assert!((g.ratio() - 4.0).abs() < 1e-9);
        assert!(backoff_rule(&g, 1.5, 0.02));
        assert!(!backoff_rule(&g, 5.0, 0.02));
        assert_eq!(herd_growth(&[vec![0.1]], 4), None);
    }

    #[test]
    fn densest_half_is_the_narrowest_window_of_half_the_values() {
        // Three of five in 0.1 s, two stragglers far off.
        assert_eq!(densest_half(&[3.0, 0.0, 0.05, 0.1, 9.0]), Some((0.0, 0.1)));
        assert_eq!(densest_half(&[1.0]), Some((1.0, 1.0)));
        assert_eq!(densest_half(&[]), None);
        assert!(!jitter_rule(&[0.0, 0.01, 0.02, 0.5, 0.9], 0.08));
        assert!(jitter_rule(&[0.0, 0.2, 0.4, 0.6, 0.8], 0.08));
    }

    #[test]
    fn retry_after_rule_needs_every_sample() {
        let ok = Wait {
            gap: 2.1,
            required: 1.95,
        };
        let early = Wait {
            gap: 0.7,
            required: 1.95,
        };
        assert_eq!(retry_after_rule(&[ok, ok, ok], 3), WaitRule::Held);
        assert_eq!(retry_after_rule(&[ok, ok], 3), WaitRule::TooFew);
        assert_eq!(retry_after_rule(&[ok, early], 3), WaitRule::Early(1));
        assert_eq!(retry_after_rule(&[], 3), WaitRule::TooFew);
    }
}
