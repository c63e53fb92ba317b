//! YAML specs of the trace-correlation kinds (`trace.*`, catalogue §4,
//! TRC-001..TRC-009 except TRC-005, which the webhook family joins).
//!
//! Every dialect choice (which header carries the id, its format, how an async
//! status resource is joined back to its request) is a parameter whose default
//! follows the BOTIX checklist (`Trace-Id`) and W3C Trace Context.

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::scalar::{DurationValue, StatusPattern, StatusSet};
use crate::suite::kinds::{check_spec, family_kinds, KindInfo};
use crate::suite::request::RequestSpec;

fn yes() -> bool {
    true
}
fn two_xx() -> StatusSet {
    StatusSet(vec![StatusPattern::Class(2)])
}
fn accepted() -> StatusSet {
    StatusSet::single(202)
}
pub fn default_trace_header() -> String {
    "Trace-Id".into()
}
/// Headers accepted as "this response carries an id" (TRC-009).
pub fn default_id_headers() -> Vec<String> {
    ["Trace-Id", "X-Request-Id", "traceparent", "traceresponse"]
        .map(String::from)
        .to_vec()
}
/// Headers a propagated trace-id may come back in (TRC-001).
pub fn default_return_headers() -> Vec<String> {
    ["Trace-Id", "traceresponse"].map(String::from).to_vec()
}
fn authorization() -> String {
    "Authorization".into()
}
fn not_found_path() -> Option<String> {
    Some("/__tminus/trace-probe-not-found-${uuid}".into())
}
fn thousand() -> u64 {
    1000
}
fn eight() -> u64 {
    8
}
fn thirty_s() -> DurationValue {
    DurationValue(std::time::Duration::from_secs(30))
}
fn ten_s() -> DurationValue {
    DurationValue(std::time::Duration::from_secs(10))
}
fn w3c() -> IdFormat {
    IdFormat::W3c
}
fn request_id_header() -> String {
    "X-Request-Id".into()
}
fn max_len() -> usize {
    255
}
fn long_len() -> usize {
    10 * 1024
}
fn tracestate_header() -> String {
    "tracestate".into()
}
fn sanitized_pattern() -> String {
    "^[A-Za-z0-9._:-]+$".into()
}

/// What a trace id must look like.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum IdFormat {
    /// 32 lowercase hex digits, not all zeros (W3C trace-id).
    W3c,
    /// Any non-empty value.
    Any,
}

/// One request of a `trace.present` sample and the status it is meant to provoke.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct SampleSpec {
    #[serde(default)]
    pub name: Option<String>,
    pub request: RequestSpec,
    /// The status this request is meant to provoke (so a 5xx probe that answers
    /// 200 is reported as a suite problem, not silently counted).
    #[serde(default)]
    pub status: Option<Spanned<StatusSet>>,
}

check_spec!(
    /// `trace.present`: every response of a sample (2xx, 401, 404, 4xx/429/5xx from
    /// `requests`) carries a request/trace id (TRC-009, TRC-002 first half).
    TracePresentSpec {
        /// A request the target answers with 2xx.
        pub request: RequestSpec,
        #[serde(default = "two_xx")]
        pub status: StatusSet,
        /// Also send `request` without `auth_header`, expecting 401.
        #[serde(default = "yes")]
        pub probe_unauthenticated: bool,
        #[serde(default = "authorization")]
        pub auth_header: String,
        /// A path expected to answer 404; `null` turns the probe off.
        #[serde(default = "not_found_path")]
        pub not_found_path: Option<String>,
        /// Further requests (422, 429, 5xx ...), each with its expected status.
        #[serde(default)]
        pub requests: Vec<SampleSpec>,
        /// Any of these headers counts as an id.
        #[serde(default = "default_id_headers")]
        pub id_headers: Vec<String>,
    }
);

check_spec!(
    /// `trace.unique`: ids differ across N requests (TRC-002).
    TraceUniqueSpec {
        pub request: RequestSpec,
        #[serde(default = "thousand")]
        pub count: u64,
        #[serde(default = "eight")]
        pub concurrency: u64,
        /// Stop sending after this long, judging what was collected.
        #[serde(default = "thirty_s")]
        pub within: DurationValue,
        #[serde(default = "default_trace_header")]
        pub trace_header: String,
        #[serde(default = "w3c")]
        pub id_format: IdFormat,
        /// Longest wait for a 429's Retry-After before the check finishes.
        #[serde(default = "ten_s")]
        pub max_retry_after_wait: DurationValue,
    }
);

check_spec!(
    /// `trace.propagated`: a sent traceparent's trace-id comes back (TRC-001).
    TracePropagatedSpec {
        pub request: RequestSpec,
        #[serde(default = "two_xx")]
        pub status: StatusSet,
        /// Headers the trace-id may come back in; each one present must carry it.
        #[serde(default = "default_return_headers")]
        pub return_headers: Vec<String>,
    }
);

check_spec!(
    /// `trace.invalid_ignored`: an invalid traceparent restarts the trace (TRC-003).
    TraceInvalidIgnoredSpec {
        pub request: RequestSpec,
        #[serde(default = "two_xx")]
        pub status: StatusSet,
        #[serde(default = "default_trace_header")]
        pub trace_header: String,
        #[serde(default = "w3c")]
        pub id_format: IdFormat,
        /// A subset of the case names; all by default.
        #[serde(default)]
        pub cases: Option<Vec<Spanned<String>>>,
    }
);

check_spec!(
    /// `trace.request_id_hygiene`: X-Request-Id echoed when well formed, never
    /// reflected raw when overlong or hostile (TRC-007).
    TraceRequestIdSpec {
        pub request: RequestSpec,
        #[serde(default = "two_xx")]
        pub status: StatusSet,
        #[serde(default = "request_id_header")]
        pub header: String,
        /// Whether a well-formed id must come back unchanged.
        #[serde(default = "yes")]
        pub expect_echo: bool,
        /// Longest id the target may return.
        #[serde(default = "max_len")]
        pub max_length: usize,
        /// Size of the overlong value sent.
        #[serde(default = "long_len")]
        pub long_length: usize,
        /// What a returned id for a hostile value must look like.
        #[serde(default = "sanitized_pattern")]
        pub sanitized_pattern: String,
    }
);

check_spec!(
    /// `trace.version_downgrade`: a higher-version traceparent (`01-T-P-01-xyz`,
    /// an extra field) is continued with the same trace-id, and any
    /// traceparent-shaped header coming back is version `00` (TRC-004).
    TraceVersionDowngradeSpec {
        pub request: RequestSpec,
        #[serde(default = "two_xx")]
        pub status: StatusSet,
        /// Headers the trace-id may come back in; each one present must carry it.
        #[serde(default = "default_return_headers")]
        pub return_headers: Vec<String>,
    }
);

check_spec!(
    /// `trace.tracestate`: a forwarded/returned tracestate keeps member order, puts
    /// new keys leftmost, holds at most 32 whole members (TRC-006).
    TraceTracestateSpec {
        pub request: RequestSpec,
        #[serde(default = "two_xx")]
        pub status: StatusSet,
        /// The response header carrying the target's outgoing tracestate.
        #[serde(default = "tracestate_header")]
        pub header: String,
        /// Whether a target returning no tracestate at all fails (else: skipped).
        #[serde(default)]
        pub required: bool,
    }
);

/// Where the async status resource carries the trace id.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct StatusTraceSpec {
    #[serde(default)]
    pub json: Option<String>,
    #[serde(default)]
    pub header: Option<String>,
}

check_spec!(
    /// `trace.async_status`: a 202's status URL answers with the same trace id (TRC-008).
    TraceAsyncStatusSpec {
        pub request: RequestSpec,
        #[serde(default = "accepted")]
        pub status: StatusSet,
        /// Where the starting request's trace id is read.
        #[serde(default = "default_trace_header")]
        pub trace_header: String,
        /// Status the status URL must answer.
        #[serde(default = "two_xx")]
        pub poll_status: StatusSet,
        /// Where the status resource carries the id: `{json: $.trace_id}` (default)
        /// or `{header: Trace-Id}`.
        #[serde(default)]
        pub status_trace: Option<Spanned<StatusTraceSpec>>,
        /// Send the GET with a traceparent continuing the started trace (as a
        /// client that propagates would).
        #[serde(default)]
        pub send_traceparent: bool,
    }
);

family_kinds!(
    /// A `trace.*` check as written.
    TraceSpec {
        "trace.present" => Present(TracePresentSpec),
        "trace.unique" => Unique(TraceUniqueSpec),
        "trace.propagated" => Propagated(TracePropagatedSpec),
        "trace.invalid_ignored" => InvalidIgnored(TraceInvalidIgnoredSpec),
        "trace.request_id_hygiene" => RequestIdHygiene(TraceRequestIdSpec),
        "trace.async_status" => AsyncStatus(TraceAsyncStatusSpec),
        "trace.version_downgrade" => VersionDowngrade(TraceVersionDowngradeSpec),
        "trace.tracestate" => Tracestate(TraceTracestateSpec),
    }
);

/// What `tminus checks` prints for the trace family.
pub const TRACE_KINDS: &[KindInfo] = &[
    KindInfo {
        name: "trace.present",
        summary: "every response of a sample (2xx, 401, 404, and given 4xx/429/5xx) carries a request/trace id (TRC-009)",
        params: &[
            ("request", "required", "a request answered with `status`"),
            ("status", "2xx", "status `request` must get"),
            ("probe_unauthenticated", "true", "also send `request` without `auth_header`, expecting 401"),
            ("auth_header", "Authorization", "header dropped by the unauthenticated probe"),
            ("not_found_path", "/__tminus/trace-probe-not-found-${uuid}", "GET expected to answer 404; null turns it off"),
            ("requests", "[]", "more probes: list of {name, request, status} (422, 429, 5xx ...)"),
            ("id_headers", "[Trace-Id, X-Request-Id, traceparent, traceresponse]", "any of these counts as an id"),
        ],
    },
    KindInfo {
        name: "trace.unique",
        summary: "trace ids are well formed and differ across N requests (TRC-002)",
        params: &[
            ("request", "required", "the request sent N times"),
            ("count", "1000", "requests to send"),
            ("concurrency", "8", "requests in flight"),
            ("within", "30s", "time bound; the check judges what it collected by then"),
            ("trace_header", "Trace-Id", "header holding the id (traceparent/traceresponse: its trace-id field)"),
            ("id_format", "w3c", "`w3c` (32 lowercase hex, not all zeros) or `any`"),
            ("max_retry_after_wait", "10s", "after 429s, wait up to this for Retry-After before finishing"),
        ],
    },
    KindInfo {
        name: "trace.propagated",
        summary: "a sent traceparent's trace-id comes back, with a new parent id (TRC-001)",
        params: &[
            ("request", "required", "the request sent with a fresh traceparent"),
            ("status", "2xx", "status it must get"),
            ("return_headers", "[Trace-Id, traceresponse]", "headers the id may come back in; each present must carry it"),
        ],
    },
    KindInfo {
        name: "trace.invalid_ignored",
        summary: "invalid traceparents (uppercase, zero ids, version ff, wrong lengths, extra field) restart the trace without 4xx (TRC-003)",
        params: &[
            ("request", "required", "the request sent with each invalid traceparent"),
            ("status", "2xx", "status each must still get"),
            ("trace_header", "Trace-Id", "header holding the new trace id"),
            ("id_format", "w3c", "`w3c` or `any`"),
            ("cases", "all", "subset of: uppercase, zero-trace-id, zero-parent-id, version-ff, short-trace-id, long-parent-id, extra-field, tracestate-only"),
        ],
    },
    KindInfo {
        name: "trace.request_id_hygiene",
        summary: "a well-formed X-Request-Id is echoed; overlong or hostile ones are never reflected raw (TRC-007)",
        params: &[
            ("request", "required", "the request the ids ride on"),
            ("status", "2xx", "status the well-formed request must get"),
            ("header", "X-Request-Id", "request id header"),
            ("expect_echo", "true", "a well-formed id must come back unchanged"),
            ("max_length", "255", "longest id the target may return"),
            ("long_length", "10240", "size of the overlong value"),
            ("sanitized_pattern", "^[A-Za-z0-9._:-]+$", "what a returned id must look like after a hostile one"),
        ],
    },
    KindInfo {
        name: "trace.async_status",
        summary: "a 202's Location status resource answers with the starting request's trace id (TRC-008)",
        params: &[
            ("request", "required", "the request that starts the async operation"),
            ("status", "202", "status it must get (with Location)"),
            ("trace_header", "Trace-Id", "where the starting response's trace id is read"),
            ("poll_status", "2xx", "status the status URL must answer"),
            ("status_trace", "{json: $.trace_id}", "where the status resource carries the id: {json: PATH} or {header: NAME}"),
            ("send_traceparent", "false", "send the GET with a traceparent continuing the started trace"),
        ],
    },
    KindInfo {
        name: "trace.version_downgrade",
        summary: "a higher-version traceparent (01-T-P-01-xyz) is continued with the same trace-id and answered as version 00 (TRC-004)",
        params: &[
            ("request", "required", "the request sent with a version-01 traceparent"),
            ("status", "2xx", "status it must get"),
            ("return_headers", "[Trace-Id, traceresponse]", "headers the id may come back in; each present must carry it"),
        ],
    },
    KindInfo {
        name: "trace.tracestate",
        summary: "a returned tracestate keeps member order, new keys leftmost, at most 32 whole members (TRC-006)",
        params: &[
            ("request", "required", "the request sent with a traceparent and a 3- and a 33-member tracestate"),
            ("status", "2xx", "status each must get"),
            ("header", "tracestate", "response header carrying the target's outgoing tracestate"),
            ("required", "false", "a target returning no tracestate fails (else the check is skipped)"),
        ],
    },
];
