//! Reading rate-limit headers in every dialect tminus knows, strictly:
//! legacy `X-RateLimit-Limit/Remaining/Reset` (Reset as epoch seconds,
//! integer or fractional, or as delta seconds), the IETF draft's early
//! revisions (-00 to -06, and the `draft-6` mode of limiter libraries such as
//! express-rate-limit): separate `RateLimit-Limit`, `RateLimit-Remaining`,
//! `RateLimit-Reset` (delta seconds only) with an optional `RateLimit-Policy:
//! 100;w=60`, IETF `RateLimit` / `RateLimit-Policy` in draft-7 dictionary
//! form (`limit=, remaining=, reset=`) and in draft-8-and-later
//! structured-field form (`"name";r=..;t=..` with `"name";q=..;w=..`), and
//! `Retry-After`.
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
    /// IETF draft -00 to -06: `RateLimit-Limit: 100`, `RateLimit-Remaining:
    /// 50`, `RateLimit-Reset: 30` (delta seconds), optional
    /// `RateLimit-Policy: 100;w=60`.
    IetfDraft6,
    /// IETF draft-7: `RateLimit: limit=100, remaining=50, reset=30`.
    IetfDraft7,
    /// IETF draft-8 and later: `RateLimit: "default";r=50;t=30`.
    IetfStructured,
}

impl Dialect {
    pub const NAMES: &'static [&'static str] =
        &["auto", "legacy", "ietf-draft6", "ietf-draft7", "ietf"];
    pub fn parse(s: &str) -> Option<Dialect> {
        Some(match s {
            "auto" => Dialect::Auto,
            "legacy" => Dialect::Legacy,
            "ietf-draft6" | "draft6" => Dialect::IetfDraft6,
            "ietf-draft7" | "draft7" => Dialect::IetfDraft7,
            "ietf" | "ietf-sf" | "draft8" => Dialect::IetfStructured,
            _ => return None,
        })
    }
}

/// The early draft's separate fields (draft-ietf-httpapi-ratelimit-headers
/// -00 to -06).
pub const DRAFT6_NAMES: [&str; 3] = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];

/// From this value on, a Reset looks like an epoch time (2001-09-09).
const EPOCH_FROM: f64 = 1e9;

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
    /// Dialects found, for messages (`legacy`, `ietf-draft6`, `ietf-draft7`, `ietf`).
    pub dialects: Vec<&'static str>,
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    /// Seconds from the response's Date to the reset.
    pub reset_in: Option<f64>,
    /// The policy window in seconds, when an IETF policy states it.
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
    /// The dialects read before values disagreed (a `consistency` error:
    /// every field parsed), for the check's counts and messages.
    pub dialects: Vec<&'static str>,
}

impl FieldError {
    fn inconsistent(message: String) -> Self {
        FieldError {
            property: "consistency",
            message,
            dialects: Vec::new(),
        }
    }
}

/// Every parse error of a field is a syntax problem.
impl From<String> for FieldError {
    fn from(message: String) -> Self {
        FieldError {
            property: "syntax",
            message,
            dialects: Vec::new(),
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

/// One dialect's reading of a response, before the dialects are compared.
struct Reading {
    name: &'static str,
    /// The fields that carry the limit, remaining and reset, for messages.
    fields: [String; 3],
    limit: Option<u64>,
    remaining: Option<u64>,
    reset_in: Option<f64>,
    window: Option<u64>,
    /// The limit is the response's one limit (not the first of several
    /// named policies, as in the structured form), so dialects must agree on it.
    sole_limit: bool,
}

impl Reading {
    fn ietf(r: Ietf) -> Reading {
        let (name, limit, remaining, reset, window) = r;
        Reading {
            name,
            fields: ["RateLimit", "RateLimit", "RateLimit"].map(str::to_owned),
            limit,
            remaining,
            reset_in: reset.map(|t| t as f64),
            window,
            sole_limit: name != "ietf",
        }
    }
}

/// Two dialects on one response must say the same thing: remaining equal,
/// resets within a second (Date has one-second resolution), and the limit
/// equal where both state a single one.
fn agree(a: &Reading, b: &Reading) -> Result<(), FieldError> {
    if let (Some(x), Some(y)) = (a.remaining, b.remaining) {
        if x != y {
            return Err(FieldError::inconsistent(format!(
                "{} is {x} but {} says {y} remain",
                a.fields[1], b.fields[1]
            )));
        }
    }
    if let (Some(x), Some(y)) = (a.reset_in, b.reset_in) {
        if (x - y).abs() > 1.0 {
            return Err(FieldError::inconsistent(format!(
                "{} is {x:.1} s after Date but {} says {y:.1} s (they must agree within 1 s)",
                a.fields[2], b.fields[2]
            )));
        }
    }
    if a.sole_limit && b.sole_limit {
        if let (Some(x), Some(y)) = (a.limit, b.limit) {
            if x != y {
                return Err(FieldError::inconsistent(format!(
                    "{} is {x} but {} says the limit is {y}",
                    a.fields[0], b.fields[0]
                )));
            }
        }
    }
    Ok(())
}

/// Reads every rate-limit header the dialect asks for and checks each one's
/// own syntax and consistency. An empty `dialects` list means none was found
/// (only possible in `Auto`, the caller decides whether that fails).
pub fn observe(resp: &RecordedResponse, d: &Dialects) -> Result<Observation, FieldError> {
    let date = date_of(resp);
    let legacy_names = [&d.names.limit, &d.names.remaining, &d.names.reset];
    let has_legacy = legacy_names.iter().any(|n| resp.header(n).is_some());
    // A suite that renamed the legacy headers to the early draft's names
    // reads them as legacy (its own choice), never twice.
    let renamed_to_draft6 = legacy_names
        .iter()
        .any(|n| DRAFT6_NAMES.iter().any(|e| e.eq_ignore_ascii_case(n)));
    let has_draft6 = DRAFT6_NAMES.iter().any(|n| resp.header(n).is_some());
    let rl = joined(resp, "RateLimit");
    let policy = joined(resp, "RateLimit-Policy");
    let want_legacy = match d.dialect {
        Dialect::Legacy => true,
        Dialect::Auto => has_legacy,
        _ => false,
    };
    let want_draft6 = match d.dialect {
        Dialect::IetfDraft6 => true,
        Dialect::Auto => has_draft6 && !renamed_to_draft6,
        _ => false,
    };
    let mut readings = Vec::new();
    if want_legacy {
        if let Some(name) = legacy_names.iter().find(|n| resp.header(n).is_none()) {
            return Err(FieldError {
                property: "present",
                message: format!("{name} is missing (legacy dialect)"),
                dialects: Vec::new(),
            });
        }
        let (limit, remaining, reset_in) = legacy(resp, d, date)?;
        readings.push(Reading {
            name: "legacy",
            fields: legacy_names.map(|n| n.clone()),
            limit: Some(limit),
            remaining: Some(remaining),
            reset_in: Some(reset_in),
            window: None,
            sole_limit: true,
        });
    }
    if want_draft6 {
        if let Some(name) = DRAFT6_NAMES.iter().find(|n| resp.header(n).is_none()) {
            return Err(FieldError {
                property: "present",
                message: format!("{name} is missing (IETF early-draft dialect)"),
                dialects: Vec::new(),
            });
        }
        // The policy is the early draft's unless `RateLimit` is there to own it.
        let own_policy = match (&rl, &policy) {
            (_, None) => None,
            (None, Some(p)) => Some(p.as_str()),
            (Some(_), Some(p)) => early_policy_form(p).then_some(p.as_str()),
        };
        readings.push(draft6(resp, own_policy).map_err(|mut e| {
            if e.property == "consistency" {
                e.dialects = vec!["ietf-draft6"];
            }
            e
        })?);
    }
    let ietf_form = match d.dialect {
        Dialect::IetfDraft7 => Some(Dialect::IetfDraft7),
        Dialect::IetfStructured => Some(Dialect::IetfStructured),
        Dialect::Legacy | Dialect::IetfDraft6 => None,
        Dialect::Auto => match (&rl, &policy) {
            (None, None) => None,
            // The early draft's policy, read with its fields above.
            (None, Some(_)) if want_draft6 => None,
            (Some(v), _) if is_draft7(v) => Some(Dialect::IetfDraft7),
            _ => Some(Dialect::IetfStructured),
        },
    };
    match ietf_form {
        Some(Dialect::IetfDraft7) => {
            readings.push(Reading::ietf(draft7(rl.as_deref(), policy.as_deref())?))
        }
        Some(_) => readings.push(Reading::ietf(structured(rl.as_deref(), policy.as_deref())?)),
        None => {}
    }
    let mut obs = Observation::default();
    for (i, r) in readings.iter().enumerate() {
        for earlier in &readings[..i] {
            agree(earlier, r).map_err(|mut e| {
                e.dialects = readings.iter().map(|r| r.name).collect();
                e
            })?;
        }
        obs.dialects.push(r.name);
        obs.limit = obs.limit.or(r.limit);
        obs.remaining = obs.remaining.or(r.remaining);
        obs.reset_in = obs.reset_in.or(r.reset_in);
        obs.window = obs.window.or(r.window);
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

/// `100;w=60, ...` (an Integer quota first), not `"default";q=100;w=60`.
fn early_policy_form(p: &str) -> bool {
    p.trim_start().starts_with(|c: char| c.is_ascii_digit())
}

/// The early draft: `RateLimit-Limit` (an Integer, in -00 to -04 optionally
/// followed by quota policies: `100, 100;w=60`), `RateLimit-Remaining` (an
/// Integer), `RateLimit-Reset` (delta seconds, an Integer: never an epoch
/// time, which the draft rules out to avoid clock skew), and an optional
/// `RateLimit-Policy: 100;w=60, 1000;w=3600` whose quotas must include the
/// limit; the matching policy's `w` is the window.
fn draft6(resp: &RecordedResponse, policy: Option<&str>) -> Result<Reading, FieldError> {
    let [ln, rn, tn] = DRAFT6_NAMES;
    let list = |name: &str| -> Result<(String, Vec<sf::Item>), String> {
        let v = joined(resp, name).unwrap_or_default();
        let items = sf::parse_list(&v).map_err(|e| format!("{name}: {e}"))?;
        if items.is_empty() {
            return Err(format!("{name} is empty"));
        }
        Ok((v, items))
    };
    let single = |name: &str| -> Result<u64, String> {
        let (v, items) = list(name)?;
        if items.len() > 1 {
            return Err(format!("{name}: `{v}` must be a single Integer"));
        }
        non_neg(&format!("{name} `{v}`"), "the value", &items[0].value)
    };
    let (lv, litems) = list(ln)?;
    let limit = non_neg(&format!("{ln} `{lv}`"), "the limit", &litems[0].value)?;
    let mut policies = quota_policies(ln, &lv, &litems[1..])?;
    let remaining = single(rn)?;
    let tv = joined(resp, tn).unwrap_or_default();
    let reset = single(tn)?;
    if reset as f64 >= EPOCH_FROM {
        return Err(format!(
            "{tn}: `{}` looks like an epoch time, but the early draft's {tn} is delta seconds (seconds until the window resets)",
            tv.trim()
        )
        .into());
    }
    let mut policy_field = ln.to_owned();
    if let Some(p) = policy {
        let items = sf::parse_list(p).map_err(|e| format!("RateLimit-Policy: {e}"))?;
        if items.is_empty() {
            return Err("RateLimit-Policy is empty".to_owned().into());
        }
        policies.extend(quota_policies("RateLimit-Policy", p, &items)?);
        policy_field = format!("RateLimit-Policy `{p}`");
    }
    let window = match policies.iter().find(|(q, _)| *q == limit) {
        Some((_, w)) => *w,
        None if policies.is_empty() => None,
        None => {
            let quotas: Vec<String> = policies.iter().map(|(q, _)| q.to_string()).collect();
            return Err(FieldError::inconsistent(format!(
                "{ln} is {limit} but {policy_field} states no quota of {limit} (quotas {})",
                quotas.join(", ")
            )));
        }
    };
    Ok(Reading {
        name: "ietf-draft6",
        fields: DRAFT6_NAMES.map(str::to_owned),
        limit: Some(limit),
        remaining: Some(remaining),
        reset_in: Some(reset as f64),
        window,
        sole_limit: true,
    })
}

/// Early-form quota policies `Q;w=W`: a non-negative Integer quota and a
/// window above 0 (`w` is optional before draft -05's `RateLimit-Policy`).
fn quota_policies(
    name: &str,
    v: &str,
    items: &[sf::Item],
) -> Result<Vec<(u64, Option<u64>)>, String> {
    let f = format!("{name} `{v}`");
    items
        .iter()
        .map(|it| {
            let q = non_neg(&f, "a quota policy's quota", &it.value)?;
            let w = match it.param("w") {
                None => None,
                Some(w) => {
                    let w = non_neg(&f, "w", w)?;
                    if w == 0 {
                        return Err(format!("{f}: w must be above 0"));
                    }
                    Some(w)
                }
            };
            Ok((q, w))
        })
        .collect()
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

    /// express-rate-limit's `standardHeaders: 'draft-6'`.
    fn draft6_resp(
        limit: &str,
        remaining: &str,
        reset: &str,
        policy: Option<&str>,
    ) -> RecordedResponse {
        let mut h = vec![
            ("Date", DATE),
            ("RateLimit-Limit", limit),
            ("RateLimit-Remaining", remaining),
            ("RateLimit-Reset", reset),
        ];
        if let Some(p) = policy {
            h.push(("RateLimit-Policy", p));
        }
        resp(&h)
    }

    #[test]
    fn draft6_separate_fields_are_auto_detected() {
        let o = observe(&draft6_resp("100", "42", "30", Some("100;w=60")), &auto()).unwrap();
        assert_eq!(o.dialects, vec!["ietf-draft6"]);
        assert_eq!(
            (o.limit, o.remaining, o.reset_in, o.window),
            (Some(100), Some(42), Some(30.0), Some(60))
        );
        // Without a policy (revisions -00 to -04): no window.
        let o = observe(&draft6_resp("100", "42", "30", None), &auto()).unwrap();
        assert_eq!((o.dialects, o.window), (vec!["ietf-draft6"], None));
        // -00 to -04: the limit field may carry its quota policies.
        let o = observe(&draft6_resp("10, 10;w=1, 50;w=60", "9", "1", None), &auto()).unwrap();
        assert_eq!((o.limit, o.window), (Some(10), Some(1)));
        // Several policies: the one whose quota is the limit gives the window.
        let o = observe(
            &draft6_resp("1000", "7", "100", Some("100;w=60, 1000;w=3600")),
            &auto(),
        )
        .unwrap();
        assert_eq!(o.window, Some(3600));
        let mut d = auto();
        d.dialect = Dialect::IetfDraft6;
        assert_eq!(
            observe(&draft6_resp("5", "5", "0", None), &d)
                .unwrap()
                .dialects,
            vec!["ietf-draft6"]
        );
        assert_eq!(Dialect::parse("draft6"), Some(Dialect::IetfDraft6));
        assert_eq!(Dialect::parse("ietf-draft6"), Some(Dialect::IetfDraft6));
    }

    #[test]
    fn draft6_syntax_errors_quote_the_field() {
        let syntax = |r: RecordedResponse| {
            let e = observe(&r, &auto()).unwrap_err();
            assert_eq!(e.property, "syntax", "{e}");
            e.message
        };
        // An epoch Reset is not the early draft's delta seconds.
        let e = syntax(draft6_resp("100", "42", "1700000030", None));
        assert!(
            e.contains("RateLimit-Reset: `1700000030` looks like an epoch time"),
            "{e}"
        );
        assert!(e.contains("delta seconds"), "{e}");
        for (l, r, t, bad) in [
            ("100", "42", "1.5", "`1.5`"),
            ("100", "-1", "3", "`-1`"),
            ("lots", "42", "3", "RateLimit-Limit"),
            ("100", "42, 41", "3", "single Integer"),
            ("100", "42", "", "RateLimit-Reset is empty"),
        ] {
            let e = syntax(draft6_resp(l, r, t, None));
            assert!(e.contains(bad), "{bad}: {e}");
        }
        let e = syntax(draft6_resp("100", "42", "3", Some("100;w=0")));
        assert!(e.contains("w must be above 0"), "{e}");
        let e = syntax(draft6_resp("100", "42", "3", Some("100;w=60;;")));
        assert!(e.contains("RateLimit-Policy"), "{e}");
        let e = syntax(draft6_resp(
            "100",
            "42",
            "3",
            Some("\"default\";q=100;w=60"),
        ));
        assert!(e.contains("RateLimit-Policy"), "{e}");
        // Named, every field must be there.
        let mut d = auto();
        d.dialect = Dialect::IetfDraft6;
        let e = observe(&resp(&[("RateLimit-Limit", "1")]), &d).unwrap_err();
        assert_eq!(e.property, "present");
        assert!(
            e.contains("RateLimit-Remaining is missing (IETF early-draft dialect)"),
            "{e}"
        );
        let e = observe(&resp(&[("RateLimit-Limit", "1")]), &auto()).unwrap_err();
        assert_eq!(e.property, "present");
    }

    #[test]
    fn draft6_consistency() {
        let inconsistent = |r: RecordedResponse| {
            let e = observe(&r, &auto()).unwrap_err();
            assert_eq!(e.property, "consistency", "{e}");
            e.message
        };
        let e = inconsistent(draft6_resp("100", "101", "3", None));
        assert!(e.contains("remaining 101 is above the limit 100"), "{e}");
        let e = inconsistent(draft6_resp("100", "4", "3", Some("50;w=60")));
        assert!(
            e.contains(
                "RateLimit-Limit is 100 but RateLimit-Policy `50;w=60` states no quota of 100"
            ),
            "{e}"
        );
        let e = inconsistent(draft6_resp("100, 50;w=60", "4", "3", None));
        assert!(e.contains("no quota of 100"), "{e}");
        // Beside legacy fields: remaining, reset and limit must agree.
        let both = |legacy: [&str; 3]| {
            resp(&[
                ("Date", DATE),
                ("X-RateLimit-Limit", legacy[0]),
                ("X-RateLimit-Remaining", legacy[1]),
                ("X-RateLimit-Reset", legacy[2]),
                ("RateLimit-Limit", "100"),
                ("RateLimit-Remaining", "42"),
                ("RateLimit-Reset", "30"),
                ("RateLimit-Policy", "100;w=60"),
            ])
        };
        let o = observe(&both(["100", "42", "1700000030"]), &auto()).unwrap();
        assert_eq!(o.dialects, vec!["legacy", "ietf-draft6"]);
        let e = inconsistent(both(["100", "41", "1700000030"]));
        assert!(
            e.contains("X-RateLimit-Remaining is 41 but RateLimit-Remaining says 42"),
            "{e}"
        );
        let e = inconsistent(both(["100", "42", "1700000040"]));
        assert!(
            e.contains("X-RateLimit-Reset is 40.0 s after Date but RateLimit-Reset says 30.0 s"),
            "{e}"
        );
        let e = inconsistent(both(["99", "42", "1700000030"]));
        assert!(
            e.contains("X-RateLimit-Limit is 99 but RateLimit-Limit says the limit is 100"),
            "{e}"
        );
        // Beside draft-7 (express-rate-limit sends both on request): the
        // shared policy and the values agree, or it says which do not.
        let with7 = |rl: &str| {
            resp(&[
                ("RateLimit-Limit", "100"),
                ("RateLimit-Remaining", "42"),
                ("RateLimit-Reset", "30"),
                ("RateLimit-Policy", "100;w=60"),
                ("RateLimit", rl),
            ])
        };
        let o = observe(&with7("limit=100, remaining=42, reset=30"), &auto()).unwrap();
        assert_eq!(o.dialects, vec!["ietf-draft6", "ietf-draft7"]);
        assert_eq!(o.window, Some(60));
        let e = inconsistent(with7("limit=100, remaining=40, reset=30"));
        assert!(
            e.contains("RateLimit-Remaining is 42 but RateLimit says 40"),
            "{e}"
        );
        // Beside the structured form, whose policy is its own.
        let r = resp(&[
            ("RateLimit-Limit", "100"),
            ("RateLimit-Remaining", "42"),
            ("RateLimit-Reset", "30"),
            ("RateLimit-Policy", "\"default\";q=100;w=60"),
            ("RateLimit", "\"default\";r=42;t=30"),
        ]);
        let o = observe(&r, &auto()).unwrap();
        assert_eq!(
            (o.dialects, o.window),
            (vec!["ietf-draft6", "ietf"], Some(60))
        );
    }

    #[test]
    fn legacy_renamed_to_the_early_names_stays_legacy() {
        // A suite that names `RateLimit-*` as its legacy headers keeps
        // today's reading (epoch Reset allowed), never read twice.
        let d = Dialects {
            dialect: Dialect::Auto,
            reset: ResetMode::Auto,
            names: LegacyNames {
                limit: "RateLimit-Limit".into(),
                remaining: "RateLimit-Remaining".into(),
                reset: "RateLimit-Reset".into(),
            },
        };
        let o = observe(&draft6_resp("100", "42", "1700000030", None), &d).unwrap();
        assert_eq!(o.dialects, vec!["legacy"]);
        assert!((o.reset_in.unwrap() - 30.0).abs() < 0.3, "{o:?}");
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
