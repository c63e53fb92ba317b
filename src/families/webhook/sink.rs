//! Sink checks (catalogue WHS-001..WHS-005 and TRC-005): tminus runs a
//! receiver, the suite's `trigger:` requests subscribe it and make the target
//! emit, and tminus judges what arrives: the signature over the raw bytes,
//! the required headers, the retry schedule, the stop conditions, the trace.

use std::time::Duration;

use super::exec::unix_now;
use super::timing;
use crate::context::CheckContext;
use crate::context::Scope;
use crate::families::common::{describe, send};
use crate::families::webhook::plan::{SinkCase, WebhookSinkPlan, SINK_URL_VAR};
use crate::outcome::{prop, Assertion, PropValue, Verdict};
use crate::outcome::{Evidence, Outcome};
use crate::sink::{Received, Sink};

fn fmt_gaps(gaps: &[Duration]) -> String {
    let v: Vec<String> = gaps.iter().map(|g| crate::fmt_duration(*g)).collect();
    format!("[{}]", v.join(", "))
}

fn gaps(got: &[Received]) -> Vec<Duration> {
    got.windows(2)
        .map(|w| w[1].at.duration_since(w[0].at))
        .collect()
}

fn random_hex(bytes: usize) -> String {
    (0..bytes)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect()
}

pub async fn run(p: &WebhookSinkPlan, ctx: &CheckContext) -> Outcome {
    let sink = match Sink::start(p.respond.clone(), Some(p.retry_after), p.hang, &ctx.sink).await {
        Ok(s) => s,
        Err(e) => {
            return Outcome::error(format!(
                "cannot start the webhook sink on {}: {e}",
                ctx.sink.listen
            ))
        }
    };
    let out = judge(p, ctx, &sink).await;
    let out = super::payload::add(out, p, &sink.received());
    // Every delivery that arrived is evidence: answer, request id, body excerpt.
    let evidence: Vec<Evidence> = sink
        .received()
        .iter()
        .enumerate()
        .map(|(i, d)| delivery_evidence(p, sink.url(), i, d))
        .collect();
    sink.shutdown().await;
    out.with_evidence(evidence)
}

fn delivery_evidence(p: &WebhookSinkPlan, url: &str, i: usize, d: &Received) -> Evidence {
    let detail: String = if d.body_kept {
        String::from_utf8_lossy(&d.body).chars().take(400).collect()
    } else {
        format!(
            "(a body of {} bytes, not kept: the sink had recorded {} MiB of bodies, its budget)",
            d.body_len,
            crate::sink::RECORDED_BODY_BUDGET >> 20
        )
    };
    Evidence {
        label: format!("delivery {} (tminus answered {})", i + 1, d.answered),
        request: format!("POST {url}"),
        status: Some(d.answered),
        request_id: p
            .scheme
            .id_header
            .as_deref()
            .and_then(|h| d.header(h).map(|v| format!("{h}: {v}"))),
        elapsed_ms: None,
        detail: (!detail.is_empty()).then_some(detail),
    }
}

async fn judge(p: &WebhookSinkPlan, ctx: &CheckContext, sink: &Sink) -> Outcome {
    let mut evidence = Vec::new();
    let mut scope = Scope::new();
    scope.insert(SINK_URL_VAR.into(), sink.url().to_owned());
    // TRC-005: every trigger carries our traceparent; the delivery must carry its trace-id.
    let (trace_id, parent_id) = (random_hex(16), random_hex(8));
    let traceparent = format!("00-{trace_id}-{parent_id}-01");
    for (i, req) in p.trigger.iter().enumerate() {
        let label = format!("trigger {}", i + 1);
        let mut r = ctx.target.render(req, &scope);
        if p.case == SinkCase::Trace {
            r.set_header("traceparent", &traceparent);
        }
        let ex = match send(ctx, &r, &label).await {
            Ok(ex) => ex,
            Err(o) => return o.with_evidence(evidence),
        };
        evidence.push(Evidence::from_exchange(&label, &ex));
        if !(200..300).contains(&ex.status()) {
            return Outcome::error(format!("{label} answered {}: the target did not accept the trigger, so nothing can be judged", describe(&ex)))
                .with_evidence(evidence);
        }
    }
    ctx.note(format!(
        "waiting up to {} for the first delivery",
        crate::fmt_duration(p.wait)
    ));
    let first = sink.wait_for(1, p.wait).await;
    let refused = sink.refused();
    if first.is_empty() && !refused.is_empty() {
        // Deliveries came, but over the sink's body limit: say so, not
        // "nothing arrived".
        return Outcome::error(format!(
            "{} deliver{} reached the sink but {} refused (413): {} bytes, over the sink's body limit of {} bytes; raise it with --sink-max-body (e.g. --sink-max-body 8MiB)",
            refused.len(),
            if refused.len() == 1 { "y" } else { "ies" },
            if refused.len() == 1 { "was" } else { "were" },
            refused.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
            sink.max_body(),
        ))
        .with_evidence(evidence);
    }
    let Some(d) = first.first().cloned() else {
        // Nothing at all arrived: most often the platform cannot reach this
        // address (a remote platform and a loopback sink), which says nothing
        // about its deliveries, so the check could not be judged.
        return Outcome::error(format!(
            "no delivery reached the sink within {}: tminus listened on {} and gave the target `{}` as `${{var.{SINK_URL_VAR}}}`; if the target cannot reach that URL, listen where it can with --sink-listen ADDR:PORT (or `target.sink.listen`) and give the URL that leads there with --sink-url (or `target.sink.url`)",
            crate::fmt_duration(p.wait),
            sink.listen_addr(),
            sink.url(),
        ))
        .with_evidence(evidence);
    };
    let out = match p.case {
        SinkCase::Delivery => delivery(p, &d),
        SinkCase::Trace => trace(p, &d, &trace_id, &parent_id),
        SinkCase::Retries => retries(p, ctx, sink).await,
        SinkCase::Timeout => timeout(p, ctx, sink).await,
        SinkCase::RespectsRetryAfter => retry_after(p, ctx, sink).await,
        SinkCase::StopsOnSuccess | SinkCase::StopsOnGone => stops(p, ctx, sink).await,
    };
    out.with_evidence(evidence)
}

/// WHS-001: signature over the raw bytes, event header, delivery id (a UUID for botix).
fn delivery(p: &WebhookSinkPlan, d: &Received) -> Outcome {
    let s = &p.scheme;
    let hdr = |n: &str| d.header(n).map(str::to_owned);
    let id = s
        .id_header
        .as_deref()
        .and_then(|h| d.header(h))
        .unwrap_or("-")
        .to_owned();
    let signature = match s.verify(&p.key.0, &hdr, &d.body, unix_now(), Some(300), true) {
        Ok(_) => Assertion::pass(
            "signature",
            format!(
                "delivery signed ({}, {} bytes of body)",
                s.name,
                d.body.len()
            ),
        ),
        Err(e) => Assertion::fail(
            "signature",
            format!(
                "delivery (request id {id}): signature: {e} (scheme {}, {} bytes of body)",
                s.name,
                d.body.len()
            ),
            "a valid signature over the raw body",
            e.to_string(),
        ),
    };
    let event = match (&s.event_header, &p.event) {
        (None, _) => Assertion::skipped(
            "event_header",
            format!("not applicable: {} has no event header", s.name),
        ),
        (Some(h), want) => match (d.header(h), want) {
            (None, _) => Assertion::fail(
                "event_header",
                format!("delivery (request id {id}): missing {h}"),
                format!("{h} present"),
                "absent",
            ),
            (Some(v), Some(want)) if v != want.as_str() => Assertion::fail(
                "event_header",
                format!("delivery (request id {id}): {h} is `{v}`, expected `{want}`"),
                want.clone(),
                v.to_owned(),
            ),
            (Some(v), _) => Assertion::pass("event_header", format!("{h}: {v}")),
        },
    };
    let (id_present, id_uuid) = match &s.id_header {
        None => {
            let why = format!("not applicable: {} has no delivery id header", s.name);
            (
                Assertion::skipped("delivery_id", why.clone()),
                Assertion::skipped("delivery_id_uuid", why),
            )
        }
        Some(h) => match d.header(h) {
            None => (
                Assertion::fail(
                    "delivery_id",
                    format!("delivery: missing {h}"),
                    format!("{h} present"),
                    "absent",
                ),
                Assertion::skipped(
                    "delivery_id_uuid",
                    format!("not judged: no {h} to judge the format of"),
                ),
            ),
            Some(v) => (
                Assertion::pass("delivery_id", format!("{h}: {v}")),
                // BOTIX promises a UUID; other schemes only need an id to dedupe on.
                if s.name != "botix" {
                    Assertion::skipped(
                        "delivery_id_uuid",
                        format!("not applicable: only botix promises a UUID ({})", s.name),
                    )
                } else {
                    Assertion::check(
                        "delivery_id_uuid",
                        uuid::Uuid::parse_str(v).is_ok(),
                        format!("{h} {v} is a UUID"),
                        format!("{h} `{v}` is not a UUID"),
                        "a UUID",
                        v.to_owned(),
                    )
                },
            ),
        },
    };
    Outcome::judged(vec![signature, event, id_present, id_uuid])
}

/// TRC-005: the delivery carries the trigger's trace-id with a new parent-id.
fn trace(p: &WebhookSinkPlan, d: &Received, trace_id: &str, parent_id: &str) -> Outcome {
    let (got, parent) = match &p.trace_json {
        Some(path) => {
            let v = serde_json::from_slice::<serde_json::Value>(&d.body)
                .ok()
                .and_then(|j| path.select(&j));
            let v = v.map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string())
            });
            (v, None)
        }
        None => {
            let tp = d.header("traceparent").map(str::to_owned);
            let parts: Vec<String> = tp
                .as_deref()
                .unwrap_or("")
                .split('-')
                .map(str::to_owned)
                .collect();
            (parts.get(1).cloned(), parts.get(2).cloned())
        }
    };
    let where_ = p
        .trace_json
        .as_ref()
        .map(|j| j.to_string())
        .unwrap_or_else(|| "traceparent".into());
    let joined = got.as_deref() == Some(trace_id);
    let propagated = Assertion::check(
        "trace_id_propagated",
        joined,
        format!("delivery joined to the trigger by trace-id {trace_id} ({where_})"),
        format!(
            "the trigger carried trace-id {trace_id}; the delivery's {where_} holds {}",
            got.as_deref().unwrap_or("nothing")
        ),
        format!("trace-id {trace_id}"),
        got.clone().unwrap_or_else(|| "missing".into()),
    );
    let new_parent = match (&p.trace_json, parent) {
        (Some(_), _) => Assertion::skipped(
            "new_parent_id",
            "not applicable: the trace id is read from the body (`trace_json`), which has no parent-id",
        ),
        // `trace_id_propagated` fails on evidence; the parent-id rests on it.
        (None, _) if !joined => Assertion::skipped(
            "new_parent_id",
            "not judged: the delivery does not continue the trigger's trace",
        ),
        (None, parent) => Assertion::check(
            "new_parent_id",
            parent.as_deref() != Some(parent_id),
            "the delivery's traceparent has a parent-id of its own",
            format!("the delivery reuses the trigger's parent-id {parent_id}: each hop must issue a new one"),
            "a new parent-id",
            parent_id.to_owned(),
        ),
    };
    Outcome::judged(vec![propagated, new_parent])
}

fn tolerance(p: &WebhookSinkPlan, expected: Duration) -> Duration {
    timing::tolerance(expected, p.tolerance_pct, p.tolerance_floor)
}

/// WHS-002: every attempt fails; attempts follow the schedule with one
/// request id, then stop. Judged as `retried`, `same_delivery_id`,
/// `attempts` and `schedule`; the last two only on the gaps that happened.
async fn retries(p: &WebhookSinkPlan, ctx: &CheckContext, sink: &Sink) -> Outcome {
    let n = p.max_attempts as usize;
    let expected: Vec<Duration> = p
        .schedule
        .iter()
        .take(n.saturating_sub(1))
        .copied()
        .collect();
    let budget: Duration = expected.iter().map(|e| *e + tolerance(p, *e)).sum();
    ctx.note(format!(
        "waiting up to {} for {n} attempts",
        crate::fmt_duration(budget + p.wait)
    ));
    let got = sink.wait_for(n, budget + p.wait).await;
    ctx.note(format!(
        "{} attempts; {} of quiet to confirm it stopped",
        got.len(),
        crate::fmt_duration(p.quiet)
    ));
    tokio::time::sleep(p.quiet).await;
    let got = sink.received();
    let g = gaps(&got);
    let props = vec![
        prop("attempts", got.len()),
        prop(
            "gaps_ms",
            g.iter()
                .map(|d| format!("{:.0}", d.as_secs_f64() * 1000.0))
                .collect::<Vec<_>>()
                .join(","),
        ),
    ];
    let retried = retried(&got, n);
    let same_id = match &p.scheme.id_header {
        None => Assertion::skipped(
            "same_delivery_id",
            format!(
                "not applicable: {} has no delivery id header",
                p.scheme.name
            ),
        ),
        // `retried` fails on evidence; comparing ids rests on a retry.
        Some(_) if got.len() < 2 => Assertion::skipped(
            "same_delivery_id",
            "not judged: only one attempt arrived, no retry to compare",
        ),
        Some(h) => {
            let ids: Vec<&str> = got
                .iter()
                .map(|d| d.header(h).unwrap_or("(missing)"))
                .collect();
            Assertion::check(
                "same_delivery_id",
                ids.iter().all(|i| *i == ids[0]),
                format!("{} attempts, all with {h} {}", ids.len(), ids[0]),
                format!("retries changed {h}: {}; a receiver dedupes on it, so every attempt must carry the same id", ids.join(", ")),
                format!("the same {h} on every attempt"),
                ids.join(", "),
            )
        }
    };
    let attempts = if got.len() == n {
        Assertion::pass(
            "attempts",
            format!(
                "{n} attempts, then silence for {}",
                crate::fmt_duration(p.quiet)
            ),
        )
    } else {
        let msg = if got.len() < n {
            format!(
                "only {} of {n} attempts arrived (gaps {})",
                got.len(),
                fmt_gaps(&g)
            )
        } else {
            format!(
                "{} attempts, {} more than the {n} allowed (gaps {})",
                got.len(),
                got.len() - n,
                fmt_gaps(&g)
            )
        };
        Assertion::fail(
            "attempts",
            msg,
            format!("{n} attempts"),
            format!("{} attempts", got.len()),
        )
    };
    let off = timing::schedule_rule(&g, &expected, p.tolerance_pct, p.tolerance_floor)
        .map(|i| (i, (&g[i], &expected[i])));
    let schedule = match off {
        Some((i, (gap, want))) => Assertion::fail(
            "schedule",
            format!(
                "retry {} came {} after attempt {}, the schedule says {} ± {} (gaps {} vs schedule {})",
                i + 1,
                crate::fmt_duration(*gap),
                i + 1,
                crate::fmt_duration(*want),
                crate::fmt_duration(tolerance(p, *want)),
                fmt_gaps(&g),
                fmt_gaps(&expected)
            ),
            fmt_gaps(&expected),
            fmt_gaps(&g),
        ),
        None if expected.is_empty() => Assertion::skipped(
            "schedule",
            "no retry is expected (`max_attempts: 1`)",
        ),
        None if g.is_empty() => Assertion::skipped(
            "schedule",
            "not judged: only one attempt arrived, no retry delay to measure",
        ),
        None => Assertion::pass(
            "schedule",
            format!(
                "gaps {} within tolerance of {}",
                fmt_gaps(&g),
                fmt_gaps(&expected)
            ),
        ),
    };
    Outcome::judged(vec![retried, same_id, attempts, schedule]).with_properties(props)
}

/// `retried`: after a failed first attempt, at least one more came (`want`
/// is how many attempts the check expected; one means no retry was due).
fn retried(got: &[Received], want: usize) -> Assertion {
    if want < 2 {
        return Assertion::skipped("retried", "no retry is expected (`max_attempts: 1`)");
    }
    Assertion::check(
        "retried",
        got.len() >= 2,
        format!(
            "retried after answer {}",
            got.first().map_or(0, |d| d.answered)
        ),
        format!(
            "only {} attempt(s) arrived: a failed delivery (answered {}) was not retried",
            got.len(),
            got.first().map_or(0, |d| d.answered)
        ),
        "a retry",
        format!("{} attempt(s)", got.len()),
    )
}

/// WHS-003 / WHS-005: no attempt after the first 2xx (or 410). With a 5xx
/// before it (WHS-003) the platform must first retry to reach the 2xx;
/// if it never does, stopping after it was not exercised.
async fn stops(p: &WebhookSinkPlan, ctx: &CheckContext, sink: &Sink) -> Outcome {
    let stop_at = p
        .respond
        .iter()
        .position(|c| (200..300).contains(c) || *c == 410)
        .unwrap_or(p.respond.len() - 1);
    let n = stop_at + 1;
    let property = if p.case == SinkCase::StopsOnGone {
        "stops_after_gone"
    } else {
        "stops_after_success"
    };
    let expected: Duration = p
        .schedule
        .iter()
        .take(stop_at)
        .map(|e| *e + tolerance(p, *e))
        .sum();
    let got = sink.wait_for(n, expected + p.wait).await;
    let mut judged = Vec::new();
    if p.case == SinkCase::StopsOnSuccess {
        judged.push(retried(&got, n));
    }
    if got.len() < n {
        let why = format!(
            "only {} attempt(s) arrived; the check needs {n} to reach the {} answer",
            got.len(),
            p.respond[stop_at]
        );
        // With `retried` failing on evidence the stop rests on it and is not
        // judged; otherwise the 2xx/410 was simply never reached.
        judged.push(if judged.iter().any(|a| a.verdict == Verdict::Fail) {
            Assertion::skipped(property, format!("not judged: {why}"))
        } else {
            Assertion::not_exercised(property, why)
        });
        return Outcome::judged(judged);
    }
    // Wait out the next scheduled retry (or `quiet`) to see that none comes.
    let next = timing::stop_watch(
        p.schedule.get(stop_at).copied(),
        p.tolerance_pct,
        p.tolerance_floor,
        p.quiet,
    );
    ctx.note(format!(
        "answered {}; {} of quiet to confirm no further attempt",
        p.respond[stop_at],
        crate::fmt_duration(next)
    ));
    tokio::time::sleep(next).await;
    let got = sink.received();
    let answers: Vec<String> = got.iter().map(|d| d.answered.to_string()).collect();
    judged.push(Assertion::check(
        property,
        got.len() <= n,
        format!(
            "stopped after answer {} (answers: {})",
            p.respond[stop_at],
            answers.join(", ")
        ),
        format!(
            "{} attempt(s) after tminus answered {} (answers: {})",
            got.len().saturating_sub(n),
            p.respond[stop_at],
            answers.join(", ")
        ),
        format!("no attempt after the {}", p.respond[stop_at]),
        format!("{} attempts", got.len()),
    ));
    Outcome::judged(judged).with_properties(vec![prop("attempts", got.len())])
}

/// WHS-006: after a 429 with `Retry-After: N`, no attempt comes before N
/// seconds. No second attempt at all leaves the property unexercised.
async fn retry_after(p: &WebhookSinkPlan, ctx: &CheckContext, sink: &Sink) -> Outcome {
    let ra = Duration::from_secs(p.retry_after);
    let window = ra + p.schedule.first().copied().unwrap_or(Duration::ZERO) + p.wait;
    ctx.note(format!(
        "answered {} with Retry-After: {}; watching {} for the next attempt",
        p.respond[0],
        p.retry_after,
        crate::fmt_duration(window)
    ));
    let got = sink.wait_for(2, window).await;
    let Some(next) = got.get(1) else {
        return Outcome::judged(vec![Assertion::not_exercised(
            "honours_retry_after",
            format!(
                "no second attempt within {} of the {} with Retry-After: {}, so whether the platform waits for it was not exercised",
                crate::fmt_duration(window),
                p.respond[0],
                p.retry_after
            ),
        )]);
    };
    let gap = next.at.duration_since(got[0].at);
    let props = vec![prop(
        "retry_gap_ms",
        PropValue::rounded(gap.as_secs_f64() * 1000.0, 0),
    )];
    let slack = timing::retry_after_slack(ra, p.tolerance_pct, p.tolerance_floor);
    Outcome::judged(vec![Assertion::check(
        "honours_retry_after",
        timing::retry_after_rule(gap, ra, p.tolerance_pct, p.tolerance_floor),
        format!(
            "the next attempt waited {} (Retry-After: {})",
            crate::fmt_duration(gap),
            p.retry_after
        ),
        format!(
            "the next attempt came {} after a {} with Retry-After: {}",
            crate::fmt_duration(gap),
            p.respond[0],
            p.retry_after
        ),
        format!(
            "next attempt >= {} s later (less {} for a scheduler's whole seconds)",
            p.retry_after,
            crate::fmt_duration(slack)
        ),
        crate::fmt_duration(gap),
    )])
    .with_properties(props)
}

/// WHS-004: the held first attempt is abandoned in time (`gives_up`), and
/// no second attempt arrives while the first is still open
/// (`no_parallel_duplicate`).
async fn timeout(p: &WebhookSinkPlan, ctx: &CheckContext, sink: &Sink) -> Outcome {
    let limit = p.max_sender_timeout;
    ctx.note(format!(
        "holding attempt 1 open; the sender must give up within {}",
        crate::fmt_duration(limit)
    ));
    let first_at = sink.received()[0].at;
    let slack = p.tolerance_floor + Duration::from_millis(200);
    let ended = sink
        .wait_first_ended((limit + slack).saturating_sub(first_at.elapsed()))
        .await;
    let got = sink.received();
    let open_until = ended.map(|(t, _)| t);
    let parallel = match got
        .iter()
        .skip(1)
        .find(|d| open_until.is_none_or(|t| d.at < t))
    {
        Some(dup) => Assertion::fail(
            "no_parallel_duplicate",
            format!(
                "attempt 2 arrived {} after attempt 1 while attempt 1 was still open: a parallel duplicate",
                crate::fmt_duration(dup.at.duration_since(first_at))
            ),
            "one attempt at a time",
            "overlapping attempts",
        ),
        None => Assertion::pass(
            "no_parallel_duplicate",
            format!(
                "no other attempt while attempt 1 was open ({} attempt(s) in all)",
                got.len()
            ),
        ),
    };
    let mut props = Vec::new();
    let gives_up = match ended {
        None => Assertion::fail(
            "gives_up",
            format!(
                "the sender still held attempt 1 open {} later: no timeout, or one above the {} limit",
                crate::fmt_duration(first_at.elapsed()),
                crate::fmt_duration(limit)
            ),
            format!("gives up within {}", crate::fmt_duration(limit)),
            "still waiting",
        ),
        Some((_, true)) => Assertion::not_exercised(
            "gives_up",
            format!(
                "the sender waited out the whole {} hang: raise `hang` above its timeout",
                crate::fmt_duration(p.hang.unwrap_or_default())
            ),
        ),
        Some((t, false)) => {
            let after = t.duration_since(first_at);
            props.push(prop(
                "sender_timeout_ms",
                PropValue::rounded(after.as_secs_f64() * 1000.0, 0),
            ));
            Assertion::pass(
                "gives_up",
                format!(
                    "the sender gave up on the held attempt after {} (limit {})",
                    crate::fmt_duration(after),
                    crate::fmt_duration(limit)
                ),
            )
        }
    };
    Outcome::judged(vec![gives_up, parallel]).with_properties(props)
}
