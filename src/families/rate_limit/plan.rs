//! Plans of the rate-limit family: defaults applied, dialect names resolved,
//! bounds checked (a zero concurrency or an unbounded burst is a suite error,
//! found before any request is sent).

use std::time::Duration;

use serde_saphyr::{Location, Spanned};

use crate::context::{PlanCtx, RequestPlan};
use crate::families::rate_limit::fields::{Dialect, Dialects, LegacyNames, ResetMode};
use crate::families::rate_limit::spec::{
    defaults, RateLimitHeadersSpec, RateLimitPartitionSpec, RateLimitRecoverySpec, RateLimitSpec,
    RateLimitStormSpec,
};
use crate::model::jsonpath::JsonPath;
use crate::model::scalar::DurationValue;

/// What every check that drives a key to its limit shares.
#[derive(Debug, Clone)]
pub struct Exhaust {
    pub request: RequestPlan,
    pub limited_status: u16,
    pub max_requests: u32,
    /// `max_requests` was written in the suite: a ceiling that is never
    /// raised to the advertised limit (and a limit above it is an error).
    pub max_requests_set: bool,
    pub concurrency: u32,
    /// Longest wait for the window to reset before the check ends.
    pub cooldown_max: Duration,
}

#[derive(Debug, Clone)]
pub struct HeadersPlan {
    pub requests: Vec<RequestPlan>,
    pub samples: u32,
    pub dialects: Dialects,
    pub window: Option<Duration>,
}

#[derive(Debug, Clone)]
pub struct StormPlan {
    pub exhaust: Exhaust,
    pub stop_after: u32,
    pub error_code: Option<String>,
    pub error_code_path: JsonPath,
    pub p95_under: Duration,
    pub max_duration: Duration,
    pub remaining_header: String,
}

#[derive(Debug, Clone)]
pub struct RecoveryPlan {
    pub exhaust: Exhaust,
    /// Samples in a row that must recover (`timing::recovery_rule`).
    pub samples: u32,
    pub margin: Duration,
    pub max_wait: Duration,
    /// `max_wait` was written in the suite (else a longer window is waited
    /// for within the run's quota budget).
    pub max_wait_set: bool,
    pub dialects: Dialects,
}

#[derive(Debug, Clone)]
pub struct PartitionPlan {
    pub exhaust: Exhaust,
}

fn dur(v: &Option<Spanned<DurationValue>>, default: Duration) -> Duration {
    v.as_ref().map(|d| d.value.0).unwrap_or(default)
}

/// The `rate_limit.*` fields every limit-exhausting check shares.
struct ExhaustFields<'a> {
    request: &'a crate::spec::request::RequestSpec,
    at: Location,
    limited_status: &'a Option<Spanned<u16>>,
    max_requests: &'a Option<Spanned<u32>>,
    concurrency: &'a Option<Spanned<u32>>,
    cooldown_max: &'a Option<Spanned<DurationValue>>,
}

/// The [`ExhaustFields`] of a storm, recovery or partition spec.
macro_rules! exhaust_fields {
    ($s:expr) => {
        ExhaustFields {
            request: &$s.request,
            at: $s.id.referenced,
            limited_status: &$s.limited_status,
            max_requests: &$s.max_requests,
            concurrency: &$s.concurrency,
            cooldown_max: &$s.cooldown_max,
        }
    };
}

/// Per-kind defaults of the exhausting burst.
struct ExhaustDefaults {
    max_requests: u32,
    concurrency: u32,
}

impl PlanCtx<'_> {
    fn rl_count(&mut self, v: &Option<Spanned<u32>>, default: u32, max: u32, what: &str) -> u32 {
        match v {
            None => default,
            Some(s) if s.value == 0 || s.value > max => {
                self.error(
                    s.referenced,
                    format!("{what} must be between 1 and {max}, got {}", s.value),
                );
                default
            }
            Some(s) => s.value,
        }
    }

    fn rl_exhaust(&mut self, s: ExhaustFields<'_>, defaults: ExhaustDefaults) -> Exhaust {
        let ExhaustFields {
            request,
            at,
            limited_status,
            max_requests,
            concurrency,
            cooldown_max,
        } = s;
        let status = match limited_status {
            None => defaults::LIMITED_STATUS,
            Some(s) if !(400..600).contains(&s.value) => {
                self.error(
                    s.referenced,
                    format!(
                        "limited_status must be a 4xx or 5xx status, got {}",
                        s.value
                    ),
                );
                defaults::LIMITED_STATUS
            }
            Some(s) => s.value,
        };
        Exhaust {
            request: self.request(request, at),
            limited_status: status,
            max_requests: self.rl_count(
                max_requests,
                defaults.max_requests,
                100_000,
                "max_requests",
            ),
            max_requests_set: max_requests.is_some(),
            concurrency: self.rl_count(concurrency, defaults.concurrency, 256, "concurrency"),
            cooldown_max: dur(cooldown_max, defaults::COOLDOWN_MAX),
        }
    }

    fn rl_reset(&mut self, v: &Option<Spanned<String>>) -> ResetMode {
        match v {
            None => ResetMode::parse(defaults::RESET).expect("a known reset form"),
            Some(s) => ResetMode::parse(&s.value).unwrap_or_else(|| {
                self.error(
                    s.referenced,
                    format!(
                        "unknown reset form `{}`: use {}",
                        s.value,
                        ResetMode::NAMES.join(", ")
                    ),
                );
                ResetMode::Auto
            }),
        }
    }

    pub fn rl_headers(&mut self, s: &RateLimitHeadersSpec) -> HeadersPlan {
        if s.requests.is_empty() {
            self.error(
                s.id.referenced,
                "rate_limit.headers needs at least one request in `requests`",
            );
        }
        let requests = s
            .requests
            .iter()
            .map(|r| self.request(r, s.id.referenced))
            .collect();
        let dialect = match &s.dialect {
            None => Dialect::parse(defaults::DIALECT).expect("a known dialect"),
            Some(d) => Dialect::parse(&d.value).unwrap_or_else(|| {
                self.error(
                    d.referenced,
                    format!(
                        "unknown dialect `{}`: use {}",
                        d.value,
                        Dialect::NAMES.join(", ")
                    ),
                );
                Dialect::Auto
            }),
        };
        let reset = self.rl_reset(&s.reset);
        let d = LegacyNames::default();
        HeadersPlan {
            requests,
            samples: self.rl_count(&s.samples, defaults::SAMPLES, 10_000, "samples"),
            dialects: Dialects {
                dialect,
                reset,
                names: LegacyNames {
                    limit: s.limit_header.clone().unwrap_or(d.limit),
                    remaining: s.remaining_header.clone().unwrap_or(d.remaining),
                    reset: s.reset_header.clone().unwrap_or(d.reset),
                },
            },
            window: s.window.as_ref().map(|w| w.value.0),
        }
    }

    pub fn rl_storm(&mut self, s: &RateLimitStormSpec) -> StormPlan {
        let exhaust = self.rl_exhaust(
            exhaust_fields!(s),
            ExhaustDefaults {
                max_requests: defaults::STORM_MAX_REQUESTS,
                concurrency: defaults::STORM_CONCURRENCY,
            },
        );
        let path = match &s.error_code_path {
            Some(p) => self.json_path(&p.value, p.referenced),
            None => JsonPath::parse(defaults::ERROR_CODE_PATH).expect("static path"),
        };
        StormPlan {
            stop_after: self.rl_count(&s.stop_after, defaults::STOP_AFTER, 100_000, "stop_after"),
            // No RFC puts a code in a 429's body: only `botix` expects one.
            error_code: match &s.error_code {
                None => self
                    .profile
                    .pick(None, Some(defaults::ERROR_CODE.to_owned())),
                Some(c) if c.is_empty() || c == "none" => None,
                Some(c) => Some(c.clone()),
            },
            error_code_path: path,
            p95_under: dur(&s.p95_under, defaults::P95_UNDER),
            max_duration: dur(&s.max_duration, defaults::MAX_DURATION),
            remaining_header: s
                .remaining_header
                .clone()
                .unwrap_or_else(|| LegacyNames::default().remaining),
            exhaust,
        }
    }

    pub fn rl_recovery(&mut self, s: &RateLimitRecoverySpec) -> RecoveryPlan {
        let exhaust = self.rl_exhaust(
            exhaust_fields!(s),
            ExhaustDefaults {
                max_requests: defaults::EXHAUST_MAX_REQUESTS,
                concurrency: defaults::EXHAUST_CONCURRENCY,
            },
        );
        RecoveryPlan {
            exhaust,
            samples: self.rl_count(&s.samples, defaults::RECOVERY_SAMPLES, 100, "samples"),
            margin: dur(&s.margin, defaults::MARGIN),
            max_wait: dur(&s.max_wait, defaults::MAX_WAIT),
            max_wait_set: s.max_wait.is_some(),
            dialects: Dialects {
                dialect: Dialect::Auto,
                reset: self.rl_reset(&s.reset),
                names: LegacyNames::default(),
            },
        }
    }

    pub fn rl_partition(&mut self, s: &RateLimitPartitionSpec) -> PartitionPlan {
        PartitionPlan {
            exhaust: self.rl_exhaust(
                exhaust_fields!(s),
                ExhaustDefaults {
                    max_requests: defaults::EXHAUST_MAX_REQUESTS,
                    concurrency: defaults::EXHAUST_CONCURRENCY,
                },
            ),
        }
    }
}

/// A planned `rate_limit.*` check.
#[derive(Debug)]
pub enum RateLimitPlan {
    Headers(HeadersPlan),
    Storm(StormPlan),
    Recovery(RecoveryPlan),
    Partition(PartitionPlan),
}

/// Plans a check of the rate-limit family.
pub fn plan(ctx: &mut PlanCtx<'_>, spec: &RateLimitSpec) -> RateLimitPlan {
    match spec {
        RateLimitSpec::Headers(s) => RateLimitPlan::Headers(ctx.rl_headers(s)),
        RateLimitSpec::Storm(s) => RateLimitPlan::Storm(ctx.rl_storm(s)),
        RateLimitSpec::Recovery(s) => RateLimitPlan::Recovery(ctx.rl_recovery(s)),
        RateLimitSpec::Partition(s) => RateLimitPlan::Partition(ctx.rl_partition(s)),
    }
}

impl RateLimitPlan {
    /// The most requests this check sends (`context::budget`): the headers
    /// check its samples; the others are sized from the advertised limit
    /// while they run.
    pub fn requests(&self) -> crate::context::budget::Requests {
        use crate::context::budget::{Need, Requests};
        match self {
            // `samples` answers in all, the requests taken in turn.
            RateLimitPlan::Headers(h) => Requests::own(u64::from(h.samples.max(1))),
            RateLimitPlan::Storm(s) => {
                Requests::exhausting(u64::from(s.stop_after), Need::Exhausts)
            }
            // Past the limit: the requests that read the target's clock,
            // then per sample one request aimed at its phase and the two
            // probes (a retried sample reaches the limit again). Its probes
            // wait for the block's reset, so it runs last.
            RateLimitPlan::Recovery(r) => Requests::exhausting(
                u64::from(super::phase::CLOCK_PROBES) + 3 * u64::from(r.samples.max(1)),
                Need::Reset,
            ),
            // Its probes of a blocked tenant A are limited answers, which
            // the limiter does not count; B's window is its own.
            RateLimitPlan::Partition(_) => Requests::exhausting(0, Need::Blocked),
        }
    }
}
