//! YAML specs of the webhook family: sender checks (tminus signs deliveries
//! and sends them, valid and hostile, to the target's receiver) and sink
//! checks (tminus runs a receiver, makes the target deliver, judges what
//! arrives). One kind per hostile case, so each is its own JUnit testcase.
//!
//! The sender kinds share `WebhookSenderSpec` and the sink kinds
//! `WebhookSinkSpec`, but a kind reads only the parameters its `KINDS` row
//! lists: the planner rejects any other one written, at its position (so
//! `count:` on `webhook.accepts_valid` is an error, not silently ignored).
//! Every default is a constant of `defaults`, which both the planner and the
//! `KINDS` table read.

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::scalar::{DurationValue, Scalar, StatusSet};
use crate::spec::kinds::{
    check_spec, family_kinds, must, param, should, DefaultValue as D, Kind, Param, Property,
};
use crate::spec::request::{CounterSpec, RequestSpec};

/// A custom signing scheme (`scheme: custom`).
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
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
    #[schemars(with = "Option<String>")]
    pub secret_encoding: Option<Spanned<String>>,
    /// hex | base64
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub digest_encoding: Option<Spanned<String>>,
    /// e.g. `{timestamp}.{body}`
    #[schemars(with = "String")]
    pub content: Spanned<String>,
}

check_spec!(
    /// Every sender-role kind (`webhook.accepts_*`, `webhook.rejects_*`,
    /// `webhook.dedupes_*`, `webhook.replay_new_id`, `webhook.key_rotation`,
    /// `webhook.burst`). The fields after `headers` only apply to some kinds.
    WebhookSenderSpec {
        /// Path on the target (or absolute URL) of the receiver.
        #[schemars(with = "String")]
        pub receiver: Spanned<String>,
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub scheme: Option<Spanned<String>>,
        #[serde(default)]
        pub custom: Option<CustomSchemeSpec>,
        #[schemars(with = "String")]
        pub secret: Spanned<String>,
        /// Raw body template; `${var.webhook_id}` is the delivery id.
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub body: Option<Spanned<String>>,
        #[serde(default)]
        pub event: Option<String>,
        #[serde(default)]
        #[schemars(with = "std::collections::BTreeMap<String, Scalar>")]
        pub headers: std::collections::BTreeMap<String, Spanned<Scalar>>,
        /// Counts processed events (to prove "once" / "no side effect").
        #[serde(default)]
        #[schemars(with = "Option<CounterSpec>")]
        pub effects: Option<Spanned<CounterSpec>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub ack_within: Option<Spanned<DurationValue>>,
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub tolerance: Option<Spanned<DurationValue>>,
        /// What counts as "accepted" and "rejected" (defaults: `defaults`).
        #[serde(default)]
        #[schemars(with = "Option<StatusSet>")]
        pub accept_status: Option<Spanned<StatusSet>>,
        #[serde(default)]
        #[schemars(with = "Option<StatusSet>")]
        pub reject_status: Option<Spanned<StatusSet>>,
        /// `webhook.burst`: how many deliveries ...
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub count: Option<Spanned<u32>>,
        /// ... spread evenly over this window.
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub over: Option<Spanned<DurationValue>>,
        /// `webhook.constant_time_compare`: forged deliveries to time, both groups together ...
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub samples: Option<Spanned<u32>>,
        /// ... and the smallest latency difference it claims to resolve.
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub floor: Option<Spanned<DurationValue>>,
    }
);

check_spec!(
    /// Every `webhook.sink_*` kind. The fields after `wait` only apply to some kinds.
    WebhookSinkSpec {
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub scheme: Option<Spanned<String>>,
        #[serde(default)]
        pub custom: Option<CustomSchemeSpec>,
        #[schemars(with = "String")]
        pub secret: Spanned<String>,
        /// Requests that make the target deliver; `${var.sink_url}` is tminus's receiver.
        pub trigger: Vec<RequestSpec>,
        /// Statuses tminus answers, attempt by attempt (the last repeats).
        #[serde(default)]
        pub respond: Vec<u16>,
        /// How long to wait for the first delivery.
        #[serde(default)]
        pub wait: Option<DurationValue>,
        /// Event header value expected (absent: present, any value).
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub event: Option<Spanned<String>>,
        /// Expected retry delays.
        #[serde(default)]
        #[schemars(with = "Option<Vec<DurationValue>>")]
        pub schedule: Option<Spanned<Vec<DurationValue>>>,
        /// `between` (each delay since the previous attempt) or `since_first`.
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub schedule_mode: Option<Spanned<String>>,
        /// Total deliveries expected (absent: schedule length + 1).
        #[serde(default)]
        #[schemars(with = "Option<u32>")]
        pub max_attempts: Option<Spanned<u32>>,
        /// Allowed deviation per delay, in percent.
        #[serde(default)]
        #[schemars(with = "Option<f64>")]
        pub tolerance_pct: Option<Spanned<f64>>,
        /// Absolute slack added to the tolerance.
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub tolerance_floor: Option<Spanned<DurationValue>>,
        /// Silence required after the last expected attempt (absent: the last
        /// delay, at most `defaults::QUIET_MAX`).
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub quiet: Option<Spanned<DurationValue>>,
        /// `Retry-After` seconds tminus sends with its 429/503 answers.
        #[serde(default)]
        #[schemars(with = "Option<u64>")]
        pub retry_after: Option<Spanned<u64>>,
        /// How long tminus holds the first attempt open.
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub hang: Option<Spanned<DurationValue>>,
        /// The sender must give up on a hanging attempt within this.
        #[serde(default)]
        #[schemars(with = "Option<DurationValue>")]
        pub max_sender_timeout: Option<Spanned<DurationValue>>,
        /// Where the trace id sits in the delivery body, if not in `traceparent`.
        #[serde(default)]
        #[schemars(with = "Option<String>")]
        pub trace_json: Option<Spanned<String>>,
    }
);

/// Every default of the family: the plan applies these, `KINDS` prints them.
pub mod defaults {
    use std::time::Duration;

    use crate::model::scalar::StatusPattern::{self, Class};

    // Sender role.
    pub const SENDER_SCHEME: &str = "standard";
    /// The default event body: a `message.created` event whose id is the
    /// delivery id. The non-ASCII `é` makes re-serialization observable
    /// (`\u00e9` vs raw UTF-8).
    pub const BODY: &str = r#"{"id":"${var.webhook_id}","type":"message.created","data":{"message_id":"msg_1","amount":100,"text":"café"}}"#;
    pub const EVENT: &str = "message.created";
    /// The p95 acknowledgement time `webhook.burst` allows (WH-014's 2 s).
    pub const ACK_WITHIN: Duration = Duration::from_secs(2);
    /// The deadline of `webhook.accepts_valid`'s one delivery: a sender's
    /// timeout (GitHub gives up at 10 s), past which the delivery failed.
    /// One delivery says nothing of a p95, so the 2 s budget is judged by
    /// `webhook.burst` over 200.
    pub const ACK_DEADLINE: Duration = Duration::from_secs(10);
    pub const TOLERANCE: Duration = Duration::from_secs(300);
    pub const ACCEPT_STATUS: &[StatusPattern] = &[Class(2)];
    pub const REJECT_STATUS: &[StatusPattern] = &[Class(4)];
    pub const COUNT: u32 = 200;
    /// The largest `count` a burst may ask for.
    pub const COUNT_MAX: u32 = 10_000;
    pub const OVER: Duration = Duration::from_secs(10);
    /// `webhook.constant_time_compare`: WH-013's 5k signatures, both groups.
    pub const SAMPLES: u32 = 5_000;
    /// The fewest and the most `samples` it takes.
    pub const SAMPLES_MIN: u32 = 200;
    pub const SAMPLES_MAX: u32 = 20_000;
    /// The latency difference the probe resolves: FAIL when the whole
    /// confidence interval lies above it, PASS when inside ± it.
    pub const FLOOR: Duration = Duration::from_micros(50);

    // Sink role.
    pub const SINK_SCHEME: &str = "botix";
    pub const WAIT: Duration = Duration::from_secs(10);
    pub const SCHEDULE: &[Duration] = &[
        Duration::from_secs(30),
        Duration::from_secs(5 * 60),
        Duration::from_secs(30 * 60),
        Duration::from_secs(2 * 3600),
        Duration::from_secs(6 * 3600),
    ];
    pub const SCHEDULE_MODE: &str = "between";
    pub const TOLERANCE_PCT: f64 = 10.0;
    pub const TOLERANCE_FLOOR: Duration = Duration::from_millis(50);
    /// `quiet` is the last expected delay, at most this ...
    pub const QUIET_MAX: Duration = Duration::from_secs(10);
    /// ... or this when no retry is expected.
    pub const QUIET_NO_RETRY: Duration = Duration::from_secs(1);
    pub const RETRY_AFTER: u64 = 120;
    pub const HANG: Duration = Duration::from_secs(40);
    pub const MAX_SENDER_TIMEOUT: Duration = Duration::from_secs(30);
    /// What tminus answers, attempt by attempt, per sink kind (the last repeats).
    pub const RESPOND_DELIVERY: &[u16] = &[200];
    pub const RESPOND_RETRIES: &[u16] = &[500];
    pub const RESPOND_STOPS_ON_SUCCESS: &[u16] = &[500, 200];
    pub const RESPOND_STOPS_ON_GONE: &[u16] = &[410];
    pub const RESPOND_TRACE: &[u16] = &[200];
    pub const RESPOND_RETRY_AFTER: &[u16] = &[429, 200];
    pub const RESPOND_TIMEOUT: &[u16] = &[200];
}

use defaults as d;

// Sender parameters.
const RECEIVER: Param = param(
    "receiver",
    D::Required,
    "receiver path on the target, or absolute URL",
);
const SENDER_SCHEME: Param = param(
    "scheme",
    D::Str(d::SENDER_SCHEME),
    "botix|timestamped|standard|stripe|github|slack|shopify|custom",
);
const CUSTOM: Param = param(
    "custom",
    D::Absent,
    "custom scheme: signature_header, signature_prefix, id/timestamp/event_header, secret_encoding, digest_encoding, content",
);
const SENDER_SECRET: Param = param(
    "secret",
    D::Required,
    "signing secret, e.g. ${secret.WEBHOOK_SECRET}",
);
const BODY: Param = param(
    "body",
    // `defaults::BODY`, described: the template itself does not fit a table cell.
    D::Text("a message.created event"),
    "raw body template; ${var.webhook_id} is the delivery id",
);
const SENDER_EVENT: Param = param("event", D::Str(d::EVENT), "event header value");
const HEADERS: Param = param("headers", D::EmptyMap, "extra headers on every delivery");
const EFFECTS: Param = param(
    "effects",
    D::Absent,
    "side-effect counter {request, value} proving processed once / not at all",
);
const EFFECTS_REQUIRED: Param = param(
    "effects",
    D::Required,
    "side-effect counter {request, value}: without it \"processed once\" cannot be judged",
);
const ACK_WITHIN: Param = param(
    "ack_within",
    D::Duration(d::ACK_WITHIN),
    "limit for the p95 of the acknowledgement times",
);
const ACK_DEADLINE: Param = param(
    "ack_within",
    D::Duration(d::ACK_DEADLINE),
    "deadline for the delivery's 2xx (a sender's timeout; the 2 s p95 is webhook.burst's)",
);
const TOLERANCE: Param = param(
    "tolerance",
    D::Duration(d::TOLERANCE),
    "the receiver's timestamp tolerance",
);
const ACCEPT_STATUS: Param = param(
    "accept_status",
    D::Statuses(d::ACCEPT_STATUS),
    "statuses that mean accepted",
);
const REJECT_STATUS: Param = param(
    "reject_status",
    D::Statuses(d::REJECT_STATUS),
    "statuses that mean rejected",
);
const COUNT: Param = param(
    "count",
    D::Int(d::COUNT as u64),
    "deliveries to send (1 to 10000)",
);
const OVER: Param = param(
    "over",
    D::Duration(d::OVER),
    "window the deliveries are spread over",
);
const SAMPLES: Param = param(
    "samples",
    D::Int(d::SAMPLES as u64),
    "forged deliveries to time, both groups together (200 to 20000)",
);
const FLOOR: Param = param(
    "floor",
    D::Duration(d::FLOOR),
    "the latency difference the probe resolves: fail above it, pass within it",
);

// Sink parameters.
const SINK_SCHEME: Param = param(
    "scheme",
    D::Str(d::SINK_SCHEME),
    "how deliveries are signed",
);
const SINK_SECRET: Param = param("secret", D::Required, "the subscription's signing secret");
const TRIGGER: Param = param(
    "trigger",
    D::Required,
    "requests that subscribe ${var.sink_url} and make the target emit",
);
/// `respond`, whose default differs per kind.
const fn respond(default: &'static [u16]) -> Param {
    param(
        "respond",
        D::Codes(default),
        "statuses tminus answers, attempt by attempt",
    )
}
const WAIT: Param = param(
    "wait",
    D::Duration(d::WAIT),
    "how long to wait for the first delivery",
);
const SINK_EVENT: Param = param(
    "event",
    // Unset: any value is accepted, but the header must be there.
    D::Text("any"),
    "expected event header value",
);
const SCHEDULE: Param = param(
    "schedule",
    D::Durations(d::SCHEDULE),
    "expected retry delays",
);
const SCHEDULE_MODE: Param = param(
    "schedule_mode",
    D::Str(d::SCHEDULE_MODE),
    "between: delay since the previous attempt; since_first: since attempt 1",
);
const MAX_ATTEMPTS: Param = param(
    "max_attempts",
    D::Text("len(schedule)+1"),
    "total deliveries expected when every attempt fails",
);
const TOLERANCE_PCT: Param = param(
    "tolerance_pct",
    D::Float(d::TOLERANCE_PCT),
    "allowed deviation of each delay, percent",
);
const TOLERANCE_FLOOR: Param = param(
    "tolerance_floor",
    D::Duration(d::TOLERANCE_FLOOR),
    "absolute slack added to the tolerance",
);
const QUIET: Param = param(
    "quiet",
    // `defaults::QUIET_MAX`; a unit test keeps the words and the constant together.
    D::Text("last delay (max 10s)"),
    "silence required after the last expected attempt",
);
const RETRY_AFTER: Param = param(
    "retry_after",
    D::Int(d::RETRY_AFTER),
    "Retry-After seconds sent with tminus's 429/503 answers (only with a 429/503 in respond)",
);
const HANG: Param = param(
    "hang",
    D::Duration(d::HANG),
    "how long tminus holds the first attempt open",
);
const MAX_SENDER_TIMEOUT: Param = param(
    "max_sender_timeout",
    D::Duration(d::MAX_SENDER_TIMEOUT),
    "the sender must abandon a hanging attempt within this",
);
const TRACE_JSON: Param = param(
    "trace_json",
    D::Absent,
    "JSON path of the trace id in the body (else the traceparent header)",
);

// Properties (issue 12): what each kind judges, with its level and source.
const REJECTED_DOC: &str = "every hostile delivery is answered reject_status (a 5xx is not a rejection: a sender retries it); not exercised when a valid control delivery sent afterwards is refused too";
/// `rejected`, MUST, with the catalogue entry and spec section of its kind.
const fn rejected(source: &'static str) -> Property {
    must("rejected", source, REJECTED_DOC)
}
const NO_SIDE_EFFECT: Property = must(
    "no_side_effect",
    "catalogue §Webhooks (a rejection has no side effect)",
    "the `effects` counter did not move; skipped without `effects`",
);
const PROCESSED_ONCE: Property = must(
    "processed_once",
    "Standard Webhooks §Idempotency; catalogue WH-000/WH-008",
    "the `effects` counter moved by exactly the number of distinct deliveries; skipped without `effects`",
);
const ACKNOWLEDGED_VALID: Property = must(
    "acknowledged",
    "WH-000; Standard Webhooks §Verifying webhook authenticity (a valid delivery is accepted)",
    "a correctly signed delivery is answered accept_status",
);
const ACK_TIME: Property = should(
    "ack_time",
    "WH-000 (GitHub cuts off at 10 s; the 2 s p95 of WH-014 is webhook.burst's); BOTIX: answer within seconds, process in the background",
    "the acknowledgement came within ack_within, a sender's timeout; not exercised when nothing was acknowledged",
).botix_must();
/// CON-004: every sink kind judges the deliveries it received against the
/// suite's document, when that describes its events.
const PAYLOAD: Property = must(
    "payload",
    "OpenAPI 3.1 §4.8.1 (`webhooks:`); seed checklist #4 (schemas for events)",
    "with a suite `contract:` whose document has `webhooks:`, every delivery's JSON body validates against the entry of its event type (the scheme's event header, else the body's `type`): a required field missing fails it; not reported without such a document",
);

const SIGNATURE: Property = must(
    "signature",
    "WHS-001; Standard Webhooks §Signature scheme",
    "the delivery's signature verifies over its raw bytes with the subscription's secret",
);
const EVENT_HEADER: Property = should(
    "event_header",
    "WHS-001 (BOTIX: X-Botix-Event)",
    "the scheme's event header is present (and equals `event` when given); skipped for schemes without one",
).botix_must();
const DELIVERY_ID: Property = must(
    "delivery_id",
    "Standard Webhooks §Webhook-id (the receiver dedupes on it)",
    "the scheme's delivery id header is present; skipped for schemes without one",
);
const DELIVERY_ID_UUID: Property = should(
    "delivery_id_uuid",
    "WHS-001 (BOTIX: X-Botix-Request-Id is a UUID)",
    "the delivery id is a UUID; skipped for schemes other than botix",
)
.botix_must();
const RETRIED: Property = must(
    "retried",
    "WHS-002; Standard Webhooks §Retries (a failed delivery is retried)",
    "after tminus answered a 5xx, another attempt came",
);
const SAME_DELIVERY_ID: Property = must(
    "same_delivery_id",
    "WHS-002; Standard Webhooks §Idempotency (retries keep webhook-id)",
    "every attempt carries the same delivery id; not exercised with fewer than two attempts",
);
const ATTEMPTS: Property = must(
    "attempts",
    "WHS-002 (the suite's max_attempts)",
    "exactly max_attempts attempts, then silence for `quiet`",
);
const SCHEDULE_KEPT: Property = should(
    "schedule",
    "WHS-002 (BOTIX schedule; Standard Webhooks §Retries suggests backoff)",
    "each gap within tolerance of the schedule; not exercised for gaps that never happened",
)
.botix_must();

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Every webhook kind, in `WebhookSpec::NAMES` order: sender kinds (catalogue
/// WH-000..WH-015), then sink kinds (WHS-001..WHS-006, TRC-005). `params` is
/// exactly what the kind reads; the planner rejects any other parameter.
pub const KINDS: &[Kind] = &[
    Kind {
        properties: &[ACKNOWLEDGED_VALID, ACK_TIME, PROCESSED_ONCE],
        name: "webhook.accepts_valid",
        summary: "WH-000: a correctly signed delivery gets 2xx before a sender's timeout and is processed once",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, ACCEPT_STATUS, ACK_DEADLINE],
    },
    Kind {
        properties: &[rejected("WH-001; Standard Webhooks §Verifying webhook authenticity (id, timestamp and signature headers)"), NO_SIDE_EFFECT],
        name: "webhook.rejects_missing_headers",
        summary: "WH-001: signature, id or timestamp header missing -> 4xx, no effect",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    Kind {
        properties: &[rejected("WH-002; Standard Webhooks §Verifying webhook authenticity"), NO_SIDE_EFFECT],
        name: "webhook.rejects_forged",
        summary: "WH-002: a random digest of the right length -> 4xx, no effect",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    Kind {
        properties: &[must("acknowledged", "WH-003a; Standard Webhooks §Signature scheme (the signed content is the raw body)", "non-canonical JSON signed over its raw bytes is answered accept_status"), PROCESSED_ONCE],
        name: "webhook.accepts_raw_bytes",
        summary: "WH-003a: a non-canonical JSON body signed over its raw bytes is accepted",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, ACCEPT_STATUS],
    },
    Kind {
        properties: &[rejected("WH-003b; Standard Webhooks §Signature scheme (raw body)"), NO_SIDE_EFFECT],
        name: "webhook.rejects_reserialized",
        summary: "WH-003b: a re-serialized body sent with the original signature -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    Kind {
        properties: &[rejected("WH-004; Standard Webhooks §Verifying webhook authenticity (constant-time compare of the whole signature)"), NO_SIDE_EFFECT],
        name: "webhook.rejects_truncated",
        summary: "WH-004: half, empty and prefix-only signatures -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    Kind {
        properties: &[rejected("WH-005; Standard Webhooks §Signature scheme (`v1,` only)"), NO_SIDE_EFFECT],
        name: "webhook.rejects_wrong_scheme",
        summary: "WH-005: the right digest under another scheme prefix -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    Kind {
        properties: &[rejected("WH-006; Standard Webhooks §Verifying webhook authenticity (timestamp tolerance)"), NO_SIDE_EFFECT],
        name: "webhook.rejects_stale",
        summary: "WH-006: timestamp older than tolerance + 60 s -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS, TOLERANCE],
    },
    Kind {
        properties: &[rejected("WH-007; Standard Webhooks §Verifying webhook authenticity (timestamp tolerance, both sides)"), NO_SIDE_EFFECT],
        name: "webhook.rejects_future",
        summary: "WH-007: timestamp newer than now + tolerance + 60 s -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS, TOLERANCE],
    },
    Kind {
        properties: &[must("acknowledged", "WH-008; Standard Webhooks §Idempotency (webhook-id)", "the delivery and its identical replay are both answered accept_status (a non-2xx makes an at-least-once sender retry)"), PROCESSED_ONCE],
        name: "webhook.dedupes_replay",
        summary: "WH-008: the same delivery twice: both 2xx, processed once",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS_REQUIRED, ACCEPT_STATUS],
    },
    Kind {
        properties: &[must("resend_answered", "WH-008; RFC 9110 §15.6 (a 5xx invites a retry)", "the re-send under a new id is rejected (reject_status) or acknowledged (accept_status), never a 5xx; not exercised when the original was not accepted"), PROCESSED_ONCE],
        name: "webhook.replay_new_id",
        summary: "WH-008 (new id): the same body and signature re-sent under a new delivery id -> 4xx, or 2xx and processed once (schemes with an id header; it matters where the id is unsigned: github, botix, shopify, timestamped)",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS_REQUIRED, ACCEPT_STATUS, REJECT_STATUS],
    },
    Kind {
        properties: &[must("acknowledged", "WH-009; Standard Webhooks §Idempotency (a retry keeps the id, not the timestamp)", "the delivery and its sender-style retry are both answered accept_status"), PROCESSED_ONCE],
        name: "webhook.dedupes_retry",
        summary: "WH-009: same id, new timestamp and signature: 2xx, processed once",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS_REQUIRED, ACCEPT_STATUS],
    },
    Kind {
        properties: &[rejected("WH-010; Standard Webhooks §Verifying webhook authenticity"), NO_SIDE_EFFECT],
        name: "webhook.rejects_tampered",
        summary: "WH-010: one body byte changed after signing -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    Kind {
        properties: &[must("acknowledged", "WH-012; Standard Webhooks §Signature scheme (space-delimited signatures, any may match)", "two signatures, one valid, in either order, are answered accept_status"), PROCESSED_ONCE],
        name: "webhook.key_rotation",
        summary: "WH-012: two signatures, one valid, either order -> accepted",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, ACCEPT_STATUS],
    },
    Kind {
        properties: &[should("rejected", "WH-015; Standard Webhooks §Webhook-id (ids should not contain `.`): a receiver-side guard, not a spec requirement", REJECTED_DOC), NO_SIDE_EFFECT],
        name: "webhook.rejects_dotted_id",
        summary: "WH-015: a validly signed delivery whose id contains `.` (ambiguous in `id.ts.body`) -> 4xx",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS],
    },
    Kind {
        properties: &[must("acknowledged", "WH-014; Standard Webhooks §Request timeouts", "every delivery of the burst is answered accept_status"), should("ack_time", "WH-014 (p95 <= 2 s proposed; GitHub cuts off at 10 s)", "p95 acknowledgement time of the accepted deliveries within ack_within; not exercised when none was accepted").botix_must(), PROCESSED_ONCE],
        name: "webhook.burst",
        summary: "WH-014: `count` valid deliveries spread over `over`: all 2xx, p95 ack within ack_within, each processed once",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, ACCEPT_STATUS, ACK_WITHIN, COUNT, OVER],
    },
    Kind {
        properties: &[must("acknowledged", "WH-011; RFC 9110 §5.1 (field names are case-insensitive); RFC 9113 §8.2.1 (HTTP/2 sends them in lower case)", "a valid delivery is answered accept_status whether the scheme's header names are written in lower, UPPER or aLtErNaTiNg case"), PROCESSED_ONCE],
        name: "webhook.accepts_header_case",
        summary: "WH-011: valid deliveries with the signature headers' names in lower, UPPER and mixed case are all accepted",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, ACCEPT_STATUS],
    },
    Kind {
        properties: &[must("constant_time", "WH-013; GitHub webhooks docs (never use a plain ==); Standard Webhooks §Verifying webhook authenticity (constant-time compare)", "forged signatures sharing 0 or all but the last character with the valid one, interleaved at random, are rejected equally fast: fails when the prefix group is slower by more than floor (99.9 % interval), passes when the interval lies within ± floor, else inconclusive; a black-box probe only bounds a leak, code review proves constant time"), NO_SIDE_EFFECT],
        name: "webhook.constant_time_compare",
        summary: "WH-013: timing probe, forged signatures sharing a 0-char vs an all-but-last-char correct prefix -> no latency difference above floor",
        params: &[RECEIVER, SENDER_SCHEME, CUSTOM, SENDER_SECRET, BODY, SENDER_EVENT, HEADERS, EFFECTS, REJECT_STATUS, SAMPLES, FLOOR],
    },
    Kind {
        properties: &[SIGNATURE, EVENT_HEADER, DELIVERY_ID, DELIVERY_ID_UUID, PAYLOAD],
        name: "webhook.sink_delivery",
        summary: "WHS-001: the target's delivery is signed over the raw bytes, with event header and UUID request id",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, respond(d::RESPOND_DELIVERY), WAIT, RETRY_AFTER, SINK_EVENT],
    },
    Kind {
        properties: &[RETRIED, SAME_DELIVERY_ID, ATTEMPTS, SCHEDULE_KEPT, PAYLOAD],
        name: "webhook.sink_retries",
        summary: "WHS-002: answered 500, the target retries on schedule with the same request id, then stops",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, respond(d::RESPOND_RETRIES), WAIT, RETRY_AFTER, SCHEDULE, SCHEDULE_MODE, MAX_ATTEMPTS, TOLERANCE_PCT, TOLERANCE_FLOOR, QUIET],
    },
    Kind {
        properties: &[RETRIED, must("stops_after_success", "WHS-003; Standard Webhooks §Retries (a 2xx is success)", "no attempt after tminus answered 2xx (waits out the next scheduled delay); not exercised when the 2xx answer was never reached"), PAYLOAD],
        name: "webhook.sink_stops_on_success",
        summary: "WHS-003: answered 500 then 200, no attempt after the 2xx",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, respond(d::RESPOND_STOPS_ON_SUCCESS), WAIT, RETRY_AFTER, SCHEDULE, SCHEDULE_MODE, TOLERANCE_PCT, TOLERANCE_FLOOR, QUIET],
    },
    Kind {
        properties: &[should("stops_after_gone", "WHS-005 (BOTIX contract); Standard Webhooks §Retries (410 Gone: disable the endpoint)", "no attempt after tminus answered 410").botix_must(), PAYLOAD],
        name: "webhook.sink_stops_on_gone",
        summary: "WHS-005: answered 410, never retried",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, respond(d::RESPOND_STOPS_ON_GONE), WAIT, RETRY_AFTER, SCHEDULE, SCHEDULE_MODE, TOLERANCE_PCT, TOLERANCE_FLOOR, QUIET],
    },
    Kind {
        properties: &[must("trace_id_propagated", "TRC-005; W3C Trace Context §4.3 (outgoing requests carry the trace-id)", "the delivery carries the trigger's trace-id (traceparent, or `trace_json`)"), must("new_parent_id", "W3C Trace Context §3.2.2.4 (parent-id is the caller's own span)", "the delivery's traceparent has a parent-id other than the trigger's; skipped with `trace_json`, not exercised without the trace-id"), PAYLOAD],
        name: "webhook.sink_trace",
        summary: "TRC-005: a trigger carrying traceparent T yields a delivery carrying trace-id T",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, respond(d::RESPOND_TRACE), WAIT, RETRY_AFTER, TRACE_JSON],
    },
    Kind {
        properties: &[should("honours_retry_after", "WHS-006 (BOTIX contract); RFC 9110 §10.2.3 (how long the user agent ought to wait)", "the attempt after a 429/503 with Retry-After comes no earlier (less a scheduler's whole second, at most tolerance_pct of it, + tolerance_floor); not exercised when no second attempt came").botix_must(), PAYLOAD],
        name: "webhook.sink_respects_retry_after",
        summary: "WHS-006: answered 429 + Retry-After, the next attempt comes no earlier",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, respond(d::RESPOND_RETRY_AFTER), WAIT, RETRY_AFTER, SCHEDULE, SCHEDULE_MODE],
    },
    Kind {
        properties: &[must("gives_up", "WHS-004; Standard Webhooks §Request timeouts", "the sender abandons a hanging attempt within max_sender_timeout"), must("no_parallel_duplicate", "WHS-004 (no parallel duplicates)", "no attempt 2 arrives while attempt 1 is still open"), PAYLOAD],
        name: "webhook.sink_timeout",
        summary: "WHS-004: tminus holds attempt 1 open; the sender gives up within max_sender_timeout and never retries in parallel",
        params: &[SINK_SCHEME, CUSTOM, SINK_SECRET, TRIGGER, respond(d::RESPOND_TIMEOUT), WAIT, RETRY_AFTER, TOLERANCE_FLOOR, HANG, MAX_SENDER_TIMEOUT],
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
        "webhook.accepts_header_case" => AcceptsHeaderCase(Box<WebhookSenderSpec>),
        "webhook.constant_time_compare" => ConstantTimeCompare(Box<WebhookSenderSpec>),
        "webhook.sink_delivery" => SinkDelivery(Box<WebhookSinkSpec>),
        "webhook.sink_retries" => SinkRetries(Box<WebhookSinkSpec>),
        "webhook.sink_stops_on_success" => SinkStopsOnSuccess(Box<WebhookSinkSpec>),
        "webhook.sink_stops_on_gone" => SinkStopsOnGone(Box<WebhookSinkSpec>),
        "webhook.sink_trace" => SinkTrace(Box<WebhookSinkSpec>),
        "webhook.sink_respects_retry_after" => SinkRespectsRetryAfter(Box<WebhookSinkSpec>),
        "webhook.sink_timeout" => SinkTimeout(Box<WebhookSinkSpec>),
    }
);

#[cfg(test)]
mod tests {
    use super::{defaults, WebhookSpec, KINDS};
    use crate::context::Scope;
    use crate::families::webhook::plan::{WebhookPlan, WEBHOOK_ID_VAR};
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;
    use crate::spec::kinds::{show_duration, DefaultValue};

    /// Only the required fields of a kind (`effects` where the row requires it).
    fn minimal(kind: &str) -> String {
        let row = KINDS.iter().find(|k| k.name == kind).expect("a row");
        let required = |name: &str| {
            row.params
                .iter()
                .any(|p| p.name == name && p.default == DefaultValue::Required)
        };
        let mut y = String::new();
        if required("receiver") {
            y.push_str("    receiver: /r\n");
            y.push_str("    secret: whsec_dG1pbnVzLXJlZmVyZW5jZS1yZWNlaXZlci1rZXk=\n");
        } else {
            y.push_str("    secret: s3cr3t-value\n");
            y.push_str("    trigger: [{ method: POST, path: /t }]\n");
        }
        if required("effects") {
            y.push_str("    effects: { request: { path: /c }, value: $.count }\n");
        }
        y
    }

    /// Plans `kind` with only its required fields.
    fn plan_minimal(kind: &str) -> WebhookPlan {
        let CheckPlan::Webhook(p) = plan_check(kind, &minimal(kind)) else {
            panic!("not a webhook plan");
        };
        *p
    }

    #[test]
    fn table_defaults_are_the_planned_ones() {
        assert_covers(KINDS, WebhookSpec::NAMES);
        for kind in WebhookSpec::NAMES {
            let row = KINDS.iter().find(|k| k.name == *kind).expect("a row");
            let custom = |name: &str| (name == "custom").then(|| "custom".to_owned());
            let planned = match plan_minimal(kind) {
                WebhookPlan::Sender(p) => vec![
                    ("scheme", word(&p.scheme.name)),
                    ("custom", custom(&p.scheme.name)),
                    ("event", word(&p.event)),
                    ("headers", map(&p.headers)),
                    ("effects", p.effects.as_ref().map(|_| "a counter".into())),
                    ("ack_within", dur(p.ack_within)),
                    ("tolerance", dur(p.tolerance)),
                    ("accept_status", statuses(&p.accept)),
                    ("reject_status", statuses(&p.reject)),
                    ("count", int(p.count)),
                    ("over", dur(p.over)),
                    ("samples", int(p.samples)),
                    ("floor", dur(p.floor)),
                ],
                WebhookPlan::Sink(p) => vec![
                    ("scheme", word(&p.scheme.name)),
                    ("custom", custom(&p.scheme.name)),
                    ("respond", list(&p.respond)),
                    ("wait", dur(p.wait)),
                    ("retry_after", int(p.retry_after)),
                    (
                        "schedule",
                        list(p.schedule.iter().map(|d| show_duration(*d))),
                    ),
                    ("schedule_mode", word(p.schedule_mode.name())),
                    ("tolerance_pct", float(p.tolerance_pct)),
                    ("tolerance_floor", dur(p.tolerance_floor)),
                    ("hang", p.hang.and_then(dur)),
                    ("max_sender_timeout", dur(p.max_sender_timeout)),
                    ("trace_json", opt(&p.trace_json)),
                ],
            };
            // The plan structs are shared by the kinds of a role; compare
            // what this kind reads (a required row is written, not planned).
            let planned: Vec<_> = planned
                .into_iter()
                .filter(|(name, _)| {
                    row.params
                        .iter()
                        .any(|p| p.name == *name && p.default != DefaultValue::Required)
                })
                .collect();
            assert_planned(KINDS, kind, &planned);
        }
    }

    /// The defaults described in words are the ones planned.
    #[test]
    fn worded_defaults_are_the_planned_ones() {
        let WebhookPlan::Sender(s) = plan_minimal("webhook.accepts_valid") else {
            panic!("a sender plan");
        };
        let mut scope = Scope::new();
        scope.insert(WEBHOOK_ID_VAR.into(), "${var.webhook_id}".into());
        assert_eq!(s.body.render(&scope), defaults::BODY);
        assert!(defaults::BODY.contains(&format!("\"{}\"", defaults::EVENT)));

        let WebhookPlan::Sink(r) = plan_minimal("webhook.sink_retries") else {
            panic!("a sink plan");
        };
        assert_eq!(r.event, None, "any event value");
        assert_eq!(r.max_attempts as usize, defaults::SCHEDULE.len() + 1);
        let last = *defaults::SCHEDULE.last().expect("a schedule");
        assert_eq!(r.quiet, last.min(defaults::QUIET_MAX));
        let quiet = KINDS
            .iter()
            .flat_map(|k| k.params)
            .find(|p| p.name == "quiet")
            .expect("a quiet row");
        let DefaultValue::Text(t) = quiet.default else {
            panic!("quiet is described in words")
        };
        assert!(t.contains(&show_duration(defaults::QUIET_MAX)), "{t}");
    }
}
