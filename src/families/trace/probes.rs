//! The single-shot trace checks: each sends a handful of requests and judges
//! the ids on their responses (TRC-001, 003, 004, 007, 008, 009).

use super::exec::{format_problem, trace_id};
use super::traceparent::{self, random_parent_id, random_trace_id};
use crate::families::common::{clip, describe, evidence as ev_of, send};
use crate::families::trace::plan::{
    AsyncStatusPlan, InvalidCase, InvalidIgnoredPlan, PresentPlan, PropagatedPlan, RequestIdPlan,
    StatusJoin,
};
use crate::families::{CheckContext, Evidence, Outcome};
use crate::http::{Exchange, Rendered};
use crate::outcome::prop;
use crate::plan::{BodyPlan, RequestPlan, Scope, Template, UrlPlan};

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
    let mut problems = Vec::new();
    let mut carried = Vec::new();
    for h in &p.return_headers {
        let Some(v) = ex.response.header(h) else {
            continue;
        };
        match traceparent::fields(v) {
            Some((rt, rp)) => {
                if rt != t {
                    problems.push(format!("{h}: {} carries trace-id {rt}", clip(v)));
                } else if rp == parent || rp.bytes().all(|b| b == b'0') {
                    problems.push(format!(
                        "{h}: {} keeps parent-id {rp} instead of a new one",
                        clip(v)
                    ));
                } else {
                    carried.push(h.clone());
                }
            }
            None if v.trim() == t => carried.push(h.clone()),
            None => problems.push(format!("{h}: {}", clip(v))),
        }
    }
    if !problems.is_empty() || carried.is_empty() {
        let actual = if problems.is_empty() {
            format!("none of {} in the response", p.return_headers.join(", "))
        } else {
            problems.join("; ")
        };
        return Outcome::fail(
            format!(
                "sent traceparent {sent}, response {}: {actual}",
                describe(&ex)
            ),
            format!(
                "trace-id {t} in {} (with a new parent-id where the header has one)",
                p.return_headers.join(" / ")
            ),
            actual,
        )
        .with_evidence(ev);
    }
    Outcome::pass(format!(
        "trace-id {t} came back in {} ({})",
        carried.join(", "),
        describe(&ex)
    ))
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
    let mut judged: Vec<String> = p.return_headers.clone();
    for w3c in ["traceparent", "traceresponse"] {
        if !judged.iter().any(|h| h.eq_ignore_ascii_case(w3c)) {
            judged.push(w3c.into());
        }
    }
    let mut problems = Vec::new();
    let mut carried = Vec::new();
    for h in &judged {
        let Some(v) = ex.response.header(h) else {
            continue;
        };
        let listed = p.return_headers.iter().any(|r| r.eq_ignore_ascii_case(h));
        match traceparent::fields(v) {
            Some((rt, rp)) => {
                let version = v.trim_matches([' ', '\t']).get(..2).unwrap_or_default();
                if rt != t {
                    problems.push(format!(
                        "{h}: {} carries trace-id {rt} (a new trace)",
                        clip(v)
                    ));
                } else if version != "00" {
                    problems.push(format!(
                        "{h}: {} has version {version} instead of 00",
                        clip(v)
                    ));
                } else if rp == parent || rp.bytes().all(|b| b == b'0') {
                    problems.push(format!(
                        "{h}: {} keeps parent-id {rp} instead of a new one",
                        clip(v)
                    ));
                } else if listed {
                    carried.push(h.clone());
                }
            }
            None if v.trim() == t => {
                if listed {
                    carried.push(h.clone());
                }
            }
            None if listed => problems.push(format!("{h}: {} (a new trace)", clip(v))),
            None => problems.push(format!("{h}: {} is not traceparent-shaped", clip(v))),
        }
    }
    if !problems.is_empty() || carried.is_empty() {
        let actual = if problems.is_empty() {
            format!("none of {} in the response", p.return_headers.join(", "))
        } else {
            problems.join("; ")
        };
        return Outcome::fail(
            format!(
                "sent higher-version traceparent {sent}, response {}: {actual}",
                describe(&ex)
            ),
            format!(
                "trace-id {t} continued in {} (version 00, a new parent-id where the header has one)",
                p.return_headers.join(" / ")
            ),
            actual,
        )
        .with_evidence(ev);
    }
    Outcome::pass(format!(
        "version-01 trace {t} continued in {} ({})",
        carried.join(", "),
        describe(&ex)
    ))
    .with_evidence(ev)
}

/// TRC-003: every invalid traceparent restarts the trace, without a 4xx.
pub async fn invalid_ignored(p: &InvalidIgnoredPlan, ctx: &CheckContext) -> Outcome {
    let mut evidence = Vec::new();
    let mut problems = Vec::new();
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
        if !p.status.matches(ex.status()) {
            problems.push(format!(
                "{label} ({sent}): answered {} instead of {}",
                describe(&ex),
                p.status
            ));
            continue;
        }
        let Some(id) = trace_id(&ex, &p.trace_header) else {
            problems.push(format!(
                "{label} ({sent}): no {} on {}",
                p.trace_header,
                describe(&ex)
            ));
            continue;
        };
        if let Some(why) = format_problem(&id, p.id_format) {
            problems.push(format!("{label} ({sent}): {} {why}", p.trace_header));
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
            problems.push(format!(
                "{label} ({sent}): the trace continued with {} {id} instead of a new trace ({})",
                p.trace_header,
                describe(&ex)
            ));
            continue;
        }
        let echoed: Vec<&str> = ex
            .response
            .headers
            .iter()
            .filter(|(_, v)| !sent.is_empty() && v.contains(sent.as_str()))
            .map(|(k, _)| k.as_str())
            .collect();
        if !echoed.is_empty() {
            problems.push(format!(
                "{label}: the invalid value {sent} is echoed in {} ({})",
                echoed.join(", "),
                describe(&ex)
            ));
        }
    }
    let props = vec![prop("cases", p.cases.len())];
    if problems.is_empty() {
        Outcome::pass(format!(
            "{} invalid traceparents each started a new trace without a 4xx",
            p.cases.len()
        ))
        .with_evidence(evidence)
        .with_properties(props)
    } else {
        Outcome::fail(
            format!(
                "{} of {} invalid traceparents were not ignored: {}",
                problems.len(),
                p.cases.len(),
                problems.join("; ")
            ),
            format!(
                "{} and a new, well-formed {} for every invalid traceparent",
                p.status, p.trace_header
            ),
            problems[0].clone(),
        )
        .with_evidence(evidence)
        .with_properties(props)
    }
}

/// TRC-007: well-formed ids echoed; overlong or hostile ones never reflected raw.
pub async fn request_id_hygiene(p: &RequestIdPlan, ctx: &CheckContext) -> Outcome {
    let uuid = uuid::Uuid::new_v4();
    let well_formed = format!("tminus-{uuid}");
    let mut long = format!("tminus-{uuid}-");
    while long.len() < p.long_length {
        long.push('a');
    }
    // RFC 9110 forbids CR and LF in a field value and the HTTP client refuses
    // to send them; TAB, markup and obs-text (non-ASCII) are the hostile bytes
    // a compliant client can still deliver.
    let hostile = format!("tminus-{uuid}\t<script>x</script>;\u{e9}\u{7e}\"");
    let mut evidence = Vec::new();
    let mut problems = Vec::new();
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
        if label == "well-formed" {
            if !p.status.matches(ex.status()) {
                return Outcome::error(format!(
                    "the request answered {} instead of {}, so request ids cannot be judged",
                    describe(&ex),
                    p.status
                ))
                .with_evidence(evidence);
            }
            match &back {
                Some(b) if !p.expect_echo || b == value => {}
                Some(b) => problems.push(format!(
                    "well-formed {} {value} came back as {}",
                    p.header,
                    clip(b)
                )),
                None => problems.push(format!(
                    "no {} on the response to a well-formed one ({})",
                    p.header,
                    describe(&ex)
                )),
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
            problems.push(format!(
                "{label} {} ({}) reflected raw in {} ({})",
                p.header,
                clip(value),
                reflected_in.join(", "),
                describe(&ex)
            ));
            continue;
        }
        if ex.response.text().contains(value.as_str()) {
            problems.push(format!(
                "{label} {} ({}) reflected raw in the body ({})",
                p.header,
                clip(value),
                describe(&ex)
            ));
            continue;
        }
        if let Some(b) = &back {
            if b.len() > p.max_length || !p.sanitized.is_match(b) {
                problems.push(format!(
                    "{label} {} came back as {} (want at most {} characters matching {})",
                    p.header,
                    clip(b),
                    p.max_length,
                    p.sanitized
                ));
            }
        }
    }
    if problems.is_empty() {
        Outcome::pass(format!(
            "{} echoed when well formed; overlong and hostile values replaced",
            p.header
        ))
        .with_evidence(evidence)
    } else {
        Outcome::fail(
            format!("{} hygiene: {}", p.header, problems.join("; ")),
            format!(
                "well-formed {} echoed; others replaced or sanitized (at most {} characters)",
                p.header, p.max_length
            ),
            problems[0].clone(),
        )
        .with_evidence(evidence)
    }
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

/// TRC-008: the 202's status URL answers with the starting request's trace id.
pub async fn async_status(p: &AsyncStatusPlan, ctx: &CheckContext) -> Outcome {
    let r = render(ctx, &p.request);
    let start = match send(ctx, &r, "start").await {
        Ok(ex) => ex,
        Err(o) => return o,
    };
    let mut evidence = vec![ev_of("start", &start)];
    let fail = |msg: String, expected: &str, evidence: Vec<Evidence>| {
        Outcome::fail(msg.clone(), expected, msg).with_evidence(evidence)
    };
    if !p.status.matches(start.status()) {
        return fail(
            format!("the async request answered {}", describe(&start)),
            &format!("{} with Location", p.status),
            evidence,
        );
    }
    let Some(location) = start.response.header("location").map(str::to_owned) else {
        return fail(
            format!("{} without a Location status URL", describe(&start)),
            "a Location header",
            evidence,
        );
    };
    let Some(t0) = trace_id(&start, &p.trace_header) else {
        return fail(
            format!(
                "no {} on the async response {}",
                p.trace_header,
                describe(&start)
            ),
            &format!("{} on the 202", p.trace_header),
            evidence,
        );
    };
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
    if p.send_traceparent && traceparent::is_w3c_trace_id(&t0) {
        pr.set_header("traceparent", traceparent::format(&t0, &random_parent_id()));
    }
    let status_ex: Exchange = match send(ctx, &pr, "status").await {
        Ok(ex) => ex,
        Err(o) => return o.with_evidence(evidence),
    };
    evidence.push(ev_of("status", &status_ex));
    if !p.poll_status.matches(status_ex.status()) {
        return fail(
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
    match got {
        Some(g) if g == t0 => Outcome::pass(format!(
            "status URL {} carries trace id {t0} in {place}",
            clip(&location)
        ))
        .with_evidence(evidence),
        other => {
            let seen = other.map(|g| clip(&g)).unwrap_or_else(|| "nothing".into());
            fail(
                format!(
                    "the async request {} has {} {t0}, but the status URL {} ({}) has {seen} in {place}",
                    describe(&start),
                    p.trace_header,
                    clip(&location),
                    describe(&status_ex)
                ),
                &format!("{t0} in the status resource's {place}"),
                evidence,
            )
        }
    }
}
