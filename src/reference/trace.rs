//! Request and trace correlation: `Trace-Id` and `X-Request-Id` on every response.
//!
//! This is a layer around the WHOLE router (routes, fallback, 405s, auth failures),
//! so no response escapes without the headers. A valid W3C `traceparent` continues
//! the caller's trace; anything else restarts it with a fresh id (catalogue
//! TRC-001..004). A caller's `X-Request-Id` is echoed only if it is safe to reflect
//! (TRC-007); otherwise a UUID v4 is issued. A W3C `traceresponse`
//! (`00-<trace-id>-<this server's span id>-01`) is added as well, informational
//! per the catalogue, so propagation checks can see the parent id change; it is
//! always version `00`, also for a continued higher-version traceparent (TRC-004).
//! When the trace is continued, the caller's `tracestate` comes back as an
//! outgoing `tracestate` response header mutated per W3C rules (TRC-006): our own
//! `tminus-ref` key leftmost, the caller's members in order, at most 32 whole
//! members; it is dropped with an invalid or absent traceparent.
//!
//! Defects of the trace family live here too: `no-trace-id`,
//! `trace-not-propagated`, `constant-trace-id`, `accepts-invalid-traceparent`,
//! `reflects-raw-request-id`, `rejects-future-version`, `echoes-future-version`,
//! `tracestate-reordered`, `tracestate-unbounded` (`async-status-loses-trace` is
//! in `scenarios.rs`).

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
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");
/// This server's key in tracestate.
const OWN_KEY: &str = "tminus-ref";
/// W3C limit on tracestate list-members.
const MAX_MEMBERS: usize = 32;

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
    } else if state.has(Defect::RejectsFutureVersion) {
        incoming
            .filter(|v| v.trim_matches([' ', '\t']).starts_with("00-"))
            .and_then(parse_traceparent)
    } else {
        incoming.and_then(parse_traceparent)
    };
    // The version we answer in: always 00, the only one we implement.
    let version = match incoming {
        Some(v) if continued.is_some() && state.has(Defect::EchoesFutureVersion) => v
            .trim_matches([' ', '\t'])
            .get(..2)
            .unwrap_or("00")
            .to_owned(),
        _ => "00".to_owned(),
    };
    let span_id = new_span_id();
    // tracestate only travels with a continued trace (W3C processing model).
    let tracestate = continued.is_some().then(|| {
        let lines: Vec<&str> = headers
            .get_all(&TRACESTATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        outgoing_tracestate(
            &lines.join(","),
            &span_id,
            state.has(Defect::TracestateReordered),
            !state.has(Defect::TracestateUnbounded),
        )
    });
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
    if let Ok(v) = HeaderValue::from_str(&format!("{version}-{}-{span_id}-01", ctx.trace_id)) {
        resp.headers_mut().insert(TRACERESPONSE, v);
    }
    // Members were validated, so the value is printable ASCII.
    if let Some(Ok(v)) = tracestate.map(|t| HeaderValue::from_str(&t)) {
        resp.headers_mut().insert(TRACESTATE, v);
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

/// The tracestate this server sends on: `tminus-ref=<span id>` leftmost, then the
/// caller's members in order (an old `tminus-ref` entry removed), truncated to 32
/// members by dropping whole entries, over-128-character ones first, then from
/// the right (W3C Trace Context §3.3.1). A list with a malformed member or a
/// duplicate key cannot be parsed and is not propagated (only our key remains).
/// `reverse` and `!bounded` are the `tracestate-reordered` and
/// `tracestate-unbounded` defects.
pub(crate) fn outgoing_tracestate(
    incoming: &str,
    span_id: &str,
    reverse: bool,
    bounded: bool,
) -> String {
    let mut members: Vec<&str> = incoming
        .split(',')
        .map(|m| m.trim_matches([' ', '\t']))
        .filter(|m| !m.is_empty())
        .collect();
    let mut keys = std::collections::HashSet::new();
    let parsable = members.iter().all(|m| {
        m.split_once('=')
            .is_some_and(|(k, v)| valid_key(k) && valid_value(v) && keys.insert(k))
    });
    if !parsable {
        members.clear();
    }
    members.retain(|m| m.split_once('=').map(|(k, _)| k) != Some(OWN_KEY));
    if reverse {
        members.reverse();
    }
    let own = format!("{OWN_KEY}={span_id}");
    if bounded {
        let room = MAX_MEMBERS - 1;
        while members.len() > room {
            match members.iter().rposition(|m| m.len() > 128) {
                Some(i) => members.remove(i),
                None => members.pop().unwrap_or_default(),
            };
        }
    }
    std::iter::once(own.as_str())
        .chain(members)
        .collect::<Vec<_>>()
        .join(",")
}

/// W3C tracestate key: `simple-key` or `tenant@system`.
fn valid_key(k: &str) -> bool {
    let chars = |s: &str| {
        s.bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/'))
    };
    let starts = |s: &str, digit_ok: bool| {
        s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || (digit_ok && b.is_ascii_digit()))
    };
    match k.split_once('@') {
        None => k.len() <= 256 && starts(k, false) && chars(k),
        Some((t, s)) => {
            t.len() <= 241
                && s.len() <= 14
                && starts(t, true)
                && starts(s, false)
                && chars(t)
                && chars(s)
        }
    }
}

/// W3C tracestate value: 1..=256 printable ASCII without `,` `=`, no trailing space.
fn valid_value(v: &str) -> bool {
    (1..=256).contains(&v.len())
        && v.bytes()
            .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
        && !v.ends_with(' ')
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
    fn tracestate_rules() {
        assert_eq!(
            outgoing_tracestate("a=1, b=2 ,tminus-ref=old,c=3", "s", false, true),
            "tminus-ref=s,a=1,b=2,c=3"
        );
        assert_eq!(outgoing_tracestate("", "s", false, true), "tminus-ref=s");
        // Unparsable lists are not propagated.
        assert_eq!(
            outgoing_tracestate("a=1,B=2", "s", false, true),
            "tminus-ref=s"
        );
        assert_eq!(
            outgoing_tracestate("a=1,a=2", "s", false, true),
            "tminus-ref=s"
        );
        let many: Vec<String> = (0..33).map(|i| format!("k{i}=v{i}")).collect();
        let out = outgoing_tracestate(&many.join(","), "s", false, true);
        let kept: Vec<&str> = out.split(',').collect();
        assert_eq!(kept.len(), 32);
        assert_eq!(
            kept[1..],
            many[..31].iter().map(String::as_str).collect::<Vec<_>>()[..]
        );
        // Long entries go first.
        let mut with_long = many.clone();
        with_long[3] = format!("k3={}", "x".repeat(200));
        let out = outgoing_tracestate(&with_long.join(","), "s", false, true);
        assert!(
            !out.contains("k3=") && out.contains("k31=") && !out.contains("k32="),
            "{out}"
        );
        assert_eq!(
            outgoing_tracestate(&many.join(","), "s", false, false)
                .split(',')
                .count(),
            34
        );
        assert_eq!(
            outgoing_tracestate("a=1,b=2", "s", true, true),
            "tminus-ref=s,b=2,a=1"
        );
    }

    #[test]
    fn request_id_filter() {
        assert!(is_safe_request_id("abc-123"));
        assert!(!is_safe_request_id(""));
        assert!(!is_safe_request_id("a b"));
        assert!(!is_safe_request_id(&"a".repeat(129)));
    }
}
