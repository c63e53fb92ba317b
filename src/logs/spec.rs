//! The suite's `observe:` block as written (`observe: { logs: ... }`): the
//! one grammar of the log source every log check reads. Planned by
//! `context::observe` (templates resolved, bounds checked, positions kept).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::scalar::{DurationValue, Scalar};

/// `observe:` at suite level: the target's own signals.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObserveSpec {
    /// Where the target's logs are read (one source: `file`, `command` or `loki`).
    #[serde(default)]
    #[schemars(with = "Option<LogsSpec>")]
    pub logs: Option<Spanned<LogsSpec>>,
}

/// `observe.logs`: one source, how its lines are read, and its bounds.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogsSpec {
    /// A file the target appends to (relative: to the current folder); read
    /// from the length it had when each check began.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub file: Option<Spanned<String>>,
    /// A command whose stdout is the logs, as an argv list
    /// (`[kubectl, logs, deploy/api, --since=5m]`); no shell unless `shell: true`.
    #[serde(default)]
    #[schemars(with = "Option<Vec<String>>")]
    pub command: Option<Spanned<Vec<String>>>,
    /// Run `command` (then one string) through `sh -c`.
    #[serde(default)]
    pub shell: Option<bool>,
    /// Loki's base URL (`/loki/api/v1/query_range` is joined), or a path on the target.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub loki: Option<Spanned<String>>,
    /// With `loki`: the LogQL selector (`{app="api"}`, `{app="api"} |= "req"`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub query: Option<Spanned<String>>,
    /// With `loki`: headers sent to it (`X-Scope-OrgID`, `Authorization`).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub headers: BTreeMap<String, Spanned<Scalar>>,
    /// JSON field (dotted: `trace.id`) holding a line's trace id (default `trace_id`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub trace_id: Option<Spanned<String>>,
    /// JSON field holding a line's request id (default `request_id`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub request_id: Option<Spanned<String>>,
    /// JSON field holding a line's message (default `msg`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub message: Option<Spanned<String>>,
    /// Bytes one read keeps at most (`16MiB` by default, at most `256MiB`).
    #[serde(default)]
    #[schemars(with = "Option<Scalar>")]
    pub max_bytes: Option<Spanned<Scalar>>,
    /// Lines one read keeps at most (100000 by default); Loki is asked for
    /// at most 5000 of them per query.
    #[serde(default)]
    #[schemars(with = "Option<u64>")]
    pub max_lines: Option<Spanned<u64>>,
    /// How long one read may take (10s by default, at most 2m).
    #[serde(default)]
    #[schemars(with = "Option<DurationValue>")]
    pub timeout: Option<Spanned<DurationValue>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An argv is read as written: `yes` stays `yes` (not YAML 1.1's true).
    #[test]
    fn a_command_is_read_word_for_word() {
        let s: LogsSpec = serde_saphyr::from_str("command: [yes, \"5\", --since=5m]\n").unwrap();
        let argv = s.command.unwrap().value;
        assert_eq!(argv, ["yes", "5", "--since=5m"]);
    }
}
