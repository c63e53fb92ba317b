//! TRC-006: how a target mutates W3C `tracestate` (Trace Context §3.3).
//!
//! The check sends a valid traceparent with a 3-member and a 33-member
//! tracestate and judges the tracestate the target returns (or forwards, echoed
//! in a response header): members it did not touch keep their order, any new or
//! updated key sits leftmost, at most 32 members, and only whole members, never
//! a cut-off value. The judging is a pure function ([`judge`]) so it can be
//! unit-tested without a server.

use std::collections::HashSet;

use super::traceparent::{self, random_parent_id, random_trace_id};
use crate::context::CheckContext;
use crate::context::Scope;
use crate::families::common::{clip, describe, evidence as ev_of, send};
use crate::families::trace::plan::TracestatePlan;
use crate::outcome::Outcome;
use crate::outcome::{prop, Assertion};

/// W3C limit on list-members in one tracestate.
pub const MAX_MEMBERS: usize = 32;

fn key_char(b: u8) -> bool {
    matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/')
}

/// `simple-key` (lcalpha, then up to 255 key chars) or `tenant@system`
/// (tenant: lcalpha/digit then up to 240; system: lcalpha then up to 13).
pub fn is_valid_key(k: &str) -> bool {
    let b = k.as_bytes();
    match k.split_once('@') {
        None => {
            (1..=256).contains(&b.len())
                && b[0].is_ascii_lowercase()
                && b.iter().all(|&c| key_char(c))
        }
        Some((tenant, system)) => {
            let (t, s) = (tenant.as_bytes(), system.as_bytes());
            (1..=241).contains(&t.len())
                && (t[0].is_ascii_lowercase() || t[0].is_ascii_digit())
                && t.iter().all(|&c| key_char(c))
                && (1..=14).contains(&s.len())
                && s[0].is_ascii_lowercase()
                && s.iter().all(|&c| key_char(c))
        }
    }
}

/// 1..=256 printable ASCII characters other than `,` and `=`, not ending in a space.
pub fn is_valid_value(v: &str) -> bool {
    let b = v.as_bytes();
    (1..=256).contains(&b.len())
        && b.iter()
            .all(|&c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
        && b[b.len() - 1] != b' '
}

/// The non-empty list-members of a tracestate value, OWS trimmed (empty
/// members are allowed by the grammar and carry nothing).
pub fn members(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(|m| m.trim_matches([' ', '\t']))
        .filter(|m| !m.is_empty())
        .collect()
}

/// `(key, value)` of a well-formed member.
pub fn split_member(m: &str) -> Option<(&str, &str)> {
    let (k, v) = m.split_once('=')?;
    (is_valid_key(k) && is_valid_value(v)).then_some((k, v))
}

/// What [`judge`] found in a returned tracestate.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Judged {
    /// Members in the returned value.
    pub members: usize,
    /// Sent members returned unchanged.
    pub forwarded: usize,
    /// New or updated keys (all leftmost).
    pub added: Vec<String>,
    /// Every rule the value breaks, each quoting the member concerned.
    pub problems: Vec<String>,
    /// The property each of `problems` breaks, in the same order.
    pub rules: Vec<&'static str>,
}

/// The properties of `trace.tracestate` (W3C Trace Context §3.3.1).
pub const AT_MOST_32: &str = "at_most_32";
pub const WHOLE_MEMBERS: &str = "whole_members";
pub const ORDER_KEPT: &str = "order_kept";
pub const NEW_KEYS_LEFTMOST: &str = "new_keys_leftmost";
pub const MEMBERS_KEPT: &str = "members_kept";
/// In the order reported.
pub const RULES: [&str; 5] = [
    AT_MOST_32,
    WHOLE_MEMBERS,
    ORDER_KEPT,
    NEW_KEYS_LEFTMOST,
    MEMBERS_KEPT,
];

impl Judged {
    fn broke(&mut self, rule: &'static str, problem: String) {
        self.problems.push(problem);
        self.rules.push(rule);
    }

    /// The problems that break `rule`.
    pub fn breaking(&self, rule: &'static str) -> impl Iterator<Item = &str> {
        self.problems
            .iter()
            .zip(&self.rules)
            .filter(move |(_, r)| **r == rule)
            .map(|(p, _)| p.as_str())
    }
}

/// Judges a returned tracestate against the `sent` members (in sent order).
/// With `keep_all` every sent member must come back (nothing may be dropped
/// while under the 32-member limit).
pub fn judge(sent: &[(String, String)], returned: &str, keep_all: bool) -> Judged {
    let ms = members(returned);
    let mut j = Judged {
        members: ms.len(),
        ..Judged::default()
    };
    if ms.len() > MAX_MEMBERS {
        j.broke(
            AT_MOST_32,
            format!("{} members, more than {MAX_MEMBERS}", ms.len()),
        );
    }
    let mut keys = HashSet::new();
    // Index in `sent` of the last member forwarded unchanged; once one is seen,
    // the leftmost part (new and updated keys) is over.
    let mut last: Option<usize> = None;
    // Reported once: a reversed list would otherwise name every member.
    let mut out_of_order = Vec::new();
    for (pos, m) in ms.iter().enumerate() {
        let Some((k, v)) = split_member(m) else {
            j.broke(
                WHOLE_MEMBERS,
                format!(
                    "member #{} `{}` is not a whole key=value entry",
                    pos + 1,
                    clip(m)
                ),
            );
            continue;
        };
        if !keys.insert(k) {
            j.broke(WHOLE_MEMBERS, format!("key `{k}` appears twice"));
            continue;
        }
        match sent.iter().position(|(sk, _)| sk == k) {
            Some(i) if sent[i].1 == v => {
                if let Some(l) = last {
                    if i < l {
                        out_of_order.push(format!(
                            "`{k}` (sent #{}) comes after `{}` (sent #{})",
                            i + 1,
                            sent[l].0,
                            l + 1
                        ));
                    }
                }
                last = Some(last.map_or(i, |l| l.max(i)));
                j.forwarded += 1;
            }
            Some(i) if last.is_some() && sent[i].1.starts_with(v) => j.broke(
                WHOLE_MEMBERS,
                format!(
                    "member #{} `{}` is a cut-off copy of `{}={}` (partial entry)",
                    pos + 1,
                    clip(m),
                    k,
                    clip(&sent[i].1)
                ),
            ),
            Some(_) if last.is_some() => j.broke(
                NEW_KEYS_LEFTMOST,
                format!("`{k}` was updated to `{}` but not moved leftmost", clip(v)),
            ),
            None if last.is_some() => j.broke(
                NEW_KEYS_LEFTMOST,
                format!("new key `{k}` at member #{} is not leftmost", pos + 1),
            ),
            _ => j.added.push(k.to_owned()),
        }
    }
    if let Some(first) = out_of_order.first() {
        let more = match out_of_order.len() {
            1 => String::new(),
            n => format!(" ({} more members out of order)", n - 1),
        };
        j.broke(ORDER_KEPT, format!("member order changed: {first}{more}"));
    }
    if keep_all {
        let dropped: Vec<&str> = sent
            .iter()
            .filter(|(sk, sv)| {
                !ms.iter()
                    .any(|m| split_member(m) == Some((sk.as_str(), sv.as_str())))
            })
            .map(|(k, _)| k.as_str())
            .collect();
        let updated = |k: &str| j.added.iter().any(|a| a == k);
        let dropped: Vec<&str> = dropped.into_iter().filter(|k| !updated(k)).collect();
        if !dropped.is_empty() {
            j.broke(
                MEMBERS_KEPT,
                format!(
                    "{} of {} sent members dropped under the {MAX_MEMBERS}-member limit: {}",
                    dropped.len(),
                    sent.len(),
                    dropped.join(", ")
                ),
            );
        }
    }
    j
}

/// `n` members `tminus-chk<i>=<i><random>`: random values so that a member
/// coming back is known to come from this request.
pub fn sample(n: usize) -> Vec<(String, String)> {
    let salt = random_parent_id();
    (0..n)
        .map(|i| (format!("tminus-chk{i:02}"), format!("v{i:02}{salt}")))
        .collect()
}

pub fn join(members: &[(String, String)]) -> String {
    members
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// TRC-006, one property per rule of W3C Trace Context §3.3.1 (see
/// [`RULES`]); a rule no returned value breaks holds for the values that came
/// back. No tracestate at all is skipped (or, with `required`, fails every
/// rule): there was nothing to judge.
pub async fn run(p: &TracestatePlan, ctx: &CheckContext) -> Outcome {
    let mut evidence = Vec::new();
    // Per rule: `<label>: <problems> (<header>: <value>; response <status>)`.
    let mut broken: Vec<(&'static str, String)> = Vec::new();
    let mut seen = Vec::new();
    let mut returned_any = Vec::new();
    let mut props = Vec::new();
    for n in [3usize, 33] {
        let label = format!("{n} members");
        let sent = sample(n);
        let mut r = ctx.target.render(&p.request, &Scope::new());
        r.set_header(
            "traceparent",
            traceparent::format(&random_trace_id(), &random_parent_id()),
        );
        r.set_header("tracestate", join(&sent));
        let ex = match send(ctx, &r, &label).await {
            Ok(ex) => ex,
            Err(o) => return o.with_evidence(evidence),
        };
        evidence.push(ev_of(&label, &ex));
        if !p.status.matches(ex.status()) {
            return Outcome::error(format!(
                "the request with a {label} tracestate answered {} instead of {}, so tracestate cannot be judged",
                describe(&ex),
                p.status
            ))
            .with_evidence(evidence);
        }
        // Several header lines form one list (RFC 9110 §5.3).
        let lines: Vec<&str> = ex.response.headers_all(&p.header).collect();
        if lines.is_empty() {
            returned_any.push(false);
            seen.push(format!("{label}: no {} ({})", p.header, describe(&ex)));
            continue;
        }
        returned_any.push(true);
        let value = lines.join(",");
        // A list over the limit is invalid input; discarding it whole is allowed.
        let j = judge(&sent, &value, n <= MAX_MEMBERS);
        props.push(prop(format!("members_returned_for_{n}"), j.members));
        seen.push(format!(
            "{label}: {} members back ({} forwarded, new/updated leftmost: {})",
            j.members,
            j.forwarded,
            if j.added.is_empty() {
                "none".into()
            } else {
                j.added.join(", ")
            }
        ));
        for rule in RULES {
            let problems: Vec<&str> = j.breaking(rule).collect();
            if !problems.is_empty() {
                broken.push((
                    rule,
                    format!(
                        "{label}: {} ({}: {}; response {})",
                        problems.join(", "),
                        p.header,
                        clip(&value),
                        describe(&ex)
                    ),
                ));
            }
        }
    }
    match returned_any.as_slice() {
        [false, false] => {
            let judged = RULES
                .iter()
                .map(|rule| {
                    if p.required {
                        Assertion::fail(
                            rule,
                            format!("no {} on either response: {}", p.header, seen.join("; ")),
                            format!("{} returned (required: true)", p.header),
                            format!("no {}", p.header),
                        )
                    } else {
                        Assertion::skipped(
                            rule,
                            format!(
                                "the target returns no {} (sent 3 and 33 members), so its tracestate handling cannot be judged; set `required: true` to make this a failure",
                                p.header
                            ),
                        )
                    }
                })
                .collect();
            return Outcome::judged(judged).with_evidence(evidence);
        }
        [false, true] => broken.insert(
            0,
            (
                MEMBERS_KEPT,
                format!(
                    "the valid 3-member tracestate was dropped while the 33-member one came back in {}",
                    p.header
                ),
            ),
        ),
        _ => {}
    }
    let judged = RULES
        .iter()
        .map(|rule| {
            let mine: Vec<&str> = broken
                .iter()
                .filter(|(r, _)| r == rule)
                .map(|(_, m)| m.as_str())
                .collect();
            if mine.is_empty() {
                Assertion::pass(rule, format!("tracestate mutated by the rules: {}", seen.join("; ")))
            } else {
                Assertion::fail(
                    rule,
                    format!("tracestate rules broken: {}", mine.join("; ")),
                    format!(
                        "{}: sent members in sent order, new keys leftmost, at most {MAX_MEMBERS} whole members",
                        p.header
                    ),
                    mine[0].to_owned(),
                )
            }
        })
        .collect();
    Outcome::judged(judged)
        .with_evidence(evidence)
        .with_properties(props)
}
