//! Request and trace correlation: `Trace-Id` and `X-Request-Id` on every response.
//!
//! This is a layer around the WHOLE router (routes, fallback, 405s, auth failures),
//! so no response escapes without the headers. A valid W3C `traceparent` continues
//! the caller's trace; anything else restarts it with a fresh id (catalogue
//! TRC-001..004). A caller's `X-Request-Id` is echoed only if it is safe to reflect
//! (TRC-007); otherwise a UUID v4 is issued. A W3C `traceresponse`
//! (`00-<trace-id>-<this server's span id>-01`) is added as well, informational
//! per the catalogue, so propagation checks can see the parent id change.
//!
//! Defects of the trace family live here too: `no-trace-id`,
//! `trace-not-propagated`, `constant-trace-id`, `accepts-invalid-traceparent`,
//! `reflects-raw-request-id`.

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

use super::defect::Defect;
use super::state::AppState;

pub(crate) const TRACE_ID: HeaderName = HeaderName::from_static("trace-id");
pub(crate) const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub(crate) const TRACERESPONSE: HeaderName = HeaderName::from_static("traceresponse");
const TRACEPARENT: &str = "traceparent";

/// The one id `constant-trace-id` hands out (the W3C spec's example trace-id).
const CONSTANT_TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// Correlation ids of the current request, available to handlers as an extension.
#[derive(Debug, Clone)]
pub(crate) struct RequestContext {
    pub trace_id: String,
    pub request_id: String,
}

pub(crate) async fn correlate(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let headers = req.headers();
    let incoming = headers.get(TRACEPARENT).and_then(|v| v.to_str().ok());
    let continued = if state.has(Defect::TraceNotPropagated) {
        None
    } else if state.has(Defect::AcceptsInvalidTraceparent) {
        incoming.and_then(lenient_trace_id)
    } else {
        incoming.and_then(parse_traceparent)
    };
    let trace_id = continued.unwrap_or_else(|| {
        if state.has(Defect::ConstantTraceId) {
            CONSTANT_TRACE_ID.to_owned()
        } else {
            new_trace_id()
        }
    });
    let raw_request_id = headers.get(&REQUEST_ID).cloned();
    let request_id = headers
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| is_safe_request_id(v))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());

    let ctx = RequestContext {
        trace_id,
        request_id,
    };
    req.extensions_mut().insert(ctx.clone());
    let mut resp = next.run(req).await;

    if state.has(Defect::NoTraceId) && resp.status().as_u16() >= 400 {
        return resp;
    }
    // Both values were validated or generated from a safe alphabet above.
    if let Ok(v) = HeaderValue::from_str(&ctx.trace_id) {
        resp.headers_mut().insert(TRACE_ID, v);
    }
    // This server's own span id: a new parent id for whoever continues the trace.
    if let Ok(v) = HeaderValue::from_str(&format!("00-{}-{}-01", ctx.trace_id, new_span_id())) {
        resp.headers_mut().insert(TRACERESPONSE, v);
    }
    match raw_request_id {
        Some(raw) if state.has(Defect::ReflectsRawRequestId) => {
            resp.headers_mut().insert(REQUEST_ID, raw);
        }
        _ => {
            if let Ok(v) = HeaderValue::from_str(&ctx.request_id) {
                resp.headers_mut().insert(REQUEST_ID, v);
            }
        }
    }
    resp
}

/// The trace-id of a valid `traceparent`, per W3C Trace Context §3.2 and its
/// processing model: lowercase hex only, trace-id and parent-id not all zeros,
/// version `ff` invalid. Version `00` must be exactly four fields; a higher version
/// may carry extra `-`-separated fields after the first four, which we ignore
/// (forward compatibility, TRC-004).
pub(crate) fn parse_traceparent(value: &str) -> Option<String> {
    let value = value.trim_matches([' ', '\t']);
    let head = value.get(..55)?;
    let rest = &value[55..];
    let mut parts = head.split('-');
    let (version, trace_id, parent_id, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let lower_hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let all_zero = |s: &str| s.bytes().all(|b| b == b'0');
    let fields_ok = lower_hex(version, 2)
        && lower_hex(trace_id, 32)
        && lower_hex(parent_id, 16)
        && lower_hex(flags, 2);
    let tail_ok = if version == "00" {
        rest.is_empty()
    } else {
        rest.is_empty() || rest.starts_with('-')
    };
    (fields_ok && tail_ok && version != "ff" && !all_zero(trace_id) && !all_zero(parent_id))
        .then(|| trace_id.to_owned())
}

/// The `accepts-invalid-traceparent` parser: any second `-`-field of 32 hex
/// digits in any case (zeros included) is taken as the trace-id.
fn lenient_trace_id(value: &str) -> Option<String> {
    let t = value.trim().split('-').nth(1)?;
    (t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit())).then(|| t.to_ascii_lowercase())
}

/// 16 lowercase hex digits from 64 random bits, never all zeros.
fn new_span_id() -> String {
    loop {
        let bits: u64 = rand::random();
        if bits != 0 {
            return format!("{bits:016x}");
        }
    }
}

/// 32 lowercase hex digits from 128 random bits, never all zeros (invalid per W3C).
pub(crate) fn new_trace_id() -> String {
    loop {
        let bits: u128 = rand::random();
        if bits != 0 {
            return format!("{bits:032x}");
        }
    }
}

/// 1..=128 characters of `[A-Za-z0-9._-]`: safe to reflect in a header and a log.
fn is_safe_request_id(v: &str) -> bool {
    (1..=128).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    #[test]
    fn traceparent_validation() {
        let ok = format!("00-{T}-00f067aa0ba902b7-01");
        assert_eq!(parse_traceparent(&ok).as_deref(), Some(T));
        let future = format!("01-{T}-00f067aa0ba902b7-01-xyz");
        assert_eq!(parse_traceparent(&future).as_deref(), Some(T));
        for bad in [
            format!("00-{}-00f067aa0ba902b7-01", T.to_uppercase()),
            format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32)),
            format!("00-{T}-0000000000000000-01"),
            format!("ff-{T}-00f067aa0ba902b7-01"),
            format!("00-{T}-00f067aa0ba902b7-01-extra"),
            format!("00-{T}-00f067aa0ba902b-01"),
            format!("01-{T}-00f067aa0ba902b7-01x"),
            String::new(),
        ] {
            assert_eq!(parse_traceparent(&bad), None, "{bad}");
        }
    }

    #[test]
    fn request_id_filter() {
        assert!(is_safe_request_id("abc-123"));
        assert!(!is_safe_request_id(""));
        assert!(!is_safe_request_id("a b"));
        assert!(!is_safe_request_id(&"a".repeat(129)));
    }
}
