//! The reports for machines: JSON (every change with its rule, level,
//! oasdiff counterpart and place) and JUnit with one testcase per rule of
//! the table, so a CI test view lists the whole rule set, the rules whose
//! changes fail the gate as failures.

use quick_junit::{NonSuccessKind, Property, Report as Junit, TestCase, TestCaseStatus, TestSuite};
use serde_json::{json, Value};

use super::{render, Level, Report, RULES};

/// The JSON report.
pub fn json(r: &Report, fail_on: Level) -> Value {
    let side =
        |s: &super::Side| json!({"source": s.source, "openapi": s.openapi, "version": s.version});
    let changes: Vec<Value> = r
        .changes
        .iter()
        .map(|c| {
            json!({
                "id": c.rule.id,
                "level": c.level().as_str(),
                "oasdiff": (!c.rule.oasdiff.is_empty()).then_some(c.rule.oasdiff),
                "operation": c.operation,
                "at": c.at,
                "property": c.property,
                "message": c.message,
                "allowed": c.allowed,
                "fails": c.fails(fail_on),
            })
        })
        .collect();
    let (word, why) = render::verdict(r, fail_on);
    json!({
        "old": side(&r.old),
        "new": side(&r.new),
        "fail_on": fail_on.as_str(),
        "verdict": word,
        "reason": why,
        "exit_code": r.exit_code(fail_on),
        "version_note": r.version_note,
        "incomplete": r.incomplete,
        "counts": {
            "ERR": r.count(Level::Err),
            "WARN": r.count(Level::Warn),
            "INFO": r.count(Level::Info),
            "allowed": r.allowed(),
            "failing": r.failing(fail_on),
        },
        "changes": changes,
    })
}

/// XML 1.0 refuses most control characters; a document's text may hold any.
fn xml(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// The JUnit report: one testcase per rule.
pub fn junit(r: &Report, fail_on: Level) -> Result<String, String> {
    let mut suite = TestSuite::new("contract diff");
    suite.add_property(Property::new("old", xml(&r.old.source)));
    suite.add_property(Property::new("new", xml(&r.new.source)));
    suite.add_property(Property::new("fail_on", fail_on.as_str()));
    if let Some(note) = &r.version_note {
        suite.add_property(Property::new("version", xml(note)));
    }
    for rule in RULES {
        let mine: Vec<_> = r.changes.iter().filter(|c| c.rule.id == rule.id).collect();
        let listing: String = mine
            .iter()
            .map(|c| {
                let allowed = c
                    .allowed
                    .as_deref()
                    .map(|a| format!(" (allowed: {a})"))
                    .unwrap_or_default();
                format!("{} {}: {}{allowed}\n", c.level(), c.place(), c.message)
            })
            .collect();
        let failing = mine.iter().filter(|c| c.fails(fail_on)).count();
        let status = if failing > 0 {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(xml(&format!(
                "{failing} {} change(s): {}",
                rule.level, rule.summary
            )));
            s.set_type("breaking change");
            s.set_description(xml(&listing));
            s
        } else {
            TestCaseStatus::success()
        };
        let mut tc = TestCase::new(rule.id, status);
        tc.set_classname(format!("tminus.contract-diff.{}", rule.level));
        tc.add_property(Property::new("level", rule.level.as_str()));
        if !rule.oasdiff.is_empty() {
            tc.add_property(Property::new("oasdiff", rule.oasdiff));
        }
        if failing == 0 && !mine.is_empty() {
            tc.set_system_out(xml(&listing));
        }
        suite.add_test_case(tc);
    }
    if let Some(why) = &r.incomplete {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
        s.set_message(xml(why));
        s.set_type("harness error");
        suite.add_test_case(TestCase::new("comparison-complete", s));
    }
    let mut report = Junit::new("tminus contract diff");
    report.add_test_suite(suite);
    report
        .to_string()
        .map_err(|e| format!("cannot serialize JUnit: {e}"))
}
