//! The decision rules of the webhook family's timing properties, as pure
//! functions over durations, so their error rates can be measured by
//! simulation without servers or sleeping (the tests below judge ≥ 10,000
//! synthetic senders or receivers per rule and violation; the rates are in
//! the family README, which becomes `docs/checks.md`).
//!
//! - Schedule (`webhook.sink_retries` `schedule`): every retry gap within
//!   `tolerance_pct` % of its scheduled delay plus `tolerance_floor`. Given
//!   the gaps a sender produces, the rule is deterministic; its errors come
//!   only from timing noise on the gaps, which the tolerance absorbs.
//! - Retry-After (`webhook.sink_respects_retry_after`): the next attempt no
//!   earlier than Retry-After less a short slack: the whole-second rounding
//!   of a sender's scheduler (at most 1 s, and at most `tolerance_pct` % of
//!   the wait) plus `tolerance_floor`. A sender that ignores the header and
//!   retries on a schedule of seconds cannot meet a Retry-After of minutes.
//! - Stop watches (`webhook.sink_stops_*`): after the 2xx or 410, tminus
//!   watches for as long as the next scheduled delay plus its tolerance (at
//!   least `quiet`), so a sender that retries anyway on its schedule is seen.
//! - Acknowledgement time (`webhook.burst` `ack_time`): the 95th percentile
//!   of the acknowledgement times, one sample per delivery.

use std::time::Duration;

/// How far a gap may deviate from the `expected` delay.
pub fn tolerance(expected: Duration, pct: f64, floor: Duration) -> Duration {
    expected.mul_f64(pct / 100.0) + floor
}

/// The schedule rule: the first gap off its scheduled delay by more than
/// its tolerance (index into `gaps`), `None` when every gap that happened
/// is within it.
pub fn schedule_rule(
    gaps: &[Duration],
    expected: &[Duration],
    pct: f64,
    floor: Duration,
) -> Option<usize> {
    gaps.iter()
        .zip(expected)
        .position(|(gap, want)| gap.abs_diff(*want) > tolerance(*want, pct, floor))
}

/// How much earlier than Retry-After the next attempt may come: a sender's
/// scheduler may keep whole seconds and round the due time down (at most
/// 1 s, and at most `pct` % of the wait), plus `floor` for the two
/// timestamps being taken on different sides.
pub fn retry_after_slack(retry_after: Duration, pct: f64, floor: Duration) -> Duration {
    retry_after.mul_f64(pct / 100.0).min(Duration::from_secs(1)) + floor
}

/// The Retry-After rule: the next attempt came at least Retry-After less
/// the slack after the answer that carried it.
pub fn retry_after_rule(gap: Duration, retry_after: Duration, pct: f64, floor: Duration) -> bool {
    gap + retry_after_slack(retry_after, pct, floor) >= retry_after
}

/// How long to watch for an attempt that must not come: the delay the
/// schedule would have waited next plus its tolerance, at least `quiet`.
pub fn stop_watch(next: Option<Duration>, pct: f64, floor: Duration, quiet: Duration) -> Duration {
    next.map(|d| d + tolerance(d, pct, floor))
        .unwrap_or(Duration::ZERO)
        .max(quiet)
}

/// The 95th percentile (nearest rank) of `times`; `None` for none.
pub fn p95(times: &[Duration]) -> Option<Duration> {
    let rank = (times.len() * 95).div_ceil(100).checked_sub(1)?;
    let mut t = times.to_vec();
    Some(*t.select_nth_unstable(rank).1)
}

/// The acknowledgement rule: the 95th percentile within `within`; `None`
/// when nothing was acknowledged.
pub fn ack_rule(times: &[Duration], within: Duration) -> Option<bool> {
    p95(times).map(|p| p <= within)
}

#[cfg(test)]
mod simulation {
    //! Error rates of the rules with their default parameters (and the
    //! compressed ones `suites/webhooks.yaml` runs against the reference),
    //! over synthetic senders and receivers: `violates` is a documented way
    //! of breaking the property, `meets` one that keeps it under realistic
    //! noise.

    use super::*;
    use crate::families::webhook::spec::defaults as d;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const TRIALS: usize = 10_000;
    /// The bound on both error rates (issue 12): 0.1 %, i.e. 10 in 10,000.
    const MAX_ERRORS: usize = TRIALS / 1000;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s.max(0.0))
    }

    fn exp(rng: &mut StdRng, mean: f64) -> f64 {
        -mean * (1.0 - rng.random_range(0.0f64..1.0)).ln()
    }

    /// Timing noise on one gap as the sink measures it: loopback and the
    /// attempt's own duration (exponential, a few ms) and, on 2 % of
    /// attempts, a stall of up to 50 ms on a loaded 2-core machine. Either
    /// sign: the stall may delay the earlier attempt instead.
    fn noise(rng: &mut StdRng) -> f64 {
        let mut n = exp(rng, 0.003);
        if rng.random_bool(0.02) {
            n += rng.random_range(0.0..0.05);
        }
        if rng.random_bool(0.5) {
            n
        } else {
            -n
        }
    }

    /// A scenario of the sink checks: schedule, tolerance, the Retry-After
    /// of `sink_respects_retry_after`, and whether the sender's scheduler
    /// works in seconds (a real platform's queue) or not (the reference).
    struct Scenario {
        name: &'static str,
        schedule: Vec<f64>,
        pct: f64,
        floor: Duration,
        retry_after: u64,
        quiet: Duration,
        queue: bool,
    }

    fn scenarios() -> Vec<Scenario> {
        vec![
            Scenario {
                name: "defaults",
                schedule: d::SCHEDULE.iter().map(Duration::as_secs_f64).collect(),
                pct: d::TOLERANCE_PCT,
                floor: d::TOLERANCE_FLOOR,
                retry_after: d::RETRY_AFTER,
                quiet: d::QUIET_MAX,
                queue: true,
            },
            // suites/webhooks.yaml against the reference.
            Scenario {
                name: "reference suite",
                schedule: vec![0.1, 0.2, 0.4],
                pct: 25.0,
                floor: Duration::from_millis(40),
                retry_after: 1,
                quiet: Duration::from_millis(400),
                queue: false,
            },
        ]
    }

    /// A sender's delay for a scheduled `want`: its own jitter of ±5 %
    /// and, with a queue, a poller that picks due attempts up to 1 s late.
    fn honest_delay(rng: &mut StdRng, s: &Scenario, want: f64) -> f64 {
        let queue = if s.queue {
            rng.random_range(0.0..1.0)
        } else {
            0.0
        };
        want * rng.random_range(0.95..1.05) + queue + noise(rng)
    }

    /// Gaps of one sender over the schedule, each drawn by `delay`.
    fn gaps(
        rng: &mut StdRng,
        s: &Scenario,
        delay: &dyn Fn(&mut StdRng, &Scenario, usize, f64) -> f64,
    ) -> Vec<Duration> {
        s.schedule
            .iter()
            .enumerate()
            .map(|(i, want)| secs(delay(rng, s, i, *want)))
            .collect()
    }

    type Delay = dyn Fn(&mut StdRng, &Scenario, usize, f64) -> f64;

    #[test]
    fn schedule_rule_error_rates() {
        let mut rng = StdRng::seed_from_u64(30);
        let violators: Vec<(&str, Box<Delay>)> = vec![
            // The reference's `sender-ignores-schedule`: retries at once.
            (
                "retries at once",
                Box::new(|r: &mut StdRng, _: &Scenario, _: usize, _: f64| 0.01 + noise(r).abs()),
            ),
            // Its own exponential backoff of seconds (1 s, 2 s, 4 s, …)
            // with full jitter, or off by a factor: the schedule doubled
            // or halved, with the honest sender's noise.
            (
                "own backoff 2^n s, full jitter",
                Box::new(|r: &mut StdRng, _: &Scenario, i: usize, _: f64| {
                    r.random_range(0.0..2f64.powi(i as i32)) + noise(r)
                }),
            ),
            (
                "schedule × 2",
                Box::new(|r: &mut StdRng, s: &Scenario, _: usize, w: f64| {
                    honest_delay(r, s, 2.0 * w)
                }),
            ),
            (
                "schedule × 0.5",
                Box::new(|r: &mut StdRng, s: &Scenario, _: usize, w: f64| {
                    honest_delay(r, s, 0.5 * w)
                }),
            ),
        ];
        for s in scenarios() {
            let expected: Vec<Duration> = s.schedule.iter().map(|w| secs(*w)).collect();
            let judge = |g: &[Duration]| schedule_rule(g, &expected, s.pct, s.floor).is_none();
            for (case, delay) in &violators {
                // A backoff of seconds is a violation of a schedule of
                // minutes, not of the compressed one of 100s of ms.
                if !s.queue && case.starts_with("own backoff") {
                    continue;
                }
                let passed = (0..TRIALS)
                    .filter(|_| judge(&gaps(&mut rng, &s, &**delay)))
                    .count();
                eprintln!(
                    "schedule ({}): {passed} of {TRIALS} senders passed ({case})",
                    s.name
                );
                assert!(passed <= MAX_ERRORS, "{passed} violators passed: {case}");
            }
            let honest = |r: &mut StdRng, s: &Scenario, _: usize, w: f64| honest_delay(r, s, w);
            let failed = (0..TRIALS)
                .filter(|_| !judge(&gaps(&mut rng, &s, &honest)))
                .count();
            // Inside the band the tolerance draws: a schedule 15 % long.
            let long =
                |r: &mut StdRng, s: &Scenario, _: usize, w: f64| honest_delay(r, s, 1.15 * w);
            let band = (0..TRIALS)
                .filter(|_| judge(&gaps(&mut rng, &s, &long)))
                .count();
            eprintln!(
                "schedule ({}): {failed} of {TRIALS} honest senders failed; {band} of {TRIALS} senders 15 % slow passed (the band)",
                s.name
            );
            assert!(failed <= MAX_ERRORS, "{failed} honest senders failed");
        }
    }

    #[test]
    fn retry_after_rule_error_rates() {
        let mut rng = StdRng::seed_from_u64(120);
        for s in scenarios() {
            let ra = Duration::from_secs(s.retry_after);
            let judge = |gap: f64| retry_after_rule(secs(gap), ra, s.pct, s.floor);
            let first = s.schedule[0];
            // Ignores Retry-After and retries on its schedule (the
            // reference's `sender-ignores-retry-after`), or caps the wait
            // at half of it.
            let ignores = (0..TRIALS)
                .filter(|_| judge(honest_delay(&mut rng, &s, first)))
                .count();
            let capped = (0..TRIALS)
                .filter(|_| judge(honest_delay(&mut rng, &s, s.retry_after as f64 / 2.0)))
                .count();
            // Honours it: counts from its own request (up to 40 ms before
            // the answer) or the answer; with a queue, keeps the due time in
            // whole seconds rounded down and polls up to 1 s late.
            let honest = |rng: &mut StdRng| {
                let ra = s.retry_after as f64;
                let due = if s.queue {
                    let now = rng.random_range(0.0..1.0);
                    (now + ra).floor() - now + rng.random_range(0.0..1.0)
                } else {
                    ra
                };
                due - rng.random_range(0.0..0.04) + exp(rng, 0.003)
            };
            let failed = (0..TRIALS).filter(|_| !judge(honest(&mut rng))).count();
            eprintln!(
                "retry-after {} s ({}): {ignores} of {TRIALS} senders on their schedule and {capped} of {TRIALS} capping it at half passed, {failed} of {TRIALS} honouring senders failed",
                s.retry_after, s.name
            );
            for n in [ignores, capped, failed] {
                assert!(n <= MAX_ERRORS, "{n} wrong verdicts in {TRIALS}");
            }
        }
        // The old rule (no slack beyond 50 ms) failed most honest senders
        // whose scheduler keeps whole seconds: the simulation sees it.
        let failed_old = (0..TRIALS)
            .filter(|_| {
                let now = rng.random_range(0.0..1.0);
                let gap = (now + 120.0f64).floor() - now;
                secs(gap) + Duration::from_millis(50) < Duration::from_secs(120)
            })
            .count();
        eprintln!("retry-after 120 s, the old rule (50 ms of slack): {failed_old} of {TRIALS} senders keeping whole seconds failed");
        assert!(
            failed_old > 9000,
            "the old rule's flaw is visible: {failed_old}"
        );
    }

    #[test]
    fn stop_watch_sees_a_sender_that_retries_on_its_schedule() {
        let mut rng = StdRng::seed_from_u64(410);
        for s in scenarios() {
            // After a 2xx at attempt 2 (`stops_on_success`) the next delay
            // is the schedule's second; after a 410 at attempt 1
            // (`stops_on_gone`) its first. A sender that retries anyway does
            // so on its schedule, with the honest sender's noise.
            for (case, stop_at) in [("after 2xx", 1), ("after 410", 0)] {
                let next = s.schedule.get(stop_at).copied();
                let watch = stop_watch(next.map(secs), s.pct, s.floor, s.quiet);
                let missed = (0..TRIALS)
                    .filter(|_| secs(honest_delay(&mut rng, &s, next.unwrap_or(0.0))) > watch)
                    .count();
                eprintln!(
                    "stop watch ({}, {case}): {missed} of {TRIALS} senders retrying on schedule were missed (watch {watch:?})",
                    s.name
                );
                assert!(missed <= MAX_ERRORS, "{missed} violators passed: {case}");
            }
        }
    }

    /// Acknowledgement times of `n` deliveries from a receiver whose times
    /// are log-normal with spread `sigma` and 95th percentile `p95`, plus
    /// loopback noise.
    fn acks(rng: &mut StdRng, n: usize, p95: f64, sigma: f64) -> Vec<Duration> {
        let median = p95 / (1.645 * sigma).exp();
        let mut out = Vec::with_capacity(n + 1);
        while out.len() < n {
            // Box–Muller: two standard normals per draw.
            let (u1, u2) = (
                1.0 - rng.random_range(0.0f64..1.0),
                rng.random_range(0.0..1.0),
            );
            let (r, a) = ((-2.0 * u1.ln()).sqrt(), std::f64::consts::TAU * u2);
            for z in [r * a.cos(), r * a.sin()] {
                out.push(secs(median * (sigma * z).exp() + exp(rng, 0.001)));
            }
        }
        out.truncate(n);
        out
    }

    /// P(Binomial(n, q) ≤ k).
    fn binomial_cdf(n: u64, q: f64, k: u64) -> f64 {
        let mut term = (1.0 - q).powi(n as i32);
        let mut sum = term;
        for i in 1..=k {
            term *= (n - i + 1) as f64 / i as f64 * q / (1.0 - q);
            sum += term;
        }
        sum
    }

    #[test]
    fn ack_rule_error_rates_with_the_defaults() {
        let n = d::COUNT as usize;
        let within = d::ACK_WITHIN.as_secs_f64();
        let mut rng = StdRng::seed_from_u64(95);
        let rate = |rng: &mut StdRng, n: usize, p95: f64, sigma: f64| {
            (0..TRIALS)
                .filter(|_| ack_rule(&acks(rng, n, p95, sigma), d::ACK_WITHIN) == Some(true))
                .count()
        };
        // A receiver that processes before it answers: p95 1.5 × the limit;
        // one that answers first: p95 the limit / 1.5. Spread σ = 0.5 (p95
        // 2.3 × the median, a typical service's tail).
        let passed = rate(&mut rng, n, 1.5 * within, 0.5);
        let failed = TRIALS - rate(&mut rng, n, within / 1.5, 0.5);
        // The same with a wide spread (σ = 1, p95 5.2 × the median) and
        // with one delivery (`accepts_valid`): reported, not within the bar.
        let passed_wide = rate(&mut rng, n, 1.5 * within, 1.0);
        let failed_wide = TRIALS - rate(&mut rng, n, within / 1.5, 1.0);
        let passed_one = rate(&mut rng, 1, 1.5 * within, 0.5);
        let failed_one = TRIALS - rate(&mut rng, 1, within / 1.5, 0.5);
        eprintln!(
            "ack p95, {n} deliveries, limit {within} s: {passed} of {TRIALS} receivers at 1.5 × passed, {failed} of {TRIALS} at 1 / 1.5 failed (σ 0.5); σ 1: {passed_wide} passed, {failed_wide} failed; one delivery (σ 0.5): {passed_one} passed, {failed_one} failed"
        );
        assert!(passed <= MAX_ERRORS, "{passed} slow receivers passed");
        assert!(failed <= MAX_ERRORS, "{failed} fast receivers failed");
        assert!(
            passed_one > 5000,
            "one delivery decides nothing: {passed_one}"
        );
        // The band the rule cannot decide, as the share q of deliveries
        // acknowledged later than the limit: p95 ≤ limit iff at most
        // n − ⌈0.95 n⌉ of them are late, a binomial count.
        let late_allowed = (n - (n * 95).div_ceil(100)) as u64;
        let p_fail = |q: f64| 1.0 - binomial_cdf(n as u64, q, late_allowed);
        let p_pass = |q: f64| binomial_cdf(n as u64, q, late_allowed);
        let meets_up_to = (1..1000)
            .map(|i| i as f64 / 1000.0)
            .take_while(|q| p_fail(*q) <= 0.001)
            .last()
            .unwrap();
        let violates_from = (1..1000)
            .map(|i| i as f64 / 1000.0)
            .find(|q| p_pass(*q) <= 0.001)
            .unwrap();
        eprintln!(
            "ack p95, {n} deliveries: both rates <= 0.1 % when at most {:.1} % or at least {:.1} % of acknowledgements are late; at exactly 5 %: P(fail) {:.1} %",
            meets_up_to * 100.0,
            violates_from * 100.0,
            p_fail(0.05) * 100.0
        );
        assert!(
            meets_up_to > 0.01 && violates_from < 0.15,
            "{meets_up_to} {violates_from}"
        );
    }

    #[test]
    fn rules_on_examples() {
        let ms = Duration::from_millis;
        assert_eq!(tolerance(ms(100), 25.0, ms(40)), ms(65));
        let want = [ms(100), ms(200)];
        assert_eq!(
            schedule_rule(&[ms(160), ms(250)], &want, 25.0, ms(40)),
            None
        );
        assert_eq!(
            schedule_rule(&[ms(12), ms(250)], &want, 25.0, ms(40)),
            Some(0)
        );
        assert_eq!(schedule_rule(&[ms(100)], &want, 25.0, ms(40)), None);
        let ra = Duration::from_secs(120);
        assert!(retry_after_rule(ms(119_100), ra, 10.0, ms(50)));
        assert!(!retry_after_rule(ms(118_900), ra, 10.0, ms(50)));
        assert!(!retry_after_rule(
            ms(100),
            Duration::from_secs(1),
            25.0,
            ms(40)
        ));
        assert!(retry_after_rule(
            ms(720),
            Duration::from_secs(1),
            25.0,
            ms(40)
        ));
        assert_eq!(stop_watch(Some(ms(200)), 25.0, ms(40), ms(100)), ms(290));
        assert_eq!(stop_watch(None, 25.0, ms(40), ms(400)), ms(400));
        let t: Vec<Duration> = (1..=20).map(ms).collect();
        assert_eq!(p95(&t), Some(ms(19)));
        assert_eq!(ack_rule(&t, ms(19)), Some(true));
        assert_eq!(ack_rule(&t, ms(18)), Some(false));
        assert_eq!(ack_rule(&[], ms(18)), None);
    }
}
