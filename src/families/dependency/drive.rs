//! Runs a dependency check's schedule: starts the double, sends the `setup:`
//! requests (with `${var.dependency_url}`), then sends `request` at each
//! stage's rate at fixed intervals (open arrival: a slow answer never delays
//! the next request), switching the double's phase as the stages pass; each
//! request carries its own traceparent, so the attempts the double journals
//! can be tied back to it ([`Run::attempts_of`]).
//!
//! Every request is bounded by the plan's answer cap; after the last answer
//! the double is watched a little longer (up to [`SETTLE`]) so that attempts
//! the API abandoned are journaled with the moment they were.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::context::{CheckContext, Scope};
use crate::double::{DepAttempt, Double, End};
use crate::families::common::{describe, send};
use crate::families::dependency::plan::{Drive, DEPENDENCY_URL_VAR};
use crate::http::TransportError;
use crate::outcome::{Evidence, Outcome};

/// How long the journal is given to see attempts end after the last answer.
pub const SETTLE: Duration = Duration::from_millis(400);

/// What one request got.
#[derive(Debug, Clone)]
pub enum Got {
    Status {
        status: u16,
        retry_after: bool,
        /// `502 (X-Request-Id: ...)`, for messages.
        described: String,
    },
    /// No answer: a transport error (a refused or dropped connection).
    Transport(String),
    /// No answer within tminus's own cap (the plan's `answer_cap`).
    NoAnswer(Duration),
}

/// One request tminus sent.
#[derive(Debug, Clone)]
pub struct Sent {
    /// Its stage (index into the plan's phases).
    pub stage: usize,
    /// When it was sent, on the double's clock.
    pub at: Duration,
    pub elapsed: Duration,
    pub got: Got,
    /// The id the dependency sees (the trace id, or the attribution header's value).
    pub id: String,
}

impl Sent {
    pub fn status(&self) -> Option<u16> {
        match &self.got {
            Got::Status { status, .. } => Some(*status),
            Got::Transport(_) | Got::NoAnswer(_) => None,
        }
    }
    pub fn ok(&self) -> bool {
        matches!(self.status(), Some(s) if (200..300).contains(&s))
    }
    /// `#12 at +1.20 s: 504 in 812 ms`.
    pub fn line(&self, n: usize) -> String {
        let got = match &self.got {
            Got::Status { described, .. } => described.clone(),
            Got::Transport(e) => e.clone(),
            Got::NoAnswer(after) => format!("no answer within {}", crate::fmt_duration(*after)),
        };
        format!(
            "request {} at +{:.2} s: {got} in {}",
            n + 1,
            self.at.as_secs_f64(),
            crate::fmt_duration(self.elapsed)
        )
    }
}

/// A finished schedule: what tminus sent and what the dependency saw.
pub struct Run {
    pub sent: Vec<Sent>,
    pub journal: Vec<DepAttempt>,
    /// The double's clock at each stage's start.
    pub stage_starts: Vec<Duration>,
    /// Index of the request each journaled attempt belongs to.
    owner: Vec<Option<usize>>,
    pub evidence: Vec<Evidence>,
}

impl Run {
    /// The attempts of request `i`, in arrival order.
    pub fn attempts_of(&self, i: usize) -> Vec<&DepAttempt> {
        self.journal
            .iter()
            .zip(&self.owner)
            .filter(|(_, o)| **o == Some(i))
            .map(|(a, _)| a)
            .collect()
    }

    /// Attempts tied to some request.
    pub fn attributed(&self) -> usize {
        self.owner.iter().filter(|o| o.is_some()).count()
    }

    /// Requests with at least one attempt.
    pub fn reached(&self) -> usize {
        let mut seen = vec![false; self.sent.len()];
        for i in self.owner.iter().flatten() {
            seen[*i] = true;
        }
        seen.iter().filter(|s| **s).count()
    }

    /// Requests of stage `stage`, with their indices.
    pub fn in_stage(&self, stage: usize) -> impl Iterator<Item = (usize, &Sent)> {
        self.sent
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.stage == stage)
    }

    /// The error when the journal cannot be tied to the requests: nothing
    /// reached the dependency, or nothing reached it with tminus's id.
    pub fn not_exercised(&self, attribution: &Option<String>) -> Option<String> {
        let n = self.sent.len();
        if self.journal.is_empty() {
            return Some(format!(
                "not exercised: 0 of {n} requests reached the dependency: the API answered without calling tminus's double (a cache, a stub, or its dependency URL does not lead to ${{var.{DEPENDENCY_URL_VAR}}})"
            ));
        }
        if self.attributed() == 0 {
            let how = match attribution {
                None => "the trace id of the traceparent tminus sent".to_owned(),
                Some(h) => format!("the `{h}` header"),
            };
            return Some(format!(
                "not exercised: the dependency received {} attempts but none carried {how}, so 0 of {n} requests can be tied to their attempts; propagate traceparent to the dependency, or name the header that carries tminus's id with `attribution_header`",
                self.journal.len()
            ));
        }
        None
    }
}

fn hex(bytes: usize) -> String {
    (0..bytes)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect()
}

/// Starts the double, runs `setup:`, drives the schedule, shuts the double
/// down. An `Err` is the check's outcome (the double could not start, the
/// setup was refused).
pub async fn run(d: &Drive, ctx: &CheckContext) -> Result<Run, Outcome> {
    let double = Double::start(&ctx.dependency, d.attribution.clone())
        .await
        .map_err(|e| {
            Outcome::error(format!(
                "cannot start the dependency double on {}: {e}",
                ctx.dependency.listen
            ))
        })?;
    let out = drive(d, ctx, &double).await;
    double.shutdown().await;
    out
}

async fn drive(d: &Drive, ctx: &CheckContext, double: &Double) -> Result<Run, Outcome> {
    let mut scope = Scope::new();
    scope.insert(DEPENDENCY_URL_VAR.into(), double.url().to_owned());
    let mut evidence = Vec::new();
    for (i, req) in d.setup.iter().enumerate() {
        let label = format!("setup {}", i + 1);
        let r = ctx.target.render(req, &scope);
        let ex = match send(ctx, &r, &label).await {
            Ok(ex) => ex,
            Err(o) => return Err(o.with_evidence(evidence)),
        };
        evidence.push(Evidence::from_exchange(&label, &ex));
        if !(200..300).contains(&ex.status()) {
            return Err(Outcome::error(format!(
                "{label} answered {}: the target did not take the dependency URL, so nothing can be judged",
                describe(&ex)
            ))
            .with_evidence(evidence));
        }
    }
    ctx.note(format!(
        "driving {} requests through {} while the dependency double at {} goes {}",
        d.count(),
        crate::fmt_duration(d.phases.iter().map(|s| s.length).sum()),
        double.url(),
        d.phases
            .iter()
            .map(|s| s.phase.describe())
            .collect::<Vec<_>>()
            .join(", then ")
    ));
    // The rate limits of the families that judge them are not ours: a 429
    // here is an answer like any other.
    let client = ctx.client.judging_limits();
    let mut tasks = tokio::task::JoinSet::new();
    let mut stage_starts = Vec::new();
    let started = Instant::now();
    let mut offset = Duration::ZERO;
    let mut n = 0usize;
    for (si, stage) in d.phases.iter().enumerate() {
        // The phase changes at the stage's boundary, not when the previous
        // stage's last request leaves: that request's attempts are its own
        // stage's.
        tokio::time::sleep_until((started + offset).into()).await;
        double.set_phase(stage.phase);
        stage_starts.push(double.now());
        let count = (stage.length.as_secs_f64() * stage.rate).round() as u64;
        for k in 0..count {
            let due = started + offset + Duration::from_secs_f64(k as f64 / stage.rate);
            tokio::time::sleep_until(due.into()).await;
            let mut r = ctx.target.render(&d.request, &scope);
            let trace = hex(16);
            r.set_header("traceparent", format!("00-{trace}-{}-01", hex(8)));
            let id = match &d.attribution {
                None => trace,
                Some(h) => {
                    let v = format!("tminus-{}", hex(8));
                    r.set_header(h, v.clone());
                    v
                }
            };
            r.timeout = d.answer_cap;
            let at = double.now();
            let client = client.clone();
            let index = n;
            tasks.spawn(async move {
                let t0 = Instant::now();
                let got = match client.send(&r).await {
                    Ok(ex) => Got::Status {
                        status: ex.status(),
                        retry_after: ex.response.header("retry-after").is_some(),
                        described: describe(&ex),
                    },
                    Err(TransportError::Timeout { after, .. }) => Got::NoAnswer(after),
                    Err(e) => Got::Transport(e.to_string()),
                };
                (
                    index,
                    Sent {
                        stage: si,
                        at,
                        elapsed: t0.elapsed(),
                        got,
                        id,
                    },
                )
            });
            n += 1;
        }
        offset += stage.length;
    }
    let mut sent: Vec<Option<Sent>> = vec![None; n];
    while let Some(j) = tasks.join_next().await {
        match j {
            Ok((i, s)) => sent[i] = Some(s),
            Err(e) => return Err(Outcome::error(format!("a request task stopped: {e}"))),
        }
    }
    let sent: Vec<Sent> = sent.into_iter().flatten().collect();
    // Abandoned attempts are journaled when hyper sees the closed
    // connection: give the last ones a moment.
    let settle = Instant::now() + SETTLE;
    while Instant::now() < settle && double.journal().iter().any(|a| a.end == End::Open) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let journal = double.journal();
    let index: HashMap<&str, usize> = sent
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let owner = journal
        .iter()
        .map(|a| a.request.as_deref().and_then(|r| index.get(r).copied()))
        .collect();
    Ok(Run {
        sent,
        journal,
        stage_starts,
        owner,
        evidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(at_ms: u64, request: Option<&str>) -> DepAttempt {
        DepAttempt {
            at: Duration::from_millis(at_ms),
            ended_at: Some(Duration::from_millis(at_ms + 5)),
            end: End::Answered(200),
            method: "POST".into(),
            path: "/v1/charges".into(),
            request: request.map(str::to_owned),
            idempotency_key: None,
            phase: 1,
        }
    }

    fn sent(id: &str) -> Sent {
        Sent {
            stage: 0,
            at: Duration::ZERO,
            elapsed: Duration::from_millis(10),
            got: Got::Status {
                status: 201,
                retry_after: false,
                described: "201".into(),
            },
            id: id.into(),
        }
    }

    fn run(journal: Vec<DepAttempt>, sent: Vec<Sent>) -> Run {
        let owner = journal
            .iter()
            .map(|a| {
                a.request
                    .as_deref()
                    .and_then(|r| sent.iter().position(|s| s.id == r))
            })
            .collect();
        Run {
            sent,
            journal,
            stage_starts: vec![Duration::ZERO],
            owner,
            evidence: Vec::new(),
        }
    }

    /// Nothing reached the double, or nothing that reached it carried
    /// tminus's ids: "not exercised", never a judged run.
    #[test]
    fn unattributed_journals_are_not_exercised() {
        let r = run(vec![], vec![sent("a"), sent("b")]);
        let e = r.not_exercised(&None).unwrap();
        assert!(e.contains("0 of 2 requests reached the dependency"), "{e}");
        let r = run(
            vec![attempt(1, None), attempt(2, Some("someone-else"))],
            vec![sent("a")],
        );
        let e = r.not_exercised(&Some("X-Tminus-Id".into())).unwrap();
        assert!(e.contains("none carried the `X-Tminus-Id` header"), "{e}");
        let r = run(
            vec![
                attempt(1, Some("a")),
                attempt(9, Some("a")),
                attempt(4, None),
            ],
            vec![sent("a"), sent("b")],
        );
        assert_eq!(r.not_exercised(&None), None);
        assert_eq!(r.attempts_of(0).len(), 2);
        assert_eq!((r.reached(), r.attributed()), (1, 2));
    }
}
