//! The burst's JSON summary, `load-<suite>-<id>.json`: typed, so its shape is
//! the committed schema `schema/load-summary.schema.json` (checked by a test).
//! Latencies are milliseconds with 3 decimals; shares are 0..1.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::plan::Profile;
use super::stats::{ms, KindStats};

/// Bumped only on incompatible changes of the summary's shape.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
pub struct LoadSummary {
    pub version: u32,
    pub suite: String,
    pub load: String,
    pub target: String,
    pub cancelled: bool,
    pub hit_max_duration: bool,
    pub engine_error: Option<String>,
    pub elapsed_s: f64,
    pub profile: ProfileSummary,
    pub max_rate_per_s: f64,
    pub scheduled_requests: f64,
    pub delivered_share: f64,
    /// Scheduled slots never sent (k6's `dropped_iterations`).
    pub dropped: u64,
    /// The open-arrival pool; absent for `iterations` (a closed pool) and
    /// for a merge of shards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolSummary>,
    pub idempotency: IdempotencySummary,
    pub overall: KindSummary,
    /// Per request kind of the mix, by name.
    pub kinds: BTreeMap<String, KindSummary>,
    pub files: FilesSummary,
    /// Present when `effects:` was read before and after the burst.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effects: Option<EffectsSummary>,
    /// The target's own signals (`observe:`), when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedSummary>,
}

/// What `observe:` read: each series' points, seconds since the burst
/// began (negative before it).
#[derive(Serialize)]
pub struct ObservedSummary {
    pub source: String,
    pub burst_s: f64,
    pub series: BTreeMap<String, ObservedSeriesSummary>,
}

#[derive(Serialize)]
pub struct ObservedSeriesSummary {
    pub query: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub labels: String,
    pub fresh_samples_during: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `[seconds since the burst began, value]`.
    pub points: Vec<[f64; 2]>,
}

impl From<&super::observe::Observed> for ObservedSummary {
    fn from(o: &super::observe::Observed) -> Self {
        ObservedSummary {
            source: o.source.clone(),
            burst_s: (o.end_s * 1000.0).round() / 1000.0,
            series: o
                .series
                .iter()
                .map(|s| {
                    (
                        s.name.clone(),
                        ObservedSeriesSummary {
                            query: s.query.clone(),
                            labels: s.labels.clone(),
                            fresh_samples_during: s.fresh_during,
                            error: s.error.clone(),
                            points: s
                                .points
                                .iter()
                                .filter(|p| p.value.is_finite())
                                .map(|p| [(p.at_s * 1000.0).round() / 1000.0, p.value])
                                .collect(),
                        },
                    )
                })
                .collect(),
        }
    }
}

/// The load profile as planned: stages (users reached over whole seconds)
/// or a closed count of iterations per user.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProfileSummary {
    Stages {
        stages: Vec<Stage>,
    },
    Rates {
        stages: Vec<RateStage>,
    },
    Iterations {
        users: usize,
        hatch_rate: f64,
        iterations: u64,
    },
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Stage {
    /// Users running at the end of the stage.
    pub users: usize,
    /// Whole seconds to get there (0: at once).
    pub over_s: u64,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RateStage {
    /// The arrival rate at the end of the stage (slots a second).
    pub rate_per_s: f64,
    /// Whole seconds to get there, linearly from the previous rate.
    pub over_s: u64,
}

impl From<&Profile> for ProfileSummary {
    fn from(p: &Profile) -> Self {
        match p {
            Profile::Stages(s) => ProfileSummary::Stages {
                stages: s
                    .iter()
                    .map(|&(users, over_s)| Stage { users, over_s })
                    .collect(),
            },
            Profile::Rates(s) => ProfileSummary::Rates {
                stages: s
                    .iter()
                    .map(|&(rate_per_s, over_s)| RateStage { rate_per_s, over_s })
                    .collect(),
            },
            Profile::Iterations {
                users,
                hatch_rate,
                iterations,
            } => ProfileSummary::Iterations {
                users: *users,
                hatch_rate: *hatch_rate,
                iterations: *iterations,
            },
        }
    }
}

/// How the pool of users held the arrival rate (issue 23).
#[derive(Serialize)]
pub struct PoolSummary {
    /// Users it started with, and the most it may open.
    pub users: usize,
    pub max_users: usize,
    /// Users opened, and the most with a request in flight at once.
    pub opened: usize,
    pub peak_in_use: usize,
    /// Share of the sent slots that came due before a user was free.
    pub waited_share: f64,
    /// Share of the sent slots that waited with all `max_users` busy (that
    /// wait is in the corrected latency).
    pub waited_full_share: f64,
    /// Some slot waited on the full pool.
    pub bound: bool,
    /// The target's own latency rose on the full pool (its saturation).
    pub target_saturated: bool,
    /// Mean raw latency of requests answered while a slot waited on the
    /// full pool, and of those sent under light load (no more in flight
    /// than `users`).
    pub raw_bound_mean_ms: f64,
    pub raw_light_mean_ms: f64,
    /// Users the rate needed: rate × raw p99.
    pub needed_users: u64,
}

#[derive(Serialize)]
pub struct IdempotencySummary {
    pub distinct_keys_succeeded: u64,
    pub duplicate_retries: u64,
}

#[derive(Serialize)]
pub struct EffectsSummary {
    pub before: i64,
    pub after: i64,
    pub delta: i64,
}

#[derive(Serialize)]
pub struct FilesSummary {
    pub hgrm: PathBuf,
    pub raw_hgrm: PathBuf,
    pub hlog: PathBuf,
    /// Each request kind's totals, lossless: what `tminus compare` reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kinds_hlog: Option<PathBuf>,
    /// The tag prefix of each request kind in `kinds_hlog` (`k0`: tags
    /// `k0.raw`, `k0.corrected`, `k0.lateness`), by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub kind_tags: BTreeMap<String, String>,
}

#[derive(Serialize)]
pub struct KindSummary {
    pub requests: u64,
    pub throughput_per_s: f64,
    pub error_rate: f64,
    pub rate_429: f64,
    pub failed: u64,
    pub responses_429: u64,
    /// Response count by status code (`"200"`, `"429"`).
    pub statuses: BTreeMap<String, u64>,
    /// Transport errors by kind (`timeout`, `connect`, ...).
    pub errors: BTreeMap<String, u64>,
    pub latency_raw: LatencySummary,
    pub latency_corrected: LatencySummary,
    /// The generator's own lateness past the scheduled send (not charged to
    /// the target): how precisely the pace was kept.
    pub generator_lateness: LatencySummary,
}

impl KindSummary {
    pub fn new(k: &KindStats, elapsed: Duration) -> Self {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let n = k.requests.max(1) as f64;
        KindSummary {
            requests: k.requests,
            throughput_per_s: (k.requests as f64 / secs * 100.0).round() / 100.0,
            error_rate: k.failed as f64 / n,
            rate_429: k.r429 as f64 / n,
            failed: k.failed,
            responses_429: k.r429,
            statuses: k
                .statuses
                .iter()
                .map(|(s, c)| (s.to_string(), *c))
                .collect(),
            errors: k.errors.clone(),
            latency_raw: LatencySummary::new(&k.raw),
            latency_corrected: LatencySummary::new(&k.corrected),
            generator_lateness: LatencySummary::new(&k.lateness),
        }
    }
}

/// A histogram's figures in ms; only `count` when nothing was recorded.
#[derive(Serialize)]
pub struct LatencySummary {
    pub count: u64,
    #[serde(flatten)]
    pub figures: Option<LatencyFigures>,
}

#[derive(Serialize)]
pub struct LatencyFigures {
    pub min_ms: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p99_9_ms: f64,
    pub max_ms: f64,
}

impl LatencySummary {
    pub fn new(h: &Histogram<u64>) -> Self {
        let figures = (!h.is_empty()).then(|| LatencyFigures {
            min_ms: ms(h.min() as f64),
            mean_ms: ms(h.mean()),
            p50_ms: ms(h.value_at_quantile(0.50) as f64),
            p90_ms: ms(h.value_at_quantile(0.90) as f64),
            p95_ms: ms(h.value_at_quantile(0.95) as f64),
            p99_ms: ms(h.value_at_quantile(0.99) as f64),
            p99_9_ms: ms(h.value_at_quantile(0.999) as f64),
            max_ms: ms(h.max() as f64),
        });
        LatencySummary {
            count: h.len(),
            figures,
        }
    }
}

/// What the HTML report draws of one burst (issue 15): the percentile
/// distribution of all requests and of each request kind, and the burst's
/// one-second intervals (the same intervals the `.hlog` holds). It reaches
/// the reporters as `Event::LoadFigures`, typed; nothing is read back from
/// the files. Latencies in ms.
#[derive(Debug, Clone, PartialEq)]
pub struct BurstFigures {
    pub suite: String,
    pub load: String,
    /// All requests first, then each kind of the mix in the suite's order.
    pub distributions: Vec<Distribution>,
    pub intervals: Vec<IntervalPoint>,
    /// The target's own signals (`observe:`) and each series' limits from
    /// the thresholds, drawn beside the latency plot.
    pub observed: Option<(super::observe::Observed, Vec<(String, f64)>)>,
}

/// A percentile distribution, raw and corrected, as HdrHistogram's
/// `iter_quantiles` steps through it (the points of a `.hgrm`).
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    /// `all requests` or the request kind's name.
    pub name: String,
    pub requests: u64,
    pub raw: Vec<PercentilePoint>,
    pub corrected: Vec<PercentilePoint>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PercentilePoint {
    /// 0..=1; the last point of a series is 1 (the maximum).
    pub quantile: f64,
    pub ms: f64,
}

/// One interval of the burst: what was answered in it and how fast.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalPoint {
    /// Seconds since the burst started.
    pub start_s: f64,
    pub len_s: f64,
    pub requests: u64,
    pub errors: u64,
    /// Zero when nothing was answered in the interval.
    pub corrected_p50_ms: f64,
    pub corrected_p99_ms: f64,
    pub raw_p99_ms: f64,
}

impl Distribution {
    pub fn new(name: impl Into<String>, k: &KindStats) -> Self {
        Distribution {
            name: name.into(),
            requests: k.requests,
            raw: percentile_series(&k.raw),
            corrected: percentile_series(&k.corrected),
        }
    }
}

/// Five steps per halving of the distance to 100%, as `.hgrm` files print.
fn percentile_series(h: &Histogram<u64>) -> Vec<PercentilePoint> {
    if h.is_empty() {
        return Vec::new();
    }
    h.iter_quantiles(5)
        .map(|v| PercentilePoint {
            quantile: v.quantile_iterated_to(),
            ms: v.value_iterated_to() as f64 / 1000.0,
        })
        .collect()
}

impl IntervalPoint {
    pub fn new(
        start: Duration,
        len: Duration,
        raw: &Histogram<u64>,
        corrected: &Histogram<u64>,
        errors: u64,
    ) -> Self {
        let at = |h: &Histogram<u64>, q: f64| {
            if h.is_empty() {
                0.0
            } else {
                ms(h.value_at_quantile(q) as f64)
            }
        };
        IntervalPoint {
            start_s: start.as_secs_f64(),
            len_s: len.as_secs_f64(),
            requests: corrected.len(),
            errors,
            corrected_p50_ms: at(corrected, 0.5),
            corrected_p99_ms: at(corrected, 0.99),
            raw_p99_ms: at(raw, 0.99),
        }
    }
    /// Answers per second in this interval.
    pub fn rate(&self) -> f64 {
        self.requests as f64 / self.len_s.max(1e-3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn profiles_are_structured() {
        let stages = ProfileSummary::from(&Profile::Stages(vec![(4, 1), (4, 3), (0, 1)]));
        assert_eq!(
            serde_json::to_value(&stages).unwrap(),
            json!({"kind": "stages", "stages": [
                {"users": 4, "over_s": 1}, {"users": 4, "over_s": 3}, {"users": 0, "over_s": 1}
            ]})
        );
        let it = ProfileSummary::from(&Profile::Iterations {
            users: 3,
            hatch_rate: 10.0,
            iterations: 30,
        });
        assert_eq!(
            serde_json::to_value(&it).unwrap(),
            json!({"kind": "iterations", "users": 3, "hatch_rate": 10.0, "iterations": 30})
        );
    }

    #[test]
    fn an_empty_histogram_has_only_a_count() {
        let v =
            serde_json::to_value(LatencySummary::new(&super::super::stats::new_hist())).unwrap();
        assert_eq!(v, json!({"count": 0}));
    }
}
