//! What a check concludes: a verdict, the expected and actual values that
//! explain it, and the evidence (request line, status, request id) a person
//! can attach to a ticket.
//!
//! A check that judges several independent properties (one execution per key,
//! the same body, a replay marker) reports one [`Assertion`] per property, so
//! a partial conformer reads as what it is. Each property has a severity
//! (RFC 2119 MUST or SHOULD, from the kind's table, overridable per check);
//! the runner applies it ([`Outcome::apply_severity`]): a broken SHOULD is a
//! warning unless the run is strict. A property that was not exercised is an
//! error, never a pass.

use std::borrow::Cow;
use std::fmt;

use serde::{Serialize, Serializer};

use crate::http::{Exchange, TransportError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    /// The target broke the property under test.
    Fail,
    /// The harness could not judge (unreachable target, bad setup).
    Error,
    Skipped,
    /// A SHOULD property was broken: reported, not failed (unless strict).
    Warn,
    /// A broken property under a waiver in force (`waive:`): neither passed
    /// nor failed, reported with the waiver's reason (see `waiver`).
    Waived,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
            Verdict::Skipped => "skipped",
            Verdict::Warn => "warn",
            Verdict::Waived => "waived",
        }
    }

    /// How bad a verdict is, for folding several into one: error, then fail,
    /// then warn, then waived, then pass, then skipped.
    fn weight(self) -> u8 {
        match self {
            Verdict::Error => 5,
            Verdict::Fail => 4,
            Verdict::Warn => 3,
            Verdict::Waived => 2,
            Verdict::Pass => 1,
            Verdict::Skipped => 0,
        }
    }
}

/// RFC 2119 requirement level of a property.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Contract: a broken MUST fails the check.
    #[serde(alias = "MUST")]
    Must,
    /// Advice: a broken SHOULD is a warning (a failure under `--strict`).
    #[serde(alias = "SHOULD")]
    Should,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Must => "MUST",
            Severity::Should => "SHOULD",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One property judged by a check: its own verdict, reason and evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Assertion {
    /// The property's name as the kind's table declares it (`single_effect`).
    pub property: &'static str,
    /// Set by the runner from the kind's table and the check's `severity:`.
    pub severity: Severity,
    pub verdict: Verdict,
    /// One line: what was observed, or what was not exercised.
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    /// An error because the evidence could go either way (the machine's
    /// noise, too few samples, the harness's own pool), not because tminus
    /// could not work: its own exit code (`exit::INCONCLUSIVE`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inconclusive: bool,
}

impl Assertion {
    fn new(property: &'static str, verdict: Verdict, message: impl Into<String>) -> Self {
        Assertion {
            property,
            severity: Severity::Must,
            verdict,
            message: message.into(),
            expected: None,
            actual: None,
            inconclusive: false,
        }
    }
    /// The property held; `message` says on what evidence.
    pub fn pass(property: &'static str, message: impl Into<String>) -> Self {
        Self::new(property, Verdict::Pass, message)
    }
    pub fn fail(
        property: &'static str,
        message: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        Assertion {
            expected: Some(expected.into()),
            actual: Some(actual.into()),
            ..Self::new(property, Verdict::Fail, message)
        }
    }
    /// The property could not be judged: `message` names what was not
    /// exercised. Never a pass.
    pub fn not_exercised(property: &'static str, message: impl Into<String>) -> Self {
        Self::new(property, Verdict::Error, message)
    }
    /// The evidence could go either way: never a pass, never a fail.
    pub fn inconclusive(property: &'static str, message: impl Into<String>) -> Self {
        Assertion {
            inconclusive: true,
            ..Self::new(property, Verdict::Error, message)
        }
    }
    /// The property does not apply to this run (a policy turned it off).
    pub fn skipped(property: &'static str, message: impl Into<String>) -> Self {
        Self::new(property, Verdict::Skipped, message)
    }
    /// Pass when `ok`, else fail with `expected`/`actual`.
    pub fn check(
        property: &'static str,
        ok: bool,
        pass: impl Into<String>,
        fail: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        if ok {
            Self::pass(property, pass)
        } else {
            Self::fail(property, fail, expected, actual)
        }
    }
}

/// One request/response (or failed request) behind a verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Evidence {
    pub label: String,
    /// `POST http://host/path`
    pub request: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `X-Request-Id: 6f1c...`, the id to quote in a ticket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<f64>,
    /// A short excerpt of the response body, or the transport error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

const EXCERPT: usize = 400;

impl Evidence {
    pub fn from_exchange(label: impl Into<String>, ex: &Exchange) -> Self {
        let text = ex.response.text();
        let detail = if text.is_empty() {
            None
        } else if text.chars().count() > EXCERPT {
            Some(format!(
                "{}…",
                text.chars().take(EXCERPT).collect::<String>()
            ))
        } else {
            Some(text)
        };
        Evidence {
            label: label.into(),
            request: ex.request.line(),
            status: Some(ex.status()),
            request_id: ex.response.request_id().map(|(k, v)| format!("{k}: {v}")),
            elapsed_ms: Some(ex.elapsed.as_secs_f64() * 1000.0),
            detail,
        }
    }

    pub fn from_transport(label: impl Into<String>, e: &TransportError) -> Self {
        Evidence {
            label: label.into(),
            request: e.request_line().to_owned(),
            status: None,
            request_id: None,
            elapsed_ms: None,
            detail: Some(e.to_string()),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub verdict: Verdict,
    /// One line: what happened.
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    pub evidence: Vec<Evidence>,
    /// Measured values (latencies, counts) and identifiers, typed: the JSON
    /// report writes numbers as numbers, JUnit and HTML their text form.
    pub properties: Vec<(String, PropValue)>,
    /// One verdict per property, for kinds that judge several; empty for a
    /// kind that judges one (the outcome is then that property's verdict).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assertions: Vec<Assertion>,
    /// The check's waivers and what each did in this run (`waiver`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waivers: Vec<crate::model::waiver::WaiverNote>,
    /// An error only because the evidence could go either way (see
    /// [`Assertion::inconclusive`]); folded from the assertions.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inconclusive: bool,
}

impl Outcome {
    pub fn pass(message: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Pass,
            message: message.into(),
            expected: None,
            actual: None,
            evidence: Vec::new(),
            properties: Vec::new(),
            assertions: Vec::new(),
            waivers: Vec::new(),
            inconclusive: false,
        }
    }
    pub fn fail(
        message: impl Into<String>,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        Outcome {
            verdict: Verdict::Fail,
            message: message.into(),
            expected: Some(expected.into()),
            actual: Some(actual.into()),
            evidence: Vec::new(),
            properties: Vec::new(),
            assertions: Vec::new(),
            waivers: Vec::new(),
            inconclusive: false,
        }
    }
    pub fn error(message: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Error,
            ..Outcome::pass(message)
        }
    }
    /// An error only because the evidence could go either way.
    pub fn inconclusive(message: impl Into<String>) -> Self {
        Outcome {
            inconclusive: true,
            ..Outcome::error(message)
        }
    }
    pub fn skipped(message: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Skipped,
            ..Outcome::pass(message)
        }
    }
    /// A transport failure: the harness could not judge.
    pub fn transport(label: &str, e: &TransportError) -> Self {
        let mut o = Outcome::error(e.to_string());
        o.evidence.push(Evidence::from_transport(label, e));
        o
    }
    pub fn with_evidence(mut self, ev: Vec<Evidence>) -> Self {
        self.evidence.extend(ev);
        self
    }
    /// Adds properties. Typed values come from [`prop`]; plain
    /// `Vec<(String, String)>` is still accepted and stays text.
    pub fn with_properties<V: Into<PropValue>>(
        mut self,
        props: impl IntoIterator<Item = (String, V)>,
    ) -> Self {
        self.properties
            .extend(props.into_iter().map(|(k, v)| (k, v.into())));
        self
    }
    /// This judged outcome with one more property's verdict (folded again).
    pub fn with_assertion(mut self, a: Assertion) -> Self {
        self.assertions.push(a);
        self.fold();
        self
    }

    /// An outcome made of per-property verdicts. Its own verdict and message
    /// are provisional (every property at MUST) until the runner applies the
    /// kind's severities.
    pub fn judged(assertions: Vec<Assertion>) -> Self {
        let mut o = Outcome::pass("");
        o.assertions = assertions;
        o.fold();
        o
    }

    /// Sets each assertion's severity (`severity_of(property)`), turns a
    /// broken SHOULD into a warning unless `strict`, and folds the check's
    /// verdict. A check without assertions is its kind's single property:
    /// `single` gives that property's severity, if the kind declares one.
    pub fn apply_severity(
        &mut self,
        severity_of: impl Fn(&str) -> Severity,
        single: Option<Severity>,
        strict: bool,
    ) {
        let soften = |v: Verdict, sev: Severity| match (v, sev) {
            (Verdict::Fail, Severity::Should) if !strict => Verdict::Warn,
            (Verdict::Warn, _) if strict => Verdict::Fail,
            (v, _) => v,
        };
        if self.assertions.is_empty() {
            if let Some(sev) = single {
                self.verdict = soften(self.verdict, sev);
            }
            return;
        }
        for a in &mut self.assertions {
            a.severity = severity_of(a.property);
            a.verdict = soften(a.verdict, a.severity);
        }
        self.fold();
    }

    /// Folds again after the assertions' verdicts changed (waivers).
    pub(crate) fn refold(&mut self) {
        self.fold();
    }

    /// Adds a property judged beside the kind's own (the suite's contract,
    /// `contract::PROPERTY`). An outcome without assertions is its kind's
    /// one property (`own`): it becomes that property's assertion first, so
    /// neither verdict hides the other. The runner applies severities after.
    pub fn add_assertion(&mut self, own: &'static str, a: Assertion) {
        if self.assertions.is_empty() {
            self.assertions.push(Assertion {
                expected: self.expected.clone(),
                actual: self.actual.clone(),
                inconclusive: self.inconclusive,
                ..Assertion::new(own, self.verdict, self.message.clone())
            });
        }
        self.assertions.push(a);
        self.fold();
    }

    /// The check's verdict, message, expected and actual from its assertions:
    /// the worst verdict wins; the message lists the properties that did not
    /// hold (or, when all held, what each rested on).
    fn fold(&mut self) {
        let Some(worst) = self
            .assertions
            .iter()
            .map(|a| a.verdict)
            .max_by_key(|v| v.weight())
        else {
            return;
        };
        self.verdict = worst;
        self.inconclusive = worst == Verdict::Error
            && self
                .assertions
                .iter()
                .filter(|a| a.verdict == Verdict::Error)
                .all(|a| a.inconclusive);
        if worst == Verdict::Pass {
            // Every row says what it rested on; the check's line stays short.
            let held: Vec<&str> = self
                .assertions
                .iter()
                .filter(|a| a.verdict == Verdict::Pass)
                .map(|a| a.property)
                .collect();
            let off: Vec<&str> = self
                .assertions
                .iter()
                .filter(|a| a.verdict == Verdict::Skipped)
                .map(|a| a.property)
                .collect();
            self.message = format!("{} hold", held.join(", "));
            if !off.is_empty() {
                self.message
                    .push_str(&format!(" ({} not judged)", off.join(", ")));
            }
            self.expected = None;
            self.actual = None;
            return;
        }
        let lead: Vec<&Assertion> = self
            .assertions
            .iter()
            .filter(|a| a.verdict == worst)
            .collect();
        self.message = lead
            .iter()
            .map(|a| format!("{}: {}", a.property, a.message))
            .collect::<Vec<_>>()
            .join("; ");
        let first = lead[0];
        self.expected = first.expected.clone();
        self.actual = first.actual.clone();
    }

    /// The value of property `key`, if set.
    pub fn property(&self, key: &str) -> Option<&PropValue> {
        self.properties
            .iter()
            .find_map(|(k, v)| (k == key).then_some(v))
    }

    /// Seconds the check waited for the target's quota (the runner's
    /// `quota_wait_s` property; 0 when it did not wait).
    pub fn quota_wait_s(&self) -> f64 {
        self.property("quota_wait_s")
            .and_then(PropValue::as_f64)
            .unwrap_or(0.0)
    }
}

/// One measured value or identifier of an [`Outcome`]. Numbers stay numbers
/// (`Int`, `Float`); ids, units and display strings are `Text`.
#[derive(Debug, Clone, PartialEq)]
pub enum PropValue {
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
}

/// A property entry: `prop("attempts", n)`, `prop("p95_ms", PropValue::rounded(ms, 3))`.
pub fn prop(key: impl Into<String>, value: impl Into<PropValue>) -> (String, PropValue) {
    (key.into(), value.into())
}

impl PropValue {
    /// `v` rounded to `decimals` places, so the JSON number and the text form
    /// carry no float noise (`0.123`, not `0.12300000000000001`).
    pub fn rounded(v: f64, decimals: i32) -> Self {
        let f = 10f64.powi(decimals);
        let r = (v * f).round() / f;
        PropValue::Float(if r.is_finite() { r } else { v })
    }
    /// The text form (JUnit properties, HTML, console).
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            PropValue::Text(s) => Cow::Borrowed(s),
            other => Cow::Owned(other.to_string()),
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            PropValue::Int(i) => Some(*i as f64),
            PropValue::Float(f) => Some(*f),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            PropValue::Int(i) => Some(*i),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PropValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for PropValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropValue::Int(i) => write!(f, "{i}"),
            PropValue::Float(x) => write!(f, "{x}"),
            PropValue::Text(s) => f.write_str(s),
            PropValue::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// JSON: numbers as numbers, text as strings, booleans as booleans. A
/// non-finite float (which JSON cannot hold) is written as its text form.
impl Serialize for PropValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PropValue::Int(i) => s.serialize_i64(*i),
            PropValue::Float(x) if x.is_finite() => s.serialize_f64(*x),
            PropValue::Float(x) => s.serialize_str(&x.to_string()),
            PropValue::Text(t) => s.serialize_str(t),
            PropValue::Bool(b) => s.serialize_bool(*b),
        }
    }
}

macro_rules! prop_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for PropValue {
            fn from(v: $t) -> Self {
                PropValue::Int(i64::from(v))
            }
        }
    )*};
}
prop_from_int!(i8, i16, i32, i64, u8, u16, u32);

macro_rules! prop_from_wide_int {
    ($($t:ty),*) => {$(
        /// Saturates at `i64::MAX` (no count gets there).
        impl From<$t> for PropValue {
            fn from(v: $t) -> Self {
                PropValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
            }
        }
    )*};
}
prop_from_wide_int!(u64, u128, usize, isize, i128);

impl From<f64> for PropValue {
    fn from(v: f64) -> Self {
        PropValue::Float(v)
    }
}
impl From<f32> for PropValue {
    fn from(v: f32) -> Self {
        PropValue::Float(f64::from(v))
    }
}
impl From<bool> for PropValue {
    fn from(v: bool) -> Self {
        PropValue::Bool(v)
    }
}
impl From<String> for PropValue {
    fn from(v: String) -> Self {
        PropValue::Text(v)
    }
}
impl From<&str> for PropValue {
    fn from(v: &str) -> Self {
        PropValue::Text(v.to_owned())
    }
}
impl From<&String> for PropValue {
    fn from(v: &String) -> Self {
        PropValue::Text(v.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_type_in_json_and_text() {
        let o = Outcome::pass("ok").with_properties(vec![
            prop("attempts", 3usize),
            prop("p95_ms", PropValue::rounded(12.345_678, 3)),
            prop("request_id", "0042"),
            prop("capped", true),
            prop("nan", f64::NAN),
        ]);
        let j = serde_json::to_value(&o.properties).unwrap();
        assert_eq!(
            j,
            serde_json::json!([
                ["attempts", 3],
                ["p95_ms", 12.346],
                ["request_id", "0042"],
                ["capped", true],
                ["nan", "NaN"]
            ])
        );
        let text: Vec<String> = o.properties.iter().map(|(_, v)| v.to_string()).collect();
        assert_eq!(text, ["3", "12.346", "0042", "true", "NaN"]);
    }

    #[test]
    fn string_properties_stay_text() {
        // The compatibility path: `Vec<(String, String)>` as before.
        let o = Outcome::pass("ok").with_properties(vec![("attempts".to_owned(), "3".to_owned())]);
        assert_eq!(o.property("attempts"), Some(&PropValue::Text("3".into())));
    }
}
