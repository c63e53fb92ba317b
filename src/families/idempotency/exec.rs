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

use crate::families::common::{describe, read_counter, send};
use crate::families::idempotency::plan::{EndpointPolicy, IdemPlan, MarkerPolicy, Mode};
use crate::families::CheckContext;
use crate::http::{Exchange, Rendered, Target};
use crate::model::jsonpath::JsonPath;
use crate::model::scalar::StatusSet;
use crate::outcome::{prop, Assertion, Evidence, Outcome, PropValue};
use crate::plan::{CounterPlan, RequestPlan};
use crate::plan::{Scope, Template};

/// How long the lost-response check waits after writing the request before it
/// drops the connection (never reading the answer): enough for the target to
/// start processing, far less than any answer would be trusted to take.
const DROP_AFTER: Duration = Duration::from_millis(100);
/// Pause between retries while the target answers "in progress".
const POLL_EVERY: Duration = Duration::from_millis(100);

/// Collects evidence, properties and problems while a check runs.
struct Run<'a> {
    ctx: &'a CheckContext,
    plan: &'a IdemPlan,
    scope: Scope,
    evidence: Vec<Evidence>,
    props: Vec<(String, PropValue)>,
    problems: Vec<(String, String, String)>,
}

impl<'a> Run<'a> {
    fn new(ctx: &'a CheckContext, plan: &'a IdemPlan) -> Self {
        Run {
            ctx,
            plan,
            scope: Scope::new(),
            evidence: Vec::new(),
            props: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The check's request for `target`, with the key set (or removed).
    fn render(&self, target: &Target, key: Option<&str>) -> Rendered {
        let mut r = target.render(&self.plan.request, &self.scope);
        match key {
            Some(k) => r.set_header(&self.plan.key_header, k),
            None => r.remove_header(&self.plan.key_header),
        }
        r
    }

    fn new_key(&self) -> String {
        self.plan.key.render(&self.scope)
    }

    async fn send(&mut self, r: &Rendered, label: &str) -> Result<Exchange, Outcome> {
        let ex = send(self.ctx, r, label).await?;
        self.evidence.push(Evidence::from_exchange(label, &ex));
        Ok(ex)
    }

    async fn counter(&mut self, label: &str) -> Result<i64, Outcome> {
        let (n, _) = read_counter(self.ctx, &self.plan.effects, &self.scope, label).await?;
        self.props.push(prop(label.replace(' ', "_"), n));
        Ok(n)
    }

    fn problem(
        &mut self,
        msg: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) {
        self.problems
            .push((msg.into(), expected.into(), actual.into()));
    }

    fn marked(&self, ex: &Exchange) -> bool {
        self.plan
            .marker
            .is_marked(ex.response.header(&self.plan.marker.header))
    }

    fn marker_text(&self, ex: &Exchange) -> String {
        match ex.response.header(&self.plan.marker.header) {
            Some(v) => format!("{}: {v}", self.plan.marker.header),
            None => format!("no {} header", self.plan.marker.header),
        }
    }

    /// A first execution must not claim to be a replay.
    fn first_not_marked(&mut self, ex: &Exchange, label: &str) {
        if self.marked(ex) {
            let actual = self.marker_text(ex);
            self.problem(
                format!(
                    "{label} {} is marked as a replay ({actual}) although the key was new",
                    describe(ex)
                ),
                format!("no {} on a first execution", self.plan.marker.header),
                actual,
            );
        }
    }

    fn delta(&mut self, before: i64, after: i64, want: i64, what: &str) {
        self.props.push(prop("executions", after - before));
        if after - before != want {
            self.problem(
                format!(
                    "{what}: the side-effect counter {} went from {before} to {after} ({} execution(s), expected {want})",
                    self.plan.effects.value,
                    after - before
                ),
                format!("{want} execution(s)"),
                format!("{} execution(s)", after - before),
            );
        }
    }

    fn finish(self, pass: impl Into<String>) -> Outcome {
        let out = match self.problems.first() {
            None => Outcome::pass(pass),
            Some((_, e, a)) => {
                let msg = self
                    .problems
                    .iter()
                    .map(|p| p.0.clone())
                    .collect::<Vec<_>>()
                    .join("; ");
                Outcome::fail(msg, e.clone(), a.clone())
            }
        };
        out.with_evidence(self.evidence).with_properties(self.props)
    }

    /// The first, keyed request must succeed for anything after it to be judged.
    fn require_success(&self, ex: &Exchange, label: &str) -> Result<(), Outcome> {
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
        Mode::Replay { ignore, id_path } => replay(r, ignore, id_path.as_ref()).await,
        Mode::DistinctKeys { id_path } => distinct(r, id_path.as_ref()).await,
        Mode::Mismatch { changed, reject } => mismatch(r, changed.as_ref(), reject).await,
        Mode::Concurrent {
            n,
            conflict,
            allow_replay,
            slow,
        } => concurrent(r, *n, conflict, *allow_replay, slow).await,
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

type Res = Result<Outcome, Outcome>;

/// IDEM-002, one verdict per property: one execution, the same status, the
/// same body, the marker on the replay and none on the first answer.
async fn replay(mut r: Run<'_>, ignore: &[JsonPath], id_path: Option<&JsonPath>) -> Res {
    let key = r.new_key();
    let req = r.render(&r.ctx.target, Some(&key));
    let before = r.counter("counter before").await?;
    let first = r.send(&req, "first").await?;
    r.require_success(&first, "first")?;
    let second = r.send(&req, "replay").await?;
    let after = r.counter("counter after").await?;
    let executions = after - before;
    r.props.push(prop("executions", executions));
    let (f, s) = (describe(&first), describe(&second));
    let mut judged = vec![
        Assertion::check(
            "single_effect",
            executions == 1,
            format!(
                "the side-effect counter {} went from {before} to {after}: one execution for two requests",
                r.plan.effects.value
            ),
            format!(
                "two requests with one key: the side-effect counter {} went from {before} to {after} ({executions} execution(s), expected 1)",
                r.plan.effects.value
            ),
            "1 execution(s)",
            format!("{executions} execution(s)"),
        ),
        Assertion::check(
            "same_status",
            first.status() == second.status(),
            format!("first {f}, replay {s}"),
            format!("the replay answered {s} but the first request {f}"),
            format!("status {}", first.status()),
            format!("status {}", second.status()),
        ),
    ];
    let diffs = compare_bodies(&first, &second, ignore, id_path);
    judged.push(Assertion::check(
        "same_body",
        diffs.is_empty(),
        match id_path {
            Some(p) => format!("the same resource id at {p}"),
            None if ignore.is_empty() => "byte-for-byte the same JSON body".to_owned(),
            None => format!("the same JSON body (ignoring {})", ignore.len()),
        },
        format!(
            "the replay's body differs from the first at {} (first {f}, replay {s})",
            diffs.join(", ")
        ),
        "the same body",
        format!("differs at {}", diffs.join(", ")),
    ));
    let m = &r.plan.marker;
    let shown = r.marker_text(&second);
    judged.push(match m.policy {
        MarkerPolicy::Required => Assertion::check(
            "marker",
            r.marked(&second),
            format!("the replay carries {shown}"),
            format!(
                "the replay {s} carries {shown}, expected {} in {:?}",
                m.header, m.values
            ),
            format!("{}: {}", m.header, m.values.join(" or ")),
            shown,
        ),
        MarkerPolicy::Forbidden => Assertion::check(
            "marker",
            second.response.header(&m.header).is_none(),
            format!("the replay carries no {}, as this suite asks", m.header),
            format!("the replay carries {shown}, which this suite forbids"),
            format!("no {}", m.header),
            shown,
        ),
        MarkerPolicy::Optional => Assertion::skipped(
            "marker",
            format!("not judged: `marker.policy: optional` ({shown})"),
        ),
    });
    let first_shown = r.marker_text(&first);
    judged.push(Assertion::check(
        "first_not_marked",
        !r.marked(&first),
        format!("the first answer carries {first_shown}"),
        format!("the first {f} is marked as a replay ({first_shown}) although the key was new"),
        format!("no {} on a first execution", m.header),
        first_shown,
    ));
    Ok(Outcome::judged(judged)
        .with_evidence(r.evidence)
        .with_properties(r.props))
}

async fn distinct(mut r: Run<'_>, id_path: Option<&JsonPath>) -> Res {
    let (k1, k2) = (r.new_key(), r.new_key());
    if k1 == k2 {
        return Err(Outcome::error(format!(
            "the key template gave `{k1}` twice: use a fresh value such as `${{uuid}}`"
        )));
    }
    let req1 = r.render(&r.ctx.target, Some(&k1));
    let mut req2 = req1.clone();
    req2.set_header(&r.plan.key_header, k2);
    let before = r.counter("counter before").await?;
    let a = r.send(&req1, "key 1").await?;
    r.require_success(&a, "key 1")?;
    let b = r.send(&req2, "key 2").await?;
    let after = r.counter("counter after").await?;
    if !r.plan.success.matches(b.status()) {
        r.problem(
            format!("the same body under a second key answered {}", describe(&b)),
            r.plan.success.to_string(),
            b.status().to_string(),
        );
    }
    r.first_not_marked(&b, "the second key's answer");
    r.delta(before, after, 2, "one body under two different keys");
    if let Some(p) = id_path {
        let (ia, ib) = (select(&a, p), select(&b, p));
        if ia.is_some() && ia == ib {
            r.problem(
                format!(
                    "both keys returned the same resource {p} = {} (deduplicated by body)",
                    ia.unwrap_or_default()
                ),
                "two resource ids",
                "one shared id",
            );
        }
    }
    Ok(r.finish(format!(
        "two keys, two executions: {} and {}",
        describe(&a),
        describe(&b)
    )))
}

/// The default "changed" request: the first string field of a JSON object body
/// altered, or a field added when there is none.
fn mutate_body(body: &[u8]) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    let obj = v.as_object_mut()?;
    let field = obj
        .iter()
        .find(|(_, x)| x.is_string())
        .map(|(k, _)| k.clone());
    match field {
        Some(k) => {
            let old = obj[&k].as_str().unwrap_or_default().to_owned();
            obj.insert(k, Value::String(format!("{old} (changed by tminus)")));
        }
        None => {
            obj.insert("tminus_mismatch".into(), Value::Bool(true));
        }
    }
    serde_json::to_vec(&v).ok()
}

async fn mismatch(
    mut r: Run<'_>,
    changed: Option<&crate::plan::RequestPlan>,
    reject: &crate::model::scalar::StatusSet,
) -> Res {
    let key = r.new_key();
    let req = r.render(&r.ctx.target, Some(&key));
    let req2 = match changed {
        Some(c) => {
            let mut x = r.ctx.target.render(c, &r.scope);
            x.set_header(&r.plan.key_header, key.clone());
            x
        }
        None => {
            let mut x = req.clone();
            x.body = mutate_body(&req.body).ok_or_else(|| {
                Outcome::error(
                    "the request body is not a JSON object, so tminus cannot change a field: give `changed:` (the second request)",
                )
            })?;
            x
        }
    };
    let before = r.counter("counter before").await?;
    let first = r.send(&req, "first").await?;
    r.require_success(&first, "first")?;
    let second = r.send(&req2, "changed body, same key").await?;
    let after = r.counter("counter after").await?;
    if !reject.matches(second.status()) {
        let how = if r.plan.success.matches(second.status())
            && (r.marked(&second) || second.response.body == first.response.body)
        {
            "silently replayed the first result"
        } else if r.plan.success.matches(second.status()) {
            "executed it"
        } else {
            "answered with an unexpected status"
        };
        r.problem(
            format!(
                "the same key with a different body {how}: {} (first {})",
                describe(&second),
                describe(&first)
            ),
            format!("status {reject}"),
            format!("status {}", second.status()),
        );
    }
    r.delta(before, after, 1, "a key reused with a different body");
    Ok(r.finish(format!(
        "rejected the changed body with {} and did not execute it",
        describe(&second)
    )))
}

async fn concurrent(
    mut r: Run<'_>,
    n: usize,
    conflict: &crate::model::scalar::StatusSet,
    allow_replay: bool,
    slow: &[(String, Template)],
) -> Res {
    let key = r.new_key();
    let mut req = r.render(&r.ctx.target, Some(&key));
    for (k, v) in slow {
        req.set_header(k, v.render(&r.scope));
    }
    let before = r.counter("counter before").await?;
    r.ctx
        .note(format!("sending {n} parallel requests with one key"));
    let sends = (0..n).map(|_| r.ctx.client.send(&req));
    let results = futures::future::join_all(sends).await;
    let after = r.counter("counter after").await?;
    let mut statuses = Vec::new();
    let (mut ok, mut conflicts, mut other) = (0, 0, Vec::new());
    for (i, res) in results.into_iter().enumerate() {
        let ex = res.map_err(|e| Outcome::transport(&format!("parallel #{}", i + 1), &e))?;
        statuses.push(describe(&ex));
        if r.plan.success.matches(ex.status()) {
            ok += 1;
        } else if conflict.matches(ex.status()) {
            conflicts += 1;
        } else {
            other.push(describe(&ex));
        }
        if i < 3 || !r.plan.success.matches(ex.status()) && !conflict.matches(ex.status()) {
            r.evidence
                .push(Evidence::from_exchange(format!("parallel #{}", i + 1), &ex));
        }
    }
    r.props.push(prop("successes", ok));
    r.props.push(prop("conflicts", conflicts));
    r.delta(
        before,
        after,
        1,
        &format!("{n} parallel requests with one key"),
    );
    if !other.is_empty() {
        r.problem(
            format!(
                "{} parallel request(s) got neither {} nor {conflict}: {}",
                other.len(),
                r.plan.success,
                other.join(", ")
            ),
            format!("{} or {conflict}", r.plan.success),
            other.join(", "),
        );
    }
    if ok == 0 {
        r.problem(
            format!(
                "none of the {n} parallel requests succeeded: {}",
                statuses.join(", ")
            ),
            "one success",
            "none",
        );
    } else if ok > 1 && !allow_replay {
        r.problem(
            format!("{ok} parallel requests succeeded and replays are not allowed by this suite"),
            "exactly one success, the others 409",
            format!("{ok} successes"),
        );
    }
    Ok(r.finish(format!(
        "{n} parallel requests: {ok} success(es), {conflicts} conflict(s), one execution"
    )))
}

/// Splits `http://host:port/path?q` into (`host:port`, `host`, `/path?q`).
pub fn split_http_url(url: &str) -> Result<(String, String, String), String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        if url.starts_with("https://") {
            "idempotency.lost_response drops a raw TCP connection and supports http:// targets only; for an https:// target run it against an http:// address of the same service (or a TLS-terminating proxy on 127.0.0.1)".to_string()
        } else {
            format!("`{url}` is not an http:// URL")
        }
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(format!("`{url}` has no host"));
    }
    let host_header = authority.to_owned();
    let addr = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        && !authority.ends_with(']')
    {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    Ok((addr, host_header, path.to_owned()))
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
    let (addr, host, path) = split_http_url(&req.url).map_err(Outcome::error)?;
    let before = r.counter("counter before").await?;
    r.ctx
        .note("sending the request and dropping the connection before the answer");
    let bytes = raw_request(&dropped, &host, &path);
    let write = async {
        let mut s = tokio::net::TcpStream::connect(&addr).await?;
        s.write_all(&bytes).await?;
        s.flush().await?;
        // Never read: the answer is "lost". Closing drops whatever arrives.
        tokio::time::sleep(DROP_AFTER).await;
        drop(s);
        Ok::<_, std::io::Error>(())
    };
    match tokio::time::timeout(Duration::from_secs(5), write).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return Err(Outcome::error(format!(
                "could not send the raw request to {addr}: {e}"
            )))
        }
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
    if !r.plan.success.matches(retry.status()) {
        r.problem(
            format!(
                "after the lost response, the retry with the same key got {} after {attempts} attempt(s) in {:.1} s",
                describe(&retry),
                started.elapsed().as_secs_f64()
            ),
            r.plan.success.to_string(),
            retry.status().to_string(),
        );
    }
    r.delta(before, after, 1, "a lost response and its retry");
    Ok(r.finish(format!(
        "lost response recovered: retry got {} after {attempts} attempt(s), one execution",
        describe(&retry)
    )))
}

async fn errors(mut r: Run<'_>, invalid: &crate::plan::RequestPlan, cached: bool) -> Res {
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
    if cached {
        if second.status() != first.status() {
            r.problem(
                format!(
                    "policy `cached`: the valid retry with the same key got {} instead of the stored error {}",
                    describe(&second),
                    describe(&first)
                ),
                format!("status {} (the stored error)", first.status()),
                format!("status {}", second.status()),
            );
        }
        r.delta(before, after, 0, "policy `cached`: an error then a retry");
    } else {
        if !r.plan.success.matches(second.status()) {
            r.problem(
                format!(
                    "the valid retry with the key of a rejected request got {} (first {}): the error was cached",
                    describe(&second),
                    describe(&first)
                ),
                r.plan.success.to_string(),
                second.status().to_string(),
            );
        }
        r.delta(
            before,
            after,
            1,
            "an error then a valid retry with the same key",
        );
    }
    Ok(r.finish(format!(
        "error {} then {} as policy `{}` says",
        describe(&first),
        describe(&second),
        if cached { "cached" } else { "not_cached" }
    )))
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
        let first_task = tokio::spawn(async move { client.send(&slow_req).await });
        tokio::time::sleep(wait).await;
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
        if !conflict.matches(during.status()) {
            let how = if r.plan.success.matches(during.status()) {
                "was answered as if executed"
            } else {
                "got an unexpected status"
            };
            r.problem(
                format!(
                    "a retry while the first attempt was still running {how}: {} (first {} after {:.1} s)",
                    describe(&during),
                    describe(&first),
                    first.elapsed.as_secs_f64()
                ),
                format!("status {conflict}"),
                format!("status {}", during.status()),
            );
        }
        let after_done = r.send(&req, "retry after completion").await?;
        let after = r.counter("counter after").await?;
        if after_done.status() != first.status() {
            r.problem(
                format!(
                    "the retry after completion got {}, not the first result {}",
                    describe(&after_done),
                    describe(&first)
                ),
                format!("status {}", first.status()),
                format!("status {}", after_done.status()),
            );
        }
        r.delta(
            before,
            after,
            1,
            "a slow request, a retry during it and one after",
        );
        return Ok(r.finish(format!(
            "in flight: {}, after completion: {}, one execution",
            describe(&during),
            describe(&after_done)
        )));
    }
    // Not reached: the last round returns either way.
    Err(Outcome::error("the in-flight check ran out of rounds"))
}

async fn missing_key(
    mut r: Run<'_>,
    required: bool,
    reject: &crate::model::scalar::StatusSet,
) -> Res {
    let req = r.render(&r.ctx.target, None);
    let before = r.counter("counter before").await?;
    let ex = r.send(&req, "no key").await?;
    let after = r.counter("counter after").await?;
    if required {
        if !reject.matches(ex.status()) {
            r.problem(
                format!(
                    "a mutating request without {} got {} (policy `required`)",
                    r.plan.key_header,
                    describe(&ex)
                ),
                format!("status {reject}"),
                format!("status {}", ex.status()),
            );
        }
        r.delta(before, after, 0, "a request without a key");
    } else {
        if !r.plan.success.matches(ex.status()) {
            r.problem(
                format!(
                    "policy `optional`: a request without {} got {}",
                    r.plan.key_header,
                    describe(&ex)
                ),
                r.plan.success.to_string(),
                ex.status().to_string(),
            );
        }
        r.delta(before, after, 1, "a request without a key");
    }
    Ok(r.finish(format!("without a key: {}", describe(&ex))))
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
    if r.marked(&b) || (b.response.body == a.response.body && !b.response.body.is_empty()) {
        let why = r.marker_text(&b);
        r.problem(
            format!(
                "API key B received API key A's stored response for the same Idempotency-Key ({why}, B {}, A {}): a cross-tenant leak",
                describe(&b),
                describe(&a)
            ),
            "an independent execution for B",
            "A's stored response",
        );
    } else if !r.plan.success.matches(b.status()) {
        r.problem(
            format!("API key B's request got {}", describe(&b)),
            r.plan.success.to_string(),
            b.status().to_string(),
        );
    }
    if let Some(p) = id_path {
        let (ia, ib) = (select(&a, p), select(&b, p));
        if ia.is_some() && ia == ib {
            r.problem(
                format!(
                    "A and B got the same resource {p} = {}",
                    ia.unwrap_or_default()
                ),
                "different resources",
                "the same resource",
            );
        }
    }
    r.delta(before, after, 2, "one key under two API keys");
    Ok(r.finish(format!(
        "the key is scoped per API key: A {}, B {}",
        describe(&a),
        describe(&b)
    )))
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

async fn key_syntax(mut r: Run<'_>, reject: &StatusSet) -> Res {
    let base = r.new_key();
    // Malformed keys: rejected, never executed.
    let before = r.counter("counter before").await?;
    for (what, bad) in malformed_keys(&base) {
        let req = r.render(&r.ctx.target, Some(&bad));
        let label = format!("malformed key: {what}");
        let ex = r.send(&req, &label).await?;
        if !reject.matches(ex.status()) {
            r.problem(
                format!(
                    "a malformed {} ({what}) got {}",
                    r.plan.key_header,
                    describe(&ex)
                ),
                format!("status {reject}"),
                format!("status {}", ex.status()),
            );
        }
    }
    let mid = r.counter("counter after malformed").await?;
    r.delta(before, mid, 0, "three malformed keys");

    // The same key as a structured-field string and as a bare token.
    let key = r.new_key();
    let quoted_req = r.render(&r.ctx.target, Some(&format!("\"{key}\"")));
    let mut bare_req = quoted_req.clone();
    bare_req.set_header(&r.plan.key_header, key.clone());
    let quoted = r.send(&quoted_req, "quoted key \"K\"").await?;
    let bare = r.send(&bare_req, "bare key K").await?;
    let after = r.counter("counter after").await?;
    let (q_ok, b_ok) = (
        r.plan.success.matches(quoted.status()),
        r.plan.success.matches(bare.status()),
    );
    let summary;
    match (q_ok, b_ok) {
        (true, true) => {
            // Both accepted: they must be one key, so the bare one replays.
            if after - mid >= 2 {
                r.props.push(prop("executions", after - mid));
                r.problem(
                    format!(
                        "the quoted key \"K\" and the bare key K are two different keys: both executed (quoted {}, bare {}; the side-effect counter {} went from {mid} to {after})",
                        describe(&quoted),
                        describe(&bare),
                        r.plan.effects.value
                    ),
                    "the bare K replays the quoted \"K\" (1 execution)",
                    format!("{} execution(s)", after - mid),
                );
            } else {
                r.delta(mid, after, 1, "one key sent quoted then bare");
            }
            summary = format!(
                "quoted and bare are one key: {} then {}",
                describe(&quoted),
                describe(&bare)
            );
        }
        (false, true) => {
            if !(400..500).contains(&quoted.status()) {
                r.problem(
                    format!("the quoted key \"K\" got {}", describe(&quoted)),
                    "a success or a 4xx",
                    format!("status {}", quoted.status()),
                );
            }
            r.delta(mid, after, 1, "a rejected quoted key then the bare key");
            summary = format!(
                "the quoted form is rejected ({}), the bare form executes ({})",
                describe(&quoted),
                describe(&bare)
            );
        }
        (true, false) => {
            r.delta(mid, after, 1, "a quoted key then the bare key");
            // The bare form must then be rejected always, not only after the
            // quoted one: probe it alone with a new key.
            let probe_key = r.new_key();
            let probe_req = r.render(&r.ctx.target, Some(&probe_key));
            let probe = r.send(&probe_req, "bare key alone").await?;
            if r.plan.success.matches(probe.status()) {
                r.problem(
                    format!(
                        "the bare key K got {} after the quoted \"K\" {}, yet a bare key alone is accepted ({}): the two forms are neither one key nor one of them always rejected",
                        describe(&bare),
                        describe(&quoted),
                        describe(&probe)
                    ),
                    "the bare K replays \"K\", or bare keys are always rejected",
                    format!("status {}", bare.status()),
                );
            }
            summary = format!(
                "the bare form is rejected ({}), the quoted form executes ({})",
                describe(&bare),
                describe(&quoted)
            );
        }
        (false, false) => {
            return Err(Outcome::error(format!(
                "neither the quoted key ({}) nor the bare key ({}) was accepted: the request itself does not fit the target (body: {})",
                describe(&quoted),
                describe(&bare),
                snippet(&bare.response.text())
            ))
            .with_evidence(r.evidence));
        }
    }
    Ok(r.finish(format!("malformed keys rejected ({reject}); {summary}")))
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
    let b_ok = r.plan.success.matches(b.status());
    let leaked = r.marked(&b)
        || (b.status() == a.status()
            && !b.response.body.is_empty()
            && b.response.body == a.response.body);
    if leaked {
        let why = r.marker_text(&b);
        r.problem(
            format!(
                "endpoint B {} {} received endpoint A's stored response for the same {} ({why}, B {}, A {} {} {})",
                other.method,
                req_path(&req_b.url),
                r.plan.key_header,
                describe(&b),
                req_a.method,
                req_path(&req_a.url),
                describe(&a)
            ),
            "a 4xx or an independent execution",
            "A's stored response",
        );
    } else {
        let (ok, want) = match policy {
            EndpointPolicy::Either => (
                b_ok || reject.matches(b.status()),
                format!("{} or {reject}", r.plan.success),
            ),
            EndpointPolicy::Reject => (reject.matches(b.status()), reject.to_string()),
            EndpointPolicy::Execute => (b_ok, r.plan.success.to_string()),
        };
        if !ok {
            r.problem(
                format!(
                    "endpoint B got {} for a key first used on endpoint A (A {})",
                    describe(&b),
                    describe(&a)
                ),
                format!("status {want}"),
                format!("status {}", b.status()),
            );
        }
    }
    r.delta(before, after, 1, "A's counter, one key on two endpoints");
    if let (Some(c), Some(ob)) = (other_effects, other_before) {
        let (oa, _) = read_counter(r.ctx, c, &r.scope, "B counter after").await?;
        let want = i64::from(b_ok && !leaked);
        r.props.push(prop("other_executions", oa - ob));
        if oa - ob != want {
            r.problem(
                format!(
                    "endpoint B's side-effect counter {} went from {ob} to {oa} ({} execution(s), expected {want} for B {})",
                    c.value,
                    oa - ob,
                    describe(&b)
                ),
                format!("{want} execution(s) of B"),
                format!("{} execution(s) of B", oa - ob),
            );
        }
    }
    Ok(r.finish(format!(
        "the key is scoped per endpoint: A {}, B {}",
        describe(&a),
        describe(&b)
    )))
}

/// The path of a URL, for messages.
fn req_path(url: &str) -> &str {
    url.split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or(url)
}

async fn expiry(mut r: Run<'_>, ttl: Duration, margin: Duration) -> Res {
    let key = r.new_key();
    let req = r.render(&r.ctx.target, Some(&key));
    let before = r.counter("counter before").await?;
    let first = r.send(&req, "first").await?;
    // The target's clock starts when it stores the answer, at the latest when
    // the answer arrives here.
    let stored_at = Instant::now();
    r.require_success(&first, "first")?;
    r.first_not_marked(&first, "first");
    let second = r.send(&req, "before expiry").await?;
    let second_at = stored_at.elapsed();
    let mid = r.counter("counter before expiry").await?;
    if mid - before != 1 || second.status() != first.status() {
        if second_at >= ttl {
            return Err(Outcome::error(format!(
                "the replay before expiry was answered {:.2} s after the first, not within ttl {ttl:?}: the TTL is too short to judge on this target",
                second_at.as_secs_f64()
            ))
            .with_evidence(r.evidence));
        }
        r.problem(
            format!(
                "before expiry ({:.2} s after the first, ttl {ttl:?}) the key did not replay: {} (first {}); the side-effect counter {} went from {before} to {mid}",
                second_at.as_secs_f64(),
                describe(&second),
                describe(&first),
                r.plan.effects.value
            ),
            format!("a replay (status {}, 1 execution)", first.status()),
            format!("status {}, {} execution(s)", second.status(), mid - before),
        );
    }
    let wait = (ttl + margin).saturating_sub(stored_at.elapsed());
    r.ctx.note(format!(
        "waiting {:.1} s for the key to expire (ttl {ttl:?} + margin {margin:?})",
        wait.as_secs_f64()
    ));
    tokio::time::sleep(wait).await;
    let third = r.send(&req, "after expiry").await?;
    let third_at = stored_at.elapsed();
    let after = r.counter("counter after").await?;
    if !r.plan.success.matches(third.status()) {
        r.problem(
            format!(
                "after expiry ({:.2} s after the first) the key got {}",
                third_at.as_secs_f64(),
                describe(&third)
            ),
            r.plan.success.to_string(),
            third.status().to_string(),
        );
    }
    if after - mid != 1 {
        let marker = r.marker_text(&third);
        r.props.push(prop("executions_after_expiry", after - mid));
        r.problem(
            format!(
                "the key did not expire: {:.2} s after the first (ttl {ttl:?}) it got {} ({marker}) and the side-effect counter {} went from {mid} to {after} ({} execution(s), expected 1)",
                third_at.as_secs_f64(),
                describe(&third),
                r.plan.effects.value,
                after - mid
            ),
            "a fresh execution after the TTL",
            format!("{} execution(s)", after - mid),
        );
    } else {
        r.first_not_marked(&third, "the request after expiry");
    }
    Ok(r.finish(format!(
        "replayed before expiry ({}), executed fresh {:.1} s after the first ({})",
        describe(&second),
        third_at.as_secs_f64(),
        describe(&third)
    )))
}

fn select(ex: &Exchange, p: &JsonPath) -> Option<String> {
    ex.response
        .json()
        .and_then(|d| p.select(&d))
        .map(|v| v.to_string())
}

/// Paths where two bodies differ (JSON) or `["body"]` for non-JSON bodies.
fn compare_bodies(
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
    fn mutates_first_string_field() {
        let out = mutate_body(br#"{"contact_id":1,"text":"hi"}"#).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["text"], "hi (changed by tminus)");
        let out = mutate_body(br#"{"n":1}"#).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("tminus_mismatch"));
        assert!(mutate_body(b"[1]").is_none());
    }

    #[test]
    fn splits_http_urls_and_refuses_https() {
        let (addr, host, path) = split_http_url("http://127.0.0.1:8080/a/b?c=1").unwrap();
        assert_eq!(
            (addr.as_str(), host.as_str(), path.as_str()),
            ("127.0.0.1:8080", "127.0.0.1:8080", "/a/b?c=1")
        );
        let (addr, _, path) = split_http_url("http://localhost").unwrap();
        assert_eq!((addr.as_str(), path.as_str()), ("localhost:80", "/"));
        assert!(split_http_url("https://x/y")
            .unwrap_err()
            .contains("http:// targets only"));
    }

    #[test]
    fn raw_request_has_length_and_close() {
        let r = Rendered {
            method: reqwest::Method::POST,
            url: "http://h/p".into(),
            headers: vec![("Idempotency-Key".into(), "k".into())],
            body: b"{}".to_vec(),
            timeout: Duration::from_secs(1),
        };
        let s = String::from_utf8(raw_request(&r, "h", "/p")).unwrap();
        assert!(s.starts_with("POST /p HTTP/1.1\r\nHost: h\r\nIdempotency-Key: k\r\n"));
        assert!(s.ends_with("Content-Length: 2\r\nConnection: close\r\n\r\n{}"));
    }
}
