//! `rate_limit.recovery` (RL-003): each sample drives the key to its
//! limit, takes one limited answer at a sub-second phase of the target's
//! clock it chose (`timing::PHASES`, the clock read from `Date` by
//! `phase.rs`), and probes at Retry-After − 1 s (still limited) and at
//! Retry-After + margin (served). Judged by `timing::recovery_rule`; the
//! error rates, with and without control of the phase, are measured in
//! `timing.rs`.

use std::time::{Duration, Instant, SystemTime};

use super::exec::{cool_down, exhaust, secs, with_warning, Limited};
use super::phase::{self, Source, TargetClock};
use super::{fields, timing};
use crate::context::CheckContext;
use crate::context::Scope;
use crate::families::common::describe;
use crate::families::rate_limit::plan::RecoveryPlan;
use crate::http::{Exchange, Rendered};
use crate::outcome::{prop, Assertion, Evidence, Outcome, Verdict};
use fields::observe;

/// Reads the target's clock: bisects the tick of `Date` with up to
/// `phase::CLOCK_PROBES` requests of the check's own request (they count
/// against the key's limit like any other). Falls back to tminus's clock,
/// saying why, when the target sends no usable `Date`.
async fn read_clock(ctx: &CheckContext, r: &Rendered) -> Result<TargetClock, Outcome> {
    let base = Instant::now();
    let mut clock = TargetClock::unknown(base);
    let mut rtt = Duration::ZERO;
    for i in 0..phase::CLOCK_PROBES {
        if i > 0 {
            if clock.uncertainty() <= phase::PRECISION / 2.0 {
                break;
            }
            tokio::time::sleep_until(clock.bisect_at(Instant::now(), rtt).into()).await;
        }
        let sent = Instant::now();
        let ex = ctx
            .client
            .send(r)
            .await
            .map_err(|e| Outcome::transport("reading the target's clock from Date", &e))?;
        rtt = ex.ttfb;
        if let Err(why) = clock.observe_response(sent, &ex) {
            return Ok(TargetClock::local(base, why));
        }
    }
    if clock.uncertainty() > phase::MAX_UNCERTAINTY {
        return Ok(TargetClock::local(
            base,
            format!(
                "the tick of the target's Date was found only to ±{:.0} ms (round trips too slow)",
                clock.uncertainty() * 1000.0
            ),
        ));
    }
    Ok(clock)
}

/// Sends `r` and lets the answer's `Date` refine the clock.
async fn send_timed(
    ctx: &CheckContext,
    r: &Rendered,
    clock: &mut TargetClock,
    what: &str,
) -> Result<(Exchange, f64), Outcome> {
    let sent = Instant::now();
    let ex = ctx
        .client
        .send(r)
        .await
        .map_err(|e| Outcome::transport(what, &e))?;
    let _ = clock.observe_response(sent, &ex);
    let phase = clock.phase_at(sent + ex.ttfb / 2);
    Ok((ex, phase))
}

/// A limited answer at about `want` s past a tick: a burst to the limit
/// started just after a tick (`timing::BURST_START`); its first limited
/// answer when that came near `want`, else one request aimed at `want`
/// while the key is blocked. An aimed request that is served (the window
/// turned first) costs a fresh limit, reached at once; after `timing::AIM_ATTEMPTS` the
/// burst's own limited answer is taken, at the phase it came. Returns the
/// limited answer and its phase.
async fn limited_at(
    p: &RecoveryPlan,
    ctx: &CheckContext,
    r: &Rendered,
    clock: &mut TargetClock,
    want: f64,
    tag: &str,
) -> Result<(Limited, f64), Outcome> {
    let x = &p.exhaust;
    // After a miss the window has just turned: the next burst goes at once.
    let mut at_once = false;
    for aim in 1..=timing::AIM_ATTEMPTS + 1 {
        if !at_once {
            let start = clock.next_at(Instant::now(), timing::BURST_START);
            tokio::time::sleep_until(start.into()).await;
        }
        let lim = exhaust(ctx, r, x, "the key").await?;
        let sent = lim.at.checked_sub(lim.ex.elapsed).unwrap_or(lim.at);
        let _ = clock.observe_response(sent, &lim.ex);
        let came = clock.phase_at(sent + lim.ex.ttfb / 2);
        if phase::circular_distance(came, want) <= timing::PHASE_TOLERANCE
            || aim > timing::AIM_ATTEMPTS
        {
            return Ok((lim, came));
        }
        let half = lim.ex.ttfb / 2;
        let at = clock.next_at(lim.at + Duration::from_millis(5) + half, want);
        tokio::time::sleep_until(at.checked_sub(half).unwrap_or(at).into()).await;
        let (ex, got) = send_timed(ctx, r, clock, "the request aimed at a phase").await?;
        if ex.status() == x.limited_status {
            return Ok((
                Limited {
                    ex,
                    at: Instant::now(),
                    sent: lim.sent + 1,
                    served: lim.served,
                },
                got,
            ));
        }
        ctx.note(format!(
            "{tag}the request aimed at {want:.2} s past a tick was answered {} (the window turned first); a fresh limit",
            ex.status()
        ));
        at_once = true;
    }
    unreachable!("the last attempt returns")
}

/// How long the 429 asks to wait: Retry-After, else the limit headers' reset.
fn wait_of(
    ex: &Exchange,
    p: &RecoveryPlan,
) -> Result<(Duration, Option<f64>, &'static str), String> {
    let reset = observe(&ex.response, &p.dialects)
        .ok()
        .and_then(|o| o.reset_in);
    match fields::retry_after(&ex.response, SystemTime::now()) {
        Ok(ra) => Ok((ra, reset, "Retry-After")),
        Err(e) if ex.response.header("retry-after").is_some() => Err(e),
        Err(_) => match reset {
            Some(r) => Ok((
                Duration::from_secs_f64(r.max(0.0).ceil()),
                reset,
                "the limit headers' reset",
            )),
            None => Err("the limited answer has neither Retry-After nor a rate-limit reset".into()),
        },
    }
}

/// One sample of `rate_limit.recovery`: the limited answer, the wait it asks
/// for, and the two probes.
struct Probed {
    lim: Limited,
    wait: Duration,
    reset: Option<f64>,
    source: &'static str,
    early: Exchange,
    early_after: Duration,
    /// The recovery probe; `None` when `Retry-After: 0` was refused at once.
    after: Option<Exchange>,
    /// The limited answer's phase, seconds past a tick of the clock read.
    phase: f64,
}

impl Probed {
    fn sample(&self, limited: u16) -> timing::Sample {
        timing::Sample {
            early_limited: self.early.status() == limited,
            served: self
                .after
                .as_ref()
                .is_some_and(|a| a.status() != limited && a.status() < 500),
        }
    }

    /// RL-003: Retry-After must not be earlier than the advertised reset.
    fn honest_hint(&self, limited: u16) -> Assertion {
        let (wait, source) = (self.wait, self.source);
        match (self.reset, source) {
            (Some(reset), "Retry-After") => Assertion::check(
                "retry_after_not_before_reset",
                wait.as_secs_f64() + 1.0 >= reset,
                format!(
                    "Retry-After {} is not earlier than the reset {reset:.0} s after Date",
                    secs(wait)
                ),
                format!(
                    "{}: Retry-After {} is earlier than the reset {reset:.0} s after Date",
                    describe(&self.lim.ex),
                    secs(wait)
                ),
                "Retry-After not earlier than the reset",
                format!("Retry-After {} < reset {reset:.0} s", secs(wait)),
            ),
            _ => Assertion::skipped(
                "retry_after_not_before_reset",
                format!("the {limited} gives only {source}, nothing to compare it with"),
            ),
        }
    }
}

/// A sample's limited answer, its phase, and the wait it asks for.
struct Taken {
    lim: Limited,
    phase: f64,
    wait: Duration,
    reset: Option<f64>,
    source: &'static str,
}

impl Taken {
    /// When its early probe goes (Retry-After − 1 s after the answer).
    fn early_at(&self) -> Instant {
        self.lim.at + timing::early_probe_at(self.wait)
    }

    /// When its recovery probe goes (Retry-After + margin after the answer).
    fn after_at(&self, margin: Duration) -> Instant {
        self.lim.at + timing::recovery_probe_at(self.wait, margin)
    }
}

/// Reads the wait a limited answer asks for and holds it to `max_wait`
/// (or the run's quota budget). `Err` is the check's outcome.
async fn wait_within(
    p: &RecoveryPlan,
    ctx: &CheckContext,
    r: &Rendered,
    lim: &Limited,
) -> Result<(Duration, Option<f64>, &'static str), Outcome> {
    let x = &p.exhaust;
    let (wait, reset, source) = match wait_of(&lim.ex, p) {
        Ok(w) => w,
        Err(e) => {
            let warn = cool_down(ctx, r, x.limited_status, None, x.cooldown_max).await;
            return Err(with_warning(
                Outcome::error(format!("{}: {e}; cannot judge recovery", describe(&lim.ex))),
                warn,
            ));
        }
    };
    // Unless the suite bounds it, a window longer than max_wait is
    // the target's quota: waited for within the run's quota budget.
    let within_budget = !p.max_wait_set
        && ctx
            .client
            .quota()
            .is_some_and(|q| q.charge(&r.credential(), wait).is_ok());
    if wait > p.max_wait && !within_budget {
        let warn = cool_down(ctx, r, x.limited_status, Some(wait), x.cooldown_max).await;
        return Err(with_warning(
            Outcome::error(format!(
                "{source} asks for {}, above max_wait {}; raise max_wait to judge recovery",
                secs(wait),
                secs(p.max_wait)
            )),
            warn,
        ));
    }
    Ok((wait, reset, source))
}

/// Takes a limited answer at about `want` s past a tick ([`limited_at`])
/// and the wait it asks for.
async fn take(
    p: &RecoveryPlan,
    ctx: &CheckContext,
    r: &Rendered,
    (tag, want, attempt): (&str, f64, usize),
    clock: &mut TargetClock,
    evidence: &mut Vec<Evidence>,
) -> Result<Taken, Outcome> {
    let (lim, phase) = match limited_at(p, ctx, r, clock, want, tag).await {
        Ok(l) => l,
        Err(o) => return Err(o.with_evidence(std::mem::take(evidence))),
    };
    evidence.push(Evidence::from_exchange(
        format!(
            "{tag}{} at {phase:.2} s past a tick (attempt {attempt})",
            p.exhaust.limited_status
        ),
        &lim.ex,
    ));
    let (wait, reset, source) = match wait_within(p, ctx, r, &lim).await {
        Ok(w) => w,
        Err(o) => return Err(o.with_evidence(std::mem::take(evidence))),
    };
    Ok(Taken {
        lim,
        phase,
        wait,
        reset,
        source,
    })
}

/// Probes a taken sample at Retry-After − 1 s and at Retry-After + margin.
/// `Ok(None)`: the early probe was served and `retry` allows another
/// attempt (the window may just have rolled over).
async fn probe_taken(
    p: &RecoveryPlan,
    ctx: &CheckContext,
    r: &Rendered,
    (tag, retry): (&str, bool),
    t: Taken,
    clock: &mut TargetClock,
    evidence: &mut Vec<Evidence>,
) -> Result<Option<Probed>, Outcome> {
    let x = &p.exhaust;
    let early = timing::early_probe_at(t.wait);
    if !early.is_zero() {
        ctx.note(format!(
            "{tag}waiting {} (Retry-After − 1 s) for the early probe",
            secs(early)
        ));
        tokio::time::sleep_until(t.early_at().into()).await;
    }
    let before = match send_timed(ctx, r, clock, "early probe").await {
        Ok((ex, _)) => ex,
        Err(o) => return Err(o.with_evidence(std::mem::take(evidence))),
    };
    let early_after = t.lim.at.elapsed();
    evidence.push(Evidence::from_exchange(
        format!("{tag}early probe"),
        &before,
    ));
    if before.status() != x.limited_status && retry {
        ctx.note(format!("{tag}the early probe was served (the window may have just rolled over); trying again with a fresh limit"));
        return Ok(None);
    }
    // `Retry-After: 0` says "retry now": a refused retry at once shows the
    // header understates the wait (a sub-second wait rounded down), which
    // the probe after the margin would otherwise forgive.
    let after = if t.wait.is_zero() && before.status() == x.limited_status {
        None
    } else {
        let after_at = t.after_at(p.margin);
        ctx.note(format!(
            "{tag}waiting {} ({} {} + margin {}) before the recovery probe",
            secs(after_at.saturating_duration_since(Instant::now())),
            t.source,
            secs(t.wait),
            secs(p.margin)
        ));
        tokio::time::sleep_until(after_at.into()).await;
        let after = match send_timed(ctx, r, clock, "recovery probe").await {
            Ok((ex, _)) => ex,
            Err(o) => return Err(o.with_evidence(std::mem::take(evidence))),
        };
        evidence.push(Evidence::from_exchange(
            format!("{tag}recovery probe"),
            &after,
        ));
        Some(after)
    };
    Ok(Some(Probed {
        lim: t.lim,
        wait: t.wait,
        reset: t.reset,
        source: t.source,
        early: before,
        early_after,
        after,
        phase: t.phase,
    }))
}

/// Least time between a batch's last aimed request and the earliest early
/// probe it must not delay.
const BATCH_GUARD: Duration = Duration::from_millis(50);

/// The samples one block serves, `todo` being the samples still to take
/// (index, attempt): the first one's limited answer (reaching the limit,
/// or in the block an earlier check handed on), then one request aimed at
/// each further sample's phase while the block holds, as long as it goes
/// before the earliest early probe due. Each is probed at its own
/// Retry-After − 1 s and + margin ([`probe_batch`]): the block a 60 s
/// window leaves serves all the samples instead of a window each. A block
/// too short for the next sample (1 s windows) ends the batch, and the
/// next batch reaches the limit again.
async fn take_batch(
    p: &RecoveryPlan,
    ctx: &CheckContext,
    r: &Rendered,
    clock: &mut TargetClock,
    todo: &[(usize, usize)],
    evidence: &mut [Vec<Evidence>],
) -> Result<Vec<(usize, Taken)>, Outcome> {
    let x = &p.exhaust;
    let (first, attempt) = todo[0];
    let want = timing::attempt_phase(timing::sample_phase(first), attempt);
    let tag = sample_tag(p, first);
    let t = take(
        p,
        ctx,
        r,
        (&tag, want, attempt),
        clock,
        &mut evidence[first],
    )
    .await?;
    let mut batch = vec![(first, t)];
    for &(n, attempt) in &todo[1..] {
        let deadline = batch
            .iter()
            .map(|(_, t)| t.early_at())
            .min()
            .unwrap_or_else(Instant::now);
        let half = batch[batch.len() - 1].1.lim.ex.ttfb / 2;
        let want = timing::attempt_phase(timing::sample_phase(n), attempt);
        let at = clock.next_at(Instant::now() + Duration::from_millis(5) + half, want);
        if at + half + BATCH_GUARD >= deadline {
            break;
        }
        tokio::time::sleep_until(at.checked_sub(half).unwrap_or(at).into()).await;
        let (ex, phase) = send_timed(ctx, r, clock, "the request aimed at a phase").await?;
        if ex.status() != x.limited_status {
            ctx.note(format!(
                "{}the block ended before its phase ({}); the limit is reached again",
                sample_tag(p, n),
                describe(&ex)
            ));
            break;
        }
        let lim = Limited {
            ex,
            at: Instant::now(),
            sent: batch[0].1.lim.sent,
            served: batch[0].1.lim.served,
        };
        let Ok((wait, reset, source)) = wait_of(&lim.ex, p) else {
            break;
        };
        let t = Taken {
            lim,
            phase,
            wait,
            reset,
            source,
        };
        // Within the wait already booked for the first sample, and with
        // its early probe still ahead.
        if wait > batch[0].1.wait.max(p.max_wait) || t.early_at() <= Instant::now() + BATCH_GUARD {
            break;
        }
        evidence[n].push(Evidence::from_exchange(
            format!(
                "{}{} at {phase:.2} s past a tick (attempt {attempt}, in the block of {})",
                sample_tag(p, n),
                x.limited_status,
                sample_tag(p, first).trim_end_matches(": ")
            ),
            &t.lim.ex,
        ));
        batch.push((n, t));
    }
    Ok(batch)
}

/// Probes a batch of samples from one block, each at its Retry-After − 1 s
/// and + margin, in the order the probes fall due. A sample whose early
/// probe was served gets `None` while `attempt` allows another (taken
/// again: the window may just have rolled over).
async fn probe_batch(
    p: &RecoveryPlan,
    ctx: &CheckContext,
    r: &Rendered,
    batch: Vec<(usize, Taken)>,
    attempt: &[usize],
    clock: &mut TargetClock,
    evidence: &mut [Vec<Evidence>],
) -> Result<Vec<(usize, Option<Probed>)>, Outcome> {
    let x = &p.exhaust;
    if batch.len() == 1 {
        let (n, t) = batch.into_iter().next().expect("one sample");
        let retry = attempt[n] < timing::EARLY_ATTEMPTS;
        let tag = sample_tag(p, n);
        let probed = probe_taken(p, ctx, r, (&tag, retry), t, clock, &mut evidence[n]).await?;
        return Ok(vec![(n, probed)]);
    }
    let mut due: Vec<(Instant, usize, bool)> = batch
        .iter()
        .enumerate()
        .flat_map(|(i, (_, t))| [(t.early_at(), i, true), (t.after_at(p.margin), i, false)])
        .collect();
    due.sort_by_key(|d| d.0);
    ctx.note(format!(
        "{} samples from one block: waiting {} (Retry-After − 1 s) for the first early probe",
        batch.len(),
        secs(due[0].0.saturating_duration_since(Instant::now()))
    ));
    let mut early: Vec<Option<(Exchange, Duration)>> = (0..batch.len()).map(|_| None).collect();
    let mut out: Vec<(usize, Option<Probed>)> = batch.iter().map(|(n, _)| (*n, None)).collect();
    let mut redo = vec![false; batch.len()];
    for (at, i, is_early) in due {
        if redo[i] {
            continue;
        }
        let (n, t) = &batch[i];
        let tag = sample_tag(p, *n);
        tokio::time::sleep_until(at.into()).await;
        let what = if is_early {
            "early probe"
        } else {
            "recovery probe"
        };
        let ex = match send_timed(ctx, r, clock, what).await {
            Ok((ex, _)) => ex,
            Err(o) => return Err(o.with_evidence(evidence.concat())),
        };
        evidence[*n].push(Evidence::from_exchange(format!("{tag}{what}"), &ex));
        if is_early {
            if ex.status() != x.limited_status && attempt[*n] < timing::EARLY_ATTEMPTS {
                ctx.note(format!("{tag}the early probe was served (the window may have just rolled over); trying again with a fresh limit"));
                redo[i] = true;
                continue;
            }
            early[i] = Some((ex, t.lim.at.elapsed()));
            continue;
        }
        let Some((before, early_after)) = early[i].take() else {
            continue;
        };
        out[i].1 = Some(Probed {
            lim: Limited {
                ex: t.lim.ex.clone(),
                at: t.lim.at,
                sent: t.lim.sent,
                served: t.lim.served,
            },
            wait: t.wait,
            reset: t.reset,
            source: t.source,
            early: before,
            early_after,
            after: Some(ex),
            phase: t.phase,
        });
    }
    Ok(out)
}

fn sample_tag(p: &RecoveryPlan, n: usize) -> String {
    if p.samples > 1 {
        format!("sample {}: ", n + 1)
    } else {
        String::new()
    }
}

/// `rate_limit.recovery` (RL-003): `samples` samples in a row, each limited
/// at Retry-After − 1 s and served at Retry-After + margin; judged by
/// `timing::recovery_rule` on the first faulty sample, or the last.
pub async fn recovery(p: &RecoveryPlan, ctx: &CheckContext) -> Outcome {
    let x = &p.exhaust;
    let limited = x.limited_status;
    let r = ctx.target.render(&x.request, &Scope::new());
    let mut evidence = Vec::new();
    let mut seen = Vec::new();
    let mut probed = Vec::new();
    let mut clock = match read_clock(ctx, &r).await {
        Ok(c) => c,
        Err(o) => return o,
    };
    // The samples one block serves (one exhaustion, or the block an
    // earlier check handed on), then the next block for any left, until
    // every sample is in or one in a row is faulty.
    let n_samples = p.samples as usize;
    let mut sample_ev: Vec<Vec<Evidence>> = vec![Vec::new(); n_samples];
    let mut results: Vec<Option<Probed>> = (0..n_samples).map(|_| None).collect();
    let mut attempt = vec![1usize; n_samples];
    loop {
        let in_row = results.iter().take_while(|r| r.is_some()).count();
        let faulty = results[..in_row]
            .iter()
            .flatten()
            .any(|s| s.sample(limited).faulty());
        if in_row == n_samples || faulty {
            break;
        }
        let todo: Vec<(usize, usize)> = (0..n_samples)
            .filter(|&k| results[k].is_none())
            .map(|k| (k, attempt[k]))
            .collect();
        let probed = match take_batch(p, ctx, &r, &mut clock, &todo, &mut sample_ev).await {
            Ok(batch) => {
                match probe_batch(p, ctx, &r, batch, &attempt, &mut clock, &mut sample_ev).await {
                    Ok(b) => b,
                    Err(o) => return o,
                }
            }
            Err(o) => return o,
        };
        for (k, s) in probed {
            match s {
                Some(s) => results[k] = Some(s),
                // Its early probe was served: taken again, on a phase
                // 0.15 s earlier (`timing::attempt_phase`).
                None => {
                    attempt[k] += 1;
                    sample_ev[k].clear();
                }
            }
        }
    }
    for (s, ev) in results.into_iter().zip(sample_ev) {
        let Some(s) = s else {
            break;
        };
        evidence.extend(ev);
        let sample = s.sample(limited);
        seen.push(sample);
        probed.push(s);
        if sample.faulty() {
            break;
        }
    }
    let judged_at = match timing::recovery_rule(&seen, p.samples as usize) {
        timing::RecoveryRule::Broken(i) => i,
        // Every sample was taken (the loop stops only at a faulty one).
        timing::RecoveryRule::Held | timing::RecoveryRule::TooFew => seen.len() - 1,
    };
    let (s, sample) = (&probed[judged_at], seen[judged_at]);
    let (wait, source) = (s.wait, s.source);
    let which = if p.samples > 1 {
        format!("sample {} of {}: ", judged_at + 1, p.samples)
    } else {
        String::new()
    };
    let all = if p.samples > 1 && !sample.faulty() {
        format!("in all {} samples; the last: ", p.samples)
    } else {
        String::new()
    };
    let honest_hint = probed
        .iter()
        .map(|s| s.honest_hint(limited))
        .find(|a| a.verdict == Verdict::Fail)
        .unwrap_or_else(|| s.honest_hint(limited));
    let phases: Vec<f64> = probed.iter().map(|s| s.phase).collect();
    let shown = phases
        .iter()
        .map(|f| format!("{f:.2}"))
        .collect::<Vec<_>>()
        .join(", ");
    let clock_read = match &clock.source {
        Source::Date => "the target's Date".to_owned(),
        Source::Local(why) => format!("tminus's clock ({why})"),
    };
    let at_phase = format!(
        " (the {limited} at {:.2} s past a tick of {clock_read})",
        s.phase
    );
    // A pass that the phases cannot vouch for says so (issue 22, case 1).
    let caveat = if timing::phases_controlled(&phases) {
        String::new()
    } else {
        format!(
            "; the samples' phases ({shown} s past a tick of {clock_read}) are not spread {} s apart: a Retry-After rounded down can go unseen (take 2 samples or more)",
            timing::MIN_SPREAD
        )
    };
    let props = vec![
        prop("samples", seen.len()),
        prop("requests_to_limit", s.lim.sent),
        prop("wait_ms", wait.as_millis()),
        prop("phases", shown.clone()),
        prop(
            "phase_clock",
            match clock.source {
                Source::Date => "Date",
                Source::Local(_) => "tminus",
            },
        ),
    ];
    let judged = match &s.after {
        None => {
            vec![
                honest_hint,
                Assertion::skipped(
                    "limited_until_retry_after",
                    format!("not judged: {source} 0 leaves no time before it"),
                ),
                Assertion::fail(
                    "served_after_retry_after",
                    format!(
                        "{which}{source} 0{at_phase} but a retry at once was refused ({}): the header understates the wait",
                        describe(&s.early)
                    ),
                    format!("success right after {source} 0"),
                    describe(&s.early),
                ),
            ]
        }
        Some(after) => {
            let still_limited = Assertion::check(
                "limited_until_retry_after",
                sample.early_limited,
                format!(
                    "{all}{} after the {limited} ({source} {}), a probe was still limited: {}",
                    secs(s.early_after),
                    secs(wait),
                    describe(&s.early)
                ),
                format!(
                    "{which}the limit is not real: {} after the {limited} ({source} said {}), a probe got {} ({} times with a fresh limit)",
                    secs(s.early_after),
                    secs(wait),
                    describe(&s.early),
                    timing::EARLY_ATTEMPTS
                ),
                format!("{limited} before {source} elapses"),
                describe(&s.early),
            );
            let served = Assertion::check(
                "served_after_retry_after",
                sample.served,
                format!(
                    "{all}served {} after the {limited} ({source} {}){at_phase}: {}{caveat}",
                    secs(wait + p.margin),
                    secs(wait),
                    describe(after)
                ),
                format!(
                    "{which}still limited after {source}: {} after the {limited} ({source} {}){at_phase}, the retry got {}",
                    secs(wait + p.margin),
                    secs(wait),
                    describe(after)
                ),
                format!("success after {source} elapses"),
                describe(after),
            );
            vec![honest_hint, still_limited, served]
        }
    };
    let warn = if sample.served {
        None
    } else {
        cool_down(ctx, &r, limited, None, x.cooldown_max).await
    };
    let o = Outcome::judged(judged)
        .with_evidence(evidence)
        .with_properties(props);
    with_warning(o, warn)
}
