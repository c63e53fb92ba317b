//! YAML specs of the trace-correlation kinds (`trace.*`, catalogue §4,
//! TRC-001..TRC-009 except TRC-005, which the webhook family joins).
//!
//! Every dialect choice (which header carries the id, its format, how an async
//! status resource is joined back to its request) is a parameter whose default
//! follows the BOTIX checklist (`Trace-Id`) and W3C Trace Context.

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::scalar::{DurationValue, StatusSet};
use crate::spec::kinds::{
    check_spec, family_kinds, must, param, should, DefaultValue as D, Kind, Param, Property,
};
use crate::spec::request::RequestSpec;

/// Every default of the family: serde applies these (the `default = ...`
/// functions below), `KINDS` prints them.
pub mod defaults {
    use std::time::Duration;

    use crate::model::scalar::StatusPattern::{self, Class, Exact};

    pub const STATUS: &[StatusPattern] = &[Class(2)];
    pub const ASYNC_STATUS: &[StatusPattern] = &[Exact(202)];
    pub const PROBE_UNAUTHENTICATED: bool = true;
    pub const AUTH_HEADER: &str = "Authorization";
    pub const NOT_FOUND_PATH: &str = "/__tminus/trace-probe-not-found-${uuid}";
    /// Headers accepted as "this response carries an id" (TRC-009).
    pub const ID_HEADERS: &[&str] = &["Trace-Id", "X-Request-Id", "traceparent", "traceresponse"];
    /// Distinct ids `trace.unique` needs: a 16-bit id space passes by
    /// chance under 0.05 % (the birthday bound at 1,000).
    pub const COUNT: u64 = 1000;
    /// Requests `trace.unique` sends at least, however many ids the run's
    /// other answers already carried: its own request is exercised and its
    /// ids meet the pool's.
    pub const OWN_AT_LEAST: u64 = 100;
    pub const CONCURRENCY: u64 = 8;
    pub const WITHIN: Duration = Duration::from_secs(30);
    pub const TRACE_HEADER: &str = "Trace-Id";
    pub const ID_FORMAT: &str = "w3c";
    pub const MAX_RETRY_AFTER_WAIT: Duration = Duration::from_secs(10);
    /// Headers a propagated trace-id may come back in (TRC-001).
    pub const RETURN_HEADERS: &[&str] = &["Trace-Id", "traceresponse"];
    pub const REQUEST_ID_HEADER: &str = "X-Request-Id";
    pub const EXPECT_ECHO: bool = true;
    pub const MAX_LENGTH: usize = 255;
    pub const LONG_LENGTH: usize = 10 * 1024;
    pub const SANITIZED_PATTERN: &str = "^[A-Za-z0-9._:-]+$";
    pub const STATUS_TRACE_JSON: &str = "$.trace_id";
    pub const SEND_TRACEPARENT: bool = false;
    pub const TRACESTATE_HEADER: &str = "tracestate";
    pub const TRACESTATE_REQUIRED: bool = false;
}

use defaults as d;

fn two_xx() -> StatusSet {
    StatusSet(d::STATUS.to_vec())
}
fn accepted() -> StatusSet {
    StatusSet(d::ASYNC_STATUS.to_vec())
}
pub fn default_trace_header() -> String {
    d::TRACE_HEADER.into()
}
pub fn default_id_headers() -> Vec<String> {
    d::ID_HEADERS.iter().map(|h| h.to_string()).collect()
}
pub fn default_return_headers() -> Vec<String> {
    d::RETURN_HEADERS.iter().map(|h| h.to_string()).collect()
}
fn authorization() -> String {
    d::AUTH_HEADER.into()
}
fn not_found_path() -> Option<String> {
    Some(d::NOT_FOUND_PATH.into())
}
fn count() -> u64 {
    d::COUNT
}
fn concurrency() -> u64 {
    d::CONCURRENCY
}
fn within() -> DurationValue {
    DurationValue(d::WITHIN)
}
fn max_retry_after_wait() -> DurationValue {
    DurationValue(d::MAX_RETRY_AFTER_WAIT)
}
fn id_format() -> IdFormat {
    IdFormat::parse(d::ID_FORMAT).expect("a known id format")
}
fn request_id_header() -> String {
    d::REQUEST_ID_HEADER.into()
}
fn expect_echo() -> bool {
    d::EXPECT_ECHO
}
fn max_len() -> usize {
    d::MAX_LENGTH
}
fn long_len() -> usize {
    d::LONG_LENGTH
}
fn tracestate_header() -> String {
    d::TRACESTATE_HEADER.into()
}
fn tracestate_required() -> bool {
    d::TRACESTATE_REQUIRED
}
fn send_traceparent() -> bool {
    d::SEND_TRACEPARENT
}
fn sanitized_pattern() -> String {
    d::SANITIZED_PATTERN.into()
}

/// What a trace id must look like.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum IdFormat {
    /// 32 lowercase hex digits, not all zeros (W3C trace-id).
    W3c,
    /// Any non-empty value.
    Any,
}

impl IdFormat {
    /// The name a suite writes.
    pub fn name(self) -> &'static str {
        match self {
            IdFormat::W3c => "w3c",
            IdFormat::Any => "any",
        }
    }
    pub fn parse(name: &str) -> Option<IdFormat> {
        [IdFormat::W3c, IdFormat::Any]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

/// One request of a `trace.present` sample and the status it is meant to provoke.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct SampleSpec {
    #[serde(default)]
    pub name: Option<String>,
    pub request: RequestSpec,
    /// The status this request is meant to provoke (so a 5xx probe that answers
    /// 200 is reported as a suite problem, not silently counted).
    #[serde(default)]
    #[schemars(with = "Option<StatusSet>")]
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
        /// Default by profile: `botix` probes (its contract says 401), `standard` does not.
        #[serde(default)]
        pub probe_unauthenticated: Option<bool>,
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
    /// `trace.unique`: ids differ across N responses (TRC-002).
    TraceUniqueSpec {
        pub request: RequestSpec,
        #[serde(default = "count")]
        pub count: u64,
        #[serde(default = "concurrency")]
        pub concurrency: u64,
        /// Stop sending after this long, judging what was collected.
        #[serde(default = "within")]
        pub within: DurationValue,
        #[serde(default = "default_trace_header")]
        pub trace_header: String,
        #[serde(default = "id_format")]
        pub id_format: IdFormat,
        /// Longest wait for a 429's Retry-After before the check finishes.
        #[serde(default = "max_retry_after_wait")]
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
        #[serde(default = "id_format")]
        pub id_format: IdFormat,
        /// A subset of the case names; all by default.
        #[serde(default)]
        #[schemars(with = "Option<Vec<String>>")]
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
        #[serde(default = "expect_echo")]
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
        #[serde(default = "tracestate_required")]
        pub required: bool,
    }
);

/// Where the async status resource carries the trace id.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
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
        #[schemars(with = "Option<StatusTraceSpec>")]
        pub status_trace: Option<Spanned<StatusTraceSpec>>,
        /// Send the GET with a traceparent continuing the started trace (as a
        /// client that propagates would).
        #[serde(default = "send_traceparent")]
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

const REQUEST: Param = param("request", D::Required, "the request sent");
const STATUS: Param = param(
    "status",
    D::Statuses(d::STATUS),
    "status `request` must get",
);
const TRACE_HEADER: Param = param(
    "trace_header",
    D::Str(d::TRACE_HEADER),
    "header holding the id (traceparent/traceresponse: its trace-id field)",
);
const ID_FORMAT: Param = param(
    "id_format",
    D::Str(d::ID_FORMAT),
    "`w3c` (32 lowercase hex, not all zeros) or `any`",
);
const RETURN_HEADERS: Param = param(
    "return_headers",
    D::List(d::RETURN_HEADERS),
    "headers the id may come back in; each present must carry it",
);

// Properties (issue 12) shared by the propagation kinds.
const ID_RETURNED: Property = should(
    "id_returned",
    "TRC-001 (BOTIX: the trace id on the response; W3C traceresponse is a draft)",
    "one of return_headers is on the response; when none is, the properties resting on it are skipped and this one says how to make them observable",
).botix_must();
const TRACE_ID_CONTINUED: Property = must(
    "trace_id_continued",
    "W3C Trace Context §4.3 (the trace-id is kept); TRC-001",
    "every returned header carries the sent trace-id; skipped when none came back (id_returned)",
);
const NEW_PARENT_ID: Property = must(
    "new_parent_id",
    "W3C Trace Context §3.2.2.4 (parent-id is the vendor's own span)",
    "a returned traceparent-shaped header has a parent-id other than the sent one; skipped for plain ids, when none came back or the trace was not continued",
);

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the trace family.
pub const KINDS: &[Kind] = &[
    Kind {
        properties: &[should("present", "TRC-009 (BOTIX: an id on all responses)", "every response of the sample carries one of id_headers; not exercised when the sample did not provoke its statuses").botix_must()],
        name: "trace.present",
        summary: "every response of a sample (2xx, 401, 404, and given 4xx/429/5xx) carries a request/trace id (TRC-009)",
        params: &[
            REQUEST,
            STATUS,
            param(
                "probe_unauthenticated",
                D::Profiled {
                    standard: &D::Bool(false),
                    botix: &D::Bool(d::PROBE_UNAUTHENTICATED),
                },
                "also send `request` without `auth_header`, expecting 401 (a BOTIX contract: no RFC says which status)",
            ),
            param(
                "auth_header",
                D::Text("Authorization"),
                "header dropped by the unauthenticated probe (only sent with `probe_unauthenticated`)",
            ),
            param(
                "not_found_path",
                D::Str(d::NOT_FOUND_PATH),
                "GET expected to answer 404; `null` turns it off",
            ),
            param(
                "requests",
                D::List(&[]),
                "more probes: list of `{name, request, status}` (422, 429, 5xx ...)",
            ),
            param("id_headers", D::List(d::ID_HEADERS), "any of these counts as an id"),
        ],
    },
    Kind {
        properties: &[should("present", "TRC-002 (BOTIX: Trace-Id on every response)", "every response carries trace_header").botix_must(), must("well_formed", "W3C Trace Context §3.2.2.3 (trace-id: 32 lowercase hex, not all zeros)", "every id has id_format; not exercised without ids"), must("unique", "W3C Trace Context §3.2.2.3 (a globally unique trace-id); TRC-002", "no id repeats; not exercised with fewer than two ids")],
        name: "trace.unique",
        summary: "trace ids are well formed and differ across N responses, the run's other fresh answers counted (TRC-002)",
        params: &[
            REQUEST,
            param("count", D::Int(d::COUNT), "distinct ids the verdict needs: the run's other fresh answers (no trace context, no idempotency key sent) count, and the check sends what they lack, at least 100 of its own; a repeat stops it"),
            param("concurrency", D::Int(d::CONCURRENCY), "requests in flight"),
            param(
                "within",
                D::Duration(d::WITHIN),
                "time bound; the check judges what it collected by then",
            ),
            TRACE_HEADER,
            ID_FORMAT,
            param(
                "max_retry_after_wait",
                D::Duration(d::MAX_RETRY_AFTER_WAIT),
                "after 429s, wait up to this for Retry-After before finishing",
            ),
        ],
    },
    Kind {
        properties: &[ID_RETURNED, TRACE_ID_CONTINUED, NEW_PARENT_ID],
        name: "trace.propagated",
        summary: "a sent traceparent's trace-id comes back, with a new parent id (TRC-001)",
        params: &[REQUEST, STATUS, RETURN_HEADERS],
    },
    Kind {
        properties: &[must("answered", "W3C Trace Context §4.3 (an invalid traceparent MUST be ignored, not refused)", "every invalid traceparent is answered `status`"), must("restarted", "W3C Trace Context §4.3 (restart the trace); TRC-003", "each case got a new, well-formed trace id; cases whose response carried none are id_returned's"), should("not_echoed", "TRC-003", "the invalid value is not echoed in a response header; skipped when no response carried a trace id"), should("id_returned", "TRC-002, TRC-009 (BOTIX: Trace-Id on every response); W3C does not require returning it", "every answered case carries trace_header, so a restart is observable (else answered, restarted and not_echoed rest on nothing and are skipped)").botix_must()],
        name: "trace.invalid_ignored",
        summary: "invalid traceparents (uppercase, zero ids, version ff, wrong lengths, extra field) restart the trace without 4xx (TRC-003)",
        params: &[
            REQUEST,
            STATUS,
            TRACE_HEADER,
            ID_FORMAT,
            param(
                "cases",
                D::Text("all"),
                "subset of: uppercase, zero-trace-id, zero-parent-id, version-ff, short-trace-id, long-parent-id, extra-field, tracestate-only",
            ),
        ],
    },
    Kind {
        properties: &[must("not_reflected", "TRC-007; OWASP header injection guidance [RID]", "overlong and hostile ids never come back raw in a header or the body; skipped when no response carries the header (echoed)"), must("well_formed_reply", "TRC-007 (replaced or sanitized, at most 255 characters)", "every id returned is the caller's well-formed id or a well-formed one of the target's (asgi-correlation-id's replacement meets it); skipped when no response carries the header (echoed)"), should("echoed", "TRC-007; issue 13 (echoing is advice: replacing is allowed)", "a well-formed UUIDv4 id comes back unchanged; fails (a warning) when no response carries the header at all, saying how to make it observable")],
        name: "trace.request_id_hygiene",
        summary: "a caller's UUIDv4 X-Request-Id is echoed (or replaced by a well-formed id); overlong or hostile ones are never reflected raw (TRC-007)",
        params: &[
            REQUEST,
            STATUS,
            param("header", D::Str(d::REQUEST_ID_HEADER), "request id header"),
            param(
                "expect_echo",
                D::Bool(d::EXPECT_ECHO),
                "judge `echoed`: the well-formed id should come back unchanged",
            ),
            param("max_length", D::Int(d::MAX_LENGTH as u64), "longest id the target may return"),
            param("long_length", D::Int(d::LONG_LENGTH as u64), "size of the overlong value"),
            param(
                "sanitized_pattern",
                D::Str(d::SANITIZED_PATTERN),
                "what a returned id must look like after a hostile one",
            ),
        ],
    },
    Kind {
        properties: &[should("status_monitor", "RFC 9110 §15.3.3 (a 202 ought to point to a status monitor); TRC-008 (BOTIX: 202 + Location)", "the request answers `status` with a Location that answers poll_status").botix_must(), should("trace_id_joined", "TRC-008 (BOTIX)", "the status resource carries the starting response's trace id; fails when the start carries none (not observable), skipped without a status resource").botix_must()],
        name: "trace.async_status",
        summary: "a 202's Location status resource answers with the starting request's trace id (TRC-008)",
        params: &[
            REQUEST,
            param(
                "status",
                D::Statuses(d::ASYNC_STATUS),
                "status `request` must get (with Location)",
            ),
            param(
                "trace_header",
                D::Str(d::TRACE_HEADER),
                "where the starting response's trace id is read",
            ),
            param("poll_status", D::Statuses(d::STATUS), "status the status URL must answer"),
            param(
                "status_trace.json",
                D::Str(d::STATUS_TRACE_JSON),
                "JSON path of the id in the status resource; or give `status_trace: {header: NAME}`",
            ),
            param(
                "send_traceparent",
                D::Bool(d::SEND_TRACEPARENT),
                "send the GET with a traceparent continuing the started trace",
            ),
        ],
    },
    Kind {
        properties: &[ID_RETURNED, must("trace_id_continued", "W3C Trace Context §3.2.4 (a higher version is parsed as 00 and continued)", "the returned headers carry the sent trace-id; skipped when none came back (id_returned)"), must("version_00", "W3C Trace Context §3.2.4 (a vendor sends the version it knows)", "continued traceparent-shaped headers are version 00"), NEW_PARENT_ID],
        name: "trace.version_downgrade",
        summary: "a higher-version traceparent (01-T-P-01-xyz) is continued with the same trace-id and answered as version 00 (TRC-004)",
        params: &[REQUEST, STATUS, RETURN_HEADERS],
    },
    Kind {
        properties: &[
            must("at_most_32", "W3C Trace Context §3.3.1.1 (at most 32 list-members)", "a returned tracestate has at most 32 members; every rule is skipped when no tracestate comes back (unless `required`)"),
            must("whole_members", "W3C Trace Context §3.3.1.3 (entries are removed whole, keys are unique)", "every returned member is a whole key=value entry, no key twice, no cut-off copy of a sent value"),
            must("order_kept", "W3C Trace Context §3.3.1.3 (unmodified members keep their order)", "members forwarded unchanged keep the order they were sent in"),
            must("new_keys_leftmost", "W3C Trace Context §3.3.1.3 (a new or updated key goes to the left)", "new and updated keys come before every forwarded member"),
            should("members_kept", "W3C Trace Context §3.3.1.3 (a vendor removes members only to fit the limits)", "under the 32-member limit no sent member is dropped"),
        ],
        name: "trace.tracestate",
        summary: "a returned tracestate keeps member order, new keys leftmost, at most 32 whole members (TRC-006)",
        params: &[
            REQUEST,
            STATUS,
            param(
                "header",
                D::Str(d::TRACESTATE_HEADER),
                "response header carrying the target's outgoing tracestate",
            ),
            param(
                "required",
                D::Bool(d::TRACESTATE_REQUIRED),
                "a target returning no tracestate fails (else the check is skipped)",
            ),
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::KINDS;
    use crate::families::trace::plan::{InvalidCase, StatusJoin, TracePlan};
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;

    const MINIMAL: &[&str] = &[
        "trace.present",
        "trace.unique",
        "trace.propagated",
        "trace.invalid_ignored",
        "trace.request_id_hygiene",
        "trace.async_status",
        "trace.version_downgrade",
        "trace.tracestate",
    ];

    #[test]
    fn table_defaults_are_the_planned_ones() {
        assert_covers(KINDS, MINIMAL);
        for kind in MINIMAL {
            let CheckPlan::Trace(p) = plan_check(kind, "    request: { path: /a }\n") else {
                panic!("not a trace plan");
            };
            let planned = match *p {
                TracePlan::Present(p) => {
                    let by_name = |n: &str| p.probes.iter().find(|q| q.name == n);
                    let success = by_name("success").expect("the success probe");
                    let unauth = p.probes.iter().find(|q| q.drop_header.is_some());
                    let not_found = by_name("not found").map(|q| match &q.request.url {
                        crate::context::request::UrlPlan::Path(t) => {
                            unrender_uuid(&t.render(&Default::default()))
                        }
                        other => panic!("{other:?}"),
                    });
                    vec![
                        ("status", statuses(success.status.as_ref().unwrap())),
                        ("probe_unauthenticated", word(unauth.is_some())),
                        (
                            "auth_header",
                            unauth.and_then(|q| word(q.drop_header.as_ref()?)),
                        ),
                        ("not_found_path", not_found),
                        ("requests", list(p.probes.iter().skip(3).map(|q| &q.name))),
                        ("id_headers", list(&p.id_headers)),
                    ]
                }
                TracePlan::Unique(u) => vec![
                    ("count", int(u.count)),
                    ("concurrency", int(u.concurrency)),
                    ("within", dur(u.within)),
                    ("trace_header", word(&u.trace_header)),
                    ("id_format", word(u.id_format.name())),
                    ("max_retry_after_wait", dur(u.max_retry_after_wait)),
                ],
                TracePlan::Propagated(p) | TracePlan::VersionDowngrade(p) => vec![
                    ("status", statuses(&p.status)),
                    ("return_headers", list(&p.return_headers)),
                ],
                TracePlan::InvalidIgnored(p) => {
                    assert_eq!(p.cases, InvalidCase::ALL, "all cases by default");
                    vec![
                        ("status", statuses(&p.status)),
                        ("trace_header", word(&p.trace_header)),
                        ("id_format", word(p.id_format.name())),
                    ]
                }
                TracePlan::RequestIdHygiene(p) => vec![
                    ("status", statuses(&p.status)),
                    ("header", word(&p.header)),
                    ("expect_echo", word(p.expect_echo)),
                    ("max_length", int(p.max_length as u64)),
                    ("long_length", int(p.long_length as u64)),
                    ("sanitized_pattern", word(p.sanitized.as_str())),
                ],
                TracePlan::AsyncStatus(p) => vec![
                    ("status", statuses(&p.status)),
                    ("trace_header", word(&p.trace_header)),
                    ("poll_status", statuses(&p.poll_status)),
                    (
                        "status_trace.json",
                        match &p.join {
                            StatusJoin::Json(path) => word(path),
                            StatusJoin::Header(h) => panic!("joined on header {h}"),
                        },
                    ),
                    ("send_traceparent", word(p.send_traceparent)),
                ],
                TracePlan::Tracestate(p) => vec![
                    ("status", statuses(&p.status)),
                    ("header", word(&p.header)),
                    ("required", word(p.required)),
                ],
            };
            assert_planned(KINDS, kind, &planned);
        }
    }
}
