//! JUnit XML through quick-junit: one testsuite per suite, one testcase per
//! check, or per property for a check that judges several
//! (`<check-id>.<property>`, classname `tminus.<suite>`), `<failure>` for a
//! broken property, `<error>` when the harness could not judge, and a passing
//! testcase whose `<system-out>` says WARN for a broken SHOULD. Measured
//! values are properties.
//!
//! Every string is redacted, then made XML-safe ([`xml_text`]): what XML 1.0
//! forbids or CI parsers drop becomes a visible escape, so the report stays
//! well-formed and no evidence is lost after a hostile character.

use std::path::PathBuf;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::{prepare, Reporter};
use crate::events::{CheckResult, Event};
use crate::families::Verdict;
use crate::outcome::Severity;
use crate::redact::Redactor;

pub use crate::model::text::xml_text;

/// What one testcase says: a check's verdict or one property's.
struct Judged<'a> {
    verdict: Verdict,
    message: &'a str,
    expected: Option<&'a str>,
    actual: Option<&'a str>,
}

pub struct Junit {
    path: PathBuf,
    redactor: Redactor,
    report: Report,
    current: Option<TestSuite>,
    /// The run's warnings, a property of every test suite (CI viewers show
    /// suites, not the document).
    warnings: Vec<String>,
    finished: bool,
}

impl Junit {
    pub fn new(path: PathBuf, redactor: Redactor) -> Self {
        Junit {
            path,
            redactor,
            report: Report::new("tminus"),
            current: None,
            warnings: Vec::new(),
            finished: false,
        }
    }

    /// The testcases of one result: one per property when the check judged
    /// several (`<check-id>.<property>`), else one named after the check.
    fn cases(&self, r: &CheckResult) -> Vec<TestCase> {
        let o = &r.outcome;
        if o.assertions.is_empty() {
            let verdict = Judged {
                verdict: o.verdict,
                message: &o.message,
                expected: o.expected.as_deref(),
                actual: o.actual.as_deref(),
            };
            return vec![self.case(r, r.id.clone(), verdict, None)];
        }
        o.assertions
            .iter()
            .map(|a| {
                let verdict = Judged {
                    verdict: a.verdict,
                    message: &a.message,
                    expected: a.expected.as_deref(),
                    actual: a.actual.as_deref(),
                };
                self.case(
                    r,
                    format!("{}.{}", r.id, a.property),
                    verdict,
                    Some(a.severity),
                )
            })
            .collect()
    }

    fn case(
        &self,
        r: &CheckResult,
        name: String,
        j: Judged<'_>,
        severity: Option<Severity>,
    ) -> TestCase {
        let red = |s: &str| xml_text(&self.redactor.redact(s));
        let o = &r.outcome;
        let mut text = String::new();
        if let Some(e) = j.expected {
            text.push_str(&format!("expected: {e}\n"));
        }
        if let Some(a) = j.actual {
            text.push_str(&format!("actual:   {a}\n"));
        }
        for ev in &o.evidence {
            let status = ev.status.map(|s| format!(" -> {s}")).unwrap_or_default();
            text.push_str(&format!("{}: {}{status}\n", ev.label, ev.request));
            if let Some(id) = &ev.request_id {
                text.push_str(&format!("  request id: {id}\n"));
            }
            if let Some(d) = &ev.detail {
                text.push_str(&format!("  {d}\n"));
            }
        }
        let status = match j.verdict {
            Verdict::Pass => TestCaseStatus::success(),
            // A broken SHOULD keeps CI green: a passing testcase that says
            // WARN where people look (`--strict` makes it a failure before
            // it gets here).
            Verdict::Warn => TestCaseStatus::success(),
            // A waived property is neither a pass nor a failure: CI tools
            // (GitHub, GitLab, Jenkins) show a skipped testcase with its
            // message, which names the waiver's date and reason.
            Verdict::Skipped | Verdict::Waived => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(red(j.message));
                if j.verdict == Verdict::Waived {
                    s.set_type("waived");
                    s.set_description(red(&text));
                }
                s
            }
            Verdict::Fail | Verdict::Error => {
                let kind = if j.verdict == Verdict::Fail {
                    NonSuccessKind::Failure
                } else {
                    NonSuccessKind::Error
                };
                let mut s = TestCaseStatus::non_success(kind);
                s.set_message(red(j.message));
                s.set_type(if j.verdict == Verdict::Fail {
                    "check failed"
                } else {
                    "harness error"
                });
                s.set_description(red(&text));
                s
            }
        };
        let mut tc = TestCase::new(xml_text(&name), status);
        if j.verdict == Verdict::Warn {
            tc.set_system_out(red(&format!("WARN: {}\n{text}", j.message)));
        }
        tc.set_classname(xml_text(&format!("tminus.{}", r.suite)));
        tc.set_time(r.duration);
        tc.add_property(Property::new("kind", r.kind));
        if let Some(sev) = severity {
            tc.add_property(Property::new("severity", sev.as_str()));
        }
        if !r.tags.is_empty() {
            tc.add_property(Property::new("tags", xml_text(&r.tags.join(","))));
        }
        for (k, v) in &o.properties {
            tc.add_property(Property::new(xml_text(k), red(&v.text())));
        }
        if let Some(id) = o.evidence.last().and_then(|e| e.request_id.clone()) {
            tc.add_property(Property::new("request_id", red(&id)));
        }
        if !r.requirements.ids.is_empty() {
            tc.add_property(Property::new("requirements", r.requirements.ids.join(",")));
        }
        tc
    }

    fn close_suite(&mut self) {
        if let Some(s) = self.current.take() {
            self.report.add_test_suite(s);
        }
    }
}

impl Reporter for Junit {
    fn event(&mut self, e: &Event) {
        match e {
            Event::RunStarted { warnings, .. } => self.warnings = warnings.clone(),
            Event::SuiteStarted(info) => {
                self.close_suite();
                let red = |s: &str| xml_text(&self.redactor.redact(s));
                let mut s = TestSuite::new(xml_text(&info.name));
                for w in &self.warnings {
                    s.add_property(Property::new("warning", red(w)));
                }
                if !self.warnings.is_empty() {
                    s.set_system_err(red(&format!(
                        "WARNING: {}\n",
                        self.warnings.join("\nWARNING: ")
                    )));
                }
                s.add_property(Property::new("file", red(&info.file.display().to_string())));
                s.add_property(Property::new("target", red(&info.target)));
                if let Some(v) = &info.version {
                    s.add_property(Property::new("suite_version", xml_text(v)));
                }
                self.current = Some(s);
            }
            Event::CheckFinished(r) => {
                let cases = self.cases(r);
                if let Some(s) = &mut self.current {
                    s.add_test_cases(cases);
                }
            }
            Event::SuiteFinished { duration, .. } => {
                if let Some(s) = &mut self.current {
                    s.set_time(*duration);
                }
                self.close_suite();
            }
            Event::RunFinished { duration, .. } => {
                self.report.set_time(*duration);
            }
            _ => {}
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.close_suite();
        prepare(&self.path)?;
        let xml = self
            .report
            .to_string()
            .map_err(|e| std::io::Error::other(format!("cannot serialize JUnit: {e}")))?;
        super::write_atomic(&self.path, self.redactor.redact(&xml).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24 item 12: what XML 1.0 forbids or CI parsers drop is shown,
    /// and the text after it is kept.
    #[test]
    fn hostile_characters_become_visible_escapes() {
        let hostile = "a\u{FFFE}\u{FFFF}\u{10FFFF}\u{FDD0} \u{1b}]0;t kept\r\n\u{85}\u{0}\tend é";
        assert_eq!(
            xml_text(hostile),
            "a\\u{fffe}\\u{ffff}\\u{10ffff}\\u{fdd0} \\u{1b}]0;t kept\r\n\\u{85}\\u{0}\tend é"
        );
        assert_eq!(xml_text("plain ✓ text\n"), "plain ✓ text\n");
        // Through quick-junit: nothing after the ESC is dropped.
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_description(xml_text("before \u{1b}]52;c; after"));
        let mut suite = TestSuite::new("s");
        suite.add_test_case(TestCase::new("c", s));
        let mut report = Report::new("r");
        report.add_test_suite(suite);
        let xml = report.to_string().unwrap();
        assert!(xml.contains("before \\u{1b}]52;c; after"), "{xml}");
    }
}
