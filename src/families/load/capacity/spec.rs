//! YAML spec of `load.capacity` (catalogue DEP-005): the T-3 rehearsal's
//! "how much can it take?", a check of `checks:` that searches the arrival
//! rate at which the suite's thresholds stop holding.

use crate::spec::kinds::{check_spec, family_kinds, must, param, DefaultValue as D, Kind};
use crate::spec::request::RequestSpec;

/// Every default of the kind: the plan applies these, `KINDS` prints them.
pub mod defaults {
    use std::time::Duration;

    /// The first rate tried (requests per second).
    pub const START: f64 = 10.0;
    /// Bisect until the bracket's width over its low end is at most this.
    pub const RESOLUTION: f64 = 0.1;
    pub const USERS: u64 = 4;
    /// The shortest window, whatever the sample minimum (whole seconds:
    /// goose test plans count seconds).
    pub const MIN_WINDOW: Duration = Duration::from_secs(1);
    /// The whole search's bound.
    pub const MAX_DURATION: Duration = Duration::from_secs(120);
    /// The fewest samples a window needs, whatever its thresholds.
    pub const MIN_SAMPLES_FLOOR: u64 = 20;
}

use defaults as d;

check_spec!(
    /// `load.capacity`: open arrival at rising rates, bracketed by doubling
    /// and bisected; each step judged by `thresholds` with their chance
    /// bands over two agreeing windows (DEP-005).
    CapacitySpec {
        /// The request sent at each rate.
        pub request: RequestSpec,
        /// What a step must hold: `p99 < 200ms`, `error_rate < 1%` (percentiles, error_rate, rate_429).
        pub thresholds: Vec<String>,
        /// The rate ceiling (`400/s`): never tried above; passing it is "bound not found".
        pub max_rate: String,
        /// The first rate tried (`20/s`).
        #[serde(default)]
        pub start: Option<String>,
        /// Bisect until (high - low) / low is at most this (`10%`).
        #[serde(default)]
        pub resolution: Option<String>,
        /// Users the generator's pool starts with.
        #[serde(default)]
        pub users: Option<u64>,
        /// The most users the pool opens (default 10 x users, at most 1000).
        #[serde(default)]
        pub max_users: Option<u64>,
        /// Samples a window needs (default: from the thresholds; p99 needs 200).
        #[serde(default)]
        pub min_samples: Option<u64>,
        /// The shortest window (whole seconds).
        #[serde(default)]
        pub min_window: Option<crate::model::scalar::DurationValue>,
        /// A declared capacity (`60/s`): the check fails when the knee is below it.
        #[serde(default)]
        pub at_least: Option<String>,
        /// Bound on the whole search.
        #[serde(default)]
        pub max_duration: Option<crate::model::scalar::DurationValue>,
    }
);

family_kinds!(
    /// A `load.*` check as written (the burst itself is the suite's `load:`).
    LoadCheckSpec {
        "load.capacity" => Capacity(CapacitySpec),
    }
);

const SOURCE: &str =
    "DEP-005 (k6 breakpoint test; IETF MLRsearch: bracket and bisect with trials that agree)";

/// Kinds of the load family that are checks.
pub const KINDS: &[Kind] = &[Kind {
    properties: &[must(
        "bracketed",
        SOURCE,
        "the knee lies between a passing and a failing rate within `resolution` (at or above `at_least` when declared); a ceiling that passes is \"bound not found\", a generator that could not hold a rate gives a lower bound, never a number it did not judge",
    )],
    name: "load.capacity",
    summary: "capacity search: open arrival at doubling then bisected rates, each step judged by the thresholds' chance bands over two agreeing windows: the knee's bracket, \"bound not found\" or a lower bound (DEP-005)",
    params: &[
        param("request", D::Required, "the request sent at every rate (the shared request grammar)"),
        param(
            "thresholds",
            D::Required,
            "what a step must hold, in the burst's grammar: percentiles (`p99 < 200ms`, `raw_p95 < 1s`), `error_rate < 1%`, `rate_429 < 5%`",
        ),
        param("max_rate", D::Required, "the rate ceiling (`400/s`): passing it is \"bound not found, capacity >= ceiling\""),
        param("start", D::Text("10/s"), "the first rate tried; the search doubles from it"),
        param("resolution", D::Share(d::RESOLUTION), "bisect until (high - low) / low is at most this"),
        param("users", D::Int(d::USERS), "users the generator's pool starts with"),
        param("max_users", D::Text("10 × users, at most 1000"), "the most users the pool opens; a step it cannot hold without the target saturating is a lower bound"),
        param(
            "min_samples",
            D::Text("2 / (1 - q) for pq, 2 / limit for a rate, at least 20"),
            "answers each window needs (p99: 200)",
        ),
        param("min_window", D::Duration(d::MIN_WINDOW), "the shortest window (whole seconds)"),
        param("at_least", D::Absent, "a declared capacity (`60/s`): fail when the knee is below it"),
        param("max_duration", D::Duration(d::MAX_DURATION), "bound on the whole search"),
    ],
}];
