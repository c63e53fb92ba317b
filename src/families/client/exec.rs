//! Client certification (`client.*` kinds): tminus serves a scripted mock of
//! the platform (`upstream`), runs the integration's client command against
//! it (once, or K at once for a herd) and judges the recorded attempt
//! timeline: Retry-After respected, backoff growing, jitter, bounded retries,
//! no retry on 4xx, the 503 policy, Idempotency-Key reuse, and slowing down
//! before the limit, retry amplification under a share of failures, and a
//! replayed success taken as a success. Every failure shows the timeline (offsets, answers, keys).
//!
//! Error, not Fail, when the client could not be judged: the command could not
//! start, sent nothing, or never reached the situation the check is about.

use super::{judge, process};
use std::sync::Arc;

use futures::future::join_all;

use super::cpu::CpuBook;
use crate::context::CheckContext;
use crate::families::client::plan::{ClientPlan, Judge};
use crate::outcome::prop;
use crate::outcome::Outcome;
use crate::upstream::{Attempt, Hook, Served, Upstream};
use process::{run_client, ClientRunResult, Ended, StopRule};

/// One scenario's results.
pub struct RunRecord {
    pub label: String,
    pub results: Vec<ClientRunResult>,
    pub attempts: Vec<Attempt>,
    /// The control group run with this herd (numbered after `results`).
    pub control: Vec<ClientRunResult>,
    /// The herd's CPU time, sampled at each request and answer (a herd
    /// with a control group, on Linux).
    pub cpu: Option<Arc<CpuBook>>,
}

impl RunRecord {
    pub fn of(&self, client: usize) -> Vec<&Attempt> {
        self.attempts
            .iter()
            .filter(|a| a.client == client)
            .collect()
    }
}

pub async fn run(p: &ClientPlan, ctx: &CheckContext) -> Outcome {
    let stop = StopRule {
        after_attempts: p.stop_after_attempts,
        after_time: p.stop_after_time,
    };
    let clients: usize = p.runs.iter().map(|r| r.clients).sum();
    ctx.note(format!(
        "running `{}` {} time(s) against the mock upstream",
        p.command.shown(),
        clients
    ));
    // Scenarios are independent: run them all at once to keep the check short.
    if let Some(c) = &p.control {
        ctx.note(format!(
            "with {} copies of tminus's reference client without jitter alongside, to measure the machine's own noise",
            c.clients
        ));
    }
    let records = join_all(p.runs.iter().enumerate().map(|(i, r)| async move {
        let control = p.control.as_ref().filter(|_| i == 0);
        // The herd's CPU is read on the upstream's clock, at each request
        // and each answer (the hook), when it has a control group.
        let cpu = control
            .filter(|_| CpuBook::supported())
            .map(|_| Arc::new(CpuBook::default()));
        let clock = Arc::new(std::sync::OnceLock::<std::time::Instant>::new());
        let hook: Option<Hook> = cpu.clone().map(|book| {
            let clock = clock.clone();
            Arc::new(move |client: usize| {
                if let Some(t0) = clock.get() {
                    book.sample(client, t0.elapsed());
                }
            }) as Hook
        });
        let up = match Upstream::start_with(
            r.script.clone(),
            hook,
            ctx.upstream_max_body,
            ctx.upstream_tls.clone(),
        )
        .await
        {
            Ok(u) => u,
            Err(e) => return Err(format!("cannot start the mock upstream on 127.0.0.1: {e}")),
        };
        let _ = clock.set(std::time::Instant::now() - up.now());
        let book = cpu.as_deref();
        let herd = join_all((0..r.clients).map(|n| run_client(&p.command, &up, n, stop, book)));
        let controls = join_all(
            control
                .into_iter()
                .flat_map(|c| (0..c.clients).map(move |n| (c, r.clients + n)))
                .map(|(c, n)| run_client(&c.command, &up, n, stop, None)),
        );
        let (results, control) = futures::join!(herd, controls);
        let attempts = up.attempts();
        up.shutdown().await;
        Ok(RunRecord {
            label: r.label.clone(),
            results,
            attempts,
            control,
            cpu,
        })
    }))
    .await;
    let mut runs = Vec::new();
    for r in records {
        match r {
            Ok(r) => runs.push(r),
            Err(e) => return Outcome::error(e),
        }
    }
    // Could the client be judged at all?
    for r in &runs {
        if let Some((a, size)) = r.attempts.iter().find_map(|a| match a.served {
            Served::TooLarge { size } => Some((a, size)),
            _ => None,
        }) {
            return Outcome::error(format!(
                "the client sent a request body of {size} bytes ({} {}), over the mock upstream's limit of {} bytes, and was answered 413; raise it with --upstream-max-body (e.g. --upstream-max-body 8MiB)",
                a.method, a.path, ctx.upstream_max_body
            ));
        }
        for res in &r.results {
            if let Ended::SpawnFailed(e) = &res.ended {
                return Outcome::error(format!("cannot start the client command {e}"));
            }
            if r.of(res.client).is_empty() {
                return Outcome::error(format!(
                    "the client sent no request to the mock upstream ({}: it {}){}",
                    r.label,
                    res.describe(),
                    stderr_note(res)
                ));
            }
        }
    }
    let out = match &p.judge {
        Judge::RetryAfter {
            tolerance,
            samples,
            date,
        } => judge::retry_after(&runs, *tolerance, *samples, *date),
        Judge::Exponential {
            growth,
            min_increase,
            max_gap,
            min_gaps,
        } => judge::exponential(&runs, *growth, *min_increase, *max_gap, *min_gaps),
        Judge::Jitter { min_spread } => judge::jitter(&runs, *min_spread),
        Judge::Bounded {
            max_attempts,
            max_total,
        } => judge::bounded(&runs, *max_attempts, *max_total),
        Judge::NoRetry4xx { statuses } => judge::no_retry_4xx(&runs, statuses),
        Judge::Retry503 { policy, scripted } => judge::retry_503(&runs, *policy, *scripted),
        Judge::IdempotencyKeys {
            format,
            min_operations,
        } => judge::idempotency_keys(&runs, *format, *min_operations),
        Judge::SlowsBeforeLimit {
            limit,
            window,
            min_requests,
        } => judge::slows_before_limit(&runs, *limit, *window, *min_requests),
        Judge::Amplification { operations, max } => judge::amplification(&runs, *operations, *max),
        Judge::Replay {
            header,
            value,
            operations,
        } => judge::replay(&runs, header, value, *operations),
        Judge::Traceparent => super::trace::judge(&runs),
        Judge::Polling {
            cursor_param,
            pages,
            limit,
            window,
        } => super::polling::judge(&runs, cursor_param, *pages, *limit, *window),
    };
    let total: usize = runs.iter().map(|r| r.attempts.len()).sum();
    out.with_properties(vec![prop("clients", clients), prop("attempts", total)])
}

pub(crate) fn stderr_note(r: &ClientRunResult) -> String {
    if r.stderr_tail.is_empty() {
        String::new()
    } else {
        let last: Vec<&str> = r.stderr_tail.lines().rev().take(3).collect();
        let last: Vec<&str> = last.into_iter().rev().collect();
        format!("; stderr: {}", last.join(" | "))
    }
}
