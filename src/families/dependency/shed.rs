//! `dependency.shed` (DEP-004, LOAD-004, RL-007 at overload): a stage at the
//! declared capacity, then one at twice it, open arrival. Judged from the
//! caller's side; the double only proves the dependency was used at all
//! (an API answering from a cache sheds nothing and proves nothing).
//!
//! Percentiles are nearest-rank over every answer of the stage (no
//! histogram: a stage holds at most a few thousand answers).

use std::time::Duration;

use super::drive::{Got, Run, Sent};
use crate::families::dependency::plan::ShedPlan;
use crate::outcome::{prop, Assertion, Outcome};

/// The nearest-rank `q` quantile of `v` (sorted in place); `None` when empty.
pub fn quantile(v: &mut [Duration], q: f64) -> Option<Duration> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

fn rejected(s: &Sent) -> bool {
    matches!(s.status(), Some(429 | 503))
}

fn ms(d: Duration) -> String {
    crate::fmt_duration(d)
}

pub fn judge(p: &ShedPlan, run: &Run) -> Outcome {
    if run.journal.is_empty() {
        return Outcome::error(format!(
            "not exercised: 0 of {} requests reached the dependency: the API answered without calling tminus's double, so its shedding in front of the dependency cannot be judged",
            run.sent.len()
        ));
    }
    let (at_cap, twice) = (0usize, 1usize);
    let stage = |k: usize| -> Vec<(usize, &Sent)> { run.in_stage(k).collect() };
    let (one, two) = (stage(at_cap), stage(twice));
    let rejections: Vec<(usize, &Sent)> =
        two.iter().copied().filter(|(_, s)| rejected(s)).collect();
    let mut admitted: Vec<Duration> = two
        .iter()
        .filter(|(_, s)| s.ok())
        .map(|(_, s)| s.elapsed)
        .collect();
    let admitted_p95 = quantile(&mut admitted, 0.95);
    if rejections.is_empty()
        && admitted.len() == two.len()
        && admitted_p95.is_some_and(|d| d <= p.slo)
    {
        return Outcome::error(format!(
            "not exercised: all {} requests at twice the declared capacity ({:.0}/s) were admitted within the SLO {} (p95 {}): the API's capacity is higher than declared, so nothing was shed; declare a higher `capacity`",
            two.len(),
            p.capacity * 2.0,
            ms(p.slo),
            admitted_p95.map_or("-".into(), ms)
        ));
    }
    let sheds = match rejections.len() {
        0 => Assertion::fail(
            "sheds",
            format!(
                "sheds: none of {} requests at twice the capacity ({:.0}/s) was rejected with 429/503: the API took them all and queued (admitted p95 {})",
                two.len(),
                p.capacity * 2.0,
                admitted_p95.map_or("-".into(), ms)
            ),
            "429/503 beyond capacity",
            "no rejection",
        ),
        n => Assertion::pass(
            "sheds",
            format!(
                "{n} of {} requests at twice the capacity rejected with 429/503",
                two.len()
            ),
        ),
    };
    let all_rejections: Vec<(usize, &Sent)> = run
        .sent
        .iter()
        .enumerate()
        .filter(|(_, s)| rejected(s))
        .collect();
    let mut rej_times: Vec<Duration> = all_rejections.iter().map(|(_, s)| s.elapsed).collect();
    let rej_p99 = quantile(&mut rej_times, 0.99);
    // The share of rejections within the bound, and the chance band of a
    // p99 over this many: a share inside it is the machine's noise as much
    // as the API's (a compile beside the run put 2 of 111 healthy
    // rejections over 50 ms), so it is inconclusive, never a fail.
    let within = rej_times.iter().filter(|d| **d <= p.rejection_p99).count();
    let share = within as f64 / rej_times.len().max(1) as f64;
    let by_chance = crate::chance::percentile_band(0.99, rej_times.len() as u64)
        .filter(|(lo, hi)| share >= *lo && share <= *hi);
    let rejections_fast = match (rej_p99, by_chance) {
        (None, _) => Assertion::skipped("rejections_fast", "not exercised: nothing was rejected"),
        (Some(d), Some((lo, hi))) => {
            Assertion::inconclusive(
                "rejections_fast",
                format!(
                    "inconclusive: rejection p99 {} over {} rejections (bound {}); {:.1}% within the bound is inside the chance band {:.1}%–{:.1}% for {} rejections, so the machine's noise could decide it; shed longer for more rejections",
                    ms(d),
                    rej_times.len(),
                    ms(p.rejection_p99),
                    share * 100.0,
                    lo * 100.0,
                    hi * 100.0,
                    rej_times.len()
                ),
            )
        }
        (Some(d), None) => Assertion::check(
            "rejections_fast",
            d <= p.rejection_p99,
            format!(
                "rejection p99 {} over {} rejections (bound {})",
                ms(d),
                rej_times.len(),
                ms(p.rejection_p99)
            ),
            format!(
                "rejections_fast: the rejections' p99 is {} over {} rejections, over the bound {}: rejecting is not done at once",
                ms(d),
                rej_times.len(),
                ms(p.rejection_p99)
            ),
            format!("p99 within {}", ms(p.rejection_p99)),
            ms(d),
        ),
    };
    let without_ra = all_rejections.iter().find(|(_, s)| {
        matches!(
            s.got,
            Got::Status {
                retry_after: false,
                ..
            }
        )
    });
    let retry_after = match (all_rejections.len(), without_ra) {
        (0, _) => Assertion::skipped("retry_after", "not exercised: nothing was rejected"),
        (_, Some((i, s))) => Assertion::fail(
            "retry_after",
            format!(
                "retry_after: a rejection carried no Retry-After ({})",
                s.line(*i)
            ),
            "Retry-After on every 429/503",
            "absent",
        ),
        (n, None) => Assertion::pass(
            "retry_after",
            format!("all {n} rejections carried Retry-After"),
        ),
    };
    let admitted_within_slo = match admitted_p95 {
        None => Assertion::fail(
            "admitted_within_slo",
            "admitted_within_slo: no request at twice the capacity was admitted (2xx)",
            "admitted requests within the SLO",
            "none admitted",
        ),
        Some(d) => Assertion::check(
            "admitted_within_slo",
            d <= p.slo,
            format!(
                "{} admitted requests at twice the capacity, p95 {} (SLO {})",
                admitted.len(),
                ms(d),
                ms(p.slo)
            ),
            format!(
                "admitted_within_slo: the {} requests admitted at twice the capacity took p95 {}, over the SLO {} (slowest {})",
                admitted.len(),
                ms(d),
                ms(p.slo),
                admitted.last().copied().map_or("-".into(), ms)
            ),
            format!("p95 within {}", ms(p.slo)),
            ms(d),
        ),
    };
    let transport: Vec<(usize, &Sent)> = run
        .sent
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.got, Got::Transport(_) | Got::NoAnswer(_)))
        .collect();
    let no_transport_errors = match transport.first() {
        None => Assertion::pass(
            "no_transport_errors",
            format!("all {} requests were answered", run.sent.len()),
        ),
        Some((i, s)) => Assertion::fail(
            "no_transport_errors",
            format!(
                "no_transport_errors: {} of {} requests got no HTTP answer (first: {})",
                transport.len(),
                run.sent.len(),
                s.line(*i)
            ),
            "an HTTP answer to every request",
            format!("{} without one", transport.len()),
        ),
    };
    let good = |v: &[(usize, &Sent)]| {
        v.iter()
            .filter(|(_, s)| s.ok() && s.elapsed <= p.slo)
            .count()
    };
    let secs = |k: usize| p.drive.phases[k].length.as_secs_f64();
    let (g1, g2) = (
        good(&one) as f64 / secs(at_cap),
        good(&two) as f64 / secs(twice),
    );
    let goodput = Assertion::check(
        "goodput",
        g1 > 0.0 && g2 >= p.goodput_ratio * g1,
        format!("goodput {g2:.1}/s at twice the capacity, {g1:.1}/s at capacity"),
        format!(
            "goodput: {g2:.1}/s answered 2xx within the SLO at twice the capacity, under {:.0} % of the {g1:.1}/s at capacity",
            p.goodput_ratio * 100.0
        ),
        format!("at least {:.1}/s", p.goodput_ratio * g1),
        format!("{g2:.1}/s"),
    );
    Outcome::judged(vec![
        sheds,
        rejections_fast,
        retry_after,
        admitted_within_slo,
        no_transport_errors,
        goodput,
    ])
    .with_properties(vec![
        prop("sent", run.sent.len()),
        prop("attempts", run.journal.len()),
        prop("rejected_at_twice", rejections.len()),
        prop(
            "rejection_p99_ms",
            rej_p99.map_or(0, |d| d.as_millis() as u64),
        ),
        prop(
            "admitted_p95_ms",
            admitted_p95.map_or(0, |d| d.as_millis() as u64),
        ),
        prop("goodput_at_capacity", g1),
        prop("goodput_at_twice", g2),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let ms = Duration::from_millis;
        let mut v: Vec<Duration> = (1..=100).map(ms).collect();
        assert_eq!(quantile(&mut v, 0.99), Some(ms(99)));
        assert_eq!(quantile(&mut v, 0.95), Some(ms(95)));
        assert_eq!(quantile(&mut [ms(7)], 0.99), Some(ms(7)));
        assert_eq!(quantile(&mut [], 0.5), None);
    }
}
