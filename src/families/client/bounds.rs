//! The decision rule of `client.bounded`'s two bounds (issue 22 case 3), as
//! pure functions so the defaults' error rates can be measured by
//! simulation over the retry policies real clients ship.
//!
//! The bounds are judged separately: `gives_up` counts attempts (at most
//! `max_attempts`), `ends_in_time` times the run (the client exits within
//! `max_total`). One bound decided by the other was chance: with the old
//! 15 s total, a client making 6 full-jitter attempts from 1 s (up to 31 s of
//! sleeping) failed "still running" on one run and passed on the next. The
//! default total is set above the longest run of the policies listed in the
//! family README (the simulation below proves each passes in ≥ 99.9 % of
//! 10,000 runs on a loaded machine), so a default verdict on them is never a
//! coin toss; a policy outside the list states its own `max_total`.

use std::time::Duration;

use super::exec::{stderr_note, RunRecord};
use super::judge::{none_exercised, not_served, retry_after_waits, timeline};
use super::process::Ended;
use super::spec::defaults;
use super::timing::{retry_after_rule, Wait, WaitRule};
use crate::outcome::Assertion;
use crate::outcome::Outcome;

/// The lead of both bounds' failures, so one phrase finds either.
const NOT_IN_BOUNDS: &str = "the client does not stop retrying in bounds";

/// `client.bounded`: `gives_up` (attempts), `ends_in_time` (total time),
/// `fails_visibly` (a non-zero exit) and `paced` (every retry waits the
/// Retry-After before it).
pub fn bounded(runs: &[RunRecord], max_attempts: usize, max_total: Duration) -> Outcome {
    const PROPS: [&str; 4] = ["gives_up", "ends_in_time", "fails_visibly", "paced"];
    let r = &runs[0];
    let res = &r.results[0];
    let a = r.of(res.client);
    if !a.iter().any(|x| x.is_scripted()) {
        return none_exercised(
            &PROPS,
            &(not_served("failure answered to every attempt", &a) + &stderr_note(res)),
        );
    }
    let exited_after = match res.ended {
        Ended::Exited(_) => Some(res.elapsed.as_secs_f64()),
        _ => None,
    };
    let shown = format!(
        "it {}; {}{}",
        res.describe(),
        timeline(&a),
        stderr_note(res)
    );
    let attempts_ok = attempts_within(a.len(), max_attempts);
    let gives_up = if attempts_ok {
        Assertion::pass(
            PROPS[0],
            format!(
                "{} attempt(s), at most {max_attempts}{}",
                a.len(),
                if exited_after.is_some() {
                    ""
                } else {
                    " while it ran (see ends_in_time)"
                }
            ),
        )
    } else {
        Assertion::fail(
            PROPS[0],
            format!("{NOT_IN_BOUNDS}: {} attempts: {shown}", a.len()),
            format!("at most {max_attempts} attempts"),
            format!("{} attempts", a.len()),
        )
    };
    let total = crate::fmt_duration(max_total);
    let ends_in_time = if ends_within(exited_after, max_total.as_secs_f64()) {
        Assertion::pass(
            PROPS[1],
            format!(
                "the client ended after {}, within {total}",
                crate::fmt_duration(res.elapsed)
            ),
        )
    } else if exited_after.is_none() && !attempts_ok {
        // Stopped the moment it passed the attempts bound: its time was
        // never reached, so there is nothing to judge it on.
        Assertion::skipped(
            PROPS[1],
            format!(
                "stopped after {} attempts, over the bound (see gives_up)",
                a.len()
            ),
        )
    } else {
        Assertion::fail(
            PROPS[1],
            format!("{NOT_IN_BOUNDS}: {shown}"),
            format!("the client exits within {total}"),
            match exited_after {
                Some(_) => format!("exited after {}", crate::fmt_duration(res.elapsed)),
                None => format!("the client {}", res.describe()),
            },
        )
    };
    let visibly = match &res.ended {
        _ if exited_after.is_none() => Assertion::skipped(
            PROPS[2],
            "the client never gave up by itself (see gives_up, ends_in_time)",
        ),
        Ended::Exited(Some(0)) => Assertion::fail(
            PROPS[2],
            format!("exit status 0 although no attempt succeeded (a silent give-up): {shown}"),
            "a non-zero exit after giving up",
            "exit status 0",
        ),
        Ended::Exited(Some(c)) => {
            Assertion::pass(PROPS[2], format!("the client exited with status {c}"))
        }
        _ => Assertion::fail(
            PROPS[2],
            format!("the client was killed by a signal instead of reporting a failure: {shown}"),
            "a non-zero exit after giving up",
            "killed by a signal",
        ),
    };
    Outcome::judged(vec![gives_up, ends_in_time, visibly, paced(PROPS[3], &a)])
}

/// `paced`: every retry after a scripted Retry-After waited it out.
fn paced(prop: &'static str, a: &[&crate::upstream::Attempt]) -> Assertion {
    let waits = retry_after_waits(a, defaults::TOLERANCE);
    let only: Vec<Wait> = waits.iter().map(|w| w.0).collect();
    if a.len() < 2 {
        return Assertion::skipped(prop, "one attempt: no retry to pace");
    }
    if only.is_empty() {
        return Assertion::not_exercised(
            prop,
            format!(
                "no retry followed a scripted answer with Retry-After, so the pacing between attempts could not be judged; {}",
                timeline(a)
            ),
        );
    }
    match retry_after_rule(&only, 1) {
        WaitRule::Early(i) => {
            let (w, ra, date) = waits[i];
            Assertion::fail(
                prop,
                format!(
                    "the client retried {:.3} s after a Retry-After of {ra:.0} s{} (attempt {} to {}); {}",
                    w.gap,
                    if date { " (HTTP-date)" } else { "" },
                    i + 1,
                    i + 2,
                    timeline(a)
                ),
                format!("every retry at least {:.3} s after the answer", w.required),
                format!("{:.3} s", w.gap),
            )
        }
        _ => Assertion::pass(
            prop,
            format!(
                "{} retries, each after the Retry-After asked for (shortest {:.3} s)",
                only.len(),
                only.iter().map(|w| w.gap).fold(f64::INFINITY, f64::min)
            ),
        ),
    }
}

/// The attempts bound: never more than `max_attempts` requests, counted
/// while the client ran (a client stopped at `max_total` with fewer has not
/// broken it; its time is `ends_in_time`'s).
pub fn attempts_within(attempts: usize, max_attempts: usize) -> bool {
    attempts <= max_attempts
}

/// The time bound: the client exited by itself within `max_total` seconds
/// (`exited_after` is `None` when it was still running and was stopped).
pub fn ends_within(exited_after: Option<f64>, max_total: f64) -> bool {
    exited_after.is_some_and(|t| t <= max_total)
}

#[cfg(test)]
mod simulation {
    //! Pass rates of `client.bounded`'s default bounds over documented retry
    //! policies, each client run timed as a loaded machine times it: process
    //! start-up, loopback latency per request, and sleeps that overshoot.

    use super::*;
    use crate::families::client::spec::defaults as d;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    const RUNS: usize = 10_000;
    /// At most 0.1 % of runs of an admitted policy may fail (10 of 10,000).
    const MAX_ERRORS: usize = RUNS / 1000;

    /// The scenario's Retry-After on every answer, which a conforming client
    /// waits at least (its backoff when longer).
    fn ra() -> f64 {
        d::BOUNDED_RETRY_AFTER.as_secs_f64()
    }

    /// A retry policy: its attempts and the sleep before retry `n` (0-based),
    /// given the Retry-After it was answered.
    struct Policy {
        name: &'static str,
        attempts: usize,
        /// Sleeps after the last attempt as well before giving up (the seed
        /// checklist's loop does).
        sleeps_after_last: bool,
        sleep: fn(&mut SmallRng, usize, f64) -> f64,
    }

    /// Full jitter, base 1 s, no cap (AWS "full jitter", `backoff.expo` with
    /// `full_jitter`), honouring Retry-After as a floor.
    fn full_jitter(rng: &mut SmallRng, n: usize, ra: f64) -> f64 {
        rng.random_range(0.0..2f64.powi(n as i32)).max(ra)
    }

    /// The seed checklist's `call_api_with_backoff`: Retry-After × 2^n plus
    /// 0–30 % of it, capped at 60 s.
    fn seed(rng: &mut SmallRng, n: usize, ra: f64) -> f64 {
        (ra * 2f64.powi(n as i32) + rng.random_range(0.0..ra * 0.3)).min(60.0)
    }

    /// tenacity `wait_exponential_jitter(initial=1, max=60)`: 2^n + 0–1 s.
    fn tenacity(rng: &mut SmallRng, n: usize, ra: f64) -> f64 {
        (2f64.powi(n as i32) + rng.random_range(0.0..1.0))
            .min(60.0)
            .max(ra)
    }

    /// urllib3 `Retry(total=5, backoff_factor=1)` with
    /// `respect_retry_after_header`: the Retry-After given, not its backoff.
    fn urllib3(_: &mut SmallRng, _: usize, ra: f64) -> f64 {
        ra
    }

    /// Full jitter from 1 s capped at 60 s (the BOTIX cap), over 10 attempts.
    fn capped_full_jitter(rng: &mut SmallRng, n: usize, ra: f64) -> f64 {
        rng.random_range(0.0..2f64.powi(n as i32).min(60.0)).max(ra)
    }

    const ADMITTED: &[Policy] = &[
        Policy {
            name: "6 attempts, full jitter, base 1 s, no cap",
            attempts: 6,
            sleeps_after_last: false,
            sleep: full_jitter,
        },
        Policy {
            name: "the seed checklist's call_api_with_backoff (5 attempts)",
            attempts: 5,
            sleeps_after_last: true,
            sleep: seed,
        },
        Policy {
            name: "tenacity wait_exponential_jitter(1, 60), stop_after_attempt(6)",
            attempts: 6,
            sleeps_after_last: false,
            sleep: tenacity,
        },
        Policy {
            name: "urllib3 Retry(total=5), Retry-After respected",
            attempts: 6,
            sleeps_after_last: false,
            sleep: urllib3,
        },
        Policy {
            name: "10 attempts, Retry-After only",
            attempts: 10,
            sleeps_after_last: false,
            sleep: urllib3,
        },
    ];

    /// One run of `p` on a loaded machine: (attempts, seconds until exit).
    fn run(rng: &mut SmallRng, p: &Policy) -> (usize, f64) {
        // A loaded 2-core machine: an interpreter starts in 0.05–1.5 s, a
        // loopback request takes 1–30 ms, a sleep overshoots by a few ms
        // and one in ten by up to 0.5 s (a starved timer).
        let overshoot = |rng: &mut SmallRng| {
            let late: f64 = if rng.random_bool(0.1) {
                rng.random_range(0.0..0.5)
            } else {
                0.0
            };
            rng.random_range(0.0..0.01) + late
        };
        let mut t = rng.random_range(0.05..1.5);
        for n in 0..p.attempts {
            t += rng.random_range(0.001..0.03);
            if n + 1 < p.attempts || p.sleeps_after_last {
                t += (p.sleep)(rng, n, ra()) + overshoot(rng);
            }
        }
        (p.attempts, t)
    }

    fn passes(attempts: usize, exited_after: Option<f64>) -> bool {
        attempts_within(attempts, d::MAX_ATTEMPTS as usize)
            && ends_within(exited_after, d::MAX_TOTAL.as_secs_f64())
    }

    /// Issue 22 case 3: each listed policy passes the defaults in ≥ 99.9 %
    /// of runs (before, the 15 s total failed the first one most of the time).
    #[test]
    fn the_default_bounds_admit_the_documented_policies() {
        let mut rng = SmallRng::seed_from_u64(22);
        let mut report = Vec::new();
        for p in ADMITTED {
            let mut longest = 0f64;
            let failed = (0..RUNS)
                .filter(|_| {
                    let (a, t) = run(&mut rng, p);
                    longest = longest.max(t);
                    !passes(a, Some(t))
                })
                .count();
            report.push(format!(
                "{}: {failed} of {RUNS} fail, longest {longest:.1} s",
                p.name
            ));
            assert!(failed <= MAX_ERRORS, "{}", report.join("\n"));
        }
        eprintln!("{}", report.join("\n"));
    }

    /// What the defaults do not admit, measured so the README can say so:
    /// a 60 s cap over 10 attempts sleeps minutes and needs its own
    /// `max_total`; a client that never gives up fails every run.
    #[test]
    fn the_default_bounds_reject_unbounded_and_long_policies() {
        let mut rng = SmallRng::seed_from_u64(23);
        let capped = Policy {
            name: "10 attempts, full jitter from 1 s capped at 60 s",
            attempts: 10,
            sleeps_after_last: false,
            sleep: capped_full_jitter,
        };
        let admitted = (0..RUNS)
            .filter(|_| {
                let (a, t) = run(&mut rng, &capped);
                passes(a, Some(t))
            })
            .count();
        eprintln!("{}: {admitted} of {RUNS} pass the defaults", capped.name);
        assert!(admitted < RUNS / 2, "{admitted}");
        // Never ends: stopped at the attempts bound or at max_total.
        for attempts in [d::MAX_ATTEMPTS as usize + 1, 3] {
            assert!(!passes(attempts, None));
        }
    }

    /// The default client timeout of `client.bounded` leaves room above
    /// `max_total`, so a bounded client is told from a killed one.
    #[test]
    fn the_bounds_are_judged_separately() {
        let max_total = d::MAX_TOTAL.as_secs_f64();
        assert!(attempts_within(6, 10) && !attempts_within(11, 10));
        assert!(ends_within(Some(max_total), max_total));
        assert!(!ends_within(Some(max_total + 0.1), max_total));
        assert!(!ends_within(None, max_total));
        assert!(d::MAX_TOTAL < d::BOUNDED_CLIENT_TIMEOUT);
    }
}
