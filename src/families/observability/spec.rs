//! YAML specs of the observability kinds (`observability.*`, catalogue
//! OBS-001 and OBS-002): the target's own logs judged against what tminus
//! sent. The log source is the suite's (`observe: { logs: ... }`, one
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

family_kinds!(
    /// An `observability.*` check as written.
    ObservabilitySpec {
        "observability.logs_correlated" => LogsCorrelated(Box<LogsCorrelatedSpec>),
        "observability.logs_clean" => LogsClean(Box<LogsCleanSpec>),
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
            &["observability.logs_correlated", "observability.logs_clean"],
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
