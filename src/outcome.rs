//! What a check concludes: a verdict, the expected and actual values that
//! explain it, and the evidence (request line, status, request id) a person
//! can attach to a ticket.

use serde::Serialize;

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
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
            Verdict::Skipped => "skipped",
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
    /// Measured values (latencies, counts): JUnit properties and JSON.
    pub properties: Vec<(String, String)>,
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
        }
    }
    pub fn error(message: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Error,
            ..Outcome::pass(message)
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
    pub fn with_properties(mut self, props: Vec<(String, String)>) -> Self {
        self.properties.extend(props);
        self
    }
}
