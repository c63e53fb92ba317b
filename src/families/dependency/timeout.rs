//! `dependency.timeout_budget` (DEP-001, LOAD-007's outbound timeout): the
//! dependency healthy, slow just under the declared per-try timeout, slow
//! well over it, then hanging; judged from both sides.
//!
//! A timeout is a bound, so the rules read maxima, not percentiles: one
//! request over the SLO fails `within_slo`, one attempt held past the per-try
//! budget fails `attempts_abandoned`. Each bound carries `tolerance` (100 ms by
//! default) for tminus's own measurement; the README states the error rates.

use std::time::Duration;

use super::drive::{Got, Run};
use crate::double::End;
use crate::families::dependency::plan::TimeoutPlan;
use crate::outcome::{prop, Assertion, Outcome};

fn ms(d: Duration) -> String {
    crate::fmt_duration(d)
}

pub fn judge(p: &TimeoutPlan, run: &Run) -> Outcome {
    if let Some(e) = run.not_exercised(&p.drive.attribution) {
        return Outcome::error(e);
    }
    let stage = |name: &str| p.drive.phases.iter().position(|s| s.name == name);
    let baseline = stage("baseline").unwrap_or(0);
    if let Some(e) = super::baseline_error(run, baseline) {
        return Outcome::error(e);
    }
    let under = stage("slow-under");
    let faults: Vec<(usize, &super::drive::Sent)> = run
        .sent
        .iter()
        .enumerate()
        .filter(|(_, s)| s.stage != baseline)
        .collect();
    let bound = p.slo + p.tolerance;
    // within_slo: the slowest answer of the fault phases.
    let late: Vec<usize> = faults
        .iter()
        .filter(|(_, s)| s.elapsed > bound || s.status().is_none())
        .map(|(i, _)| *i)
        .collect();
    let slowest = faults
        .iter()
        .max_by_key(|(_, s)| s.elapsed)
        .map(|(i, s)| (*i, s.elapsed));
    let within_slo = match late.first() {
        None => Assertion::pass(
            "within_slo",
            format!(
                "all {} requests of the slow and hanging phases answered within the SLO {} (slowest {})",
                faults.len(),
                ms(p.slo),
                slowest.map_or("-".into(), |(_, d)| ms(d))
            ),
        ),
        Some(first) => {
            let (worst, d) = slowest.unwrap_or((*first, Duration::ZERO));
            Assertion::fail(
                "within_slo",
                format!(
                    "within_slo: {} of {} requests of the slow and hanging phases were not answered within the SLO {}: the slowest took {} ({})",
                    late.len(),
                    faults.len(),
                    ms(p.slo),
                    ms(d),
                    run.sent[worst].line(worst)
                ),
                format!("every answer within {}", ms(bound)),
                format!("slowest {}", ms(d)),
            )
        }
    };
    // deliberate: a fallback (2xx) or a 5xx, never a dropped connection or a
    // 4xx. A request still unanswered at tminus's cap is `within_slo`'s
    // failure, not this one's: what it would have answered is unknown.
    let undeliberate: Vec<usize> = faults
        .iter()
        .filter(|(_, s)| match (&s.got, s.status()) {
            (Got::NoAnswer(_), _) => false,
            (_, Some(st)) => !((200..300).contains(&st) || (500..600).contains(&st)),
            (_, None) => true,
        })
        .map(|(i, _)| *i)
        .collect();
    let deliberate = match undeliberate.first() {
        None => Assertion::pass(
            "deliberate",
            "every answer of the fault phases was a 2xx or a deliberate 5xx",
        ),
        Some(i) => Assertion::fail(
            "deliberate",
            format!(
                "deliberate: {} of {} answers of the fault phases were neither a 2xx nor a 5xx (first: {})",
                undeliberate.len(),
                faults.len(),
                run.sent[*i].line(*i)
            ),
            "a 2xx fallback or 502/503/504",
            run.sent[*i].line(*i),
        ),
    };
    // attempts_abandoned: the attempts of the slow-over and hanging phases.
    let over: Vec<usize> = ["slow-over", "hang"]
        .iter()
        .filter_map(|n| stage(n))
        .collect();
    let attempt_bound = p.try_timeout.unwrap_or(p.slo) + p.tolerance;
    let mut held = Vec::new();
    for (i, s) in run.sent.iter().enumerate() {
        if over.contains(&s.stage) {
            for a in run.attempts_of(i) {
                held.push((i, a.end, a.held()));
            }
        }
    }
    let too_long: Vec<&(usize, End, Option<Duration>)> = held
        .iter()
        .filter(|(_, end, h)| *end == End::Open || h.is_none_or(|h| h > attempt_bound))
        .collect();
    let longest = held.iter().filter_map(|(_, _, h)| *h).max();
    let budget_name = if p.try_timeout.is_some() {
        "the declared try_timeout"
    } else {
        "the SLO (no try_timeout declared)"
    };
    let attempts_abandoned = if held.is_empty() {
        Assertion::skipped(
            "attempts_abandoned",
            "not exercised: no request of the slow-over and hanging phases reached the dependency",
        )
    } else {
        match too_long.first() {
            None => Assertion::pass(
                "attempts_abandoned",
                format!(
                    "{} attempts of the slow-over and hanging phases, each ended within {} of {budget_name} (longest {})",
                    held.len(),
                    ms(attempt_bound),
                    longest.map_or("-".into(), ms)
                ),
            ),
            Some((i, end, h)) => Assertion::fail(
                "attempts_abandoned",
                format!(
                    "attempts_abandoned: {} of {} dependency attempts were held past {} ({budget_name} + tolerance): {} (for {})",
                    too_long.len(),
                    held.len(),
                    ms(attempt_bound),
                    match (end, h) {
                        (End::Open, _) => "one was still open when the check ended".to_owned(),
                        (_, Some(h)) => format!("one was held {}", ms(*h)),
                        _ => "one never ended".to_owned(),
                    },
                    run.sent[*i].line(*i)
                ),
                format!("every attempt ended within {}", ms(attempt_bound)),
                format!("longest {}", longest.map_or("open".into(), ms)),
            ),
        }
    };
    // total_within_slo: a request's attempts from first arrival to last end.
    let mut spans = Vec::new();
    for (i, _) in &faults {
        let a = run.attempts_of(*i);
        if let (Some(first), Some(last_end)) = (
            a.first().map(|x| x.at),
            a.iter().map(|x| x.ended_at.unwrap_or(Duration::MAX)).max(),
        ) {
            spans.push((*i, a.len(), last_end.saturating_sub(first)));
        }
    }
    let over_budget: Vec<&(usize, usize, Duration)> =
        spans.iter().filter(|(_, _, d)| *d > bound).collect();
    let total_within_slo = if spans.is_empty() {
        Assertion::skipped(
            "total_within_slo",
            "not exercised: no request of the fault phases reached the dependency",
        )
    } else {
        match over_budget.first() {
            None => Assertion::pass(
                "total_within_slo",
                format!(
                    "{} requests reached the dependency during its faults; every one's attempts (at most {}) ended within the SLO {}",
                    spans.len(),
                    spans.iter().map(|s| s.1).max().unwrap_or(0),
                    ms(p.slo)
                ),
            ),
            Some((i, n, d)) => Assertion::fail(
                "total_within_slo",
                format!(
                    "total_within_slo: {} of {} requests kept the dependency busy past the SLO {}: {n} attempts over {} ({})",
                    over_budget.len(),
                    spans.len(),
                    ms(p.slo),
                    if *d == Duration::MAX { "(one never ended)".into() } else { ms(*d) },
                    run.sent[*i].line(*i)
                ),
                format!("attempts x budget + backoff within {}", ms(p.slo)),
                format!("{n} attempts over {}", ms(*d)),
            ),
        }
    };
    let waits = match under {
        None => Assertion::skipped(
            "waits_under_timeout",
            "not judged: no try_timeout declared, so there is no delay just under it",
        ),
        Some(u) => {
            let reached: Vec<(usize, &super::drive::Sent)> = run
                .in_stage(u)
                .filter(|(i, _)| !run.attempts_of(*i).is_empty())
                .collect();
            let failed: Vec<&(usize, &super::drive::Sent)> =
                reached.iter().filter(|(_, s)| !s.ok()).collect();
            if reached.is_empty() {
                Assertion::skipped(
                    "waits_under_timeout",
                    "not exercised: no request of the slow-under phase reached the dependency",
                )
            } else if let Some((i, s)) = failed.first() {
                Assertion::fail(
                    "waits_under_timeout",
                    format!(
                        "waits_under_timeout: {} of {} requests whose dependency answered in 80 % of the try_timeout failed ({})",
                        failed.len(),
                        reached.len(),
                        s.line(*i)
                    ),
                    "2xx",
                    s.line(*i),
                )
            } else {
                Assertion::pass(
                    "waits_under_timeout",
                    format!(
                        "{} requests whose dependency answered just under the try_timeout succeeded",
                        reached.len()
                    ),
                )
            }
        }
    };
    let props = vec![
        prop("sent", run.sent.len()),
        prop("reached_dependency", run.reached()),
        prop("attempts", run.journal.len()),
        prop(
            "slowest_ms",
            slowest.map_or(0, |(_, d)| d.as_millis() as u64),
        ),
        prop(
            "longest_attempt_ms",
            longest.map_or(0, |d| d.as_millis() as u64),
        ),
    ];
    Outcome::judged(vec![
        within_slo,
        deliberate,
        attempts_abandoned,
        total_within_slo,
        waits,
    ])
    .with_properties(props)
}
