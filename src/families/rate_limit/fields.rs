//! Reading rate-limit headers in every dialect tminus knows, strictly:
//! legacy `X-RateLimit-Limit/Remaining/Reset` (Reset as epoch seconds,
//! integer or fractional, or as delta seconds), IETF `RateLimit` /
//! `RateLimit-Policy` in draft-7 dictionary form (`limit=, remaining=,
//! reset=`) and in draft-8-and-later structured-field form
//! (`"name";r=..;t=..` with `"name";q=..;w=..`), and `Retry-After`.
//!
//! Every time is read against the response's own `Date` header, never the
//! local clock: the harness and the target disagree about "now" by seconds in
//! real deployments, and an epoch Reset is only meaningful next to the
//! server's clock. Every error quotes the header and the value it saw.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::sf::{self, Bare};
use crate::http::RecordedResponse;
use crate::model::retry_after::RetryAfter;

/// Which header family a check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Whatever is present (at least one family must be).
    Auto,
    Legacy,
    /// IETF draft-7: `RateLimit: limit=100, remaining=50, reset=30`.
    IetfDraft7,
    /// IETF draft-8 and later: `RateLimit: "default";r=50;t=30`.
    IetfStructured,
}

impl Dialect {
    pub const NAMES: &'static [&'static str] = &["auto", "legacy", "ietf-draft7", "ietf"];
    pub fn parse(s: &str) -> Option<Dialect> {
        Some(match s {
            "auto" => Dialect::Auto,
            "legacy" => Dialect::Legacy,
            "ietf-draft7" | "draft7" => Dialect::IetfDraft7,
            "ietf" | "ietf-sf" | "draft8" => Dialect::IetfStructured,
            _ => return None,
        })
    }
}

/// How the legacy Reset header counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetMode {
    /// Values from 1e9 on are epoch seconds, smaller ones delta seconds.
    Auto,
    Epoch,
    Delta,
}

impl ResetMode {
    pub const NAMES: &'static [&'static str] = &["auto", "epoch", "delta"];
    pub fn parse(s: &str) -> Option<ResetMode> {
        Some(match s {
            "auto" => ResetMode::Auto,
            "epoch" => ResetMode::Epoch,
            "delta" => ResetMode::Delta,
            _ => return None,
        })
    }
}

/// The legacy header names (some APIs use `RateLimit-Limit`, `X-Rate-Limit-…`).
#[derive(Debug, Clone)]
pub struct LegacyNames {
    pub limit: String,
    pub remaining: String,
    pub reset: String,
}

impl Default for LegacyNames {
    fn default() -> Self {
        use super::spec::defaults;
        LegacyNames {
            limit: defaults::LIMIT_HEADER.into(),
            remaining: defaults::REMAINING_HEADER.into(),
            reset: defaults::RESET_HEADER.into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Dialects {
    pub dialect: Dialect,
    pub reset: ResetMode,
    pub names: LegacyNames,
}

/// What one response says about its quota, whichever dialect said it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    /// Dialects found, for messages (`legacy`, `ietf-draft7`, `ietf`).
    pub dialects: Vec<&'static str>,
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    /// Seconds from the response's Date to the reset.
    pub reset_in: Option<f64>,
    /// The policy window in seconds, when the IETF policy states it.
    pub window: Option<u64>,
}

/// The response's `Date` header, as a time.
pub fn date_of(resp: &RecordedResponse) -> Option<SystemTime> {
    resp.date()
}

fn epoch_secs(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Joins repeated field lines with ", " as RFC 9110 §5.3 allows.
fn joined(resp: &RecordedResponse, name: &str) -> Option<String> {
    let all: Vec<&str> = resp.headers_all(name).collect();
    (!all.is_empty()).then(|| all.join(", "))
}

fn uint(header: &str, v: &str) -> Result<u64, String> {
    let t = v.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) || t.len() > 18 {
        return Err(format!("{header}: `{v}` is not a non-negative integer"));
    }
    t.parse()
        .map_err(|_| format!("{header}: `{v}` is not a non-negative integer"))
}

/// A problem with one response's rate-limit fields, and the property of
/// `rate_limit.headers` it breaks: `present` (a dialect's field missing),
/// `syntax` (a field does not parse) or `consistency` (fields disagree).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub property: &'static str,
    pub message: String,
}

impl FieldError {
    fn inconsistent(message: String) -> Self {
        FieldError {
            property: "consistency",
            message,
        }
    }
}

/// Every parse error of a field is a syntax problem.
impl From<String> for FieldError {
    fn from(message: String) -> Self {
        FieldError {
            property: "syntax",
            message,
        }
    }
}

impl std::ops::Deref for FieldError {
    type Target = str;
    fn deref(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// `1*DIGIT [ "." 1*DIGIT ]`: integer or fractional seconds.
fn seconds(header: &str, v: &str) -> Result<f64, String> {
    let t = v.trim();
    let (int, frac) = t.split_once('.').unwrap_or((t, "0"));
    let ok = |s: &str| !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit());
    if !ok(int) || !ok(frac) {
        return Err(format!(
            "{header}: `{v}` is not a number of seconds (integer or fractional)"
        ));
    }
    t.parse::<f64>()
        .map_err(|_| format!("{header}: `{v}` is not a number of seconds"))
}

/// Reads every rate-limit header the dialect asks for and checks each one's
/// own syntax and consistency. An empty `dialects` list means none was found
/// (only possible in `Auto`, the caller decides whether that fails).
pub fn observe(resp: &RecordedResponse, d: &Dialects) -> Result<Observation, FieldError> {
    let mut obs = Observation::default();
    let date = date_of(resp);
    let has_legacy = [&d.names.limit, &d.names.remaining, &d.names.reset]
        .iter()
        .any(|n| resp.header(n).is_some());
    let rl = joined(resp, "RateLimit");
    let policy = joined(resp, "RateLimit-Policy");
    let want_legacy = match d.dialect {
        Dialect::Legacy => true,
        Dialect::Auto => has_legacy,
        _ => false,
    };
    if want_legacy {
        let names = [&d.names.limit, &d.names.remaining, &d.names.reset];
        if let Some(name) = names.iter().find(|n| resp.header(n).is_none()) {
            return Err(FieldError {
                property: "present",
                message: format!("{name} is missing (legacy dialect)"),
            });
        }
        let (limit, remaining, reset_in) = legacy(resp, d, date)?;
        obs.dialects.push("legacy");
        obs.limit = Some(limit);
        obs.remaining = Some(remaining);
        obs.reset_in = Some(reset_in);
    }
    let ietf_form = match d.dialect {
        Dialect::IetfDraft7 => Some(Dialect::IetfDraft7),
        Dialect::IetfStructured => Some(Dialect::IetfStructured),
        Dialect::Legacy => None,
        Dialect::Auto => match (&rl, &policy) {
            (None, None) => None,
            (Some(v), _) if is_draft7(v) => Some(Dialect::IetfDraft7),
            _ => Some(Dialect::IetfStructured),
        },
    };
    let ietf = match ietf_form {
        Some(Dialect::IetfDraft7) => Some(draft7(rl.as_deref(), policy.as_deref())?),
        Some(_) => Some(structured(rl.as_deref(), policy.as_deref())?),
        None => None,
    };
    if let Some((name, limit, remaining, reset_in, window)) = ietf {
        if let (Some(a), Some(b)) = (obs.remaining, remaining) {
            if a != b {
                return Err(FieldError::inconsistent(format!(
                    "{} is {a} but RateLimit says {b} remain",
                    d.names.remaining
                )));
            }
        }
        if let (Some(a), Some(b)) = (obs.reset_in, reset_in) {
            if (a - b as f64).abs() > 1.0 {
                return Err(FieldError::inconsistent(format!(
                    "{} is {a:.1} s after Date but RateLimit t={b} (they must agree within 1 s)",
                    d.names.reset
                )));
            }
        }
        obs.dialects.push(name);
        obs.limit = obs.limit.or(limit);
        obs.remaining = obs.remaining.or(remaining);
        obs.reset_in = obs.reset_in.or(reset_in.map(|t| t as f64));
        obs.window = window;
    }
    if let (Some(l), Some(r)) = (obs.limit, obs.remaining) {
        if r > l {
            return Err(FieldError::inconsistent(format!(
                "remaining {r} is above the limit {l}"
            )));
        }
    }
    Ok(obs)
}

fn is_draft7(v: &str) -> bool {
    let t = v.trim_start();
    !t.starts_with('"')
        && ["limit=", "remaining=", "reset="]
            .iter()
            .any(|k| t.contains(k))
}

fn legacy(
    resp: &RecordedResponse,
    d: &Dialects,
    date: Option<SystemTime>,
) -> Result<(u64, u64, f64), String> {
    let n = &d.names;
    let get = |name: &str| {
        resp.header(name)
            .ok_or_else(|| format!("{name} is missing (legacy dialect)"))
    };
    let limit = uint(&n.limit, get(&n.limit)?)?;
    let remaining = uint(&n.remaining, get(&n.remaining)?)?;
    let raw = get(&n.reset)?;
    let value = seconds(&n.reset, raw)?;
    let epoch = match d.reset {
        ResetMode::Epoch => true,
        ResetMode::Delta => false,
        ResetMode::Auto => value >= 1e9,
    };
    let reset_in = if epoch {
        let Some(date) = date else {
            return Err(format!(
                "{}: `{raw}` is an epoch time but the response has no valid Date header to read it against",
                n.reset
            ));
        };
        value - epoch_secs(date)
    } else {
        if value >= 1e9 {
            return Err(format!(
                "{}: `{raw}` looks like an epoch time but the check was told `reset: delta`",
                n.reset
            ));
        }
        value
    };
    Ok((limit, remaining, reset_in))
}

type Ietf = (
    &'static str,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
);

fn non_neg(field: &str, what: &str, v: &Bare) -> Result<u64, String> {
    match v {
        Bare::Integer(i) if *i >= 0 => Ok(*i as u64),
        other => Err(format!(
            "{field}: {what} must be a non-negative Integer, got `{other}`"
        )),
    }
}

/// Draft-7: `RateLimit: limit=L, remaining=R, reset=T`, optional
/// `RateLimit-Policy: L;w=W, ...`.
fn draft7(rl: Option<&str>, policy: Option<&str>) -> Result<Ietf, String> {
    let v = rl.ok_or("RateLimit is missing (IETF draft-7 dialect)")?;
    let dict = sf::parse_dictionary(v).map_err(|e| format!("RateLimit: {e}"))?;
    let get = |k: &str| -> Result<u64, String> {
        let item = dict
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, i)| i)
            .ok_or_else(|| {
                format!("RateLimit: `{v}` has no `{k}=` (draft-7 needs limit, remaining and reset)")
            })?;
        non_neg(&format!("RateLimit `{v}`"), k, &item.value)
    };
    let (limit, remaining, reset) = (get("limit")?, get("remaining")?, get("reset")?);
    let mut window = None;
    if let Some(p) = policy {
        let items = sf::parse_list(p).map_err(|e| format!("RateLimit-Policy: {e}"))?;
        for it in &items {
            let q = non_neg(&format!("RateLimit-Policy `{p}`"), "the quota", &it.value)?;
            if let Some(w) = it.param("w") {
                let w = non_neg(&format!("RateLimit-Policy `{p}`"), "w", w)?;
                if w == 0 {
                    return Err(format!("RateLimit-Policy `{p}`: w must be above 0"));
                }
                if q == limit && window.is_none() {
                    window = Some(w);
                }
            }
        }
    }
    Ok((
        "ietf-draft7",
        Some(limit),
        Some(remaining),
        Some(reset),
        window,
    ))
}

/// Draft-8 and later: `RateLimit-Policy: "p";q=Q;w=W` and `RateLimit: "p";r=R;t=T`.
fn structured(rl: Option<&str>, policy: Option<&str>) -> Result<Ietf, String> {
    let p = policy.ok_or("RateLimit-Policy is missing (IETF structured dialect)")?;
    let v = rl.ok_or("RateLimit is missing (IETF structured dialect)")?;
    let pol = sf::parse_list(p).map_err(|e| format!("RateLimit-Policy: {e}"))?;
    let lim = sf::parse_list(v).map_err(|e| format!("RateLimit: {e}"))?;
    if pol.is_empty() {
        return Err("RateLimit-Policy is empty".into());
    }
    if lim.is_empty() {
        return Err("RateLimit is empty".into());
    }
    let pf = format!("RateLimit-Policy `{p}`");
    let rf = format!("RateLimit `{v}`");
    let mut policies = Vec::new();
    for it in &pol {
        let name = it
            .name()
            .ok_or_else(|| format!("{pf}: items must be Strings, got `{}`", it.value))?;
        let q = non_neg(
            &pf,
            "q",
            it.param("q")
                .ok_or_else(|| format!("{pf}: policy `{name}` has no q"))?,
        )?;
        let w = match it.param("w") {
            None => None,
            Some(w) => {
                let w = non_neg(&pf, "w", w)?;
                if w == 0 {
                    return Err(format!("{pf}: w must be above 0"));
                }
                Some(w)
            }
        };
        policies.push((name.to_owned(), q, w));
    }
    let mut first = None;
    for it in &lim {
        let name = it
            .name()
            .ok_or_else(|| format!("{rf}: items must be Strings, got `{}`", it.value))?;
        let r = non_neg(
            &rf,
            "r",
            it.param("r")
                .ok_or_else(|| format!("{rf}: `{name}` has no r"))?,
        )?;
        let t = it.param("t").map(|t| non_neg(&rf, "t", t)).transpose()?;
        let Some((_, q, w)) = policies.iter().find(|(n, _, _)| n == name) else {
            return Err(format!(
                "{rf} names policy `{name}`, which {pf} does not define"
            ));
        };
        if r > *q {
            return Err(format!("{rf}: r={r} is above the policy quota q={q}"));
        }
        if first.is_none() {
            first = Some((Some(*q), Some(r), t, *w));
        }
    }
    let (q, r, t, w) = first.unwrap_or_default();
    Ok(("ietf", q, r, t, w))
}

/// A valid `Retry-After` (`model::retry_after`: delay-seconds or an
/// HTTP-date), the date read against the response's Date (or, without one,
/// `now`).
pub fn retry_after(resp: &RecordedResponse, now: SystemTime) -> Result<Duration, String> {
    let v = resp.header("retry-after").ok_or("no Retry-After header")?;
    let ra = RetryAfter::parse(v).map_err(|e| e.to_string())?;
    Ok(ra.resolve(date_of(resp), now))
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

    fn auto() -> Dialects {
        Dialects {
            dialect: Dialect::Auto,
            reset: ResetMode::Auto,
            names: LegacyNames::default(),
        }
    }

    // 1700000000 = Tue, 14 Nov 2023 22:13:20 GMT
    const DATE: &str = "Tue, 14 Nov 2023 22:13:20 GMT";

    #[test]
    fn legacy_epoch_integer_and_fractional_read_against_date() {
        for reset in ["1700000030", "1700000030.250"] {
            let r = resp(&[
                ("Date", DATE),
                ("X-RateLimit-Limit", "100"),
                ("X-RateLimit-Remaining", "99"),
                ("X-RateLimit-Reset", reset),
            ]);
            let o = observe(&r, &auto()).unwrap();
            assert_eq!(o.dialects, vec!["legacy"]);
            assert!((o.reset_in.unwrap() - 30.0).abs() < 0.3, "{o:?}");
        }
    }

    #[test]
    fn legacy_delta_and_mode_mismatch() {
        let r = resp(&[
            ("X-RateLimit-Limit", "100"),
            ("X-RateLimit-Remaining", "5"),
            ("X-RateLimit-Reset", "12"),
        ]);
        assert_eq!(observe(&r, &auto()).unwrap().reset_in, Some(12.0));
        let mut d = auto();
        d.reset = ResetMode::Epoch;
        assert!(observe(&r, &d).unwrap_err().contains("no valid Date"));
        let r = resp(&[
            ("X-RateLimit-Limit", "100"),
            ("X-RateLimit-Remaining", "5"),
            ("X-RateLimit-Reset", "1700000030"),
        ]);
        d.reset = ResetMode::Delta;
        assert!(observe(&r, &d).unwrap_err().contains("looks like an epoch"));
    }

    #[test]
    fn legacy_errors_quote_values() {
        let r = resp(&[
            ("X-RateLimit-Limit", "100"),
            ("X-RateLimit-Remaining", "-1"),
            ("X-RateLimit-Reset", "3"),
        ]);
        assert!(observe(&r, &auto()).unwrap_err().contains("`-1`"));
        let r = resp(&[
            ("X-RateLimit-Limit", "10"),
            ("X-RateLimit-Remaining", "11"),
            ("X-RateLimit-Reset", "3"),
        ]);
        assert!(observe(&r, &auto())
            .unwrap_err()
            .contains("above the limit"));
        let r = resp(&[("X-RateLimit-Limit", "10")]);
        assert!(observe(&r, &auto())
            .unwrap_err()
            .contains("X-RateLimit-Remaining is missing"));
    }

    #[test]
    fn structured_fields_and_consistency() {
        let r = resp(&[
            ("Date", DATE),
            ("X-RateLimit-Limit", "100"),
            ("X-RateLimit-Remaining", "42"),
            ("X-RateLimit-Reset", "1700000001"),
            ("RateLimit-Policy", "\"default\";q=100;w=1"),
            ("RateLimit", "\"default\";r=42;t=1"),
        ]);
        let o = observe(&r, &auto()).unwrap();
        assert_eq!(o.dialects, vec!["legacy", "ietf"]);
        assert_eq!(o.window, Some(1));
        let r = resp(&[
            ("RateLimit-Policy", "\"default\";q=100;w=1"),
            ("RateLimit", "\"other\";r=42;t=1"),
        ]);
        assert!(observe(&r, &auto())
            .unwrap_err()
            .contains("does not define"));
        let r = resp(&[
            ("RateLimit-Policy", "\"default\";w=1"),
            ("RateLimit", "\"default\";r=42"),
        ]);
        assert!(observe(&r, &auto()).unwrap_err().contains("has no q"));
        let r = resp(&[
            ("RateLimit-Policy", "\"default\";q=100;w=0"),
            ("RateLimit", "\"default\";r=42"),
        ]);
        assert!(observe(&r, &auto()).unwrap_err().contains("above 0"));
        let r = resp(&[
            ("RateLimit-Policy", "\"default\";q=100"),
            ("RateLimit", "\"default\";r=4.5"),
        ]);
        assert!(observe(&r, &auto()).unwrap_err().contains("`4.5`"));
        let r = resp(&[
            ("X-RateLimit-Limit", "100"),
            ("X-RateLimit-Remaining", "41"),
            ("X-RateLimit-Reset", "1"),
            ("RateLimit-Policy", "\"default\";q=100"),
            ("RateLimit", "\"default\";r=42"),
        ]);
        assert!(observe(&r, &auto()).unwrap_err().contains("42 remain"));
    }

    #[test]
    fn malformed_ietf_field_is_quoted() {
        let r = resp(&[
            ("RateLimit-Policy", "\"default\";q=100"),
            ("RateLimit", "\"default\";r=42;;t=1"),
        ]);
        let e = observe(&r, &auto()).unwrap_err();
        assert!(e.contains("`\"default\";r=42;;t=1`"), "{e}");
    }

    #[test]
    fn draft7_form() {
        let r = resp(&[
            ("RateLimit", "limit=100, remaining=50, reset=30"),
            ("RateLimit-Policy", "100;w=60"),
        ]);
        let o = observe(&r, &auto()).unwrap();
        assert_eq!(o.dialects, vec!["ietf-draft7"]);
        assert_eq!(
            (o.limit, o.remaining, o.window),
            (Some(100), Some(50), Some(60))
        );
        let r = resp(&[("RateLimit", "limit=100, remaining=50")]);
        assert!(observe(&r, &auto()).unwrap_err().contains("no `reset=`"));
        let r = resp(&[("RateLimit", "limit=100, remaining=x, reset=1")]);
        let mut d = auto();
        d.dialect = Dialect::IetfDraft7;
        assert!(observe(&r, &d).unwrap_err().contains("remaining"));
    }

    #[test]
    fn dialect_required_when_named() {
        let r = resp(&[("RateLimit", "limit=1, remaining=1, reset=1")]);
        let mut d = auto();
        d.dialect = Dialect::Legacy;
        assert!(observe(&r, &d).unwrap_err().contains("missing"));
        assert!(observe(&resp(&[]), &auto()).unwrap().dialects.is_empty());
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::now();
        let r = resp(&[("Retry-After", "3")]);
        assert_eq!(retry_after(&r, now).unwrap(), Duration::from_secs(3));
        let r = resp(&[
            ("Date", DATE),
            ("Retry-After", "Tue, 14 Nov 2023 22:13:25 GMT"),
        ]);
        assert_eq!(retry_after(&r, now).unwrap(), Duration::from_secs(5));
        // The obsolete RFC 850 form, read against `now` without a Date.
        let r = resp(&[("Retry-After", "Tuesday, 14-Nov-23 22:13:25 GMT")]);
        let at = httpdate::parse_http_date("Tue, 14 Nov 2023 22:13:25 GMT").unwrap();
        assert_eq!(
            retry_after(&r, at - Duration::from_secs(5)).unwrap(),
            Duration::from_secs(5)
        );
        let r = resp(&[("Retry-After", "99999999999999999999")]);
        assert_eq!(
            retry_after(&r, now).unwrap_err(),
            "Retry-After `99999999999999999999` is out of range"
        );
        let r = resp(&[("Retry-After", " soon ")]);
        assert_eq!(
            retry_after(&r, now).unwrap_err(),
            "Retry-After `soon` is neither delay-seconds nor an HTTP-date"
        );
        for bad in ["-1", "1.5", "soon", ""] {
            let r = resp(&[("Retry-After", bad)]);
            assert!(retry_after(&r, now).is_err(), "{bad}");
        }
        assert!(retry_after(&resp(&[]), now).is_err());
    }
}
