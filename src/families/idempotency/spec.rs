//! YAML specs of the idempotency family (catalogue §1, IDEM-001..010): one
//! struct per kind, all sharing the `request:` grammar, an `effects:` counter,
//! the key header/value and (where a replay is judged) a `marker:` dialect.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::keyword::Keyword;
use crate::model::scalar::{DurationValue, Scalar, StatusSet};
use crate::suite::kinds::{check_spec, family_kinds, KindInfo};
use crate::suite::request::{CounterSpec, RequestSpec};

/// What the replay marker must look like (`marker.policy`).
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MarkerPolicy {
    Required,
    Optional,
    Forbidden,
}

/// Whether a rejected request's answer is stored under its key
/// (`idempotency.errors_not_cached` `policy`).
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorsPolicy {
    NotCached,
    Cached,
}

/// Whether the target requires a key (`idempotency.missing_key` `policy`).
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum KeyPolicy {
    Required,
    Optional,
}

/// What endpoint B must answer to a key first used on endpoint A (IDEM-010).
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Deserialize, Clone, Default)]
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
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        pub ignore: Vec<Spanned<String>>,
        #[serde(default)]
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
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
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
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        pub concurrency: Option<Spanned<u32>>,
        #[serde(default)]
        pub conflict_status: Option<StatusSet>,
        #[serde(default)]
        pub allow_replay: Option<bool>,
        #[serde(default)]
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
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        pub slow_headers: BTreeMap<String, Spanned<Scalar>>,
        #[serde(default)]
        pub in_progress_status: Option<StatusSet>,
        #[serde(default)]
        pub retry_within: Option<Spanned<DurationValue>>,
        #[serde(default)]
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
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        /// The first, invalid request (same key).
        pub invalid: RequestSpec,
        /// `not_cached` (default) or `cached`.
        #[serde(default)]
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
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
        pub slow_headers: BTreeMap<String, Spanned<Scalar>>,
        #[serde(default)]
        pub conflict_status: Option<StatusSet>,
        #[serde(default)]
        pub retry_after: Option<Spanned<DurationValue>>,
        #[serde(default)]
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
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        #[serde(default)]
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
        pub key: Option<Spanned<String>>,
        #[serde(default)]
        pub success: Option<StatusSet>,
        #[serde(default)]
        pub marker: Option<MarkerSpec>,
        /// The target's key lifetime (a short test TTL).
        pub ttl: Spanned<DurationValue>,
        #[serde(default)]
        pub margin: Option<Spanned<DurationValue>>,
        #[serde(default)]
        pub max_wait: Option<Spanned<DurationValue>>,
    }
);

const REQ: (&str, &str, &str) = (
    "request",
    "required",
    "the mutating request (shared request grammar)",
);
const EFFECTS: (&str, &str, &str) = (
    "effects",
    "required",
    "{request, value}: side-effect counter read before and after",
);
const KEY_HEADER: (&str, &str, &str) = ("key_header", "Idempotency-Key", "header carrying the key");
const KEY: (&str, &str, &str) = (
    "key",
    "${uuid}",
    "template of the key value (rendered fresh per check)",
);
const SUCCESS: (&str, &str, &str) = ("success", "2xx", "statuses of a successful execution");
const MARKER: (&str, &str, &str) = (
    "marker",
    "{header: Idempotent-Replayed, values: [\"1\"], policy: required}",
    "replay marker dialect; policy required|optional|forbidden",
);

/// Kinds of the idempotency family.
pub const KINDS: &[KindInfo] = &[
    KindInfo {
        name: "idempotency.replay",
        summary: "same request twice with one key: one execution, identical answer, replay marker (IDEM-002)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER,
            ("ignore", "[]", "JSON paths left out of the body comparison"),
            (
                "id_path",
                "none",
                "compare only the resource id at this JSON path",
            ),
        ],
    },
    KindInfo {
        name: "idempotency.distinct_keys",
        summary: "same body under two keys: two executions (no dedupe by body)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER,
            ("id_path", "none", "the two resource ids must differ"),
        ],
    },
    KindInfo {
        name: "idempotency.mismatch",
        summary: "same key, different body: rejected, not executed, not replayed (IDEM-003)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER,
            (
                "changed",
                "first string field altered",
                "the second request (same key)",
            ),
            ("reject_status", "422", "accepted rejection statuses"),
        ],
    },
    KindInfo {
        name: "idempotency.concurrent",
        summary: "N parallel requests with one new key: exactly one execution, others 409 or replay, no 5xx (IDEM-004)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER,
            ("concurrency", "10", "parallel requests (2 to 100)"),
            ("conflict_status", "409", "answer to a request whose key is in use"),
            ("allow_replay", "true", "a replayed success also counts as correct"),
            (
                "slow_headers",
                "{}",
                "headers that make the target slow (test hook), sent on every request",
            ),
        ],
    },
    KindInfo {
        name: "idempotency.lost_response",
        summary: "request sent, connection dropped before the answer, retried with the key: one execution, result returned (http:// only)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER,
            ("slow_headers", "{}", "headers sent on the dropped request"),
            ("in_progress_status", "409", "retry answers accepted while the first still runs"),
            ("retry_within", "5s", "how long the retry may keep getting in-progress"),
            (
                "settle",
                "1s",
                "wait after the retry before reading the counter, so a slow first execution is counted",
            ),
        ],
    },
    KindInfo {
        name: "idempotency.errors_not_cached",
        summary: "invalid body with K (4xx), then a valid body with K: executes (not_cached) or replays the error (cached) (IDEM-008)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            ("invalid", "required", "the first request, rejected by validation"),
            ("policy", "not_cached", "not_cached | cached"),
        ],
    },
    KindInfo {
        name: "idempotency.in_flight",
        summary: "a retry while the first attempt still runs gets 409, never a second execution; after completion, a replay (IDEM-009)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER,
            ("slow_headers", "{}", "headers that keep the first attempt running (test hook)"),
            ("conflict_status", "409", "answer to the retry while in flight"),
            ("retry_after", "150ms", "when the in-flight retry is sent"),
            ("retry_within", "10s", "bound for the first attempt to finish"),
        ],
    },
    KindInfo {
        name: "idempotency.missing_key",
        summary: "a mutating request without a key: rejected (required) or executed once (optional) (IDEM-001)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            SUCCESS,
            ("policy", "required", "required | optional"),
            ("reject_status", "400", "statuses accepted as the rejection"),
        ],
    },
    KindInfo {
        name: "idempotency.key_scope",
        summary: "a key used by API key A, then by API key B: B executes independently, never gets A's stored answer (IDEM-005)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER,
            ("id_path", "none", "A's and B's resource ids must differ"),
        ],
    },
    KindInfo {
        name: "idempotency.key_syntax",
        summary: "malformed keys (empty, 256 characters, control characters) get 400 and do not execute; the quoted SF string \"K\" and bare K are one key, or one form is always rejected (IDEM-006)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            ("reject_status", "400", "statuses accepted for a malformed key"),
        ],
    },
    KindInfo {
        name: "idempotency.endpoint_scope",
        summary: "a key used on endpoint A, then on endpoint B: B never gets A's stored answer (4xx or an independent execution) (IDEM-010)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER,
            (
                "other_request",
                "required",
                "endpoint B; without a body, A's body bytes are sent",
            ),
            ("other_effects", "none", "B's side-effect counter: +1 if B executed, +0 if rejected"),
            ("policy", "either", "either | reject | execute: what B must get"),
            ("reject_status", "4xx", "statuses accepted as B's rejection"),
        ],
    },
    KindInfo {
        name: "idempotency.expiry",
        summary: "a key replays before its TTL and executes fresh after it (needs a short test TTL) (IDEM-007)",
        params: &[
            REQ,
            EFFECTS,
            KEY_HEADER,
            KEY,
            SUCCESS,
            MARKER,
            ("ttl", "required", "the target's key lifetime (a test TTL)"),
            ("margin", "500ms", "waited beyond ttl before the fresh request"),
            ("max_wait", "10s", "upper bound of ttl + margin"),
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
