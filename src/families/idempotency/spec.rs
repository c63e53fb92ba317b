//! YAML specs of the idempotency family (catalogue §1, IDEM-001..010): one
//! struct per kind, all sharing the `request:` grammar, an `effects:` counter,
//! the key header/value and (where a replay is judged) a `marker:` dialect.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::keyword::Keyword;
use crate::model::scalar::{DurationValue, Scalar, StatusSet};
use crate::spec::kinds::{
    check_spec, family_kinds, must, param, should, DefaultValue as D, Kind, Param,
};
use crate::spec::request::{CounterSpec, RequestSpec};

/// What the replay marker must look like (`marker.policy`).
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MarkerPolicy {
    Required,
    Optional,
    Forbidden,
}

/// Whether a rejected request's answer is stored under its key
/// (`idempotency.errors_not_cached` `policy`).
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorsPolicy {
    NotCached,
    Cached,
}

/// Whether the target requires a key (`idempotency.missing_key` `policy`).
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum KeyPolicy {
    Required,
    Optional,
}

/// What endpoint B must answer to a key first used on endpoint A (IDEM-010).
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EndpointPolicy {
    /// A rejection or an independent execution.
    Either,
    Reject,
    Execute,
}

/// A policy word as written: any case, `-` or `_` (`model::keyword`).
pub type Policy<T> = Option<Spanned<Keyword<T>>>;

/// The replay marker's dialect: `{header, values, policy}`.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct MarkerSpec {
    /// Default `Idempotent-Replayed`.
    #[serde(default)]
    pub header: Option<String>,
    /// Accepted values, compared case-insensitively; default `["1"]`.
    #[serde(default)]
    pub values: Option<Vec<Scalar>>,
    /// `required` (default), `optional` or `forbidden`.
    #[serde(default)]
    #[schemars(with = "Option<Keyword<MarkerPolicy>>")]
    pub policy: Policy<MarkerPolicy>,
}

check_spec!(
    /// `idempotency.replay` (IDEM-002).
    ReplaySpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        #[schemars(with = "Vec<String>")]
        pub ignore: Vec<Spanned<String>>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub id_path: Option<Spanned<String>>,
    }
);

check_spec!(
    /// `idempotency.distinct_keys`: one body, two keys, two operations.
    DistinctKeysSpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub id_path: Option<Spanned<String>>,
    }
);

check_spec!(
    /// `idempotency.mismatch` (IDEM-003).
    MismatchSpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        /// The second request; default: the first with one field changed.
        #[serde(default)]
        pub changed: Option<RequestSpec>,
        #[serde(default)]
        pub reject_status: Option<StatusSet>,
    }
);

check_spec!(
    /// `idempotency.concurrent` (IDEM-004).
    ConcurrentSpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub concurrency: Option<Spanned<u32>>,
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub rounds: Option<Spanned<u32>>,
        #[serde(default)]
        pub conflict_status: Option<StatusSet>,
        #[serde(default)]
        pub allow_replay: Option<bool>,
        #[serde(default)]
        #[schemars(with = "BTreeMap<String, Scalar>")]
        pub slow_headers: BTreeMap<String, Spanned<Scalar>>,
    }
);

check_spec!(
    /// `idempotency.lost_response`: the answer never arrives; the retry must not
    /// execute again.
    LostResponseSpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        #[schemars(with = "BTreeMap<String, Scalar>")]
        pub slow_headers: BTreeMap<String, Spanned<Scalar>>,
        #[serde(default)]
        pub in_progress_status: Option<StatusSet>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub retry_within: Option<Spanned<DurationValue>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub settle: Option<Spanned<DurationValue>>,
    }
);

check_spec!(
    /// `idempotency.errors_not_cached` (IDEM-008).
    ErrorsSpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        /// The first, invalid request (same key).
        pub invalid: RequestSpec,
        /// `not_cached` (default) or `cached`.
        #[serde(default)]
        #[schemars(with = "Option<Keyword<ErrorsPolicy>>")]
        pub policy: Policy<ErrorsPolicy>,
    }
);

check_spec!(
    /// `idempotency.in_flight` (IDEM-009).
    InFlightSpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        #[schemars(with = "BTreeMap<String, Scalar>")]
        pub slow_headers: BTreeMap<String, Spanned<Scalar>>,
        #[serde(default)]
        pub conflict_status: Option<StatusSet>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub retry_after: Option<Spanned<DurationValue>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub retry_within: Option<Spanned<DurationValue>>,
    }
);

check_spec!(
    /// `idempotency.missing_key` (IDEM-001).
    MissingKeySpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        /// `required` (default) or `optional`.
        #[serde(default)]
        #[schemars(with = "Option<Keyword<KeyPolicy>>")]
        pub policy: Policy<KeyPolicy>,
        #[serde(default)]
        pub reject_status: Option<StatusSet>,
    }
);

check_spec!(
    /// `idempotency.key_scope` (IDEM-005).
    KeyScopeSpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub id_path: Option<Spanned<String>>,
    }
);

check_spec!(
    /// `idempotency.key_syntax` (IDEM-006).
    KeySyntaxSpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        /// Statuses accepted for a malformed key; default 400.
        #[serde(default)]
        pub reject_status: Option<StatusSet>,
    }
);

check_spec!(
    /// `idempotency.endpoint_scope` (IDEM-010).
    EndpointScopeSpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        /// Endpoint B; without a body it is sent with A's body bytes.
        pub other_request: RequestSpec,
        /// B's own side-effect counter (optional).
        #[serde(default)]
        pub other_effects: Option<CounterSpec>,
        /// `either` (default), `reject` or `execute`.
        #[serde(default)]
        #[schemars(with = "Option<Keyword<EndpointPolicy>>")]
        pub policy: Policy<EndpointPolicy>,
        /// Statuses accepted as B's rejection; default 4xx.
        #[serde(default)]
        pub reject_status: Option<StatusSet>,
    }
);

check_spec!(
    /// `idempotency.expiry` (IDEM-007).
    ExpirySpec {
        pub request: RequestSpec,
        pub effects: CounterSpec,
        #[serde(default)]
        pub key_header: Option<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        /// The target's key lifetime (a short test TTL).
        #[schemars(with = "DurationValue")]
        pub ttl: Spanned<DurationValue>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub margin: Option<Spanned<DurationValue>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub max_wait: Option<Spanned<DurationValue>>,
    }
);

/// Every default of the family: the plan applies these, `KINDS` prints them.
pub mod defaults {
    use std::time::Duration;

    use crate::model::scalar::StatusPattern::{self, Class, Exact};

    pub const KEY_HEADER: &str = "Idempotency-Key";
    pub const KEY: &str = "${uuid}";
    pub const SUCCESS: &[StatusPattern] = &[Class(2)];
    pub const MARKER_HEADER: &str = "Idempotent-Replayed";
    pub const MARKER_VALUES: &[&str] = &["1"];
    /// The draft defines no replay marker: only `botix` requires one.
    pub const MARKER_POLICY_STANDARD: &str = "optional";
    pub const MARKER_POLICY: &str = "required";
    pub const MISMATCH_REJECT: &[StatusPattern] = &[Exact(422)];
    pub const CONCURRENCY: u32 = 10;
    /// Rounds of `idempotency.concurrent`: ten keep the chance of missing a
    /// check-then-insert race of 0.3 ms or more below 0.1 % (`race.rs`).
    pub const ROUNDS: u32 = 10;
    pub const CONFLICT: &[StatusPattern] = &[Exact(409)];
    pub const ALLOW_REPLAY: bool = true;
    pub const IN_PROGRESS: &[StatusPattern] = &[Exact(409)];
    pub const LOST_RETRY_WITHIN: Duration = Duration::from_secs(5);
    pub const SETTLE: Duration = Duration::from_secs(1);
    pub const ERRORS_POLICY: &str = "not_cached";
    pub const IN_FLIGHT_RETRY_AFTER: Duration = Duration::from_millis(150);
    pub const IN_FLIGHT_RETRY_WITHIN: Duration = Duration::from_secs(10);
    pub const MISSING_KEY_POLICY: &str = "required";
    pub const MISSING_KEY_REJECT: &[StatusPattern] = &[Exact(400)];
    pub const KEY_SYNTAX_REJECT: &[StatusPattern] = &[Exact(400)];
    pub const ENDPOINT_POLICY: &str = "either";
    pub const ENDPOINT_REJECT: &[StatusPattern] = &[Class(4)];
    pub const EXPIRY_MARGIN: Duration = Duration::from_millis(500);
    pub const EXPIRY_MAX_WAIT: Duration = Duration::from_secs(10);
}

use defaults as d;

const REQ: Param = param(
    "request",
    D::Required,
    "the mutating request (shared request grammar)",
);
const EFFECTS: Param = param(
    "effects",
    D::Required,
    "`{request, value}`: the side-effect counter (a number at a JSON path, or the length of a list there), read before the first request and after the requests it judges: after each one for `replay` and `mismatch`, after each round for `concurrent`",
);
const KEY_HEADER: Param = param(
    "key_header",
    D::Str(d::KEY_HEADER),
    "header carrying the key",
);
const KEY: Param = param(
    "key",
    D::Str(d::KEY),
    "template of the key value, rendered fresh per check (`${ulid}`, `\"order-${uuid}\"`)",
);
const SUCCESS: Param = param(
    "success",
    D::Statuses(d::SUCCESS),
    "statuses of a successful execution",
);
const MARKER_HEADER: Param = param(
    "marker.header",
    D::Str(d::MARKER_HEADER),
    "header marking a replayed answer",
);
const MARKER_VALUES: Param = param(
    "marker.values",
    D::List(d::MARKER_VALUES),
    "its accepted values, compared case-insensitively (`[\"1\", \"true\"]` accepts both)",
);
const MARKER_POLICY: Param = param(
    "marker.policy",
    D::Profiled {
        standard: &D::Str(d::MARKER_POLICY_STANDARD),
        botix: &D::Str(d::MARKER_POLICY),
    },
    "`required` | `optional` | `forbidden`: whether a replay must carry the marker (the draft defines none)",
);

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the idempotency family.
pub const KINDS: &[Kind] = &[
    Kind {
        properties: &[
            must(
                "single_effect",
                "draft-ietf-httpapi-idempotency-key §2; catalogue IDEM-002",
                "two requests with one key execute once: the counter, read after each, rises with the first and not with the replay",
            ),
            must(
                "same_status",
                "draft-ietf-httpapi-idempotency-key §2 (\"respond with the result of the previously completed operation\")",
                "the replay answers the first request's status",
            ),
            must(
                "same_body",
                "draft-ietf-httpapi-idempotency-key §2",
                "the replay's body equals the first (minus `ignore`; or the same id at `id_path`)",
            ),
            should(
                "marker",
                "BOTIX contract (catalogue IDEM-002); the draft defines no marker",
                "the replay carries the marker (`marker.policy: required`), or none (`forbidden`); skipped for `optional`",
            ).botix_must(),
            should(
                "first_not_marked",
                "BOTIX contract (catalogue IDEM-002)",
                "the first execution does not claim to be a replay",
            ).botix_must(),
            must(
                "key_not_content",
                "draft-ietf-httpapi-idempotency-key §2 (a key identifies one request)",
                "the control: the same body under a new key executes (+1), so the replay came from the key, not from de-duplication by content; when it does not, this fails and the replay's passes are not decided",
            ),
        ],
        name: "idempotency.replay",
        summary: "same request twice with one key: one execution, identical answer, replay marker; the same body under a new key executes (IDEM-002)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER_HEADER,
            MARKER_VALUES,
            MARKER_POLICY,
            param("ignore", D::List(&[]), "JSON paths left out of the body comparison"),
            param("id_path", D::Absent, "compare only the resource id at this JSON path"),
        ],
    },
    Kind {
        properties: &[
            must(
                "two_executions",
                "draft-ietf-httpapi-idempotency-key §2 (a key identifies one request)",
                "one body under two keys executes twice (side-effect counter +2)",
            ),
            must(
                "second_succeeds",
                "draft-ietf-httpapi-idempotency-key §2",
                "the second key's request is served like the first; not exercised when nothing executed",
            ),
            must(
                "distinct_resources",
                "draft-ietf-httpapi-idempotency-key §2",
                "the two answers name different resources at `id_path` (skipped without `id_path`; not exercised when an id is missing)",
            ),
            should(
                "first_not_marked",
                "BOTIX contract (catalogue IDEM-002)",
                "the second key's answer, a first execution, carries no replay marker",
            ).botix_must(),
        ],
        name: "idempotency.distinct_keys",
        summary: "same body under two keys: two executions (no dedupe by body)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER_HEADER,
            MARKER_VALUES,
            MARKER_POLICY,
            param("id_path", D::Absent, "the two resource ids at this JSON path must differ"),
        ],
    },
    Kind {
        properties: &[
            must(
                "rejected",
                "catalogue IDEM-003; draft-ietf-httpapi-idempotency-key §2.7; Stripe",
                "the same key with a changed body gets a 4xx, and the changed body alone (under a new key) is accepted, so the 4xx is about the key; not exercised when the changed body is itself rejected",
            ),
            should(
                "reject_status",
                "draft-ietf-httpapi-idempotency-key §2.7 (SHOULD reply 422)",
                "the rejection's status is one of `reject_status`",
            ),
            must(
                "not_executed",
                "catalogue IDEM-003",
                "the changed body is not executed (the counter, read after each request, rose with the first and not with the changed body); not exercised when the first executed nothing",
            ),
            must(
                "not_replayed",
                "catalogue IDEM-003",
                "the changed body does not get the first request's stored answer (marker or identical body)",
            ),
        ],
        name: "idempotency.mismatch",
        summary: "same key, different body: rejected, not executed, not replayed; a 4xx counts only if the changed body alone is accepted (IDEM-003)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER_HEADER,
            MARKER_VALUES,
            MARKER_POLICY,
            param(
                "changed",
                D::Text("the first with one change that stays valid: appended to a free-text field (description, memo, text, ...), else one added to an amount or quantity, else appended to a prose string (never a code such as currency), else a field added"),
                "the second request (same key); after a 4xx it is sent once more under a new key to prove the rejection is about the key",
            ),
            param("reject_status", D::Statuses(d::MISMATCH_REJECT), "accepted rejection statuses"),
        ],
    },
    Kind {
        properties: &[
            must(
                "single_effect",
                "catalogue IDEM-004; draft-ietf-httpapi-idempotency-key §2",
                "N parallel requests with one key execute once (side-effect counter +1)",
            ),
            must(
                "no_5xx",
                "catalogue IDEM-004 (no 5xx from a unique-index violation)",
                "no parallel request gets a 5xx",
            ),
            must(
                "one_success",
                "draft-ietf-httpapi-idempotency-key §2",
                "at least one request gets the result",
            ),
            should(
                "others_conflict_or_replay",
                "draft-ietf-httpapi-idempotency-key §2.7 (SHOULD reply 409)",
                "every other request gets `conflict_status` or a replayed success (`allow_replay`), and none of them executed (the counter rose by one at most: a success is a replay only then)",
            ),
        ],
        name: "idempotency.concurrent",
        summary: "N parallel requests with one new key: exactly one execution, others 409 or replay, no 5xx (IDEM-004)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER_HEADER,
            MARKER_VALUES,
            MARKER_POLICY,
            param("concurrency", D::Int(d::CONCURRENCY as u64), "parallel requests (2 to 100)"),
            param(
                "rounds",
                D::Int(d::ROUNDS as u64),
                "rounds of `concurrency` requests, a new key each, stopping at the first that fails (1 to 50)",
            ),
            param("conflict_status", D::Statuses(d::CONFLICT), "answer to a request whose key is in use"),
            param("allow_replay", D::Bool(d::ALLOW_REPLAY), "a replayed success also counts as correct"),
            param(
                "slow_headers",
                D::EmptyMap,
                "headers that make the target slow (test hook), sent on every request",
            ),
        ],
    },
    Kind {
        properties: &[
            must(
                "single_effect",
                "draft-ietf-httpapi-idempotency-key §1 (retry after a lost response)",
                "the dropped request and its retry execute once",
            ),
            must(
                "retry_succeeds",
                "draft-ietf-httpapi-idempotency-key §2",
                "the retry gets the result (after in-progress answers, within `retry_within`)",
            ),
        ],
        name: "idempotency.lost_response",
        summary: "request sent, connection dropped before the answer, retried with the key: one execution, result returned",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER_HEADER,
            MARKER_VALUES,
            MARKER_POLICY,
            param("slow_headers", D::EmptyMap, "headers sent on the dropped request"),
            param(
                "in_progress_status",
                D::Statuses(d::IN_PROGRESS),
                "retry answers accepted (and retried every 100 ms) while the first still runs",
            ),
            param(
                "retry_within",
                D::Duration(d::LOST_RETRY_WITHIN),
                "how long the retry may keep getting in-progress",
            ),
            param(
                "settle",
                D::Duration(d::SETTLE),
                "wait after the retry before reading the counter, so a slow first execution is counted",
            ),
        ],
    },
    Kind {
        properties: &[
            should(
                "retry_answer",
                "catalogue IDEM-008 (BOTIX, Stripe); the draft leaves error caching to the server",
                "the valid retry executes (`not_cached`) or gets the stored error (`cached`); not exercised when the valid request is not served even under a new key",
            ).botix_must(),
            must(
                "retry_effect",
                "draft-ietf-httpapi-idempotency-key §2",
                "the side-effect counter agrees with the retry's answer: +1 after a success, +0 after an error",
            ),
        ],
        name: "idempotency.errors_not_cached",
        summary: "invalid body with K (4xx), then a valid body with K: executes (not_cached) or replays the error (cached) (IDEM-008)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            param("invalid", D::Required, "the first request, rejected by validation (must get a 4xx)"),
            param("policy", D::Str(d::ERRORS_POLICY), "`not_cached` | `cached`"),
        ],
    },
    Kind {
        properties: &[
            must(
                "single_effect",
                "catalogue IDEM-009 (never two executions)",
                "a slow request, a retry during it and one after execute once",
            ),
            should(
                "conflict_while_in_flight",
                "draft-ietf-httpapi-idempotency-key §2.7 (SHOULD reply 409)",
                "the retry during the first attempt gets `conflict_status`; not exercised when the first attempt had already finished",
            ),
            must(
                "replay_after_completion",
                "draft-ietf-httpapi-idempotency-key §2",
                "the retry after completion gets the first result (same status, and the marker or the same body)",
            ),
        ],
        name: "idempotency.in_flight",
        summary: "a retry while the first attempt still runs gets 409, never a second execution; after completion, a replay (IDEM-009)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER_HEADER,
            MARKER_VALUES,
            MARKER_POLICY,
            param("slow_headers", D::EmptyMap, "headers that keep the first attempt running (test hook)"),
            param("conflict_status", D::Statuses(d::CONFLICT), "answer to the retry while in flight"),
            param(
                "retry_after",
                D::Duration(d::IN_FLIGHT_RETRY_AFTER),
                "when the in-flight retry is sent",
            ),
            param(
                "retry_within",
                D::Duration(d::IN_FLIGHT_RETRY_WITHIN),
                "bound for the first attempt to finish",
            ),
        ],
    },
    Kind {
        properties: &[
            should(
                "answer",
                "draft-ietf-httpapi-idempotency-key §2.7 (SHOULD reply 400)",
                "`required`: a keyless request gets `reject_status`; `optional`: a success. Judged only when the same request with a key is served and counted",
            ),
            must(
                "effect",
                "catalogue IDEM-001 (FAIL if it executes)",
                "`required`: a keyless request is not executed; `optional`: executed once",
            ),
        ],
        name: "idempotency.missing_key",
        summary: "a mutating request without a key: rejected (required) or executed once (optional) (IDEM-001)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            SUCCESS,
            param("policy", D::Str(d::MISSING_KEY_POLICY), "`required` | `optional`"),
            param(
                "reject_status",
                D::Statuses(d::MISSING_KEY_REJECT),
                "statuses accepted as the rejection",
            ),
        ],
    },
    Kind {
        properties: &[
            must(
                "no_leak",
                "draft-ietf-httpapi-idempotency-key §5 (Security Considerations); catalogue IDEM-005",
                "API key B never receives A's stored answer (marker or identical body); not exercised when B is not served",
            ),
            must(
                "b_executes",
                "catalogue IDEM-005",
                "B's request executes independently (a success)",
            ),
            must(
                "distinct_resources",
                "catalogue IDEM-005",
                "A and B got different resources at `id_path` (skipped without it)",
            ),
            must(
                "two_executions",
                "catalogue IDEM-005",
                "one key under two API keys executes twice",
            ),
        ],
        name: "idempotency.key_scope",
        summary: "a key used by API key A, then by API key B: B executes independently, never gets A's stored answer (IDEM-005)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER_HEADER,
            MARKER_VALUES,
            MARKER_POLICY,
            param("id_path", D::Absent, "A's and B's resource ids at this JSON path must differ"),
        ],
    },
    Kind {
        properties: &[
            should(
                "malformed_rejected",
                "catalogue IDEM-006 (BOTIX: UUIDv4/ULID keys); draft-ietf-httpapi-idempotency-key §2.1 (an SF String); Stripe (≤ 255 characters)",
                "empty, 256-character and tab-carrying keys get `reject_status`; not exercised unless a well-formed key is then served and counted",
            ).botix_must(),
            should(
                "malformed_not_executed",
                "catalogue IDEM-006 (BOTIX: UUIDv4/ULID keys)",
                "no malformed key executes (side-effect counter +0)",
            ).botix_must(),
            must(
                "quoted_bare_one_key",
                "draft-ietf-httpapi-idempotency-key §2.1; catalogue IDEM-006 (FAIL if the two forms execute twice)",
                "the quoted SF string \"K\" and the bare K are one key, or one form is always rejected",
            ),
        ],
        name: "idempotency.key_syntax",
        summary: "malformed keys (empty, 256 characters, control characters) get 400 and do not execute; the quoted SF string \"K\" and bare K are one key, or one form is always rejected (IDEM-006)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            param(
                "reject_status",
                D::Statuses(d::KEY_SYNTAX_REJECT),
                "statuses accepted for a malformed key",
            ),
        ],
    },
    Kind {
        properties: &[
            must(
                "no_leak",
                "catalogue IDEM-010; Stripe (an endpoint mismatch is an idempotency error)",
                "endpoint B never receives endpoint A's stored answer (marker or identical body); a B that does not execute is compared with its answer to the same request under a fresh key",
            ),
            must(
                "b_answer",
                "catalogue IDEM-010",
                "B gets what `policy` says: a success or `reject_status`; under `reject`, not exercised when B answers a fresh key the same way",
            ),
            must(
                "single_effect",
                "draft-ietf-httpapi-idempotency-key §2",
                "A's side-effect counter +1",
            ),
            must(
                "b_effect",
                "catalogue IDEM-010",
                "B's own counter (`other_effects`) agrees with B's answer; skipped without it",
            ),
        ],
        name: "idempotency.endpoint_scope",
        summary: "a key used on endpoint A, then on endpoint B: B never gets A's stored answer (4xx or an independent execution) (IDEM-010)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER_HEADER,
            MARKER_VALUES,
            MARKER_POLICY,
            param(
                "other_request",
                D::Required,
                "endpoint B; without a body, A's body bytes are sent",
            ),
            param(
                "other_effects",
                D::Absent,
                "B's side-effect counter: +1 if B executed, +0 if rejected",
            ),
            param(
                "policy",
                D::Str(d::ENDPOINT_POLICY),
                "`either` | `reject` | `execute`: what B must get",
            ),
            param(
                "reject_status",
                D::Statuses(d::ENDPOINT_REJECT),
                "statuses accepted as B's rejection",
            ),
        ],
    },
    Kind {
        properties: &[
            must(
                "replays_before_ttl",
                "draft-ietf-httpapi-idempotency-key §2.3 (validity); catalogue IDEM-007",
                "a second request within the TTL is a replay (same status, one execution)",
            ),
            should(
                "first_not_marked",
                "BOTIX contract (catalogue IDEM-002)",
                "the first execution does not claim to be a replay",
            ).botix_must(),
            should(
                "fresh_after_ttl",
                "draft-ietf-httpapi-idempotency-key §2.3 (MAY expire keys); BOTIX 24 h (catalogue IDEM-007)",
                "after the TTL the key executes fresh, answered as a success without the marker",
            ).botix_must(),
        ],
        name: "idempotency.expiry",
        summary: "a key replays before its TTL and executes fresh after it (needs a short test TTL) (IDEM-007)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER_HEADER,
            MARKER_VALUES,
            MARKER_POLICY,
            param("ttl", D::Required, "the target's key lifetime (a short test TTL)"),
            param(
                "margin",
                D::Duration(d::EXPIRY_MARGIN),
                "waited beyond ttl before the fresh request",
            ),
            param(
                "max_wait",
                D::Duration(d::EXPIRY_MAX_WAIT),
                "upper bound of ttl + margin (a suite error above it, not a long wait)",
            ),
        ],
    },
];

family_kinds!(
    /// An `idempotency.*` check as written.
    IdempotencySpec {
        "idempotency.replay" => Replay(ReplaySpec),
        "idempotency.distinct_keys" => DistinctKeys(DistinctKeysSpec),
        "idempotency.mismatch" => Mismatch(MismatchSpec),
        "idempotency.concurrent" => Concurrent(ConcurrentSpec),
        "idempotency.lost_response" => LostResponse(LostResponseSpec),
        "idempotency.errors_not_cached" => ErrorsNotCached(ErrorsSpec),
        "idempotency.in_flight" => InFlight(InFlightSpec),
        "idempotency.missing_key" => MissingKey(MissingKeySpec),
        "idempotency.key_scope" => KeyScope(KeyScopeSpec),
        "idempotency.key_syntax" => KeySyntax(KeySyntaxSpec),
        "idempotency.endpoint_scope" => EndpointScope(Box<EndpointScopeSpec>),
        "idempotency.expiry" => Expiry(ExpirySpec),
    }
);

#[cfg(test)]
mod tests {
    use super::KINDS;
    use crate::families::idempotency::plan::{EndpointPolicy, IdemPlan, MarkerPolicy, Mode};
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;

    const REQUIRED: &str = "    request: { method: POST, path: /m }\n    effects: { request: { path: /c }, value: $.count }\n";

    /// Every kind with only its required fields, and what that adds.
    const MINIMAL: &[(&str, &str)] = &[
        ("idempotency.replay", ""),
        ("idempotency.distinct_keys", ""),
        ("idempotency.mismatch", ""),
        ("idempotency.concurrent", ""),
        ("idempotency.lost_response", ""),
        (
            "idempotency.errors_not_cached",
            "    invalid: { method: POST, path: /m }\n",
        ),
        ("idempotency.in_flight", ""),
        ("idempotency.missing_key", ""),
        ("idempotency.key_scope", ""),
        ("idempotency.key_syntax", ""),
        (
            "idempotency.endpoint_scope",
            "    other_request: { method: POST, path: /o }\n",
        ),
        ("idempotency.expiry", "    ttl: 1s\n"),
    ];

    fn plan(kind: &str, extra: &str) -> IdemPlan {
        match plan_check(kind, &format!("{REQUIRED}{extra}")) {
            CheckPlan::Idempotency(p) => *p,
            other => panic!("{other:?}"),
        }
    }

    fn marker_policy(p: MarkerPolicy) -> &'static str {
        match p {
            MarkerPolicy::Required => "required",
            MarkerPolicy::Optional => "optional",
            MarkerPolicy::Forbidden => "forbidden",
        }
    }

    #[test]
    fn table_defaults_are_the_planned_ones() {
        assert_covers(KINDS, &MINIMAL.iter().map(|(k, _)| *k).collect::<Vec<_>>());
        for (kind, extra) in MINIMAL {
            let p = plan(kind, extra);
            let key = unrender_uuid(&p.key.render(&Default::default()));
            let mut planned = vec![
                ("key_header", word(&p.key_header)),
                ("success", statuses(&p.success)),
            ];
            // missing_key sends no key; errors_not_cached and key_syntax judge no marker.
            if *kind != "idempotency.missing_key" {
                planned.push(("key", Some(key)));
            }
            if !matches!(
                *kind,
                "idempotency.missing_key"
                    | "idempotency.errors_not_cached"
                    | "idempotency.key_syntax"
            ) {
                planned.push(("marker.header", word(&p.marker.header)));
                planned.push(("marker.values", list(&p.marker.values)));
                planned.push(("marker.policy", word(marker_policy(p.marker.policy))));
            }
            match &p.mode {
                Mode::Replay { ignore, id_path } => {
                    planned.push(("ignore", list(ignore)));
                    planned.push(("id_path", opt(id_path)));
                }
                Mode::DistinctKeys { id_path } | Mode::KeyScope { id_path } => {
                    planned.push(("id_path", opt(id_path)));
                }
                Mode::Mismatch { changed, reject } => {
                    assert!(changed.is_none());
                    planned.push(("reject_status", statuses(reject)));
                }
                Mode::Concurrent {
                    n,
                    rounds,
                    conflict,
                    allow_replay,
                    slow,
                } => {
                    planned.push(("concurrency", int(*n as u64)));
                    planned.push(("rounds", int(*rounds as u64)));
                    planned.push(("conflict_status", statuses(conflict)));
                    planned.push(("allow_replay", word(allow_replay)));
                    planned.push(("slow_headers", map(slow)));
                }
                Mode::LostResponse {
                    slow,
                    in_progress,
                    retry_within,
                    settle,
                } => {
                    planned.push(("slow_headers", map(slow)));
                    planned.push(("in_progress_status", statuses(in_progress)));
                    planned.push(("retry_within", dur(*retry_within)));
                    planned.push(("settle", dur(*settle)));
                }
                Mode::Errors { cached, .. } => {
                    planned.push((
                        "policy",
                        word(if *cached { "cached" } else { "not_cached" }),
                    ));
                }
                Mode::InFlight {
                    slow,
                    conflict,
                    retry_after,
                    retry_within,
                } => {
                    planned.push(("slow_headers", map(slow)));
                    planned.push(("conflict_status", statuses(conflict)));
                    planned.push(("retry_after", dur(*retry_after)));
                    planned.push(("retry_within", dur(*retry_within)));
                }
                Mode::MissingKey { required, reject } => {
                    planned.push((
                        "policy",
                        word(if *required { "required" } else { "optional" }),
                    ));
                    planned.push(("reject_status", statuses(reject)));
                }
                Mode::KeySyntax { reject } => planned.push(("reject_status", statuses(reject))),
                Mode::EndpointScope {
                    other_effects,
                    policy,
                    reject,
                    ..
                } => {
                    planned.push((
                        "other_effects",
                        other_effects.as_ref().map(|_| "set".into()),
                    ));
                    let policy = match policy {
                        EndpointPolicy::Either => "either",
                        EndpointPolicy::Reject => "reject",
                        EndpointPolicy::Execute => "execute",
                    };
                    planned.push(("policy", word(policy)));
                    planned.push(("reject_status", statuses(reject)));
                }
                Mode::Expiry { margin, .. } => planned.push(("margin", dur(*margin))),
            }
            if *kind == "idempotency.expiry" {
                // Not kept in the plan: the largest ttl + margin that plans is max_wait.
                let max = super::defaults::EXPIRY_MAX_WAIT - super::defaults::EXPIRY_MARGIN;
                let ttl = crate::spec::kinds::show_duration(max);
                let _ = plan(kind, &format!("    ttl: {ttl}\n"));
                planned.push(("max_wait", dur(super::defaults::EXPIRY_MAX_WAIT)));
            }
            assert_planned(KINDS, kind, &planned);
        }
    }
}
