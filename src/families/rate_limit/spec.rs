//! YAML specs of the rate-limit check family (catalogue §2, RL-001..RL-007):
//! `rate_limit.headers`, `rate_limit.storm`, `rate_limit.recovery` and
//! `rate_limit.partition`. Every dialect choice is a parameter with a default
//! that follows the checklist and the IETF drafts; `plan/rate_limit.rs`
//! validates and resolves them.

use serde_saphyr::Spanned;

use crate::model::scalar::DurationValue;
use crate::spec::kinds::{
    check_spec, family_kinds, must, param, should, DefaultValue as D, Kind, Param,
};
use crate::spec::request::RequestSpec;

/// Every default of the family: the plan applies these, `KINDS` prints them.
pub mod defaults {
    use std::time::Duration;

    /// Small enough to leave most of a common budget (20 per 10 s) to the
    /// checks after it; a suite with a large limit can ask for more.
    pub const SAMPLES: u32 = 6;
    pub const DIALECT: &str = "auto";
    pub const RESET: &str = "auto";
    /// The longest a Reset may lie after Date when no IETF policy gives `w`.
    pub const WINDOW: Duration = Duration::from_secs(3600);
    pub const LIMIT_HEADER: &str = "X-RateLimit-Limit";
    pub const REMAINING_HEADER: &str = "X-RateLimit-Remaining";
    pub const RESET_HEADER: &str = "X-RateLimit-Reset";
    pub const LIMITED_STATUS: u16 = 429;
    pub const COOLDOWN_MAX: Duration = Duration::from_secs(10);
    pub const STORM_MAX_REQUESTS: u32 = 1000;
    pub const STORM_CONCURRENCY: u32 = 8;
    /// `max_requests` and `concurrency` of recovery and partition.
    pub const EXHAUST_MAX_REQUESTS: u32 = 1000;
    pub const EXHAUST_CONCURRENCY: u32 = 4;
    /// Enough limited answers for `fast_rejections`' p95 to meet the 0.1 %
    /// bar both ways outside 1.5 × / ÷ 1.5 the threshold (`timing.rs`).
    pub const STOP_AFTER: u32 = 200;
    pub const ERROR_CODE: &str = "RATE_LIMIT_EXCEEDED";
    pub const ERROR_CODE_PATH: &str = "$.error.code";
    pub const P95_UNDER: Duration = Duration::from_millis(100);
    pub const MAX_DURATION: Duration = Duration::from_secs(30);
    /// Recovery: how long after Retry-After the recovery probe goes, and
    /// how many samples must recover (error rates: `timing.rs`).
    pub const MARGIN: Duration = Duration::from_millis(50);
    pub const RECOVERY_SAMPLES: u32 = 3;
    pub const MAX_WAIT: Duration = Duration::from_secs(10);
}

use defaults as d;

const REQUEST: Param = param(
    "request",
    D::Required,
    "the request sent until the limit is reached",
);
const LIMITED_STATUS: Param = param(
    "limited_status",
    D::Int(d::LIMITED_STATUS as u64),
    "the status of a limited answer",
);
const MAX_REQUESTS: Param = param(
    "max_requests",
    D::Int(d::EXHAUST_MAX_REQUESTS as u64),
    "bound on the requests sent to reach the limit",
);
const CONCURRENCY: Param = param(
    "concurrency",
    D::Int(d::EXHAUST_CONCURRENCY as u64),
    "requests in flight while reaching the limit",
);
const COOLDOWN_MAX: Param = param(
    "cooldown_max",
    D::Duration(d::COOLDOWN_MAX),
    "longest wait for the window to reset after the check (probed every 250 ms)",
);

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the rate-limit family.
pub const KINDS: &[Kind] = &[
    Kind {
        properties: &[
            should(
                "present",
                "draft-ietf-httpapi-ratelimit-headers (the fields are optional); BOTIX contract, catalogue RL-001",
                "every sampled response (4xx included) carries rate-limit headers, every field of its dialect",
            ).botix_must(),
            must(
                "syntax",
                "draft-ietf-httpapi-ratelimit-headers §3-4 (RFC 9651 structured fields); catalogue RL-001, RL-005",
                "every field sent parses (non-negative integers, SF lists with `q`/`w`, `r`/`t`); skipped when none was sent",
            ),
            must(
                "consistency",
                "draft-ietf-httpapi-ratelimit-headers §4; catalogue RL-001, RL-005",
                "remaining within the limit, reset inside [Date, Date + window], remaining never rising within a window, dialects agreeing; skipped when no reset or limit was sent",
            ),
        ],
        name: "rate_limit.headers",
        summary: "every response of a sample (4xx included) carries sane rate-limit headers (RL-001, RL-005)",
        params: &[
            param("requests", D::Required, "requests sent in turn (include a 4xx one)"),
            param("samples", D::Int(d::SAMPLES as u64), "how many responses to read"),
            param(
                "dialect",
                D::Str(d::DIALECT),
                "`auto` | `legacy` | `ietf-draft6` (separate `RateLimit-Limit/-Remaining/-Reset`, drafts -00 to -06) | `ietf-draft7` | `ietf` (draft-8+ structured fields)",
            ),
            param(
                "reset",
                D::Str(d::RESET),
                "legacy Reset form: `epoch` | `delta` | `auto` (>= 1e9 is epoch)",
            ),
            param(
                "window",
                D::Text("the policy's `w`, else 1h"),
                "the longest a Reset may lie after Date",
            ),
            param("limit_header", D::Str(d::LIMIT_HEADER), "legacy limit header name"),
            param("remaining_header", D::Str(d::REMAINING_HEADER), "legacy remaining header name"),
            param("reset_header", D::Str(d::RESET_HEADER), "legacy reset header name"),
        ],
    },
    Kind {
        properties: &[
            must(
                "limit_reached",
                "RFC 6585 §4; catalogue RL-002",
                "the bounded burst gets `limited_status`",
            ),
            must(
                "no_drops",
                "catalogue RL-007; draft-ietf-httpapi-ratelimit-headers (FAQ: reject, do not drop)",
                "no dropped connection or timeout while over the limit",
            ),
            must(
                "no_5xx",
                "catalogue RL-002, RL-007",
                "over the limit the answer is `limited_status`, never a 5xx",
            ),
            should(
                "retry_after_present",
                "RFC 6585 §4 (MAY include Retry-After); BOTIX contract, catalogue RL-002",
                "every limited answer carries Retry-After",
            ).botix_must(),
            must(
                "retry_after_valid",
                "RFC 9110 §10.2.3",
                "a Retry-After sent is delay-seconds or an HTTP-date",
            ),
            should(
                "error_code",
                "BOTIX contract, catalogue RL-002",
                "the limited body carries `error_code` at `error_code_path` (skipped without one: the `standard` profile's default)",
            ).botix_must(),
            should(
                "remaining_zero",
                "BOTIX contract, catalogue RL-002",
                "`remaining_header` is 0 on a limited answer (skipped when never sent)",
            ).botix_must(),
            should(
                "not_cacheable",
                "RFC 6585 §4 (a 429 MUST NOT be stored by a cache); catalogue RL-006",
                "no explicit freshness (`public`, `max-age` > 0) on a limited answer",
            ),
            should(
                "fast_rejections",
                "catalogue RL-007 (proposed p95 < 100 ms; BOTIX: reject at once, do not hold connections)",
                "p95 latency of the limited answers under `p95_under`",
            ).botix_must(),
        ],
        name: "rate_limit.storm",
        summary: "a bounded burst over the limit gets fast 429s with Retry-After and the error code, no 5xx, no drops (RL-002, RL-006, RL-007)",
        params: &[
            REQUEST,
            LIMITED_STATUS,
            param(
                "max_requests",
                D::Int(d::STORM_MAX_REQUESTS as u64),
                "bound on the requests of the burst",
            ),
            param(
                "concurrency",
                D::Int(d::STORM_CONCURRENCY as u64),
                "requests in flight during the burst",
            ),
            COOLDOWN_MAX,
            param("stop_after", D::Int(d::STOP_AFTER as u64), "stop after this many limited answers"),
            param(
                "error_code",
                D::Profiled {
                    standard: &D::Absent,
                    botix: &D::Str(d::ERROR_CODE),
                },
                "code the limited body must carry (`none` or `\"\"`: not checked; no RFC defines one)",
            ),
            param("error_code_path", D::Str(d::ERROR_CODE_PATH), "JSON path of the code"),
            param(
                "p95_under",
                D::Duration(d::P95_UNDER),
                "p95 latency of the limited answers must be under this",
            ),
            param("max_duration", D::Duration(d::MAX_DURATION), "time bound of the burst"),
            param(
                "remaining_header",
                D::Str(d::REMAINING_HEADER),
                "must be 0 on a limited answer, when sent",
            ),
        ],
    },
    Kind {
        properties: &[
            should(
                "retry_after_not_before_reset",
                "draft-ietf-httpapi-ratelimit-headers (Server Behavior); catalogue RL-003",
                "when both are sent, Retry-After is not earlier than the limit headers' reset (skipped otherwise)",
            ),
            should(
                "limited_until_retry_after",
                "catalogue RL-003",
                "a probe at Retry-After − 1 s is still limited (the limit is real), in every sample",
            ),
            must(
                "served_after_retry_after",
                "RFC 9110 §10.2.3; RFC 6585 §4; catalogue RL-003",
                "a request after Retry-After (+ margin) is served, in every sample",
            ),
        ],
        name: "rate_limit.recovery",
        summary: "after a 429, a request before Retry-After is still limited and one after it succeeds (RL-003)",
        params: &[
            REQUEST,
            LIMITED_STATUS,
            MAX_REQUESTS,
            CONCURRENCY,
            COOLDOWN_MAX,
            param(
                "samples",
                D::Int(d::RECOVERY_SAMPLES as u64),
                "how many times the key is driven to its limit and probed; every one must recover",
            ),
            param(
                "margin",
                D::Duration(d::MARGIN),
                "how long after Retry-After the recovery probe goes",
            ),
            param(
                "max_wait",
                D::Duration(d::MAX_WAIT),
                "longest Retry-After the check is willing to wait (longer: an error)",
            ),
            param("reset", D::Str(d::RESET), "legacy Reset form (used when Retry-After is absent)"),
        ],
    },
    Kind {
        properties: &[must(
            "isolated",
            "draft-ietf-httpapi-ratelimit-headers (partition key `pk`); catalogue RL-004",
            "tenant B is served while tenant A is limited; not exercised when B's request is not served like A's was",
        )],
        name: "rate_limit.partition",
        summary: "exhausting the first tenant's limit does not limit the second tenant (RL-004); needs target.second_tenant_headers",
        params: &[REQUEST, LIMITED_STATUS, MAX_REQUESTS, CONCURRENCY, COOLDOWN_MAX],
    },
];

check_spec!(
    /// `kind: rate_limit.headers`
    RateLimitHeadersSpec {
        pub requests: Vec<RequestSpec>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub samples: Option<Spanned<u32>>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub dialect: Option<Spanned<String>>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub reset: Option<Spanned<String>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub window: Option<Spanned<DurationValue>>,
        #[serde(default)]
        pub limit_header: Option<String>,
        #[serde(default)]
        pub remaining_header: Option<String>,
        #[serde(default)]
        pub reset_header: Option<String>,
    }
);

check_spec!(
    /// `kind: rate_limit.storm`
    RateLimitStormSpec {
        pub request: RequestSpec,
        #[serde(default)]
        #[schemars(with = "Option<u16>")]
        pub limited_status: Option<Spanned<u16>>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub max_requests: Option<Spanned<u32>>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub concurrency: Option<Spanned<u32>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub cooldown_max: Option<Spanned<DurationValue>>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub stop_after: Option<Spanned<u32>>,
        #[serde(default)]
        pub error_code: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub error_code_path: Option<Spanned<String>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub p95_under: Option<Spanned<DurationValue>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub max_duration: Option<Spanned<DurationValue>>,
        #[serde(default)]
        pub remaining_header: Option<String>,
    }
);

check_spec!(
    /// `kind: rate_limit.recovery`
    RateLimitRecoverySpec {
        pub request: RequestSpec,
        #[serde(default)]
        #[schemars(with = "Option<u16>")]
        pub limited_status: Option<Spanned<u16>>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub max_requests: Option<Spanned<u32>>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub concurrency: Option<Spanned<u32>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub cooldown_max: Option<Spanned<DurationValue>>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub samples: Option<Spanned<u32>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub margin: Option<Spanned<DurationValue>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub max_wait: Option<Spanned<DurationValue>>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub reset: Option<Spanned<String>>,
    }
);

check_spec!(
    /// `kind: rate_limit.partition`
    RateLimitPartitionSpec {
        pub request: RequestSpec,
        #[serde(default)]
        #[schemars(with = "Option<u16>")]
        pub limited_status: Option<Spanned<u16>>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub max_requests: Option<Spanned<u32>>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub concurrency: Option<Spanned<u32>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub cooldown_max: Option<Spanned<DurationValue>>,
    }
);

family_kinds!(
    /// A `rate_limit.*` check as written.
    RateLimitSpec {
        "rate_limit.headers" => Headers(RateLimitHeadersSpec),
        "rate_limit.storm" => Storm(RateLimitStormSpec),
        "rate_limit.recovery" => Recovery(RateLimitRecoverySpec),
        "rate_limit.partition" => Partition(RateLimitPartitionSpec),
    }
);

#[cfg(test)]
mod tests {
    use super::{defaults, KINDS};
    use crate::families::rate_limit::fields::{Dialect, Dialects, ResetMode};
    use crate::families::rate_limit::plan::{Exhaust, RateLimitPlan};
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;
    use crate::spec::kinds::{show_duration, DefaultValue};

    const MINIMAL: &[(&str, &str)] = &[
        ("rate_limit.headers", "    requests: [{ path: /a }]\n"),
        ("rate_limit.storm", "    request: { path: /a }\n"),
        ("rate_limit.recovery", "    request: { path: /a }\n"),
        ("rate_limit.partition", "    request: { path: /a }\n"),
    ];

    fn exhaust(e: &Exhaust) -> Vec<(&'static str, Option<String>)> {
        vec![
            ("limited_status", int(e.limited_status)),
            ("max_requests", int(e.max_requests)),
            ("concurrency", int(e.concurrency)),
            ("cooldown_max", dur(e.cooldown_max)),
        ]
    }

    fn dialect(d: Dialect) -> &'static str {
        Dialect::NAMES[match d {
            Dialect::Auto => 0,
            Dialect::Legacy => 1,
            Dialect::IetfDraft6 => 2,
            Dialect::IetfDraft7 => 3,
            Dialect::IetfStructured => 4,
        }]
    }

    fn reset(d: &Dialects) -> &'static str {
        ResetMode::NAMES[match d.reset {
            ResetMode::Auto => 0,
            ResetMode::Epoch => 1,
            ResetMode::Delta => 2,
        }]
    }

    #[test]
    fn table_defaults_are_the_planned_ones() {
        assert_covers(KINDS, &MINIMAL.iter().map(|(k, _)| *k).collect::<Vec<_>>());
        for (kind, fields) in MINIMAL {
            let CheckPlan::RateLimit(p) = plan_check(kind, fields) else {
                panic!("not a rate-limit plan");
            };
            let planned = match *p {
                RateLimitPlan::Headers(h) => vec![
                    ("samples", int(h.samples)),
                    ("dialect", word(dialect(h.dialects.dialect))),
                    ("reset", word(reset(&h.dialects))),
                    ("window", h.window.and_then(dur)),
                    ("limit_header", word(&h.dialects.names.limit)),
                    ("remaining_header", word(&h.dialects.names.remaining)),
                    ("reset_header", word(&h.dialects.names.reset)),
                ],
                RateLimitPlan::Storm(s) => {
                    let mut v = exhaust(&s.exhaust);
                    v.extend([
                        ("stop_after", int(s.stop_after)),
                        ("error_code", s.error_code.clone()),
                        ("error_code_path", word(&s.error_code_path)),
                        ("p95_under", dur(s.p95_under)),
                        ("max_duration", dur(s.max_duration)),
                        ("remaining_header", word(&s.remaining_header)),
                    ]);
                    v
                }
                RateLimitPlan::Recovery(r) => {
                    let mut v = exhaust(&r.exhaust);
                    v.extend([
                        ("samples", int(r.samples)),
                        ("margin", dur(r.margin)),
                        ("max_wait", dur(r.max_wait)),
                        ("reset", word(reset(&r.dialects))),
                    ]);
                    v
                }
                RateLimitPlan::Partition(p) => exhaust(&p.exhaust),
            };
            assert_planned(KINDS, kind, &planned);
        }
    }

    /// `window` is described in words; its fallback is the constant exec uses.
    #[test]
    fn window_text_names_the_fallback() {
        let row = KINDS[0].params.iter().find(|p| p.name == "window").unwrap();
        let DefaultValue::Text(t) = row.default else {
            panic!("window is described in words")
        };
        assert!(t.ends_with(&show_duration(defaults::WINDOW)), "{t}");
    }
}
