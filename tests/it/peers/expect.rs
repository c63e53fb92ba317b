//! The expected-verdict tables and the comparison with what tminus reported.
//!
//! Each peer writes down, from its crate's documentation and before tminus
//! runs, the verdict every check (or, where the kind declares properties,
//! every property) must get. A row tminus gets wrong by the spec carries the
//! spec-correct verdict and the reason in `tminus_wrong`, and is left out of
//! the comparison until tminus is fixed. None does today: the two found
//! (`Retry-After: 0` forgiven by rate_limit.recovery, and the dotted delivery
//! id judged as a receiver MUST) were fixed, and their rows now run.

use crate::common::{run_with_json, stderr, stdout};

/// One expected verdict.
#[derive(Debug, Clone, Copy)]
pub struct Expect {
    /// The check's `id` in the peer's suite.
    pub check: &'static str,
    /// A property the kind declares (JSON `assertions[].property`); `None`
    /// compares the check's own verdict.
    pub property: Option<&'static str>,
    /// pass | warn | fail | error | skipped
    pub verdict: &'static str,
    /// Why, from the crate's documented behaviour.
    pub why: &'static str,
    /// For a verdict other than pass: a piece of the check's message that
    /// names the documented cause, so a check failing for another reason does
    /// not count as agreement.
    pub message_has: Option<&'static str>,
    /// Set when tminus disagrees with the spec: `verdict` is then the
    /// spec-correct one and this says what tminus must change.
    pub tminus_wrong: Option<&'static str>,
}

/// A finished tminus run against a peer.
pub struct Report {
    pub json: serde_json::Value,
    console: String,
}

impl Report {
    /// Every check of the (single) suite: `(id, check JSON)`.
    fn checks(&self) -> Vec<(&str, &serde_json::Value)> {
        self.json["suites"][0]["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .map(|c| (c["id"].as_str().expect("id"), c))
            .collect()
    }

    /// The reported verdict of a row: the property's assertion when the row
    /// names one, else the check's verdict.
    fn verdict(&self, e: &Expect) -> Option<(String, String)> {
        let (_, c) = self.checks().into_iter().find(|(id, _)| *id == e.check)?;
        let message = c["message"].as_str().unwrap_or_default().to_owned();
        let verdict = match e.property {
            None => c["verdict"].as_str()?.to_owned(),
            Some(p) => c["assertions"]
                .as_array()?
                .iter()
                .find(|a| a["property"] == p)?["verdict"]
                .as_str()?
                .to_owned(),
        };
        Some((verdict, message))
    }
}

/// Writes `suite` into a fresh folder and runs it against `url` (`only`:
/// `--only` patterns, empty for every check); `envs` carries the secrets.
pub fn run(suite: &str, url: &str, only: &[&str], envs: &[(&str, &str)]) -> Report {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("peer.yaml");
    std::fs::write(&path, suite).expect("write suite");
    let mut extra = vec!["--color", "never"];
    for o in only {
        extra.extend(["--only", o]);
    }
    let (json, out) = run_with_json(dir.path(), &path, url, &extra, envs);
    let text = std::fs::read_to_string(&json).expect("read JSON report");
    Report {
        json: serde_json::from_str(&text).expect("JSON report parses"),
        console: format!("stdout:\n{}\nstderr:\n{}", stdout(&out), stderr(&out)),
    }
}

/// Asserts tminus agrees with every row that has no known disagreement, and
/// that every check the run reported has a row (nothing goes unjudged).
pub fn assert_agrees(peer: &str, report: &Report, table: &[Expect]) {
    let mut wrong = Vec::new();
    for e in table.iter().filter(|e| e.tminus_wrong.is_none()) {
        match report.verdict(e) {
            Some((got, message))
                if got == e.verdict && e.message_has.is_none_or(|m| message.contains(m)) => {}
            Some((got, message)) => wrong.push(format!(
                "{}{}: expected {}{} ({}), tminus said {got}: {message}",
                e.check,
                e.property.map(|p| format!(".{p}")).unwrap_or_default(),
                e.verdict,
                e.message_has
                    .map(|m| format!(" saying `{m}`"))
                    .unwrap_or_default(),
                e.why
            )),
            None => wrong.push(format!(
                "{}{}: not in the report",
                e.check,
                e.property.map(|p| format!(".{p}")).unwrap_or_default()
            )),
        }
    }
    for (id, _) in report.checks() {
        if !table.iter().any(|e| e.check == id) {
            wrong.push(format!("{id}: reported but has no expected verdict"));
        }
    }
    assert!(
        wrong.is_empty(),
        "tminus disagrees with {peer}'s documented behaviour:\n  {}\n{}",
        wrong.join("\n  "),
        report.console
    );
}

/// The comparison itself, on a hand-made report: a property row reads its
/// assertion, a check row the check, and a wrong cause is no agreement.
#[cfg(test)]
mod tests {
    use super::{assert_agrees, Expect, Report};

    fn report() -> Report {
        Report {
            json: serde_json::json!({ "suites": [{ "checks": [{
                "id": "idem-replay",
                "verdict": "warn",
                "message": "marker: no replay marker",
                "assertions": [
                    { "property": "single_effect", "severity": "must", "verdict": "pass" },
                    { "property": "marker", "severity": "should", "verdict": "warn" }
                ]
            }]}]}),
            console: String::new(),
        }
    }

    fn row(property: Option<&'static str>, verdict: &'static str) -> Expect {
        Expect {
            check: "idem-replay",
            property,
            verdict,
            why: "test",
            message_has: None,
            tminus_wrong: None,
        }
    }

    #[test]
    fn rows_read_the_property_or_the_check() {
        let r = report();
        assert_agrees(
            "t",
            &r,
            &[
                row(Some("single_effect"), "pass"),
                row(Some("marker"), "warn"),
                row(None, "warn"),
            ],
        );
    }

    #[test]
    #[should_panic(expected = "idem-replay.single_effect: expected fail")]
    fn a_different_verdict_is_reported() {
        assert_agrees("t", &report(), &[row(Some("single_effect"), "fail")]);
    }

    #[test]
    #[should_panic(expected = "idem-replay.body: not in the report")]
    fn a_missing_property_is_reported() {
        assert_agrees("t", &report(), &[row(Some("body"), "pass")]);
    }

    #[test]
    #[should_panic(expected = "saying `replayed twice`")]
    fn the_right_verdict_for_another_cause_is_reported() {
        let mut e = row(None, "warn");
        e.message_has = Some("replayed twice");
        assert_agrees("t", &report(), &[e]);
    }
}
