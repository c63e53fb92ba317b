//! The `load:` section of a suite (the T-3 burst rehearsal) as written: the
//! profile (users, hatch rate, hold, ramp-down, stages or iterations), the
//! weighted request mix in the shared request grammar, the side-effect
//! counter for LOAD-005 and the k6-like thresholds. `plan/load.rs` turns it
//! into a `LoadPlan`; nothing here interprets values.
//!
//! (`suite/load.rs` already holds the suite-file loader, hence this name.)

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::scalar::{DurationValue, Scalar, StatusSet};
use crate::suite::request::{CounterSpec, RequestSpec};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// Prefix of every result id (`burst.p95`); default `load`.
    #[serde(default)]
    pub id: Option<Spanned<String>>,
    #[serde(default)]
    pub description: Option<String>,
    /// Users at full load (closed model: each user sends, waits, sends).
    #[serde(default)]
    pub users: Option<Spanned<u64>>,
    /// Users started per second; or give `ramp` (time to start all users).
    #[serde(default)]
    pub hatch_rate: Option<Spanned<f64>>,
    #[serde(default)]
    pub ramp: Option<Spanned<DurationValue>>,
    /// Time at full load.
    #[serde(default)]
    pub hold: Option<Spanned<DurationValue>>,
    /// Time to stop all users at the end (0: all at once).
    #[serde(default)]
    pub ramp_down: Option<Spanned<DurationValue>>,
    /// A goose test plan instead of users/ramp/hold/ramp_down.
    #[serde(default)]
    pub stages: Vec<StageSpec>,
    /// Each user sends this many requests, then stops (instead of `hold`).
    #[serde(default)]
    pub iterations: Option<Spanned<u64>>,
    /// Requests per second all users together may send (`400/s` or `400`);
    /// also the pace the coordinated-omission correction measures against.
    pub max_rate: Spanned<Scalar>,
    /// Hard bound on the whole burst; default 10m.
    #[serde(default)]
    pub max_duration: Option<Spanned<DurationValue>>,
    /// Needed before load goes to a non-loopback host.
    #[serde(default)]
    pub allow_remote: bool,
    /// The weighted request mix.
    pub requests: Vec<MixSpec>,
    /// Share of requests that retry the previous idempotency key (`5%` or 0.05).
    #[serde(default)]
    pub duplicate_share: Option<Spanned<Scalar>>,
    /// Header carrying the key for `idempotency_key: auto`.
    #[serde(default)]
    pub idempotency_header: Option<String>,
    /// Side-effect counter read before and after the burst (LOAD-005).
    #[serde(default)]
    pub effects: Option<CounterSpec>,
    /// `p95 < 400ms`, `create: p99 < 1s`, `error_rate < 1%`, `rate_429 < 5%`,
    /// `throughput > 100/s`.
    #[serde(default)]
    pub thresholds: Vec<Spanned<String>>,
    /// Share of the scheduled requests that must really be sent; default 90%.
    #[serde(default)]
    pub min_delivered: Option<Spanned<Scalar>>,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// One step of a goose test plan: reach `users` over `over`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    pub users: Spanned<u64>,
    pub over: Spanned<DurationValue>,
}

/// One request kind of the mix.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixSpec {
    /// The kind's name in figures and thresholds (`create: p95 < 400ms`).
    pub name: Spanned<String>,
    #[serde(default)]
    pub weight: Option<Spanned<u32>>,
    /// `auto`: a fresh key per logical request.
    #[serde(default)]
    pub idempotency_key: Option<Spanned<String>>,
    pub request: RequestSpec,
    /// Statuses that count as success; default 2xx.
    #[serde(default)]
    pub success: Option<Spanned<StatusSet>>,
}
