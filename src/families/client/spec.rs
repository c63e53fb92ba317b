//! YAML specs of the client-certification kinds (`client.*`): the command
//! that runs the integration's client, an optional upstream script that
//! replaces the kind's default scenario, and each kind's parameters.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::keyword::Keyword;
use crate::model::scalar::{DurationValue, Scalar};
use crate::suite::kinds::{check_spec, family_kinds};

/// A word from a fixed list as written: any case, `-` or `_`
/// (`model::keyword`); an unknown word is reported by the planner.
pub type Word<T> = Option<Spanned<Keyword<T>>>;

/// How a scripted answer writes Retry-After.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RetryAfterFormSpec {
    /// delay-seconds.
    Seconds,
    /// An IMF-fixdate.
    HttpDate,
}

/// A scripted fault instead of an answer.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FaultSpec {
    /// Drop the connection after reading the request.
    Close,
    /// Hold the request (up to `hang_cap`).
    Hang,
}

/// When the client must retry a 503 (`client.retry_503_policy`).
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Policy503 {
    RetryAfterOnly,
    Always,
    Never,
}

/// What an Idempotency-Key must look like (`client.idempotency_keys`).
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum KeyFormat {
    #[serde(rename = "uuidv4-or-ulid")]
    UuidV4OrUlid,
    #[serde(rename = "uuidv4")]
    UuidV4,
    Ulid,
    Any,
}

/// What the first attempt gets in `client.replay_is_success`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FirstAttemptSpec {
    /// The connection is dropped.
    Close,
    /// A 503 with Retry-After.
    #[serde(rename = "503")]
    Status503,
}

/// The client under test.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// Program and arguments (templates; `${var.tminus_exe}` is this tminus binary).
    pub argv: Vec<Spanned<Scalar>>,
    #[serde(default)]
    pub env: BTreeMap<String, Spanned<Scalar>>,
    #[serde(default)]
    pub cwd: Option<Spanned<String>>,
    /// Kill the client (and its process group) after this long. Default 20s.
    #[serde(default)]
    pub timeout: Option<DurationValue>,
    /// Environment variable that carries the upstream base URL.
    #[serde(default)]
    pub url_env: Option<String>,
}

/// A scripted upstream (replaces the kind's default scenario).
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSpec {
    pub routes: Vec<RouteSpec>,
    /// Longest a `fault: hang` holds a request. Default 30s.
    #[serde(default)]
    pub hang_cap: Option<DurationValue>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    #[serde(default)]
    pub method: Option<String>,
    pub path: String,
    #[serde(default)]
    pub responses: Vec<Spanned<StepSpec>>,
    #[serde(default)]
    pub then: Option<Spanned<StepSpec>>,
    #[serde(default)]
    pub rate_limit: Option<RateLimitSpec>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSpec {
    pub limit: u32,
    pub window: DurationValue,
}

/// One scripted answer or fault.
#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub headers: BTreeMap<String, Scalar>,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub json: Option<serde_json::Value>,
    #[serde(default)]
    pub content_type: Option<String>,
    #[serde(default)]
    pub retry_after: Option<DurationValue>,
    /// `seconds` (default) or `http-date`.
    #[serde(default)]
    pub retry_after_form: Word<RetryAfterFormSpec>,
    #[serde(default)]
    pub delay: Option<DurationValue>,
    /// `close` (drop the connection after reading the body) or `hang`.
    #[serde(default)]
    pub fault: Word<FaultSpec>,
    /// Use this answer this many times in a row. Default 1.
    #[serde(default)]
    pub repeat: Option<u32>,
}

check_spec!(
    /// `client.respects_retry_after` (RETRY-001).
    RespectsRetryAfterSpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub retry_after: Option<DurationValue>,
        #[serde(default)]
        pub form: Word<RetryAfterFormSpec>,
        #[serde(default)]
        pub status: Option<u16>,
        #[serde(default)]
        pub tolerance: Option<DurationValue>,
    }
);

check_spec!(
    /// `client.exponential_backoff` (RETRY-003).
    ExponentialBackoffSpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub failures: Option<u32>,
        #[serde(default)]
        pub growth: Option<f64>,
        #[serde(default)]
        pub max_gap: Option<DurationValue>,
        #[serde(default)]
        pub min_gaps: Option<u32>,
    }
);

check_spec!(
    /// `client.jitter` (RETRY-005).
    JitterSpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub clients: Option<u32>,
        #[serde(default)]
        pub retry_after: Option<DurationValue>,
        #[serde(default)]
        pub min_stdev: Option<DurationValue>,
        #[serde(default)]
        pub bucket: Option<DurationValue>,
        #[serde(default)]
        pub max_bucket_share: Option<f64>,
    }
);

check_spec!(
    /// `client.bounded` (RETRY-003, RETRY-004).
    BoundedSpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub max_attempts: Option<u32>,
        #[serde(default)]
        pub max_total: Option<DurationValue>,
        #[serde(default)]
        pub status: Option<u16>,
        #[serde(default)]
        pub retry_after: Option<DurationValue>,
    }
);

check_spec!(
    /// `client.no_retry_on_4xx` (RETRY-002).
    NoRetryOn4xxSpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub statuses: Option<Vec<u16>>,
    }
);

check_spec!(
    /// `client.retry_503_policy` (RETRY-008).
    Retry503PolicySpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub policy: Word<Policy503>,
        #[serde(default)]
        pub retry_after: Option<DurationValue>,
    }
);

check_spec!(
    /// `client.idempotency_keys` (IDEM-C01..C03).
    IdempotencyKeysSpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub key_format: Word<KeyFormat>,
        #[serde(default)]
        pub min_operations: Option<u32>,
    }
);

check_spec!(
    /// `client.slows_before_limit` (RETRY-006).
    SlowsBeforeLimitSpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub limit: Option<u32>,
        #[serde(default)]
        pub window: Option<DurationValue>,
        #[serde(default)]
        pub min_requests: Option<u32>,
    }
);

check_spec!(
    /// `client.retry_amplification` (RETRY-007).
    RetryAmplificationSpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub failure_share: Option<f64>,
        #[serde(default)]
        pub status: Option<u16>,
        /// `none` sends the failure without Retry-After.
        #[serde(default)]
        pub retry_after: Option<Spanned<Scalar>>,
        #[serde(default)]
        pub hold: Option<DurationValue>,
        #[serde(default)]
        pub operations: Option<u32>,
        #[serde(default)]
        pub max_amplification: Option<f64>,
    }
);

check_spec!(
    /// `client.replay_is_success` (IDEM-C04).
    ReplayIsSuccessSpec {
        pub client: CommandSpec,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        /// `close` (default) or `503`.
        #[serde(default)]
        pub first: Word<FirstAttemptSpec>,
        #[serde(default)]
        pub retry_after: Option<DurationValue>,
        #[serde(default)]
        pub replay_header: Option<String>,
        #[serde(default)]
        pub replay_value: Option<String>,
        #[serde(default)]
        pub operations: Option<u32>,
    }
);

const CMD: (&str, &str, &str) = (
    "client",
    "required",
    "{argv, env, cwd, timeout (20s), url_env (TMINUS_UPSTREAM_URL)}: the client command",
);
const UP: (&str, &str, &str) = (
    "upstream",
    "per kind",
    "{routes: [{method, path, responses, then, rate_limit}], hang_cap}: replaces the default scenario",
);

/// Kinds of the client family.
pub const CLIENT_KINDS: &[crate::suite::kinds::KindInfo] = &[
    crate::suite::kinds::KindInfo {
        name: "client.respects_retry_after",
        summary: "the client waits at least Retry-After (seconds or HTTP-date) before retrying",
        params: &[
            CMD,
            UP,
            ("retry_after", "1s", "the Retry-After sent"),
            ("form", "seconds", "seconds | http-date (judged as date - Date - 1 s)"),
            ("status", "429", "status carrying Retry-After"),
            ("tolerance", "50ms", "how early a retry may come"),
        ],
    },
    crate::suite::kinds::KindInfo {
        name: "client.exponential_backoff",
        summary: "without Retry-After the gaps between attempts grow (later half >= growth x earlier half)",
        params: &[
            CMD,
            UP,
            ("failures", "8", "429s without Retry-After before a 201"),
            ("growth", "2.0", "sum of the later half of the gaps / sum of the earlier half"),
            ("max_gap", "60s", "no single gap may be longer"),
            ("min_gaps", "3", "fewer gaps cannot be judged (error)"),
        ],
    },
    crate::suite::kinds::KindInfo {
        name: "client.jitter",
        summary: "K concurrent clients told the same Retry-After do not retry in lockstep",
        params: &[
            CMD,
            UP,
            ("clients", "50", "K clients run at once"),
            ("retry_after", "1s", "Retry-After given to every client"),
            ("min_stdev", "200ms", "least standard deviation of retry offsets"),
            ("bucket", "100ms", "bucket width for the herd share"),
            ("max_bucket_share", "0.2", "largest share of retries in one bucket"),
        ],
    },
    crate::suite::kinds::KindInfo {
        name: "client.bounded",
        summary: "the client stops retrying within max attempts and time, then exits non-zero",
        params: &[
            CMD,
            UP,
            ("max_attempts", "10", "most attempts allowed"),
            ("max_total", "60s", "most time allowed until the client exits"),
            ("status", "429", "the status answered to every attempt"),
            ("retry_after", "none", "Retry-After on every answer (e.g. 100000s for RETRY-004)"),
        ],
    },
    crate::suite::kinds::KindInfo {
        name: "client.no_retry_on_4xx",
        summary: "the client sends exactly one request when answered 400/401/403/404/422",
        params: &[CMD, ("statuses", "[400, 401, 403, 404, 422]", "one run per status")],
    },
    crate::suite::kinds::KindInfo {
        name: "client.retry_503_policy",
        summary: "the client retries 503 only as the policy says (default: only with Retry-After)",
        params: &[
            CMD,
            ("policy", "retry-after-only", "retry-after-only | always | never"),
            ("retry_after", "1s", "Retry-After of the 503 that has one"),
        ],
    },
    crate::suite::kinds::KindInfo {
        name: "client.idempotency_keys",
        summary: "every mutating request has a well-formed key, reused with the same body on retries, new per operation",
        params: &[
            CMD,
            UP,
            ("key_format", "uuidv4-or-ulid", "uuidv4-or-ulid | uuidv4 | ulid | any"),
            ("min_operations", "2", "logical operations needed to judge key reuse across operations"),
        ],
    },
    crate::suite::kinds::KindInfo {
        name: "client.slows_before_limit",
        summary: "the client does not spend more than X-RateLimit-Remaining before the reset",
        params: &[
            CMD,
            ("limit", "4", "requests per window (the first answer says Remaining: limit - 1)"),
            ("window", "2s", "window length (X-RateLimit-Reset in delta seconds)"),
            ("min_requests", "5", "the client must send more than one window's worth"),
        ],
    },
    crate::suite::kinds::KindInfo {
        name: "client.retry_amplification",
        summary: "requests / logical operations stays low when a share of requests fails (no retry storm, one retry layer)",
        params: &[
            CMD,
            UP,
            ("failure_share", "0.05", "share of requests answered with the failure (deterministic: every 20th)"),
            ("status", "503", "status of the injected failure"),
            ("retry_after", "1s", "Retry-After of the failure, or `none`"),
            ("hold", "100ms", "requests this soon after a failure get it too (the platform is still shedding)"),
            ("operations", "distinct keys", "logical operations the client performs"),
            ("max_amplification", "1.1", "most requests per logical operation"),
        ],
    },
    crate::suite::kinds::KindInfo {
        name: "client.replay_is_success",
        summary: "a replayed 201 (Idempotent-Replayed) after a failed attempt ends the operation as a success",
        params: &[
            CMD,
            UP,
            ("first", "close", "close | 503: what the first attempt gets"),
            ("retry_after", "1s", "Retry-After of the 503 (first: 503)"),
            ("replay_header", "Idempotent-Replayed", "header marking the replay"),
            ("replay_value", "1", "its value"),
            ("operations", "1", "logical operations the client performs (one key each)"),
        ],
    },
];

family_kinds!(
    /// A `client.*` check as written.
    ClientSpec {
        "client.respects_retry_after" => RespectsRetryAfter(RespectsRetryAfterSpec),
        "client.exponential_backoff" => ExponentialBackoff(ExponentialBackoffSpec),
        "client.jitter" => Jitter(JitterSpec),
        "client.bounded" => Bounded(BoundedSpec),
        "client.no_retry_on_4xx" => NoRetryOn4xx(NoRetryOn4xxSpec),
        "client.retry_503_policy" => Retry503Policy(Retry503PolicySpec),
        "client.idempotency_keys" => IdempotencyKeys(IdempotencyKeysSpec),
        "client.slows_before_limit" => SlowsBeforeLimit(SlowsBeforeLimitSpec),
        "client.retry_amplification" => RetryAmplification(RetryAmplificationSpec),
        "client.replay_is_success" => ReplayIsSuccess(ReplayIsSuccessSpec),
    }
);
