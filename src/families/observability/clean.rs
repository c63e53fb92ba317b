//! OBS-002, `observability.logs_clean`: the request (with the suite's
//! credential and the personal data to look for) is sent once with a fresh
//! traceparent; the logs are read until its own line is there (by trace id
//! or request id) or the deadline passes; then no line may hold a secret
//! of the suite in any form the redactor knows, nor a personal value the
//! request carried. A finding names the source and the line's position and
//! what kind of value it holds, never the value: every personal value is
//! registered with the redactor before anything is reported.

use tokio::time::Instant;

use super::exec::{covered, empty, figures, mark, read_until, send_traced};
use super::pii;
use super::plan::CleanPlan;
use crate::context::CheckContext;
use crate::logs::{LogLine, Logs};
use crate::outcome::{Assertion, Outcome};

/// The request's own line: its trace id or request id in it.
fn own_line(l: &LogLine, trace_id: &str, request_id: Option<&str>) -> bool {
    let low = l.text.to_ascii_lowercase();
    low.contains(trace_id) || request_id.is_some_and(|r| !r.is_empty() && l.text.contains(r))
}

/// At most this many findings are listed in a message.
const LISTED: usize = 5;

pub async fn run(p: &CleanPlan, ctx: &CheckContext) -> Outcome {
    let m = match mark(&p.logs).await {
        Ok(m) => m,
        Err(o) => return o,
    };
    let mut personal: Vec<(String, String)> = Vec::new();
    let sent = send_traced(ctx, &p.request, "request", |r| {
        // Templated values are known only now: found, and redacted from
        // every report, before the request leaves.
        if let Ok(body) = serde_json::from_slice::<serde_json::Value>(&r.body) {
            personal = pii::values(&body, &p.pii, p.detect);
            for (_, v) in &personal {
                ctx.redactor.add(v);
            }
        }
    })
    .await;
    let sent = match sent {
        Ok(s) => s,
        Err(o) => return o,
    };
    let started = Instant::now();
    let rid = sent.request_id.clone();
    let logs = match read_until(&p.logs, &m, ctx, started + p.deadline, p.poll, |logs| {
        logs.lines
            .iter()
            .any(|l| own_line(l, &sent.trace_id, rid.as_deref()))
    })
    .await
    {
        Ok(l) => l,
        Err(o) => return o,
    };
    if logs.lines.is_empty() {
        return empty(&p.logs, started.elapsed());
    }
    let own = logs
        .lines
        .iter()
        .find(|l| own_line(l, &sent.trace_id, rid.as_deref()));
    let (secrets, pii_found) = scan(&logs, &personal, ctx);
    let seen = covered(&logs, &p.logs);
    let source = p.logs.name();
    let covered_request = match own {
        Some(l) => format!("the request's own line is {}", l.position()),
        None => String::new(),
    };
    let verdict = |property: &'static str,
                   found: &[String],
                   (what, none): (&str, &str),
                   nothing_to_find: bool| {
        if !found.is_empty() {
            Assertion::fail(
                property,
                format!(
                    "{source} holds {what}: {}{}",
                    found
                        .iter()
                        .take(LISTED)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", "),
                    if found.len() > LISTED {
                        format!(" ({} lines in all)", found.len())
                    } else {
                        String::new()
                    }
                ),
                format!("{none} in the logs"),
                format!("{} lines", found.len()),
            )
        } else if nothing_to_find {
            Assertion::not_exercised(
                property,
                format!("{none} to look for: the request carried none"),
            )
        } else if logs.capped {
            Assertion::inconclusive(
                property,
                format!("{none} in what was read, but the read stopped at its cap ({seen})"),
            )
        } else if own.is_none() {
            Assertion::not_exercised(
                property,
                format!(
                    "the request's own line (trace id or request id) was not in the logs within {}, so the {seen} read may not cover it",
                    crate::fmt_duration(p.deadline)
                ),
            )
        } else {
            Assertion::pass(
                property,
                format!("{none} in {seen} from {source}; {covered_request}"),
            )
        }
    };
    // No named secret in the suite: nothing to look for (the personal
    // values the redactor learnt are judged as `no_pii`).
    let no_secret_named = ctx.redactor.names().is_empty();
    let assertions = vec![
        verdict(
            "no_secrets",
            &secrets,
            (
                "a secret of the suite (raw or encoded)",
                "no secret of the suite (raw or encoded)",
            ),
            no_secret_named,
        ),
        verdict(
            "no_pii",
            &pii_found,
            (
                "personal data the request carried",
                "no personal data the request carried",
            ),
            personal.is_empty(),
        ),
    ];
    Outcome::judged(assertions)
        .with_evidence(vec![sent.evidence])
        .with_properties(figures(&logs))
}

/// The lines holding a secret, and those holding personal data (each as
/// `line N (what)`). Personal values are taken out of a line before the
/// redactor looks at it, since it knows them too.
fn scan(
    logs: &Logs,
    personal: &[(String, String)],
    ctx: &CheckContext,
) -> (Vec<String>, Vec<String>) {
    let mut secrets = Vec::new();
    let mut found = Vec::new();
    for l in &logs.lines {
        let mut text = l.text.clone();
        let kinds: Vec<&str> = personal
            .iter()
            .filter(|(_, v)| pii::appears(&l.text, v))
            .map(|(w, _)| w.as_str())
            .collect();
        if !kinds.is_empty() {
            found.push(format!("{} at {}", kinds.join(" and "), l.position()));
            for (_, v) in personal {
                text = text.replace(v.as_str(), "");
            }
        }
        if ctx.redactor.redact(&text) != text {
            secrets.push(format!("at {}", l.position()));
        }
    }
    (secrets, found)
}
