//! YAML specs of the client-certification kinds (`client.*`): the command
//! that runs the integration's client, an optional upstream script that
//! replaces the kind's default scenario, and each kind's parameters.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::keyword::Keyword;
use crate::model::scalar::{DurationValue, Scalar};
use crate::spec::kinds::{
    check_spec, family_kinds, must, param, should, DefaultValue as D, Kind, Param,
};

/// A word from a fixed list as written: any case, `-` or `_`
/// (`model::keyword`); an unknown word is reported by the planner.
pub type Word<T> = Option<Spanned<Keyword<T>>>;

/// How a scripted answer writes Retry-After.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RetryAfterFormSpec {
    /// delay-seconds.
    Seconds,
    /// An IMF-fixdate.
    HttpDate,
}

/// A scripted fault instead of an answer.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FaultSpec {
    /// Drop the connection after reading the request.
    Close,
    /// Hold the request (up to `hang_cap`).
    Hang,
}

/// When the client must retry a 503 (`client.retry_503_policy`).
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Policy503 {
    RetryAfterOnly,
    Always,
    Never,
}

/// What an Idempotency-Key must look like (`client.idempotency_keys`).
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FirstAttemptSpec {
    /// The connection is dropped.
    Close,
    /// A 503 with Retry-After.
    #[serde(rename = "503")]
    Status503,
}

/// The client under test.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// Program and arguments (templates; `${var.tminus_exe}` is this tminus
    /// binary, `${upstream.url|host|port}` the mock upstream of the run).
    #[schemars(with = "Vec<Scalar>")]
    pub argv: Vec<Spanned<Scalar>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub env: BTreeMap<String, Spanned<Scalar>>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub cwd: Option<Spanned<String>>,
    /// Kill the client (and its process group) after this long. Default 20s.
    #[serde(default)]
    pub timeout: Option<DurationValue>,
    /// Environment variable that carries the upstream base URL.
    #[serde(default)]
    pub url_env: Option<String>,
}

/// Narrows a kind's default scenario to one operation (`match:`); without
/// it the scenario answers every mutating request, whatever its path.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct MatchSpec {
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
}

/// A scripted upstream (replaces the kind's default scenario).
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSpec {
    pub routes: Vec<RouteSpec>,
    /// Longest a `fault: hang` holds a request. Default 30s.
    #[serde(default)]
    pub hang_cap: Option<DurationValue>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    #[serde(default)]
    pub method: Option<String>,
    pub path: String,
    #[serde(default)]
    #[schemars(with = "Vec<StepSpec>")]
    pub responses: Vec<Spanned<StepSpec>>,
    #[serde(default)]
    #[schemars(with = "Option<StepSpec>")]
    pub then: Option<Spanned<StepSpec>>,
    #[serde(default)]
    pub rate_limit: Option<RateLimitSpec>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSpec {
    pub limit: u32,
    pub window: DurationValue,
}

/// One scripted answer or fault.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Default)]
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
    #[schemars(with = "Option<Keyword<RetryAfterFormSpec>>")]
    pub retry_after_form: Word<RetryAfterFormSpec>,
    #[serde(default)]
    pub delay: Option<DurationValue>,
    /// `close` (drop the connection after reading the body) or `hang`.
    #[serde(default)]
    #[schemars(with = "Option<Keyword<FaultSpec>>")]
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
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub retry_after: Option<DurationValue>,
        #[serde(default)]
        #[schemars(with = "Option<Keyword<RetryAfterFormSpec>>")]
        pub form: Word<RetryAfterFormSpec>,
        #[serde(default)]
        pub status: Option<u16>,
        #[serde(default)]
        pub tolerance: Option<DurationValue>,
        #[serde(default)]
        pub samples: Option<u32>,
    }
);

check_spec!(
    /// `client.exponential_backoff` (RETRY-003).
    ExponentialBackoffSpec {
        pub client: CommandSpec,
        #[serde(default)]
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub failures: Option<u32>,
        #[serde(default)]
        pub growth: Option<f64>,
        #[serde(default)]
        pub min_increase: Option<DurationValue>,
        #[serde(default)]
        pub clients: Option<u32>,
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
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub clients: Option<u32>,
        #[serde(default)]
        pub retry_after: Option<DurationValue>,
        #[serde(default)]
        pub min_spread: Option<DurationValue>,
        #[serde(default)]
        pub control_clients: Option<u32>,
    }
);

check_spec!(
    /// `client.bounded` (RETRY-003, RETRY-004).
    BoundedSpec {
        pub client: CommandSpec,
        #[serde(default)]
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
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
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub statuses: Option<Vec<u16>>,
    }
);

check_spec!(
    /// `client.retry_503_policy` (RETRY-008).
    Retry503PolicySpec {
        pub client: CommandSpec,
        #[serde(default)]
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        #[schemars(with = "Option<Keyword<Policy503>>")]
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
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        #[schemars(with = "Option<Keyword<KeyFormat>>")]
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
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
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
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        #[serde(default)]
        pub failure_share: Option<f64>,
        #[serde(default)]
        pub status: Option<u16>,
        /// `none` sends the failure without Retry-After.
        #[serde(default)]
        #[schemars(with = "Option<Scalar>")]
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
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        /// `close` (default) or `503`.
        #[serde(default)]
        #[schemars(with = "Option<Keyword<FirstAttemptSpec>>")]
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

check_spec!(
    /// `client.traceparent` (TRC-C01).
    TraceparentSpec {
        pub client: CommandSpec,
        #[serde(default)]
        #[schemars(with = "Option<MatchSpec>")]
        pub r#match: Option<Spanned<MatchSpec>>,
        #[serde(default)]
        pub upstream: Option<UpstreamSpec>,
        /// The retryable answer to the first attempts.
        #[serde(default)]
        pub status: Option<u16>,
        #[serde(default)]
        pub retry_after: Option<DurationValue>,
        /// How many attempts get `status` before a 201.
        #[serde(default)]
        pub failures: Option<u32>,
    }
);

check_spec!(
    /// `client.polling` (POLL-003): a polling loop walked over a rate-limited
    /// cursor list.
    PollingSpec {
        pub client: CommandSpec,
        /// The list the client polls (GET).
        #[serde(default)]
        pub path: Option<String>,
        /// The query parameter carrying the cursor.
        #[serde(default)]
        pub cursor_param: Option<String>,
        /// Pages in the list; the last one's `meta.next_cursor` is null.
        #[serde(default)]
        pub pages: Option<u32>,
        #[serde(default)]
        pub limit: Option<u32>,
        #[serde(default)]
        pub window: Option<DurationValue>,
    }
);

/// Every default of the family: the plan applies these, `KINDS` prints them.
pub mod defaults {
    use std::time::Duration;

    /// Kill timeout of a client command.
    pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);
    /// Name of the variable carrying the upstream URL.
    pub const URL_ENV: &str = "TMINUS_UPSTREAM_URL";
    /// Retry-After of `client.jitter`, `client.retry_503_policy`,
    /// `client.retry_amplification` and `client.replay_is_success`.
    pub const RETRY_AFTER: Duration = Duration::from_secs(1);
    /// `client.traceparent`: the retryable answer and how many attempts get it.
    pub const TRACE_STATUS: u16 = 503;
    pub const TRACE_FAILURES: u32 = 2;
    /// Retry-After of `client.respects_retry_after`: above the 0.5–1.0 s a
    /// client's own first backoff takes, so ignoring it cannot pass by chance.
    pub const RETRY_AFTER_WAIT: Duration = Duration::from_secs(2);
    /// The same with `form: http-date`, whose whole seconds cost 1 s of slack.
    pub const RETRY_AFTER_WAIT_DATE: Duration = Duration::from_secs(3);
    /// Answers with Retry-After in `client.respects_retry_after`.
    pub const SAMPLES: u32 = 3;
    pub const FORM: &str = "seconds";
    pub const LIMITED_STATUS: u16 = 429;
    pub const TOLERANCE: Duration = Duration::from_millis(50);
    /// 429s without Retry-After in `client.exponential_backoff`: eight
    /// gaps, two halves of four, per client.
    pub const FAILURES: u32 = 8;
    /// Later half's mean gap over the earlier half's (the herd's trimmed
    /// means per attempt): full jitter ×1.3 still clears it, flat herds
    /// do not (see the simulation in `timing.rs`).
    pub const GROWTH: f64 = 1.5;
    /// The later half must also wait this much longer than the earlier:
    /// above a herd's noise when it retries at once.
    pub const MIN_INCREASE: Duration = Duration::from_millis(20);
    /// Herd of `client.exponential_backoff`.
    pub const BACKOFF_CLIENTS: u32 = 30;
    pub const MAX_GAP: Duration = Duration::from_secs(60);
    pub const CLIENTS: u32 = 50;
    /// Longest the herd's first answers wait for every client to ask
    /// (below the usual 5 s request timeouts).
    pub const HERD_CAP: Duration = Duration::from_secs(4);
    /// Between the herd's first answers, in arrival order: room for each
    /// client's retry on a 2-core machine.
    pub const HERD_STAGGER: Duration = Duration::from_millis(20);
    /// Least width of the narrowest window holding half the herd's retries.
    pub const MIN_SPREAD: Duration = Duration::from_millis(80);
    /// `client.jitter`'s control group: reference clients without jitter run
    /// alongside the herd, whose spread is the machine's own noise.
    pub const CONTROL_CLIENTS: u32 = 16;
    /// Copies of the reference client with a constant backoff run beside
    /// a `client.exponential_backoff` herd: the machine's own gap growth.
    pub const BACKOFF_CONTROL_CLIENTS: u32 = 8;
    pub const MAX_ATTEMPTS: u32 = 10;
    /// Retry-After on every answer of `client.bounded`: the pacing it judges.
    pub const BOUNDED_RETRY_AFTER: Duration = Duration::from_secs(1);
    /// Above the longest run of the retry policies the client README lists
    /// (6 full-jitter attempts from 1 s with no cap sleep up to 31 s; with a
    /// loaded machine's start-up and late timers at most about 37 s; see
    /// `bounds.rs`), so a default verdict on them is never chance (issue 22:
    /// the old 15 s failed such a client on one run and passed it the next).
    pub const MAX_TOTAL: Duration = Duration::from_secs(45);
    /// `client.bounded`'s kill timeout when the suite gives none: above
    /// [`MAX_TOTAL`], so a bounded client visibly gives up before tminus
    /// would kill it.
    pub const BOUNDED_CLIENT_TIMEOUT: Duration = Duration::from_secs(55);
    pub const NO_RETRY_STATUSES: &[u16] = &[400, 401, 403, 404, 422];
    pub const POLICY_503: &str = "retry-after-only";
    pub const KEY_FORMAT: &str = "uuidv4-or-ulid";
    /// `standard`: any key (the format is a BOTIX contract).
    pub const KEY_FORMAT_STANDARD: &str = "any";
    pub const LIMIT: u32 = 4;
    pub const WINDOW: Duration = Duration::from_secs(2);
    pub const FAILURE_SHARE: f64 = 0.05;
    pub const FAILURE_STATUS: u16 = 503;
    pub const HOLD: Duration = Duration::from_millis(100);
    pub const MAX_AMPLIFICATION: f64 = 1.1;
    pub const FIRST: &str = "close";
    pub const REPLAY_HEADER: &str = "Idempotent-Replayed";
    pub const REPLAY_VALUE: &str = "1";
    pub const OPERATIONS: u32 = 1;
    /// `client.polling`: the list polled, its cursor parameter, and its
    /// pages (more than `LIMIT`, so a client that does not pace meets a 429).
    pub const POLL_PATH: &str = "/public/v1/events";
    pub const CURSOR_PARAM: &str = "cursor";
    pub const PAGES: u32 = 6;
}

use defaults as d;

const CMD: Param = param(
    "client",
    D::Required,
    "`{argv, env, cwd, timeout, url_env}`: the client command (argv and env are templates; `${upstream.url}`, `${upstream.host}`, `${upstream.port}` are the mock upstream's)",
);
const CMD_TIMEOUT: Param = param(
    "client.timeout",
    D::Duration(d::CLIENT_TIMEOUT),
    "the client and its process group are killed then",
);
const BOUNDED_CMD_TIMEOUT: Param = param(
    "client.timeout",
    D::Duration(d::BOUNDED_CLIENT_TIMEOUT),
    "the client and its process group are killed then; must be above `max_total`",
);
const CMD_URL_ENV: Param = param(
    "client.url_env",
    D::Str(d::URL_ENV),
    "environment variable carrying the upstream base URL",
);
const UP: Param = param(
    "upstream",
    D::Text("the kind's scenario"),
    "`{routes: [{method, path, responses, then, rate_limit}], hang_cap}`: replaces the default scenario",
);

const MATCH: Param = param(
    "match",
    D::Text("any mutating request"),
    "`{method, path}`: the operation the default scenario answers (without it, every POST, PUT, PATCH and DELETE on any path); not with `upstream:`",
);

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the client family.
pub const KINDS: &[Kind] = &[
    Kind {
        properties: &[
            must(
                "waits_retry_after",
                "catalogue RETRY-001 (BOTIX contract); RFC 9110 §10.2.3; RateLimit headers draft (\"Retry-After MUST take precedence\")",
                "every retry after an answer with Retry-After comes no earlier than it asks, over `samples` answers; skipped when the client never retries (`retries`), an error when it retries fewer than `samples` times (lower `samples`)",
            ),
            should(
                "retries",
                "BOTIX contract (checklist point 2: a 429 is retried after Retry-After); RFC 6585 §4 and RFC 9110 §10.2.3 only say how long to wait",
                "the client retries after an answer with Retry-After; one that never does lacks the feature (the wait is not observable: the message says how to make it so)",
            )
            .botix_must(),
            must(
                "understands_http_date",
                "RFC 9110 §10.2.3 (Retry-After = HTTP-date / delay-seconds: a recipient reads both)",
                "with `form: http-date`, a client that retries after a seconds Retry-After (a control run) retries after the date too, rather than ending; skipped for `form: seconds`, with `upstream:`, or when it retries after neither",
            ),
        ],
        name: "client.respects_retry_after",
        summary: "the client waits at least Retry-After (seconds or HTTP-date) before retrying (RETRY-001)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param(
                "retry_after",
                D::Text("2s (3s with `form: http-date`)"),
                "the Retry-After sent",
            ),
            param(
                "samples",
                D::Int(d::SAMPLES as u64),
                "answers with Retry-After before the 201; every wait is judged; a client retrying fewer times is an error (set it to what the client's policy retries), one never retrying fails `retries`",
            ),
            param(
                "form",
                D::Str(d::FORM),
                "`seconds` | `http-date` (judged as date - Date - 1 s)",
            ),
            param("status", D::Int(d::LIMITED_STATUS as u64), "status carrying Retry-After"),
            param("tolerance", D::Duration(d::TOLERANCE), "how early a retry may come"),
        ],
    },
    Kind {
        properties: &[
            must(
                "gaps_grow",
                "catalogue RETRY-003 (BOTIX contract; AWS Builders' Library capped exponential backoff)",
                "over a herd of `clients`, the later half of the attempts waits at least `growth` × and `min_increase` longer than the earlier half (per attempt, the herd's mean gap without its lowest and highest quarter), and longer by `min_increase` plus twice the growth a control group with a constant backoff shows alongside; within that noise inconclusive",
            ),
            should(
                "gap_capped",
                "catalogue RETRY-003 (BOTIX cap of 60 s)",
                "no single gap is longer than `max_gap`",
            ).botix_must(),
        ],
        name: "client.exponential_backoff",
        summary: "without Retry-After a herd's gaps between attempts grow (later half >= growth x earlier half) (RETRY-003)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param("failures", D::Int(d::FAILURES as u64), "429s without Retry-After before a 201, per client"),
            param(
                "growth",
                D::Float(d::GROWTH),
                "the later half's mean gap / the earlier half's (herd's trimmed means per attempt)",
            ),
            param(
                "min_increase",
                D::Duration(d::MIN_INCREASE),
                "the later half's mean gap must also be this much longer",
            ),
            param("clients", D::Int(d::BACKOFF_CLIENTS as u64), "K clients run at once (the herd)"),
            param("max_gap", D::Duration(d::MAX_GAP), "no single gap may be longer"),
            param(
                "min_gaps",
                D::Text("failures"),
                "gaps judged per client; more than half the herd leaving fewer is an error",
            ),
        ],
    },
    Kind {
        properties: &[must(
            "spread",
            "catalogue RETRY-005 (BOTIX contract; AWS Builders' Library full jitter); RateLimit headers draft §Resource exhaustion",
            "the narrowest window holding half the herd's retry offsets, less its uncertainty, is at least `min_spread` plus the machine's own noise measured in the run (a control group without jitter, the herd's CPU time); inconclusive (an error) when the noise could explain it",
        )],
        name: "client.jitter",
        summary: "K concurrent clients told the same Retry-After do not retry in lockstep (RETRY-005)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param("clients", D::Int(d::CLIENTS as u64), "K clients run at once"),
            param("retry_after", D::Duration(d::RETRY_AFTER), "Retry-After given to every client"),
            param(
                "min_spread",
                D::Duration(d::MIN_SPREAD),
                "least width of the narrowest window that holds half the retry offsets",
            ),
            param(
                "control_clients",
                D::Int(d::CONTROL_CLIENTS as u64),
                "tminus's reference clients without jitter run alongside the herd (4 to 100): their spread is the machine's own noise, which a passing spread must exceed",
            ),
        ],
    },
    Kind {
        properties: &[
            must(
                "gives_up",
                "catalogue RETRY-003 (\"attempts ≤ N + 1, then a surfaced error\"), RETRY-004",
                "at most `max_attempts` attempts while the client ran (its time is `ends_in_time`)",
            ),
            must(
                "ends_in_time",
                "catalogue RETRY-003, RETRY-004 (abort rather than wait past the client's maximum)",
                "the client exits by itself within `max_total`; skipped when it was stopped for its attempts first",
            ),
            must(
                "fails_visibly",
                "catalogue RETRY-003 (\"a surfaced error\")",
                "having given up, the client exits non-zero (exit 0 is a silent give-up); skipped when it never ended",
            ),
            must(
                "paced",
                "catalogue RETRY-001, RETRY-004; RFC 9110 §10.2.3",
                "every retry waits the Retry-After of the answer before it; skipped after one attempt",
            ),
        ],
        name: "client.bounded",
        summary: "the client stops retrying within max attempts and time, then exits non-zero (RETRY-003, RETRY-004)",
        params: &[
            CMD,
            BOUNDED_CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param("max_attempts", D::Int(d::MAX_ATTEMPTS as u64), "most attempts allowed"),
            param(
                "max_total",
                D::Duration(d::MAX_TOTAL),
                "most time allowed until the client exits (judged apart from the attempts); must be below `client.timeout`",
            ),
            param(
                "status",
                D::Int(d::LIMITED_STATUS as u64),
                "the status answered to every attempt",
            ),
            param(
                "retry_after",
                D::Duration(d::BOUNDED_RETRY_AFTER),
                "Retry-After on every answer, the pacing judged (e.g. 100000s for RETRY-004)",
            ),
        ],
    },
    Kind {
        properties: &[must(
            "no_retry",
            "catalogue RETRY-002 (BOTIX contract); RFC 9110 §15.5 (a 4xx is the client's error: repeating it unchanged cannot succeed)",
            "one request, no re-send, for each scripted 4xx actually served",
        )],
        name: "client.no_retry_on_4xx",
        summary: "the client sends exactly one request when answered 400/401/403/404/422 (RETRY-002)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param(
                "statuses",
                D::Codes(d::NO_RETRY_STATUSES),
                "one run per status; with `upstream:`, the first answer with one of them must not be re-sent",
            ),
        ],
    },
    Kind {
        properties: &[
            must(
                "with_retry_after",
                "catalogue RETRY-008 (BOTIX contract); RFC 9110 §15.6.4",
                "a 503 with Retry-After is retried as `policy` says (skipped when a suite's script serves none)",
            ),
            must(
                "without_retry_after",
                "catalogue RETRY-008 (BOTIX contract)",
                "a 503 without Retry-After is retried as `policy` says (skipped when a suite's script serves none)",
            ),
        ],
        name: "client.retry_503_policy",
        summary: "the client retries 503 only as the policy says (RETRY-008)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param(
                "policy",
                D::Str(d::POLICY_503),
                "`retry-after-only` | `always` | `never`",
            ),
            param("retry_after", D::Duration(d::RETRY_AFTER), "Retry-After of the 503 that has one"),
        ],
    },
    Kind {
        properties: &[
            must(
                "key_present",
                "catalogue IDEM-C01; draft-ietf-httpapi-idempotency-key §2",
                "every mutating request carries an Idempotency-Key",
            ),
            must(
                "key_reused",
                "catalogue IDEM-C02, IDEM-C03; draft-ietf-httpapi-idempotency-key §2",
                "every retry of an operation carries the key of its first attempt",
            ),
            must(
                "body_unchanged",
                "catalogue IDEM-C02; draft-ietf-httpapi-idempotency-key §2 (a reused key with another payload is refused)",
                "every retry sends a byte-identical body",
            ),
            must(
                "key_distinct",
                "catalogue IDEM-C01; draft-ietf-httpapi-idempotency-key §2 (a unique key per operation)",
                "no two operations share a key (skipped when the client performed one operation and `min_operations` is not set)",
            ),
            should(
                "key_format",
                "BOTIX contract (catalogue IDEM-C01); the draft RECOMMENDS a UUID or similar random identifier",
                "every key is in `key_format` (UUIDv4 or ULID)",
            ).botix_must(),
        ],
        name: "client.idempotency_keys",
        summary: "every mutating request has a well-formed key, reused with the same body on retries, new per operation (IDEM-C01..C03)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param(
                "key_format",
                D::Profiled {
                    standard: &D::Str(d::KEY_FORMAT_STANDARD),
                    botix: &D::Str(d::KEY_FORMAT),
                },
                "`uuidv4-or-ulid` | `uuidv4` | `ulid` | `any` (the draft only recommends a random id such as a UUID)",
            ),
            param(
                "min_operations",
                D::Text("what the client does"),
                "operations required: with fewer, `key_distinct` is an error; unset, a one-operation client gets `key_distinct` skipped",
            ),
        ],
    },
    Kind {
        properties: &[must(
            "paces_to_remaining",
            "catalogue RETRY-006 (BOTIX contract); RateLimit headers draft (\"SHOULD NOT exceed\" the quota before the reset)",
            "at most `limit` requests in the first window, never a 429",
        )],
        name: "client.slows_before_limit",
        summary: "the client does not spend more than X-RateLimit-Remaining before the reset (RETRY-006)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            param(
                "limit",
                D::Int(d::LIMIT as u64),
                "requests per window (the first answer says Remaining: limit - 1)",
            ),
            param(
                "window",
                D::Duration(d::WINDOW),
                "window length (X-RateLimit-Reset in delta seconds)",
            ),
            param(
                "min_requests",
                D::Text("limit + 1"),
                "the client must send more than one window's worth",
            ),
        ],
    },
    Kind {
        properties: &[must(
            "amplification",
            "catalogue RETRY-007 (AWS Builders' Library: retry at one layer)",
            "requests ÷ logical operations at most `max_amplification` under injected failures",
        )],
        name: "client.retry_amplification",
        summary: "requests / logical operations stays low when a share of requests fails (no retry storm, one retry layer) (RETRY-007)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param(
                "failure_share",
                D::Float(d::FAILURE_SHARE),
                "share of requests answered with the failure (deterministic: every 20th for 5 %)",
            ),
            param(
                "status",
                D::Int(d::FAILURE_STATUS as u64),
                "status of the injected failure",
            ),
            param(
                "retry_after",
                D::Duration(d::RETRY_AFTER),
                "Retry-After of the failure, or `none`",
            ),
            param(
                "hold",
                D::Duration(d::HOLD),
                "requests this soon after a failure get it too (the platform is still shedding)",
            ),
            param(
                "operations",
                D::Text("distinct Idempotency-Keys"),
                "logical operations the client performs",
            ),
            param(
                "max_amplification",
                D::Float(d::MAX_AMPLIFICATION),
                "most requests per logical operation",
            ),
        ],
    },
    Kind {
        properties: &[must(
            "replay_taken",
            "catalogue IDEM-C04 (BOTIX contract); draft-ietf-httpapi-idempotency-key §2",
            "after the replayed 2xx: exit 0, nothing more with its key, no new key for the same operation",
        )],
        name: "client.replay_is_success",
        summary: "a replayed 201 (Idempotent-Replayed) after a failed attempt ends the operation as a success (IDEM-C04)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param("first", D::Str(d::FIRST), "`close` | `503`: what the first attempt gets"),
            param(
                "retry_after",
                D::Duration(d::RETRY_AFTER),
                "Retry-After of the 503 (with `first: 503`)",
            ),
            param("replay_header", D::Str(d::REPLAY_HEADER), "header marking the replay"),
            param("replay_value", D::Str(d::REPLAY_VALUE), "its value"),
            param(
                "operations",
                D::Int(d::OPERATIONS as u64),
                "logical operations the client performs (one key each)",
            ),
        ],
    },
    Kind {
        properties: &[
            must(
                "valid",
                "catalogue TRC-C01; W3C Trace Context §3.2 (version 00, a non-zero 32-hex trace-id and 16-hex parent-id, lower case)",
                "every attempt carries a valid traceparent",
            ),
            must(
                "retries_share_trace",
                "catalogue TRC-C01; W3C Trace Context §3.2.2.3-4 (one trace, a new span per request)",
                "the attempts of one operation (up to and including the one answered 2xx) carry one trace-id, each with a parent-id of its own; not exercised when the client did not retry, not judged when a traceparent is invalid",
            ),
        ],
        name: "client.traceparent",
        summary: "the client sends a valid traceparent, and the retries of one operation share its trace-id with distinct parent-ids (TRC-C01)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            MATCH,
            UP,
            param(
                "status",
                D::Int(d::TRACE_STATUS as u64),
                "the retryable answer to the first attempts",
            ),
            param(
                "retry_after",
                D::Duration(d::RETRY_AFTER),
                "its Retry-After",
            ),
            param(
                "failures",
                D::Int(d::TRACE_FAILURES as u64),
                "attempts answered `status` before a 201",
            ),
        ],
    },
    Kind {
        properties: &[
            must(
                "follows_cursor",
                "catalogue POLL-003 and POLL-001 (BOTIX: `meta.next_cursor` walked to the end)",
                "every page is asked with the cursor the page before handed out, up to the page whose next_cursor is null",
            ),
            must(
                "stops_at_end",
                "catalogue POLL-003 (BOTIX: the walk ends at an empty cursor)",
                "no request follows the page whose next_cursor is null; not exercised when the walk never got there",
            ),
            must(
                "paces_to_remaining",
                "catalogue POLL-003, as RETRY-006 (BOTIX contract); RateLimit headers draft (\"SHOULD NOT exceed\" the quota before the reset)",
                "at most `limit` requests in the first window, never a 429",
            ),
        ],
        name: "client.polling",
        summary: "a polling client walks a rate-limited cursor list to its end: it follows next_cursor, stops at a null one and paces itself to X-RateLimit-Remaining (POLL-003)",
        params: &[
            CMD,
            CMD_TIMEOUT,
            CMD_URL_ENV,
            param("path", D::Str(d::POLL_PATH), "the list the client polls (GET)"),
            param("cursor_param", D::Str(d::CURSOR_PARAM), "the query parameter carrying the cursor"),
            param(
                "pages",
                D::Int(d::PAGES as u64),
                "pages in the list (the last one's `meta.next_cursor` is null); more than `limit`",
            ),
            param(
                "limit",
                D::Int(d::LIMIT as u64),
                "requests per window (the first answer says Remaining: limit - 1)",
            ),
            param(
                "window",
                D::Duration(d::WINDOW),
                "window length (X-RateLimit-Reset in delta seconds)",
            ),
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
        "client.traceparent" => Traceparent(TraceparentSpec),
        "client.polling" => Polling(PollingSpec),
    }
);

#[cfg(test)]
mod tests {
    use super::KINDS;
    use crate::families::client::plan::{ClientPlan, Judge, KeyFormat, Policy503};
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;
    use crate::upstream::{Action, Reply, RetryAfterForm, Step};

    const CLIENT: &str = "    client: { argv: [./client] }\n";

    const MINIMAL: &[&str] = &[
        "client.respects_retry_after",
        "client.exponential_backoff",
        "client.jitter",
        "client.bounded",
        "client.no_retry_on_4xx",
        "client.retry_503_policy",
        "client.idempotency_keys",
        "client.slows_before_limit",
        "client.retry_amplification",
        "client.replay_is_success",
        "client.traceparent",
        "client.polling",
    ];

    fn plan(kind: &str, extra: &str) -> ClientPlan {
        match plan_check(kind, &format!("{CLIENT}{extra}")) {
            CheckPlan::Client(p) => *p,
            other => panic!("{other:?}"),
        }
    }

    fn reply(s: &Step) -> &Reply {
        match &s.action {
            Action::Reply(r) => r,
            other => panic!("not a reply: {other:?}"),
        }
    }

    fn retry_after(r: &Reply) -> Option<String> {
        r.retry_after.and_then(|(d, _)| dur(d))
    }

    #[test]
    fn table_defaults_are_the_planned_ones() {
        assert_covers(KINDS, MINIMAL);
        for kind in MINIMAL {
            let p = plan(kind, "");
            let route = &p.runs[0].script.routes[0];
            let mut planned = vec![
                ("client.timeout", dur(p.command.timeout)),
                ("client.url_env", word(&p.command.url_env)),
            ];
            planned.extend(match &p.judge {
                Judge::RetryAfter {
                    tolerance, samples, ..
                } => {
                    let r = reply(&route.steps[0]);
                    let form = match r.retry_after.expect("a Retry-After").1 {
                        RetryAfterForm::Seconds => "seconds",
                        RetryAfterForm::HttpDate => "http-date",
                    };
                    vec![
                        ("retry_after", retry_after(r)),
                        ("form", word(form)),
                        ("status", int(r.status)),
                        ("tolerance", dur(*tolerance)),
                        ("samples", int(*samples as u64)),
                    ]
                }
                Judge::Exponential {
                    growth,
                    min_increase,
                    max_gap,
                    min_gaps,
                } => {
                    assert_eq!(*min_gaps, route.steps.len(), "min_gaps: failures");
                    vec![
                        ("failures", int(route.steps.len() as u64)),
                        ("growth", float(*growth)),
                        ("min_increase", dur(*min_increase)),
                        ("clients", int(p.runs[0].clients as u64)),
                        ("max_gap", dur(*max_gap)),
                    ]
                }
                Judge::Jitter { min_spread } => vec![
                    ("clients", int(p.runs[0].clients as u64)),
                    (
                        "control_clients",
                        int(p.control.as_ref().map_or(0, |c| c.clients) as u64),
                    ),
                    ("retry_after", retry_after(reply(&route.steps[0]))),
                    ("min_spread", dur(*min_spread)),
                ],
                Judge::Bounded {
                    max_attempts,
                    max_total,
                } => vec![
                    ("max_attempts", int(*max_attempts as u64)),
                    ("max_total", dur(*max_total)),
                    ("status", int(reply(&route.then).status)),
                    ("retry_after", retry_after(reply(&route.then))),
                ],
                Judge::NoRetry4xx { .. } => vec![(
                    "statuses",
                    list(
                        p.runs
                            .iter()
                            .map(|r| reply(&r.script.routes[0].steps[0]).status),
                    ),
                )],
                Judge::Retry503 { policy, .. } => vec![
                    (
                        "policy",
                        word(match policy {
                            Policy503::RetryAfterOnly => "retry-after-only",
                            Policy503::Always => "always",
                            Policy503::Never => "never",
                        }),
                    ),
                    (
                        "retry_after",
                        retry_after(reply(&p.runs[1].script.routes[0].steps[0])),
                    ),
                ],
                Judge::IdempotencyKeys {
                    format,
                    min_operations,
                } => vec![
                    (
                        "key_format",
                        word(match format {
                            KeyFormat::UuidV4OrUlid => "uuidv4-or-ulid",
                            KeyFormat::UuidV4 => "uuidv4",
                            KeyFormat::Ulid => "ulid",
                            KeyFormat::Any => "any",
                        }),
                    ),
                    ("min_operations", opt(min_operations)),
                ],
                Judge::SlowsBeforeLimit {
                    limit,
                    window,
                    min_requests,
                } => {
                    assert_eq!(*min_requests, *limit as usize + 1, "limit + 1");
                    vec![
                        ("limit", int(*limit)),
                        ("window", dur(*window)),
                        ("min_requests", int(*min_requests as u64)),
                    ]
                }
                Judge::Amplification { operations, max } => {
                    let inject = route.inject.as_ref().expect("injected failures");
                    let r = reply(&inject.step);
                    vec![
                        ("failure_share", float(inject.share)),
                        ("status", int(r.status)),
                        ("retry_after", retry_after(r)),
                        ("hold", dur(inject.hold)),
                        ("operations", opt(operations)),
                        ("max_amplification", float(*max)),
                    ]
                }
                Judge::Polling {
                    cursor_param,
                    pages,
                    limit,
                    window,
                } => {
                    assert_eq!(route.steps.len(), *pages, "one step per page");
                    vec![
                        ("path", word(route.path.as_deref().unwrap_or_default())),
                        ("cursor_param", word(cursor_param)),
                        ("pages", int(*pages as u64)),
                        ("limit", int(*limit)),
                        ("window", dur(*window)),
                    ]
                }
                Judge::Traceparent => {
                    let r = reply(&route.steps[0]);
                    vec![
                        ("status", int(r.status)),
                        ("retry_after", retry_after(r)),
                        ("failures", int(route.steps.len() as u64)),
                    ]
                }
                Judge::Replay {
                    header,
                    value,
                    operations,
                } => {
                    assert!(matches!(route.steps[0].action, Action::Close));
                    let with_503 = plan(kind, "    first: 503\n");
                    let first = reply(&with_503.runs[0].script.routes[0].steps[0]);
                    vec![
                        ("first", word("close")),
                        ("retry_after", retry_after(first)),
                        ("replay_header", word(header)),
                        ("replay_value", word(value)),
                        ("operations", int(*operations as u64)),
                    ]
                }
            });
            assert_planned(KINDS, kind, &planned);
        }
    }
}
