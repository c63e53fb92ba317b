//! `dependency.breaker` (DEP-003): healthy, failing (slow 5xx), healthy
//! again, at a constant rate, judged from the journal.
//!
//! The breaker is open from the first request of the fault answered without
//! any dependency attempt (a short circuit). While the fault holds after
//! that, every attempt is a probe or a leak; the most in flight at once is
//! the herd measure (a half-open breaker that lets everything through shows
//! several, because each failing answer takes `fail_delay`).

use std::time::Duration;

use super::drive::Run;
use crate::families::dependency::plan::BreakerPlan;
use crate::outcome::{prop, Assertion, Outcome};

/// Allowance on the declared windows for tminus's own pacing.
const SLACK: Duration = Duration::from_millis(100);

/// The most intervals that overlap at one instant.
pub fn max_overlap(intervals: &[(Duration, Duration)]) -> usize {
    let mut edges: Vec<(Duration, i32)> = intervals
        .iter()
        .flat_map(|(a, b)| [(*a, 1), (*b, -1)])
        .collect();
    // An end before a start at the same instant: touching is not overlapping.
    edges.sort_by_key(|(t, d)| (*t, *d));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

pub fn judge(p: &BreakerPlan, run: &Run) -> Outcome {
    if let Some(e) = run.not_exercised(&p.drive.attribution) {
        return Outcome::error(e);
    }
    if let Some(e) = super::baseline_error(run, 0) {
        return Outcome::error(e);
    }
    let (fault, recovered) = (1usize, 2usize);
    let fault_start = run.stage_starts[fault];
    let fault_end = run.stage_starts[recovered];
    let reached = |i: usize| !run.attempts_of(i).is_empty();
    let first_short = run
        .in_stage(fault)
        .find(|(i, s)| !reached(*i) && s.status().is_some() && !s.ok());
    let props_base = vec![
        prop("sent", run.sent.len()),
        prop("attempts", run.journal.len()),
    ];
    let Some((open_i, _)) = first_short else {
        let n = run.in_stage(fault).count();
        let through = run.in_stage(fault).filter(|(i, _)| reached(*i)).count();
        return Outcome::judged(vec![
            Assertion::fail(
                "opens",
                format!(
                    "opens: the breaker never opened: {through} of {n} requests during the {} fault still reached the failing dependency",
                    crate::fmt_duration(p.drive.phases[fault].length)
                ),
                "requests answered without reaching the failing dependency",
                format!("{through} of {n} reached it"),
            ),
            Assertion::skipped("no_herd", "not judged: the breaker never opened"),
            Assertion::skipped("no_flapping", "not judged: the breaker never opened"),
            closes(p, run, recovered),
        ])
        .with_properties(props_base);
    };
    let t_open = run.sent[open_i].at;
    let to_open = t_open.saturating_sub(fault_start);
    let half = fault_start + p.drive.phases[fault].length / 2;
    let late: Vec<usize> = run
        .in_stage(fault)
        .filter(|(_, s)| s.at >= half)
        .map(|(i, _)| i)
        .collect();
    let late_through = late.iter().filter(|i| reached(**i)).count();
    let opens = if late_through * 2 > late.len() {
        Assertion::fail(
            "opens",
            format!(
                "opens: the breaker did not stay open: {late_through} of {} requests in the second half of the fault reached the failing dependency",
                late.len()
            ),
            "at most half reach it",
            format!("{late_through} of {}", late.len()),
        )
    } else if let Some(w) = p.open_within.filter(|w| to_open > *w + SLACK) {
        Assertion::fail(
            "opens",
            format!(
                "opens: the breaker opened {} after the fault began, later than the declared open_within {}",
                crate::fmt_duration(to_open),
                crate::fmt_duration(w)
            ),
            format!("open within {}", crate::fmt_duration(w)),
            crate::fmt_duration(to_open),
        )
    } else {
        Assertion::pass(
            "opens",
            format!(
                "opened {} after the fault began; {late_through} of {} requests of the fault's second half reached the dependency",
                crate::fmt_duration(to_open),
                late.len()
            ),
        )
    };
    // Attempts that began while open, until the fault ended: leaks and
    // probes. The herd is counted among the attempts of requests that
    // arrived while open (the probes the breaker let through): a retry of a
    // request admitted before it opened is a leak, and a pool that shed a
    // request before the breaker opened must not turn earlier requests'
    // retries into a "herd".
    let leaked = run
        .journal
        .iter()
        .filter(|a| a.at >= t_open && a.at < fault_end)
        .count();
    let open_attempts: Vec<(Duration, Duration)> = run
        .in_stage(fault)
        .filter(|(_, s)| s.at >= t_open)
        .flat_map(|(i, _)| run.attempts_of(i))
        .filter(|a| a.at < fault_end)
        .map(|a| (a.at, a.ended_at.unwrap_or(fault_end.max(a.at))))
        .collect();
    let in_flight = max_overlap(&open_attempts);
    let no_herd = if in_flight as u64 > p.max_probes {
        Assertion::fail(
            "no_herd",
            format!(
                "no_herd: while the breaker was open, {in_flight} dependency attempts of requests it let through were in flight at once ({} such attempts): a half-open herd",
                open_attempts.len()
            ),
            format!("at most {} at once", p.max_probes),
            format!("{in_flight} at once"),
        )
    } else {
        Assertion::pass(
            "no_herd",
            format!(
                "{} probe(s) while the breaker was open, at most {in_flight} at once ({leaked} attempts in all began while it was open)",
                open_attempts.len()
            ),
        )
    };
    let no_flapping = flapping(p, run, fault);
    let mut props = props_base;
    props.push(prop("time_to_open_ms", to_open.as_millis() as u64));
    props.push(prop("attempts_while_open", leaked));
    props.push(prop("probes", open_attempts.len()));
    props.push(prop("probes_in_flight", in_flight));
    Outcome::judged(vec![opens, no_herd, no_flapping, closes(p, run, recovered)])
        .with_properties(props)
}

/// Requests in a row answered without reaching the dependency that show
/// the breaker is open (a pool's odd rejection is not a breaker).
pub const OPEN_RUN: usize = 3;

/// `no_flapping`: once the breaker is established open ([`OPEN_RUN`]
/// requests in a row short-circuited), the steady fault must not close it
/// again: a run of more than `max_probes_in_flight` + 1 requests in a row
/// reaching the failing dependency is a second closed episode.
fn flapping(p: &BreakerPlan, run: &Run, fault: usize) -> Assertion {
    let reqs: Vec<(usize, bool)> = run
        .in_stage(fault)
        .map(|(i, _)| (i, !run.attempts_of(i).is_empty()))
        .collect();
    let mut short = 0usize;
    let Some(established) = reqs.iter().position(|(_, reached)| {
        short = if *reached { 0 } else { short + 1 };
        short >= OPEN_RUN
    }) else {
        return Assertion::skipped(
            "no_flapping",
            format!(
                "not judged: the breaker was never seen open for {OPEN_RUN} requests in a row during the fault"
            ),
        );
    };
    let allowed = p.max_probes as usize + 1;
    let (mut episodes, mut streak, mut longest) = (1usize, 0usize, 0usize);
    let mut first_reopen = None;
    for (i, reached) in &reqs[established + 1..] {
        if *reached {
            streak += 1;
            if streak == allowed + 1 {
                episodes += 1;
                first_reopen.get_or_insert(*i);
            }
            longest = longest.max(streak);
        } else {
            streak = 0;
        }
    }
    match first_reopen {
        None => Assertion::pass(
            "no_flapping",
            format!(
                "one open episode while the fault held: at most {longest} request(s) in a row reached the dependency after it opened"
            ),
        ),
        Some(i) => Assertion::fail(
            "no_flapping",
            format!(
                "no_flapping: the breaker closed again while the dependency still failed: {episodes} closed stretches, the longest {longest} requests in a row reaching it (from {})",
                run.sent[i].line(i)
            ),
            format!("one open episode; at most {allowed} requests in a row reach the dependency"),
            format!("{longest} in a row"),
        ),
    }
}

fn closes(p: &BreakerPlan, run: &Run, recovered: usize) -> Assertion {
    let start = run.stage_starts[recovered];
    let reqs: Vec<(usize, &super::drive::Sent)> = run.in_stage(recovered).collect();
    let last_bad = reqs.iter().rposition(|(_, s)| !s.ok());
    let closed_from = match last_bad {
        None => reqs.first(),
        Some(k) => reqs.get(k + 1),
    };
    match closed_from {
        None => Assertion::fail(
            "closes",
            format!(
                "closes: {} after the dependency recovered, requests still failed (last: {})",
                crate::fmt_duration(p.drive.phases[recovered].length),
                last_bad
                    .and_then(|k| reqs.get(k))
                    .map_or("-".into(), |(i, s)| s.line(*i))
            ),
            "requests succeed again",
            "still failing",
        ),
        Some((_, s)) => {
            let to_close = s.at.saturating_sub(start);
            match p.close_within.filter(|w| to_close > *w + SLACK) {
                Some(w) => Assertion::fail(
                    "closes",
                    format!(
                        "closes: requests succeeded again {} after recovery, later than the declared close_within {}",
                        crate::fmt_duration(to_close),
                        crate::fmt_duration(w)
                    ),
                    format!("closed within {}", crate::fmt_duration(w)),
                    crate::fmt_duration(to_close),
                ),
                None => Assertion::pass(
                    "closes",
                    format!(
                        "requests succeeded again {} after the dependency recovered",
                        crate::fmt_duration(to_close)
                    ),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_counts_concurrent_intervals() {
        let ms = Duration::from_millis;
        assert_eq!(max_overlap(&[]), 0);
        assert_eq!(max_overlap(&[(ms(0), ms(10)), (ms(10), ms(20))]), 1);
        assert_eq!(
            max_overlap(&[(ms(0), ms(30)), (ms(10), ms(40)), (ms(20), ms(25))]),
            3
        );
    }
}
