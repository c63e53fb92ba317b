//! The JSON summary: one document per run, `version` first, shaped by the
//! committed schema `schema/report.schema.json` (checked by a test).

use std::path::PathBuf;
use std::time::SystemTime;

use serde::Serialize;

use super::{prepare, Reporter};
use crate::events::{Event, Summary};
use crate::families::{Evidence, Verdict};
use crate::outcome::{Assertion, PropValue};
use crate::redact::Redactor;

pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
struct JsonReport {
    version: u32,
    tool: &'static str,
    tool_version: &'static str,
    started_at: String,
    duration_ms: f64,
    verdict: &'static str,
    exit_code: i32,
    cancelled: bool,
    totals: Totals,
    suites: Vec<JsonSuite>,
    /// What the whole run must be read with (`--insecure`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    /// The names (never the values) of the secrets this report was redacted of.
    secrets_redacted: Vec<String>,
    /// Requirement coverage per catalogue point.
    coverage: Vec<crate::coverage::CoverageRow>,
    /// Every waiver of the run and what it did.
    waivers: Vec<JsonWaiver>,
}

#[derive(Serialize)]
struct JsonWaiver {
    suite: String,
    check: String,
    #[serde(flatten)]
    waiver: crate::waiver::WaiverNote,
}

#[derive(Serialize, Default)]
struct Totals {
    checks: usize,
    passed: usize,
    failed: usize,
    errored: usize,
    /// Of the errored, those only inconclusive (exit 4 when nothing else).
    inconclusive: usize,
    skipped: usize,
    warned: usize,
    waived: usize,
    /// Seconds the run waited for the target's quota (the checks'
    /// `quota_wait_s` added up).
    quota_wait_s: f64,
}

#[derive(Serialize)]
struct JsonSuite {
    name: String,
    file: String,
    /// SHA-256 (hex) of the suite file as it was run.
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    target: String,
    /// `standard` or `botix`.
    profile: &'static str,
    checks: Vec<JsonCheck>,
    /// `contract:`: the per-operation figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    contract: Option<crate::model::contract::ContractSummary>,
}

#[derive(Serialize)]
struct JsonCheck {
    id: String,
    kind: &'static str,
    tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    verdict: Verdict,
    /// An error only because the evidence could go either way.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    inconclusive: bool,
    duration_ms: f64,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    actual: Option<String>,
    evidence: Vec<Evidence>,
    properties: serde_json::Map<String, serde_json::Value>,
    /// One row per property for a check that judges several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    assertions: Vec<Assertion>,
    /// The catalogue requirements the kind certifies, and their point.
    requirements: &'static [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    point: Option<u8>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    waivers: Vec<crate::waiver::WaiverNote>,
}

fn prop_json(v: &PropValue) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()))
}

pub struct Json {
    path: PathBuf,
    redactor: Redactor,
    started_at: SystemTime,
    warnings: Vec<String>,
    suites: Vec<JsonSuite>,
    summary: Summary,
    duration_ms: f64,
    cancelled: bool,
    finished: bool,
    quota_wait_s: f64,
    /// Each result's requirements and verdict, for the coverage table.
    covered: Vec<(crate::coverage::Requirements, Verdict)>,
    waivers: Vec<JsonWaiver>,
}

impl Json {
    pub fn new(path: PathBuf, redactor: Redactor) -> Self {
        Json {
            path,
            redactor,
            started_at: SystemTime::now(),
            warnings: Vec::new(),
            suites: Vec::new(),
            summary: Summary::default(),
            duration_ms: 0.0,
            cancelled: true,
            finished: false,
            quota_wait_s: 0.0,
            covered: Vec::new(),
            waivers: Vec::new(),
        }
    }
}

impl Reporter for Json {
    fn event(&mut self, e: &Event) {
        match e {
            Event::RunStarted {
                started_at,
                warnings,
                ..
            } => {
                self.started_at = *started_at;
                self.warnings = warnings.clone();
            }
            Event::SuiteStarted(info) => self.suites.push(JsonSuite {
                name: info.name.clone(),
                file: info.file.display().to_string(),
                digest: info.digest.clone(),
                version: info.version.clone(),
                target: info.target.clone(),
                profile: info.profile,
                checks: Vec::new(),
                contract: None,
            }),
            Event::ContractSummary(c) => {
                if let Some(s) = self.suites.iter_mut().rev().find(|s| s.name == c.suite) {
                    s.contract = Some((**c).clone());
                }
            }
            Event::CheckFinished(r) => {
                self.summary.add_outcome(&r.outcome);
                let o = &r.outcome;
                self.quota_wait_s += o.quota_wait_s();
                // Typed values: numbers are written as JSON numbers, text as
                // strings (never parsed back), so an id like "0042" stays text.
                let props = o
                    .properties
                    .iter()
                    .map(|(k, v)| (k.clone(), prop_json(v)))
                    .collect();
                self.covered.push((r.requirements, o.verdict));
                self.waivers.extend(o.waivers.iter().map(|w| JsonWaiver {
                    suite: r.suite.clone(),
                    check: r.id.clone(),
                    waiver: w.clone(),
                }));
                if let Some(s) = self.suites.last_mut() {
                    s.checks.push(JsonCheck {
                        id: r.id.clone(),
                        kind: r.kind,
                        tags: r.tags.clone(),
                        description: r.description.clone(),
                        verdict: o.verdict,
                        inconclusive: o.inconclusive,
                        duration_ms: r.duration.as_secs_f64() * 1000.0,
                        message: o.message.clone(),
                        expected: o.expected.clone(),
                        actual: o.actual.clone(),
                        evidence: o.evidence.clone(),
                        properties: props,
                        assertions: o.assertions.clone(),
                        requirements: r.requirements.ids,
                        point: r.requirements.point,
                        waivers: o.waivers.clone(),
                    });
                }
            }
            Event::RunFinished {
                duration,
                cancelled,
                ..
            } => {
                self.duration_ms = duration.as_secs_f64() * 1000.0;
                self.cancelled = *cancelled;
            }
            _ => {}
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let s = self.summary;
        let report = JsonReport {
            version: FORMAT_VERSION,
            tool: "tminus",
            tool_version: env!("CARGO_PKG_VERSION"),
            started_at: humantime::format_rfc3339_millis(self.started_at).to_string(),
            duration_ms: self.duration_ms,
            verdict: if self.cancelled { "error" } else { s.verdict() },
            exit_code: if self.cancelled {
                crate::exit::RUN_BROKEN
            } else {
                s.exit_code()
            },
            cancelled: self.cancelled,
            totals: Totals {
                checks: s.total(),
                passed: s.passed,
                failed: s.failed,
                errored: s.errored,
                inconclusive: s.inconclusive,
                warned: s.warned,
                waived: s.waived,
                skipped: s.skipped,
                quota_wait_s: (self.quota_wait_s * 1000.0).round() / 1000.0,
            },
            suites: std::mem::take(&mut self.suites),
            warnings: std::mem::take(&mut self.warnings),
            secrets_redacted: self.redactor.names(),
            coverage: crate::coverage::table(self.covered.iter().map(|(r, v)| (r, *v))),
            waivers: std::mem::take(&mut self.waivers),
        };
        prepare(&self.path)?;
        let text = serde_json::to_string_pretty(&report).map_err(std::io::Error::other)?;
        super::write_atomic(&self.path, (self.redactor.redact(&text) + "\n").as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{CheckResult, SuiteInfo};
    use crate::outcome::{prop, Outcome};
    use std::time::Duration;

    #[test]
    fn properties_keep_their_type_and_text_is_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        let redactor = Redactor::new();
        redactor.add("s3cr3t-value");
        let mut j = Json::new(path.clone(), redactor);
        j.event(&Event::SuiteStarted(SuiteInfo {
            name: "s".into(),
            file: "s.yaml".into(),
            digest: None,
            version: None,
            target: "http://127.0.0.1:1".into(),
            checks: 1,
            profile: "standard",
        }));
        let outcome = Outcome::pass("ok").with_properties(vec![
            prop("attempts", 3u32),
            prop("p95_ms", PropValue::rounded(1.23456, 3)),
            prop("request_id", "0042"),
            prop("capped", false),
            prop("token", "Bearer s3cr3t-value"),
            // The compatibility path: a string stays a string.
            ("legacy".to_owned(), PropValue::from("12".to_owned())),
        ]);
        j.event(&Event::CheckFinished(Box::new(CheckResult {
            suite: "s".into(),
            id: "c".into(),
            kind: "steps",
            tags: Vec::new(),
            description: None,
            requirements: Default::default(),
            outcome,
            started_at: SystemTime::now(),
            duration: Duration::from_millis(5),
        })));
        j.event(&Event::RunFinished {
            summary: Summary {
                passed: 1,
                ..Summary::default()
            },
            duration: Duration::from_millis(6),
            cancelled: false,
        });
        j.finish().unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let p = &v["suites"][0]["checks"][0]["properties"];
        assert_eq!(
            *p,
            serde_json::json!({
                "attempts": 3,
                "p95_ms": 1.235,
                "request_id": "0042",
                "capped": false,
                "token": "Bearer [REDACTED]",
                "legacy": "12"
            })
        );
    }
}
