//! The judges of the client kinds: pure functions from recorded attempt
//! timelines to an outcome, so they can be unit-tested without processes.

use std::collections::HashMap;
use std::time::Duration;

pub use super::bounds::bounded;
use super::exec::{stderr_note, RunRecord};
use super::process::{ClientRunResult, Ended};
use super::spec::defaults;
use super::timing::{
    backoff_rule, herd_growth, jitter_judgement_in_time, least_judged, retry_after_rule, Spread,
    Timed, Wait, WaitRule, LEAST_CONTROL,
};
use crate::families::client::plan::{KeyFormat, Policy503};
use crate::outcome::Outcome;
use crate::outcome::{prop, Assertion, PropValue, Verdict};
use crate::upstream::{Answer, Attempt, RetryAfterForm};

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn short_key(k: &Option<String>) -> String {
    match k {
        Some(k) if k.chars().count() > 10 => {
            format!("key={}…", k.chars().take(8).collect::<String>())
        }
        Some(k) => format!("key={k}"),
        None => "no key".into(),
    }
}

/// `#1 +0.000s POST → 429 Retry-After 1s key=1b2c3d4e…; #2 +1.061s ...`
pub fn timeline(a: &[&Attempt]) -> String {
    let Some(first) = a.first() else {
        return "no attempts".into();
    };
    let parts: Vec<String> = a
        .iter()
        .enumerate()
        .take(40)
        .map(|(i, x)| {
            format!(
                "#{} +{:.3}s {} {} -> {} {} body={}",
                i + 1,
                secs(x.at.saturating_sub(first.at)),
                x.method,
                x.path,
                x.answer.short(),
                short_key(&x.idempotency_key),
                &x.body_sha256[..8.min(x.body_sha256.len())]
            )
        })
        .collect();
    let more = if a.len() > 40 {
        format!("; … {} more", a.len() - 40)
    } else {
        String::new()
    };
    format!("timeline: {}{more}", parts.join("; "))
}

/// The gap from an answer to the next attempt.
fn gap(prev: &Attempt, next: &Attempt) -> f64 {
    secs(next.at) - secs(prev.answered_at)
}

/// A kind that judges one property reports it as that property's assertion,
/// so JUnit, JSON and HTML name it like the properties of any other kind.
pub fn as_property(property: &'static str, o: Outcome) -> Outcome {
    let a = match o.verdict {
        Verdict::Pass => Assertion::pass(property, o.message),
        Verdict::Fail | Verdict::Warn | Verdict::Waived => Assertion::fail(
            property,
            o.message,
            o.expected.unwrap_or_default(),
            o.actual.unwrap_or_default(),
        ),
        Verdict::Error if o.inconclusive => Assertion::inconclusive(property, o.message),
        Verdict::Error => Assertion::not_exercised(property, o.message),
        Verdict::Skipped => Assertion::skipped(property, o.message),
    };
    Outcome::judged(vec![a]).with_properties(o.properties)
}

/// Every property of a check not exercised for one reason.
pub(super) fn none_exercised(properties: &[&'static str], why: &str) -> Outcome {
    Outcome::judged(
        properties
            .iter()
            .map(|p| Assertion::not_exercised(p, why))
            .collect(),
    )
}

/// Why the scripted `what` never reached the client: "the client never
/// received the scripted 401: it requested POST /v1/customers, not scripted".
pub fn not_served(what: &str, a: &[&Attempt]) -> String {
    let mut unscripted: Vec<String> = Vec::new();
    for x in a.iter().filter(|x| !x.is_scripted()) {
        let line = format!("{} {}", x.method, x.path);
        if !unscripted.contains(&line) {
            unscripted.push(line);
        }
    }
    let mut why = format!("the client never received the scripted {what}");
    if a.is_empty() {
        why.push_str(": it sent no request");
    } else if !unscripted.is_empty() {
        why.push_str(&format!(
            ": it requested {}, not scripted",
            unscripted.join(", ")
        ));
    }
    format!("{why}; {}", timeline(a))
}

/// The waits after scripted answers with Retry-After: (wait, Retry-After in
/// seconds, HTTP-date form).
pub(super) fn retry_after_waits(a: &[&Attempt], tolerance: Duration) -> Vec<(Wait, f64, bool)> {
    a.windows(2)
        .filter(|w| w[0].is_scripted())
        .filter_map(|w| {
            let ra = w[0].answer.retry_after()?;
            let date = matches!(
                &w[0].answer,
                Answer::Status {
                    form: Some(RetryAfterForm::HttpDate),
                    ..
                }
            );
            // An HTTP-date has whole-second precision: allow one second (RETRY-001).
            let required = ra - if date { 1.0 } else { 0.0 } - secs(tolerance);
            Some((
                Wait {
                    gap: gap(w[0], w[1]),
                    required,
                },
                ra,
                date,
            ))
        })
        .collect()
}

/// `client.respects_retry_after`: `waits_retry_after` (no early retry over
/// `samples` waits), `retries` (it retried after each of them: a client
/// that gives up instead lacks the feature, a FAIL where the profile makes
/// retrying a contract and a WARN otherwise, never an error: issue 22 case
/// 6) and `understands_http_date` (with `date`, a client that retries
/// after the seconds form of the control run but ends after the date).
pub fn retry_after(runs: &[RunRecord], tolerance: Duration, samples: usize, date: bool) -> Outcome {
    const PROPS: [&str; 3] = ["waits_retry_after", "retries", "understands_http_date"];
    let r = &runs[0];
    let res = &r.results[0];
    let a = r.of(res.client);
    let waits = retry_after_waits(&a, tolerance);
    let only: Vec<Wait> = waits.iter().map(|w| w.0).collect();
    let shown: Vec<String> = only.iter().map(|w| format!("{:.3}", w.gap)).collect();
    let mut props = vec![
        prop("waits_s", shown.join(", ")),
        prop("samples", only.len()),
    ];
    let served = a
        .iter()
        .filter(|x| x.is_scripted() && x.answer.retry_after().is_some())
        .count();
    if served == 0 {
        // It never reached the scenario: the suite does not fit the client.
        return none_exercised(
            &PROPS,
            &(not_served("answer with Retry-After", &a) + &stderr_note(res)),
        )
        .with_properties(props);
    }
    let rule = retry_after_rule(&only, samples);
    let waited = match rule {
        WaitRule::Early(i) => {
            let (w, ra, date) = waits[i];
            Assertion::fail(
                PROPS[0],
                format!(
                    "the client retried {:.3} s after a Retry-After of {ra:.0} s{}; {}",
                    w.gap,
                    if date { " (HTTP-date)" } else { "" },
                    timeline(&a)
                ),
                format!("next attempt at least {:.3} s after the answer", w.required),
                format!("{:.3} s", w.gap),
            )
        }
        // It never retried: the feature is missing, `retries` says so.
        WaitRule::TooFew if only.is_empty() => {
            Assertion::skipped(PROPS[0], "not judged: the client never retried (see retries)")
        }
        // It retries, but gave up before the scenario's samples: the
        // scenario does not fit its policy (a suite setting, so an error).
        WaitRule::TooFew => Assertion::not_exercised(
            PROPS[0],
            format!(
                "the client retried after {} of the {served} scripted answers with Retry-After it received; {samples} waits are needed to judge it (it {}): lower `samples` to what its policy retries; {}{}",
                only.len(),
                res.describe(),
                timeline(&a),
                stderr_note(res)
            ),
        ),
        WaitRule::Held => {
            let min = only.iter().map(|w| w.gap).fold(f64::INFINITY, f64::min);
            props.push(prop("min_gap_s", PropValue::rounded(min, 3)));
            Assertion::pass(
                PROPS[0],
                format!(
                    "the client waited out Retry-After {} times, the shortest wait {min:.3} s: [{}] s",
                    only.len(),
                    shown.join(", ")
                ),
            )
        }
    };
    let retries = if !only.is_empty() {
        Assertion::pass(
            PROPS[1],
            format!(
                "the client retried after {} of the {served} answers with Retry-After",
                only.len()
            ),
        )
    } else {
        Assertion::fail(
            PROPS[1],
            format!(
                "the client never retried after a 429 with Retry-After (it {}), so whether it waits Retry-After is not observable; to make it so, run the client with retries on (at least {} attempts); {}{}",
                res.describe(),
                samples + 1,
                timeline(&a),
                stderr_note(res)
            ),
            "a retry after the answer with Retry-After",
            "no retry",
        )
    };
    let http_date = http_date_understood(runs, date, &only, tolerance);
    Outcome::judged(vec![waited, retries, http_date]).with_properties(props)
}

/// `understands_http_date`: judged only where the control run (the seconds
/// form, `runs[1]`) shows the client does retry.
fn http_date_understood(
    runs: &[RunRecord],
    date: bool,
    date_waits: &[Wait],
    tolerance: Duration,
) -> Assertion {
    const P: &str = "understands_http_date";
    if !date {
        return Assertion::skipped(P, "not applicable: `form: seconds`");
    }
    if !date_waits.is_empty() {
        return Assertion::pass(
            P,
            format!(
                "the client retried after {} HTTP-date Retry-After answer(s)",
                date_waits.len()
            ),
        );
    }
    let Some(control) = runs.get(1) else {
        return Assertion::skipped(
            P,
            "not judged: with the suite's own `upstream:` there is no seconds-form control run",
        );
    };
    let c = &control.results[0];
    let ca = control.of(c.client);
    if retry_after_waits(&ca, tolerance).is_empty() {
        return Assertion::skipped(
            P,
            "not judged: the client retries after neither form (see retries)",
        );
    }
    let d = &runs[0].results[0];
    Assertion::fail(
        P,
        format!(
            "the client retries after `Retry-After: {}` in seconds (the control run) but not after the HTTP-date form: it {} ({}); it does not understand the HTTP-date form of Retry-After{}",
            defaults::RETRY_AFTER.as_secs(),
            d.describe(),
            timeline(&runs[0].of(d.client)),
            stderr_note(d)
        ),
        "a retry after the HTTP-date Retry-After, as after the seconds form",
        format!("no retry: it {}", d.describe()),
    )
}

/// `client.exponential_backoff`: a herd's gaps after scripted 429s without
/// Retry-After grow (`gaps_grow`, see [`backoff_rule`]) and none is above
/// `max_gap` (`gap_capped`).
pub fn exponential(
    runs: &[RunRecord],
    growth: f64,
    min_increase: Duration,
    max_gap: Duration,
    min_gaps: usize,
) -> Outcome {
    const PROPS: [&str; 2] = ["gaps_grow", "gap_capped"];
    let r = &runs[0];
    // Each client's gaps, from each scripted answer without Retry-After to
    // the attempt after it.
    let gaps_of = |results: &[ClientRunResult]| -> Vec<Vec<f64>> {
        results
            .iter()
            .map(|res| {
                r.of(res.client)
                    .windows(2)
                    .filter(|w| {
                        w[0].is_scripted()
                            && !w[0].answer.is_success()
                            && w[0].answer.retry_after().is_none()
                    })
                    .map(|w| gap(w[0], w[1]))
                    .collect()
            })
            .collect()
    };
    let gaps = gaps_of(&r.results);
    let k = r.results.len();
    let full = gaps.iter().filter(|g| g.len() >= min_gaps).count();
    let needed = least_judged(k);
    if full < needed {
        // Show the client that got least far.
        let (least, res) = r
            .results
            .iter()
            .enumerate()
            .min_by_key(|(i, _)| gaps[*i].len())
            .expect("a herd has clients");
        let a = r.of(res.client);
        // The herd's own attempts: the control group is scripted on its route.
        let herd_scripted = r
            .results
            .iter()
            .any(|res| r.of(res.client).iter().any(|x| x.is_scripted()));
        let why = if !herd_scripted {
            not_served("429 without Retry-After", &a)
        } else {
            format!(
                "only {full} of {k} clients made {min_gaps} retries after scripted answers without Retry-After; at least {needed} are needed to judge the herd's backoff (client {} made {}: it {}; {})",
                res.client,
                gaps[least].len(),
                res.describe(),
                timeline(&a)
            )
        };
        return none_exercised(&PROPS, &(why + &stderr_note(res)));
    }
    let capped = match gaps
        .iter()
        .enumerate()
        .flat_map(|(c, g)| g.iter().map(move |g| (c, *g)))
        .find(|(_, g)| *g > secs(max_gap))
    {
        Some((c, g)) => Assertion::fail(
            PROPS[1],
            format!(
                "client {} waited {g:.3} s, above the cap; {}",
                r.results[c].client,
                timeline(&r.of(r.results[c].client))
            ),
            format!("every gap at most {:.0} s", secs(max_gap)),
            format!("{g:.3} s"),
        ),
        None => Assertion::pass(
            PROPS[1],
            format!(
                "every gap of the {k} clients at most {}",
                crate::fmt_duration(max_gap)
            ),
        ),
    };
    let g = herd_growth(&gaps, min_gaps).expect("least_judged clients left every judged gap");
    let shown: Vec<String> = g
        .per_attempt
        .iter()
        .map(|m| format!("{:.0}", m * 1000.0))
        .collect();
    let shown = shown.join(", ");
    let ratio = g.ratio();
    let summary = format!(
        "{full} of {k} clients judged on {min_gaps} gaps; the herd's gap per attempt (mean without the lowest and highest quarter), ms: [{shown}]; the later half waits {:.3} s, {ratio:.1} x the earlier half's {:.3} s",
        g.late, g.early
    );
    // The control group's growth (a constant backoff, run alongside): what
    // the machine's scheduling alone adds to later gaps.
    let control_gaps = gaps_of(&r.control);
    let noise = (control_gaps.iter().filter(|g| g.len() >= min_gaps).count() >= LEAST_CONTROL)
        .then(|| herd_growth(&control_gaps, min_gaps))
        .flatten();
    let noise_increase = noise.as_ref().map(|n| (n.late - n.early).max(0.0));
    let grows = if backoff_rule(&g, growth, secs(min_increase)) {
        match noise_increase {
            Some(ni) if g.late - g.early >= secs(min_increase) + 2.0 * ni => Assertion::pass(
                PROPS[0],
                format!(
                    "{summary}; the machine's own growth, {:.0} ms ({} copies of tminus's reference client with a constant backoff alongside), is well below it",
                    ni * 1000.0,
                    r.control.len()
                ),
            ),
            Some(ni) => Assertion::inconclusive(
                PROPS[0],
                format!(
                    "inconclusive: the machine's scheduling could explain the growth: {summary}; copies of tminus's reference client with a constant backoff, run alongside, grew by {:.0} ms (the herd must grow by {} plus twice that): rerun on a less loaded machine",
                    ni * 1000.0,
                    crate::fmt_duration(min_increase)
                ),
            ),
            None => Assertion::inconclusive(
                PROPS[0],
                format!(
                    "inconclusive: {summary}; the machine's own growth was not measured (fewer than {LEAST_CONTROL} of the {} control clients made {min_gaps} retries), so growth cannot be told from its noise",
                    r.control.len()
                ),
            ),
        }
    } else {
        // A sample client's timeline shows what "flat" looked like.
        let sample = (0..k).find(|i| gaps[*i].len() >= min_gaps).unwrap_or(0);
        Assertion::fail(
            PROPS[0],
            format!(
                "the gaps between attempts do not grow: {summary}; client {}: {}",
                r.results[sample].client,
                timeline(&r.of(r.results[sample].client))
            ),
            format!(
                "the later half >= {growth} x the earlier half and >= {} longer",
                crate::fmt_duration(min_increase)
            ),
            format!("{ratio:.2} x, {:.0} ms longer", (g.late - g.early) * 1000.0),
        )
    };
    let mut props = vec![
        prop("gap_per_attempt_ms", shown.clone()),
        prop("growth", PropValue::rounded(ratio, 2)),
        prop("clients_judged", full),
        prop("control_clients", r.control.len()),
    ];
    if let Some(ni) = noise_increase {
        props.push(prop(
            "noise_increase_ms",
            PropValue::rounded(ni * 1000.0, 1),
        ));
    }
    Outcome::judged(vec![grows, capped]).with_properties(props)
}

/// Each client's first retry after the scripted answer with Retry-After,
/// as an offset from the wait it asked for: (offsets, clients that received
/// the answer, the CPU seconds each retrying client used between its answer
/// and its retry where sampled).
fn retry_offsets<'a>(
    r: &RunRecord,
    clients: impl Iterator<Item = &'a ClientRunResult>,
) -> (Vec<Timed>, usize, Vec<f64>) {
    let mut offsets = Vec::new();
    let mut cpu = Vec::new();
    let mut received = 0;
    for res in clients {
        let a = r.of(res.client);
        let Some(i) = a
            .iter()
            .position(|x| x.is_scripted() && x.answer.retry_after().is_some())
        else {
            continue;
        };
        received += 1;
        if let (Some(prev), Some(next)) = (a.get(i), a.get(i + 1)) {
            let ra = prev.answer.retry_after().unwrap_or(0.0);
            let due = secs(prev.answered_at) + ra;
            offsets.push(Timed {
                due,
                offset: secs(next.at) - due,
            });
            if let Some(used) = r
                .cpu
                .as_ref()
                .and_then(|b| b.used_between(res.client, prev.answered_at, next.at))
            {
                cpu.push(used);
            }
        }
    }
    (offsets, received, cpu)
}

/// The spread the herd's own CPU work could make of a lockstep herd on
/// this machine: the CPU its clients used between answer and retry, summed
/// (scaled up to every retrying client when some were not sampled), over
/// twice the cores: a herd waking together that needs `D` CPU seconds
/// drains over `D / cores` at best, and half of it lies within half of that.
/// (used, sampled, the bound); `None` when nothing was sampled.
fn cpu_bound(used: &[f64], retried: usize) -> Option<(f64, usize, f64)> {
    if used.is_empty() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let total: f64 = used.iter().sum::<f64>() * retried as f64 / used.len() as f64;
    Some((total, used.len(), total / (2.0 * cores)))
}

pub fn jitter(runs: &[RunRecord], min_spread: Duration) -> Outcome {
    const P: &str = "spread";
    let r = &runs[0];
    let (timed, received, used) = retry_offsets(r, r.results.iter());
    let offsets: Vec<f64> = timed.iter().map(|t| t.offset).collect();
    let k = r.results.len();
    if offsets.len() < (k / 2).max(2) {
        let sample = r
            .results
            .iter()
            .find(|x| r.of(x.client).len() < 2 || !r.of(x.client).iter().any(|a| a.is_scripted()))
            .unwrap_or(&r.results[0]);
        let a = r.of(sample.client);
        let why = if received == 0 {
            not_served("429 with Retry-After", &a)
        } else {
            format!(
                "only {} of {k} clients retried after the scripted Retry-After ({received} received it); at least {} are needed to judge the spread (client {} {}; {})",
                offsets.len(),
                (k / 2).max(2),
                sample.client,
                sample.describe(),
                timeline(&a)
            )
        };
        return as_property(P, Outcome::error(why + &stderr_note(sample)));
    }
    let (control, _, _) = retry_offsets(r, r.control.iter());
    let min = secs(min_spread);
    let cpu = cpu_bound(&used, offsets.len());
    let Some(mut j) = jitter_judgement_in_time(&timed, &control, cpu.map(|c| c.2), min) else {
        return as_property(P, Outcome::error("no retry offsets to judge".to_owned()));
    };
    // A pass needs the herd and its control whole: when a tenth of the herd
    // or any control client did not retry, the machine could not run them
    // as one (clients still starting when the rest were answered), and the
    // ones that did are not a fair sample of either. Measured: 2 of 18
    // lockstep herds passed with 27 and 32 of 50 retrying, in runs started
    // together by 9 concurrent loops beside a compile.
    let partial = offsets.len() * 10 < k * 9 || control.len() < r.control.len();
    if j.verdict == Spread::Spread && partial {
        j.verdict = Spread::Noisy;
    }
    let n = offsets.len() as f64;
    let mean = offsets.iter().sum::<f64>() / n;
    let stdev = (offsets.iter().map(|o| (o - mean).powi(2)).sum::<f64>() / n).sqrt();
    let mut sorted = offsets.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
    let width = j.width;
    let mut props = vec![
        prop("densest_half_s", PropValue::rounded(width, 3)),
        prop("offset_stdev_s", PropValue::rounded(stdev, 3)),
        prop("offset_min_s", PropValue::rounded(lo, 3)),
        prop("offset_max_s", PropValue::rounded(hi, 3)),
        prop("control_clients", r.control.len()),
        prop("control_retried", control.len()),
    ];
    if let Some(w) = j.noise {
        props.push(prop("noise_densest_half_s", PropValue::rounded(w, 3)));
    }
    if let Some(w) = j.in_time {
        props.push(prop("in_time_densest_half_s", PropValue::rounded(w, 3)));
    }
    if let Some((total, _, bound)) = cpu {
        props.push(prop("herd_cpu_s", PropValue::rounded(total, 3)));
        props.push(prop("herd_cpu_spread_s", PropValue::rounded(bound, 3)));
    }
    let summary = format!(
        "{} retries, offsets from Retry-After {lo:.3} s to {hi:.3} s, the densest half ({}) within {width:.3} s ± {:.3} s (from {:.3} s to {:.3} s), stdev {stdev:.3} s",
        offsets.len(),
        offsets.len().div_ceil(2),
        j.uncertainty,
        j.from,
        j.to,
    );
    let c = r.control.len();
    let cpu_note = match cpu {
        Some((total, sampled, bound)) => format!(
            "; the herd used {total:.3} s of CPU between answers and retries ({sampled} clients sampled), which could spread a lockstep herd over {bound:.3} s"
        ),
        None if r.cpu.is_some() => "; the herd's CPU time could not be sampled".to_owned(),
        None => String::new(),
    };
    let noise = match j.noise {
        Some(w) => format!(
            "the machine's own spread was {w:.3} s ({} of {c} copies of tminus's reference client without jitter, run alongside: their densest half){cpu_note}",
            control.len()
        ),
        None => format!(
            "the machine's own spread could not be measured: {} of {c} copies of tminus's reference client without jitter retried{}",
            control.len(),
            r.control
                .iter()
                .find(|x| !x.stderr_tail.is_empty())
                .map(stderr_note)
                .unwrap_or_default()
        ),
    };
    let o = match j.verdict {
        Spread::Spread => Outcome::pass(format!("{summary}; {noise}")),
        Spread::Narrow => {
            let list: Vec<String> = sorted
                .iter()
                .take(50)
                .map(|o| format!("{:.0}", o * 1000.0))
                .collect();
            Outcome::fail(
                format!(
                    "the clients retry together (thundering herd): {summary}; offsets (ms): [{}]; {noise}",
                    list.join(", ")
                ),
                format!("half the retries spread over at least {min:.3} s"),
                format!("half within {width:.3} s"),
            )
        }
        Spread::Noisy if partial => {
            props.push(prop("conclusive", false));
            Outcome::inconclusive(format!(
                "inconclusive: only {} of {k} clients and {} of {} control clients retried, and a pass needs nine in ten of the herd and the whole control (the machine could not run them as one): {summary}; {noise}: rerun on a less loaded machine",
                offsets.len(),
                control.len(),
                r.control.len()
            ))
        }
        Spread::Noisy if j.in_time.is_some() => {
            props.push(prop("conclusive", false));
            Outcome::inconclusive(format!(
                "inconclusive: the herd's spread follows the moment each client was due, as the control's does: less the control's offset at the same instants, its densest half is {:.3} s, under the threshold {min:.3} s once its uncertainty is counted (a stall or a load change on the machine spreads clients that retry together in a staircase); {summary}; {noise}: rerun on a less loaded machine",
                j.in_time.unwrap_or_default()
            ))
        }
        Spread::Noisy => {
            props.push(prop("conclusive", false));
            let need = j.noise_bound.map_or(String::new(), |b| {
                format!(
                    " (the densest half less its uncertainty, {:.3} s, must reach the threshold {min:.3} s plus the noise bound {b:.3} s)",
                    width - j.uncertainty
                )
            });
            Outcome::inconclusive(format!(
                "inconclusive: the machine's scheduling could explain the herd's spread{need}: {summary}; {noise}: rerun on a less loaded machine or with fewer `clients`"
            ))
        }
        Spread::Borderline => {
            props.push(prop("conclusive", false));
            Outcome::inconclusive(format!(
                "inconclusive: the herd's densest half is within its own uncertainty of the threshold {min:.3} s ({summary}); {noise}: run with more `clients` (the uncertainty falls with their square root) to decide"
            ))
        }
    };
    as_property(P, o.with_properties(props))
}

/// The first attempt answered by the script with a status `pick` accepts,
/// and how many later attempts re-sent the same method and path (the
/// retries of it). Judged from what was served, not from the script, so a
/// suite's `upstream:` (other routes first, another path) is judged the same
/// way; an unscripted 404 is never taken for a scripted one.
fn retries_after<'a>(
    a: &[&'a Attempt],
    pick: impl Fn(u16) -> bool,
) -> Option<(&'a Attempt, usize)> {
    let i = a
        .iter()
        .position(|x| x.is_scripted() && x.answer.status().is_some_and(&pick))?;
    let first = a[i];
    let again = a[i + 1..]
        .iter()
        .filter(|x| x.method == first.method && x.path == first.path)
        .count();
    Some((first, again))
}

pub fn no_retry_4xx(runs: &[RunRecord], statuses: &[u16]) -> Outcome {
    const P: &str = "no_retry";
    let mut bad = Vec::new();
    let mut unexercised = Vec::new();
    let mut judged = Vec::new();
    for r in runs {
        let a = r.of(r.results[0].client);
        let Some((first, again)) = retries_after(&a, |s| statuses.contains(&s)) else {
            let list: Vec<String> = statuses.iter().map(u16::to_string).collect();
            let what = if runs.len() > 1 {
                r.label.clone()
            } else {
                list.join("/")
            };
            unexercised.push(not_served(&what, &a));
            continue;
        };
        judged.push(first.answer.short());
        if again > 0 {
            bad.push(format!(
                "{}: {} requests ({})",
                r.label,
                a.len(),
                timeline(&a)
            ));
        }
    }
    let o = if !bad.is_empty() {
        Outcome::fail(
            format!(
                "the client retried a request the platform refused for good: {}",
                bad.join(" | ")
            ),
            "exactly 1 request per 4xx answer",
            format!("retried on {} of {} statuses", bad.len(), runs.len()),
        )
    } else if !unexercised.is_empty() {
        Outcome::error(unexercised.join(" | "))
    } else {
        Outcome::pass(format!("one request, no retry, for {}", judged.join(", ")))
    };
    as_property(P, o)
}

pub fn retry_503(runs: &[RunRecord], policy: Policy503, scripted: bool) -> Outcome {
    const PROPS: [&str; 2] = ["with_retry_after", "without_retry_after"];
    // Per case (with Retry-After, without): the run that served it and
    // whether the client re-sent the request.
    let mut seen: [Option<(String, bool)>; 2] = [None, None];
    let mut timelines = Vec::new();
    for r in runs {
        let a = r.of(r.results[0].client);
        let Some((first, again)) = retries_after(&a, |s| s == 503) else {
            timelines.push(format!("{}: {}", r.label, not_served("503", &a)));
            continue;
        };
        let case = if first.answer.retry_after().is_some() {
            0
        } else {
            1
        };
        seen[case].get_or_insert((
            format!("{}; the client {}", timeline(&a), r.results[0].describe()),
            again > 0,
        ));
    }
    let expected = |with_ra: bool| match policy {
        Policy503::RetryAfterOnly => with_ra,
        Policy503::Always => true,
        Policy503::Never => false,
    };
    let policy_text = match policy {
        Policy503::RetryAfterOnly => "retry a 503 only when it carries Retry-After",
        Policy503::Always => "retry every 503",
        Policy503::Never => "never retry a 503",
    };
    let assertions = (0..2)
        .map(|case| {
            let label = if case == 0 {
                "503 with Retry-After"
            } else {
                "503 without Retry-After"
            };
            let should = expected(case == 0);
            match &seen[case] {
                None if scripted => {
                    Assertion::skipped(PROPS[case], format!("the suite's script served no {label}"))
                }
                None => Assertion::not_exercised(
                    PROPS[case],
                    format!("{label} not exercised: {}", timelines.join(" | ")),
                ),
                Some((shown, retried)) => Assertion::check(
                    PROPS[case],
                    *retried == should,
                    format!(
                        "{label}: {} as the policy says ({policy_text})",
                        if *retried { "retried" } else { "not retried" }
                    ),
                    format!(
                        "the client breaks the 503 policy: {label}: {} ({shown})",
                        if *retried { "retried" } else { "did not retry" }
                    ),
                    policy_text,
                    format!(
                        "{label}: {}",
                        if *retried { "retried" } else { "did not retry" }
                    ),
                ),
            }
        })
        .collect();
    Outcome::judged(assertions)
}

pub fn key_ok(key: &str, f: KeyFormat) -> bool {
    let uuid = || {
        regex::Regex::new(
            r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        )
        .map(|r| r.is_match(key))
        .unwrap_or(false)
    };
    let ulid = || {
        regex::Regex::new(r"(?i)^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
            .map(|r| r.is_match(key))
            .unwrap_or(false)
    };
    match f {
        KeyFormat::UuidV4OrUlid => uuid() || ulid(),
        KeyFormat::UuidV4 => uuid(),
        KeyFormat::Ulid => ulid(),
        KeyFormat::Any => !key.trim().is_empty(),
    }
}

pub fn idempotency_keys(
    runs: &[RunRecord],
    format: KeyFormat,
    min_operations: Option<usize>,
) -> Outcome {
    const PROPS: [&str; 5] = [
        "key_present",
        "key_reused",
        "body_unchanged",
        "key_distinct",
        "key_format",
    ];
    let r = &runs[0];
    let res = &r.results[0];
    let all = r.of(res.client);
    // Only what the script answered is evidence: a request to another path
    // got a 404 NOT_SCRIPTED, no dropped connection, 409 or 503.
    let a: Vec<&Attempt> = all
        .iter()
        .copied()
        .filter(|x| x.is_mutating() && x.is_scripted())
        .collect();
    if a.is_empty() {
        return none_exercised(
            &PROPS,
            &(not_served("mutating answers (dropped connection, 409, 503)", &all)
                + &stderr_note(res)),
        );
    }
    // A new logical operation starts after a success; anything else is retried.
    let mut ops: Vec<Vec<&Attempt>> = Vec::new();
    let mut open = false;
    for x in &a {
        if !open {
            ops.push(Vec::new());
        }
        ops.last_mut().expect("pushed").push(x);
        open = !x.answer.is_success();
    }
    let shown = timeline(&a);
    let retried = ops.iter().filter(|o| o.len() > 1).count();
    let no_retry = || {
        format!(
            "the client never retried a failed attempt (dropped connection, 409 in progress, 503 + Retry-After), so there was no retry to judge (it {}); {shown}{}",
            res.describe(),
            stderr_note(res)
        )
    };
    let keyed = a.iter().filter(|x| x.idempotency_key.is_some()).count();
    let no_keys = "no request carried an Idempotency-Key (see key_present)";

    let missing = a.len() - keyed;
    let present = Assertion::check(
        PROPS[0],
        missing == 0,
        format!("all {} mutating requests carry an Idempotency-Key", a.len()),
        format!(
            "{missing} of {} mutating requests have no Idempotency-Key; {shown}",
            a.len()
        ),
        "an Idempotency-Key on every mutating request",
        format!("{missing} without"),
    );

    let mut new_key = None;
    let mut new_body = None;
    for (i, op) in ops.iter().enumerate() {
        let first = op[0];
        for x in &op[1..] {
            if new_key.is_none()
                && first.idempotency_key.is_some()
                && x.idempotency_key != first.idempotency_key
            {
                new_key = Some(format!(
                    "operation {}: a retry used a new key ({:?} then {:?}), a duplicate-charge risk",
                    i + 1,
                    first.idempotency_key.as_deref().unwrap_or(""),
                    x.idempotency_key.as_deref().unwrap_or("")
                ));
            }
            if new_body.is_none() && x.body_sha256 != first.body_sha256 {
                new_body = Some(format!(
                    "operation {}: a retry sent a different body (sha256 {} then {})",
                    i + 1,
                    &first.body_sha256[..12.min(first.body_sha256.len())],
                    &x.body_sha256[..12.min(x.body_sha256.len())]
                ));
            }
        }
    }
    let reused = if keyed == 0 {
        Assertion::skipped(PROPS[1], no_keys)
    } else if retried == 0 {
        Assertion::not_exercised(PROPS[1], no_retry())
    } else {
        match &new_key {
            Some(p) => Assertion::fail(
                PROPS[1],
                format!("{p}; {shown}"),
                "the same key on every retry of an operation",
                p.clone(),
            ),
            None => Assertion::pass(
                PROPS[1],
                format!("{retried} operation(s) retried, each with the key of its first attempt"),
            ),
        }
    };
    let body = if retried == 0 {
        Assertion::not_exercised(PROPS[2], no_retry())
    } else {
        match &new_body {
            Some(p) => Assertion::fail(
                PROPS[2],
                format!("{p}; {shown}"),
                "a byte-identical body on every retry",
                p.clone(),
            ),
            None => Assertion::pass(
                PROPS[2],
                format!("{retried} operation(s) retried, each with a byte-identical body"),
            ),
        }
    };

    let mut shared = None;
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        if let Some(k) = op[0].idempotency_key.as_deref() {
            if let Some(j) = seen.insert(k, i) {
                shared.get_or_insert(format!(
                    "operations {} and {} share the key {k}",
                    j + 1,
                    i + 1
                ));
            }
        }
    }
    let needed = min_operations.unwrap_or(2);
    let distinct = if keyed == 0 {
        Assertion::skipped(PROPS[3], no_keys)
    } else if let Some(p) = shared {
        Assertion::fail(
            PROPS[3],
            format!("{p}; {shown}"),
            "a new key per operation",
            p.clone(),
        )
    } else if ops.len() < needed && min_operations.is_none() {
        Assertion::skipped(
            PROPS[3],
            format!(
                "the client performed {} operation(s): distinct keys need two (run it with several operations; `min_operations: 2` makes this required)",
                ops.len()
            ),
        )
    } else if ops.len() < needed {
        Assertion::not_exercised(
            PROPS[3],
            format!(
                "the client performed {} operation(s), `min_operations` is {needed} (it {}); {shown}",
                ops.len(),
                res.describe()
            ),
        )
    } else {
        Assertion::pass(
            PROPS[3],
            format!("{} operations, {} distinct keys", ops.len(), ops.len()),
        )
    };

    // As the suite spells the format.
    let want = match format {
        KeyFormat::UuidV4OrUlid => "uuidv4-or-ulid",
        KeyFormat::UuidV4 => "uuidv4",
        KeyFormat::Ulid => "ulid",
        KeyFormat::Any => "any",
    };
    let bad = a
        .iter()
        .filter_map(|x| x.idempotency_key.as_ref())
        .find(|k| !key_ok(k, format));
    let formed = match bad {
        _ if keyed == 0 => Assertion::skipped(PROPS[4], no_keys),
        Some(k) => Assertion::fail(
            PROPS[4],
            format!("key `{k}` is not {want}"),
            format!("every key {want}"),
            format!("`{k}`"),
        ),
        None => Assertion::pass(PROPS[4], format!("all {keyed} keys are {want}")),
    };
    Outcome::judged(vec![present, reused, body, distinct, formed]).with_properties(vec![
        prop("operations", ops.len()),
        prop("mutating_requests", a.len()),
    ])
}

pub fn slows_before_limit(
    runs: &[RunRecord],
    limit: u32,
    window: Duration,
    min_requests: usize,
) -> Outcome {
    as_property(
        "paces_to_remaining",
        slows_before_limit_outcome(runs, limit, window, min_requests),
    )
}

fn slows_before_limit_outcome(
    runs: &[RunRecord],
    limit: u32,
    window: Duration,
    min_requests: usize,
) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let all = r.of(res.client);
    // Requests to an unscripted path met no rate limit: no evidence.
    let a: Vec<&Attempt> = all.iter().copied().filter(|x| x.is_scripted()).collect();
    if a.is_empty() {
        return Outcome::error(
            not_served("answers with X-RateLimit-Remaining", &all) + &stderr_note(res),
        );
    }
    if a.len() < min_requests {
        return Outcome::error(format!(
            "the client sent {} request(s); at least {min_requests} are needed to see it pace itself (give it more operations; it {}){}",
            a.len(),
            res.describe(),
            stderr_note(res)
        ));
    }
    let end = secs(a[0].at) + secs(window);
    let in_window = a.iter().filter(|x| secs(x.at) < end).count();
    let limited = a.iter().filter(|x| x.answer.status() == Some(429)).count();
    if in_window > limit as usize || limited > 0 {
        return Outcome::fail(
            format!(
                "the client spent past X-RateLimit-Remaining: {in_window} requests in the first {} window of {limit}, {limited} answered 429; {}",
                crate::fmt_duration(window),
                timeline(&a)
            ),
            format!("at most {limit} requests before the reset (Remaining: {} after the first)", limit - 1),
            format!("{in_window} requests, {limited} x 429"),
        );
    }
    Outcome::pass(format!(
        "{in_window} requests in the first {} window (limit {limit}), no 429 in {} requests",
        crate::fmt_duration(window),
        a.len()
    ))
}

/// `1 attempt: 38 keys, 5 attempts: 2 keys` from per-key attempt counts.
pub fn histogram(per_key: &[(String, usize)]) -> String {
    let mut h: std::collections::BTreeMap<usize, usize> = Default::default();
    for (_, n) in per_key {
        *h.entry(*n).or_default() += 1;
    }
    h.iter()
        .map(|(attempts, keys)| {
            format!(
                "{attempts} attempt{}: {keys} key{}",
                if *attempts == 1 { "" } else { "s" },
                if *keys == 1 { "" } else { "s" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn amplification(runs: &[RunRecord], operations: Option<usize>, max: f64) -> Outcome {
    as_property(
        "amplification",
        amplification_outcome(runs, operations, max),
    )
}

fn amplification_outcome(runs: &[RunRecord], operations: Option<usize>, max: f64) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let all = r.of(res.client);
    // Only scripted answers carry the injected failures.
    let a: Vec<&Attempt> = all.iter().copied().filter(|x| x.is_scripted()).collect();
    if a.is_empty() {
        return Outcome::error(
            not_served("steady answers with injected failures", &all) + &stderr_note(res),
        );
    }
    // Per key, in order of first use.
    let mut per_key: Vec<(String, usize)> = Vec::new();
    for x in &a {
        let k = x.idempotency_key.clone().unwrap_or_default();
        match per_key.iter_mut().find(|(key, _)| *key == k) {
            Some(e) => e.1 += 1,
            None => per_key.push((k, 1)),
        }
    }
    let keyless = a.iter().filter(|x| x.idempotency_key.is_none()).count();
    let ops = match operations {
        Some(n) => n,
        None if keyless > 0 => {
            return Outcome::error(format!(
                "cannot count logical operations: {keyless} of {} requests carry no Idempotency-Key; set `operations` to the number the client performs (it {}){}",
                a.len(),
                res.describe(),
                stderr_note(res)
            ))
        }
        None => per_key.len(),
    };
    let injected = a
        .iter()
        .filter(|x| x.injected == Some(crate::upstream::Injected::Fresh))
        .count();
    let held = a
        .iter()
        .filter(|x| x.injected == Some(crate::upstream::Injected::Held))
        .count();
    let amp = a.len() as f64 / ops as f64;
    let hist = histogram(&per_key);
    let props = vec![
        prop("requests", a.len()),
        prop("logical_operations", ops),
        prop("amplification", PropValue::rounded(amp, 3)),
        prop("injected_failures", injected),
        prop("attempts_per_key", hist.clone()),
    ];
    let counts = format!(
        "{} requests for {ops} logical operations{} ({injected} injected failures, {held} more requests inside a failure's hold); attempts per key: {hist}",
        a.len(),
        if operations.is_some() { "" } else { " (distinct Idempotency-Keys)" }
    );
    if amp > max {
        // The keys that cost most, with what each attempt got.
        let mut worst: Vec<&(String, usize)> = per_key.iter().filter(|(_, n)| *n > 1).collect();
        worst.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        let detail: Vec<String> = worst
            .iter()
            .take(3)
            .map(|(k, n)| {
                let seq: Vec<&&Attempt> = a
                    .iter()
                    .filter(|x| x.idempotency_key.as_deref().unwrap_or("") == k)
                    .collect();
                let first = seq.first().map(|x| x.at).unwrap_or_default();
                let steps: Vec<String> = seq
                    .iter()
                    .map(|x| {
                        format!(
                            "+{:.3}s {}",
                            secs(x.at.saturating_sub(first)),
                            x.answer.short()
                        )
                    })
                    .collect();
                format!(
                    "{} {n} attempts [{}]",
                    short_key(&Some(k.clone()).filter(|k| !k.is_empty())),
                    steps.join(", ")
                )
            })
            .collect();
        return Outcome::fail(
            format!(
                "retry amplification {amp:.2}: {counts}; worst keys: {}",
                detail.join(" | ")
            ),
            format!("at most {max} requests per logical operation"),
            format!("{amp:.2} ({} / {ops})", a.len()),
        )
        .with_properties(props);
    }
    if injected == 0 {
        return Outcome::error(format!(
            "no failure was injected in {} requests, so retries could not be judged; give the client more operations (it {}){}",
            a.len(),
            res.describe(),
            stderr_note(res)
        ));
    }
    if res.ended != Ended::Exited(Some(0)) {
        return Outcome::error(format!(
            "the client did not finish its operations (it {}), so {counts} is not a judgeable amplification; {}{}",
            res.describe(),
            timeline(&a),
            stderr_note(res)
        ))
        .with_properties(props);
    }
    Outcome::pass(format!("retry amplification {amp:.3}: {counts}")).with_properties(props)
}

pub fn replay(runs: &[RunRecord], header: &str, value: &str, operations: usize) -> Outcome {
    as_property(
        "replay_taken",
        replay_outcome(runs, header, value, operations),
    )
}

fn replay_outcome(runs: &[RunRecord], header: &str, value: &str, operations: usize) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let a: Vec<&Attempt> = r
        .of(res.client)
        .into_iter()
        .filter(|x| x.is_mutating())
        .collect();
    let is_replay = |x: &Attempt| {
        x.answer.is_success() && x.answer_header(header).is_some_and(|v| v.trim() == value)
    };
    let Some(first_replay) = a.iter().position(|x| is_replay(x)) else {
        let all = r.of(res.client);
        if !all.iter().any(|x| x.is_scripted()) {
            return Outcome::error(
                not_served("failure and replayed 201", &all) + &stderr_note(res),
            );
        }
        return Outcome::error(format!(
            "the client never received the replayed answer (it did not retry after the first failure; it {}); {}{}",
            res.describe(),
            timeline(&a),
            stderr_note(res)
        ));
    };
    let mut problems = Vec::new();
    for (i, x) in a.iter().enumerate().filter(|(_, x)| is_replay(x)) {
        let again = a[i + 1..]
            .iter()
            .filter(|y| y.idempotency_key == x.idempotency_key)
            .count();
        if again > 0 {
            problems.push(format!(
                "{again} more request(s) with {} after its replayed {}",
                short_key(&x.idempotency_key),
                x.answer.short()
            ));
        }
    }
    let mut keys: Vec<&Option<String>> = Vec::new();
    let mut new_after = 0;
    for (i, x) in a.iter().enumerate() {
        if !keys.contains(&&x.idempotency_key) {
            keys.push(&x.idempotency_key);
            if i > first_replay {
                new_after += 1;
            }
        }
    }
    // Keys first used after the replay: only the operations still to come may
    // bring one (a new key per retry before it is `client.idempotency_keys`'s
    // business).
    if new_after > operations.saturating_sub(1) {
        problems.push(format!(
            "{new_after} new Idempotency-Key(s) after the replay with {operations} operation(s) to perform: the operation was sent again under a new key, a duplicate side effect"
        ));
    }
    if res.ended != Ended::Exited(Some(0)) {
        problems.push(format!("the client {}", res.describe()));
    }
    if !problems.is_empty() {
        return Outcome::fail(
            format!(
                "the client did not take the replayed answer (`{header}: {value}`) as a success: {}; {}{}",
                problems.join("; "),
                timeline(&a),
                stderr_note(res)
            ),
            "exit 0, no further request for the replayed key, no new key for the same operation",
            problems[0].clone(),
        );
    }
    Outcome::pass(format!(
        "the replayed {} (`{header}: {value}`, attempt {}) ended the operation: {} request(s), {} key(s), exit 0",
        a[first_replay].answer.short(),
        first_replay + 1,
        a.len(),
        keys.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::client::process::ClientRunResult;
    use crate::families::client::spec::defaults;
    use crate::upstream::Served;

    /// A client's recorded attempts: (offset s, answer, key, served).
    fn record(attempts: &[(f64, Answer, Option<&str>, Served)], exit: i32) -> Vec<RunRecord> {
        let attempts = attempts
            .iter()
            .map(|(at, answer, key, served)| Attempt {
                client: 0,
                at: Duration::from_secs_f64(*at),
                answered_at: Duration::from_secs_f64(*at + 0.001),
                method: "POST".into(),
                path: "/v1/customers".into(),
                query: String::new(),
                headers: Vec::new(),
                body_sha256: "ab".repeat(32),
                body_len: 2,
                content_type: None,
                idempotency_key: key.map(str::to_owned),
                answer: answer.clone(),
                answer_headers: Vec::new(),
                injected: None,
                served: *served,
            })
            .collect();
        vec![RunRecord {
            label: "operations".into(),
            results: vec![ClientRunResult {
                client: 0,
                ended: Ended::Exited(Some(exit)),
                elapsed: Duration::from_secs(1),
                stderr_tail: String::new(),
            }],
            attempts,
            control: Vec::new(),
            cpu: None,
        }]
    }

    fn status(s: u16, retry_after: Option<f64>) -> Answer {
        Answer::Status {
            status: s,
            retry_after,
            form: retry_after.map(|_| RetryAfterForm::Seconds),
        }
    }

    fn verdicts(o: &Outcome) -> Vec<(&str, Verdict)> {
        o.assertions
            .iter()
            .map(|a| (a.property, a.verdict))
            .collect()
    }

    fn step(index: usize) -> Served {
        Served::Step { route: 0, index }
    }

    /// A herd: client c waits `gaps[c]` after its 429s, then gets a 201.
    /// A backoff herd: client c waits `gaps[c]` after each 429; the
    /// control group (numbered after the herd) waits `control[i]`.
    fn herd_record(gaps: &[Vec<f64>], control: &[Vec<f64>]) -> Vec<RunRecord> {
        let mut attempts = Vec::new();
        let mut results = Vec::new();
        let mut ctl = Vec::new();
        for (c, g) in gaps.iter().chain(control).enumerate() {
            let mut one = record(&[(0.0, status(429, None), None, step(0))], 0);
            let mut at = 0.0;
            for (i, w) in g.iter().enumerate() {
                at += 0.001 + w;
                let served = if i + 1 < g.len() {
                    step(i + 1)
                } else {
                    Served::Then { route: 0 }
                };
                let answer = status(if i + 1 < g.len() { 429 } else { 201 }, None);
                one.extend(record(&[(at, answer, None, served)], 0));
            }
            for r in one {
                for mut a in r.attempts {
                    a.client = c;
                    attempts.push(a);
                }
            }
            let mut res = record(&[], 0).remove(0).results.remove(0);
            res.client = c;
            if c < gaps.len() {
                results.push(res);
            } else {
                ctl.push(res);
            }
        }
        vec![RunRecord {
            label: "herd".into(),
            results,
            attempts,
            control: ctl,
            cpu: None,
        }]
    }

    /// A jitter herd: client c is answered 429 + Retry-After 1 at 0 s and
    /// retries `offsets[c]` after it; the control group (numbered after the
    /// herd) retries `control[i]` after it.
    fn jitter_record(offsets: &[f64], control: &[f64]) -> Vec<RunRecord> {
        let mut attempts = Vec::new();
        let mut results = Vec::new();
        let mut ctl = Vec::new();
        for (c, o) in offsets.iter().chain(control).enumerate() {
            for r in record(
                &[
                    (0.0, status(429, Some(1.0)), None, step(0)),
                    (
                        1.001 + o,
                        status(201, None),
                        None,
                        Served::Then { route: 0 },
                    ),
                ],
                0,
            ) {
                for mut a in r.attempts {
                    a.client = c;
                    attempts.push(a);
                }
                let mut res = r.results[0].clone();
                res.client = c;
                if c < offsets.len() {
                    results.push(res);
                } else {
                    ctl.push(res);
                }
            }
        }
        vec![RunRecord {
            label: "herd".into(),
            results,
            attempts,
            control: ctl,
            cpu: None,
        }]
    }

    #[test]
    fn jitter_is_judged_against_the_machines_own_spread() {
        let spread =
            |w: f64, n: usize| -> Vec<f64> { (0..n).map(|i| w * i as f64 / n as f64).collect() };
        let min = Duration::from_millis(80);
        let quiet = spread(0.004, 16);
        // 0.5 s of jitter on a quiet machine: a pass naming the noise.
        let o = jitter(&jitter_record(&spread(0.5, 50), &quiet), min);
        assert_eq!(verdicts(&o), vec![("spread", Verdict::Pass)], "{o:?}");
        assert!(
            o.assertions[0]
                .message
                .contains("the machine's own spread was 0.00"),
            "{o:?}"
        );
        // Lockstep: a fail, whatever the machine.
        let o = jitter(&jitter_record(&spread(0.01, 50), &spread(0.3, 16)), min);
        assert_eq!(verdicts(&o), vec![("spread", Verdict::Fail)], "{o:?}");
        // As wide as the machine's own spread: inconclusive, never a pass.
        let o = jitter(&jitter_record(&spread(0.3, 50), &spread(0.3, 16)), min);
        assert_eq!(verdicts(&o), vec![("spread", Verdict::Error)], "{o:?}");
        assert!(
            o.assertions[0]
                .message
                .contains("inconclusive: the machine's scheduling could explain"),
            "{o:?}"
        );
        // No control retried: the noise is unknown, so no pass.
        let o = jitter(&jitter_record(&spread(0.5, 50), &[]), min);
        assert_eq!(verdicts(&o), vec![("spread", Verdict::Error)], "{o:?}");
        assert!(
            o.assertions[0].message.contains("could not be measured"),
            "{o:?}"
        );
        // Ten of the 50 never retried: the rest are no fair sample, no pass.
        let mut partial = jitter_record(&spread(0.5, 50), &quiet);
        partial[0]
            .attempts
            .retain(|a| a.client >= 10 || a.served != (Served::Then { route: 0 }));
        let o = jitter(&partial, min);
        assert_eq!(verdicts(&o), vec![("spread", Verdict::Error)], "{o:?}");
        assert!(
            o.assertions[0]
                .message
                .contains("only 40 of 50 clients and 16 of 16 control clients retried"),
            "{o:?}"
        );
        // At the threshold: inconclusive, run more clients.
        let o = jitter(&jitter_record(&spread(0.17, 50), &quiet), min);
        assert_eq!(verdicts(&o), vec![("spread", Verdict::Error)], "{o:?}");
        assert!(
            o.assertions[0].message.contains("run with more `clients`"),
            "{o:?}"
        );
    }

    #[test]
    fn a_herd_that_backs_off_passes_and_a_flat_one_fails() {
        // A quiet machine: the constant-backoff control stays flat.
        let quiet: Vec<Vec<f64>> = (0..LEAST_CONTROL).map(|_| vec![0.01; 5]).collect();
        let judge_with = |gaps: &[Vec<f64>], control: &[Vec<f64>]| {
            exponential(
                &herd_record(gaps, control),
                1.5,
                Duration::from_millis(20),
                Duration::from_secs(60),
                4,
            )
        };
        let judge = |gaps: &[Vec<f64>]| judge_with(gaps, &quiet);
        // A loaded machine stretches a flat herd's later gaps (10 ms
        // nominal, up to 120 ms late): the control shows the same growth,
        // so it is inconclusive, never a pass (a defect harness run saw the
        // fixed-backoff client pass before the control existed).
        let stretched = |base: f64| vec![base, base + 0.01, base + 0.06, base + 0.1, base + 0.12];
        let loaded: Vec<Vec<f64>> = (0..5).map(|_| stretched(0.01)).collect();
        let o = judge_with(
            &loaded,
            &(0..LEAST_CONTROL)
                .map(|_| stretched(0.01))
                .collect::<Vec<_>>(),
        );
        assert_eq!(verdicts(&o)[0], ("gaps_grow", Verdict::Error), "{o:?}");
        assert!(o.inconclusive, "{o:?}");
        assert!(
            o.assertions[0].message.contains("could explain the growth"),
            "{o:?}"
        );
        // No control measured: the growth cannot be told from noise.
        let o = judge_with(&loaded, &[]);
        assert_eq!(verdicts(&o)[0], ("gaps_grow", Verdict::Error), "{o:?}");
        assert!(o.assertions[0].message.contains("not measured"), "{o:?}");
        let growing: Vec<Vec<f64>> = (0..5)
            .map(|c| vec![0.01, 0.02, 0.04 + c as f64 * 0.001, 0.08, 0.16])
            .collect();
        let o = judge(&growing);
        assert_eq!(
            verdicts(&o),
            vec![("gaps_grow", Verdict::Pass), ("gap_capped", Verdict::Pass)],
            "{o:?}"
        );
        let flat: Vec<Vec<f64>> = (0..5).map(|_| vec![0.1; 5]).collect();
        let o = judge(&flat);
        assert_eq!(verdicts(&o)[0], ("gaps_grow", Verdict::Fail), "{o:?}");
        assert!(o.assertions[0].message.contains("do not grow"), "{o:?}");
        // Two of five clients gave up after two retries: 3 < 4/5 of the herd.
        let mut short = growing.clone();
        short[0].truncate(2);
        short[1].truncate(2);
        let o = judge(&short);
        assert_eq!(verdicts(&o)[0], ("gaps_grow", Verdict::Error), "{o:?}");
        assert!(
            o.assertions[0].message.contains("only 3 of 5 clients"),
            "{o:?}"
        );
    }

    // Issue 12: the official Stripe SDKs reuse their key on every retry, but
    // the key is not a UUIDv4: reuse passes, only the format is broken (a
    // SHOULD, so a warning once the runner applies severities).
    #[test]
    fn a_reused_key_that_is_not_a_uuid_breaks_only_the_format() {
        let k = Some("stripe-node-retry-9b1e2d7c5e0f4a5b8c6d");
        let runs = record(
            &[
                (0.0, Answer::Closed, k, step(0)),
                (0.5, status(409, None), k, step(1)),
                (1.0, status(503, Some(1.0)), k, step(2)),
                (2.1, status(201, None), k, Served::Then { route: 0 }),
            ],
            0,
        );
        let o = idempotency_keys(&runs, KeyFormat::UuidV4OrUlid, None);
        assert_eq!(
            verdicts(&o),
            vec![
                ("key_present", Verdict::Pass),
                ("key_reused", Verdict::Pass),
                ("body_unchanged", Verdict::Pass),
                ("key_distinct", Verdict::Skipped),
                ("key_format", Verdict::Fail),
            ],
            "{o:#?}"
        );
        let distinct = &o.assertions[3].message;
        assert!(distinct.contains("performed 1 operation"), "{distinct}");
        // Required by the suite, one operation is not enough evidence.
        let o = idempotency_keys(&runs, KeyFormat::UuidV4OrUlid, Some(2));
        assert_eq!(o.assertions[3].verdict, Verdict::Error, "{o:#?}");
    }

    #[test]
    fn unscripted_answers_are_no_evidence() {
        let nf = status(404, None);
        let runs = record(
            &[
                (0.0, nf.clone(), None, Served::Unscripted),
                (0.1, nf.clone(), None, Served::Unscripted),
            ],
            1,
        );
        let o = no_retry_4xx(&runs, &[400, 401, 403, 404, 422]);
        assert_eq!(verdicts(&o), vec![("no_retry", Verdict::Error)]);
        assert!(
            o.message
                .contains("never received the scripted 400/401/403/404/422: it requested POST /v1/customers, not scripted"),
            "{}",
            o.message
        );
        let o = idempotency_keys(&runs, KeyFormat::Any, None);
        assert!(o.assertions.iter().all(|a| a.verdict == Verdict::Error));
        let o = bounded(&runs, 10, Duration::from_secs(15));
        assert!(o.assertions.iter().all(|a| a.verdict == Verdict::Error));
        let o = retry_after(&runs, Duration::from_millis(50), 3, false);
        assert!(o.assertions.iter().all(|a| a.verdict == Verdict::Error));
    }

    /// Issue 22 case 6: a client that lacks the feature (never retries a
    /// 429, or ends on an HTTP-date it cannot parse) gets a verdict, not
    /// an error: `retries` fails (its severity, SHOULD or botix's MUST,
    /// decides FAIL or WARN), and with a control run that retried after the
    /// seconds form, `understands_http_date` fails.
    #[test]
    fn a_client_that_never_retries_gets_a_verdict_not_an_error() {
        let once = vec![(
            0.0,
            status(429, Some(2.0)),
            None,
            Served::Step { route: 0, index: 0 },
        )];
        let o = retry_after(&record(&once, 1), Duration::from_millis(50), 3, false);
        assert_eq!(
            verdicts(&o),
            vec![
                ("waits_retry_after", Verdict::Skipped),
                ("retries", Verdict::Fail),
                ("understands_http_date", Verdict::Skipped)
            ],
            "{o:#?}"
        );
        assert!(o.message.contains("not observable"), "{}", o.message);

        // HTTP-date: no retry after the date, one after the seconds control.
        let mut runs = record(&once, 1);
        let control = vec![
            (
                0.0,
                status(429, Some(1.0)),
                None,
                Served::Step { route: 0, index: 0 },
            ),
            (1.1, status(201, None), None, Served::Then { route: 0 }),
        ];
        runs.extend(record(&control, 0));
        let o = retry_after(&runs, Duration::from_millis(50), 3, true);
        assert_eq!(
            verdicts(&o),
            vec![
                ("waits_retry_after", Verdict::Skipped),
                ("retries", Verdict::Fail),
                ("understands_http_date", Verdict::Fail)
            ],
            "{o:#?}"
        );
        assert!(
            o.message.contains("does not understand the HTTP-date form"),
            "{}",
            o.message
        );
    }

    // Issue 12: ten attempts with nothing between them passed `client.bounded`.
    #[test]
    fn bounded_judges_the_pacing_between_attempts() {
        let burst: Vec<_> = (0..10)
            .map(|i| {
                (
                    i as f64 * 0.002,
                    status(429, Some(1.0)),
                    None,
                    Served::Then { route: 0 },
                )
            })
            .collect();
        let o = bounded(&record(&burst, 1), 10, Duration::from_secs(15));
        assert_eq!(
            verdicts(&o),
            vec![
                ("gives_up", Verdict::Pass),
                ("ends_in_time", Verdict::Pass),
                ("fails_visibly", Verdict::Pass),
                ("paced", Verdict::Fail)
            ],
            "{o:#?}"
        );
        let paced: Vec<_> = (0..4)
            .map(|i| {
                (
                    i as f64 * 1.1,
                    status(429, Some(1.0)),
                    None,
                    Served::Then { route: 0 },
                )
            })
            .collect();
        let o = bounded(&record(&paced, 1), 10, Duration::from_secs(15));
        assert_eq!(o.verdict, Verdict::Pass, "{o:#?}");
        let o = bounded(&record(&paced[..1], 0), 10, Duration::from_secs(15));
        assert_eq!(
            verdicts(&o),
            vec![
                ("gives_up", Verdict::Pass),
                ("ends_in_time", Verdict::Pass),
                ("fails_visibly", Verdict::Fail),
                ("paced", Verdict::Skipped)
            ],
            "{o:#?}"
        );
    }

    /// Issue 22 case 3: the two bounds are judged apart, and the defaults
    /// admit 6 full-jitter attempts from 1 s that took 31 s (the old 15 s
    /// total failed it as "still running").
    #[test]
    fn bounded_judges_attempts_and_time_apart() {
        // 6 attempts, gaps max(1, U(0, 2^n)) at their longest: 1+2+4+8+16 s.
        let mut at = 0.3;
        let six: Vec<_> = (0..6)
            .map(|n| {
                let a = (at, status(429, Some(1.0)), None, Served::Then { route: 0 });
                at += 2f64.powi(n);
                a
            })
            .collect();
        let mut runs = record(&six, 1);
        runs[0].results[0].elapsed = Duration::from_secs_f64(31.5);
        let o = bounded(&runs, defaults::MAX_ATTEMPTS as usize, defaults::MAX_TOTAL);
        assert_eq!(o.verdict, Verdict::Pass, "{o:#?}");

        // Within the attempts but over the time: only ends_in_time fails.
        let o = bounded(&runs, 10, Duration::from_secs(15));
        assert_eq!(
            verdicts(&o),
            vec![
                ("gives_up", Verdict::Pass),
                ("ends_in_time", Verdict::Fail),
                ("fails_visibly", Verdict::Pass),
                ("paced", Verdict::Pass)
            ],
            "{o:#?}"
        );
        // Stopped at the time bound, still running, few attempts.
        runs[0].results[0].ended = Ended::Stopped("still running after 15 s".into());
        let o = bounded(&runs, 10, Duration::from_secs(15));
        assert_eq!(
            verdicts(&o),
            vec![
                ("gives_up", Verdict::Pass),
                ("ends_in_time", Verdict::Fail),
                ("fails_visibly", Verdict::Skipped),
                ("paced", Verdict::Pass)
            ],
            "{o:#?}"
        );
        // Stopped for its attempts: the time was never reached.
        let o = bounded(&runs, 4, Duration::from_secs(45));
        assert_eq!(
            verdicts(&o),
            vec![
                ("gives_up", Verdict::Fail),
                ("ends_in_time", Verdict::Skipped),
                ("fails_visibly", Verdict::Skipped),
                ("paced", Verdict::Pass)
            ],
            "{o:#?}"
        );
    }

    #[test]
    fn histogram_groups_keys_by_attempts() {
        let per_key = vec![
            ("a".to_string(), 1),
            ("b".to_string(), 5),
            ("c".to_string(), 1),
        ];
        assert_eq!(histogram(&per_key), "1 attempt: 2 keys, 5 attempts: 1 key");
        assert_eq!(histogram(&[]), "");
    }

    #[test]
    fn key_formats() {
        let u = uuid::Uuid::new_v4().to_string();
        let l = ulid::Ulid::new().to_string();
        assert!(key_ok(&u, KeyFormat::UuidV4OrUlid));
        assert!(key_ok(&u.to_uppercase(), KeyFormat::UuidV4));
        assert!(key_ok(&l, KeyFormat::UuidV4OrUlid));
        assert!(!key_ok(&l, KeyFormat::UuidV4));
        assert!(!key_ok("order-42", KeyFormat::UuidV4OrUlid));
        assert!(key_ok("order-42", KeyFormat::Any));
        // A UUIDv1 is not a v4.
        assert!(!key_ok(
            "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
            KeyFormat::UuidV4
        ));
    }
}
