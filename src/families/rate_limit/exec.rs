//! The rate-limit family (catalogue §2): limit headers in every dialect,
//! a bounded 429 storm, and what the checks that drive a key to its limit
//! share (`rate_limit.recovery` is in `recovery.rs`, `partition` in
//! `partition.rs`, the block handed from one to the next in `handover.rs`).
//!
//! Checks that drive a key to its limit always end with a bounded, announced
//! cool-down (wait for Retry-After, then probe until the key is served again)
//! so that the checks after them in the same run are not hit by 429s.

use super::{fields, timing};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use crate::context::CheckContext;
use crate::context::Scope;
use crate::families::common::describe;
use crate::families::rate_limit::plan::{Exhaust, HeadersPlan, RateLimitPlan, StormPlan};
use crate::fmt_duration;
use crate::http::{Exchange, Rendered};
use crate::outcome::{prop, Assertion, Evidence, Outcome, PropValue};
use fields::{date_of, observe};

/// Hard time bound of one attempt to reach the limit, whatever max_requests says.
const EXHAUST_DEADLINE: Duration = Duration::from_secs(30);
/// Pause between cool-down probes.
const POLL: Duration = Duration::from_millis(250);
/// Window bound for Reset when neither the suite nor an IETF policy gives one.
const DEFAULT_WINDOW: Duration = super::spec::defaults::WINDOW;

pub(super) fn secs(d: Duration) -> String {
    fmt_duration(d)
}

/// Requests past the advertised limit a check that exhausts the quota may
/// send (a window that turns during the storm, a limiter that counts late).
fn margin(limit: u64) -> u64 {
    (limit / 10).max(20)
}

/// Most requests an auto-sized storm sends, whatever the target advertises.
const AUTO_CEILING: u64 = 20_000;

/// How many requests `x` may send to reach a limit (and `extra` answers
/// past it): sized from the limit the run's book learned for the
/// credential (or the declared quota), twice the limit plus a margin, never
/// below the planned default; `max_requests` when the suite wrote it. Read before every request, so a limit the
/// first answers advertise sizes the rest.
fn cap(ctx: &CheckContext, r: &Rendered, x: &Exhaust, extra: u64) -> u64 {
    let planned = u64::from(x.max_requests);
    if x.max_requests_set {
        return planned;
    }
    // A burst that starts late in a fixed window is served the rest of it
    // and then a whole fresh one: reaching the limit may take up to twice
    // the limit. Never less than the planned default.
    let sized = match ctx.client.quota().and_then(|q| q.limit_of(&r.credential())) {
        Some(limit) if 2 * limit + extra + margin(limit) <= AUTO_CEILING => {
            (2 * limit + extra + margin(limit)).max(planned)
        }
        // Beyond the ceiling: the planned default, and an error that says why.
        _ => planned,
    };
    if remote_load_refused(ctx) {
        // More is load, which a remote target gets only when allowed.
        sized.min(crate::context::HIGH_VOLUME_REQUESTS)
    } else {
        sized
    }
}

fn remote_load_refused(ctx: &CheckContext) -> bool {
    !ctx.allow_remote_load && crate::context::remote_because(&ctx.target.base_url).is_some()
}

/// Not reaching the limit because the ceiling is below it is tminus's
/// problem, not the target's: the error says so (`None`: the ceiling was
/// not the reason).
fn ceiling_below_limit(
    ctx: &CheckContext,
    r: &Rendered,
    x: &Exhaust,
    sent: u64,
) -> Option<Outcome> {
    let limit = ctx.client.quota()?.limit_of(&r.credential())?;
    let ceiling = cap(ctx, r, x, 0);
    (sent >= ceiling && ceiling <= limit).then(|| {
        Outcome::error(if x.max_requests_set {
            format!(
                "max_requests {} is below the advertised limit of {limit} requests: the limit cannot be reached; raise max_requests (or leave it out: tminus sizes the storm from the advertised limit)",
                x.max_requests
            )
        } else if remote_load_refused(ctx) && ceiling == crate::context::HIGH_VOLUME_REQUESTS {
            format!(
                "the advertised limit of {limit} requests needs more than {ceiling} to reach: that is load, and {} is not a loopback address; pass --allow-remote-load",
                crate::redact::mask_userinfo(&ctx.target.base_url)
            )
        } else {
            format!(
                "the advertised limit of {limit} requests is above the {ceiling} tminus sends to reach a limit on its own (at most {AUTO_CEILING}): set max_requests above the limit to storm it"
            )
        })
    })
}

/// A storm sized past [`crate::context::HIGH_VOLUME_REQUESTS`] to a remote
/// target is load: refused without `--allow-remote-load`, like a burst.
fn refuse_remote_load(ctx: &CheckContext, n: u64) -> Option<Outcome> {
    (n > crate::context::HIGH_VOLUME_REQUESTS && remote_load_refused(ctx)).then(|| {
        Outcome::error(format!(
            "the advertised limit needs up to {n} requests to reach: that is load, and {} is not a loopback address; pass --allow-remote-load",
            crate::redact::mask_userinfo(&ctx.target.base_url)
        ))
    })
}

/// The first limited answer of a burst, and when it arrived.
pub(super) struct Limited {
    pub(super) ex: Exchange,
    pub(super) at: Instant,
    pub(super) sent: u32,
    /// The status of the first answer that was served (neither limited nor
    /// a 5xx), if any.
    pub(super) served: Option<u16>,
}

/// Sends `r` with `x.concurrency` requests in flight until the first limited
/// answer, bounded by `x.max_requests` and `EXHAUST_DEADLINE`. Not reaching
/// the limit is an `Error`: the check cannot judge what it never saw.
pub(super) async fn exhaust(
    ctx: &CheckContext,
    r: &Rendered,
    x: &Exhaust,
    who: &str,
) -> Result<Limited, Outcome> {
    let sent = AtomicU32::new(0);
    let done = AtomicBool::new(false);
    let first: Mutex<Option<(Exchange, Instant, u32)>> = Mutex::new(None);
    let broken: Mutex<Option<Outcome>> = Mutex::new(None);
    let served: Mutex<Option<u16>> = Mutex::new(None);
    let started = Instant::now();
    let worker = || async {
        loop {
            if done.load(Ordering::Relaxed) || started.elapsed() > EXHAUST_DEADLINE {
                break;
            }
            let n = sent.fetch_add(1, Ordering::Relaxed) + 1;
            if u64::from(n) > cap(ctx, r, x, 0) {
                break;
            }
            match ctx.client.send(r).await {
                Ok(ex) if ex.status() == x.limited_status => {
                    done.store(true, Ordering::Relaxed);
                    let mut f = first.lock().unwrap_or_else(|p| p.into_inner());
                    if f.is_none() {
                        *f = Some((ex, Instant::now(), n));
                    }
                }
                // A 5xx on the way to the limit is not what the key is
                // served (a limiter that answers 503 past some rejections,
                // as the reference's `storm-5xx`): the partition compares
                // tenant B with what A was really served.
                Ok(ex) if ex.status() >= 500 => {}
                Ok(ex) => {
                    served
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(ex.status());
                }
                Err(e) => {
                    done.store(true, Ordering::Relaxed);
                    let mut b = broken.lock().unwrap_or_else(|p| p.into_inner());
                    if b.is_none() {
                        *b = Some(Outcome::transport(&format!("exhausting {who}"), &e));
                    }
                }
            }
        }
    };
    futures::future::join_all((0..x.concurrency).map(|_| worker())).await;
    if let Some((ex, at, sent)) = first.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let served = served.into_inner().unwrap_or_else(|p| p.into_inner());
        return Ok(Limited {
            ex,
            at,
            sent,
            served,
        });
    }
    if let Some(o) = broken.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(o);
    }
    let sent_n = u64::from(sent.load(Ordering::Relaxed)).min(cap(ctx, r, x, 0));
    if let Some(o) = ceiling_below_limit(ctx, r, x, sent_n) {
        return Err(o);
    }
    Err(Outcome::error(format!(
        "could not reach {who}'s rate limit: {} requests ({} in flight) over {} got no {}; raise max_requests or use rate_limit.storm to judge this",
        sent_n,
        x.concurrency,
        secs(started.elapsed()),
        x.limited_status
    )))
}

/// Waits (announced, bounded by `max`) until `r` is served again: first the
/// hinted time (Retry-After), then a probe every `POLL`. Returns a warning
/// when the key is still limited at the bound.
pub(super) async fn cool_down(
    ctx: &CheckContext,
    r: &Rendered,
    limited: u16,
    hint: Option<Duration>,
    max: Duration,
) -> Option<String> {
    // With the run's request budget the block the storm left is in the
    // book: a polite send waits it out (announced, within --max-quota-wait)
    // and comes back when the key is served again.
    // A 5xx is not the key served again: a limiter that answers 503 past
    // some rejections (the reference's `storm-5xx`) says nothing of its
    // window, so the key is probed below until it is served.
    let served = |ex: &Exchange| ex.status() != limited && ex.status() < 500;
    if ctx.client.quota().is_some() {
        match ctx.client.polite().send(r).await {
            Ok(ex) if served(&ex) => return None,
            Ok(ex) if ex.status() < 500 => {
                return Some(format!(
                    "the key was still answered {} after waiting for its window; later checks may see {limited}s",
                    ex.status()
                ))
            }
            Ok(_) => {}
            Err(e) => return Some(e.to_string()),
        }
    }
    let started = Instant::now();
    let first = hint.unwrap_or(Duration::from_secs(1)).min(max);
    ctx.note(format!(
        "waiting {} for the rate-limit window to reset (so later checks are not hit by {limited}s)",
        secs(first)
    ));
    tokio::time::sleep(first).await;
    loop {
        match ctx.client.send(r).await {
            Ok(ex) if served(&ex) => return None,
            _ => {}
        }
        if started.elapsed() + POLL > max {
            return Some(format!(
                "the key was still limited {} after the burst (cooldown_max); later checks may see {limited}s",
                secs(max)
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

pub(super) fn with_warning(o: Outcome, w: Option<String>) -> Outcome {
    match w {
        Some(w) => o.with_properties(vec![prop("cooldown", w)]),
        None => o,
    }
}

/// `rate_limit.headers` (RL-001, RL-005): `present` on every sampled
/// response, `syntax` of every field sent, `consistency` of the values
/// (remaining within the limit, reset inside the window, remaining never
/// rising within a window). Each keeps its first problem, with evidence.
pub async fn headers(p: &HeadersPlan, ctx: &CheckContext) -> Outcome {
    let scope = Scope::new();
    let rendered: Vec<Rendered> = p
        .requests
        .iter()
        .map(|r| ctx.target.render(r, &scope))
        .collect();
    if rendered.is_empty() {
        return Outcome::error("no requests to sample");
    }
    // Per request entry: (remaining, absolute reset in epoch seconds) of the last answer.
    let mut prev: Vec<Option<(u64, f64)>> = vec![None; rendered.len()];
    let mut statuses: BTreeMap<u16, u32> = BTreeMap::new();
    let mut dialects: Vec<&str> = Vec::new();
    let mut evidence = Vec::new();
    // First problem per property: (message, expected, actual, evidence).
    let mut problems: BTreeMap<&'static str, (String, String, String, Evidence)> = BTreeMap::new();
    // Evidence counts: responses whose fields were parsed, and whose values
    // could be checked against each other.
    let (mut parsed, mut compared) = (0u32, 0u32);
    for i in 0..p.samples as usize {
        let k = i % rendered.len();
        let label = format!("sample {}", i + 1);
        let ex = match ctx.client.send(&rendered[k]).await {
            Ok(ex) => ex,
            Err(e) => return Outcome::transport(&label, &e),
        };
        *statuses.entry(ex.status()).or_default() += 1;
        if evidence.len() < 3 {
            evidence.push(Evidence::from_exchange(&label, &ex));
        }
        let mut problem =
            |property: &'static str, msg: String, expected: String, actual: String| {
                problems.entry(property).or_insert_with(|| {
                    (
                        format!("{label} ({} {}): {msg}", ex.request.method, describe(&ex)),
                        expected,
                        actual,
                        Evidence::from_exchange(&label, &ex),
                    )
                });
            };
        let obs = match observe(&ex.response, &p.dialects) {
            Ok(o) => o,
            Err(e) => {
                let expected = match e.property {
                    "present" => "every field of the dialect on every response",
                    "consistency" => "rate-limit values that agree",
                    _ => "well-formed rate-limit headers",
                };
                if e.property == "consistency" {
                    // Every field parsed; the values were compared and disagree.
                    parsed += 1;
                    compared += 1;
                    for d in &e.dialects {
                        if !dialects.contains(d) {
                            dialects.push(d);
                        }
                    }
                }
                problem(e.property, e.message.clone(), expected.into(), e.message);
                continue;
            }
        };
        if obs.dialects.is_empty() {
            let n = &p.dialects.names;
            let early = if n.limit.eq_ignore_ascii_case("RateLimit-Limit") {
                String::new()
            } else {
                ", RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset".to_owned()
            };
            problem(
                "present",
                format!(
                    "no rate-limit headers (looked for {}, {}, {}{early}, RateLimit, RateLimit-Policy)",
                    n.limit, n.remaining, n.reset
                ),
                "rate-limit headers on every response".into(),
                "none".into(),
            );
            continue;
        }
        parsed += 1;
        if obs.reset_in.is_some() || (obs.limit.is_some() && obs.remaining.is_some()) {
            compared += 1;
        }
        for d in &obs.dialects {
            if !dialects.contains(d) {
                dialects.push(d);
            }
        }
        let window = p
            .window
            .or(obs.window.map(Duration::from_secs))
            .unwrap_or(DEFAULT_WINDOW)
            .as_secs_f64();
        if let Some(reset_in) = obs.reset_in {
            // Date has one-second resolution: allow one second either side.
            if reset_in < -1.0 || reset_in > window + 1.0 {
                problem(
                    "consistency",
                    format!(
                        "the reset is {reset_in:.1} s after the response's Date, outside [0, {window:.0}] s"
                    ),
                    format!("reset within {window:.0} s after Date"),
                    format!("{reset_in:.1} s"),
                );
            }
        }
        if let (Some(rem), Some(reset_in)) = (obs.remaining, obs.reset_in) {
            let base = date_of(&ex.response).unwrap_or_else(SystemTime::now);
            let abs = base
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0)
                + reset_in;
            if let Some((prem, pabs)) = prev[k] {
                if (abs - pabs).abs() < 0.5 && rem > prem {
                    problem(
                        "consistency",
                        format!("remaining went up from {prem} to {rem} inside the same window"),
                        "remaining does not increase within a window".into(),
                        format!("{prem} -> {rem}"),
                    );
                }
            }
            prev[k] = Some((rem, abs));
        }
    }
    let seen: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}×{n}")).collect();
    let seen = seen.join(", ");
    let mut judge = |property: &'static str, pass: String, unexercised: Option<String>| {
        if let Some((msg, expected, actual, ev)) = problems.remove(property) {
            evidence.push(ev);
            return Assertion::fail(property, msg, expected, actual);
        }
        match unexercised {
            Some(why) => Assertion::skipped(property, why),
            None => Assertion::pass(property, pass),
        }
    };
    let none_parsed = (parsed == 0)
        .then(|| "not judged: no response carried rate-limit fields that could be read".to_owned());
    let judged = vec![
        judge(
            "present",
            format!(
                "{} responses ({seen}) all carried rate-limit headers ({})",
                p.samples,
                dialects.join(" + ")
            ),
            None,
        ),
        judge(
            "syntax",
            format!(
                "the fields of {parsed} responses parsed ({})",
                dialects.join(" + ")
            ),
            none_parsed.clone(),
        ),
        judge(
            "consistency",
            format!("{compared} responses carried values that agree (remaining, limit, reset)"),
            none_parsed.or((compared == 0).then(|| {
                "not judged: no response carried a reset or both a limit and a remaining count"
                    .to_owned()
            })),
        ),
    ];
    Outcome::judged(judged)
        .with_evidence(evidence)
        .with_properties(vec![prop("dialects", dialects.join(","))])
}

#[derive(Default)]
struct StormTally {
    statuses: BTreeMap<u16, u32>,
    limited: u32,
    drops: u32,
    /// First example of each problem: (what, message, evidence).
    problems: BTreeMap<&'static str, (String, Evidence)>,
    first_limited: Option<Evidence>,
    /// The first limited answer and the number of the request it answered
    /// (what a block handed on carries).
    first_limited_ex: Option<(Exchange, u32)>,
    /// The first status served before the limit.
    served: Option<u16>,
    last_limited: Option<(Instant, Option<Duration>)>,
    /// Limited answers with a valid Retry-After, and with the Remaining header.
    with_retry_after: u32,
    with_remaining: u32,
}

/// `rate_limit.storm` (RL-002, RL-006, RL-007).
pub async fn storm(p: &StormPlan, ctx: &CheckContext) -> Outcome {
    let x = &p.exhaust;
    let r = ctx.target.render(&x.request, &Scope::new());
    let tally = Mutex::new(StormTally::default());
    let hist = Mutex::new(timing::latency_histogram());
    let sent = AtomicU32::new(0);
    let started = Instant::now();
    ctx.note(format!(
        "storm: up to {} requests, {} in flight, stopping after {} × {}",
        cap(ctx, &r, x, u64::from(p.stop_after)),
        x.concurrency,
        p.stop_after,
        x.limited_status
    ));
    let worker = || async {
        loop {
            if started.elapsed() > p.max_duration {
                break;
            }
            if tally.lock().unwrap_or_else(|e| e.into_inner()).limited >= p.stop_after {
                break;
            }
            let n = sent.fetch_add(1, Ordering::Relaxed) + 1;
            if u64::from(n) > cap(ctx, &r, x, u64::from(p.stop_after)) {
                break;
            }
            let label = format!("storm request {n}");
            let res = ctx.client.send(&r).await;
            let mut guard = tally.lock().unwrap_or_else(|e| e.into_inner());
            // A plain borrow, so the problem closure below takes only `problems`.
            let t = &mut *guard;
            let ex = match res {
                Ok(ex) => ex,
                Err(e) => {
                    t.drops += 1;
                    t.problems
                        .entry("drop")
                        .or_insert_with(|| (e.to_string(), Evidence::from_transport(&label, &e)));
                    continue;
                }
            };
            *t.statuses.entry(ex.status()).or_default() += 1;
            if ex.status() >= 500 {
                t.problems
                    .entry("5xx")
                    .or_insert_with(|| (describe(&ex), Evidence::from_exchange(&label, &ex)));
                continue;
            }
            if ex.status() != x.limited_status {
                t.served.get_or_insert(ex.status());
                continue;
            }
            t.limited += 1;
            timing::record(
                &mut hist.lock().unwrap_or_else(|e| e.into_inner()),
                ex.elapsed,
            );
            if t.first_limited.is_none() {
                t.first_limited = Some(Evidence::from_exchange(&label, &ex));
                t.first_limited_ex = Some((ex.clone(), n));
            }
            let ra = fields::retry_after(&ex.response, SystemTime::now());
            t.last_limited = Some((Instant::now(), ra.as_ref().ok().copied()));
            let mut problem = |k: &'static str, msg: String| {
                t.problems
                    .entry(k)
                    .or_insert_with(|| (msg, Evidence::from_exchange(&label, &ex)));
            };
            match ra {
                Ok(_) => t.with_retry_after += 1,
                Err(e) if ex.response.header("retry-after").is_none() => {
                    problem("retry-after-missing", format!("{}: {e}", describe(&ex)))
                }
                Err(e) => problem("retry-after", format!("{}: {e}", describe(&ex))),
            }
            if let Some(code) = &p.error_code {
                let got = ex
                    .response
                    .json()
                    .and_then(|d| p.error_code_path.select(&d));
                let ok = matches!(&got, Some(serde_json::Value::String(s)) if s == code);
                if !ok {
                    problem(
                        "code",
                        format!(
                            "{}: {} is {}, expected `{code}`",
                            describe(&ex),
                            p.error_code_path,
                            got.map(|v| v.to_string())
                                .unwrap_or_else(|| "missing".into())
                        ),
                    );
                }
            }
            if let Some(rem) = ex.response.header(&p.remaining_header) {
                t.with_remaining += 1;
                if rem.trim() != "0" {
                    problem(
                        "remaining",
                        format!(
                            "{}: {} is `{rem}` on a limited answer, expected 0",
                            describe(&ex),
                            p.remaining_header
                        ),
                    );
                }
            }
            if let Some(cc) = ex.response.header("cache-control") {
                let l = cc.to_ascii_lowercase();
                let fresh = l.split(',').map(str::trim).any(|d| {
                    d == "public"
                        || d.strip_prefix("max-age=")
                            .and_then(|v| v.trim_matches('"').parse::<u64>().ok())
                            .is_some_and(|v| v > 0)
                });
                if fresh {
                    problem(
                        "cache",
                        format!(
                            "{}: Cache-Control `{cc}` lets caches store a {} (RFC 6585 §4)",
                            describe(&ex),
                            x.limited_status
                        ),
                    );
                }
            }
        }
    };
    futures::future::join_all((0..x.concurrency).map(|_| worker())).await;
    let elapsed = started.elapsed();
    let t = tally.into_inner().unwrap_or_else(|e| e.into_inner());
    let hist = hist.into_inner().unwrap_or_else(|e| e.into_inner());
    let total: u32 = t.statuses.values().sum::<u32>() + t.drops;
    let seen: Vec<String> = t.statuses.iter().map(|(s, n)| format!("{s}×{n}")).collect();
    let seen = if t.drops > 0 {
        format!("{}, dropped×{}", seen.join(", "), t.drops)
    } else {
        seen.join(", ")
    };
    let p95 = timing::p95(&hist);
    let mut props = vec![
        prop("requests", total),
        prop("statuses", seen.clone()),
        prop("duration_ms", elapsed.as_millis()),
    ];
    if t.limited > 0 {
        props.push(prop(
            "limited_p95_ms",
            PropValue::rounded(p95.as_secs_f64() * 1000.0, 1),
        ));
        props.push(prop(
            "limited_p50_ms",
            PropValue::rounded(hist.value_at_quantile(0.5) as f64 / 1000.0, 1),
        ));
    }
    // A clean block (the limit reached, nothing broken on the way) is
    // handed on when the runner says the next check needs it; otherwise
    // cool down before judging, so even a failing storm leaves the key
    // usable.
    let clean = t.limited > 0 && !t.problems.contains_key("5xx") && t.drops == 0;
    let handed = match (&t.first_limited_ex, ctx.exhaustion.hand_on() && clean) {
        (Some((ex, n)), true) => {
            ctx.exhaustion
                .leave(super::handover::block_of(ctx, &r, ex.clone(), *n, t.served));
            true
        }
        _ => false,
    };
    if handed {
        props.push(prop("block", "handed on"));
    }
    let warn = if handed {
        None
    } else if t.limited > 0 || t.problems.contains_key("5xx") {
        let hint = t
            .last_limited
            .and_then(|(at, ra)| ra.map(|ra| ra.saturating_sub(at.elapsed())));
        cool_down(ctx, &r, x.limited_status, hint, x.cooldown_max).await
    } else {
        None
    };
    let limited = x.limited_status;
    let mut evidence: Vec<Evidence> = Vec::new();
    if let Some(ev) = &t.first_limited {
        evidence.push(ev.clone());
    }
    // (property, problem key, expected, what went wrong)
    let rows: [(&'static str, &str, String, &str); 8] = [
        (
            "no_drops",
            "drop",
            "no dropped connections or timeouts".into(),
            "dropped connection",
        ),
        (
            "no_5xx",
            "5xx",
            format!("{limited} under the storm, never 5xx"),
            "5xx under the storm",
        ),
        (
            "retry_after_present",
            "retry-after-missing",
            format!("Retry-After on every {limited}"),
            "no Retry-After",
        ),
        (
            "retry_after_valid",
            "retry-after",
            "Retry-After as delay-seconds or an HTTP-date".into(),
            "invalid Retry-After",
        ),
        (
            "error_code",
            "code",
            "the configured error code in the body".into(),
            "wrong error code",
        ),
        (
            "remaining_zero",
            "remaining",
            "Remaining: 0 on limited answers".into(),
            "Remaining not 0",
        ),
        (
            "not_cacheable",
            "cache",
            "no explicit freshness on limited answers".into(),
            "cacheable limited answer",
        ),
        ("fast_rejections", "", String::new(), ""),
    ];
    let reached = t.limited > 0;
    if !reached && elapsed <= p.max_duration {
        if let Some(o) = ceiling_below_limit(ctx, &r, x, u64::from(total)) {
            return with_warning(o.with_properties(props), warn);
        }
    }
    let no_limit = format!("not judged: no {limited} was received, the limit was never reached");
    let mut judged = vec![if reached {
        Assertion::pass(
            "limit_reached",
            format!("{} × {limited} after {total} requests ({seen})", t.limited),
        )
    } else {
        let bound = if elapsed > p.max_duration {
            format!("max_duration {}", secs(p.max_duration))
        } else {
            format!("{} requests", cap(ctx, &r, x, u64::from(p.stop_after)))
        };
        Assertion::fail(
            "limit_reached",
            format!(
                "the limit was never reached: {total} requests ({} in flight) over {} got no {limited} ({seen}); stopped at {bound}",
                x.concurrency,
                secs(elapsed),
            ),
            format!(
                "{limited} within {} requests",
                cap(ctx, &r, x, u64::from(p.stop_after))
            ),
            seen.clone(),
        )
    }];
    for (property, key, expected, what) in rows {
        if let Some((msg, ev)) = t.problems.get(key) {
            evidence.push(ev.clone());
            judged.push(Assertion::fail(
                property,
                format!("{what} after {total} requests ({seen}): {msg}"),
                expected,
                msg.clone(),
            ));
            continue;
        }
        // Every property below is about answers over the limit: without a
        // limited answer there is nothing to judge.
        if !reached {
            judged.push(Assertion::skipped(property, no_limit.clone()));
            continue;
        }
        judged.push(match property {
            "error_code" if p.error_code.is_none() => Assertion::skipped(
                property,
                "no code expected in the limited body (no RFC defines one: the `standard` profile, or `error_code: none`)",
            ),
            "error_code" => Assertion::pass(
                property,
                format!(
                    "{} carried `{}` in all {} limited answers",
                    p.error_code_path,
                    p.error_code.as_deref().unwrap_or_default(),
                    t.limited
                ),
            ),
            "remaining_zero" if t.with_remaining == 0 => Assertion::skipped(
                property,
                format!("no limited answer carried {}", p.remaining_header),
            ),
            "remaining_zero" => Assertion::pass(
                property,
                format!(
                    "{} was 0 on the {} limited answers that carried it",
                    p.remaining_header, t.with_remaining
                ),
            ),
            "retry_after_valid" if t.with_retry_after == 0 => Assertion::skipped(
                property,
                format!("no {limited} carried a Retry-After to read"),
            ),
            "retry_after_present" | "retry_after_valid" => Assertion::pass(
                property,
                format!(
                    "{} of {} limited answers carried a valid Retry-After",
                    t.with_retry_after, t.limited
                ),
            ),
            "fast_rejections" => Assertion::check(
                property,
                timing::fast_rejections_rule(&hist, p.p95_under),
                format!(
                    "p95 {} over {} × {limited} (threshold {})",
                    secs(p95),
                    t.limited,
                    secs(p.p95_under)
                ),
                format!(
                    "limited answers are slow: p95 {} over {} × {limited} (threshold {})",
                    secs(p95),
                    t.limited,
                    secs(p.p95_under)
                ),
                format!("p95 under {}", secs(p.p95_under)),
                secs(p95),
            ),
            _ => Assertion::pass(
                property,
                format!("none among {total} requests over the limit ({seen})"),
            ),
        });
    }
    let o = Outcome::judged(judged)
        .with_evidence(evidence)
        .with_properties(props);
    with_warning(o, warn)
}

/// Runs a planned `rate_limit.*` check.
pub async fn run(plan: &RateLimitPlan, ctx: &CheckContext) -> Outcome {
    // The checks that exhaust the quota judge every 429 themselves (the
    // run's book still learns from them); the headers check samples
    // politely: a 429 there means wait, not a sample.
    let judging = CheckContext {
        client: ctx.client.judging_limits(),
        ..ctx.clone()
    };
    let exhaust = match plan {
        RateLimitPlan::Headers(p) => return headers(p, ctx).await,
        RateLimitPlan::Storm(p) => &p.exhaust,
        RateLimitPlan::Recovery(p) => &p.exhaust,
        RateLimitPlan::Partition(p) => &p.exhaust,
    };
    let r = ctx.target.render(&exhaust.request, &Scope::new());
    let extra = plan.requests().exhausts.unwrap_or(0);
    if let Some(refused) = refuse_remote_load(ctx, cap(ctx, &r, exhaust, extra)) {
        return refused;
    }
    match plan {
        RateLimitPlan::Headers(_) => unreachable!("returned above"),
        RateLimitPlan::Storm(p) => storm(p, &judging).await,
        RateLimitPlan::Recovery(p) => super::recovery::recovery(p, &judging).await,
        RateLimitPlan::Partition(p) => super::partition::partition(p, &judging).await,
    }
}
