//! Executing the idempotency family (catalogue §1): each mode sends its
//! requests, reads the side-effect counter before and after, and judges the
//! property. Every failure names the statuses (with request ids), the counter
//! before and after, and for bodies the JSON paths that differ.
// An `Outcome` is the early-return value of a check, built once per run; boxing
// it would only add noise to every `?`.
#![allow(clippy::result_large_err)]

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::context::CheckContext;
use crate::context::{CounterPlan, RequestPlan};
use crate::context::{Scope, Template};
use crate::families::common::{counter_moved, describe, read_counter, send};
use crate::families::idempotency::plan::{EndpointPolicy, IdemPlan, Mode};
use crate::families::idempotency::race::{
    self, InFlightTimes, RetryAnswer, RoundJudgement, RoundOutcome, RoundTally,
};
use crate::families::idempotency::replay;
use crate::families::idempotency::together::{self, Release};
use crate::http::stream::Origin;
use crate::http::{Exchange, Rendered, Target};
use crate::model::jsonpath::JsonPath;
use crate::model::retry_after::parse_retry_after;
use crate::model::scalar::StatusSet;
use crate::outcome::{prop, Assertion, Evidence, Outcome, PropValue, Verdict};

/// How long the lost-response check waits after writing the request before it
/// drops the connection (never reading the answer): enough for the target to
/// start processing, far less than any answer would be trusted to take.
const DROP_AFTER: Duration = Duration::from_millis(100);
/// Pause between retries while the target answers "in progress".
const POLL_EVERY: Duration = Duration::from_millis(100);
/// `idempotency.concurrent` against a rate limit: a round with 429s (and no
/// double execution) is redone after the largest `Retry-After` (1 s without
/// one, 5 s at most), at most 5 times per check: 25 s of waiting at worst.
const RATE_LIMIT_WAIT: Duration = Duration::from_secs(1);
const RATE_LIMIT_WAIT_MAX: Duration = Duration::from_secs(5);
pub const RATE_LIMIT_WAITS: u32 = 5;

/// Collects evidence, properties and problems while a check runs.
pub(super) struct Run<'a> {
    pub(super) ctx: &'a CheckContext,
    pub(super) plan: &'a IdemPlan,
    pub(super) scope: Scope,
    pub(super) evidence: Vec<Evidence>,
    pub(super) props: Vec<(String, PropValue)>,
}

/// One request and the side-effect counter read right before and right
/// after it: the executions it caused (0 or 1).
pub(super) struct Counted {
    pub(super) ex: Exchange,
    pub(super) before: i64,
    pub(super) after: i64,
    pub(super) executions: i64,
}

impl<'a> Run<'a> {
    fn new(ctx: &'a CheckContext, plan: &'a IdemPlan) -> Self {
        Run {
            ctx,
            plan,
            scope: Scope::new(),
            evidence: Vec::new(),
            props: Vec::new(),
        }
    }

    /// The check's request for `target`, with the key set (or removed).
    pub(super) fn render(&self, target: &Target, key: Option<&str>) -> Rendered {
        let mut r = target.render(&self.plan.request, &self.scope);
        match key {
            Some(k) => r.set_header(&self.plan.key_header, k),
            None => r.remove_header(&self.plan.key_header),
        }
        r
    }

    pub(super) fn new_key(&self) -> String {
        self.plan.key.render(&self.scope)
    }

    pub(super) async fn send(&mut self, r: &Rendered, label: &str) -> Result<Exchange, Outcome> {
        let ex = send(self.ctx, r, label).await?;
        self.evidence.push(Evidence::from_exchange(label, &ex));
        Ok(ex)
    }

    pub(super) async fn counter(&mut self, label: &str) -> Result<i64, Outcome> {
        let (n, _) = read_counter(self.ctx, &self.plan.effects, &self.scope, label).await?;
        self.props.push(prop(label.replace(' ', "_"), n));
        Ok(n)
    }

    /// Sends `req` and reads the counter right after it (`before` is the
    /// read just before it), so the executions it caused are its own. One
    /// request executes once at most: a counter that moved by more, or went
    /// backwards, counts something else and ends the check as an error.
    /// `short` names the read in the properties (`counter_after_<short>`).
    pub(super) async fn send_counted(
        &mut self,
        req: &Rendered,
        label: &str,
        short: &str,
        before: i64,
    ) -> Result<Counted, Outcome> {
        let ex = self.send(req, label).await?;
        let after = self.counter(&format!("counter after {short}")).await?;
        let counter = self.plan.effects.value.to_string();
        let executions = counter_moved(before, after, Some(1), &counter).map_err(|why| {
            Outcome::error(format!("after the {label} request: {why}"))
                .with_evidence(self.evidence.clone())
        })?;
        Ok(Counted {
            ex,
            before,
            after,
            executions,
        })
    }

    pub(super) fn marked(&self, ex: &Exchange) -> bool {
        self.plan
            .marker
            .is_marked(ex.response.header(&self.plan.marker.header))
    }

    pub(super) fn marker_text(&self, ex: &Exchange) -> String {
        match ex.response.header(&self.plan.marker.header) {
            Some(v) => format!("{}: {v}", self.plan.marker.header),
            None => format!("no {} header", self.plan.marker.header),
        }
    }

    /// `first_not_marked`: a first execution must not claim to be a replay.
    pub(super) fn first_not_marked(&self, ex: &Exchange, label: &str) -> Assertion {
        let shown = self.marker_text(ex);
        Assertion::check(
            "first_not_marked",
            !self.marked(ex),
            format!("the {label} answer carries {shown}"),
            format!(
                "the {label} {} is marked as a replay ({shown}) although the key was new",
                describe(ex)
            ),
            format!("no {} on a first execution", self.plan.marker.header),
            shown,
        )
    }

    /// The side-effect counter's movement judged as `property`: `want`
    /// executions between `before` and `after`.
    pub(super) fn effect(
        &mut self,
        property: &'static str,
        (before, after): (i64, i64),
        want: i64,
        what: &str,
    ) -> Assertion {
        let counter = self.plan.effects.value.to_string();
        let n = match counter_moved(before, after, None, &counter) {
            Ok(n) => n,
            Err(why) => return Assertion::not_exercised(property, format!("{what}: {why}")),
        };
        let key = if property == "single_effect" {
            "executions".to_owned()
        } else {
            format!("{property}_executions")
        };
        self.props.push(prop(key, n));
        let counter = &self.plan.effects.value;
        Assertion::check(
            property,
            n == want,
            format!("{what}: the side-effect counter {counter} went from {before} to {after} ({n} execution(s))"),
            format!("{what}: the side-effect counter {counter} went from {before} to {after} ({n} execution(s), expected {want})"),
            format!("{want} execution(s)"),
            format!("{n} execution(s)"),
        )
    }

    /// The check's outcome: one assertion per declared property.
    pub(super) fn judged(self, assertions: Vec<Assertion>) -> Outcome {
        Outcome::judged(assertions)
            .with_evidence(self.evidence)
            .with_properties(self.props)
    }

    /// The first, keyed request must succeed for anything after it to be judged.
    pub(super) fn require_success(&self, ex: &Exchange, label: &str) -> Result<(), Outcome> {
        if self.plan.success.matches(ex.status()) {
            return Ok(());
        }
        Err(Outcome::error(format!(
            "{label} got {}, not {}: the request itself is not accepted, so idempotency cannot be judged (body: {})",
            describe(ex),
            self.plan.success,
            snippet(&ex.response.text())
        ))
        .with_evidence(self.evidence.clone()))
    }
}

/// `a` as judged when its evidence was `exercised`; otherwise the property
/// is an error naming what was missing (never a pass without evidence).
pub(super) fn needs(exercised: bool, a: Assertion, missing: impl FnOnce() -> String) -> Assertion {
    if exercised {
        a
    } else {
        Assertion::not_exercised(a.property, missing())
    }
}

/// A counter assertion that failed stands on its own evidence (the target
/// executed when it must not); any other verdict of it rests on the missing
/// evidence and becomes not exercised.
pub(super) fn unless_failed(a: Assertion, missing: impl FnOnce() -> String) -> Assertion {
    if a.verdict == Verdict::Fail {
        a
    } else {
        Assertion::not_exercised(a.property, missing())
    }
}

fn snippet(s: &str) -> String {
    let t: String = s.chars().take(200).collect();
    if s.chars().count() > 200 {
        format!("{t}…")
    } else {
        t
    }
}

pub async fn run(plan: &IdemPlan, ctx: &CheckContext) -> Outcome {
    let r = Run::new(ctx, plan);
    let result = match &plan.mode {
        Mode::Replay { ignore, id_path } => replay::replay(r, ignore, id_path.as_ref()).await,
        Mode::DistinctKeys { id_path } => replay::distinct(r, id_path.as_ref()).await,
        Mode::Mismatch { changed, reject } => replay::mismatch(r, changed.as_ref(), reject).await,
        Mode::Concurrent {
            n,
            rounds,
            conflict,
            allow_replay,
            slow,
        } => concurrent(r, *n, *rounds, conflict, *allow_replay, slow).await,
        Mode::LostResponse {
            slow,
            in_progress,
            retry_within,
            settle,
        } => lost_response(r, slow, in_progress, *retry_within, *settle).await,
        Mode::Errors { invalid, cached } => errors(r, invalid, *cached).await,
        Mode::InFlight {
            slow,
            conflict,
            retry_after,
            retry_within,
        } => in_flight(r, slow, conflict, *retry_after, *retry_within).await,
        Mode::MissingKey { required, reject } => missing_key(r, *required, reject).await,
        Mode::KeyScope { id_path } => key_scope(r, id_path.as_ref()).await,
        Mode::KeySyntax { reject } => key_syntax(r, reject).await,
        Mode::EndpointScope {
            other,
            other_effects,
            policy,
            reject,
        } => endpoint_scope(r, other, other_effects.as_ref(), *policy, reject).await,
        Mode::Expiry { ttl, margin } => expiry(r, *ttl, *margin).await,
    };
    result.unwrap_or_else(|o| o)
}

pub(super) type Res = Result<Outcome, Outcome>;

/// IDEM-004: rounds of `n` parallel requests, a new key each, released
/// together (`together.rs`); the first round that does not hold decides, and
/// the check passes when every round held. Repeating the round is what makes
/// a check-then-insert race without a test hook a near-certain catch
/// (`race.rs` has the model and the rates).
async fn concurrent(
    mut r: Run<'_>,
    n: usize,
    rounds: usize,
    conflict: &crate::model::scalar::StatusSet,
    allow_replay: bool,
    slow: &[(String, Template)],
) -> Res {
    // The counter's properties are the deciding round's (pushed below).
    let (mut before, _) = read_counter(r.ctx, &r.plan.effects, &r.scope, "counter before").await?;
    let (mut round, mut waits) = (1, 0);
    loop {
        let key = r.new_key();
        let mut req = r.render(&r.ctx.target, Some(&key));
        for (k, v) in slow {
            req.set_header(k, v.render(&r.scope));
        }
        // Each round falls inside one window of the target's quota: its n
        // requests and the counter read after it are reserved first.
        let quota = r.ctx.client.quota().cloned();
        let cred = req.credential();
        if let Some(q) = &quota {
            q.reserve(&cred, n as u64 + 1)
                .await
                .map_err(|e| Outcome::error(e.0).with_evidence(r.evidence.clone()))?;
        }
        let (release, results) = together::send_together(&r.ctx.client, &req, n).await;
        if let Some(q) = &quota {
            // The pre-opened connections bypass the client: the book learns here.
            for ex in results.iter().flatten() {
                q.on_send(&cred);
                q.learn(&cred, &req.url, &ex.response);
            }
        }
        if round == 1 && waits == 0 {
            r.ctx.note(match release {
                Release::PreOpened => format!(
                    "sending {n} parallel requests with one key on {n} pre-opened connections, up to {rounds} round(s)"
                ),
                Release::Pooled => format!(
                    "sending {n} parallel requests with one key through the client's pool, up to {rounds} round(s)"
                ),
            });
        }
        let (after, _) = read_counter(r.ctx, &r.plan.effects, &r.scope, "counter after").await?;
        let mut exchanges = Vec::with_capacity(n);
        for (i, res) in results.into_iter().enumerate() {
            exchanges.push(res.map_err(|e| {
                Outcome::transport(&format!("round {round}, parallel #{}", i + 1), &e)
                    .with_evidence(r.evidence.clone())
            })?);
        }
        let success = |ex: &Exchange| r.plan.success.matches(ex.status());
        let count = |f: &dyn Fn(&Exchange) -> bool| exchanges.iter().filter(|ex| f(ex)).count();
        let executions = counter_moved(
            before,
            after,
            Some(n as u64),
            &r.plan.effects.value.to_string(),
        )
        .map_err(|why| {
            Outcome::error(format!("round {round}: {why}")).with_evidence(r.evidence.clone())
        })?;
        let tally = RoundTally {
            executions,
            successes: count(&success),
            conflicts: count(&|ex| !success(ex) && conflict.matches(ex.status())),
            others: count(&|ex| !success(ex) && !conflict.matches(ex.status())),
            server_errors: count(&|ex| ex.status() >= 500),
            rate_limited: count(&|ex| ex.status() == 429),
        };
        let judgement = match race::round_outcome(&tally, allow_replay) {
            RoundOutcome::Holds if round < rounds => {
                (before, round) = (after, round + 1);
                continue;
            }
            RoundOutcome::RateLimited if waits < RATE_LIMIT_WAITS => {
                // The round is redone with a new key once the limit allows.
                let wait = exchanges
                    .iter()
                    .filter_map(|ex| ex.response.header("retry-after"))
                    .filter_map(parse_retry_after)
                    .max()
                    .unwrap_or(RATE_LIMIT_WAIT)
                    .min(RATE_LIMIT_WAIT_MAX);
                if quota.is_some() {
                    // The book holds the block; the next round's reservation
                    // waits it out (announced, within --max-quota-wait).
                    r.ctx.note(format!(
                        "round {round}: {} of {n} requests were rate limited (429); redoing it when the quota allows",
                        tally.rate_limited
                    ));
                } else {
                    r.ctx.note(format!(
                        "round {round}: {} of {n} requests were rate limited (429); redoing it after {wait:?}",
                        tally.rate_limited
                    ));
                    tokio::time::sleep(wait).await;
                }
                (before, waits) = (after, waits + 1);
                continue;
            }
            RoundOutcome::RateLimited => {
                return Err(Outcome::error(format!(
                    "round {round} of {rounds}: {} of {n} parallel requests were rate limited (429) even after {RATE_LIMIT_WAITS} waits: the race cannot be judged under this rate limit; give the suite's API key a higher limit, or lower `concurrency` or `rounds`",
                    tally.rate_limited
                ))
                .with_evidence(r.evidence));
            }
            RoundOutcome::Holds => race::judge_round(&tally, allow_replay),
            RoundOutcome::Decides(j) => j,
        };
        // The deciding round: the first that did not hold, or the last.
        r.props.push(prop("counter_before", before));
        r.props.push(prop("counter_after", after));
        r.props.push(prop("rounds", round));
        let what = match (rounds, judgement.holds()) {
            (1, _) => format!("{n} parallel requests with one key"),
            (_, true) => format!(
                "each of {rounds} rounds of {n} parallel requests executed once; the last round, {n} parallel requests with one key"
            ),
            (_, false) => format!("round {round} of {rounds}: {n} parallel requests with one key"),
        };
        return Ok(judge_concurrent(
            r,
            &exchanges,
            (before, after),
            &tally,
            &judgement,
            conflict,
            &what,
        ));
    }
}

/// The assertions of one round of `idempotency.concurrent` from its
/// judgement (`race::judge_round`), with the answers as evidence.
fn judge_concurrent(
    mut r: Run<'_>,
    exchanges: &[Exchange],
    (before, after): (i64, i64),
    tally: &RoundTally,
    judgement: &RoundJudgement,
    conflict: &crate::model::scalar::StatusSet,
    what: &str,
) -> Outcome {
    let n = exchanges.len();
    let statuses: Vec<String> = exchanges.iter().map(describe).collect();
    let success = |ex: &Exchange| r.plan.success.matches(ex.status());
    for (i, ex) in exchanges.iter().enumerate() {
        if i < 3 || !success(ex) && !conflict.matches(ex.status()) {
            r.evidence
                .push(Evidence::from_exchange(format!("parallel #{}", i + 1), ex));
        }
    }
    let (ok, conflicts) = (tally.successes, tally.conflicts);
    r.props.push(prop("successes", ok));
    r.props.push(prop("conflicts", conflicts));
    let single = r.effect("single_effect", (before, after), 1, what);
    let counter = r.plan.effects.value.to_string();
    let nothing = || {
        format!("the side-effect counter {counter} did not move ({before} to {after}): nothing was executed, so the key was never contended")
    };
    let fives: Vec<&str> = exchanges
        .iter()
        .zip(&statuses)
        .filter(|(ex, _)| ex.status() >= 500)
        .map(|(_, d)| d.as_str())
        .collect();
    let no_5xx = if judgement.no_5xx {
        needs(
            judgement.exercised,
            Assertion::pass(
                "no_5xx",
                format!("no 5xx among the {n} answers: {}", statuses.join(", ")),
            ),
            nothing,
        )
    } else {
        Assertion::fail(
            "no_5xx",
            format!(
                "{} of {n} parallel requests with one key got a 5xx: {}",
                fives.len(),
                fives.join(", ")
            ),
            "no 5xx",
            format!("{} × 5xx", fives.len()),
        )
    };
    let one_success = needs(
        judgement.exercised,
        Assertion::check(
            "one_success",
            judgement.one_success,
            format!("{ok} of {n} requests got {}", r.plan.success),
            format!(
                "none of the {n} parallel requests succeeded: {}",
                statuses.join(", ")
            ),
            "one success",
            "none",
        ),
        nothing,
    );
    let other: Vec<&str> = exchanges
        .iter()
        .zip(&statuses)
        .filter(|(ex, _)| !success(ex) && !conflict.matches(ex.status()))
        .map(|(_, d)| d.as_str())
        .collect();
    let others = if !other.is_empty() {
        Assertion::fail(
            "others_conflict_or_replay",
            format!(
                "{} parallel request(s) got neither {} nor {conflict}: {}",
                other.len(),
                r.plan.success,
                other.join(", ")
            ),
            format!("{} or {conflict}", r.plan.success),
            other.join(", "),
        )
    } else if tally.executions > 1 {
        // The counter, not the statuses, says whether the others executed.
        Assertion::fail(
            "others_conflict_or_replay",
            format!(
                "{what}: the side-effect counter {counter} went from {before} to {after}: {} of the other {} request(s) executed, whatever their statuses said ({ok} success(es), {conflicts} conflict(s))",
                tally.executions - 1,
                n - 1
            ),
            "the others a conflict or a replay (no execution)",
            format!("{} other execution(s)", tally.executions - 1),
        )
    } else if !judgement.others_conflict_or_replay {
        Assertion::fail(
            "others_conflict_or_replay",
            format!("{ok} parallel requests succeeded and replays are not allowed by this suite"),
            "exactly one success, the others 409",
            format!("{ok} successes"),
        )
    } else {
        needs(
            judgement.exercised && judgement.one_success,
            Assertion::pass(
                "others_conflict_or_replay",
                format!("{ok} success(es), {conflicts} conflict(s) ({conflict})"),
            ),
            || {
                format!("no request of the {n} executed and succeeded, so there were no \"others\" to judge")
            },
        )
    };
    r.judged(vec![single, no_5xx, one_success, others])
}

/// Splits `http(s)://host:port/path?q` into where to connect, the `Host`
/// header (the URL's authority) and `/path?q`.
pub fn split_url(url: &str) -> Result<(Origin, String, String), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    let origin = Origin::of(&parsed)?;
    let host = match parsed.port() {
        Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or_default()),
        None => parsed.host_str().unwrap_or_default().to_owned(),
    };
    let path = match parsed.query() {
        Some(q) => format!("{}?{q}", parsed.path()),
        None => parsed.path().to_owned(),
    };
    Ok((origin, host, path))
}

/// The HTTP/1.1 bytes of a rendered request (closing the connection after).
pub fn raw_request(r: &Rendered, host: &str, path: &str) -> Vec<u8> {
    let mut head = format!("{} {path} HTTP/1.1\r\nHost: {host}\r\n", r.method);
    for (k, v) in &r.headers {
        if k.eq_ignore_ascii_case("host") || k.eq_ignore_ascii_case("content-length") {
            continue;
        }
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        r.body.len()
    ));
    let mut out = head.into_bytes();
    out.extend_from_slice(&r.body);
    out
}

async fn lost_response(
    mut r: Run<'_>,
    slow: &[(String, Template)],
    in_progress: &crate::model::scalar::StatusSet,
    retry_within: Duration,
    settle: Duration,
) -> Res {
    let key = r.new_key();
    let req = r.render(&r.ctx.target, Some(&key));
    let mut dropped = req.clone();
    for (k, v) in slow {
        dropped.set_header(k, v.render(&r.scope));
    }
    let (origin, host, path) = split_url(&req.url).map_err(Outcome::error)?;
    let addr = origin.addr.clone();
    let before = r.counter("counter before").await?;
    r.ctx
        .note("sending the request and dropping the connection before the answer");
    let bytes = raw_request(&dropped, &host, &path);
    // Over https the request is encrypted on a TLS connection with the
    // probe's trust and client certificate, and the drop is the same: the
    // connection closes before the answer is read.
    let write = async {
        let mut s = crate::http::stream::open(&origin, Duration::from_secs(5)).await?;
        s.write_all(&bytes)
            .await
            .map_err(|e| format!("could not send the raw request to {addr}: {e}"))?;
        s.flush()
            .await
            .map_err(|e| format!("could not send the raw request to {addr}: {e}"))?;
        // Never read: the answer is "lost". Closing drops whatever arrives.
        tokio::time::sleep(DROP_AFTER).await;
        drop(s);
        Ok::<_, String>(())
    };
    match tokio::time::timeout(Duration::from_secs(5), write).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(Outcome::error(e)),
        Err(_) => {
            return Err(Outcome::error(format!(
                "sending the raw request to {addr} took over 5 s"
            )))
        }
    }
    let started = Instant::now();
    let mut attempts = 0;
    let retry = loop {
        attempts += 1;
        let ex = r.send(&req, &format!("retry #{attempts}")).await?;
        if in_progress.matches(ex.status()) && started.elapsed() < retry_within && attempts < 1000 {
            tokio::time::sleep(POLL_EVERY).await;
            continue;
        }
        break ex;
    };
    r.props.push(prop("retries", attempts));
    // The dropped attempt may still be running somewhere (a target that did
    // not reserve the key answered the retry at once): give it time to land
    // in the counter before judging "one execution".
    if !settle.is_zero() {
        r.ctx
            .note(format!("waiting {settle:?} for a late first execution"));
        tokio::time::sleep(settle).await;
    }
    let after = r.counter("counter after").await?;
    let single = r.effect(
        "single_effect",
        (before, after),
        1,
        "a lost response and its retry",
    );
    let counter = r.plan.effects.value.to_string();
    let retry_succeeds = needs(
        after > before,
        Assertion::check(
            "retry_succeeds",
            r.plan.success.matches(retry.status()),
            format!(
                "the retry got {} after {attempts} attempt(s)",
                describe(&retry)
            ),
            format!(
                "after the lost response, the retry with the same key got {} after {attempts} attempt(s) in {:.1} s",
                describe(&retry),
                started.elapsed().as_secs_f64()
            ),
            r.plan.success.to_string(),
            retry.status().to_string(),
        ),
        || {
            format!("the side-effect counter {counter} did not move ({before} to {after}): neither the dropped request nor its retry executed")
        },
    );
    Ok(r.judged(vec![single, retry_succeeds]))
}

/// IDEM-008: a rejected first attempt, then the valid request with the same
/// key. When the valid request is not served, it is sent once more under a
/// new key: a target that rejects it there too never exercised the policy.
async fn errors(mut r: Run<'_>, invalid: &crate::context::RequestPlan, cached: bool) -> Res {
    let key = r.new_key();
    let mut bad = r.ctx.target.render(invalid, &r.scope);
    bad.set_header(&r.plan.key_header, key.clone());
    let good = r.render(&r.ctx.target, Some(&key));
    let before = r.counter("counter before").await?;
    let first = r.send(&bad, "invalid body").await?;
    if !(400..500).contains(&first.status()) {
        return Err(Outcome::error(format!(
            "the `invalid` request got {}, not a 4xx: it does not exercise a rejected first attempt",
            describe(&first)
        ))
        .with_evidence(r.evidence));
    }
    let second = r.send(&good, "valid body, same key").await?;
    let after = r.counter("counter after").await?;
    let served = r.plan.success.matches(second.status());
    // A valid request the target never serves proves nothing about its key.
    let probe = if served {
        None
    } else {
        let alone = r.render(&r.ctx.target, Some(&r.new_key()));
        Some(r.send(&alone, "valid body, new key").await?)
    };
    let (f, s) = (describe(&first), describe(&second));
    let policy = if cached { "cached" } else { "not_cached" };
    let answer = if cached {
        Assertion::check(
            "retry_answer",
            second.status() == first.status(),
            format!("policy `cached`: the valid retry got the stored error {s}"),
            format!(
                "policy `cached`: the valid retry with the same key got {s} instead of the stored error {f}"
            ),
            format!("status {} (the stored error)", first.status()),
            format!("status {}", second.status()),
        )
    } else {
        Assertion::check(
            "retry_answer",
            served,
            format!("policy `not_cached`: the valid retry executed ({s}) after the error {f}"),
            format!(
                "the valid retry with the key of a rejected request got {s} (first {f}): the error was cached"
            ),
            r.plan.success.to_string(),
            second.status().to_string(),
        )
    };
    let effect = r.effect(
        "retry_effect",
        (before, after),
        i64::from(served),
        &format!("an error then a valid retry with the same key ({s})"),
    );
    let judged = match &probe {
        Some(p) if !r.plan.success.matches(p.status()) => {
            let why = format!(
                "the valid request is not served even under a new key ({}): the target never accepts it, so policy `{policy}` was not exercised",
                describe(p)
            );
            vec![
                Assertion::not_exercised("retry_answer", why.clone()),
                unless_failed(effect, || why),
            ]
        }
        _ => vec![answer, effect],
    };
    Ok(r.judged(judged))
}

/// Rounds of the in-flight check: a round is redone (new key, doubled wait)
/// when the retry overtook the slow first request on its way to the target.
const IN_FLIGHT_ROUNDS: u32 = 3;

async fn in_flight(
    mut r: Run<'_>,
    slow: &[(String, Template)],
    conflict: &crate::model::scalar::StatusSet,
    retry_after: Duration,
    retry_within: Duration,
) -> Res {
    let mut wait = retry_after;
    for round in 1..=IN_FLIGHT_ROUNDS {
        let key = r.new_key();
        let req = r.render(&r.ctx.target, Some(&key));
        let mut slow_req = req.clone();
        for (k, v) in slow {
            slow_req.set_header(k, v.render(&r.scope));
        }
        slow_req.timeout = slow_req.timeout.max(retry_within);
        let before = r.counter("counter before").await?;
        let client = r.ctx.client.clone();
        let started = Instant::now();
        let first_task = tokio::spawn(async move { client.send(&slow_req).await });
        tokio::time::sleep(wait).await;
        let during_sent = started.elapsed();
        let during = r.send(&req, "retry while in flight").await?;
        let first =
            match tokio::time::timeout(retry_within + Duration::from_secs(1), first_task).await {
                Ok(Ok(Ok(ex))) => ex,
                Ok(Ok(Err(e))) => return Err(Outcome::transport("first (slow)", &e)),
                _ => {
                    return Err(Outcome::error(format!(
                        "the first attempt did not finish within {retry_within:?}"
                    )))
                }
            };
        r.evidence
            .push(Evidence::from_exchange("first (slow)", &first));
        // The retry reached the target first (a loaded machine delayed the
        // slow request): the first is then the replay. Nothing was in flight
        // when the retry came, so this round judges nothing; redo it.
        if r.marked(&first) && r.plan.success.matches(during.status()) {
            if round == IN_FLIGHT_ROUNDS {
                return Err(Outcome::error(format!(
                    "in {IN_FLIGHT_ROUNDS} rounds the retry always reached the target before the slow first request (last wait {wait:?}): raise `retry_after` and the delay in `slow_headers`"
                ))
                .with_evidence(r.evidence));
            }
            r.ctx.note(format!(
                "the retry overtook the first request; round {} with a {:?} wait",
                round + 1,
                wait * 2
            ));
            wait *= 2;
            continue;
        }
        r.require_success(&first, "first (slow)")?;
        let after_done = r.send(&req, "retry after completion").await?;
        let after = r.counter("counter after").await?;
        let single = r.effect(
            "single_effect",
            (before, after),
            1,
            "a slow request, a retry during it and one after",
        );
        let (d, f, a) = (describe(&during), describe(&first), describe(&after_done));
        let how = if r.plan.success.matches(during.status()) {
            "was answered as if executed"
        } else {
            "got an unexpected status"
        };
        // Judged only when the retry provably met the first in flight
        // (`race::met_in_flight`): otherwise a first that finished while the
        // retry was on its way would fail a correct target by chance.
        let answer = if conflict.matches(during.status()) {
            RetryAnswer::Conflict
        } else if r.plan.success.matches(during.status())
            && (r.marked(&during) || during.response.body == first.response.body)
        {
            RetryAnswer::Replay
        } else {
            RetryAnswer::Other
        };
        let times = InFlightTimes {
            first_answered: first.elapsed.as_secs_f64(),
            retry_sent: during_sent.as_secs_f64(),
            round_trip: after_done.elapsed.as_secs_f64(),
        };
        let in_flight = race::met_in_flight(&times, answer);
        let conflict_seen = needs(
            in_flight && after > before,
            Assertion::check(
                "conflict_while_in_flight",
                conflict.matches(during.status()),
                format!("the retry while the first attempt was running got {d}"),
                format!(
                    "a retry while the first attempt was still running {how}: {d} (first {f} after {:.1} s)",
                    first.elapsed.as_secs_f64()
                ),
                format!("status {conflict}"),
                format!("status {}", during.status()),
            ),
            || {
                format!(
                    "the first attempt's answer came back at {:.3} s and the retry left at {:.3} s (or nothing executed): nothing was in flight for certain (a replayed retry counts only when the first answered over two round trips ({:.3} s each) plus {:.1} s after it left); make `slow_headers` slow the target down",
                    times.first_answered,
                    times.retry_sent,
                    times.round_trip,
                    race::IN_FLIGHT_GUARD
                )
            },
        );
        let replayed = after_done.status() == first.status()
            && (r.marked(&after_done) || after_done.response.body == first.response.body);
        let counter = r.plan.effects.value.to_string();
        let replay = needs(
            after > before,
            Assertion::check(
                "replay_after_completion",
                replayed,
                format!("the retry after completion got the first result {a}"),
                format!(
                    "the retry after completion got {a} ({}), not the first result {f}",
                    r.marker_text(&after_done)
                ),
                format!("status {} (the first result)", first.status()),
                format!("status {}", after_done.status()),
            ),
            || {
                format!("the side-effect counter {counter} did not move ({before} to {after}): nothing was executed, so nothing was stored to replay")
            },
        );
        return Ok(r.judged(vec![single, conflict_seen, replay]));
    }
    // Not reached: the last round returns either way.
    Err(Outcome::error("the in-flight check ran out of rounds"))
}

/// IDEM-001. A keyless request's rejection (or its +0 on the counter) is
/// judged only against a keyed twin that the target serves and counts: a
/// target that rejects or ignores every request exercised nothing.
async fn missing_key(
    mut r: Run<'_>,
    required: bool,
    reject: &crate::model::scalar::StatusSet,
) -> Res {
    let req = r.render(&r.ctx.target, None);
    let before = r.counter("counter before").await?;
    let ex = r.send(&req, "no key").await?;
    let mid = r.counter("counter after").await?;
    let x = describe(&ex);
    let header = r.plan.key_header.clone();
    let served = r.plan.success.matches(ex.status());
    let (answer, effect) = if required {
        (
            Assertion::check(
                "answer",
                reject.matches(ex.status()),
                format!("without {header}: {x}"),
                format!("a mutating request without {header} got {x} (policy `required`)"),
                format!("status {reject}"),
                format!("status {}", ex.status()),
            ),
            r.effect("effect", (before, mid), 0, "a request without a key"),
        )
    } else {
        (
            Assertion::check(
                "answer",
                served,
                format!("policy `optional`: without {header}: {x}"),
                format!("policy `optional`: a request without {header} got {x}"),
                r.plan.success.to_string(),
                ex.status().to_string(),
            ),
            r.effect("effect", (before, mid), 1, "a request without a key"),
        )
    };
    // Positive evidence (it executed) needs no twin; a rejection or a quiet
    // counter does.
    if served && mid > before {
        return Ok(r.judged(vec![answer, effect]));
    }
    let twin = r.render(&r.ctx.target, Some(&r.new_key()));
    let keyed = r.send(&twin, "the same request with a key").await?;
    let after = r.counter("counter after the keyed request").await?;
    let k = describe(&keyed);
    let counter = r.plan.effects.value.to_string();
    let accepted = r.plan.success.matches(keyed.status());
    let judged = if !accepted || after == mid {
        let why = format!(
            "the same request with a key got {k} and the side-effect counter {counter} went from {mid} to {after}: the target does not serve and count this request even with a key, so the missing key was not what it answered"
        );
        // Only an execution the keyless request caused is evidence of its own.
        let effect = if mid > before {
            unless_failed(effect, || why.clone())
        } else {
            Assertion::not_exercised("effect", why.clone())
        };
        vec![Assertion::not_exercised("answer", why), effect]
    } else {
        vec![answer, effect]
    };
    Ok(r.judged(judged))
}

async fn key_scope(mut r: Run<'_>, id_path: Option<&JsonPath>) -> Res {
    let Some(tenant_b) = r.ctx.target.as_second_tenant() else {
        return Ok(Outcome::skipped(
            "no second API key: set target.second_tenant_headers to check that keys are scoped per API key",
        ));
    };
    let key = r.new_key();
    let req_a = r.render(&r.ctx.target, Some(&key));
    // The very same bytes under B, so only the API key differs.
    let mut req_b = r.render(&tenant_b, Some(&key));
    req_b.body = req_a.body.clone();
    let before = r.counter("counter before").await?;
    let a = r.send(&req_a, "API key A").await?;
    r.require_success(&a, "API key A")?;
    let b = r.send(&req_b, "API key B, same key and body").await?;
    let after = r.counter("counter after").await?;
    let (da, db) = (describe(&a), describe(&b));
    let leaked =
        r.marked(&b) || (b.response.body == a.response.body && !b.response.body.is_empty());
    let b_ok = r.plan.success.matches(b.status());
    let no_leak = if leaked {
        Assertion::fail(
            "no_leak",
            format!(
                "API key B received API key A's stored response for the same Idempotency-Key ({}, B {db}, A {da}): a cross-tenant leak",
                r.marker_text(&b)
            ),
            "an independent execution for B",
            "A's stored response",
        )
    } else {
        // Only an answer B was served says its stored responses are its own.
        needs(
            b_ok,
            Assertion::pass(
                "no_leak",
                format!("B got its own answer {db}, not A's {da}"),
            ),
            || {
                format!(
                    "API key B's request was not served ({db}): check target.second_tenant_headers; a rejection says nothing about key scope"
                )
            },
        )
    };
    let b_executes = if leaked {
        Assertion::skipped("b_executes", "not judged: B received A's stored response")
    } else {
        Assertion::check(
            "b_executes",
            b_ok,
            format!("API key B's request executed: {db}"),
            format!("API key B's request got {db}"),
            r.plan.success.to_string(),
            b.status().to_string(),
        )
    };
    let distinct = match id_path {
        None => Assertion::skipped("distinct_resources", "no `id_path` to compare resource ids"),
        Some(p) => match (select(&a, p), select(&b, p)) {
            (Some(ia), Some(ib)) => Assertion::check(
                "distinct_resources",
                ia != ib,
                format!("A and B got different resources: {p} = {ia} and {ib}"),
                format!("A and B got the same resource {p} = {ia}"),
                "different resources",
                "the same resource",
            ),
            (ia, ib) => Assertion::not_exercised(
                "distinct_resources",
                format!(
                    "no resource id at {p} in both answers (A {}, B {})",
                    ia.unwrap_or_else(|| "missing".into()),
                    ib.unwrap_or_else(|| "missing".into())
                ),
            ),
        },
    };
    let single = r.effect(
        "two_executions",
        (before, after),
        2,
        "one key under two API keys",
    );
    Ok(r.judged(vec![no_leak, b_executes, distinct, single]))
}

/// The malformed variants of a key (IDEM-006): empty, one character over
/// the 255 limit, and a control character inside. A tab is the control
/// character because HTTP field values may carry it (other C0 controls cannot
/// be sent at all).
pub fn malformed_keys(key: &str) -> Vec<(&'static str, String)> {
    let mut long: String = key.chars().filter(|c| !c.is_control()).collect();
    if long.is_empty() {
        long.push('k');
    }
    while long.chars().count() < 256 {
        long.push('k');
    }
    let long: String = long.chars().take(256).collect();
    let half = key.len() / 2;
    let cut = (0..=half)
        .rev()
        .find(|i| key.is_char_boundary(*i))
        .unwrap_or(0);
    let control = format!("{}\t{}", &key[..cut].trim(), &key[cut..].trim());
    let control = if control.trim().len() == control.len() {
        control
    } else {
        // A key that is too short to hold the tab inside gets padding.
        format!("k\t{}k", control.trim())
    };
    vec![
        ("empty", String::new()),
        ("256 characters", long),
        ("a control character (tab) inside", control),
    ]
}

/// IDEM-006: malformed keys rejected and not executed; the quoted SF string
/// "K" and the bare K one key, or one form always rejected. The malformed
/// keys' rejections count only because a well-formed key is then served and
/// moves the counter.
async fn key_syntax(mut r: Run<'_>, reject: &StatusSet) -> Res {
    let base = r.new_key();
    let header = r.plan.key_header.clone();
    let before = r.counter("counter before").await?;
    let mut not_rejected = Vec::new();
    for (what, bad) in malformed_keys(&base) {
        let req = r.render(&r.ctx.target, Some(&bad));
        let label = format!("malformed key: {what}");
        let ex = r.send(&req, &label).await?;
        if !reject.matches(ex.status()) {
            not_rejected.push((
                format!("a malformed {header} ({what}) got {}", describe(&ex)),
                ex.status(),
            ));
        }
    }
    let mid = r.counter("counter after malformed").await?;

    // The same key as a structured-field string and as a bare token.
    let key = r.new_key();
    let quoted_req = r.render(&r.ctx.target, Some(&format!("\"{key}\"")));
    let mut bare_req = quoted_req.clone();
    bare_req.set_header(&header, key.clone());
    let quoted = r.send(&quoted_req, "quoted key \"K\"").await?;
    let bare = r.send(&bare_req, "bare key K").await?;
    let after = r.counter("counter after").await?;
    let (q_ok, b_ok) = (
        r.plan.success.matches(quoted.status()),
        r.plan.success.matches(bare.status()),
    );
    let (q, b) = (describe(&quoted), describe(&bare));
    let counter = r.plan.effects.value.to_string();
    let n = after - mid;
    r.props.push(prop("well_formed_executions", n));
    let twice = || {
        format!(
            "the quoted key \"K\" and the bare key K are two different keys: both executed (quoted {q}, bare {b}; the side-effect counter {counter} went from {mid} to {after})"
        )
    };
    let one_key = match (q_ok, b_ok) {
        (false, false) => {
            return Err(Outcome::error(format!(
                "neither the quoted key ({q}) nor the bare key ({b}) was accepted: the request itself does not fit the target (body: {})",
                snippet(&bare.response.text())
            ))
            .with_evidence(r.evidence));
        }
        _ if n >= 2 => Assertion::fail(
            "quoted_bare_one_key",
            twice(),
            "the bare K replays the quoted \"K\" (1 execution)",
            format!("{n} execution(s)"),
        ),
        _ if n == 0 => Assertion::not_exercised(
            "quoted_bare_one_key",
            format!(
                "the side-effect counter {counter} did not move ({mid} to {after}) for the accepted form (quoted {q}, bare {b}): nothing was executed"
            ),
        ),
        (true, true) => Assertion::pass(
            "quoted_bare_one_key",
            format!("quoted and bare are one key: {q} then {b}, one execution"),
        ),
        (false, true) => Assertion::check(
            "quoted_bare_one_key",
            (400..500).contains(&quoted.status()),
            format!("the quoted form is rejected ({q}), the bare form executes ({b})"),
            format!("the quoted key \"K\" got {q}"),
            "a success or a 4xx",
            format!("status {}", quoted.status()),
        ),
        (true, false) => {
            // The bare form must then be rejected always, not only after the
            // quoted one: probe it alone with a new key.
            let probe_req = r.render(&r.ctx.target, Some(&r.new_key()));
            let probe = r.send(&probe_req, "bare key alone").await?;
            Assertion::check(
                "quoted_bare_one_key",
                !r.plan.success.matches(probe.status()),
                format!("the bare form is rejected ({b}, alone {}), the quoted form executes ({q})", describe(&probe)),
                format!(
                    "the bare key K got {b} after the quoted \"K\" {q}, yet a bare key alone is accepted ({}): the two forms are neither one key nor one of them always rejected",
                    describe(&probe)
                ),
                "the bare K replays \"K\", or bare keys are always rejected",
                format!("status {}", bare.status()),
            )
        }
    };
    // The malformed keys' answers mean something only because a well-formed
    // key is served and counted on the same request.
    let served = n >= 1;
    let unserved = || {
        format!(
            "no well-formed key moved the side-effect counter {counter} ({mid} to {after}; quoted {q}, bare {b}), so the malformed keys' answers were not compared with a served request"
        )
    };
    let rejected = if let Some((_, status)) = not_rejected.first() {
        let all: Vec<&str> = not_rejected.iter().map(|(m, _)| m.as_str()).collect();
        Assertion::fail(
            "malformed_rejected",
            all.join("; "),
            format!("status {reject}"),
            format!("status {status}"),
        )
    } else {
        needs(
            served,
            Assertion::pass(
                "malformed_rejected",
                format!("empty, 256-character and tab-carrying keys all got {reject}"),
            ),
            unserved,
        )
    };
    let not_executed = r.effect(
        "malformed_not_executed",
        (before, mid),
        0,
        "three malformed keys",
    );
    let not_executed = if served {
        not_executed
    } else {
        unless_failed(not_executed, unserved)
    };
    Ok(r.judged(vec![rejected, not_executed, one_key]))
}

async fn endpoint_scope(
    mut r: Run<'_>,
    other: &RequestPlan,
    other_effects: Option<&CounterPlan>,
    policy: EndpointPolicy,
    reject: &StatusSet,
) -> Res {
    let key = r.new_key();
    let req_a = r.render(&r.ctx.target, Some(&key));
    let mut req_b = r.ctx.target.render(other, &r.scope);
    req_b.set_header(&r.plan.key_header, key.clone());
    if req_b.body.is_empty() {
        // Without its own body, B gets A's very bytes: only the endpoint
        // differs, so a fingerprint that ignores the path is caught.
        req_b.body = req_a.body.clone();
        if let Some((_, ct)) = req_a
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            let ct = ct.clone();
            if !req_b
                .headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                req_b.set_header("Content-Type", ct);
            }
        }
    }
    let before = r.counter("counter before").await?;
    let other_before = match other_effects {
        Some(c) => Some(
            read_counter(r.ctx, c, &r.scope, "B counter before")
                .await?
                .0,
        ),
        None => None,
    };
    let a = r.send(&req_a, "endpoint A").await?;
    r.require_success(&a, "endpoint A")?;
    let b = r.send(&req_b, "endpoint B, same key").await?;
    let after = r.counter("counter after").await?;
    let other_after = match other_effects {
        Some(c) => Some(read_counter(r.ctx, c, &r.scope, "B counter after").await?.0),
        None => None,
    };
    let (da, db) = (describe(&a), describe(&b));
    let b_ok = r.plan.success.matches(b.status());
    let leaked = r.marked(&b)
        || (b.status() == a.status()
            && !b.response.body.is_empty()
            && b.response.body == a.response.body);
    // When B does not execute, the same request under a fresh key tells
    // whether the reused key changed B's answer at all.
    let b_fresh = if !leaked && !b_ok {
        let mut probe = req_b.clone();
        probe.set_header(&r.plan.key_header, r.new_key());
        Some(r.send(&probe, "endpoint B, new key").await?)
    } else {
        None
    };
    let fresh_status = b_fresh.as_ref().map(|p| p.status());
    let like_fresh = fresh_status == Some(b.status());
    let fresh = b_fresh.as_ref().map(describe).unwrap_or_default();
    let no_leak = if leaked {
        Assertion::fail(
            "no_leak",
            format!(
                "endpoint B {} {} received endpoint A's stored response for the same {} ({}, B {db}, A {} {} {da})",
                other.method,
                req_path(&req_b.url),
                r.plan.key_header,
                r.marker_text(&b),
                req_a.method,
                req_path(&req_a.url),
            ),
            "a 4xx or an independent execution",
            "A's stored response",
        )
    } else if b_ok {
        Assertion::pass("no_leak", format!("B executed on its own: {db}, A {da}"))
    } else if like_fresh {
        Assertion::pass(
            "no_leak",
            format!("B answered the reused key as it answers a fresh one ({db}, fresh {fresh}): A's use of the key did not reach B"),
        )
    } else {
        Assertion::pass(
            "no_leak",
            format!("B rejected the reused key ({db}) and serves the request under a fresh key ({fresh}): not A's answer"),
        )
    };
    let (ok, want) = match policy {
        EndpointPolicy::Either => (
            b_ok || reject.matches(b.status()),
            format!("{} or {reject}", r.plan.success),
        ),
        EndpointPolicy::Reject => (reject.matches(b.status()), reject.to_string()),
        EndpointPolicy::Execute => (b_ok, r.plan.success.to_string()),
    };
    let b_answer = if leaked {
        Assertion::skipped("b_answer", "not judged: B received A's stored response")
    } else if policy == EndpointPolicy::Reject && like_fresh {
        Assertion::not_exercised(
            "b_answer",
            format!(
                "endpoint B answers this request {fresh} under a fresh key too: its {db} is not a rejection of the reused key (policy `reject`); give `other_request` a body endpoint B accepts"
            ),
        )
    } else {
        Assertion::check(
            "b_answer",
            ok,
            format!("endpoint B got {db} (policy wants {want})"),
            format!("endpoint B got {db} for a key first used on endpoint A (A {da})"),
            format!("status {want}"),
            format!("status {}", b.status()),
        )
    };
    let a_effect = r.effect(
        "single_effect",
        (before, after),
        1,
        "A's counter, one key on two endpoints",
    );
    let b_effect = match (other_effects, other_before, other_after) {
        (Some(_), _, _) if leaked => {
            Assertion::skipped("b_effect", "not judged: B received A's stored response")
        }
        (Some(c), Some(ob), Some(oa)) => {
            r.props.push(prop("other_executions", oa - ob));
            let n = oa - ob;
            let wrong = format!(
                "endpoint B's side-effect counter {} went from {ob} to {oa} ({n} execution(s), expected {} for B {db})",
                c.value,
                i64::from(b_ok)
            );
            if b_ok || n != 0 {
                Assertion::check(
                    "b_effect",
                    n == i64::from(b_ok),
                    format!("endpoint B's side-effect counter {} went from {ob} to {oa}, as its answer {db} says", c.value),
                    wrong,
                    format!("{} execution(s) of B", i64::from(b_ok)),
                    format!("{n} execution(s) of B"),
                )
            } else {
                // +0 after a rejection agrees with it only if B's counter is
                // known to move: nothing here showed it (B never executed).
                Assertion::skipped(
                    "b_effect",
                    format!(
                        "B's counter {} stayed at {ob} after B's {db}, but B never executed in this check, so the counter was not shown to count",
                        c.value
                    ),
                )
            }
        }
        _ => Assertion::skipped("b_effect", "no `other_effects` counter for endpoint B"),
    };
    Ok(r.judged(vec![no_leak, b_answer, a_effect, b_effect]))
}

/// The path of a URL, for messages.
fn req_path(url: &str) -> &str {
    url.split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or(url)
}

/// IDEM-007: a replay before the TTL, a fresh execution after it.
async fn expiry(mut r: Run<'_>, ttl: Duration, margin: Duration) -> Res {
    let key = r.new_key();
    let req = r.render(&r.ctx.target, Some(&key));
    let before = r.counter("counter before").await?;
    let first = r.send(&req, "first").await?;
    // The target's clock starts when it stores the answer, at the latest when
    // the answer arrives here.
    let stored_at = Instant::now();
    r.require_success(&first, "first")?;
    let second = r.send(&req, "before expiry").await?;
    let second_at = stored_at.elapsed();
    let mid = r.counter("counter before expiry").await?;
    let moved = counter_moved(before, mid, Some(2), &r.plan.effects.value.to_string())
        .map_err(|why| Outcome::error(why).with_evidence(r.evidence.clone()))?;
    let replayed = moved == 1 && second.status() == first.status();
    if !replayed && second_at >= ttl {
        return Err(Outcome::error(format!(
            "the replay before expiry was answered {:.2} s after the first, not within ttl {ttl:?}: the TTL is too short to judge on this target",
            second_at.as_secs_f64()
        ))
        .with_evidence(r.evidence));
    }
    let counter = r.plan.effects.value.to_string();
    let (f, s) = (describe(&first), describe(&second));
    let nothing = |from: i64, to: i64| {
        format!(
            "the side-effect counter {counter} did not move ({from} to {to}): nothing was executed"
        )
    };
    let replays = needs(
        mid > before,
        Assertion::check(
            "replays_before_ttl",
            replayed,
            format!(
                "{:.2} s after the first (ttl {ttl:?}) the key replayed: {s}, one execution",
                second_at.as_secs_f64()
            ),
            format!(
                "before expiry ({:.2} s after the first, ttl {ttl:?}) the key did not replay: {s} (first {f}); the side-effect counter {counter} went from {before} to {mid}",
                second_at.as_secs_f64()
            ),
            format!("a replay (status {}, 1 execution)", first.status()),
            format!("status {}, {moved} execution(s)", second.status()),
        ),
        || nothing(before, mid),
    );
    let first_unmarked = needs(mid > before, r.first_not_marked(&first, "first"), || {
        nothing(before, mid)
    });
    let wait = (ttl + margin).saturating_sub(stored_at.elapsed());
    r.ctx.note(format!(
        "waiting {:.1} s for the key to expire (ttl {ttl:?} + margin {margin:?})",
        wait.as_secs_f64()
    ));
    tokio::time::sleep(wait).await;
    let third = r.send(&req, "after expiry").await?;
    let third_at = stored_at.elapsed();
    let after = r.counter("counter after").await?;
    r.props.push(prop("executions_after_expiry", after - mid));
    let t = describe(&third);
    let fresh = if after - mid != 1 {
        Assertion::fail(
            "fresh_after_ttl",
            format!(
                "the key did not expire: {:.2} s after the first (ttl {ttl:?}) it got {t} ({}) and the side-effect counter {counter} went from {mid} to {after} ({} execution(s), expected 1)",
                third_at.as_secs_f64(),
                r.marker_text(&third),
                after - mid
            ),
            "a fresh execution after the TTL",
            format!("{} execution(s)", after - mid),
        )
    } else if !r.plan.success.matches(third.status()) {
        Assertion::fail(
            "fresh_after_ttl",
            format!(
                "after expiry ({:.2} s after the first) the key got {t}",
                third_at.as_secs_f64()
            ),
            r.plan.success.to_string(),
            third.status().to_string(),
        )
    } else if r.marked(&third) {
        Assertion::fail(
            "fresh_after_ttl",
            format!(
                "the request after expiry {t} executed but is marked as a replay ({})",
                r.marker_text(&third)
            ),
            format!("no {} on a fresh execution", r.plan.marker.header),
            r.marker_text(&third),
        )
    } else {
        Assertion::pass(
            "fresh_after_ttl",
            format!(
                "{:.1} s after the first the key executed fresh: {t}",
                third_at.as_secs_f64()
            ),
        )
    };
    Ok(r.judged(vec![replays, first_unmarked, fresh]))
}

pub(super) fn select(ex: &Exchange, p: &JsonPath) -> Option<String> {
    ex.response
        .json()
        .and_then(|d| p.select(&d))
        .map(|v| v.to_string())
}

/// Paths where two bodies differ (JSON) or `["body"]` for non-JSON bodies.
pub(super) fn compare_bodies(
    a: &Exchange,
    b: &Exchange,
    ignore: &[JsonPath],
    id_path: Option<&JsonPath>,
) -> Vec<String> {
    if let Some(p) = id_path {
        let (x, y) = (select(a, p), select(b, p));
        return if x.is_some() && x == y {
            Vec::new()
        } else {
            vec![format!(
                "{p} ({} vs {})",
                x.unwrap_or_else(|| "missing".into()),
                y.unwrap_or_else(|| "missing".into())
            )]
        };
    }
    match (a.response.json(), b.response.json()) {
        (Some(x), Some(y)) => {
            let ignore: Vec<String> = ignore.iter().map(|p| p.to_string()).collect();
            json_diff(&x, &y)
                .into_iter()
                .filter(|d| {
                    !ignore.iter().any(|i| {
                        d == i || d.starts_with(&format!("{i}.")) || d.starts_with(&format!("{i}["))
                    })
                })
                .collect()
        }
        _ if a.response.body == b.response.body => Vec::new(),
        _ => vec!["body (not JSON, bytes differ)".into()],
    }
}

/// Every path (`$.a.b[0]`) where two JSON values differ.
pub fn json_diff(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_at("$", a, b, &mut out);
    out
}

fn diff_at(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    if out.len() >= 20 {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => diff_at(&format!("{path}.{k}"), v, w, out),
                    None => out.push(format!("{path}.{k}")),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{path}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff_at(&format!("{path}[{i}]"), v, w, out);
            }
        }
        _ if a == b => {}
        _ => out.push(path.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn malformed_keys_are_empty_long_and_control() {
        let k = malformed_keys("0b6c1f7e-2d4b-4c1e-9a55-7c3e1d2f4a10");
        assert_eq!(k[0].1, "");
        assert_eq!(k[1].1.chars().count(), 256);
        assert!(k[2].1.contains('\t'));
        assert_eq!(k[2].1.trim(), k[2].1, "the tab is inside, not trimmable");
        let short = malformed_keys("a");
        assert!(short[2].1.contains('\t') && short[2].1.trim() == short[2].1);
    }

    #[test]
    fn diff_names_paths() {
        let a = json!({"id": "m1", "created_at": "t1", "x": [1, 2], "same": true});
        let b = json!({"id": "m2", "created_at": "t1", "x": [1, 3], "same": true, "extra": 1});
        assert_eq!(json_diff(&a, &b), vec!["$.id", "$.x[1]", "$.extra"]);
        assert!(json_diff(&a, &a).is_empty());
    }

    #[test]
    fn splits_urls_into_origin_host_and_path() {
        let (o, host, path) = split_url("http://127.0.0.1:8080/a/b?c=1").unwrap();
        assert_eq!(
            (o.addr.as_str(), host.as_str(), path.as_str(), o.tls),
            ("127.0.0.1:8080", "127.0.0.1:8080", "/a/b?c=1", false)
        );
        let (o, host, path) = split_url("http://localhost").unwrap();
        assert_eq!(
            (o.addr.as_str(), host.as_str(), path.as_str()),
            ("localhost:80", "localhost", "/")
        );
        let (o, host, _) = split_url("https://x/y").unwrap();
        assert_eq!(
            (o.addr.as_str(), host.as_str(), o.tls),
            ("x:443", "x", true)
        );
        assert!(split_url("ftp://x/y").is_err());
    }

    #[test]
    fn raw_request_has_length_and_close() {
        let r = Rendered {
            method: reqwest::Method::POST,
            url: "http://h/p".into(),
            headers: vec![("Idempotency-Key".into(), "k".into())],
            body: b"{}".to_vec(),
            timeout: Duration::from_secs(1),
            credential: None,
        };
        let s = String::from_utf8(raw_request(&r, "h", "/p")).unwrap();
        assert!(s.starts_with("POST /p HTTP/1.1\r\nHost: h\r\nIdempotency-Key: k\r\n"));
        assert!(s.ends_with("Content-Length: 2\r\nConnection: close\r\n\r\n{}"));
    }
}
