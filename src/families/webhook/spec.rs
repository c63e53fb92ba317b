//! YAML specs of the webhook family: sender checks (tminus signs deliveries
//! and sends them, valid and hostile, to the target's receiver) and sink
//! checks (tminus runs a receiver, makes the target deliver, judges what
//! arrives). One kind per hostile case, so each is its own JUnit testcase.
//!
//! The sender kinds share `WebhookSenderSpec` and the sink kinds
//! `WebhookSinkSpec`, but a kind reads only the parameters its `KINDS` row
//! lists: the planner rejects any other one written, at its position (so
//! `count:` on `webhook.accepts_valid` is an error, not silently ignored).

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
    /// Every sender-role kind (`webhook.accepts_*`, `webhook.rejects_*`,
    /// `webhook.dedupes_*`, `webhook.replay_new_id`, `webhook.key_rotation`,
    /// `webhook.burst`). The fields after `headers` only apply to some kinds.
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
        pub effects: Option<Spanned<CounterSpec>>,
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
        pub over: Option<Spanned<DurationValue>>,
    }
);

check_spec!(
    /// Every `webhook.sink_*` kind. The fields after `wait` only apply to some kinds.
    WebhookSinkSpec {
        #[serde(default)]
        pub scheme: Option<Spanned<String>>,
        #[serde(default)]
        pub custom: Option<CustomSchemeSpec>,
        pub secret: Spanned<String>,
        /// Requests that make the target deliver; `${var.sink_url}` is tminus's receiver.
        pub trigger: Vec<RequestSpec>,
        /// Statuses tminus answers, attempt by attempt (the last repeats).
        #[serde(default)]
        pub respond: Vec<u16>,
        /// How long to wait for the first delivery (default 10s).
        #[serde(default)]
        pub wait: Option<DurationValue>,
        /// Event header value expected (default: present, any value).
        #[serde(default)]
        pub event: Option<Spanned<String>>,
        /// Expected retry delays (default 30s, 5m, 30m, 2h, 6h).
        #[serde(default)]
        pub schedule: Option<Spanned<Vec<DurationValue>>>,
        /// `between` (each delay since the previous attempt) or `since_first`.
        #[serde(default)]
        pub schedule_mode: Option<Spanned<String>>,
        /// Total deliveries expected (default: schedule length + 1).
        #[serde(default)]
        pub max_attempts: Option<Spanned<u32>>,
        /// Allowed deviation per delay, in percent (default 10).
        #[serde(default)]
        pub tolerance_pct: Option<Spanned<f64>>,
        /// Absolute slack added to the tolerance (default 50ms).
        #[serde(default)]
        pub tolerance_floor: Option<Spanned<DurationValue>>,
        /// Silence required after the last expected attempt (default: the last delay, at most 10 s).
        #[serde(default)]
        pub quiet: Option<Spanned<DurationValue>>,
        /// `Retry-After` seconds tminus sends with its 429/503 answers (default 120).
        #[serde(default)]
        pub retry_after: Option<Spanned<u64>>,
        /// How long tminus holds the first attempt open (default 40s).
        #[serde(default)]
        pub hang: Option<Spanned<DurationValue>>,
        /// The sender must give up on a hanging attempt within this (default 30s).
        #[serde(default)]
        pub max_sender_timeout: Option<Spanned<DurationValue>>,
        /// Where the trace id sits in the delivery body, if not in `traceparent`.
        #[serde(default)]
        pub trace_json: Option<Spanned<String>>,
    }
);

/// One row of a kind's parameter list: `(name, default, doc)`.
type Param = (&'static str, &'static str, &'static str);

// Sender parameters.
const RECEIVER: Param = (
    "receiver",
    "required",
    "receiver path on the target, or absolute URL",
);
const SENDER_SCHEME: Param = (
    "scheme",
    "standard",
    "botix|timestamped|standard|stripe|github|slack|shopify|custom",
);
const CUSTOM: Param = (
    "custom",
    "none",
    "custom scheme: signature_header, signature_prefix, id/timestamp/event_header, secret_encoding, digest_encoding, content",
);
const SENDER_SECRET: Param = (
    "secret",
    "required",
    "signing secret, e.g. ${secret.WEBHOOK_SECRET}",
);
const BODY: Param = (
    "body",
    "a message.created event",
    "raw body template; ${var.webhook_id} is the delivery id",
);
const SENDER_EVENT: Param = ("event", "message.created", "event header value");
const HEADERS: Param = ("headers", "{}", "extra headers on every delivery");
const EFFECTS: Param = (
    "effects",
    "none",
    "side-effect counter {request, value} proving processed once / not at all",
);
const EFFECTS_REQUIRED: Param = (
    "effects",
    "required",
    "side-effect counter {request, value}: without it \"processed once\" cannot be judged",
);
const ACK_WITHIN: Param = (
    "ack_within",
    "2s",
    "time limit for the 2xx (webhook.burst: its p95)",
);
const TOLERANCE: Param = ("tolerance", "300s", "the receiver's timestamp tolerance");
const ACCEPT_STATUS: Param = ("accept_status", "2xx", "statuses that mean accepted");
const REJECT_STATUS: Param = ("reject_status", "4xx", "statuses that mean rejected");
const COUNT: Param = ("count", "200", "deliveries to send (1 to 10000)");
const OVER: Param = ("over", "10s", "window the deliveries are spread over");

// Sink parameters.
const SINK_SCHEME: Param = ("scheme", "botix", "how deliveries are signed");
const SINK_SECRET: Param = ("secret", "required", "the subscription's signing secret");
const TRIGGER: Param = (
    "trigger",
    "required",
    "requests that subscribe ${var.sink_url} and make the target emit",
);
const RESPOND: Param = (
    "respond",
    "per kind",
    "statuses tminus answers, attempt by attempt",
);
const WAIT: Param = ("wait", "10s", "how long to wait for the first delivery");
const SINK_EVENT: Param = ("event", "any", "expected event header value");
const SCHEDULE: Param = (
    "schedule",
    "[30s, 5m, 30m, 2h, 6h]",
    "expected retry delays",
);
const SCHEDULE_MODE: Param = (
    "schedule_mode",
    "between",
    "between: delay since the previous attempt; since_first: since attempt 1",
);
const MAX_ATTEMPTS: Param = (
    "max_attempts",
    "len(schedule)+1",
    "total deliveries expected when every attempt fails",
);
const TOLERANCE_PCT: Param = (
    "tolerance_pct",
    "10",
    "allowed deviation of each delay, percent",
);
const TOLERANCE_FLOOR: Param = (
    "tolerance_floor",
    "50ms",
    "absolute slack added to the tolerance",
);
const QUIET: Param = (
    "quiet",
    "last delay (max 10s)",
    "silence required after the last expected attempt",
);
const RETRY_AFTER: Param = (
    "retry_after",
    "120",
    "Retry-After seconds sent with tminus's 429/503 answers (only with a 429/503 in respond)",
);
const HANG: Param = (
    "hang",
    "40s",
    "how long tminus holds the first attempt open",
);
const MAX_SENDER_TIMEOUT: Param = (
    "max_sender_timeout",
    "30s",
    "the sender must abandon a hanging attempt within this",
);
const TRACE_JSON: Param = (
    "trace_json",
    "none",
    "JSON path of the trace id in the body (else the traceparent header)",
);

/// Every webhook kind, in `WebhookSpec::NAMES` order: sender kinds (catalogue
/// WH-000..WH-015), then sink kinds (WHS-001..WHS-006, TRC-005). `params` is
/// exactly what the kind reads; the planner rejects any other parameter.
pub const KINDS: &[KindInfo] = &[
    KindInfo {
        name: "webhook.accepts_valid",
        summary: "WH-000: a correctly signed delivery gets 2xx within ack_within and is processed once",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, ACCEPT_STATUS, ACK_WITHIN],
    },
    KindInfo {
        name: "webhook.rejects_missing_headers",
        summary: "WH-001: signature, id or timestamp header missing -> 4xx, no effect",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    KindInfo {
        name: "webhook.rejects_forged",
        summary: "WH-002: a random digest of the right length -> 4xx, no effect",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    KindInfo {
        name: "webhook.accepts_raw_bytes",
        summary: "WH-003a: a non-canonical JSON body signed over its raw bytes is accepted",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, ACCEPT_STATUS],
    },
    KindInfo {
        name: "webhook.rejects_reserialized",
        summary: "WH-003b: a re-serialized body sent with the original signature -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    KindInfo {
        name: "webhook.rejects_truncated",
        summary: "WH-004: half, empty and prefix-only signatures -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    KindInfo {
        name: "webhook.rejects_wrong_scheme",
        summary: "WH-005: the right digest under another scheme prefix -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    KindInfo {
        name: "webhook.rejects_stale",
        summary: "WH-006: timestamp older than tolerance + 60 s -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS, TOLERANCE],
    },
    KindInfo {
        name: "webhook.rejects_future",
        summary: "WH-007: timestamp newer than now + tolerance + 60 s -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS, TOLERANCE],
    },
    KindInfo {
        name: "webhook.dedupes_replay",
        summary: "WH-008: the same delivery twice: both 2xx, processed once",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS_REQUIRED, ACCEPT_STATUS],
    },
    KindInfo {
        name: "webhook.replay_new_id",
        summary: "WH-008 (new id): the same body and signature re-sent under a new delivery id -> 4xx, or 2xx and processed once (schemes with an id header; it matters where the id is unsigned: github, botix, shopify, timestamped)",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS_REQUIRED, ACCEPT_STATUS, REJECT_STATUS],
    },
    KindInfo {
        name: "webhook.dedupes_retry",
        summary: "WH-009: same id, new timestamp and signature: 2xx, processed once",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS_REQUIRED, ACCEPT_STATUS],
    },
    KindInfo {
        name: "webhook.rejects_tampered",
        summary: "WH-010: one body byte changed after signing -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    KindInfo {
        name: "webhook.key_rotation",
        summary: "WH-012: two signatures, one valid, either order -> accepted",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, ACCEPT_STATUS],
    },
    KindInfo {
        name: "webhook.rejects_dotted_id",
        summary: "WH-015: a validly signed delivery whose id contains `.` (ambiguous in `id.ts.body`) -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    KindInfo {
        name: "webhook.burst",
        summary: "WH-014: `count` valid deliveries spread over `over`: all 2xx, p95 ack within ack_within, each processed once",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, ACCEPT_STATUS, ACK_WITHIN, COUNT, OVER],
    },
    KindInfo {
        name: "webhook.sink_delivery",
        summary: "WHS-001: the target's delivery is signed over the raw bytes, with event header and UUID request id",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, RESPOND, WAIT, RETRY_AFTER, SINK_EVENT],
    },
    KindInfo {
        name: "webhook.sink_retries",
        summary: "WHS-002: answered 500, the target retries on schedule with the same request id, then stops",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, RESPOND, WAIT, RETRY_AFTER, SCHEDULE, SCHEDULE_MODE, MAX_ATTEMPTS, TOLERANCE_PCT, TOLERANCE_FLOOR, QUIET],
    },
    KindInfo {
        name: "webhook.sink_stops_on_success",
        summary: "WHS-003: answered 500 then 200, no attempt after the 2xx",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, RESPOND, WAIT, RETRY_AFTER, SCHEDULE, SCHEDULE_MODE, TOLERANCE_PCT, TOLERANCE_FLOOR, QUIET],
    },
    KindInfo {
        name: "webhook.sink_stops_on_gone",
        summary: "WHS-005: answered 410, never retried",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, RESPOND, WAIT, RETRY_AFTER, SCHEDULE, SCHEDULE_MODE, TOLERANCE_PCT, TOLERANCE_FLOOR, QUIET],
    },
    KindInfo {
        name: "webhook.sink_trace",
        summary: "TRC-005: a trigger carrying traceparent T yields a delivery carrying trace-id T",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, RESPOND, WAIT, RETRY_AFTER, TRACE_JSON],
    },
    KindInfo {
        name: "webhook.sink_respects_retry_after",
        summary: "WHS-006: answered 429 + Retry-After, the next attempt comes no earlier",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, RESPOND, WAIT, RETRY_AFTER, SCHEDULE, SCHEDULE_MODE],
    },
    KindInfo {
        name: "webhook.sink_timeout",
        summary: "WHS-004: tminus holds attempt 1 open; the sender gives up within max_sender_timeout and never retries in parallel",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, RESPOND, WAIT, RETRY_AFTER, TOLERANCE_FLOOR, HANG, MAX_SENDER_TIMEOUT],
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
        "webhook.replay_new_id" => ReplayNewId(Box<WebhookSenderSpec>),
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
