//! YAML specs of the dependency kinds (`dependency.*`, catalogue §8,
//! DEP-001..DEP-004): tminus plays the API's own dependency and judges how
//! the API behaves when it is slow, failing or overloaded.
//!
//! Every kind takes the request that makes the API call its dependency
//! (`request`), the requests that point the API at tminus's double
//! (`setup`, with `${var.dependency_url}`), an open arrival rate, and the
//! phases' lengths. Declared figures (`slo`, `try_timeout`, `capacity`, the
//! breaker's windows) are the API's own contract: without the optional ones
//! only what is universal is judged and the measured values are reported.

use crate::model::scalar::DurationValue;
use crate::spec::kinds::{
    check_spec, family_kinds, must, param, should, DefaultValue as D, Kind, Param,
};
use crate::spec::request::RequestSpec;

/// Every default of the family: serde applies these, `KINDS` prints them.
pub mod defaults {
    use std::time::Duration;

    pub const TIMEOUT_RATE: f64 = 10.0;
    pub const PHASE_FOR: Duration = Duration::from_secs(1);
    pub const TOLERANCE: Duration = Duration::from_millis(100);
    pub const RETRY_RATE: f64 = 10.0;
    pub const MAX_ATTEMPTS: u64 = 3;
    pub const RETRY_BUDGET: f64 = 0.1;
    pub const FAIL_STATUS: u64 = 503;
    pub const RETRY_AFTER: Duration = Duration::from_secs(2);
    pub const MIN_BACKOFF: Duration = Duration::from_millis(5);
    pub const BREAKER_RATE: f64 = 10.0;
    pub const HEALTHY_FOR: Duration = Duration::from_secs(1);
    pub const FAIL_FOR: Duration = Duration::from_secs(3);
    pub const RECOVER_FOR: Duration = Duration::from_secs(2);
    pub const FAIL_DELAY: Duration = Duration::from_millis(300);
    pub const MAX_PROBES: u64 = 1;
    pub const STAGE_FOR: Duration = Duration::from_secs(2);
    pub const GOODPUT_RATIO: f64 = 0.8;
    pub const DEPENDENCY_DELAY: Duration = Duration::ZERO;
}

use defaults as d;

fn timeout_rate() -> f64 {
    d::TIMEOUT_RATE
}
fn retry_rate() -> f64 {
    d::RETRY_RATE
}
fn breaker_rate() -> f64 {
    d::BREAKER_RATE
}
fn phase_for() -> DurationValue {
    DurationValue(d::PHASE_FOR)
}
fn tolerance() -> DurationValue {
    DurationValue(d::TOLERANCE)
}
fn max_attempts() -> u64 {
    d::MAX_ATTEMPTS
}
fn retry_budget() -> f64 {
    d::RETRY_BUDGET
}
fn fail_status() -> u16 {
    d::FAIL_STATUS as u16
}
fn retry_after() -> DurationValue {
    DurationValue(d::RETRY_AFTER)
}
fn min_backoff() -> DurationValue {
    DurationValue(d::MIN_BACKOFF)
}
fn healthy_for() -> DurationValue {
    DurationValue(d::HEALTHY_FOR)
}
fn fail_for() -> DurationValue {
    DurationValue(d::FAIL_FOR)
}
fn recover_for() -> DurationValue {
    DurationValue(d::RECOVER_FOR)
}
fn fail_delay() -> DurationValue {
    DurationValue(d::FAIL_DELAY)
}
fn max_probes() -> u64 {
    d::MAX_PROBES
}
fn stage_for() -> DurationValue {
    DurationValue(d::STAGE_FOR)
}
fn goodput_ratio() -> f64 {
    d::GOODPUT_RATIO
}
fn dependency_delay() -> DurationValue {
    DurationValue(d::DEPENDENCY_DELAY)
}

check_spec!(
    /// `dependency.timeout_budget`: the dependency slow (just under and well
    /// over the declared per-try timeout), then hanging; every request is
    /// answered within the SLO and every attempt abandoned in time (DEP-001).
    TimeoutBudgetSpec {
        /// The request that makes the API call its dependency.
        pub request: RequestSpec,
        /// Requests that point the API at `${var.dependency_url}`.
        #[serde(default)]
        pub setup: Vec<RequestSpec>,
        /// The API's latency objective: the longest any request may take.
        pub slo: DurationValue,
        /// The API's declared per-try timeout of its dependency calls.
        #[serde(default)]
        pub try_timeout: Option<DurationValue>,
        /// Requests per second, sent at fixed intervals (open arrival).
        #[serde(default = "timeout_rate")]
        pub rate: f64,
        /// Length of each phase.
        #[serde(default = "phase_for")]
        pub phase_for: DurationValue,
        /// Measurement allowance added to every time bound.
        #[serde(default = "tolerance")]
        pub tolerance: DurationValue,
        /// Header carrying tminus's request id to the dependency (default: the trace id of `traceparent`).
        #[serde(default)]
        pub attribution_header: Option<String>,
    }
);

check_spec!(
    /// `dependency.retry_bound`: the dependency fails (503 + Retry-After, then
    /// a steady 5xx): attempts per request bounded, backoff with jitter,
    /// Retry-After respected, retried POSTs keyed, amplification bounded (DEP-002).
    RetryBoundSpec {
        pub request: RequestSpec,
        #[serde(default)]
        pub setup: Vec<RequestSpec>,
        #[serde(default = "retry_rate")]
        pub rate: f64,
        #[serde(default = "phase_for")]
        pub phase_for: DurationValue,
        /// Most attempts per request (the first and its retries), times the healthy fan-out.
        #[serde(default = "max_attempts")]
        pub max_attempts: u64,
        /// Retry budget: under sustained failure, attempts per request at most 1 + this.
        #[serde(default = "retry_budget")]
        pub retry_budget: f64,
        /// The status of the sustained failure.
        #[serde(default = "fail_status")]
        pub fail_status: u16,
        /// The dependency's Retry-After in its 503 phase.
        #[serde(default = "retry_after")]
        pub retry_after: DurationValue,
        /// The shortest pause between a failed attempt and its retry counted as a backoff.
        #[serde(default = "min_backoff")]
        pub min_backoff: DurationValue,
        #[serde(default)]
        pub attribution_header: Option<String>,
    }
);

check_spec!(
    /// `dependency.breaker`: healthy, failing, healthy again at a constant
    /// rate: the breaker opens, probes without a herd, closes (DEP-003).
    BreakerSpec {
        pub request: RequestSpec,
        #[serde(default)]
        pub setup: Vec<RequestSpec>,
        #[serde(default = "breaker_rate")]
        pub rate: f64,
        #[serde(default = "healthy_for")]
        pub healthy_for: DurationValue,
        /// How long the dependency fails (long enough for the breaker's minimum calls).
        #[serde(default = "fail_for")]
        pub fail_for: DurationValue,
        #[serde(default = "recover_for")]
        pub recover_for: DurationValue,
        #[serde(default = "fail_status")]
        pub fail_status: u16,
        /// How long each failing answer takes (a slow failure shows a herd).
        #[serde(default = "fail_delay")]
        pub fail_delay: DurationValue,
        /// Most dependency attempts in flight at once while the breaker is open.
        #[serde(default = "max_probes")]
        pub max_probes_in_flight: u64,
        /// Declared: the longest from the fault's start to the breaker opening.
        #[serde(default)]
        pub open_within: Option<DurationValue>,
        /// Declared: the longest from recovery to the breaker closing.
        #[serde(default)]
        pub close_within: Option<DurationValue>,
        #[serde(default)]
        pub attribution_header: Option<String>,
    }
);

check_spec!(
    /// `dependency.shed`: at capacity, then at twice capacity: the API sheds
    /// with fast 429/503 + Retry-After, admitted requests meet the SLO, goodput
    /// holds (DEP-004, LOAD-004).
    ShedSpec {
        pub request: RequestSpec,
        #[serde(default)]
        pub setup: Vec<RequestSpec>,
        pub slo: DurationValue,
        /// The API's capacity in requests per second (declared, or found by a capacity search).
        pub capacity: f64,
        #[serde(default = "stage_for")]
        pub stage_for: DurationValue,
        /// Rejection p99 bound (default min(50 ms, 10 % of the SLO)).
        #[serde(default)]
        pub rejection_p99: Option<DurationValue>,
        #[serde(default = "goodput_ratio")]
        pub goodput_ratio: f64,
        /// How long the dependency takes to answer during the check.
        #[serde(default = "dependency_delay")]
        pub dependency_delay: DurationValue,
        #[serde(default)]
        pub attribution_header: Option<String>,
    }
);

family_kinds!(
    /// A `dependency.*` check as written.
    DependencySpec {
        "dependency.timeout_budget" => TimeoutBudget(TimeoutBudgetSpec),
        "dependency.retry_bound" => RetryBound(RetryBoundSpec),
        "dependency.breaker" => Breaker(BreakerSpec),
        "dependency.shed" => Shed(ShedSpec),
    }
);

/// Where the API's answers and its dependency's attempts are tied.
const ATTRIBUTION: Param = param(
    "attribution_header",
    D::Text("the trace id of traceparent"),
    "header the API forwards to its dependency carrying tminus's request id; by default the trace id of the traceparent tminus sends, which the API propagates",
);
const REQUEST: Param = param(
    "request",
    D::Required,
    "the request that makes the API call its dependency",
);
const SETUP: Param = param(
    "setup",
    D::List(&[]),
    "requests sent first that point the API at `${var.dependency_url}` (or none, when its configuration already leads to --dependency-listen)",
);
const PHASE_FOR: Param = param(
    "phase_for",
    D::Duration(d::PHASE_FOR),
    "length of each phase",
);
const FAIL_STATUS: Param = param(
    "fail_status",
    D::Int(d::FAIL_STATUS),
    "status of the dependency's failures",
);

const SLO_SOURCE: &str =
    "DEP-001 (seed #2: SLO 400 ms -> upstream timeout 250-300 ms, total within the SLO)";

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the dependency family.
pub const KINDS: &[Kind] = &[
    Kind {
        properties: &[
            must("within_slo", SLO_SOURCE, "every request of the slow and hanging phases is answered within `slo` + `tolerance` (the maximum, not a percentile: a timeout is a bound)"),
            must("deliberate", SLO_SOURCE, "every answer of those phases is a 2xx (a fallback) or a deliberate 5xx (502/503/504): no dropped connection, no other status (a request unanswered at tminus's cap fails `within_slo` only)"),
            must("attempts_abandoned", SLO_SOURCE, "every dependency attempt of the slow-over and hanging phases is abandoned (or answered) within `try_timeout` + `tolerance` (`slo` when undeclared)"),
            must("total_within_slo", SLO_SOURCE, "per request, from its first dependency attempt to the end of its last: within `slo` (attempts x budget + backoff); an API that keeps retrying after answering fails here"),
            should("waits_under_timeout", "DEP-001 (a timeout just over the dependency's latency is not cut short)", "requests whose dependency answers in 80 % of `try_timeout` succeed; skipped without `try_timeout`"),
        ],
        name: "dependency.timeout_budget",
        summary: "the dependency slow (under and over the per-try timeout) then hanging: every request answered within the SLO, every attempt abandoned in time (DEP-001, LOAD-007)",
        params: &[
            REQUEST,
            SETUP,
            param("slo", D::Required, "the API's latency objective: the longest a request may take"),
            param("try_timeout", D::Absent, "the API's declared per-try timeout of its dependency calls"),
            param("rate", D::Float(d::TIMEOUT_RATE), "requests per second, at fixed intervals"),
            PHASE_FOR,
            param("tolerance", D::Duration(d::TOLERANCE), "measurement allowance added to each bound"),
            ATTRIBUTION,
        ],
    },
    Kind {
        properties: &[
            must("attempts_bounded", "DEP-002 (Google SRE book: at most 3 attempts)", "per request, dependency attempts during failures at most `max_attempts` x the healthy fan-out"),
            should("backoff_jitter", "DEP-002 (seed #2: retries with jitter)", "retries wait at least `min_backoff` after the failed attempt, and the waits differ (jitter); skipped with fewer than 3 retried requests"),
            must("retry_after_respected", "DEP-002; RFC 9110 §10.2.3", "no attempt of a request follows the dependency's 503 + Retry-After sooner than Retry-After"),
            must("retries_keyed", "DEP-002 (no retry of a POST without an idempotency key)", "every retried POST carries one Idempotency-Key on all its attempts; skipped when nothing was retried"),
            must("amplification", "DEP-002 (Google SRE book: a retry budget)", "over the second half of the sustained failure, dependency attempts per request at most 1 + `retry_budget`"),
        ],
        name: "dependency.retry_bound",
        summary: "the dependency answering 503 + Retry-After then failing steadily: bounded attempts with jittered backoff, Retry-After respected, keyed POST retries, bounded amplification (DEP-002)",
        params: &[
            REQUEST,
            SETUP,
            param("rate", D::Float(d::RETRY_RATE), "requests per second, at fixed intervals"),
            PHASE_FOR,
            param("max_attempts", D::Int(d::MAX_ATTEMPTS), "most attempts per request, in all"),
            param("retry_budget", D::Float(d::RETRY_BUDGET), "extra attempts per request allowed under sustained failure"),
            FAIL_STATUS,
            param("retry_after", D::Duration(d::RETRY_AFTER), "the dependency's Retry-After in its 503 phase"),
            param("min_backoff", D::Duration(d::MIN_BACKOFF), "shortest pause before a retry counted as a backoff"),
            ATTRIBUTION,
        ],
    },
    Kind {
        properties: &[
            must("opens", "DEP-003 (seed #2: the breaker opens on timeouts/5xx)", "during the fault, requests are answered without reaching the dependency, and in the fault's second half at most half reach it; within `open_within` when declared"),
            must("no_herd", "DEP-003; safe-client-gateway PR #3442 (a half-open herd)", "the requests let through while it was open (its probes) have at most `max_probes_in_flight` dependency attempts in flight at once; not judged when it never opened"),
            must("no_flapping", "DEP-003 (one open episode while the fault is steady)", "once it is seen open (3 requests in a row short-circuited), no more than `max_probes_in_flight` + 1 requests in a row reach the failing dependency: the breaker does not close again while the fault holds"),
            must("closes", "DEP-003", "after recovery, requests succeed again before the phase ends (within `close_within` when declared)"),
        ],
        name: "dependency.breaker",
        summary: "healthy, failing, healthy again: the breaker opens, probes one at a time, does not flap, closes (DEP-003)",
        params: &[
            REQUEST,
            SETUP,
            param("rate", D::Float(d::BREAKER_RATE), "requests per second, at fixed intervals"),
            param("healthy_for", D::Duration(d::HEALTHY_FOR), "healthy phase before the fault"),
            param("fail_for", D::Duration(d::FAIL_FOR), "length of the fault"),
            param("recover_for", D::Duration(d::RECOVER_FOR), "healthy phase after it"),
            FAIL_STATUS,
            param("fail_delay", D::Duration(d::FAIL_DELAY), "how long each failing answer takes"),
            param("max_probes_in_flight", D::Int(d::MAX_PROBES), "most attempts at once while open"),
            param("open_within", D::Absent, "declared: the longest from the fault to the breaker opening"),
            param("close_within", D::Absent, "declared: the longest from recovery to the breaker closing"),
            ATTRIBUTION,
        ],
    },
    Kind {
        properties: &[
            must("sheds", "DEP-004; LOAD-004 (AWS Builders' Library: load shedding)", "at twice `capacity` some requests are rejected with 429/503; an error when all were admitted within the SLO (the capacity is higher than declared)"),
            must("rejections_fast", "DEP-004 (seed #2: full -> 429/503 at once)", "rejection p99 within `rejection_p99`; skipped without rejections"),
            must("retry_after", "DEP-004; RL-007", "every rejection carries Retry-After"),
            must("admitted_within_slo", "LOAD-004", "p95 of the admitted (2xx) requests at twice capacity within `slo`"),
            must("no_transport_errors", "LOAD-004 (no status-0 errors)", "no connection error or client timeout at either stage: they are not shedding"),
            must("goodput", "DEP-004", "requests answered 2xx within the SLO per second at twice capacity at least `goodput_ratio` of those at capacity"),
        ],
        name: "dependency.shed",
        summary: "at capacity, then twice capacity: fast 429/503 + Retry-After, admitted requests within the SLO, goodput held (DEP-004, LOAD-004)",
        params: &[
            REQUEST,
            SETUP,
            param("slo", D::Required, "the API's latency objective"),
            param("capacity", D::Required, "the API's capacity, requests per second"),
            param("stage_for", D::Duration(d::STAGE_FOR), "length of each stage"),
            param("rejection_p99", D::Text("min(50ms, 10 % of slo)"), "bound on the rejections' p99"),
            param("goodput_ratio", D::Float(d::GOODPUT_RATIO), "least goodput at twice capacity, as a share of goodput at capacity"),
            param("dependency_delay", D::Duration(d::DEPENDENCY_DELAY), "how long the double takes to answer during the check"),
            ATTRIBUTION,
        ],
    },
];
