//! A captured request/response pair and the transport failures that stop one
//! from existing. This is the evidence every check attaches to its outcome.

use std::fmt;
use std::time::Duration;

use crate::redact::{is_sensitive_header, MASK};

use super::Rendered;

/// Headers that carry a request or trace id, in the order they are preferred.
pub const ID_HEADERS: &[&str] = &[
    "x-request-id",
    "trace-id",
    "x-trace-id",
    "traceresponse",
    "x-correlation-id",
    "request-id",
];

#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub url: String,
    /// Sensitive values already masked.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    pub fn capture(r: &Rendered) -> Self {
        RecordedRequest {
            method: r.method.to_string(),
            url: r.url.clone(),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| {
                    let v = if is_sensitive_header(k) {
                        MASK.to_owned()
                    } else {
                        v.clone()
                    };
                    (k.clone(), v)
                })
                .collect(),
            body: r.body.clone(),
        }
    }
    /// `POST http://host/path`
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.url)
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone)]
pub struct RecordedResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn headers_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The `Date` header as a time (`None` when absent or not an HTTP-date).
    pub fn date(&self) -> Option<std::time::SystemTime> {
        self.header("date")
            .and_then(|d| httpdate::parse_http_date(d.trim()).ok())
    }
    /// The first request/trace id header the response carries.
    pub fn request_id(&self) -> Option<(String, String)> {
        ID_HEADERS
            .iter()
            .find_map(|h| self.header(h).map(|v| ((*h).to_owned(), v.to_owned())))
    }
}

#[derive(Debug, Clone)]
pub struct Exchange {
    pub request: RecordedRequest,
    pub response: RecordedResponse,
    /// Until the whole body was read.
    pub elapsed: Duration,
    /// Until the response head arrived.
    pub ttfb: Duration,
}

impl Exchange {
    pub fn status(&self) -> u16 {
        self.response.status
    }
}

/// Why no response came back.
#[derive(Debug, Clone)]
pub enum TransportError {
    Timeout {
        request: String,
        after: Duration,
    },
    Connect {
        request: String,
        address: String,
        reason: String,
    },
    Other {
        request: String,
        reason: String,
    },
    /// The target's quota could not be waited for within the run's budget.
    Quota {
        request: String,
        reason: String,
    },
}

impl TransportError {
    pub fn from_reqwest(req: &RecordedRequest, e: &reqwest::Error) -> Self {
        // A TLS failure reads as what is wrong and what to do, not as the
        // library's enum (`Other(OtherError(CaUsedAsEndEntity))`).
        let reason = super::tls::explain(e).unwrap_or_else(|| error_chain(e));
        if e.is_timeout() {
            return TransportError::Timeout {
                request: req.line(),
                after: Duration::ZERO,
            };
        }
        if e.is_connect() {
            let address = reqwest::Url::parse(&req.url)
                .ok()
                .map(|u| {
                    format!(
                        "{}:{}",
                        u.host_str().unwrap_or("?"),
                        u.port_or_known_default().unwrap_or(0)
                    )
                })
                .unwrap_or_else(|| req.url.clone());
            // Through a proxy, the connection that failed may be the
            // proxy's: name both.
            let address = match super::proxy::installed_for(&req.url) {
                Some(p) => format!("the proxy {} (for {address})", super::proxy::shown(p)),
                None => address,
            };
            return TransportError::Connect {
                request: req.line(),
                address,
                reason,
            };
        }
        TransportError::Other {
            request: req.line(),
            reason,
        }
    }

    pub fn request_line(&self) -> &str {
        match self {
            TransportError::Timeout { request, .. }
            | TransportError::Connect { request, .. }
            | TransportError::Other { request, .. }
            | TransportError::Quota { request, .. } => request,
        }
    }
}

impl TransportError {
    /// Replaces the reason of a connect or other failure (a TLS diagnosis
    /// that found what the first error did not name).
    pub fn with_reason(mut self, why: String) -> Self {
        match &mut self {
            TransportError::Connect { reason, .. } | TransportError::Other { reason, .. } => {
                *reason = why
            }
            TransportError::Timeout { .. } | TransportError::Quota { .. } => {}
        }
        self
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Timeout { request, after } if !after.is_zero() => {
                write!(
                    f,
                    "no response within {} ({request})",
                    crate::fmt_duration(*after)
                )
            }
            TransportError::Timeout { request, .. } => write!(f, "timed out ({request})"),
            TransportError::Connect {
                request,
                address,
                reason,
            } => {
                write!(f, "cannot connect to {address}: {reason} ({request})")
            }
            TransportError::Other { request, reason }
            | TransportError::Quota { request, reason } => write!(f, "{reason} ({request})"),
        }
    }
}

/// reqwest's Display hides the cause ("error sending request"); the chain
/// holds the useful part ("Connection refused").
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.last().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(headers: &[(&str, &str)]) -> RecordedResponse {
        RecordedResponse {
            status: 200,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn date_header_as_a_time() {
        let r = resp(&[("Date", " Tue, 14 Nov 2023 22:13:20 GMT ")]);
        assert_eq!(
            r.date(),
            Some(std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        );
        assert_eq!(resp(&[("date", "yesterday")]).date(), None);
        assert_eq!(resp(&[]).date(), None);
    }
}
