//! The single-shot trace checks: each sends a handful of requests and judges
//! the ids on their responses (TRC-001, 003, 004, 007, 008, 009).

use super::exec::{format_problem, trace_id};
use super::traceparent::{self, random_parent_id, random_trace_id};
use crate::context::CheckContext;
use crate::context::{BodyPlan, RequestPlan, Scope, Template, UrlPlan};
use crate::families::common::{clip, describe, evidence as ev_of, send};
use crate::families::trace::plan::{
    AsyncStatusPlan, InvalidCase, InvalidIgnoredPlan, PresentPlan, PropagatedPlan, RequestIdPlan,
    StatusJoin,
};
use crate::http::{Exchange, Rendered};
use crate::outcome::{prop, Assertion};
use crate::outcome::{Evidence, Outcome};

fn render(ctx: &CheckContext, req: &RequestPlan) -> Rendered {
    ctx.target.render(req, &Scope::new())
}

/// TRC-009: an id on every response of the sample.
pub async fn present(p: &PresentPlan, ctx: &CheckContext) -> Outcome {
    let mut evidence = Vec::new();
    let mut missing = Vec::new();
    let mut off_sample = Vec::new();
    let mut seen = Vec::new();
    for probe in &p.probes {
        let mut r = render(ctx, &probe.request);
        if let Some(h) = &probe.drop_header {
            r.remove_header(h);
        }
        let ex = match send(ctx, &r, &probe.name).await {
            Ok(ex) => ex,
            Err(o) => return o.with_evidence(evidence),
        };
        evidence.push(ev_of(&probe.name, &ex));
        let id = p
            .id_headers
            .iter()
            .find_map(|h| ex.response.header(h).map(|v| (h.clone(), v.to_owned())));
        match id {
            Some((h, v)) => seen.push(format!(
                "{} -> {} ({h}: {})",
                probe.name,
                ex.status(),
                clip(&v)
            )),
            None => missing.push(format!("{} -> {}", probe.name, ex.status())),
        }
        if let Some(want) = &probe.status {
            if !want.matches(ex.status()) {
                off_sample.push(format!(
                    "{} answered {} instead of {want}",
                    probe.name,
                    describe(&ex)
                ));
            }
        }
    }
    let props = vec![prop("responses", p.probes.len())];
    if !missing.is_empty() {
        let mut msg = format!(
            "{} of {} responses carry none of {}: {}",
            missing.len(),
            p.probes.len(),
            p.id_headers.join(", "),
            missing.join("; ")
        );
        if !seen.is_empty() {
            msg.push_str(&format!(" (ids seen: {})", seen.join("; ")));
        }
        return Outcome::fail(
            msg,
            format!("one of {} on every response", p.id_headers.join(", ")),
            format!("missing on {}", missing.join(", ")),
        )
        .with_evidence(evidence)
        .with_properties(props);
    }
    if !off_sample.is_empty() {
        // The ids were there, but the sample did not cover the statuses it was
        // meant to: the suite does not fit this target, so it cannot judge.
        return Outcome::error(format!(
            "the sample did not provoke the intended statuses: {}",
            off_sample.join("; ")
        ))
        .with_evidence(evidence)
        .with_properties(props);
    }
    Outcome::pass(format!("every response carries an id: {}", seen.join("; ")))
        .with_evidence(evidence)
        .with_properties(props)
}

/// Sends `r` and insists on the planned status: a probe that got another
/// answer cannot judge `what`, which is an error rather than a verdict.
async fn send_judgeable(
    ctx: &CheckContext,
    p: &PropagatedPlan,
    r: &Rendered,
    label: &str,
    what: &str,
) -> Result<(Exchange, Vec<Evidence>), Outcome> {
    let ex = send(ctx, r, label).await?;
    let ev = vec![ev_of(label, &ex)];
    if !p.status.matches(ex.status()) {
        return Err(Outcome::error(format!(
            "the request answered {} instead of {}, so {what} cannot be judged",
            describe(&ex),
            p.status
        ))
        .with_evidence(ev));
    }
    Ok((ex, ev))
}

/// What came back for a sent trace `t` (parent `parent`): per response
/// header, whether it continues the trace, with which version and parent-id.
struct Returned {
    /// Headers of `return_headers` present on the response.
    listed: Vec<String>,
    /// `header: value carries trace-id X` for headers that started a new trace.
    new_trace: Vec<String>,
    /// Continued traceparent-shaped headers whose version is not `00`.
    bad_version: Vec<String>,
    /// Continued traceparent-shaped headers, and whether the parent-id is new.
    parents: Vec<(String, bool)>,
    /// Continued headers (listed ones only).
    carried: Vec<String>,
}

/// Reads the trace headers of `ex`: the listed `return_headers`, and with
/// `w3c_too` also `traceparent`/`traceresponse` (judged for their version
/// even when not listed).
fn returned(
    ex: &Exchange,
    return_headers: &[String],
    w3c_too: bool,
    t: &str,
    parent: &str,
) -> Returned {
    let mut headers: Vec<String> = return_headers.to_vec();
    if w3c_too {
        for w3c in ["traceparent", "traceresponse"] {
            if !headers.iter().any(|h| h.eq_ignore_ascii_case(w3c)) {
                headers.push(w3c.into());
            }
        }
    }
    let mut out = Returned {
        listed: Vec::new(),
        new_trace: Vec::new(),
        bad_version: Vec::new(),
        parents: Vec::new(),
        carried: Vec::new(),
    };
    for h in &headers {
        let Some(v) = ex.response.header(h) else {
            continue;
        };
        let listed = return_headers.iter().any(|r| r.eq_ignore_ascii_case(h));
        if listed {
            out.listed.push(h.clone());
        }
        match traceparent::fields(v) {
            Some((rt, rp)) => {
                if rt != t {
                    out.new_trace.push(format!(
                        "{h}: {} carries trace-id {rt} (a new trace)",
                        clip(v)
                    ));
                    continue;
                }
                let version = v.trim_matches([' ', '\t']).get(..2).unwrap_or_default();
                if version != "00" {
                    out.bad_version.push(format!(
                        "{h}: {} has version {version} instead of 00",
                        clip(v)
                    ));
                }
                let fresh = rp != parent && !rp.bytes().all(|b| b == b'0');
                out.parents.push((
                    if fresh {
                        format!("{h}: parent-id {rp}")
                    } else {
                        format!("{h}: {} keeps parent-id {rp} instead of a new one", clip(v))
                    },
                    fresh,
                ));
                if listed {
                    out.carried.push(h.clone());
                }
            }
            None if v.trim() == t => {
                if listed {
                    out.carried.push(h.clone());
                }
            }
            None if listed => out
                .new_trace
                .push(format!("{h}: {} (a new trace)", clip(v))),
            None => out
                .bad_version
                .push(format!("{h}: {} is not traceparent-shaped", clip(v))),
        }
    }
    out
}

impl Returned {
    /// `id_returned`, `trace_id_continued` and `new_parent_id` (and with
    /// `versions`, `version_00`): continuation and the parent-id are only
    /// judged on a header that came back.
    fn judge(
        &self,
        return_headers: &[String],
        sent: &str,
        t: &str,
        resp: &str,
        versions: bool,
    ) -> Vec<Assertion> {
        let names = return_headers.join(", ");
        let none = self.listed.is_empty() && self.new_trace.is_empty();
        // A target that returns no trace header lacks the feature: that is
        // `id_returned`'s verdict (a WARN under `standard`, where W3C does
        // not require echoing, a FAIL under `botix`), never an error (issue
        // 22 case 6); what rests on it is not judged, and the message says
        // how to make it observable.
        let mut out = vec![Assertion::check(
            "id_returned",
            !self.listed.is_empty(),
            format!("{} on the response", self.listed.join(", ")),
            format!(
                "sent traceparent {sent}, response {resp}: none of {names} in the response, so whether the trace is continued is not observable; to make it so, list in `return_headers` a header the target does send with the trace id (traceresponse, Trace-Id, ...), or judge propagation downstream (`webhook.sink_trace` with a sink the target calls)"
            ),
            format!("one of {names}"),
            "none",
        )];
        let unexercised = |what: &str| {
            format!("not judged: none of {names} came back (response {resp}), so {what} is not observable (see id_returned)")
        };
        if none {
            out.push(Assertion::skipped(
                "trace_id_continued",
                unexercised("whether the trace-id is kept"),
            ));
        } else {
            out.push(Assertion::check(
                "trace_id_continued",
                self.new_trace.is_empty() && !self.carried.is_empty(),
                format!(
                    "trace-id {t} came back in {} ({resp})",
                    self.carried.join(", ")
                ),
                format!(
                    "sent traceparent {sent}, response {resp}: {}",
                    self.new_trace.join("; ")
                ),
                format!("trace-id {t} in {}", return_headers.join(" / ")),
                self.new_trace.join("; "),
            ));
        }
        if versions {
            out.push(if none {
                Assertion::skipped("version_00", unexercised("its version"))
            } else if self.parents.is_empty() && self.bad_version.is_empty() {
                // The trace was not continued (that fails above): no version to judge.
                Assertion::skipped(
                    "version_00",
                    "not judged: no continued traceparent-shaped header came back",
                )
            } else {
                Assertion::check(
                    "version_00",
                    self.bad_version.is_empty(),
                    "every continued traceparent-shaped header has version 00",
                    format!(
                        "sent higher-version traceparent {sent}, response {resp}: {}",
                        self.bad_version.join("; ")
                    ),
                    "version 00",
                    self.bad_version.join("; "),
                )
            });
        }
        let stale: Vec<&str> = self
            .parents
            .iter()
            .filter(|(_, fresh)| !fresh)
            .map(|(m, _)| m.as_str())
            .collect();
        out.push(if none {
            Assertion::skipped("new_parent_id", unexercised("a continued parent-id"))
        } else if self.carried.is_empty() && self.parents.is_empty() {
            // A property that rests on one that failed is not judged: the
            // check already fails on evidence.
            Assertion::skipped("new_parent_id", "not judged: the trace was not continued")
        } else if self.parents.is_empty() {
            Assertion::skipped(
                "new_parent_id",
                format!(
                    "not applicable: {} carries no parent-id",
                    self.carried.join(", ")
                ),
            )
        } else {
            Assertion::check(
                "new_parent_id",
                stale.is_empty(),
                format!(
                    "new parent-id: {}",
                    self.parents
                        .iter()
                        .map(|(m, _)| m.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                format!(
                    "sent traceparent {sent}, response {resp}: {}",
                    stale.join("; ")
                ),
                "a new parent-id",
                stale.join("; "),
            )
        });
        out
    }
}

/// TRC-001: a fresh traceparent's trace-id comes back with a new parent id.
pub async fn propagated(p: &PropagatedPlan, ctx: &CheckContext) -> Outcome {
    let (t, parent) = (random_trace_id(), random_parent_id());
    let sent = traceparent::format(&t, &parent);
    let mut r = render(ctx, &p.request);
    r.set_header("traceparent", &sent);
    let (ex, ev) = match send_judgeable(ctx, p, &r, "with traceparent", "propagation").await {
        Ok(x) => x,
        Err(o) => return o,
    };
    let back = returned(&ex, &p.return_headers, false, &t, &parent);
    Outcome::judged(back.judge(&p.return_headers, &sent, &t, &describe(&ex), false))
        .with_evidence(ev)
}

/// TRC-004: a higher-version traceparent with an extra field is continued (same
/// trace-id), and whatever traceparent-shaped header comes back speaks version
/// `00`, the only version this server can produce (W3C Trace Context §Versioning).
pub async fn version_downgrade(p: &PropagatedPlan, ctx: &CheckContext) -> Outcome {
    let (t, parent) = (random_trace_id(), random_parent_id());
    let sent = format!("01-{t}-{parent}-01-xyz");
    let mut r = render(ctx, &p.request);
    r.remove_header("tracestate");
    r.set_header("traceparent", &sent);
    let (ex, ev) = match send_judgeable(ctx, p, &r, "version 01", "the version downgrade").await {
        Ok(x) => x,
        Err(o) => return o,
    };
    // The W3C headers are judged for their version even when not listed in
    // `return_headers`: a response traceparent/traceresponse must be version 00.
    let back = returned(&ex, &p.return_headers, true, &t, &parent);
    Outcome::judged(back.judge(&p.return_headers, &sent, &t, &describe(&ex), true))
        .with_evidence(ev)
}

/// TRC-003: every invalid traceparent is ignored: answered as usual
/// (`answered`), the trace restarted with a new well-formed id
/// (`restarted`, judged only on cases whose response carried the id) and
/// the invalid value not echoed (`not_echoed`).
pub async fn invalid_ignored(p: &InvalidIgnoredPlan, ctx: &CheckContext) -> Outcome {
    let mut evidence = Vec::new();
    let mut refused = Vec::new();
    let mut continued = Vec::new();
    let mut unjudged = Vec::new();
    let mut echoes = Vec::new();
    // Responses that carried a trace id: without any, the target shows no
    // tracing at all, and "ignored" is indistinguishable from "never read".
    let mut with_id = 0usize;
    for case in &p.cases {
        let (t, parent) = (random_trace_id(), random_parent_id());
        let (tp, ts) = case.headers(&t, &parent);
        let mut r = render(ctx, &p.request);
        r.remove_header("traceparent");
        r.remove_header("tracestate");
        if let Some(v) = &tp {
            r.set_header("traceparent", v);
        }
        if let Some(v) = &ts {
            r.set_header("tracestate", v);
        }
        let label = case.name();
        let ex = match send(ctx, &r, label).await {
            Ok(ex) => ex,
            Err(o) => return o.with_evidence(evidence),
        };
        evidence.push(ev_of(label, &ex));
        let sent = tp.clone().or(ts.clone()).unwrap_or_default();
        let echoed: Vec<&str> = ex
            .response
            .headers
            .iter()
            .filter(|(_, v)| !sent.is_empty() && v.contains(sent.as_str()))
            .map(|(k, _)| k.as_str())
            .collect();
        if !echoed.is_empty() {
            echoes.push(format!(
                "{label}: the invalid value {sent} is echoed in {} ({})",
                echoed.join(", "),
                describe(&ex)
            ));
        }
        if !p.status.matches(ex.status()) {
            refused.push(format!(
                "{label} ({sent}): answered {} instead of {}",
                describe(&ex),
                p.status
            ));
            // `answered` fails on it; whether it restarted is not judged.
            continue;
        }
        let Some(id) = trace_id(&ex, &p.trace_header) else {
            unjudged.push(format!(
                "{label} (no {} on {})",
                p.trace_header,
                describe(&ex)
            ));
            continue;
        };
        with_id += 1;
        if let Some(why) = format_problem(&id, p.id_format) {
            continued.push(format!("{label} ({sent}): {} {why}", p.trace_header));
            continue;
        }
        // The trace-id the invalid value carried, in any case: reusing it in
        // any spelling means the value was not ignored.
        let invalid_id = match case {
            InvalidCase::ZeroTraceId => "0".repeat(32),
            InvalidCase::ShortTraceId => t[..31].to_owned(),
            InvalidCase::TracestateOnly => String::new(),
            _ => t.clone(),
        };
        if !invalid_id.is_empty() && id.eq_ignore_ascii_case(&invalid_id) {
            continued.push(format!(
                "{label} ({sent}): the trace continued with {} {id} instead of a new trace ({})",
                p.trace_header,
                describe(&ex)
            ));
        }
    }
    let n = p.cases.len();
    // A target that returns no trace id lacks the feature the restart is
    // observed by: `id_returned` says so (WARN under `standard`, FAIL under
    // `botix`, whose contract is a Trace-Id on every response), and what
    // rests on it is not judged (issue 22 case 6: never an error).
    let id_returned = if unjudged.is_empty() && with_id == 0 {
        // Every case was refused: `answered` fails on it, no response to read.
        Assertion::skipped(
            "id_returned",
            "not judged: every invalid traceparent was refused (see answered)",
        )
    } else if unjudged.is_empty() {
        Assertion::pass(
            "id_returned",
            format!(
                "{} on every answered response ({with_id} of {n})",
                p.trace_header
            ),
        )
    } else {
        Assertion::fail(
            "id_returned",
            format!(
                "{} of {n} responses carry no {}, so whether the target restarts the trace is not observable for them: {}; to make it so, set `trace_header` to the header the target returns its trace id in",
                unjudged.len(),
                p.trace_header,
                unjudged.join("; ")
            ),
            format!("{} on every response", p.trace_header),
            format!("missing on {}", unjudged.len()),
        )
    };
    let no_tracing = (with_id == 0).then(|| {
        format!(
            "not judged: no response carried {}, so whether the target reads traceparent at all (let alone ignores invalid ones) is not observable (see id_returned)",
            p.trace_header
        )
    });
    let answered = match &no_tracing {
        Some(why) if refused.is_empty() => Assertion::skipped("answered", why.clone()),
        _ => Assertion::check(
            "answered",
            refused.is_empty(),
            format!("{n} invalid traceparents answered {}", p.status),
            format!(
                "{} of {n} invalid traceparents were not ignored: {}",
                refused.len(),
                refused.join("; ")
            ),
            p.status.to_string(),
            refused.first().cloned().unwrap_or_default(),
        ),
    };
    let restarted = if !continued.is_empty() {
        Assertion::fail(
            "restarted",
            format!(
                "{} of {n} invalid traceparents were not ignored: {}",
                continued.len(),
                continued.join("; ")
            ),
            format!(
                "a new, well-formed {} for every invalid traceparent",
                p.trace_header
            ),
            continued[0].clone(),
        )
    } else if with_id == 0 {
        // Every case was refused (`answered` fails) or carried no id
        // (`id_returned` fails): none shows a restart.
        Assertion::skipped(
            "restarted",
            "not judged: no invalid traceparent was answered as usual with a trace id",
        )
    } else {
        Assertion::pass(
            "restarted",
            format!(
                "{with_id} of {n} invalid traceparents each started a new, well-formed trace ({} refused, judged by `answered`; {} without an id, judged by `id_returned`)",
                refused.len(),
                unjudged.len()
            ),
        )
    };
    let not_echoed = match &no_tracing {
        Some(why) if echoes.is_empty() => Assertion::skipped("not_echoed", why.clone()),
        _ => Assertion::check(
            "not_echoed",
            echoes.is_empty(),
            "no invalid value echoed in a response header",
            echoes.join("; "),
            "invalid values not echoed",
            echoes.first().cloned().unwrap_or_default(),
        ),
    };
    Outcome::judged(vec![answered, restarted, not_echoed, id_returned])
        .with_evidence(evidence)
        .with_properties(vec![prop("cases", n)])
}

/// TRC-007: a caller's request id is handled safely. `not_reflected`:
/// overlong and hostile ids never come back raw (headers or body);
/// `well_formed_reply`: any id returned is at most `max_length`
/// characters matching `sanitized_pattern`, or the caller's own well-formed
/// id (replacing a caller's id with a fresh well-formed one, as
/// asgi-correlation-id does for non-UUIDs, meets it); `echoed` (SHOULD): a
/// well-formed id comes back unchanged. A response that carries no id at
/// all exercises neither MUST property.
pub async fn request_id_hygiene(p: &RequestIdPlan, ctx: &CheckContext) -> Outcome {
    let uuid = uuid::Uuid::new_v4();
    // A plain UUIDv4: libraries that validate caller ids (asgi-correlation-id)
    // keep it, so an echo is possible at all.
    let well_formed = uuid.to_string();
    let mut long = format!("tminus-{uuid}-");
    while long.len() < p.long_length {
        long.push('a');
    }
    // RFC 9110 forbids CR and LF in a field value and the HTTP client refuses
    // to send them; TAB, markup and obs-text (non-ASCII) are the hostile bytes
    // a compliant client can still deliver.
    let hostile = format!("tminus-{uuid}\t<script>x</script>;\u{e9}\u{7e}\"");
    let mut evidence = Vec::new();
    let mut reflected = Vec::new();
    let mut malformed = Vec::new();
    let mut answered_with_id = 0usize;
    let mut echoed = None;
    for (label, value) in [
        ("well-formed", &well_formed),
        ("overlong", &long),
        ("hostile", &hostile),
    ] {
        let mut r = render(ctx, &p.request);
        r.set_header(&p.header, value.as_str());
        let ex = match send(ctx, &r, label).await {
            Ok(ex) => ex,
            Err(o) => return o.with_evidence(evidence),
        };
        evidence.push(ev_of(label, &ex));
        let back = ex.response.header(&p.header).map(str::to_owned);
        if back.is_some() {
            answered_with_id += 1;
        }
        if label == "well-formed" {
            if !p.status.matches(ex.status()) {
                return Outcome::error(format!(
                    "the request answered {} instead of {}, so request ids cannot be judged",
                    describe(&ex),
                    p.status
                ))
                .with_evidence(evidence);
            }
            echoed = Some(match &back {
                Some(b) if b == value => {
                    Assertion::pass("echoed", format!("well-formed {} {value} echoed", p.header))
                }
                Some(b) => Assertion::fail(
                    "echoed",
                    format!("well-formed {} {value} came back as {}", p.header, clip(b)),
                    value.clone(),
                    clip(b),
                ),
                None => Assertion::fail(
                    "echoed",
                    format!(
                        "no {} on the response to a well-formed one ({})",
                        p.header,
                        describe(&ex)
                    ),
                    value.clone(),
                    "absent",
                ),
            });
            if let Some(b) = back.as_ref().filter(|b| *b != value) {
                if b.len() > p.max_length || !p.sanitized.is_match(b) {
                    malformed.push(format!(
                        "well-formed {} {value} was replaced by {}, not a well-formed id",
                        p.header,
                        clip(b)
                    ));
                }
            }
            continue;
        }
        let reflected_in: Vec<&str> = ex
            .response
            .headers
            .iter()
            .filter(|(_, v)| v.contains(value.as_str()))
            .map(|(k, _)| k.as_str())
            .collect();
        if !reflected_in.is_empty() {
            reflected.push(format!(
                "{label} {} ({}) reflected raw in {} ({})",
                p.header,
                clip(value),
                reflected_in.join(", "),
                describe(&ex)
            ));
        } else if ex.response.text().contains(value.as_str()) {
            reflected.push(format!(
                "{label} {} ({}) reflected raw in the body ({})",
                p.header,
                clip(value),
                describe(&ex)
            ));
        }
        if let Some(b) = &back {
            if b.len() > p.max_length || !p.sanitized.is_match(b) {
                malformed.push(format!(
                    "{label} {} came back as {} (want at most {} characters matching {})",
                    p.header,
                    clip(b),
                    p.max_length,
                    p.sanitized
                ));
            }
        }
    }
    let echoed = match echoed {
        Some(_) if !p.expect_echo => {
            Assertion::skipped("echoed", "not judged: `expect_echo: false`")
        }
        Some(a) => a,
        None => Assertion::not_exercised("echoed", "the well-formed id was not sent"),
    };
    let judged = if answered_with_id == 0 {
        // The target returns no request id at all: what it does with a
        // caller's id is not observable. `echoed` (a SHOULD: no spec
        // requires the echo) carries that as a warning with the way to make
        // it observable; the MUSTs rest on a returned id (issue 22 case 6).
        let why = format!(
            "not judged: no response carried {}, so how the target handles a caller's id is not observable (see echoed)",
            p.header
        );
        let not_reflected = if reflected.is_empty() {
            Assertion::skipped("not_reflected", why.clone())
        } else {
            Assertion::fail(
                "not_reflected",
                format!("{} hygiene: {}", p.header, reflected.join("; ")),
                "overlong and hostile ids replaced or sanitized",
                reflected.first().cloned().unwrap_or_default(),
            )
        };
        vec![
            not_reflected,
            Assertion::skipped("well_formed_reply", why),
            Assertion::fail(
                "echoed",
                format!(
                    "no response carried {}: how the target handles a caller's request id is not observable; to make it so, set `header` to the request-id header the target does return",
                    p.header
                ),
                format!("{} on the responses", p.header),
                "none",
            ),
        ]
    } else {
        vec![
            Assertion::check(
                "not_reflected",
                reflected.is_empty(),
                "overlong and hostile ids were not reflected raw",
                format!("{} hygiene: {}", p.header, reflected.join("; ")),
                "overlong and hostile ids replaced or sanitized",
                reflected.first().cloned().unwrap_or_default(),
            ),
            Assertion::check(
                "well_formed_reply",
                malformed.is_empty(),
                format!(
                    "every {} returned is the caller's well-formed id or a well-formed one (at most {} characters)",
                    p.header, p.max_length
                ),
                format!("{} hygiene: {}", p.header, malformed.join("; ")),
                format!("at most {} characters matching {}", p.max_length, p.sanitized),
                malformed.first().cloned().unwrap_or_default(),
            ),
            echoed,
        ]
    };
    Outcome::judged(judged).with_evidence(evidence)
}

/// Same scheme, host and port (`http://h:1/x` -> `http://h:1`).
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next()?;
    Some(format!(
        "{}://{}",
        scheme.to_ascii_lowercase(),
        host.to_ascii_lowercase()
    ))
}

/// TRC-008: the 202's status URL (`status_monitor`) answers with the
/// starting request's trace id (`trace_id_joined`); the join is not
/// exercised when there is no status URL to follow or no id to join by.
pub async fn async_status(p: &AsyncStatusPlan, ctx: &CheckContext) -> Outcome {
    let r = render(ctx, &p.request);
    let start = match send(ctx, &r, "start").await {
        Ok(ex) => ex,
        Err(o) => return o,
    };
    let mut evidence = vec![ev_of("start", &start)];
    let no_monitor = |msg: String, expected: &str, evidence: Vec<Evidence>| {
        Outcome::judged(vec![
            Assertion::fail("status_monitor", msg.clone(), expected, msg.clone()),
            // `status_monitor` fails on evidence; the join rests on it.
            Assertion::skipped(
                "trace_id_joined",
                format!("not judged: no status resource to join ({msg})"),
            ),
        ])
        .with_evidence(evidence)
    };
    if !p.status.matches(start.status()) {
        return no_monitor(
            format!("the async request answered {}", describe(&start)),
            &format!("{} with Location", p.status),
            evidence,
        );
    }
    let Some(location) = start.response.header("location").map(str::to_owned) else {
        return no_monitor(
            format!("{} without a Location status URL", describe(&start)),
            "a Location header",
            evidence,
        );
    };
    let t0 = trace_id(&start, &p.trace_header);
    let url = if location.starts_with("http://") || location.starts_with("https://") {
        location.clone()
    } else if location.starts_with('/') {
        format!("{}{location}", ctx.target.base_url)
    } else {
        format!("{}/{location}", ctx.target.base_url)
    };
    // Suite headers (credentials) only go back to the target's own origin.
    if origin(&url) != origin(&ctx.target.base_url) {
        return Outcome::error(format!(
            "Location {} points outside the target {}; not following it with the suite's headers",
            clip(&location),
            ctx.target.base_url
        ))
        .with_evidence(evidence);
    }
    let poll = RequestPlan {
        method: reqwest::Method::GET,
        url: UrlPlan::Absolute(Template::literal(url)),
        headers: Vec::new(),
        query: Vec::new(),
        body: BodyPlan::None,
        timeout: None,
    };
    let mut pr = render(ctx, &poll);
    if let Some(t0) = t0
        .as_deref()
        .filter(|t| p.send_traceparent && traceparent::is_w3c_trace_id(t))
    {
        pr.set_header("traceparent", traceparent::format(t0, &random_parent_id()));
    }
    let status_ex: Exchange = match send(ctx, &pr, "status").await {
        Ok(ex) => ex,
        Err(o) => return o.with_evidence(evidence),
    };
    evidence.push(ev_of("status", &status_ex));
    if !p.poll_status.matches(status_ex.status()) {
        return no_monitor(
            format!(
                "the status URL {} answered {} (start: {})",
                clip(&location),
                describe(&status_ex),
                describe(&start)
            ),
            &format!("{} from the status URL", p.poll_status),
            evidence,
        );
    }
    let monitor = Assertion::pass(
        "status_monitor",
        format!(
            "{} with Location {}, which answered {}",
            describe(&start),
            clip(&location),
            describe(&status_ex)
        ),
    );
    // No id on the start: the target lacks what the join needs. A failure
    // of `trace_id_joined` (SHOULD under `standard`, a WARN; MUST under
    // `botix`), not an error (issue 22 case 6).
    let Some(t0) = t0 else {
        let msg = format!(
            "no {} on the async response {}, so the status resource cannot be joined to its trace (not observable); to make it so, return the trace id on the 202, or set `trace_header` to the header that carries it",
            p.trace_header,
            describe(&start)
        );
        return Outcome::judged(vec![
            monitor,
            Assertion::fail(
                "trace_id_joined",
                msg,
                format!("{} on the async response", p.trace_header),
                "none",
            ),
        ])
        .with_evidence(evidence);
    };
    let (place, got) = match &p.join {
        StatusJoin::Json(path) => (
            format!("body {path}"),
            status_ex
                .response
                .json()
                .and_then(|d| path.select(&d))
                .map(|v| match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                }),
        ),
        StatusJoin::Header(h) => (format!("header {h}"), trace_id(&status_ex, h)),
    };
    let seen = got.as_deref().map(clip).unwrap_or_else(|| "nothing".into());
    let joined = Assertion::check(
        "trace_id_joined",
        got.as_deref() == Some(t0.as_str()),
        format!(
            "status URL {} carries trace id {t0} in {place}",
            clip(&location)
        ),
        format!(
            "the async request {} has {} {t0}, but the status URL {} ({}) has {seen} in {place}",
            describe(&start),
            p.trace_header,
            clip(&location),
            describe(&status_ex)
        ),
        format!("{t0} in the status resource's {place}"),
        seen.clone(),
    );
    Outcome::judged(vec![monitor, joined]).with_evidence(evidence)
}
