//! YAML specs of the webhook family: sender checks (tminus signs deliveries
//! and sends them, valid and hostile, to the target's receiver) and sink
//! checks (tminus runs a receiver, makes the target deliver, judges what
//! arrives). One kind per hostile case, so each is its own JUnit testcase.

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::scalar::{DurationValue, Scalar, StatusSet};
use crate::suite::kinds::{check_spec, family_kinds, KindInfo};
use crate::suite::request::{CounterSpec, RequestSpec};

/// A custom signing scheme (`scheme: custom`).
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct CustomSchemeSpec {
    pub signature_header: String,
    #[serde(default)]
    pub signature_prefix: String,
    #[serde(default)]
    pub id_header: Option<String>,
    #[serde(default)]
    pub timestamp_header: Option<String>,
    #[serde(default)]
    pub event_header: Option<String>,
    /// raw | base64 | hex | whsec
    #[serde(default)]
    pub secret_encoding: Option<Spanned<String>>,
    /// hex | base64
    #[serde(default)]
    pub digest_encoding: Option<Spanned<String>>,
    /// e.g. `{timestamp}.{body}`
    pub content: Spanned<String>,
}

check_spec!(
    /// Every `webhook.accepts_*` / `webhook.rejects_*` / `webhook.dedupes_*` kind.
    WebhookSenderSpec {
        /// Path on the target (or absolute URL) of the receiver.
        pub receiver: Spanned<String>,
        #[serde(default)]
        pub scheme: Option<Spanned<String>>,
        #[serde(default)]
        pub custom: Option<CustomSchemeSpec>,
        pub secret: Spanned<String>,
        /// Raw body template; `${var.webhook_id}` is the delivery id.
        #[serde(default)]
        pub body: Option<Spanned<String>>,
        #[serde(default)]
        pub event: Option<String>,
        #[serde(default)]
        pub headers: std::collections::BTreeMap<String, Spanned<Scalar>>,
        /// Counts processed events (to prove "once" / "no side effect").
        #[serde(default)]
        pub effects: Option<CounterSpec>,
        #[serde(default)]
        pub ack_within: Option<Spanned<DurationValue>>,
        #[serde(default)]
        pub tolerance: Option<Spanned<DurationValue>>,
        /// What counts as "accepted" (default 2xx) and "rejected" (default 4xx).
        #[serde(default)]
        pub accept_status: Option<Spanned<StatusSet>>,
        #[serde(default)]
        pub reject_status: Option<Spanned<StatusSet>>,
        /// `webhook.burst`: how many deliveries (default 200) ...
        #[serde(default)]
        pub count: Option<Spanned<u32>>,
        /// ... spread evenly over this window (default 10s).
        #[serde(default)]
        pub over: Option<DurationValue>,
    }
);

check_spec!(
    /// Every `webhook.sink_*` kind.
    WebhookSinkSpec {
        #[serde(default)]
        pub scheme: Option<Spanned<String>>,
        #[serde(default)]
        pub custom: Option<CustomSchemeSpec>,
        pub secret: Spanned<String>,
        /// Requests that make the target deliver; `${var.sink_url}` is tminus's receiver.
        pub trigger: Vec<RequestSpec>,
        /// Event header value expected (default: present, any value).
        #[serde(default)]
        pub event: Option<String>,
        /// Statuses tminus answers, attempt by attempt (the last repeats).
        #[serde(default)]
        pub respond: Vec<u16>,
        /// Expected retry delays (default 30s, 5m, 30m, 2h, 6h).
        #[serde(default)]
        pub schedule: Option<Vec<DurationValue>>,
        /// `between` (each delay since the previous attempt) or `since_first`.
        #[serde(default)]
        pub schedule_mode: Option<Spanned<String>>,
        /// Total deliveries expected (default: schedule length + 1).
        #[serde(default)]
        pub max_attempts: Option<u32>,
        /// Allowed deviation per delay, in percent (default 10).
        #[serde(default)]
        pub tolerance_pct: Option<f64>,
        /// Absolute slack added to the tolerance (default 50ms).
        #[serde(default)]
        pub tolerance_floor: Option<DurationValue>,
        /// How long to wait for the first delivery (default 10s).
        #[serde(default)]
        pub wait: Option<DurationValue>,
        /// Silence required after the last expected attempt (default: the last delay, at most 10 s).
        #[serde(default)]
        pub quiet: Option<DurationValue>,
        /// `Retry-After` seconds tminus sends with its 429/503 answers (default 120).
        #[serde(default)]
        pub retry_after: Option<u64>,
        /// How long tminus holds the first attempt open (default 40s).
        #[serde(default)]
        pub hang: Option<DurationValue>,
        /// The sender must give up on a hanging attempt within this (default 30s).
        #[serde(default)]
        pub max_sender_timeout: Option<DurationValue>,
        /// Where the trace id sits in the delivery body, if not in `traceparent`.
        #[serde(default)]
        pub trace_json: Option<Spanned<String>>,
    }
);

const SENDER_PARAMS: &[(&str, &str, &str)] = &[
    ("receiver", "required", "receiver path on the target, or absolute URL"),
    ("scheme", "standard", "botix|timestamped|standard|stripe|github|slack|shopify|custom"),
    ("custom", "none", "custom scheme: signature_header, signature_prefix, id/timestamp/event_header, secret_encoding, digest_encoding, content"),
    ("secret", "required", "signing secret, e.g. ${secret.WEBHOOK_SECRET}"),
    ("body", "a message.created event", "raw body template; ${var.webhook_id} is the delivery id"),
    ("event", "message.created", "event header value"),
    ("headers", "{}", "extra headers on every delivery"),
    ("effects", "none", "side-effect counter {request, value} proving processed once / not at all"),
    ("ack_within", "2s", "time limit for a 2xx on a valid delivery"),
    ("tolerance", "300s", "the receiver's timestamp tolerance"),
    ("accept_status", "2xx", "statuses that mean accepted"),
    ("reject_status", "4xx", "statuses that mean rejected"),
    ("count", "200", "webhook.burst: deliveries to send"),
    ("over", "10s", "webhook.burst: window they are spread over"),
];

const SINK_PARAMS: &[(&str, &str, &str)] = &[
    ("scheme", "botix", "how deliveries are signed"),
    ("secret", "required", "the subscription's signing secret"),
    (
        "trigger",
        "required",
        "requests that subscribe ${var.sink_url} and make the target emit",
    ),
    ("event", "any", "expected event header value"),
    (
        "respond",
        "per kind",
        "statuses tminus answers, attempt by attempt",
    ),
    (
        "schedule",
        "[30s, 5m, 30m, 2h, 6h]",
        "expected retry delays",
    ),
    (
        "schedule_mode",
        "between",
        "between: delay since the previous attempt; since_first: since attempt 1",
    ),
    (
        "max_attempts",
        "len(schedule)+1",
        "total deliveries expected when every attempt fails",
    ),
    (
        "tolerance_pct",
        "10",
        "allowed deviation of each delay, percent",
    ),
    (
        "tolerance_floor",
        "50ms",
        "absolute slack added to the tolerance",
    ),
    ("wait", "10s", "how long to wait for the first delivery"),
    (
        "quiet",
        "last delay (max 10s)",
        "silence required after the last expected attempt",
    ),
    (
        "retry_after",
        "120",
        "Retry-After seconds sent with tminus's 429/503 answers",
    ),
    (
        "hang",
        "40s",
        "how long tminus holds the first attempt open",
    ),
    (
        "max_sender_timeout",
        "30s",
        "the sender must abandon a hanging attempt within this",
    ),
    (
        "trace_json",
        "none",
        "JSON path of the trace id in the body (else the traceparent header)",
    ),
];

/// The sender-role kinds (catalogue WH-000..WH-012).
pub const SENDER_KINDS: &[(&str, &str)] = &[
    (
        "webhook.accepts_valid",
        "WH-000: a correctly signed delivery gets 2xx within ack_within and is processed once",
    ),
    (
        "webhook.rejects_missing_headers",
        "WH-001: signature, id or timestamp header missing -> 4xx, no effect",
    ),
    (
        "webhook.rejects_forged",
        "WH-002: a random digest of the right length -> 4xx, no effect",
    ),
    (
        "webhook.accepts_raw_bytes",
        "WH-003a: a non-canonical JSON body signed over its raw bytes is accepted",
    ),
    (
        "webhook.rejects_reserialized",
        "WH-003b: a re-serialized body sent with the original signature -> 4xx",
    ),
    (
        "webhook.rejects_truncated",
        "WH-004: half, empty and prefix-only signatures -> 4xx",
    ),
    (
        "webhook.rejects_wrong_scheme",
        "WH-005: the right digest under another scheme prefix -> 4xx",
    ),
    (
        "webhook.rejects_stale",
        "WH-006: timestamp older than tolerance + 60 s -> 4xx",
    ),
    (
        "webhook.rejects_future",
        "WH-007: timestamp newer than now + tolerance + 60 s -> 4xx",
    ),
    (
        "webhook.dedupes_replay",
        "WH-008: the same delivery twice: both 2xx, processed once",
    ),
    (
        "webhook.dedupes_retry",
        "WH-009: same id, new timestamp and signature: 2xx, processed once",
    ),
    (
        "webhook.rejects_tampered",
        "WH-010: one body byte changed after signing -> 4xx",
    ),
    (
        "webhook.key_rotation",
        "WH-012: two signatures, one valid, either order -> accepted",
    ),
    (
        "webhook.rejects_dotted_id",
        "WH-015: a validly signed delivery whose id contains `.` (ambiguous in `id.ts.body`) -> 4xx",
    ),
    (
        "webhook.burst",
        "WH-014: `count` valid deliveries spread over `over`: all 2xx, p95 ack within ack_within, each processed once",
    ),
];

/// The sink-role kinds (catalogue WHS-001..WHS-005, TRC-005).
pub const SINK_KINDS: &[(&str, &str)] = &[
    ("webhook.sink_delivery", "WHS-001: the target's delivery is signed over the raw bytes, with event header and UUID request id"),
    ("webhook.sink_retries", "WHS-002: answered 500, the target retries on schedule with the same request id, then stops"),
    ("webhook.sink_stops_on_success", "WHS-003: answered 500 then 200, no attempt after the 2xx"),
    ("webhook.sink_stops_on_gone", "WHS-005: answered 410, never retried"),
    ("webhook.sink_trace", "TRC-005: a trigger carrying traceparent T yields a delivery carrying trace-id T"),
    (
        "webhook.sink_respects_retry_after",
        "WHS-006: answered 429 + Retry-After, the next attempt comes no earlier",
    ),
    (
        "webhook.sink_timeout",
        "WHS-004: tminus holds attempt 1 open; the sender gives up within max_sender_timeout and never retries in parallel",
    ),
];

macro_rules! kind_table {
    ($name:ident, $src:ident, $params:ident) => {
        pub const $name: &[KindInfo] = &[
    kind_table!(@row $src, $params, 0),
    kind_table!(@row $src, $params, 1),
    kind_table!(@row $src, $params, 2),
    kind_table!(@row $src, $params, 3),
    kind_table!(@row $src, $params, 4),
    kind_table!(@row $src, $params, 5),
    kind_table!(@row $src, $params, 6),
        ];
    };
    (@row $src:ident, $params:ident, $i:expr) => {
        KindInfo {
            name: $src[$i].0,
            summary: $src[$i].1,
            params: $params,
        }
    };
}
kind_table!(SINK_INFO, SINK_KINDS, SINK_PARAMS);

pub const SENDER_INFO: &[KindInfo] = &[
    KindInfo {
        name: SENDER_KINDS[0].0,
        summary: SENDER_KINDS[0].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[1].0,
        summary: SENDER_KINDS[1].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[2].0,
        summary: SENDER_KINDS[2].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[3].0,
        summary: SENDER_KINDS[3].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[4].0,
        summary: SENDER_KINDS[4].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[5].0,
        summary: SENDER_KINDS[5].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[6].0,
        summary: SENDER_KINDS[6].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[7].0,
        summary: SENDER_KINDS[7].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[8].0,
        summary: SENDER_KINDS[8].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[9].0,
        summary: SENDER_KINDS[9].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[10].0,
        summary: SENDER_KINDS[10].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[11].0,
        summary: SENDER_KINDS[11].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[12].0,
        summary: SENDER_KINDS[12].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[13].0,
        summary: SENDER_KINDS[13].1,
        params: SENDER_PARAMS,
    },
    KindInfo {
        name: SENDER_KINDS[14].0,
        summary: SENDER_KINDS[14].1,
        params: SENDER_PARAMS,
    },
];

family_kinds!(
    /// A `webhook.*` check as written: sender-role kinds share
    /// `WebhookSenderSpec`, sink-role kinds `WebhookSinkSpec`.
    WebhookSpec {
        "webhook.accepts_valid" => AcceptsValid(Box<WebhookSenderSpec>),
        "webhook.rejects_missing_headers" => RejectsMissingHeaders(Box<WebhookSenderSpec>),
        "webhook.rejects_forged" => RejectsForged(Box<WebhookSenderSpec>),
        "webhook.accepts_raw_bytes" => AcceptsRawBytes(Box<WebhookSenderSpec>),
        "webhook.rejects_reserialized" => RejectsReserialized(Box<WebhookSenderSpec>),
        "webhook.rejects_truncated" => RejectsTruncated(Box<WebhookSenderSpec>),
        "webhook.rejects_wrong_scheme" => RejectsWrongScheme(Box<WebhookSenderSpec>),
        "webhook.rejects_stale" => RejectsStale(Box<WebhookSenderSpec>),
        "webhook.rejects_future" => RejectsFuture(Box<WebhookSenderSpec>),
        "webhook.dedupes_replay" => DedupesReplay(Box<WebhookSenderSpec>),
        "webhook.dedupes_retry" => DedupesRetry(Box<WebhookSenderSpec>),
        "webhook.rejects_tampered" => RejectsTampered(Box<WebhookSenderSpec>),
        "webhook.key_rotation" => KeyRotation(Box<WebhookSenderSpec>),
        "webhook.rejects_dotted_id" => RejectsDottedId(Box<WebhookSenderSpec>),
        "webhook.burst" => Burst(Box<WebhookSenderSpec>),
        "webhook.sink_delivery" => SinkDelivery(Box<WebhookSinkSpec>),
        "webhook.sink_retries" => SinkRetries(Box<WebhookSinkSpec>),
        "webhook.sink_stops_on_success" => SinkStopsOnSuccess(Box<WebhookSinkSpec>),
        "webhook.sink_stops_on_gone" => SinkStopsOnGone(Box<WebhookSinkSpec>),
        "webhook.sink_trace" => SinkTrace(Box<WebhookSinkSpec>),
        "webhook.sink_respects_retry_after" => SinkRespectsRetryAfter(Box<WebhookSinkSpec>),
        "webhook.sink_timeout" => SinkTimeout(Box<WebhookSinkSpec>),
    }
);
