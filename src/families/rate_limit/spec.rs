//! YAML specs of the rate-limit check family (catalogue §2, RL-001..RL-007):
//! `rate_limit.headers`, `rate_limit.storm`, `rate_limit.recovery` and
//! `rate_limit.partition`. Every dialect choice is a parameter with a default
//! that follows the checklist and the IETF drafts; `plan/rate_limit.rs`
//! validates and resolves them.

use serde_saphyr::Spanned;

use crate::model::scalar::DurationValue;
use crate::suite::kinds::{check_spec, family_kinds, KindInfo};
use crate::suite::request::RequestSpec;

pub const RATE_LIMIT_KINDS: &[KindInfo] = &[
    KindInfo {
        name: "rate_limit.headers",
        summary: "every response of a sample (4xx included) carries sane rate-limit headers (RL-001, RL-005)",
        params: &[
            ("requests", "required", "requests sent in turn (include a 4xx one)"),
            ("samples", "20", "how many responses to read"),
            ("dialect", "auto", "auto | legacy | ietf-draft7 | ietf (draft-8+ structured fields)"),
            ("reset", "auto", "legacy Reset form: epoch | delta | auto (>= 1e9 is epoch)"),
            ("window", "policy w, else 1h", "the longest a Reset may lie after Date"),
            ("limit_header", "X-RateLimit-Limit", "legacy limit header name"),
            ("remaining_header", "X-RateLimit-Remaining", "legacy remaining header name"),
            ("reset_header", "X-RateLimit-Reset", "legacy reset header name"),
        ],
    },
    KindInfo {
        name: "rate_limit.storm",
        summary: "a bounded burst over the limit gets fast 429s with Retry-After and the error code, no 5xx, no drops (RL-002, RL-006, RL-007)",
        params: &[
            ("request, limited_status, max_requests, concurrency, cooldown_max", "429; 1000; 4; 10s", "the request sent; the limited status; bounds on reaching the limit; longest wait for the window to reset afterwards"),
            ("stop_after", "20", "stop after this many limited answers"),
            ("error_code", "RATE_LIMIT_EXCEEDED", "code the limited body must carry (empty: not checked)"),
            ("error_code_path", "$.error.code", "JSON path of the code"),
            ("p95_under", "100ms", "p95 latency of the limited answers must be under this"),
            ("max_duration", "30s", "time bound of the burst"),
            ("remaining_header", "X-RateLimit-Remaining", "must be 0 on a limited answer, when sent"),
        ],
    },
    KindInfo {
        name: "rate_limit.recovery",
        summary: "after a 429, a request before Retry-After is still limited and one after it succeeds (RL-003)",
        params: &[
            ("request, limited_status, max_requests, concurrency, cooldown_max", "429; 1000; 4; 10s", "the request sent; the limited status; bounds on reaching the limit; longest wait for the window to reset afterwards"),
            ("margin", "500ms", "how long after Retry-After the second probe goes"),
            ("max_wait", "10s", "longest Retry-After the check is willing to wait"),
            ("reset", "auto", "legacy Reset form (used when Retry-After is absent)"),
        ],
    },
    KindInfo {
        name: "rate_limit.partition",
        summary: "exhausting the first tenant's limit does not limit the second tenant (RL-004); needs target.second_tenant_headers",
        params: &[("request, limited_status, max_requests, concurrency, cooldown_max", "429; 1000; 4; 10s", "the request sent; the limited status; bounds on reaching the limit; longest wait for the window to reset afterwards")],
    },
];

check_spec!(
    /// `kind: rate_limit.headers`
    RateLimitHeadersSpec {
        pub requests: Vec<RequestSpec>,
        #[serde(default)]
        pub samples: Option<Spanned<u32>>,
        #[serde(default)]
        pub dialect: Option<Spanned<String>>,
        #[serde(default)]
        pub reset: Option<Spanned<String>>,
        #[serde(default)]
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
        pub limited_status: Option<Spanned<u16>>,
        #[serde(default)]
        pub max_requests: Option<Spanned<u32>>,
        #[serde(default)]
        pub concurrency: Option<Spanned<u32>>,
        #[serde(default)]
        pub cooldown_max: Option<Spanned<DurationValue>>,
        #[serde(default)]
        pub stop_after: Option<Spanned<u32>>,
        #[serde(default)]
        pub error_code: Option<String>,
        #[serde(default)]
        pub error_code_path: Option<Spanned<String>>,
        #[serde(default)]
        pub p95_under: Option<Spanned<DurationValue>>,
        #[serde(default)]
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
        pub limited_status: Option<Spanned<u16>>,
        #[serde(default)]
        pub max_requests: Option<Spanned<u32>>,
        #[serde(default)]
        pub concurrency: Option<Spanned<u32>>,
        #[serde(default)]
        pub cooldown_max: Option<Spanned<DurationValue>>,
        #[serde(default)]
        pub margin: Option<Spanned<DurationValue>>,
        #[serde(default)]
        pub max_wait: Option<Spanned<DurationValue>>,
        #[serde(default)]
        pub reset: Option<Spanned<String>>,
    }
);

check_spec!(
    /// `kind: rate_limit.partition`
    RateLimitPartitionSpec {
        pub request: RequestSpec,
        #[serde(default)]
        pub limited_status: Option<Spanned<u16>>,
        #[serde(default)]
        pub max_requests: Option<Spanned<u32>>,
        #[serde(default)]
        pub concurrency: Option<Spanned<u32>>,
        #[serde(default)]
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
