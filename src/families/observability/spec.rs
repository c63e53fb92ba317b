//! YAML specs of the observability kinds (`observability.*`, catalogue
//! OBS-001 to OBS-003): the target's own logs judged against what tminus
//! sent, and its RED series per route. The log source is the suite's (`observe: { logs: ... }`, one
//! grammar, `logs::spec`); these kinds say what to send and how long to
//! wait for it to be logged.

use crate::model::scalar::{DurationValue, Scalar};
use crate::spec::kinds::{check_spec, family_kinds, must, param, DefaultValue as D, Kind, Param};
use crate::spec::request::RequestSpec;

/// Every default of the family: serde applies these, `KINDS` prints them.
pub mod defaults {
    use std::time::Duration;

    pub const REQUESTS: u64 = 5;
    /// The most requests one check sends (each is looked for in the logs).
    pub const REQUESTS_MAX: u64 = 200;
    /// Requests looked for in the logs at most; more are sampled down.
    pub const SAMPLE: u64 = 50;
    pub const SHARE: f64 = 1.0;
    pub const DEADLINE: Duration = Duration::from_secs(5);
    pub const DEADLINE_MAX: Duration = Duration::from_secs(300);
    pub const POLL: Duration = Duration::from_millis(250);
    pub const DETECT: bool = true;
    pub const METRICS: &str = "/metrics";
    pub const RATE: &str = "http_requests_total";
    pub const DURATION: &str = "http_request_duration_seconds_count";
    pub const STATUS_LABEL: &str = "status";
    pub const METHOD_LABEL: &str = "method";
    pub const ROUTE_LABEL: &str = "route";
    /// The most routes one check judges.
    pub const ROUTES_MAX: usize = 100;
}

use defaults as d;

fn requests() -> u64 {
    d::REQUESTS
}
fn sample() -> u64 {
    d::SAMPLE
}
fn deadline() -> DurationValue {
    DurationValue(d::DEADLINE)
}
fn poll() -> DurationValue {
    DurationValue(d::POLL)
}
fn detect() -> bool {
    d::DETECT
}
fn metrics() -> String {
    d::METRICS.into()
}
fn rate() -> String {
    d::RATE.into()
}
fn duration() -> String {
    d::DURATION.into()
}
fn status_label() -> String {
    d::STATUS_LABEL.into()
}
fn method_label() -> String {
    d::METHOD_LABEL.into()
}
fn route_label() -> String {
    d::ROUTE_LABEL.into()
}

/// One route of `observability.red_metrics`: `METHOD /template` and a
/// request that calls it.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// `GET /public/v1/contacts`, `POST /public/v1/scenarios/{id}/run`: the
    /// method and the path template as the target's series label them.
    pub route: String,
    /// A request to that route (sent first, so its series exist).
    pub request: RequestSpec,
}

check_spec!(
    /// `observability.logs_correlated`: every request tminus sent appears
    /// in the logs under its trace id (OBS-001).
    LogsCorrelatedSpec {
        /// The request sent (each time with a fresh traceparent).
        pub request: RequestSpec,
        #[serde(default = "requests")]
        pub requests: u64,
        #[serde(default = "sample")]
        pub sample: u64,
        /// The share of the sampled requests that must be found (`100%`, `0.99`).
        #[serde(default)]
        #[schemars(with = "Option<Scalar>")]
        pub share: Option<serde_saphyr::Spanned<Scalar>>,
        #[serde(default = "deadline")]
        pub deadline: DurationValue,
        #[serde(default = "poll")]
        pub poll: DurationValue,
    }
);

check_spec!(
    /// `observability.logs_clean`: no secret and no PII tminus sent appears
    /// in the logs (OBS-002).
    LogsCleanSpec {
        /// The request sent: one that carries the suite's credential and
        /// the personal data to look for (a payment with a card number).
        pub request: RequestSpec,
        /// JSON paths of the request body's personal data (`$.email`).
        #[serde(default)]
        pub pii: Vec<String>,
        /// Also treat every card number (Luhn-valid, 13 to 19 digits) and
        /// email address in the body as personal data.
        #[serde(default = "detect")]
        pub detect: bool,
        #[serde(default = "deadline")]
        pub deadline: DurationValue,
        #[serde(default = "poll")]
        pub poll: DurationValue,
    }
);

check_spec!(
    /// `observability.red_metrics`: every route tminus called has rate,
    /// errors and duration series on the target's `/metrics` (OBS-003).
    RedMetricsSpec {
        pub routes: Vec<RouteSpec>,
        /// The `/metrics` page: a path on the target or an absolute URL.
        #[serde(default = "metrics")]
        pub metrics: String,
        /// The request counter (its rate), by method, route and status.
        #[serde(default = "rate")]
        pub rate: String,
        /// A duration series by method and route (a histogram's or
        /// summary's `_count`, or `_bucket`).
        #[serde(default = "duration")]
        pub duration: String,
        /// The label of the counter's status (the errors are its 5xx).
        #[serde(default = "status_label")]
        pub status_label: String,
        /// A separate error counter by method and route, instead of the
        /// status label.
        #[serde(default)]
        pub errors: Option<String>,
        #[serde(default = "method_label")]
        pub method_label: String,
        #[serde(default = "route_label")]
        pub route_label: String,
    }
);

family_kinds!(
    /// An `observability.*` check as written.
    ObservabilitySpec {
        "observability.logs_correlated" => LogsCorrelated(Box<LogsCorrelatedSpec>),
        "observability.logs_clean" => LogsClean(Box<LogsCleanSpec>),
        "observability.red_metrics" => RedMetrics(Box<RedMetricsSpec>),
    }
);

const DEADLINE: Param = param(
    "deadline",
    D::Duration(d::DEADLINE),
    "how long after its request a line may take to reach the logs",
);
const POLL: Param = param(
    "poll",
    D::Duration(d::POLL),
    "how often the log source is read while waiting",
);

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the observability family.
pub const KINDS: &[Kind] = &[
    Kind {
        name: "observability.logs_correlated",
        summary: "every request tminus sent, with a fresh traceparent, appears in the target's logs under its trace id within a deadline (OBS-001)",
        params: &[
            param("request", D::Required, "the request sent, each time with a new traceparent"),
            param(
                "requests",
                D::Int(d::REQUESTS),
                "how many times it is sent (at most 200)",
            ),
            param(
                "sample",
                D::Int(d::SAMPLE),
                "how many of them are looked for in the logs at most (evenly spread)",
            ),
            param(
                "share",
                D::Share(d::SHARE),
                "the share of the sampled requests that must be found",
            ),
            DEADLINE,
            POLL,
        ],
        properties: &[must(
            "correlated",
            "OBS-001 (seed #5: trace_id in all logs and responses)",
            "each sampled request's trace id (the traceparent tminus sent) is the trace id of a log line (a JSON line's trace id field, or anywhere in a text line); a source that returned no line at all is an error, and a read that hit its cap leaves missing ids undecided",
        )],
    },
    Kind {
        name: "observability.logs_clean",
        summary: "no secret of the suite (in any form the redactor knows) and no personal data tminus sent (`pii:` fields, card numbers, emails) appears in the target's logs (OBS-002)",
        params: &[
            param(
                "request",
                D::Required,
                "the request sent, with the credential and the personal data to look for",
            ),
            param(
                "pii",
                D::List(&[]),
                "JSON paths of the body's personal data",
            ),
            param(
                "detect",
                D::Bool(d::DETECT),
                "also treat the body's card numbers (Luhn) and email addresses as personal data",
            ),
            DEADLINE,
            POLL,
        ],
        properties: &[
            must(
                "no_secrets",
                "OBS-002 (seed #5: JSON logs without PII)",
                "no log line since the request holds a secret of the suite, raw or encoded (base64, percent-, JSON-escaped); the finding names the line, never the value",
            ),
            must(
                "no_pii",
                "OBS-002 (seed #5: JSON logs without PII)",
                "no log line since the request holds a personal value the request carried (separators in card numbers ignored); the finding names the line and the field, never the value",
            ),
        ],
    },
    Kind {
        name: "observability.red_metrics",
        summary: "every route tminus called (method + path template) has request rate, errors and duration series on the target's /metrics, found by label names (OBS-003)",
        params: &[
            param(
                "routes",
                D::Required,
                "`{ route: \"METHOD /template\", request: {...} }` for each route; each request is sent first",
            ),
            param(
                "metrics",
                D::Str(d::METRICS),
                "the /metrics page: a path on the target or an absolute URL",
            ),
            param("rate", D::Str(d::RATE), "the request counter, by method, route and status"),
            param(
                "duration",
                D::Str(d::DURATION),
                "a duration series by method and route",
            ),
            param(
                "status_label",
                D::Str(d::STATUS_LABEL),
                "the counter's status label (errors are its 5xx)",
            ),
            param(
                "errors",
                D::Absent,
                "a separate error counter by method and route, instead of the status label",
            ),
            param("method_label", D::Str(d::METHOD_LABEL), "the method's label"),
            param("route_label", D::Str(d::ROUTE_LABEL), "the path template's label"),
        ],
        properties: &[must(
            "per_route",
            "OBS-003 (seed #5: RED/USE metrics on every endpoint, per route and method)",
            "for each route, after its request was answered: a `rate` series with its method and route (and a status label, or an `errors` series), and a `duration` series with them; a page with no sample at all is an error",
        )],
    },
];

#[cfg(test)]
mod tests {
    use super::KINDS;
    use crate::families::observability::plan::ObservabilityPlan;
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;

    fn planned(kind: &str, fields: &str) -> ObservabilityPlan {
        let src = format!(
            "suite: s\ntarget: {{ base_url: \"http://127.0.0.1:1\" }}\nobserve:\n  logs: {{ file: api.log }}\nchecks:\n  - id: c\n    kind: {kind}\n{fields}"
        );
        match plan_suite(&src).suites.remove(0).checks.remove(0).body {
            CheckPlan::Observability(p) => *p,
            other => panic!("not an observability plan: {other:?}"),
        }
    }

    /// The table's defaults are the planned ones.
    #[test]
    fn table_defaults_are_the_planned_ones() {
        assert_covers(
            KINDS,
            &[
                "observability.logs_correlated",
                "observability.logs_clean",
                "observability.red_metrics",
            ],
        );
        let ObservabilityPlan::RedMetrics(r) = planned(
            "observability.red_metrics",
            "    routes: [{ route: GET /x, request: { path: /x } }]\n",
        ) else {
            panic!("not red_metrics");
        };
        assert_planned(
            KINDS,
            "observability.red_metrics",
            &[
                ("metrics", word(&r.metrics)),
                ("rate", word(&r.rate)),
                ("duration", word(&r.duration)),
                ("status_label", word(&r.status_label)),
                ("errors", r.errors.clone()),
                ("method_label", word(&r.method_label)),
                ("route_label", word(&r.route_label)),
            ],
        );
        let ObservabilityPlan::LogsCorrelated(c) = planned(
            "observability.logs_correlated",
            "    request: { path: /x }\n",
        ) else {
            panic!("not logs_correlated");
        };
        assert_planned(
            KINDS,
            "observability.logs_correlated",
            &[
                ("requests", int(c.requests)),
                ("sample", int(c.sample)),
                ("share", share(c.share)),
                ("deadline", dur(c.deadline)),
                ("poll", dur(c.poll)),
            ],
        );
        let ObservabilityPlan::LogsClean(k) =
            planned("observability.logs_clean", "    request: { path: /x }\n")
        else {
            panic!("not logs_clean");
        };
        assert_planned(
            KINDS,
            "observability.logs_clean",
            &[
                ("pii", list(k.pii.iter().map(|(n, _)| n))),
                ("detect", word(k.detect)),
                ("deadline", dur(k.deadline)),
                ("poll", dur(k.poll)),
            ],
        );
    }
}
