//! The decision rule of `idempotency.concurrent` as pure functions over what
//! each round of parallel requests got, so its error rates can be measured
//! by simulation without a server or sleeping (the tests below judge 10,000
//! synthetic targets per case; the rates are in the family README, which
//! becomes `docs/checks.md`).
//!
//! The documented violation is a **check-then-insert race**: the target
//! reads the key, finds nothing, and inserts its reservation `w` later
//! without a lock or a unique constraint in between. Every request that
//! reads the key before the first reservation lands executes, so a round
//! executes twice exactly when the second request reaches the key check
//! less than `w` after the first. Without a test hook that widens `w`,
//! whether that happens is chance: it depends on how tightly the copies
//! arrive (`together.rs` pre-opens a connection per copy to make that as
//! tight as the client can). One round catches a race only with the
//! probability that the first two arrivals fall within `w`, so the check
//! repeats the round, with a new key each time, up to `rounds` times and
//! stops at the first round that does not hold.
//!
//! A target with an atomic reservation never executes twice, and its other
//! answers (a conflict status while the first runs, a replay after it
//! finished) pass whatever the timing, so the rule cannot fail it by chance
//! with `allow_replay: true`. With `allow_replay: false` a replay fails the
//! round, and whether a copy arrives after the first finished is timing:
//! that setting is only sound when the target is slowed (`slow_headers`)
//! well beyond the arrival spread.

/// What one round of parallel requests got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundTally {
    /// The side-effect counter's rise over the round.
    pub executions: i64,
    /// Answers in `success` (first executions and replays).
    pub successes: usize,
    /// Answers in `conflict_status`.
    pub conflicts: usize,
    /// Answers in neither (5xx included).
    pub others: usize,
    /// Answers with a 5xx status.
    pub server_errors: usize,
    /// Answers 429 (the target's rate limit, not its key handling).
    pub rate_limited: usize,
}

/// The verdict of each property on one round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundJudgement {
    /// The counter moved at all: answers mean something only then.
    pub exercised: bool,
    pub single_effect: bool,
    pub no_5xx: bool,
    pub one_success: bool,
    pub others_conflict_or_replay: bool,
}

impl RoundJudgement {
    /// Every property of the round holds on evidence: the check goes on to
    /// the next round only then.
    pub fn holds(&self) -> bool {
        self.exercised
            && self.single_effect
            && self.no_5xx
            && self.one_success
            && self.others_conflict_or_replay
    }
}

/// Judges one round: exactly one execution, no 5xx, at least one success,
/// and every other answer a conflict or (with `allow_replay`) a replayed
/// success.
pub fn judge_round(t: &RoundTally, allow_replay: bool) -> RoundJudgement {
    RoundJudgement {
        exercised: t.executions > 0,
        single_effect: t.executions == 1,
        no_5xx: t.server_errors == 0,
        one_success: t.successes >= 1,
        others_conflict_or_replay: t.others == 0 && (allow_replay || t.successes <= 1),
    }
}

/// What a round means for the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundOutcome {
    /// Every property held: on to the next round (or pass after the last).
    Holds,
    /// A property failed or was not exercised: this round decides.
    Decides(RoundJudgement),
    /// Some copies were rate limited (429) and nothing executed twice: the
    /// round says nothing about the key, so it is redone after a wait (a
    /// double execution is a failure, rate limited or not).
    RateLimited,
}

/// The rounds rule: rounds run in order, a new key each, and the first
/// round that does not hold decides the check; the check passes when
/// `rounds` rounds held.
pub fn round_outcome(t: &RoundTally, allow_replay: bool) -> RoundOutcome {
    let j = judge_round(t, allow_replay);
    if j.holds() {
        RoundOutcome::Holds
    } else if t.rate_limited > 0 && t.executions <= 1 {
        RoundOutcome::RateLimited
    } else {
        RoundOutcome::Decides(j)
    }
}

#[cfg(test)]
mod simulation {
    //! Error rates of the rule with its default parameters over synthetic
    //! targets: a check-then-insert race of window `w` (the violation) and
    //! an atomic reservation (a target that meets the property), both fed
    //! arrival times from a model of the measured release.

    use super::*;
    use crate::families::idempotency::spec::defaults as d;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const TARGETS: usize = 10_000;
    /// The bound on both error rates (issue 12): 0.1 %, i.e. 10 in 10,000.
    const MAX_ERRORS: usize = TARGETS / 1000;

    /// A standard normal draw (Box–Muller).
    fn normal(rng: &mut StdRng) -> f64 {
        let u: f64 = 1.0 - rng.random_range(0.0f64..1.0);
        let v: f64 = rng.random_range(0.0f64..1.0);
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// Arrival times (seconds, first at 0) of `n` copies at the target's
    /// key check. Measured (`together.rs`'s printed test, 200 releases of
    /// 10 on 127.0.0.1, axum handler, a shared 2-core machine at load 4.7):
    /// the second arrival came after the first by p10 142 µs, median 188,
    /// p90 723, p99 3.7 ms, max 5.8 ms (the server's tasks take the
    /// connections one after another). Each gap between consecutive
    /// arrivals is drawn as: 88 % log-normal with median 210 µs (σ 0.3),
    /// 12 % a stall uniform over 0.3–6 ms. That is slower than measured at
    /// every quantile (12 % below 142 µs → 8.5 %, 50 % below 188 µs → 31 %,
    /// 90 % below 723 µs → 89 %, 99 % below 3.7 ms → 95 %), so the miss
    /// rates below err towards too high.
    ///
    /// (The copies after the first, lazily: a round's fate is settled by
    /// the arrivals within the window, so the rest are never drawn.)
    fn later_arrivals(rng: &mut StdRng, n: usize) -> impl Iterator<Item = f64> + '_ {
        let mut t = 0.0;
        (1..n).map(move |_| {
            t += if rng.random_bool(0.12) {
                rng.random_range(0.0003..0.006)
            } else {
                210e-6 * (0.3 * normal(rng)).exp()
            };
            t
        })
    }

    /// One round against a target whose reservation lands `w` after its key
    /// check: every copy that checks before the first reservation executes
    /// and succeeds, the rest get a conflict (the reservation is in place).
    fn racy_round(rng: &mut StdRng, n: usize, w: f64) -> RoundTally {
        let executed = 1 + later_arrivals(rng, n).take_while(|&x| x < w).count();
        RoundTally {
            executions: executed as i64,
            successes: executed,
            conflicts: n - executed,
            others: 0,
            server_errors: 0,
            rate_limited: 0,
        }
    }

    /// One round against an atomic reservation whose execution takes
    /// `service` seconds: one execution; copies arriving while it runs get
    /// a conflict, later ones the replay.
    fn correct_round(rng: &mut StdRng, n: usize, service: f64) -> RoundTally {
        let conflicts = later_arrivals(rng, n).take_while(|&x| x < service).count();
        RoundTally {
            executions: 1,
            successes: n - conflicts,
            conflicts,
            others: 0,
            server_errors: 0,
            rate_limited: 0,
        }
    }

    /// How many of `TARGETS` checks of `rounds` rounds each pass, each
    /// round drawn by `round`.
    fn passes(
        rng: &mut StdRng,
        rounds: usize,
        allow_replay: bool,
        round: &dyn Fn(&mut StdRng) -> RoundTally,
    ) -> usize {
        (0..TARGETS)
            // As the executor does: stop at the first round that does not hold.
            .filter(|_| {
                (0..rounds).all(|_| round_outcome(&round(rng), allow_replay) == RoundOutcome::Holds)
            })
            .count()
    }

    /// The windows the README's table lists, in seconds.
    const WINDOWS: &[f64] = &[50e-6, 100e-6, 200e-6, 300e-6, 500e-6, 1e-3, 2e-3, 5e-3];
    /// The smallest window of the table whose miss rate the default
    /// scenario keeps within 0.1 %.
    const SMALLEST_CAUGHT: f64 = 300e-6;

    #[test]
    fn check_then_insert_race_error_rates_with_the_defaults() {
        let n = d::CONCURRENCY as usize;
        let rounds = d::ROUNDS as usize;
        let mut rng = StdRng::seed_from_u64(4);
        for &w in WINDOWS {
            let one = passes(&mut rng, 1, true, &|r| racy_round(r, n, w));
            let all = passes(&mut rng, rounds, true, &|r| racy_round(r, n, w));
            eprintln!(
                "check-then-insert window {:.0} µs: {one} of {TARGETS} racy targets passed one round, {all} passed {rounds} rounds",
                w * 1e6
            );
            if w >= SMALLEST_CAUGHT {
                assert!(all <= MAX_ERRORS, "window {w}: {all} racy targets passed");
            }
        }
        // The honest limit: a window far below the arrival spread is almost
        // never hit, whatever the number of rounds.
        let tiny = passes(&mut rng, rounds, true, &|r| racy_round(r, n, 50e-6));
        assert!(tiny > TARGETS / 2, "a 50 µs window is not caught: {tiny}");
        // One round (the old check) misses a 1 ms window about one time in
        // ten: the simulation sees that too.
        let once = passes(&mut rng, 1, true, &|r| racy_round(r, n, 1e-3));
        assert!(once > 500, "one round's miss rate is visible: {once}");
    }

    #[test]
    fn atomic_reservation_never_fails_with_the_defaults() {
        let n = d::CONCURRENCY as usize;
        let rounds = d::ROUNDS as usize;
        let mut rng = StdRng::seed_from_u64(9);
        for service in [0.0, 100e-6, 1e-3, 0.05] {
            let failed =
                TARGETS - passes(&mut rng, rounds, true, &|r| correct_round(r, n, service));
            eprintln!(
                "atomic reservation, execution {:.1} ms: {failed} of {TARGETS} failed {rounds} rounds",
                service * 1e3
            );
            assert_eq!(failed, 0, "a correct target failed by chance");
        }
        // `allow_replay: false` against a fast target is timing: documented,
        // and visible here (most fail when the execution outruns the spread).
        let fast = TARGETS - passes(&mut rng, rounds, false, &|r| correct_round(r, n, 100e-6));
        let slowed = TARGETS - passes(&mut rng, rounds, false, &|r| correct_round(r, n, 0.05));
        eprintln!(
            "allow_replay: false: {fast} of {TARGETS} fast (0.1 ms) correct targets failed, {slowed} slowed (50 ms) ones"
        );
        assert!(fast > TARGETS / 2);
        assert_eq!(slowed, 0);
    }

    #[test]
    fn a_round_holds_only_with_one_execution_and_sound_answers() {
        let ok = RoundTally {
            executions: 1,
            successes: 3,
            conflicts: 7,
            others: 0,
            server_errors: 0,
            rate_limited: 0,
        };
        assert!(judge_round(&ok, true).holds());
        assert!(!judge_round(&ok, false).holds(), "replays not allowed");
        let twice = RoundTally {
            executions: 2,
            ..ok
        };
        assert!(!judge_round(&twice, true).single_effect);
        let nothing = RoundTally {
            executions: 0,
            ..ok
        };
        assert!(!judge_round(&nothing, true).exercised);
        let five = RoundTally {
            others: 1,
            server_errors: 1,
            conflicts: 6,
            ..ok
        };
        let j = judge_round(&five, true);
        assert!(!j.no_5xx && !j.others_conflict_or_replay && j.single_effect);
        assert_eq!(round_outcome(&ok, true), RoundOutcome::Holds);
        let limited = RoundTally {
            successes: 1,
            conflicts: 5,
            others: 4,
            rate_limited: 4,
            ..ok
        };
        assert_eq!(round_outcome(&limited, true), RoundOutcome::RateLimited);
        let limited_twice = RoundTally {
            executions: 2,
            ..limited
        };
        assert!(matches!(
            round_outcome(&limited_twice, true),
            RoundOutcome::Decides(j) if !j.single_effect
        ));
    }
}
