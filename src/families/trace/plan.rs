//! Plans of the trace-correlation kinds: specs validated, defaults applied,
//! templates, regexes and JSON paths compiled (see `suite/trace.rs`).

use std::time::Duration;

use regex::Regex;

use crate::context::request::{RequestPlan, UrlPlan};
use crate::context::PlanCtx;
use crate::families::trace::spec::{
    IdFormat, TraceAsyncStatusSpec, TraceInvalidIgnoredSpec, TracePresentSpec, TracePropagatedSpec,
    TraceRequestIdSpec, TraceSpec, TraceTracestateSpec, TraceUniqueSpec, TraceVersionDowngradeSpec,
};
use crate::model::jsonpath::JsonPath;
use crate::model::scalar::StatusSet;

/// A planned `trace.*` check.
#[derive(Debug, Clone)]
pub enum TracePlan {
    Present(PresentPlan),
    Unique(UniquePlan),
    Propagated(PropagatedPlan),
    InvalidIgnored(InvalidIgnoredPlan),
    RequestIdHygiene(RequestIdPlan),
    AsyncStatus(AsyncStatusPlan),
    VersionDowngrade(PropagatedPlan),
    Tracestate(TracestatePlan),
}

/// One request of a `trace.present` sample.
#[derive(Debug, Clone)]
pub struct Probe {
    pub name: String,
    pub request: RequestPlan,
    pub status: Option<StatusSet>,
    /// A suite header removed before sending (the unauthenticated probe).
    pub drop_header: Option<String>,
}

#[derive(Debug, Clone)]
pub struct PresentPlan {
    pub probes: Vec<Probe>,
    pub id_headers: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct UniquePlan {
    pub request: RequestPlan,
    pub count: u64,
    pub concurrency: u64,
    pub within: Duration,
    pub trace_header: String,
    pub id_format: IdFormat,
    pub max_retry_after_wait: Duration,
}

#[derive(Debug, Clone)]
pub struct PropagatedPlan {
    pub request: RequestPlan,
    pub status: StatusSet,
    pub return_headers: Vec<String>,
}

/// One way a traceparent can be invalid (W3C Trace Context §3.2 and its
/// processing model), or a tracestate sent without any traceparent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidCase {
    Uppercase,
    ZeroTraceId,
    ZeroParentId,
    VersionFf,
    ShortTraceId,
    LongParentId,
    ExtraField,
    TracestateOnly,
}

impl InvalidCase {
    pub const ALL: &'static [InvalidCase] = &[
        InvalidCase::Uppercase,
        InvalidCase::ZeroTraceId,
        InvalidCase::ZeroParentId,
        InvalidCase::VersionFf,
        InvalidCase::ShortTraceId,
        InvalidCase::LongParentId,
        InvalidCase::ExtraField,
        InvalidCase::TracestateOnly,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            InvalidCase::Uppercase => "uppercase",
            InvalidCase::ZeroTraceId => "zero-trace-id",
            InvalidCase::ZeroParentId => "zero-parent-id",
            InvalidCase::VersionFf => "version-ff",
            InvalidCase::ShortTraceId => "short-trace-id",
            InvalidCase::LongParentId => "long-parent-id",
            InvalidCase::ExtraField => "extra-field",
            InvalidCase::TracestateOnly => "tracestate-only",
        }
    }

    /// The `(traceparent, tracestate)` to send, built around a fresh valid
    /// `trace_id` (32 lowercase hex) and `parent_id` (16 lowercase hex).
    pub fn headers(&self, trace_id: &str, parent_id: &str) -> (Option<String>, Option<String>) {
        let tp = |v: &str, t: &str, p: &str, rest: &str| Some(format!("{v}-{t}-{p}-01{rest}"));
        match self {
            InvalidCase::Uppercase => (
                tp(
                    "00",
                    &trace_id.to_ascii_uppercase(),
                    &parent_id.to_ascii_uppercase(),
                    "",
                ),
                None,
            ),
            InvalidCase::ZeroTraceId => (tp("00", &"0".repeat(32), parent_id, ""), None),
            InvalidCase::ZeroParentId => (tp("00", trace_id, &"0".repeat(16), ""), None),
            InvalidCase::VersionFf => (tp("ff", trace_id, parent_id, ""), None),
            InvalidCase::ShortTraceId => (tp("00", &trace_id[..31], parent_id, ""), None),
            InvalidCase::LongParentId => (tp("00", trace_id, &format!("{parent_id}0"), ""), None),
            InvalidCase::ExtraField => (tp("00", trace_id, parent_id, "-extra"), None),
            InvalidCase::TracestateOnly => (None, Some("tminus=t61rcWkgMzE".into())),
        }
    }
}

#[derive(Debug, Clone)]
pub struct InvalidIgnoredPlan {
    pub request: RequestPlan,
    pub status: StatusSet,
    pub trace_header: String,
    pub id_format: IdFormat,
    pub cases: Vec<InvalidCase>,
}

#[derive(Debug, Clone)]
pub struct RequestIdPlan {
    pub request: RequestPlan,
    pub status: StatusSet,
    pub header: String,
    pub expect_echo: bool,
    pub max_length: usize,
    pub long_length: usize,
    pub sanitized: Regex,
}

/// How the async status resource is joined back to the starting request.
#[derive(Debug, Clone)]
pub enum StatusJoin {
    Json(JsonPath),
    Header(String),
}

#[derive(Debug, Clone)]
pub struct AsyncStatusPlan {
    pub request: RequestPlan,
    pub status: StatusSet,
    pub trace_header: String,
    pub poll_status: StatusSet,
    pub join: StatusJoin,
    pub send_traceparent: bool,
}

#[derive(Debug, Clone)]
pub struct TracestatePlan {
    pub request: RequestPlan,
    pub status: StatusSet,
    pub header: String,
    pub required: bool,
}

const MAX_COUNT: u64 = 100_000;
const MAX_CONCURRENCY: u64 = 64;

impl PlanCtx<'_> {
    pub fn plan_trace(&mut self, spec: &TraceSpec) -> TracePlan {
        match spec {
            TraceSpec::Present(s) => TracePlan::Present(self.trace_present(s)),
            TraceSpec::Unique(s) => TracePlan::Unique(self.trace_unique(s)),
            TraceSpec::Propagated(s) => TracePlan::Propagated(self.trace_propagated(s)),
            TraceSpec::InvalidIgnored(s) => TracePlan::InvalidIgnored(self.trace_invalid(s)),
            TraceSpec::RequestIdHygiene(s) => TracePlan::RequestIdHygiene(self.trace_rid(s)),
            TraceSpec::AsyncStatus(s) => TracePlan::AsyncStatus(self.trace_async(s)),
            TraceSpec::VersionDowngrade(s) => TracePlan::VersionDowngrade(self.trace_downgrade(s)),
            TraceSpec::Tracestate(s) => TracePlan::Tracestate(self.trace_tracestate(s)),
        }
    }

    fn header_name(&mut self, name: &str, at: serde_saphyr::Location, what: &str) {
        if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            self.error(at, format!("{what} `{name}` is not a valid header name"));
        }
    }

    fn trace_present(&mut self, s: &TracePresentSpec) -> PresentPlan {
        let at = s.id.referenced;
        let base = self.request(&s.request, at);
        let mut probes = vec![Probe {
            name: "success".into(),
            request: base.clone(),
            status: Some(s.status.clone()),
            drop_header: None,
        }];
        let unauthenticated = s.probe_unauthenticated.unwrap_or_else(|| {
            self.profile.pick(
                false,
                crate::families::trace::spec::defaults::PROBE_UNAUTHENTICATED,
            )
        });
        if unauthenticated {
            self.header_name(&s.auth_header, at, "auth_header");
            probes.push(Probe {
                name: format!("without {}", s.auth_header),
                request: base.clone(),
                status: Some(StatusSet::single(401)),
                drop_header: Some(s.auth_header.clone()),
            });
        }
        if let Some(p) = &s.not_found_path {
            if !p.starts_with('/') {
                self.error(at, format!("not_found_path `{p}` must start with `/`"));
            }
            let tpl = self.template_at(p, at);
            probes.push(Probe {
                name: "not found".into(),
                request: RequestPlan {
                    method: reqwest::Method::GET,
                    url: UrlPlan::Path(tpl),
                    headers: Vec::new(),
                    query: Vec::new(),
                    body: crate::context::BodyPlan::None,
                    timeout: None,
                },
                status: Some(StatusSet::single(404)),
                drop_header: None,
            });
        }
        for (i, r) in s.requests.iter().enumerate() {
            probes.push(Probe {
                name: r
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("request {}", i + 1)),
                request: self.request(&r.request, at),
                status: r.status.as_ref().map(|s| s.value.clone()),
                drop_header: None,
            });
        }
        if s.id_headers.is_empty() {
            self.error(at, "id_headers must name at least one header");
        }
        for h in &s.id_headers {
            self.header_name(h, at, "id_headers entry");
        }
        PresentPlan {
            probes,
            id_headers: s.id_headers.clone(),
        }
    }

    fn trace_unique(&mut self, s: &TraceUniqueSpec) -> UniquePlan {
        let at = s.id.referenced;
        if !(2..=MAX_COUNT).contains(&s.count) {
            self.error(
                at,
                format!("count must be from 2 to {MAX_COUNT}, got {}", s.count),
            );
        }
        if !(1..=MAX_CONCURRENCY).contains(&s.concurrency) {
            self.error(
                at,
                format!(
                    "concurrency must be from 1 to {MAX_CONCURRENCY}, got {}",
                    s.concurrency
                ),
            );
        }
        if s.within.0.is_zero() {
            self.error(at, "within must be longer than zero");
        }
        self.header_name(&s.trace_header, at, "trace_header");
        UniquePlan {
            request: self.request(&s.request, at),
            count: s.count.clamp(2, MAX_COUNT),
            concurrency: s.concurrency.clamp(1, MAX_CONCURRENCY),
            within: s.within.0,
            trace_header: s.trace_header.clone(),
            id_format: s.id_format,
            max_retry_after_wait: s.max_retry_after_wait.0,
        }
    }

    fn trace_propagated(&mut self, s: &TracePropagatedSpec) -> PropagatedPlan {
        self.propagated_plan(s.id.referenced, &s.request, &s.status, &s.return_headers)
    }

    /// TRC-004 judges like TRC-001 (same parameters), with another traceparent.
    fn trace_downgrade(&mut self, s: &TraceVersionDowngradeSpec) -> PropagatedPlan {
        self.propagated_plan(s.id.referenced, &s.request, &s.status, &s.return_headers)
    }

    fn propagated_plan(
        &mut self,
        at: serde_saphyr::Location,
        request: &crate::spec::request::RequestSpec,
        status: &StatusSet,
        return_headers: &[String],
    ) -> PropagatedPlan {
        if return_headers.is_empty() {
            self.error(at, "return_headers must name at least one header");
        }
        for h in return_headers {
            self.header_name(h, at, "return_headers entry");
        }
        PropagatedPlan {
            request: self.request(request, at),
            status: status.clone(),
            return_headers: return_headers.to_vec(),
        }
    }

    fn trace_tracestate(&mut self, s: &TraceTracestateSpec) -> TracestatePlan {
        let at = s.id.referenced;
        self.header_name(&s.header, at, "header");
        TracestatePlan {
            request: self.request(&s.request, at),
            status: s.status.clone(),
            header: s.header.clone(),
            required: s.required,
        }
    }

    fn trace_invalid(&mut self, s: &TraceInvalidIgnoredSpec) -> InvalidIgnoredPlan {
        let at = s.id.referenced;
        self.header_name(&s.trace_header, at, "trace_header");
        let cases = match &s.cases {
            None => InvalidCase::ALL.to_vec(),
            Some(names) => {
                let mut out = Vec::new();
                for n in names {
                    match InvalidCase::ALL.iter().find(|c| c.name() == n.value) {
                        Some(c) => out.push(*c),
                        None => {
                            let valid: Vec<&str> =
                                InvalidCase::ALL.iter().map(|c| c.name()).collect();
                            let hint = crate::model::text::suggest(&n.value, valid.iter().copied())
                                .map(|s| format!(", did you mean `{s}`?"))
                                .unwrap_or_default();
                            self.error(
                                n.referenced,
                                format!(
                                    "unknown case `{}`{hint} (valid: {})",
                                    n.value,
                                    valid.join(", ")
                                ),
                            );
                        }
                    }
                }
                if names.is_empty() {
                    self.error(at, "cases is empty: nothing would be checked");
                }
                out
            }
        };
        InvalidIgnoredPlan {
            request: self.request(&s.request, at),
            status: s.status.clone(),
            trace_header: s.trace_header.clone(),
            id_format: s.id_format,
            cases,
        }
    }

    fn trace_rid(&mut self, s: &TraceRequestIdSpec) -> RequestIdPlan {
        let at = s.id.referenced;
        self.header_name(&s.header, at, "header");
        if s.max_length < 36 {
            self.error(at, "max_length must be at least 36 (a UUID)");
        }
        if s.long_length <= s.max_length || s.long_length > 64 * 1024 {
            self.error(
                at,
                format!(
                    "long_length must be above max_length ({}) and at most 65536",
                    s.max_length
                ),
            );
        }
        RequestIdPlan {
            request: self.request(&s.request, at),
            status: s.status.clone(),
            header: s.header.clone(),
            expect_echo: s.expect_echo,
            max_length: s.max_length,
            long_length: s.long_length,
            sanitized: self.regex(&s.sanitized_pattern, at),
        }
    }

    fn trace_async(&mut self, s: &TraceAsyncStatusSpec) -> AsyncStatusPlan {
        let at = s.id.referenced;
        self.header_name(&s.trace_header, at, "trace_header");
        let join = match &s.status_trace {
            None => StatusJoin::Json(
                JsonPath::parse(crate::families::trace::spec::defaults::STATUS_TRACE_JSON)
                    .expect("static path"),
            ),
            Some(st) => match (&st.value.json, &st.value.header) {
                (Some(p), None) => StatusJoin::Json(self.json_path(p, st.referenced)),
                (None, Some(h)) => {
                    self.header_name(h, st.referenced, "status_trace.header");
                    StatusJoin::Header(h.clone())
                }
                _ => {
                    self.error(
                        st.referenced,
                        "status_trace needs exactly one of `json` or `header`",
                    );
                    StatusJoin::Header(s.trace_header.clone())
                }
            },
        };
        AsyncStatusPlan {
            request: self.request(&s.request, at),
            status: s.status.clone(),
            trace_header: s.trace_header.clone(),
            poll_status: s.poll_status.clone(),
            join,
            send_traceparent: s.send_traceparent,
        }
    }
}

/// Plans a check of the trace family.
pub fn plan(ctx: &mut PlanCtx<'_>, spec: &TraceSpec) -> TracePlan {
    ctx.plan_trace(spec)
}

impl TracePlan {
    /// The most requests this check sends (`context::budget`).
    pub fn requests(&self) -> crate::context::budget::Requests {
        use crate::context::budget::Requests;
        match self {
            // A probe without the credential header (`probe_unauthenticated`)
            // is not of the suite's credential when that header carries it:
            // in the maximum, not in what must be sent.
            TracePlan::Present(p) => Requests {
                spare: p.probes.iter().filter(|q| q.drop_header.is_some()).count() as u64,
                ..Requests::own(p.probes.len() as u64)
            },
            // Runs after every other check and counts the ids their
            // answers carried: past its own least, its requests are sent
            // only when those lack them.
            TracePlan::Unique(u) => Requests {
                need: crate::context::budget::Need::Pool,
                spare: u.count - u.count.min(super::spec::defaults::OWN_AT_LEAST),
                ..Requests::own(u.count)
            },
            // One request each (per case, per id), and one sent again
            // only after a 429 (the polite client's resend).
            TracePlan::Propagated(_) | TracePlan::VersionDowngrade(_) => Requests {
                spare: 1,
                ..Requests::own(2)
            },
            TracePlan::InvalidIgnored(p) => Requests {
                spare: 1,
                ..Requests::own(p.cases.len() as u64 + 1)
            },
            TracePlan::RequestIdHygiene(_) => Requests {
                spare: 1,
                ..Requests::own(4)
            },
            // the create, and polls of its status (one at least; the
            // others only while the status is not final)
            TracePlan::AsyncStatus(_) => Requests {
                spare: 4,
                ..Requests::own(6)
            },
            TracePlan::Tracestate(_) => Requests::own(3),
        }
    }
}
