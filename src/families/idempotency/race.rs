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
//! `idempotency.in_flight` judges its conflict only when the retry provably
//! met the first attempt in flight ([`met_in_flight`]); its simulation is
//! below too. No target without a reservation passes it by chance (it never
//! answers a conflict); the rule keeps a correct target from failing when
//! its first attempt finishes while the retry is on its way.
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
/// success. A success counts as a replay only when the counter shows one
/// execution for the round: more, and the others executed, whatever their
/// statuses said (a 201 is a replay or an execution, and only the counter
/// tells which).
pub fn judge_round(t: &RoundTally, allow_replay: bool) -> RoundJudgement {
    RoundJudgement {
        exercised: t.executions > 0,
        single_effect: t.executions == 1,
        no_5xx: t.server_errors == 0,
        one_success: t.successes >= 1,
        others_conflict_or_replay: t.others == 0
            && t.executions <= 1
            && (allow_replay || t.successes <= 1),
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

/// How `idempotency.in_flight`'s retry during processing was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAnswer {
    /// `conflict_status`: the target itself says the key is in flight.
    Conflict,
    /// A success that replays the first (its marker, or its very body).
    Replay,
    /// Anything else: a fresh execution, an error status.
    Other,
}

/// The times `idempotency.in_flight` observes, in seconds from the first
/// attempt's departure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InFlightTimes {
    /// When the first attempt's answer came back.
    pub first_answered: f64,
    /// When the retry during processing left.
    pub retry_sent: f64,
    /// The round trip of a quick request (the retry after completion, a
    /// replay): an upper bound on one way to the target and back.
    pub round_trip: f64,
}

/// Margin, beyond two round trips, by which the first's answer must come
/// after the retry left before a replayed retry counts as having met the
/// first in flight: more than the scheduling stalls of a loaded machine
/// (tens of ms), far less than the default scenario's 450 ms.
pub const IN_FLIGHT_GUARD: f64 = 0.1;

/// Whether the retry provably met the first attempt in flight, so that its
/// answer is judged: the first had not answered when the retry left, and
/// either the answer itself shows it (a conflict, or a fresh execution or
/// error, which a correct target never gives) or, for a replay, the first's
/// answer came so long after the retry left (two round trips plus
/// [`IN_FLIGHT_GUARD`]) that the retry reached the target before the first
/// finished: a target that held the retry and replayed is then judged (it
/// fails: no conflict). A replay any closer may be a correct answer to a
/// retry that arrived just after the first finished: not judged, so a
/// correct target is not failed by chance.
pub fn met_in_flight(t: &InFlightTimes, answer: RetryAnswer) -> bool {
    t.first_answered > t.retry_sent
        && match answer {
            RetryAnswer::Conflict | RetryAnswer::Other => true,
            RetryAnswer::Replay => {
                t.first_answered - t.retry_sent > 2.0 * t.round_trip + IN_FLIGHT_GUARD
            }
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

    /// One way across the network: `base` plus exponential jitter of mean
    /// `jitter`, and 5 % of the time a scheduling stall of up to 80 ms (the
    /// loaded machine's noise, as the client family models it).
    fn transit(rng: &mut StdRng, base: f64, jitter: f64) -> f64 {
        let stall = if rng.random_bool(0.05) {
            rng.random_range(0.0..0.08)
        } else {
            0.0
        };
        base - jitter * (1.0 - rng.random_range(0.0f64..1.0)).ln() + stall
    }

    /// How a synthetic target treats a retry while its key is in flight.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum InFlightTarget {
        /// Meets the property: conflict while in flight, replay after.
        Atomic,
        /// Holds the retry until the first finishes, then replays (no
        /// conflict: the SHOULD is broken).
        HoldsThenReplays,
        /// No reservation: a retry before the first finished executes
        /// again (the completed result is replayed, as the reference's
        /// `race-executes-twice` does).
        NoReservation,
    }

    /// One scenario: the hook's delay, the target's own execution time
    /// (uniform between the two), `retry_after`, and the network (base,
    /// jitter), all in seconds.
    struct Scenario {
        name: &'static str,
        hook: f64,
        own: (f64, f64),
        retry_after: f64,
        net: (f64, f64),
    }

    /// One round of `idempotency.in_flight`'s conflict property: `None`
    /// when the retry overtook the first (the executor redoes the round),
    /// else (judged by the old rule, judged by `met_in_flight`, passed).
    fn in_flight_round(
        rng: &mut StdRng,
        target: InFlightTarget,
        sc: &Scenario,
    ) -> Option<(bool, bool, bool)> {
        let (base, jitter) = sc.net;
        let own = rng.random_range(sc.own.0..sc.own.1);
        let first_at = transit(rng, base, jitter);
        let done = first_at + sc.hook + own;
        let first_answered = done + transit(rng, base, jitter);
        // The sleep before the retry wakes late by up to a stall.
        let retry_sent = sc.retry_after + transit(rng, 0.0, 0.0002);
        let retry_at = retry_sent + transit(rng, base, jitter);
        if retry_at < first_at {
            return None;
        }
        let answer = match target {
            InFlightTarget::Atomic if retry_at < done => RetryAnswer::Conflict,
            InFlightTarget::NoReservation if retry_at < done => RetryAnswer::Other,
            // After the first finished every target replays its result.
            _ => RetryAnswer::Replay,
        };
        let service = 0.0005;
        let round_trip = transit(rng, base, jitter) + service + transit(rng, base, jitter);
        let times = InFlightTimes {
            first_answered,
            retry_sent,
            round_trip,
        };
        Some((
            first_answered > retry_sent,
            met_in_flight(&times, answer),
            answer == RetryAnswer::Conflict,
        ))
    }

    #[test]
    fn in_flight_rule_error_rates() {
        let loopback = (50e-6, 100e-6);
        let wan = (0.02, 0.002);
        let scenarios = [
            Scenario {
                name: "suite (hook 600 ms, retry after 150 ms), loopback",
                hook: 0.6,
                own: (0.001, 0.02),
                retry_after: 0.15,
                net: loopback,
            },
            Scenario {
                name: "suite, 20 ms away",
                hook: 0.6,
                own: (0.001, 0.02),
                retry_after: 0.15,
                net: wan,
            },
            Scenario {
                name: "no hook, execution 0-300 ms, loopback",
                hook: 0.0,
                own: (0.0, 0.3),
                retry_after: 0.15,
                net: loopback,
            },
            Scenario {
                name: "no hook, execution 0-300 ms, 20 ms away",
                hook: 0.0,
                own: (0.0, 0.3),
                retry_after: 0.15,
                net: wan,
            },
        ];
        let mut rng = StdRng::seed_from_u64(150);
        for sc in &scenarios {
            for target in [
                InFlightTarget::Atomic,
                InFlightTarget::HoldsThenReplays,
                InFlightTarget::NoReservation,
            ] {
                let (mut passed, mut failed, mut old_failed, mut unjudged) = (0, 0, 0, 0);
                for _ in 0..TARGETS {
                    // Up to 3 rounds, as the executor redoes overtaken ones.
                    match (0..3).find_map(|_| in_flight_round(&mut rng, target, sc)) {
                        None => unjudged += 1,
                        Some((old, judged, pass)) => {
                            old_failed += usize::from(old && !pass);
                            match (judged, pass) {
                                (true, true) => passed += 1,
                                (true, false) => failed += 1,
                                (false, _) => unjudged += 1,
                            }
                        }
                    }
                }
                eprintln!(
                    "in flight, {}: {target:?}: {passed} passed, {failed} failed ({old_failed} by the old rule), {unjudged} not exercised, of {TARGETS}",
                    sc.name
                );
                match target {
                    InFlightTarget::Atomic => {
                        assert!(
                            failed <= MAX_ERRORS,
                            "{}: {failed} correct targets failed",
                            sc.name
                        )
                    }
                    _ => assert_eq!(passed, 0, "{}: a violating target passed", sc.name),
                }
                if sc.hook > 0.0 {
                    // With the hook every round is judged, and rightly.
                    let right = if target == InFlightTarget::Atomic {
                        passed
                    } else {
                        failed
                    };
                    assert!(
                        right >= TARGETS - MAX_ERRORS,
                        "{}: {target:?} {right}",
                        sc.name
                    );
                }
            }
        }
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
        // Issue 37: ten successes and ten executions are not ten replays.
        let all_executed = RoundTally {
            executions: 10,
            successes: 10,
            conflicts: 0,
            ..ok
        };
        let j = judge_round(&all_executed, true);
        assert!(!j.others_conflict_or_replay && !j.single_effect && j.one_success);
        assert!(!judge_round(&twice, true).others_conflict_or_replay);
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
