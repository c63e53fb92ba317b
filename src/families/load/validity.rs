//! Whether a run delivered the schedule it was asked for (catalogue
//! LOAD-001: "`dropped_iterations == 0`, otherwise the run is invalid
//! rather than failed"). A run whose generator dropped sends beyond the
//! bound did not put the target under the load the verdict would speak
//! of: its results are inconclusive (exit 4), never a pass and never a
//! fail.
//!
//! Who dropped a slot decides: a pool that filled while the target's own
//! latency rose (its saturation, `PoolRule::saturated`) is the target's
//! fault and stays judged (the delivery fails); a shortfall with users to
//! spare, or on a full pool the target's latency does not explain, is the
//! harness's.
//!
//! A send later than [`MAX_LATE_P99`] at the 99th percentile (the timer and
//! the scheduler explain microseconds to a few ms) means the machine could
//! not keep the schedule's smoothness, but every send went out: the target
//! met the same requests bunched, which is harder, never easier. So lateness
//! makes a breach inconclusive (the bunching, not the target, may have made
//! it) and leaves a pass standing, saying so. (Invalidating passes too
//! turned the shipped burst inconclusive whenever a compile ran beside it:
//! lateness p99 65–191 ms with a median of 70–210 µs.)

use std::time::Duration;

use super::exec::Figures;
use super::pool::PoolRule;
use crate::outcome::{prop, Outcome, Verdict};

/// The generator's lateness p99 beyond which the schedule was not kept.
pub const MAX_LATE_P99: Duration = Duration::from_millis(50);

/// How the generator failed its schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Invalid {
    /// Sends dropped: every verdict of the run is inconclusive.
    Dropped(String),
    /// Every send went out, some late: a breach is inconclusive, a pass
    /// stands.
    Late(String),
}

impl Invalid {
    pub fn why(&self) -> &str {
        match self {
            Invalid::Dropped(w) | Invalid::Late(w) => w,
        }
    }

    /// Whether a result of this run is void: any, when sends were dropped;
    /// only a breach (`failed`), when they were late.
    pub fn voids(&self, failed: bool) -> bool {
        matches!(self, Invalid::Dropped(_)) || failed
    }

    /// `o` judged on this run.
    pub fn apply(&self, o: Outcome) -> Outcome {
        match self {
            _ if self.voids(o.verdict == Verdict::Fail) => invalidate(o, self.why()),
            Invalid::Late(why) if o.verdict == Verdict::Pass => {
                let mut o = o;
                o.message = format!(
                    "{} (held although {why}: the sends came bunched, which is harder on the target, not easier)",
                    o.message
                );
                o
            }
            Invalid::Late(_) | Invalid::Dropped(_) => o,
        }
    }
}

/// Why the run is invalid (the generator's fault), or None.
/// `min_delivered`: the share of the schedule that must be sent.
pub fn invalid_because(
    f: &Figures,
    rule: Option<&PoolRule>,
    min_delivered: f64,
) -> Option<Invalid> {
    let saturated = rule.is_some_and(|r| r.bound && r.saturated);
    let delivered = f.delivered();
    if delivered < min_delivered && !saturated {
        let whose = match rule {
            Some(r) if r.bound => format!(
                "every one of the pool's users was busy, and the target's own saturation is not shown ({:.1} ms on the full pool, {:.1} ms under light load): the pool, not the target, held the load back; the rate needed about {} users",
                r.bound_ms, r.light_ms, r.needed_users
            ),
            _ => "the pool had users to spare, so the generator itself fell behind its schedule (this machine could not send at this rate)".to_owned(),
        };
        return Some(Invalid::Dropped(format!(
            "the generator dropped {} of {:.0} scheduled sends ({:.1}% delivered, at least {:.0}% required): {whose}",
            f.dropped(),
            f.scheduled,
            delivered * 100.0,
            min_delivered * 100.0
        )));
    }
    let late = &f.overall.lateness;
    if !late.is_empty() {
        let p99 = Duration::from_micros(late.value_at_quantile(0.99));
        if p99 > MAX_LATE_P99 {
            return Some(Invalid::Late(format!(
                "the generator sent late: its own lateness p99 {} (median {}) is beyond the {} bound, so the target did not see the arrival schedule",
                crate::fmt_duration(p99),
                crate::fmt_duration(Duration::from_micros(late.value_at_quantile(0.5))),
                crate::fmt_duration(MAX_LATE_P99)
            )));
        }
    }
    None
}

/// A result judged on an invalid run: a pass or a fail becomes
/// inconclusive, saying why and what this run measured.
pub fn invalidate(o: Outcome, why: &str) -> Outcome {
    if !matches!(o.verdict, Verdict::Pass | Verdict::Fail) {
        return o;
    }
    let was = if o.verdict == Verdict::Pass {
        "held"
    } else {
        "breached"
    };
    let mut props = o.properties;
    props.retain(|(k, _)| k != "conclusive");
    props.push(prop("conclusive", false));
    props.push(prop("valid_run", false));
    Outcome::inconclusive(format!(
        "inconclusive: invalid run (LOAD-001): {why}; on this run it {was}: {}",
        o.message
    ))
    .with_properties(props)
    .with_evidence(o.evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::load::stats::KindStats;

    fn figures(sent: u64, scheduled: f64, late_us: u64) -> Figures {
        let mut k = KindStats::new();
        for _ in 0..sent {
            k.lateness.record(late_us).unwrap();
            k.raw.record(1_000).unwrap();
            k.corrected.record(1_000).unwrap();
            *k.statuses.entry(200).or_default() += 1;
        }
        k.requests = sent;
        Figures::new(vec![k], Duration::from_secs(1), scheduled)
    }

    fn rule(bound: bool, saturated: bool) -> PoolRule {
        PoolRule {
            bound,
            saturated,
            bound_ms: 50.0,
            light_ms: 50.0,
            needed_users: 8,
        }
    }

    #[test]
    fn drops_are_the_harness_s_unless_the_target_saturated() {
        let f = figures(50, 100.0, 100);
        let why = invalid_because(&f, Some(&rule(false, false)), 0.9).unwrap();
        assert!(matches!(why, Invalid::Dropped(_)), "{why:?}");
        let why = why.why();
        assert!(why.contains("dropped 50 of 100"), "{why}");
        assert!(why.contains("fell behind"), "{why}");
        let why = invalid_because(&f, Some(&rule(true, false)), 0.9).unwrap();
        assert!(why.why().contains("pool, not the target"), "{why:?}");
        // Dropped: a pass is not evidence.
        let o = why.apply(Outcome::pass("p95 < 1s: 3 ms"));
        assert!(
            o.inconclusive && o.message.contains("LOAD-001"),
            "{}",
            o.message
        );
        // The target saturated: its fault, judged elsewhere.
        assert_eq!(invalid_because(&f, Some(&rule(true, true)), 0.9), None);
        // Within the bound: valid.
        assert_eq!(invalid_because(&figures(95, 100.0, 100), None, 0.9), None);
    }

    #[test]
    fn late_sends_beyond_the_bound_invalidate() {
        let late = invalid_because(&figures(100, 100.0, 80_000), None, 0.9).unwrap();
        assert!(matches!(late, Invalid::Late(_)), "{late:?}");
        assert!(late.why().contains("sent late"), "{late:?}");
        assert_eq!(
            invalid_because(&figures(100, 100.0, 2_000), None, 0.9),
            None
        );
        // A breach on bunched sends may be the bunching's: inconclusive.
        let o = late.apply(Outcome::fail("p95 breached", "p95 < 1s", "2 s"));
        assert_eq!(o.verdict, Verdict::Error);
        assert!(
            o.inconclusive && o.message.contains("LOAD-001"),
            "{}",
            o.message
        );
        // Every send went out, bunched: a pass stands and says so.
        let o = late.apply(Outcome::pass("p95 < 1s: 3 ms"));
        assert_eq!(o.verdict, Verdict::Pass);
        assert!(
            o.message.contains("held although the generator sent late"),
            "{}",
            o.message
        );
        let e = Outcome::error("no request completed");
        assert_eq!(late.apply(e.clone()).message, e.message);
        assert_eq!(invalidate(e.clone(), late.why()).message, e.message);
    }
}
