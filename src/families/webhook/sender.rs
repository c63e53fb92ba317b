//! Sender checks (catalogue WH-000..WH-012): tminus plays the platform and
//! sends signed deliveries to the target's receiver. A hostile delivery must
//! be rejected with a 4xx and cause no side effect; a valid one, a replay and
//! a sender-style retry must be acknowledged with a 2xx and processed once.

use std::time::Duration;

use super::exec::unix_now;
use crate::context::CheckContext;
use crate::families::common::{describe, read_counter, send};
use crate::families::webhook::plan::{SenderCase, WebhookSenderPlan, WEBHOOK_ID_VAR};
use crate::http::{Exchange, Rendered};
use crate::outcome::{prop, Assertion, PropValue};
use crate::outcome::{Evidence, Outcome};

/// Property names of the sender kinds, as `spec::KINDS` declares them.
pub const REJECTED: &str = "rejected";
pub const NO_SIDE_EFFECT: &str = "no_side_effect";
pub const ACKNOWLEDGED: &str = "acknowledged";
pub const ACK_TIME: &str = "ack_time";
pub const PROCESSED_ONCE: &str = "processed_once";
pub const RESEND_ANSWERED: &str = "resend_answered";
use crate::context::{Scope, UrlPlan};
use crate::signing::{forged_digest, Delivery, Part};

/// How long processing may lag an acknowledgement before the counter is judged.
const SETTLE: Duration = Duration::from_millis(1500);

pub(super) struct Run<'a> {
    pub(super) p: &'a WebhookSenderPlan,
    pub(super) ctx: &'a CheckContext,
    pub(super) evidence: Vec<Evidence>,
}

fn new_id() -> String {
    // No `.`: Standard Webhooks signs `id.ts.body` (catalogue WH-015).
    format!("msg_{}", ulid::Ulid::new())
}

impl Run<'_> {
    pub(super) fn delivery(&self, ts: i64) -> Delivery {
        let id = new_id();
        let mut scope = Scope::new();
        scope.insert(WEBHOOK_ID_VAR.into(), id.clone());
        Delivery {
            id,
            timestamp: ts,
            body: self.p.body.render(&scope).into_bytes(),
        }
    }

    /// A delivery signed over `d`, optionally carrying a different body.
    pub(super) fn request(&self, d: &Delivery, body: Option<&[u8]>) -> Rendered {
        let scope = Scope::new();
        let url = match &self.p.url {
            UrlPlan::Path(t) => format!("{}{}", self.ctx.target.base_url, t.render(&scope)),
            UrlPlan::Absolute(t) => t.render(&scope),
        };
        let mut r = Rendered {
            method: reqwest::Method::POST,
            url,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.unwrap_or(&d.body).to_vec(),
            timeout: self.ctx.target.timeout,
            credential: None,
        };
        for (k, v) in &self.p.headers {
            r.set_header(k, v.render(&scope));
        }
        for (k, v) in self.p.scheme.headers(&self.p.key.0, d, Some(&self.p.event)) {
            r.set_header(&k, v);
        }
        r
    }

    pub(super) fn with_signature(&self, mut r: Rendered, value: String) -> Rendered {
        r.set_header(&self.p.scheme.signature_header, value);
        r
    }

    async fn send(&mut self, r: &Rendered, label: &str) -> Result<Exchange, Outcome> {
        let ex = send(self.ctx, r, label)
            .await
            .map_err(|o| o.with_evidence(std::mem::take(&mut self.evidence)))?;
        self.evidence.push(Evidence::from_exchange(label, &ex));
        Ok(ex)
    }

    pub(super) async fn count(&mut self, label: &str) -> Result<Option<i64>, Outcome> {
        let Some(c) = &self.p.effects else {
            return Ok(None);
        };
        let (n, _) = read_counter(self.ctx, c, &Scope::new(), label).await?;
        Ok(Some(n))
    }

    /// Reads the counter until it moved by `want` (or SETTLE passed), then once
    /// more after a short pause so a late duplicate is still seen.
    async fn delta(&mut self, before: Option<i64>, want: i64) -> Result<Option<i64>, Outcome> {
        let Some(b) = before else { return Ok(None) };
        let end = tokio::time::Instant::now() + SETTLE;
        // A counter that went backwards or wrapped is no evidence.
        let moved = |n: i64| crate::families::common::counter_moved(b, n, None, "of `effects`");
        loop {
            let n = self.count("effects after").await?.unwrap_or(b);
            if moved(n).map_err(Outcome::error)? >= want && want > 0
                || tokio::time::Instant::now() >= end
            {
                break;
            }
            if want == 0 {
                // Nothing should happen: give async processing a moment, once.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let n = self.count("effects after").await?.unwrap_or(b);
                return moved(n).map(Some).map_err(Outcome::error);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let n = self.count("effects after").await?.unwrap_or(b);
        moved(n).map(Some).map_err(Outcome::error)
    }

    /// `processed_once` from the counter's move since `before`: skipped
    /// without `effects:`, else it must have moved by exactly `want`.
    /// `over_hint` explains a move beyond `want` (`: github does not sign …`).
    pub(super) async fn processed(
        &mut self,
        before: Option<i64>,
        want: i64,
        seen: &[String],
        over_hint: &str,
    ) -> Result<Assertion, Outcome> {
        let Some(d) = self.delta(before, want).await? else {
            return Ok(Assertion::skipped(
                PROCESSED_ONCE,
                "not judged: no `effects:` counter configured",
            ));
        };
        Ok(Assertion::check(
            PROCESSED_ONCE,
            d == want,
            format!("the effects counter moved by {want}"),
            format!(
                "processed {d} time(s), expected {want}{} ({})",
                if d > want { over_hint } else { "" },
                seen.join("; ")
            ),
            format!("counter +{want}"),
            format!("counter +{d}"),
        ))
    }

    /// `no_side_effect`: the counter did not move since `before` (skipped
    /// without `effects:`); `what` names the deliveries in the failure and
    /// `seen` (if any) follows it in parentheses.
    pub(super) async fn no_side_effect(
        &mut self,
        before: Option<i64>,
        what: &str,
        seen: &[String],
    ) -> Result<Assertion, Outcome> {
        let seen = if seen.is_empty() {
            String::new()
        } else {
            format!(" ({})", seen.join("; "))
        };
        Ok(match self.delta(before, 0).await? {
            None => Assertion::skipped(
                NO_SIDE_EFFECT,
                "not judged: no `effects:` counter configured",
            ),
            Some(d) => Assertion::check(
                NO_SIDE_EFFECT,
                d == 0,
                "the effects counter did not move",
                format!("{what} still had a side effect: the counter moved by {d}{seen}"),
                "counter +0",
                format!("counter +{d}"),
            ),
        })
    }

    /// Sends each hostile variant and judges two properties: `rejected` (every
    /// one got a reject status) and `no_side_effect` (the counter did not
    /// move). A rejection only shows something when the receiver tells good
    /// from bad: after the hostile ones tminus sends one valid control
    /// delivery, and if that is refused too (a receiver that 404s every path,
    /// a wrong `receiver:`), `rejected` was not exercised.
    async fn expect_rejected(&mut self, variants: Vec<(String, Rendered)>) -> Outcome {
        let before = match self.count("effects before").await {
            Ok(b) => b,
            Err(o) => return o,
        };
        let mut seen = Vec::new();
        let mut not_rejected = None;
        for (label, r) in &variants {
            let ex = match self.send(r, label).await {
                Ok(ex) => ex,
                Err(o) => return o,
            };
            let st = ex.status();
            seen.push(format!("{label}: {}", describe(&ex)));
            if self.p.reject.matches(st) {
                continue;
            }
            let what = if st >= 500 {
                format!("{label} answered {} : a receiver must reject bad input with a 4xx, not fail with a 5xx (a sender retries 5xx)", describe(&ex))
            } else {
                format!("{label} was not rejected: answered {}", describe(&ex))
            };
            not_rejected = Some(Assertion::fail(
                REJECTED,
                what,
                format!("status {}", self.p.reject),
                format!("status {st}"),
            ));
            break;
        }
        let side_effect = match self
            .no_side_effect(before, "rejected deliveries", &seen)
            .await
        {
            Ok(a) => a,
            Err(o) => return o,
        };
        let rejected = match not_rejected {
            Some(a) => a,
            None => {
                let control = self.request(&self.delivery(unix_now()), None);
                let label = "valid control delivery";
                let ex = match self.send(&control, label).await {
                    Ok(ex) => ex,
                    Err(o) => return o,
                };
                if self.p.accept.matches(ex.status()) {
                    Assertion::pass(
                        REJECTED,
                        format!(
                            "{} hostile deliveries rejected: {}; a valid one was accepted ({})",
                            variants.len(),
                            seen.join("; "),
                            describe(&ex)
                        ),
                    )
                } else {
                    Assertion::not_exercised(
                        REJECTED,
                        format!(
                            "the receiver refused a valid control delivery too ({}), so rejecting the hostile ones ({}) shows nothing about how it verifies deliveries: check `receiver:` and the secret",
                            describe(&ex),
                            seen.join("; ")
                        ),
                    )
                }
            }
        };
        Outcome::judged(vec![rejected, side_effect])
            .with_evidence(std::mem::take(&mut self.evidence))
    }

    /// Sends each delivery and judges `acknowledged` (every one got an
    /// accept status), `ack_time` (with `ack`: each acknowledgement within
    /// it; not exercised when nothing was acknowledged) and `processed_once`
    /// (the counter moved by `want`).
    async fn expect_accepted(
        &mut self,
        sends: Vec<(String, Rendered)>,
        want: i64,
        ack: Option<Duration>,
    ) -> Outcome {
        let before = match self.count("effects before").await {
            Ok(b) => b,
            Err(o) => return o,
        };
        let mut seen = Vec::new();
        let mut props = Vec::new();
        let mut refused = None;
        let mut slow = None;
        let mut acknowledged = 0usize;
        for (label, r) in &sends {
            let ex = match self.send(r, label).await {
                Ok(ex) => ex,
                Err(o) => return o,
            };
            seen.push(format!("{label}: {}", describe(&ex)));
            props.push(prop(
                format!("{label}.ack_ms"),
                PropValue::rounded(ex.elapsed.as_secs_f64() * 1000.0, 1),
            ));
            if !self.p.accept.matches(ex.status()) {
                let hint = if ex.status() >= 500 {
                    " (a 5xx makes an at-least-once sender retry forever)"
                } else {
                    ""
                };
                refused.get_or_insert(Assertion::fail(
                    ACKNOWLEDGED,
                    format!("{label} was not accepted: answered {}{hint}", describe(&ex)),
                    format!("status {}", self.p.accept),
                    format!("status {}", ex.status()),
                ));
                continue;
            }
            acknowledged += 1;
            if let Some(limit) = ack.filter(|l| ex.elapsed > *l) {
                slow.get_or_insert(Assertion::fail(
                    ACK_TIME,
                    format!("{label} was acknowledged in {}, over the {} limit: process asynchronously and answer first", crate::fmt_duration(ex.elapsed), crate::fmt_duration(limit)),
                    format!("2xx within {}", crate::fmt_duration(limit)),
                    crate::fmt_duration(ex.elapsed),
                ));
            }
        }
        let mut judged = vec![refused.unwrap_or_else(|| {
            Assertion::pass(ACKNOWLEDGED, format!("accepted: {}", seen.join("; ")))
        })];
        if let Some(limit) = ack {
            judged.push(match slow {
                Some(a) => a,
                // `acknowledged` fails on evidence; the time rests on it.
                None if acknowledged == 0 => {
                    Assertion::skipped(ACK_TIME, "not judged: no delivery was acknowledged")
                }
                None => Assertion::pass(
                    ACK_TIME,
                    format!("acknowledged within {}", crate::fmt_duration(limit)),
                ),
            });
        }
        match self.processed(before, want, &seen, "").await {
            Ok(a) => judged.push(a),
            Err(o) => return o,
        }
        Outcome::judged(judged)
            .with_evidence(std::mem::take(&mut self.evidence))
            .with_properties(props)
    }
}

/// Re-serializes a JSON body differently from how it was written: pretty
/// printed, every non-ASCII character `\u` escaped, a trailing newline.
fn non_canonical(body: &[u8]) -> Option<Vec<u8>> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let pretty = serde_json::to_string_pretty(&v).ok()?;
    let mut out = String::new();
    for c in pretty.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for u in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out.push('\n');
    Some(out.into_bytes())
}

/// One byte changed: the first digit bumped, else the last `}` turned into a space.
fn tamper(body: &[u8]) -> Vec<u8> {
    let mut b = body.to_vec();
    if let Some(i) = b.iter().position(|c| c.is_ascii_digit()) {
        b[i] = if b[i] == b'9' { b'1' } else { b[i] + 1 };
    } else if let Some(last) = b.last_mut() {
        *last = if *last == b' ' { b'x' } else { b' ' };
    } else {
        b.push(b' ');
    }
    b
}

pub async fn run(p: &WebhookSenderPlan, ctx: &CheckContext) -> Outcome {
    let mut r = Run {
        p,
        ctx,
        evidence: Vec::new(),
    };
    let s = &p.scheme;
    let now = unix_now();
    let tol = p.tolerance.as_secs() as i64;
    // `effects:` is required by the planner for the kinds that need it.
    debug_assert!(!p.case.needs_effects() || p.effects.is_some());
    match p.case {
        SenderCase::AcceptsValid => {
            let d = r.delivery(now);
            let req = r.request(&d, None);
            r.expect_accepted(vec![("valid delivery".into(), req)], 1, Some(p.ack_within))
                .await
        }
        SenderCase::AcceptsRawBytes => {
            let d0 = r.delivery(now);
            let Some(raw) = non_canonical(&d0.body) else {
                return Outcome::error(
                    "the body is not JSON, so there is no non-canonical form to send",
                );
            };
            let d = Delivery { body: raw, ..d0 };
            let req = r.request(&d, None);
            r.expect_accepted(
                vec![("non-canonical JSON signed over its raw bytes".into(), req)],
                1,
                None,
            )
            .await
        }
        SenderCase::DedupesReplay => {
            let d = r.delivery(now);
            let req = r.request(&d, None);
            r.expect_accepted(
                vec![
                    ("delivery".into(), req.clone()),
                    ("identical replay".into(), req),
                ],
                1,
                None,
            )
            .await
        }
        SenderCase::DedupesRetry => {
            if !s.signs_timestamp() {
                return Outcome::skipped(format!("not applicable: {} signs no timestamp, so a retry is byte-identical to a replay (see dedupes_replay)", s.name));
            }
            let d = r.delivery(now - 5);
            let first = r.request(&d, None);
            let retry = r.request(
                &Delivery {
                    timestamp: now,
                    ..d.clone()
                },
                None,
            );
            r.expect_accepted(
                vec![
                    ("delivery".into(), first),
                    ("retry: same id, new timestamp and signature".into(), retry),
                ],
                1,
                None,
            )
            .await
        }
        SenderCase::KeyRotation => {
            if !s.supports_rotation() {
                return Outcome::skipped(format!(
                    "not applicable: {} carries one signature per delivery",
                    s.name
                ));
            }
            let mut sends = Vec::new();
            for (label, good_first) in [("new key first", true), ("old key first", false)] {
                let d = r.delivery(now);
                let good = s.digest(&p.key.0, &d);
                let other = forged_digest(s);
                let list = if good_first {
                    vec![good, other]
                } else {
                    vec![other, good]
                };
                let req = r.request(&d, None);
                sends.push((
                    format!("two signatures, {label}"),
                    r.with_signature(req, s.signature_value(&d, &list)),
                ));
            }
            r.expect_accepted(sends, 2, None).await
        }
        SenderCase::RejectsDottedId => {
            if !s.content.contains(&Part::Id) {
                return Outcome::skipped(format!(
                    "not applicable: {} does not sign the delivery id",
                    s.name
                ));
            }
            let d0 = r.delivery(now);
            let d = Delivery {
                id: format!("{}.{now}", d0.id),
                ..d0
            };
            let req = r.request(&d, None);
            r.expect_rejected(vec![(format!("validly signed, id `{}`", d.id), req)])
                .await
        }
        SenderCase::Burst => burst(&mut r, now).await,
        SenderCase::AcceptsHeaderCase => super::header_case::run(&mut r, now).await,
        SenderCase::ConstantTimeCompare => super::constant_time::run(&mut r).await,
        SenderCase::RejectsForged => {
            let d = r.delivery(now);
            let req = r.request(&d, None);
            let v = s.signature_value(&d, &[forged_digest(s)]);
            r.expect_rejected(vec![("forged signature".into(), r.with_signature(req, v))])
                .await
        }
        SenderCase::RejectsTampered => {
            let d = r.delivery(now);
            let req = r.request(&d, Some(&tamper(&d.body)));
            r.expect_rejected(vec![("body changed by one byte after signing".into(), req)])
                .await
        }
        SenderCase::RejectsReserialized => {
            let d = r.delivery(now);
            let Some(other) = non_canonical(&d.body) else {
                return Outcome::error("the body is not JSON, so it cannot be re-serialized");
            };
            if other == d.body {
                return Outcome::error(
                    "the body's re-serialization is byte-identical; use a body with non-ASCII text",
                );
            }
            let req = r.request(&d, Some(&other));
            r.expect_rejected(vec![(
                "re-serialized JSON with the original signature".into(),
                req,
            )])
            .await
        }
        SenderCase::RejectsTruncated => {
            let d = r.delivery(now);
            let digest = s.digest(&p.key.0, &d);
            let variants = s
                .truncated_values(&d, &digest)
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = ["half the signature", "empty signature", "prefix only"]
                        .get(i)
                        .copied()
                        .unwrap_or("truncated");
                    (
                        format!("{label} `{v}`"),
                        r.with_signature(r.request(&d, None), v),
                    )
                })
                .collect();
            r.expect_rejected(variants).await
        }
        SenderCase::RejectsWrongScheme => {
            let d = r.delivery(now);
            let digest = s.digest(&p.key.0, &d);
            let variants = s
                .wrong_scheme_values(&d, &digest)
                .into_iter()
                .map(|v| {
                    let shown = v.replace(&digest, "<valid digest>");
                    (
                        format!("wrong scheme `{shown}`"),
                        r.with_signature(r.request(&d, None), v),
                    )
                })
                .collect();
            r.expect_rejected(variants).await
        }
        SenderCase::RejectsMissingHeaders => {
            let d = r.delivery(now);
            let mut names = vec![s.signature_header.clone()];
            names.extend(s.id_header.clone());
            names.extend(s.timestamp_header.clone());
            let variants = names
                .into_iter()
                .map(|h| {
                    let mut req = r.request(&d, None);
                    req.remove_header(&h);
                    (format!("without {h}"), req)
                })
                .collect();
            r.expect_rejected(variants).await
        }
        SenderCase::RejectsStale => {
            let label = format!("timestamp {} s in the past", tol + 60);
            out_of_tolerance(&mut r, now - tol - 60, label).await
        }
        SenderCase::RejectsFuture => {
            let label = format!("timestamp {} s in the future", tol + 60);
            out_of_tolerance(&mut r, now + tol + 60, label).await
        }
        SenderCase::ReplayNewId => replay_new_id(&mut r, now).await,
    }
}

/// WH-006 / WH-007: a validly signed delivery stamped `ts`, outside the tolerance.
async fn out_of_tolerance(r: &mut Run<'_>, ts: i64, label: String) -> Outcome {
    let s = &r.p.scheme;
    if !s.signs_timestamp() {
        return Outcome::skipped(format!(
            "not applicable: {} signs no timestamp; replay protection rests on the delivery id",
            s.name
        ));
    }
    let d = r.delivery(ts);
    let req = r.request(&d, None);
    r.expect_rejected(vec![(format!("validly signed, {label}"), req)])
        .await
}

/// WH-008, new id: a valid delivery, then the same body and signature
/// headers under a fresh delivery id, as anyone who saw the first one can
/// send. Where the scheme signs the id the signature no longer matches and a
/// 4xx is expected; where it does not (GitHub's `X-GitHub-Delivery`, BOTIX,
/// Shopify) a receiver that dedupes on the id header alone processes it
/// again. Either way the counter must move by exactly one.
async fn replay_new_id(r: &mut Run<'_>, now: i64) -> Outcome {
    let p = r.p;
    // The planner refuses schemes without an id header.
    let Some(id_header) = p.scheme.id_header.clone() else {
        return Outcome::error(format!(
            "{} has no delivery id header to change",
            p.scheme.name
        ));
    };
    let signs_id = p.scheme.content.contains(&Part::Id);
    let before = match r.count("effects before").await {
        Ok(b) => b,
        Err(o) => return o,
    };
    let d = r.delivery(now);
    let first = r.request(&d, None);
    let mut again = first.clone();
    let fresh = new_id();
    again.set_header(&id_header, fresh.clone());
    let ex = match r.send(&first, "delivery").await {
        Ok(ex) => ex,
        Err(o) => return o,
    };
    if !p.accept.matches(ex.status()) {
        // Nothing was processed, so a re-send cannot be a replay of anything.
        let why = format!(
            "the original delivery was not accepted (answered {}), so re-sending it under a new {id_header} replays nothing",
            describe(&ex)
        );
        return Outcome::judged(vec![
            Assertion::not_exercised(RESEND_ANSWERED, why.clone()),
            Assertion::not_exercised(PROCESSED_ONCE, why),
        ])
        .with_evidence(std::mem::take(&mut r.evidence));
    }
    let label = format!("same body and signature, {id_header}: {fresh}");
    let ex2 = match r.send(&again, &label).await {
        Ok(ex) => ex,
        Err(o) => return o,
    };
    let st = ex2.status();
    let rejected = p.reject.matches(st);
    let answered = if rejected || p.accept.matches(st) {
        let how = if rejected { "rejected" } else { "acknowledged" };
        Assertion::pass(
            RESEND_ANSWERED,
            format!(
                "re-sent under a new {id_header}: {how} ({})",
                describe(&ex2)
            ),
        )
    } else {
        let hint = if st >= 500 {
            " (a 5xx makes an at-least-once sender retry it)"
        } else {
            ""
        };
        Assertion::fail(
            RESEND_ANSWERED,
            format!(
                "the delivery re-sent under a new {id_header} answered {}{hint}: expected a reject ({}) or an acknowledgement without effect ({})",
                describe(&ex2),
                p.reject,
                p.accept
            ),
            format!("status {} or {}", p.reject, p.accept),
            format!("status {st}"),
        )
    };
    let seen = format!(
        "delivery {}: {}; re-sent as {fresh}: {}",
        d.id,
        describe(&ex),
        describe(&ex2)
    );
    let over_hint = if signs_id {
        String::new()
    } else {
        format!(": {} does not sign {id_header}, so dedupe must not rest on it alone (key on the signed body, e.g. its event id or the signature)", p.scheme.name)
    };
    let once = match r
        .processed(before, 1, std::slice::from_ref(&seen), &over_hint)
        .await
    {
        Ok(a) => a,
        Err(o) => return o,
    };
    Outcome::judged(vec![answered, once]).with_evidence(std::mem::take(&mut r.evidence))
}

/// WH-014: `count` valid deliveries spread evenly over `over`, sent
/// concurrently as their slot comes up; judged on statuses
/// (`acknowledged`), the p95 acknowledgement time of the accepted ones
/// (`ack_time`) and the side-effect count (`processed_once`).
async fn burst(r: &mut Run<'_>, now: i64) -> Outcome {
    let p = r.p;
    let before = match r.count("effects before").await {
        Ok(b) => b,
        Err(o) => return o,
    };
    r.ctx.note(format!(
        "sending {} deliveries over {}",
        p.count,
        crate::fmt_duration(p.over)
    ));
    let step = p.over / p.count.max(1);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..p.count {
        let req = r.request(&r.delivery(now), None);
        let client = r.ctx.client.clone();
        tasks.spawn(async move {
            tokio::time::sleep(step * i).await;
            client.send(&req).await
        });
    }
    let mut acks = Vec::with_capacity(p.count as usize);
    let mut bad = Vec::new();
    let mut failed = 0usize;
    // Each send has its own timeout, so joining is bounded too.
    while let Some(res) = tasks.join_next().await {
        let problem = match res {
            Ok(Ok(ex)) if p.accept.matches(ex.status()) => {
                acks.push(ex.elapsed);
                None
            }
            Ok(Ok(ex)) => Some(describe(&ex)),
            Ok(Err(e)) => Some(e.to_string()),
            Err(e) => Some(format!("send task failed: {e}")),
        };
        if let Some(pr) = problem {
            failed += 1;
            if bad.len() < 5 {
                bad.push(pr);
            }
        }
    }
    let p95 = super::timing::p95(&acks);
    let mut props = vec![
        prop("deliveries", p.count),
        prop("acknowledged", acks.len()),
    ];
    if let Some(p95) = p95 {
        props.push(prop(
            "ack_p95_ms",
            PropValue::rounded(p95.as_secs_f64() * 1000.0, 1),
        ));
    }
    let acknowledged = Assertion::check(
        ACKNOWLEDGED,
        bad.is_empty(),
        format!("all {} deliveries acknowledged", p.count),
        format!(
            "{} of {} deliveries were not acknowledged with {}; first: {}",
            failed,
            p.count,
            p.accept,
            bad.join(", ")
        ),
        format!("all {}", p.accept),
        bad.join(", "),
    );
    let ack_time = match p95 {
        None => Assertion::skipped(ACK_TIME, "not judged: no delivery was acknowledged"),
        Some(p95) => Assertion::check(
            ACK_TIME,
            super::timing::ack_rule(&acks, p.ack_within) == Some(true),
            format!(
                "{} acknowledgements in {}: p95 {}",
                acks.len(),
                crate::fmt_duration(p.over),
                crate::fmt_duration(p95)
            ),
            format!(
                "p95 acknowledgement {} over the {} limit for {} deliveries in {}: acknowledge first, process from a queue",
                crate::fmt_duration(p95),
                crate::fmt_duration(p.ack_within),
                p.count,
                crate::fmt_duration(p.over)
            ),
            format!("p95 <= {}", crate::fmt_duration(p.ack_within)),
            crate::fmt_duration(p95),
        ),
    };
    let once = match r
        .processed(
            before,
            i64::from(p.count),
            &[format!("{} deliveries acknowledged", acks.len())],
            "",
        )
        .await
    {
        Ok(a) => a,
        Err(o) => return o,
    };
    Outcome::judged(vec![acknowledged, ack_time, once]).with_properties(props)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_canonical_differs_and_parses_back() {
        let b = r#"{"a":1,"t":"caf\u00e9 é"}"#.as_bytes();
        let n = non_canonical(b).unwrap();
        assert_ne!(n, b.to_vec());
        assert!(n.ends_with(b"\n") && n.is_ascii());
        let v1: serde_json::Value = serde_json::from_slice(b).unwrap();
        let v2: serde_json::Value = serde_json::from_slice(&n).unwrap();
        assert_eq!(v1, v2);
        assert_eq!(tamper(b"{\"amount\":100}"), b"{\"amount\":200}".to_vec());
    }
}
