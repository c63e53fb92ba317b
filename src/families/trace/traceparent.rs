//! W3C Trace Context `traceparent` / `traceresponse` values: strict parsing
//! (what a conforming server must accept), lenient field extraction (to read a
//! trace-id out of whatever header a target answers with), and fresh ids.

use std::fmt;

/// A parsed, valid `traceparent` (W3C Trace Context §3.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traceparent {
    pub version: String,
    pub trace_id: String,
    pub parent_id: String,
    pub flags: String,
}

/// Why a value is not a valid traceparent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    Shape,
    NotLowercaseHex,
    VersionFf,
    ZeroTraceId,
    ZeroParentId,
    ExtraFieldOnVersion00,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Invalid::Shape => "not `version-traceid(32)-parentid(16)-flags(2)`",
            Invalid::NotLowercaseHex => "fields are not lowercase hex",
            Invalid::VersionFf => "version ff is invalid",
            Invalid::ZeroTraceId => "trace-id is all zeros",
            Invalid::ZeroParentId => "parent-id is all zeros",
            Invalid::ExtraFieldOnVersion00 => "version 00 takes exactly four fields",
        })
    }
}

fn lower_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn any_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn all_zero(s: &str) -> bool {
    s.bytes().all(|b| b == b'0')
}

/// The four leading fields if `value` has the traceparent shape (2-32-16-2
/// hex digits of any case), and whatever follows them.
fn split(value: &str) -> Option<([&str; 4], &str)> {
    let value = value.trim_matches([' ', '\t']);
    let head = value.get(..55)?;
    let rest = &value[55..];
    let mut parts = head.split('-');
    let f = [parts.next()?, parts.next()?, parts.next()?, parts.next()?];
    if parts.next().is_some() {
        return None;
    }
    let lens_ok = f[0].len() == 2 && f[1].len() == 32 && f[2].len() == 16 && f[3].len() == 2;
    (lens_ok && f.iter().all(|x| any_hex(x))).then_some((f, rest))
}

/// Strict parsing: what a conforming server continues rather than restarts.
/// A higher version may carry extra `-`-separated fields (forward compatibility).
pub fn parse(value: &str) -> Result<Traceparent, Invalid> {
    let (f, rest) = split(value).ok_or(Invalid::Shape)?;
    if !f.iter().all(|x| lower_hex(x)) {
        return Err(Invalid::NotLowercaseHex);
    }
    if f[0] == "ff" {
        return Err(Invalid::VersionFf);
    }
    if f[0] == "00" && !rest.is_empty() {
        return Err(Invalid::ExtraFieldOnVersion00);
    }
    if !rest.is_empty() && !rest.starts_with('-') {
        return Err(Invalid::Shape);
    }
    if all_zero(f[1]) {
        return Err(Invalid::ZeroTraceId);
    }
    if all_zero(f[2]) {
        return Err(Invalid::ZeroParentId);
    }
    Ok(Traceparent {
        version: f[0].into(),
        trace_id: f[1].into(),
        parent_id: f[2].into(),
        flags: f[3].into(),
    })
}

/// `(trace-id, parent-id)` of a traceparent-shaped value, without judging it.
pub fn fields(value: &str) -> Option<(String, String)> {
    split(value).map(|(f, _)| (f[1].to_owned(), f[2].to_owned()))
}

/// The trace id a response header carries: the trace-id field of a
/// traceparent-shaped value (`traceparent`, `traceresponse`), else the value.
pub fn trace_id_of(value: &str) -> String {
    match fields(value) {
        Some((t, _)) => t,
        None => value.trim().to_owned(),
    }
}

/// 32 lowercase hex digits, not all zeros.
pub fn is_w3c_trace_id(s: &str) -> bool {
    s.len() == 32 && lower_hex(s) && !all_zero(s)
}

/// A fresh trace-id: 128 random bits, never all zeros.
pub fn random_trace_id() -> String {
    loop {
        let bits: u128 = rand::random();
        if bits != 0 {
            return format!("{bits:032x}");
        }
    }
}

/// A fresh parent-id: 64 random bits, never all zeros.
pub fn random_parent_id() -> String {
    loop {
        let bits: u64 = rand::random();
        if bits != 0 {
            return format!("{bits:016x}");
        }
    }
}

/// `00-<trace>-<parent>-01`.
pub fn format(trace_id: &str, parent_id: &str) -> String {
    format!("00-{trace_id}-{parent_id}-01")
}
