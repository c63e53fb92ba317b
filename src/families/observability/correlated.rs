//! OBS-001, `observability.logs_correlated`: the request is sent `requests`
//! times, each with a fresh traceparent; up to `sample` of them (evenly
//! spread) are looked for in the logs, each under its trace id: a JSON
//! line's trace id field, or anywhere in a text line. A request found only
//! by its request id is named as logged without its trace id.

use std::collections::BTreeSet;

use tokio::time::Instant;

use super::exec::{covered, empty, figures, mark, read_until, send_traced, short, Sent};
use super::plan::CorrelatedPlan;
use crate::context::CheckContext;
use crate::logs::{field, LineFormat, LogLine};
use crate::outcome::{prop, Assertion, Outcome};

const PROPERTY: &str = "correlated";

/// Whether `line` is logged under `trace_id`.
fn under_trace(
    line: &LogLine,
    json: Option<&serde_json::Value>,
    f: &LineFormat,
    trace_id: &str,
) -> bool {
    match json {
        Some(doc) => field(doc, &f.trace_id).is_some_and(|v| v.eq_ignore_ascii_case(trace_id)),
        None => line.text.to_ascii_lowercase().contains(trace_id),
    }
}

/// Whether `line` names `request_id` (its field, or anywhere in a text line).
fn under_request(
    line: &LogLine,
    json: Option<&serde_json::Value>,
    f: &LineFormat,
    request_id: &str,
) -> bool {
    match json {
        Some(doc) => field(doc, &f.request_id).is_some_and(|v| v == request_id),
        None => line.text.contains(request_id),
    }
}

/// Evenly spread indices: `k` of `0..n`.
fn spread(n: usize, k: usize) -> Vec<usize> {
    if k >= n {
        return (0..n).collect();
    }
    (0..k).map(|i| i * n / k).collect()
}

pub async fn run(p: &CorrelatedPlan, ctx: &CheckContext) -> Outcome {
    let m = match mark(&p.logs).await {
        Ok(m) => m,
        Err(o) => return o,
    };
    let mut sent: Vec<Sent> = Vec::new();
    for i in 0..p.requests {
        match send_traced(ctx, &p.request, &format!("request {}", i + 1), |_| {}).await {
            Ok(s) => sent.push(s),
            Err(o) => return o,
        }
    }
    let sampled: Vec<&Sent> = spread(sent.len(), p.sample as usize)
        .into_iter()
        .map(|i| &sent[i])
        .collect();
    let f = &p.logs.format;
    let started = Instant::now();
    let deadline = started + p.deadline;
    let found_in = |lines: &[LogLine]| -> BTreeSet<usize> {
        let mut found = BTreeSet::new();
        for l in lines {
            let json = l.json();
            for (i, s) in sampled.iter().enumerate() {
                if !found.contains(&i) && under_trace(l, json.as_ref(), f, &s.trace_id) {
                    found.insert(i);
                }
            }
        }
        found
    };
    let logs = match read_until(&p.logs, &m, ctx, deadline, p.poll, |logs| {
        found_in(&logs.lines).len() == sampled.len()
    })
    .await
    {
        Ok(l) => l,
        Err(o) => return o,
    };
    if logs.lines.is_empty() {
        return empty(&p.logs, started.elapsed());
    }
    let found = found_in(&logs.lines);
    let n = sampled.len();
    let need = (p.share * n as f64 - 1e-9).ceil() as usize;
    let missing: Vec<(usize, &Sent)> = sampled
        .iter()
        .enumerate()
        .filter(|(i, _)| !found.contains(i))
        .map(|(i, s)| (i, *s))
        .collect();
    let seen = covered(&logs, &p.logs);
    let mut evidence: Vec<_> = sampled.iter().take(3).map(|s| s.evidence.clone()).collect();
    let assertion = if found.len() >= need {
        Assertion::pass(
            PROPERTY,
            format!(
                "{}/{n} sampled requests (of {} sent) found in the logs under the trace id of their traceparent (needed {need}); read {seen} from {}",
                found.len(),
                sent.len(),
                p.logs.name()
            ),
        )
    } else if logs.capped {
        Assertion::inconclusive(
            PROPERTY,
            format!(
                "{}/{n} sampled requests found under their trace id, but the read stopped at its cap ({seen}): the others may be in what was not read; raise `observe.logs.max_bytes` or narrow the source",
                found.len()
            ),
        )
    } else {
        // Why each is missing: logged by its request id without the trace
        // id, or not logged at all (as far as tminus can tell).
        let mut why = Vec::new();
        for (_, s) in missing.iter().take(5) {
            let by_request = s.request_id.as_deref().and_then(|rid| {
                logs.lines
                    .iter()
                    .find(|l| under_request(l, l.json().as_ref(), f, rid))
            });
            why.push(match (by_request, &s.request_id) {
                (Some(l), Some(rid)) => format!(
                    "trace id {} (request id {}): logged at {} without it in `{}`",
                    short(&s.trace_id),
                    short(rid),
                    l.position(),
                    f.trace_id
                ),
                (_, Some(rid)) => format!(
                    "trace id {} (request id {}): in no line",
                    short(&s.trace_id),
                    short(rid)
                ),
                (_, None) => format!("trace id {}: in no line", short(&s.trace_id)),
            });
            evidence.push(s.evidence.clone());
        }
        Assertion::fail(
            PROPERTY,
            format!(
                "{} of {n} sampled requests are not in the logs under their trace id after {}: {}{}; read {seen} from {}",
                missing.len(),
                crate::fmt_duration(p.deadline),
                why.join("; "),
                if missing.len() > 5 { "; ..." } else { "" },
                p.logs.name()
            ),
            format!("at least {need} of {n} found under their trace id"),
            format!("{} found", found.len()),
        )
    };
    let mut props = figures(&logs);
    props.push(prop("requests_sampled", n as i64));
    props.push(prop("requests_found", found.len() as i64));
    Outcome::judged(vec![assertion])
        .with_evidence(evidence)
        .with_properties(props)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_spread_over_the_requests() {
        assert_eq!(spread(3, 5), [0, 1, 2]);
        assert_eq!(spread(10, 3), [0, 3, 6]);
    }

    #[test]
    fn json_lines_match_in_their_field_and_text_lines_anywhere() {
        let f = LineFormat::default();
        let t = "4bf92f3577b34da6a3ce929d0e0e4736";
        let line = |s: &str| LogLine {
            number: 1,
            offset: None,
            text: s.to_owned(),
        };
        let j = line(&format!(
            r#"{{"trace_id":"{}","msg":"x"}}"#,
            t.to_uppercase()
        ));
        assert!(under_trace(&j, j.json().as_ref(), &f, t));
        let only_msg = line(&format!(r#"{{"msg":"trace {t}"}}"#));
        assert!(!under_trace(&only_msg, only_msg.json().as_ref(), &f, t));
        let text = line(&format!("INFO GET /x trace={t} 200"));
        assert!(under_trace(&text, text.json().as_ref(), &f, t));
    }
}
