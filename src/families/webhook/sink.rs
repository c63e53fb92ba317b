//! Sink checks (catalogue WHS-001..WHS-005 and TRC-005): tminus runs a
//! receiver, the suite's `trigger:` requests subscribe it and make the target
//! emit, and tminus judges what arrives: the signature over the raw bytes,
//! the required headers, the retry schedule, the stop conditions, the trace.

use std::time::Duration;

use super::exec::unix_now;
use crate::families::common::{describe, send};
use crate::families::webhook::plan::{SinkCase, WebhookSinkPlan, SINK_URL_VAR};
use crate::families::{CheckContext, Evidence, Outcome};
use crate::outcome::{prop, PropValue};
use crate::plan::Scope;
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
    let body = String::from_utf8_lossy(&d.body);
    let detail: String = body.chars().take(400).collect();
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

/// WHS-001: signature over the raw bytes, event header, UUID request id.
fn delivery(p: &WebhookSinkPlan, d: &Received) -> Outcome {
    let s = &p.scheme;
    let hdr = |n: &str| d.header(n).map(str::to_owned);
    let mut problems = Vec::new();
    if let Err(e) = s.verify(&p.key.0, &hdr, &d.body, unix_now(), Some(300), true) {
        problems.push(format!(
            "signature: {e} (scheme {}, {} bytes of body)",
            s.name,
            d.body.len()
        ));
    }
    if let Some(h) = &s.event_header {
        match (d.header(h), &p.event) {
            (None, _) => problems.push(format!("missing {h}")),
            (Some(v), Some(want)) if v != want => {
                problems.push(format!("{h} is `{v}`, expected `{want}`"))
            }
            _ => {}
        }
    }
    if let Some(h) = &s.id_header {
        match d.header(h) {
            None => problems.push(format!("missing {h}")),
            // BOTIX promises a UUID; other schemes only need an id to dedupe on.
            Some(v) if s.name == "botix" && uuid::Uuid::parse_str(v).is_err() => {
                problems.push(format!("{h} `{v}` is not a UUID"))
            }
            _ => {}
        }
    }
    let id = s
        .id_header
        .as_deref()
        .and_then(|h| d.header(h))
        .unwrap_or("-")
        .to_owned();
    if problems.is_empty() {
        Outcome::pass(format!(
            "delivery signed ({}), headers present, request id {id}",
            s.name
        ))
    } else {
        Outcome::fail(
            format!("delivery (request id {id}): {}", problems.join("; ")),
            "valid signature over the raw body, event header, UUID request id",
            problems.join("; "),
        )
    }
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
    match got {
        Some(t) if t == trace_id => {
            if parent.as_deref() == Some(parent_id) {
                Outcome::fail(
                    format!("the delivery reuses the trigger's parent-id {parent_id}: each hop must issue a new one"),
                    "a new parent-id",
                    parent_id.to_owned(),
                )
            } else {
                Outcome::pass(format!(
                    "delivery joined to the trigger by trace-id {trace_id} ({where_})"
                ))
            }
        }
        other => Outcome::fail(
            format!(
                "the trigger carried trace-id {trace_id}; the delivery's {where_} holds {}",
                other.as_deref().unwrap_or("nothing")
            ),
            format!("trace-id {trace_id}"),
            other.unwrap_or_else(|| "missing".into()),
        ),
    }
}

fn tolerance(p: &WebhookSinkPlan, expected: Duration) -> Duration {
    expected.mul_f64(p.tolerance_pct / 100.0) + p.tolerance_floor
}

/// WHS-002: every attempt fails; attempts follow the schedule with one request id, then stop.
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
    let id_header = p.scheme.id_header.clone();
    if let Some(h) = &id_header {
        let ids: Vec<&str> = got
            .iter()
            .map(|d| d.header(h).unwrap_or("(missing)"))
            .collect();
        if ids.iter().any(|i| *i != ids[0]) {
            return Outcome::fail(
                format!("retries changed {h}: {}; a receiver dedupes on it, so every attempt must carry the same id", ids.join(", ")),
                format!("the same {h} on every attempt"),
                ids.join(", "),
            )
            .with_properties(props);
        }
    }
    if got.len() != n {
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
        return Outcome::fail(
            msg,
            format!("{n} attempts"),
            format!("{} attempts", got.len()),
        )
        .with_properties(props);
    }
    for (i, (gap, want)) in g.iter().zip(&expected).enumerate() {
        let tol = tolerance(p, *want);
        if gap.abs_diff(*want) > tol {
            return Outcome::fail(
                format!(
                    "retry {} came {} after attempt {}, the schedule says {} ± {} (gaps {} vs schedule {})",
                    i + 1,
                    crate::fmt_duration(*gap),
                    i + 1,
                    crate::fmt_duration(*want),
                    crate::fmt_duration(tol),
                    fmt_gaps(&g),
                    fmt_gaps(&expected)
                ),
                fmt_gaps(&expected),
                fmt_gaps(&g),
            )
            .with_properties(props);
        }
    }
    Outcome::pass(format!(
        "{n} attempts on schedule {} with one request id, then silence",
        fmt_gaps(&g)
    ))
    .with_properties(props)
}

/// WHS-003 / WHS-005: no attempt after the first 2xx (or 410).
async fn stops(p: &WebhookSinkPlan, ctx: &CheckContext, sink: &Sink) -> Outcome {
    let stop_at = p
        .respond
        .iter()
        .position(|c| (200..300).contains(c) || *c == 410)
        .unwrap_or(p.respond.len() - 1);
    let n = stop_at + 1;
    let expected: Duration = p
        .schedule
        .iter()
        .take(stop_at)
        .map(|e| *e + tolerance(p, *e))
        .sum();
    let got = sink.wait_for(n, expected + p.wait).await;
    if got.len() < n {
        return Outcome::fail(
            format!(
                "only {} attempt(s) arrived; the check needs {n} to reach the {} answer",
                got.len(),
                p.respond[stop_at]
            ),
            format!("{n} attempts"),
            format!("{}", got.len()),
        );
    }
    // Wait out the next scheduled retry (or `quiet`) to see that none comes.
    let next = p
        .schedule
        .get(stop_at)
        .map(|d| *d + tolerance(p, *d))
        .unwrap_or(Duration::ZERO)
        .max(p.quiet);
    ctx.note(format!(
        "answered {}; {} of quiet to confirm no further attempt",
        p.respond[stop_at],
        crate::fmt_duration(next)
    ));
    tokio::time::sleep(next).await;
    let got = sink.received();
    let answers: Vec<String> = got.iter().map(|d| d.answered.to_string()).collect();
    if got.len() > n {
        return Outcome::fail(
            format!(
                "{} attempt(s) after tminus answered {} (answers: {})",
                got.len() - n,
                p.respond[stop_at],
                answers.join(", ")
            ),
            format!("no attempt after the {}", p.respond[stop_at]),
            format!("{} attempts", got.len()),
        )
        .with_properties(vec![prop("attempts", got.len())]);
    }
    Outcome::pass(format!(
        "stopped after answer {} (answers: {})",
        p.respond[stop_at],
        answers.join(", ")
    ))
    .with_properties(vec![prop("attempts", got.len())])
}

/// WHS-006: after a 429 with `Retry-After: N`, no attempt comes before N seconds.
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
        return Outcome::pass(format!(
            "no attempt within {} of the {} (none early)",
            crate::fmt_duration(window),
            p.respond[0]
        ));
    };
    let gap = next.at.duration_since(got[0].at);
    let props = vec![prop(
        "retry_gap_ms",
        PropValue::rounded(gap.as_secs_f64() * 1000.0, 0),
    )];
    // A little slack for the two timestamps being taken on different sides.
    if gap + Duration::from_millis(50) < ra {
        return Outcome::fail(
            format!(
                "the next attempt came {} after a {} with Retry-After: {}",
                crate::fmt_duration(gap),
                p.respond[0],
                p.retry_after
            ),
            format!("next attempt >= {} s later", p.retry_after),
            crate::fmt_duration(gap),
        )
        .with_properties(props);
    }
    Outcome::pass(format!(
        "the next attempt waited {} (Retry-After: {})",
        crate::fmt_duration(gap),
        p.retry_after
    ))
    .with_properties(props)
}

/// WHS-004: the held first attempt is abandoned in time, and no second
/// attempt arrives while the first is still open.
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
    if let Some(dup) = got
        .iter()
        .skip(1)
        .find(|d| open_until.is_none_or(|t| d.at < t))
    {
        return Outcome::fail(
            format!(
                "attempt 2 arrived {} after attempt 1 while attempt 1 was still open: a parallel duplicate",
                crate::fmt_duration(dup.at.duration_since(first_at))
            ),
            "one attempt at a time",
            "overlapping attempts",
        );
    }
    match ended {
        None => Outcome::fail(
            format!(
                "the sender still held attempt 1 open {} later: no timeout, or one above the {} limit",
                crate::fmt_duration(first_at.elapsed()),
                crate::fmt_duration(limit)
            ),
            format!("gives up within {}", crate::fmt_duration(limit)),
            "still waiting",
        ),
        Some((_, true)) => Outcome::error(format!(
            "the sender waited out the whole {} hang: raise `hang` above its timeout",
            crate::fmt_duration(p.hang.unwrap_or_default())
        )),
        Some((t, false)) => {
            let after = t.duration_since(first_at);
            Outcome::pass(format!(
                "the sender gave up on the held attempt after {} (limit {})",
                crate::fmt_duration(after),
                crate::fmt_duration(limit)
            ))
            .with_properties(vec![prop(
                "sender_timeout_ms",
                PropValue::rounded(after.as_secs_f64() * 1000.0, 0),
            )])
        }
    }
}
