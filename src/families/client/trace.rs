//! `client.traceparent` (catalogue TRC-C01): the upstream answers the first
//! `failures` attempts with a retryable `status` (Retry-After given), then
//! 201; the judge reads every attempt's `traceparent`. `valid`: each is a
//! W3C version-00 traceparent. `retries_share_trace`: the attempts of one
//! operation (every attempt up to and including the one answered 2xx: the
//! Idempotency-Key is not used, a client that changes it per retry is
//! judged by `client.idempotency_keys`) carry one trace-id, each with a
//! parent-id of its own (a retry is a new span of the same trace).

use super::exec::{stderr_note, RunRecord};
use super::judge::{not_served, timeline};
use super::plan::{created, dur, one, route, ClientPlan, Judge};
use super::spec::{defaults, TraceparentSpec};
use crate::context::PlanCtx;
use crate::outcome::{Assertion, Outcome};
use crate::upstream::{Attempt, Reply, RetryAfterForm, Step};

impl PlanCtx<'_> {
    pub fn client_traceparent(&mut self, s: &TraceparentSpec) -> ClientPlan {
        let cmd = self.command(&s.client, s.id.referenced);
        let status = s.status.unwrap_or(defaults::TRACE_STATUS);
        if !(status == 429 || (500..=599).contains(&status)) {
            self.error(
                s.id.referenced,
                format!("`status` must be 429 or a 5xx a client retries, got {status}"),
            );
        }
        let failures = s.failures.unwrap_or(defaults::TRACE_FAILURES);
        if !(1..=10).contains(&failures) {
            self.error(s.id.referenced, "`failures` must be between 1 and 10");
        }
        let ra = dur(&s.retry_after, defaults::RETRY_AFTER);
        let fail = Step::reply(Reply::status(status).retry_after(ra, RetryAfterForm::Seconds));
        let default = route(vec![fail; failures.clamp(1, 10) as usize], created());
        let script = self.script(&s.upstream, &s.r#match, default);
        let mut p = self.client_plan(cmd, one("retried", script), Judge::Traceparent);
        // The retries and the success, and a few more show a loop.
        p.stop_after_attempts = Some(failures.clamp(1, 10) as usize + 4);
        p
    }
}

/// The trace-id and parent-id of a W3C version-00 traceparent, or why not.
pub fn parse(value: &str) -> Result<(&str, &str), String> {
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let parts: Vec<&str> = value.split('-').collect();
    match parts.as_slice() {
        ["00", trace, parent, flags] if hex(trace, 32) && hex(parent, 16) && hex(flags, 2) => {
            if trace.bytes().all(|b| b == b'0') {
                Err("its trace-id is all zeros".into())
            } else if parent.bytes().all(|b| b == b'0') {
                Err("its parent-id is all zeros".into())
            } else {
                Ok((trace, parent))
            }
        }
        _ => Err("not `00-<32 lowercase hex>-<16 lowercase hex>-<2 hex>`".into()),
    }
}

fn header<'a>(a: &'a Attempt, name: &str) -> Option<&'a str> {
    a.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

pub fn judge(runs: &[RunRecord]) -> Outcome {
    let r = &runs[0];
    let res = &r.results[0];
    let all = r.of(res.client);
    let a: Vec<&Attempt> = all.iter().copied().filter(|x| x.is_mutating()).collect();
    if !all.iter().any(|x| x.is_scripted()) {
        return Outcome::error(not_served("retryable failure", &all) + &stderr_note(res));
    }
    let mut bad = Vec::new();
    let mut parsed = Vec::new();
    for (i, x) in a.iter().enumerate() {
        match header(x, "traceparent") {
            None => bad.push(format!("#{} has no traceparent", i + 1)),
            Some(v) => match parse(v) {
                Ok((t, p)) => parsed.push((x.answer.is_success(), t, p, i + 1)),
                Err(why) => bad.push(format!(
                    "#{} traceparent `{}`: {why}",
                    i + 1,
                    crate::redact::quote(v)
                )),
            },
        }
    }
    let valid = if bad.is_empty() {
        Assertion::pass(
            "valid",
            format!("all {} attempt(s) carry a valid traceparent", a.len()),
        )
    } else {
        Assertion::fail(
            "valid",
            format!(
                "{} of {} attempt(s) without a valid traceparent: {}",
                bad.len(),
                a.len(),
                bad.join("; ")
            ),
            "a W3C traceparent on every attempt",
            bad.join("; "),
        )
    };
    let shared = if !bad.is_empty() {
        Assertion::skipped(
            "retries_share_trace",
            "not judged: not every attempt carries a valid traceparent (see `valid`)",
        )
    } else {
        // An operation ends with the attempt answered 2xx.
        let mut ops: Vec<Vec<(&str, &str, usize)>> = vec![Vec::new()];
        for (done, t, p, n) in &parsed {
            if let Some(op) = ops.last_mut() {
                op.push((t, p, *n));
            }
            if *done {
                ops.push(Vec::new());
            }
        }
        let retried: Vec<&Vec<(&str, &str, usize)>> = ops.iter().filter(|v| v.len() > 1).collect();
        if retried.is_empty() {
            Assertion::not_exercised(
                "retries_share_trace",
                format!(
                    "no operation was retried, so whether retries share a trace was not exercised: {}{}",
                    timeline(&a),
                    stderr_note(res)
                ),
            )
        } else {
            let mut problems = Vec::new();
            for op in &retried {
                let traces: Vec<&str> = op.iter().map(|(t, _, _)| *t).collect();
                if traces.iter().any(|t| *t != traces[0]) {
                    problems.push(format!(
                        "attempts {} of one operation carry trace-ids {}",
                        op.iter()
                            .map(|(_, _, n)| format!("#{n}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        traces.join(", ")
                    ));
                }
                let mut parents: Vec<&str> = op.iter().map(|(_, p, _)| *p).collect();
                parents.sort_unstable();
                parents.dedup();
                if parents.len() < op.len() {
                    problems.push(format!(
                        "attempts {} of one operation reuse a parent-id: each attempt is a span of its own",
                        op.iter().map(|(_, _, n)| format!("#{n}")).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
            let attempts: usize = retried.iter().map(|v| v.len()).sum();
            if problems.is_empty() {
                Assertion::pass(
                    "retries_share_trace",
                    format!(
                        "{} retried operation(s), {attempts} attempts: one trace-id per operation, a new parent-id per attempt",
                        retried.len()
                    ),
                )
            } else {
                Assertion::fail(
                    "retries_share_trace",
                    problems.join("; "),
                    "one trace-id per operation, distinct parent-ids",
                    problems.join("; "),
                )
            }
        }
    };
    Outcome::judged(vec![valid, shared])
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn only_a_version_00_traceparent_with_non_zero_ids_parses() {
        let t = "0af7651916cd43dd8448eb211c80319c";
        assert_eq!(
            parse(&format!("00-{t}-b7ad6b7169203331-01")),
            Ok((t, "b7ad6b7169203331"))
        );
        for bad in [
            format!("00-{}-b7ad6b7169203331-01", "0".repeat(32)),
            format!("00-{t}-0000000000000000-01"),
            format!("00-{}-b7ad6b7169203331-01", t.to_uppercase()),
            format!("01-{t}-b7ad6b7169203331-01"),
            format!("00-{t}-b7ad6b7169203331"),
            "garbage".into(),
        ] {
            assert!(parse(&bad).is_err(), "{bad}");
        }
    }
}
