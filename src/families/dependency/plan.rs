//! Plans of the dependency kinds: requests planned, figures checked (a rate
//! tminus can keep, phases long enough to hold a request, a 5xx failure), and
//! the phase schedule each kind drives the double through.

use std::time::Duration;

use crate::context::budget::Requests;
use crate::context::{PlanCtx, RequestPlan};
use crate::double::Phase;
use crate::families::dependency::spec::{
    BreakerSpec, DependencySpec, RetryBoundSpec, ShedSpec, TimeoutBudgetSpec,
};

/// Run-time variable holding the double's URL in `setup:` requests.
pub const DEPENDENCY_URL_VAR: &str = "dependency_url";

/// The highest open arrival rate a check may ask for (requests per second).
pub const MAX_RATE: f64 = 500.0;
/// The most requests one check may send.
pub const MAX_REQUESTS: u64 = 5_000;

/// What every dependency kind shares.
#[derive(Debug, Clone)]
pub struct Drive {
    pub request: RequestPlan,
    pub setup: Vec<RequestPlan>,
    /// `None`: the trace id of `traceparent`.
    pub attribution: Option<String>,
    /// (phase, its name, how long, requests per second).
    pub phases: Vec<Stage>,
    /// The longest tminus waits for one answer.
    pub answer_cap: Duration,
}

/// One stretch of the schedule.
#[derive(Debug, Clone)]
pub struct Stage {
    pub name: &'static str,
    pub phase: Phase,
    pub length: Duration,
    pub rate: f64,
}

impl Drive {
    /// Requests the schedule sends.
    pub fn count(&self) -> u64 {
        self.phases
            .iter()
            .map(|s| (s.length.as_secs_f64() * s.rate).round() as u64)
            .sum()
    }
}

#[derive(Debug, Clone)]
pub struct TimeoutPlan {
    pub drive: Drive,
    pub slo: Duration,
    pub try_timeout: Option<Duration>,
    pub tolerance: Duration,
}

#[derive(Debug, Clone)]
pub struct RetryPlan {
    pub drive: Drive,
    pub max_attempts: u64,
    pub retry_budget: f64,
    pub retry_after: Duration,
    pub min_backoff: Duration,
}

#[derive(Debug, Clone)]
pub struct BreakerPlan {
    pub drive: Drive,
    pub max_probes: u64,
    pub open_within: Option<Duration>,
    pub close_within: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct ShedPlan {
    pub drive: Drive,
    pub slo: Duration,
    pub capacity: f64,
    pub rejection_p99: Duration,
    pub goodput_ratio: f64,
}

/// A planned `dependency.*` check.
#[derive(Debug, Clone)]
pub enum DependencyPlan {
    TimeoutBudget(TimeoutPlan),
    RetryBound(RetryPlan),
    Breaker(BreakerPlan),
    Shed(ShedPlan),
}

impl DependencyPlan {
    pub fn drive(&self) -> &Drive {
        match self {
            DependencyPlan::TimeoutBudget(p) => &p.drive,
            DependencyPlan::RetryBound(p) => &p.drive,
            DependencyPlan::Breaker(p) => &p.drive,
            DependencyPlan::Shed(p) => &p.drive,
        }
    }

    /// The setup requests and the schedule's requests.
    pub fn requests(&self) -> Requests {
        let d = self.drive();
        let n = d.setup.len() as u64 + d.count();
        // Paced over the schedule: the most in one second is the top rate.
        let peak = d
            .phases
            .iter()
            .map(|s| s.rate.ceil() as u64)
            .max()
            .unwrap_or(0);
        Requests {
            window: (d.setup.len() as u64 + peak).min(n),
            ..Requests::own(n)
        }
    }
}

/// Checks the figures every kind has and plans its requests.
#[allow(clippy::too_many_arguments)]
fn drive(
    ctx: &mut PlanCtx<'_>,
    at: serde_saphyr::Location,
    request: &crate::spec::request::RequestSpec,
    setup: &[crate::spec::request::RequestSpec],
    attribution: &Option<String>,
    phases: Vec<Stage>,
    answer_cap: Duration,
) -> Drive {
    ctx.captures.insert(DEPENDENCY_URL_VAR.to_owned());
    let setup = setup.iter().map(|r| ctx.request(r, at)).collect();
    let request = ctx.request(request, at);
    for s in &phases {
        if !(s.rate > 0.0 && s.rate <= MAX_RATE) {
            ctx.error(
                at,
                format!(
                    "the rate of the {} phase is {} requests per second: give more than 0 and at most {MAX_RATE}",
                    s.name, s.rate
                ),
            );
        }
        if s.length < Duration::from_millis(100) {
            ctx.error(
                at,
                format!(
                    "the {} phase lasts {}: give at least 100ms",
                    s.name,
                    crate::fmt_duration(s.length)
                ),
            );
        }
    }
    let d = Drive {
        request,
        setup,
        attribution: attribution
            .as_ref()
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty()),
        phases,
        answer_cap,
    };
    if d.count() > MAX_REQUESTS {
        ctx.error(
            at,
            format!(
                "this schedule sends {} requests; at most {MAX_REQUESTS}: lower the rate or shorten the phases",
                d.count()
            ),
        );
    }
    d
}

fn positive(ctx: &mut PlanCtx<'_>, at: serde_saphyr::Location, what: &str, v: Duration) {
    if v.is_zero() {
        ctx.error(at, format!("`{what}` must be longer than 0"));
    }
}

fn fail_status(ctx: &mut PlanCtx<'_>, at: serde_saphyr::Location, s: u16) {
    if !(500..=599).contains(&s) {
        ctx.error(at, format!("`fail_status` {s} is not a 5xx status"));
    }
}

pub fn plan(ctx: &mut PlanCtx<'_>, spec: &DependencySpec) -> DependencyPlan {
    match spec {
        DependencySpec::TimeoutBudget(s) => DependencyPlan::TimeoutBudget(timeout(ctx, s)),
        DependencySpec::RetryBound(s) => DependencyPlan::RetryBound(retry(ctx, s)),
        DependencySpec::Breaker(s) => DependencyPlan::Breaker(breaker(ctx, s)),
        DependencySpec::Shed(s) => DependencyPlan::Shed(shed(ctx, s)),
    }
}

/// Slow phases' delays: just under the per-try timeout, and well over it
/// (three times the timeout, or twice the SLO without one).
pub fn slow_delays(slo: Duration, try_timeout: Option<Duration>) -> (Option<Duration>, Duration) {
    match try_timeout {
        Some(t) => (
            Some(t.mul_f64(0.8)),
            (t * 3).max(slo + Duration::from_millis(200)),
        ),
        None => (None, slo * 2),
    }
}

fn timeout(ctx: &mut PlanCtx<'_>, s: &TimeoutBudgetSpec) -> TimeoutPlan {
    let at = s.id.referenced;
    let slo = s.slo.0;
    positive(ctx, at, "slo", slo);
    let try_timeout = s.try_timeout.as_ref().map(|t| t.0);
    if let Some(t) = try_timeout {
        positive(ctx, at, "try_timeout", t);
        if t > slo {
            ctx.error(
                at,
                format!(
                    "`try_timeout` {} is longer than `slo` {}: the declared budget cannot hold",
                    crate::fmt_duration(t),
                    crate::fmt_duration(slo)
                ),
            );
        }
    }
    let length = s.phase_for.0;
    let (under, over) = slow_delays(slo, try_timeout);
    let stage = |name, phase| Stage {
        name,
        phase,
        length,
        rate: s.rate,
    };
    let mut phases = vec![stage("baseline", Phase::Healthy)];
    if let Some(u) = under {
        phases.push(stage("slow-under", Phase::Slow(u)));
    }
    phases.push(stage("slow-over", Phase::Slow(over)));
    phases.push(stage("hang", Phase::Hang));
    let cap = slo * 3 + Duration::from_secs(1);
    TimeoutPlan {
        drive: drive(
            ctx,
            at,
            &s.request,
            &s.setup,
            &s.attribution_header,
            phases,
            cap,
        ),
        slo,
        try_timeout,
        tolerance: s.tolerance.0,
    }
}

fn retry(ctx: &mut PlanCtx<'_>, s: &RetryBoundSpec) -> RetryPlan {
    let at = s.id.referenced;
    fail_status(ctx, at, s.fail_status);
    if s.max_attempts == 0 {
        ctx.error(at, "`max_attempts` counts the first attempt: at least 1");
    }
    if !(s.retry_budget >= 0.0 && s.retry_budget.is_finite()) {
        ctx.error(at, "`retry_budget` must be 0 or more");
    }
    let ra = s.retry_after.0;
    if ra.subsec_nanos() != 0 || ra.is_zero() {
        ctx.error(
            at,
            "`retry_after` must be whole seconds, at least 1s (Retry-After carries seconds)",
        );
    }
    let length = s.phase_for.0;
    let stage = |name, phase, length| Stage {
        name,
        phase,
        length,
        rate: s.rate,
    };
    let phases = vec![
        stage("baseline", Phase::Healthy, length),
        stage(
            "retry-after",
            Phase::Unavailable {
                retry_after_secs: ra.as_secs().max(1),
            },
            length,
        ),
        // Long enough for a breaker the 503s opened to close again.
        stage("recovery", Phase::Healthy, length * 2),
        stage(
            "failing",
            Phase::Fail(s.fail_status, Duration::ZERO),
            // Its second half outlasts a breaker's wait (1.5 x phase_for).
            length * 3,
        ),
    ];
    RetryPlan {
        drive: drive(
            ctx,
            at,
            &s.request,
            &s.setup,
            &s.attribution_header,
            phases,
            Duration::from_secs(10),
        ),
        max_attempts: s.max_attempts.max(1),
        retry_budget: s.retry_budget,
        retry_after: ra,
        min_backoff: s.min_backoff.0,
    }
}

fn breaker(ctx: &mut PlanCtx<'_>, s: &BreakerSpec) -> BreakerPlan {
    let at = s.id.referenced;
    fail_status(ctx, at, s.fail_status);
    if s.max_probes_in_flight == 0 {
        ctx.error(
            at,
            "`max_probes_in_flight` must be at least 1: a breaker that never probes never closes",
        );
    }
    let stage = |name, phase, length| Stage {
        name,
        phase,
        length,
        rate: s.rate,
    };
    let phases = vec![
        stage("healthy", Phase::Healthy, s.healthy_for.0),
        stage(
            "failing",
            Phase::Fail(s.fail_status, s.fail_delay.0),
            s.fail_for.0,
        ),
        stage("recovered", Phase::Healthy, s.recover_for.0),
    ];
    BreakerPlan {
        drive: drive(
            ctx,
            at,
            &s.request,
            &s.setup,
            &s.attribution_header,
            phases,
            Duration::from_secs(10),
        ),
        max_probes: s.max_probes_in_flight.max(1),
        open_within: s.open_within.as_ref().map(|d| d.0),
        close_within: s.close_within.as_ref().map(|d| d.0),
    }
}

fn shed(ctx: &mut PlanCtx<'_>, s: &ShedSpec) -> ShedPlan {
    let at = s.id.referenced;
    let slo = s.slo.0;
    positive(ctx, at, "slo", slo);
    if !(s.goodput_ratio > 0.0 && s.goodput_ratio <= 1.0) {
        ctx.error(at, "`goodput_ratio` is a share: more than 0, at most 1");
    }
    let phase = if s.dependency_delay.0.is_zero() {
        Phase::Healthy
    } else {
        Phase::Slow(s.dependency_delay.0)
    };
    let stage = |name, rate| Stage {
        name,
        phase,
        length: s.stage_for.0,
        rate,
    };
    let phases = vec![
        stage("capacity", s.capacity),
        stage("twice", s.capacity * 2.0),
    ];
    let rejection_p99 = s
        .rejection_p99
        .as_ref()
        .map(|d| d.0)
        .unwrap_or_else(|| Duration::from_millis(50).min(slo / 10));
    ShedPlan {
        drive: drive(
            ctx,
            at,
            &s.request,
            &s.setup,
            &s.attribution_header,
            phases,
            slo * 3 + Duration::from_secs(1),
        ),
        slo,
        capacity: s.capacity,
        rejection_p99,
        goodput_ratio: s.goodput_ratio,
    }
}
