//! Planning the observability kinds: the suite's log source (a check
//! without one cannot run), the bounds, and the personal data the request
//! carries, found now when its body is written out (and again when it is
//! sent, for templated values): every such value is registered with the
//! redactor, so no report of the run can print it.

use std::time::Duration;

use super::pii;
use super::spec::{
    defaults as d, LogsCleanSpec, LogsCorrelatedSpec, ObservabilitySpec, RedMetricsSpec,
};
use crate::context::{PlanCtx, RequestPlan};
use crate::logs::LogSource;
use crate::model::jsonpath::JsonPath;

#[derive(Debug, Clone)]
pub struct CorrelatedPlan {
    pub request: RequestPlan,
    pub requests: u64,
    pub sample: u64,
    pub share: f64,
    pub deadline: Duration,
    pub poll: Duration,
    pub logs: LogSource,
}

#[derive(Debug, Clone)]
pub struct CleanPlan {
    pub request: RequestPlan,
    /// `pii:` paths, as written and compiled.
    pub pii: Vec<(String, JsonPath)>,
    pub detect: bool,
    pub deadline: Duration,
    pub poll: Duration,
    pub logs: LogSource,
}

/// One route of `red_metrics`.
#[derive(Debug, Clone)]
pub struct RoutePlan {
    pub method: String,
    pub template: String,
    pub request: RequestPlan,
}

#[derive(Debug, Clone)]
pub struct RedPlan {
    pub routes: Vec<RoutePlan>,
    /// A path on the target or an absolute URL.
    pub metrics: String,
    pub rate: String,
    pub duration: String,
    pub status_label: String,
    pub errors: Option<String>,
    pub method_label: String,
    pub route_label: String,
}

/// A planned `observability.*` check.
#[derive(Debug, Clone)]
pub enum ObservabilityPlan {
    LogsCorrelated(CorrelatedPlan),
    LogsClean(CleanPlan),
    RedMetrics(RedPlan),
}

/// A stand-in for a check planned without a log source (its diagnostic
/// stops the run before anything is sent).
fn no_source() -> LogSource {
    LogSource {
        kind: crate::logs::SourceKind::File(std::path::PathBuf::new()),
        format: Default::default(),
        max_bytes: crate::logs::defaults::MAX_BYTES,
        max_lines: crate::logs::defaults::MAX_LINES,
        timeout: crate::logs::defaults::TIMEOUT,
    }
}

fn source(ctx: &mut PlanCtx<'_>, at: serde_saphyr::Location, kind: &str) -> LogSource {
    match &ctx.logs {
        Some(l) => l.clone(),
        None => {
            ctx.error(
                at,
                format!("`{kind}` reads the target's logs: give the suite `observe: {{ logs: {{ file: PATH }} }}` (or `command: [...]`, or `loki: URL` with `query:`)"),
            );
            no_source()
        }
    }
}

fn waits(
    ctx: &mut PlanCtx<'_>,
    at: serde_saphyr::Location,
    deadline: Duration,
    poll: Duration,
) -> (Duration, Duration) {
    if deadline.is_zero() || deadline > d::DEADLINE_MAX {
        ctx.error(at, "deadline must be more than 0 and at most 5m");
    }
    if poll < Duration::from_millis(10) || poll > deadline.max(Duration::from_millis(10)) {
        ctx.error(at, "poll must be at least 10ms and at most the deadline");
    }
    (
        deadline.clamp(Duration::from_millis(1), d::DEADLINE_MAX),
        poll.max(Duration::from_millis(10)),
    )
}

pub fn plan(ctx: &mut PlanCtx<'_>, spec: &ObservabilitySpec) -> ObservabilityPlan {
    match spec {
        ObservabilitySpec::LogsCorrelated(s) => {
            ObservabilityPlan::LogsCorrelated(correlated(ctx, s))
        }
        ObservabilitySpec::LogsClean(s) => ObservabilityPlan::LogsClean(clean(ctx, s)),
        ObservabilitySpec::RedMetrics(s) => ObservabilityPlan::RedMetrics(red(ctx, s)),
    }
}

/// `100%`, `99.5%` or `0.995`: a share in (0, 1].
fn parse_share(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("share `{t}` is not a share (`100%`, `0.99`)"))?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err(format!("share `{t}` must be more than 0 and at most 100%"))
    }
}

fn correlated(ctx: &mut PlanCtx<'_>, s: &LogsCorrelatedSpec) -> CorrelatedPlan {
    let at = s.id.referenced;
    let logs = source(ctx, at, "observability.logs_correlated");
    let request = ctx.request(&s.request, at);
    if s.requests == 0 || s.requests > d::REQUESTS_MAX {
        ctx.error(
            at,
            format!(
                "requests must be 1 to {}, got {}",
                d::REQUESTS_MAX,
                s.requests
            ),
        );
    }
    if s.sample == 0 {
        ctx.error(at, "sample must be at least 1");
    }
    let share = match &s.share {
        None => d::SHARE,
        Some(v) => parse_share(&v.value.0).unwrap_or_else(|e| {
            ctx.error(v.referenced, e);
            d::SHARE
        }),
    };
    let (deadline, poll) = waits(ctx, at, s.deadline.0, s.poll.0);
    CorrelatedPlan {
        request,
        requests: s.requests.clamp(1, d::REQUESTS_MAX),
        sample: s.sample.max(1),
        share,
        deadline,
        poll,
        logs,
    }
}

fn clean(ctx: &mut PlanCtx<'_>, s: &LogsCleanSpec) -> CleanPlan {
    let at = s.id.referenced;
    let logs = source(ctx, at, "observability.logs_clean");
    let request = ctx.request(&s.request, at);
    let pii: Vec<(String, JsonPath)> = s
        .pii
        .iter()
        .map(|p| (p.clone(), ctx.json_path(p, at)))
        .collect();
    if pii.is_empty() && !s.detect {
        ctx.error(
            at,
            "with `detect: false` and no `pii:` paths there is no personal data to look for",
        );
    }
    // Values written out in the suite are known now: redacted from every
    // report before anything runs.
    if let Some(body) = s.request.json.as_ref() {
        for (_, v) in pii::values(&body.value, &pii, s.detect) {
            ctx.redactor.add(&v);
        }
    }
    let (deadline, poll) = waits(ctx, at, s.deadline.0, s.poll.0);
    CleanPlan {
        request,
        pii,
        detect: s.detect,
        deadline,
        poll,
        logs,
    }
}

impl ObservabilityPlan {
    pub fn requests(&self) -> crate::context::budget::Requests {
        use crate::context::budget::Requests;
        match self {
            ObservabilityPlan::LogsCorrelated(p) => Requests::own(p.requests),
            ObservabilityPlan::LogsClean(_) => Requests::own(1),
            ObservabilityPlan::RedMetrics(p) => Requests::own(p.routes.len() as u64),
        }
    }
}

/// A metric or label name of the text format.
fn name_ok(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn red(ctx: &mut PlanCtx<'_>, s: &RedMetricsSpec) -> RedPlan {
    let at = s.id.referenced;
    if s.routes.is_empty() || s.routes.len() > d::ROUTES_MAX {
        ctx.error(
            at,
            format!("routes must name 1 to {} routes", d::ROUTES_MAX),
        );
    }
    let mut routes = Vec::new();
    for r in &s.routes {
        let (method, template) = r.route.trim().split_once(' ').unwrap_or(("", ""));
        let method = method.to_ascii_uppercase();
        let template = template.trim().to_owned();
        if method.is_empty() || !template.starts_with('/') {
            ctx.error(
                at,
                format!(
                    "route `{}` must be `METHOD /path/template` (`POST /public/v1/scenarios/{{id}}/run`)",
                    r.route
                ),
            );
        }
        let request = ctx.request(&r.request, at);
        if request.method.as_str() != method {
            ctx.error(
                at,
                format!(
                    "route `{}`: its request is a {}, not a {method}",
                    r.route, request.method
                ),
            );
        }
        routes.push(RoutePlan {
            method,
            template,
            request,
        });
    }
    for (what, v) in [
        ("rate", &s.rate),
        ("duration", &s.duration),
        ("status_label", &s.status_label),
        ("method_label", &s.method_label),
        ("route_label", &s.route_label),
    ]
    .into_iter()
    .chain(s.errors.as_ref().map(|e| ("errors", e)))
    {
        if !name_ok(v) {
            ctx.error(at, format!("{what} `{v}` is not a metric or label name"));
        }
    }
    let metrics = s.metrics.trim().to_owned();
    if !metrics.starts_with('/') {
        if let Err(e) = crate::context::check_base_url(&metrics) {
            ctx.error(
                at,
                format!("metrics `{metrics}` {e} (or a path on the target, `/metrics`)"),
            );
        }
    }
    RedPlan {
        routes,
        metrics,
        rate: s.rate.clone(),
        duration: s.duration.clone(),
        status_label: s.status_label.clone(),
        errors: s.errors.clone(),
        method_label: s.method_label.clone(),
        route_label: s.route_label.clone(),
    }
}
