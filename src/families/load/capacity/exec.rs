//! Runs `load.capacity`: each window is a short open-arrival burst of the
//! load engine (`engine.rs`, `pool.rs`) at one rate, judged by the burst's
//! own threshold judge (`judge.rs`: chance bands, the pool's charge); the
//! search (`search.rs`) picks the rates and reads the verdicts.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::plan::{CapacityPlan, LoadCheckPlan};
use super::search::{step_verdict, Finding, Search, Step, Window};
use crate::context::{remote_because, CheckContext, Scope};
use crate::families::load::exec::Figures;
use crate::families::load::pool::{PoolFigures, PoolRule, MIN_LIGHT};
use crate::families::load::{engine, judge, signal, validity};
use crate::outcome::{prop, Outcome, PropValue, Verdict};

/// The share of a step's schedule that must be sent: a step speaks of its
/// rate only when (nearly) all of it was.
const STEP_MIN_DELIVERED: f64 = 0.95;

pub async fn run(plan: &LoadCheckPlan, ctx: &CheckContext) -> Outcome {
    let LoadCheckPlan::Capacity(p) = plan;
    let url = ctx.target.render(&p.request, &Scope::new()).url;
    let shown = crate::redact::mask_userinfo(&url);
    if engine::origin_of(&url).is_none() {
        return Outcome::error(format!(
            "the capacity search's request goes to `{shown}`, which is not an http(s) URL with a host"
        ));
    }
    if let Some(why) = remote_because(&url).filter(|_| !ctx.allow_remote_load) {
        return Outcome::error(format!(
            "refusing to search the capacity of {shown}: {why}; this is load, pass --allow-remote-load to send it"
        ));
    }
    let started = Instant::now();
    let mut search = Search::new(p.settings);
    let mut lines: Vec<String> = Vec::new();
    let mut stopped = None;
    // Mean raw µs of the last passing window: the target's latency under
    // light load, for windows that start at full rate (see `window`).
    let mut light_us: Option<f64> = None;
    while let Some(rate) = search.next() {
        // A step runs at least two windows: do not start one that cannot end in time.
        let need = Duration::from_secs(p.window_secs(rate) * 2);
        if started.elapsed() + need > p.max_duration {
            stopped = Some(format!(
                "stopped before {rate:.1}/s: max_duration {} reached",
                crate::fmt_duration(p.max_duration)
            ));
            break;
        }
        let mut windows = Vec::new();
        let step = loop {
            if signal::cancelled() {
                return Outcome::error("the capacity search was cancelled: not judged");
            }
            let (w, line, raw_mean) = match window(p, rate, ctx, light_us).await {
                Ok(w) => w,
                Err(o) => return o.with_properties(steps_props(&lines)),
            };
            ctx.note(format!("{rate:.1}/s window {}: {line}", windows.len() + 1));
            lines.push(format!("{rate:.1}/s: {line}"));
            if w == Window::Pass {
                light_us = Some(raw_mean);
            }
            windows.push(w);
            if let Some(s) = step_verdict(&windows) {
                break s;
            }
        };
        search.record(rate, step);
        // A declared capacity is a gate: once decided, the knee's exact
        // place is not worth the target's time (nor CI's).
        if let Some(need) = p.at_least.filter(|n| search.decides(*n)) {
            if search.next().is_some() {
                stopped = Some(format!("stopped: the declared {need:.1}/s is decided"));
            }
            break;
        }
    }
    conclude(p, &search, &lines, stopped, started.elapsed())
}

fn steps_props(lines: &[String]) -> Vec<(String, PropValue)> {
    vec![prop("windows", lines.len() as u64)]
}

/// One window at `rate`: its verdict and a line for the report. Err: the
/// search cannot go on (goose failed, nothing answered).
async fn window(
    p: &CapacityPlan,
    rate: f64,
    ctx: &CheckContext,
    light_us: Option<f64>,
) -> Result<(Window, String, f64), Outcome> {
    let lp = p.window_plan(rate);
    let shared = Arc::new(engine::Shared::new(lp.clone(), ctx.target.clone()));
    let out = engine::run(shared.clone(), None, SystemTime::now()).await;
    if let Some(e) = out.engine_error {
        return Err(Outcome::error(e));
    }
    let mut f = Figures::new(out.kinds, out.elapsed, lp.scheduled_requests());
    f.pool = shared.pool.as_ref().map(|pl| {
        let (peak_in_use, opened) = pl.peak_and_opened();
        PoolFigures {
            users: pl.users,
            max_users: pl.max_users,
            peak_in_use,
            opened,
            counts: shared.merged_pool(),
        }
    });
    let k = &f.overall;
    let raw_mean = if k.raw.is_empty() { 0.0 } else { k.raw.mean() };
    if k.requests > 0 && k.statuses.is_empty() {
        let errors: Vec<String> = k.errors.iter().map(|(e, n)| format!("{e}×{n}")).collect();
        return Err(Outcome::error(format!(
            "at {rate:.1}/s none of {} requests to {} was answered ({}): is the target up and listening there?",
            k.requests,
            crate::redact::mask_userinfo(&ctx.target.base_url),
            errors.join(", ")
        )));
    }
    let head = format!(
        "{} of {:.0} sent, p99 {:.1} ms corrected / {:.1} ms raw, {} failed",
        k.requests,
        f.scheduled,
        k.corrected.value_at_quantile(0.99) as f64 / 1000.0,
        k.raw.value_at_quantile(0.99) as f64 / 1000.0,
        k.failed
    );
    if out.hit_max_duration {
        // Answers did not come within the window and 30 s more: beyond capacity.
        return Ok((
            Window::Fail,
            format!("{head}; answers still missing 30 s after the window: fail"),
            raw_mean,
        ));
    }
    let mut rule = f.pool_rule(&lp);
    // A window starts at its full rate, so few of its requests go out under
    // light load and the pool rule cannot show saturation on its own: a
    // passing lower step's latency is that light load's.
    if let (Some(r), Some(light), Some(pf)) = (rule, light_us, f.pool.as_ref()) {
        if r.bound && !r.saturated && pf.counts.raw_light.len() < MIN_LIGHT {
            let bound = &pf.counts.raw_bound;
            rule = Some(PoolRule::from_means(
                pf.counts.waited_full,
                if bound.is_empty() { 0.0 } else { bound.mean() },
                MIN_LIGHT,
                light,
                rate,
                k.raw.value_at_quantile(0.99),
            ));
        }
    }
    let judged: Vec<Outcome> = lp
        .thresholds
        .iter()
        .map(|t| judge::judge(t, &lp, &f, rule.as_ref()))
        .collect();
    if let Some(o) = judged
        .iter()
        .find(|o| o.verdict == Verdict::Error && !o.inconclusive)
    {
        // Nothing succeeded (latency not exercised) or the like: no rate
        // can be judged on such answers.
        return Err(Outcome::error(format!("at {rate:.1}/s: {}", o.message)));
    }
    // Sends dropped: the rate was not delivered, whatever the answers say
    // (a full pool the target's saturation explains is not the
    // generator's, and is judged below). Sends late: a breach may be the
    // bunching's, a pass stands (`validity.rs`).
    let invalid = validity::invalid_because(&f, rule.as_ref(), STEP_MIN_DELIVERED);
    let failed = judged.iter().any(|o| o.verdict == Verdict::Fail);
    if let Some(why) = invalid.filter(|i| i.voids(failed)) {
        let why = why.why().to_owned();
        return Ok((
            Window::GeneratorBound(why.clone()),
            format!("{head}; generator-bound: {why}"),
            raw_mean,
        ));
    }
    if let Some(o) = judged.iter().find(|o| o.verdict == Verdict::Fail) {
        return Ok((
            Window::Fail,
            format!("{head}; fail: {}", o.message),
            raw_mean,
        ));
    }
    if let Some(r) = rule.filter(|r| r.inconclusive()) {
        let why = format!(
            "the generator's pool bound the step ({} of max_users {} busy while slots waited) and the target's own saturation is not shown ({:.1} ms on the full pool, {:.1} ms under light load): the rate needed about {} users, raise max_users",
            f.pool.as_ref().map_or(0, |p| p.peak_in_use),
            lp.max_users,
            r.bound_ms,
            r.light_ms,
            r.needed_users
        );
        return Ok((
            Window::GeneratorBound(why.clone()),
            format!("{head}; generator-bound: {why}"),
            raw_mean,
        ));
    }
    if let Some(o) = judged.iter().find(|o| o.inconclusive) {
        return Ok((
            Window::Inconclusive,
            format!("{head}; {}", o.message),
            raw_mean,
        ));
    }
    Ok((Window::Pass, format!("{head}; pass"), raw_mean))
}

fn r(x: f64) -> String {
    format!("{x:.1}/s")
}

/// The check's outcome from the finished search.
fn conclude(
    p: &CapacityPlan,
    search: &Search,
    lines: &[String],
    stopped: Option<String>,
    took: Duration,
) -> Outcome {
    let steps: Vec<String> = search
        .steps
        .iter()
        .map(|(rate, s)| {
            let v = match s {
                Step::Pass => "pass",
                Step::Fail => "fail",
                Step::Undecided => "undecided",
                Step::GeneratorBound(_) => "generator-bound",
            };
            format!("{} {v}", r(*rate))
        })
        .collect();
    let trail = format!(
        " (steps: {}; {} windows in {}{})",
        steps.join(", "),
        lines.len(),
        crate::fmt_duration(took),
        stopped.map(|s| format!("; {s}")).unwrap_or_default()
    );
    let mut props = vec![
        prop("steps", search.steps.len() as u64),
        prop("windows", lines.len() as u64),
        prop("min_samples", p.min_samples),
    ];
    let finding = search.finding();
    // (message, lowest known capacity, highest it can be, resolved)
    let (msg, lo, hi, resolved) = match &finding {
        Finding::Knee { lo, hi, resolved } => (
            format!(
                "capacity between {} and {}: {} passed and {} failed the thresholds{}",
                r(*lo),
                r(*hi),
                r(*lo),
                r(*hi),
                if *resolved {
                    String::new()
                } else {
                    format!(
                        "; wider than the resolution {:.0}%: the rates between were undecided or the search ran out of steps",
                        p.settings.resolution * 100.0
                    )
                }
            ),
            Some(*lo),
            Some(*hi),
            *resolved,
        ),
        Finding::NotFound { ceiling } => (
            format!(
                "bound not found, capacity >= {}: the rate ceiling passed the thresholds",
                r(*ceiling)
            ),
            Some(*ceiling),
            None,
            true,
        ),
        Finding::LowerBound { lo, at, why } => (
            match lo {
                Some(l) => format!(
                    "lower bound: capacity >= {} ({} passed); the generator could not hold {}: {why}",
                    r(*l),
                    r(*l),
                    r(*at)
                ),
                None => format!(
                    "lower bound: none, no rate passed before the generator could not hold {}, the first rate judged: {why}",
                    r(*at)
                ),
            },
            *lo,
            None,
            false,
        ),
        Finding::Below { lowest } => (
            format!(
                "capacity below {}: every rate tried failed the thresholds",
                r(*lowest)
            ),
            None,
            Some(*lowest),
            true,
        ),
        Finding::Undecided { lo, hi, tried } => (
            {
                let tried = tried.iter().map(|t| r(*t)).collect::<Vec<_>>().join(", ");
                match hi {
                    Some(h) => format!(
                        "capacity below {}: it failed the thresholds in two agreeing windows, and no rate under it was shown to pass (tried {tried})",
                        r(*h)
                    ),
                    None => format!(
                        "no bound decided{}: the steps at {tried} never gave two agreeing windows",
                        lo.map(|l| format!(" above {}", r(l))).unwrap_or_default(),
                    ),
                }
            },
            *lo,
            *hi,
            false,
        ),
    };
    if let Some(l) = lo {
        props.push(prop("capacity_low", PropValue::rounded(l, 2)));
    }
    if let Some(h) = hi {
        props.push(prop("capacity_high", PropValue::rounded(h, 2)));
    }
    let msg = format!("{msg}{trail}");
    let o = match p.at_least {
        Some(need) => {
            props.push(prop("at_least", need));
            if lo.is_some_and(|l| l >= need) {
                Outcome::pass(format!("{msg}; at least {} as declared", r(need)))
            } else if hi.is_some_and(|h| h <= need) {
                Outcome::fail(
                    format!("{msg}: below the declared {}", r(need)),
                    format!("capacity >= {}", r(need)),
                    match lo {
                        Some(l) => format!("between {} and {}", r(l), r(hi.unwrap_or(l))),
                        None => format!("below {}", r(hi.unwrap_or(0.0))),
                    },
                )
            } else {
                Outcome::inconclusive(format!(
                    "inconclusive: {msg}; whether it reaches the declared {} is not decided",
                    r(need)
                ))
            }
        }
        None => match finding {
            Finding::Below { .. } => Outcome::fail(
                msg,
                "some rate that holds the thresholds".to_owned(),
                "none down to the lowest tried".to_owned(),
            ),
            _ if resolved => Outcome::pass(msg),
            _ => Outcome::inconclusive(format!("inconclusive: {msg}")),
        },
    };
    let o = if lines.is_empty() {
        o
    } else {
        o.with_evidence(vec![crate::outcome::Evidence {
            label: "windows".into(),
            request: String::new(),
            status: None,
            request_id: None,
            elapsed_ms: None,
            detail: Some(lines.join("\n")),
        }])
    };
    o.with_properties(props)
}
