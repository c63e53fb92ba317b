//! JUnit XML through quick-junit: one testsuite per suite, one testcase per
//! check, or per property for a check that judges several
//! (`<check-id>.<property>`, classname `tminus.<suite>`), `<failure>` for a
//! broken property, `<error>` when the harness could not judge, and a passing
//! testcase whose `<system-out>` says WARN for a broken SHOULD. Measured
//! values are properties.

use std::path::PathBuf;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::{prepare, Reporter};
use crate::events::{CheckResult, Event};
use crate::families::Verdict;
use crate::outcome::Severity;
use crate::redact::Redactor;

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
    finished: bool,
}

impl Junit {
    pub fn new(path: PathBuf, redactor: Redactor) -> Self {
        Junit {
            path,
            redactor,
            report: Report::new("tminus"),
            current: None,
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
        let red = |s: &str| self.redactor.redact(s);
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
            Verdict::Skipped => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(red(j.message));
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
        let mut tc = TestCase::new(name, status);
        if j.verdict == Verdict::Warn {
            tc.set_system_out(red(&format!("WARN: {}\n{text}", j.message)));
        }
        tc.set_classname(format!("tminus.{}", r.suite));
        tc.set_time(r.duration);
        tc.add_property(Property::new("kind", r.kind));
        if let Some(sev) = severity {
            tc.add_property(Property::new("severity", sev.as_str()));
        }
        if !r.tags.is_empty() {
            tc.add_property(Property::new("tags", r.tags.join(",")));
        }
        for (k, v) in &o.properties {
            tc.add_property(Property::new(k.clone(), red(&v.text())));
        }
        if let Some(id) = o.evidence.last().and_then(|e| e.request_id.clone()) {
            tc.add_property(Property::new("request_id", red(&id)));
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
            Event::SuiteStarted(info) => {
                self.close_suite();
                let mut s = TestSuite::new(info.name.clone());
                s.add_property(Property::new("file", info.file.display().to_string()));
                s.add_property(Property::new("target", self.redactor.redact(&info.target)));
                if let Some(v) = &info.version {
                    s.add_property(Property::new("suite_version", v.clone()));
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
