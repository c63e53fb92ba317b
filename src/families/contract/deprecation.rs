//! `contract.deprecation` (CON-005): one request to an operation the
//! document marks `deprecated: true`, and its answer's `Deprecation`
//! (RFC 9745: a structured-field date, `@1688169599`) and `Sunset` (RFC 8594:
//! an HTTP-date, the document's `x-sunset` when it gives one) judged.
//! A missing header is the SHOULD the RFCs state (a MUST under `botix`); a
//! header sent in another syntax is a MUST failure, because no client can
//! read it (the forms of the drafts before RFC 9745, `true` or an
//! HTTP-date, are named as such).

use super::plan::{deprecated_operation, DeprecationPlan};
use crate::context::{CheckContext, Scope};
use crate::contract::deprecation::{http_date, unix_of, Deprecated};
use crate::families::common::{describe, evidence, send};
use crate::outcome::{Assertion, Outcome};

pub async fn run(p: &DeprecationPlan, ctx: &CheckContext) -> Outcome {
    let Some(contract) = &p.contract else {
        return Outcome::error("the suite has no `contract:` document to judge against");
    };
    let r = ctx.target.render(&p.request, &Scope::new());
    let path = reqwest::Url::parse(&r.url)
        .map(|u| u.path().to_owned())
        .unwrap_or_else(|_| crate::redact::mask_userinfo(&r.url));
    let (op, dep) = match deprecated_operation(contract, r.method.as_str(), &r.url) {
        Ok(found) => found,
        Err(why) => return Outcome::error(why),
    };
    let ex = match send(ctx, &r, "request to the deprecated operation").await {
        Ok(ex) => ex,
        Err(o) => return o,
    };
    let ev = vec![evidence("request to the deprecated operation", &ex)];
    let what = format!(
        "{} ({} {}) answered {}",
        op.id,
        r.method,
        path,
        describe(&ex)
    );
    if !(200..400).contains(&ex.status()) {
        return Outcome::error(format!(
            "{what}: a deprecated operation's headers are judged on an answer that serves it (2xx or 3xx); check the request"
        ))
        .with_evidence(ev);
    }
    let joined = |name: &str| -> Option<String> {
        let all: Vec<&str> = ex.response.headers_all(name).collect();
        (!all.is_empty()).then(|| all.join(", "))
    };
    let headers = Headers {
        deprecation: joined("deprecation"),
        sunset: joined("sunset"),
    };
    Outcome::judged(judge(dep, &headers, &what, &contract.source)).with_evidence(ev)
}

/// The two headers as received (several field lines joined by `, `).
#[derive(Debug, Default)]
pub struct Headers {
    pub deprecation: Option<String>,
    pub sunset: Option<String>,
}

/// RFC 9745 §2.1: `Deprecation = sf-date` (RFC 9651 §3.3.7: `@` and an
/// integer of seconds since the epoch). The seconds, or why not.
pub fn parse_deprecation(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let item = sfv::Parser::new(t)
        .parse::<sfv::Item>()
        .map_err(|e| draft_hint(t, format!("not a structured field item ({e})")))?;
    match item.bare_item.as_date() {
        Some(d) => Ok(i64::from(d.unix_seconds())),
        None => Err(draft_hint(
            t,
            "a structured field item, but not a date".to_owned(),
        )),
    }
}

/// `why`, naming the earlier drafts' forms when the value is one of them.
fn draft_hint(t: &str, why: String) -> String {
    if t.eq_ignore_ascii_case("true") || httpdate::parse_http_date(t).is_ok() {
        format!("{why}: `{t}` is the form of draft-ietf-httpapi-deprecation-header before RFC 9745, which made it `@<seconds since the epoch>`")
    } else {
        why
    }
}

/// The four properties, for an answer of a deprecated operation described by
/// `what` (`listLegacy (GET /x) answered 200 (x-request-id: …)`).
pub fn judge(dep: &Deprecated, h: &Headers, what: &str, doc: &str) -> Vec<Assertion> {
    let mut out = Vec::new();
    let expected_dep = "Deprecation: @<seconds since the epoch> (RFC 9745)";
    let deprecated_at = match &h.deprecation {
        None => {
            out.push(Assertion::fail(
                "deprecation",
                format!("{what} without a Deprecation header, though {doc} marks it `deprecated: true`: clients are not told (RFC 9745)"),
                expected_dep,
                "absent",
            ));
            out.push(Assertion::skipped(
                "deprecation_valid",
                "no Deprecation header (see deprecation)",
            ));
            None
        }
        Some(v) => {
            out.push(Assertion::pass(
                "deprecation",
                format!("{what} with Deprecation: {v}"),
            ));
            match parse_deprecation(v) {
                Ok(at) => {
                    out.push(Assertion::pass(
                        "deprecation_valid",
                        format!("Deprecation: {v} is a date ({})", http_date(at)),
                    ));
                    Some(at)
                }
                Err(why) => {
                    out.push(Assertion::fail(
                        "deprecation_valid",
                        format!(
                            "{what} with Deprecation: `{v}`, which is not an RFC 9745 date: {why}"
                        ),
                        "Deprecation: @<seconds since the epoch>, e.g. @1688169599",
                        v.clone(),
                    ));
                    None
                }
            }
        }
    };
    let documented = dep.sunset.as_ref().and_then(|s| s.as_ref().ok()).copied();
    let sunset_at = match &h.sunset {
        None => {
            out.push(Assertion::skipped("sunset_valid", "no Sunset header"));
            None
        }
        Some(v) => match httpdate::parse_http_date(v.trim()) {
            Ok(t) => {
                out.push(Assertion::pass(
                    "sunset_valid",
                    format!("Sunset: {v} is an HTTP-date"),
                ));
                Some(unix_of(t))
            }
            Err(_) => {
                out.push(Assertion::fail(
                    "sunset_valid",
                    format!("{what} with Sunset: `{v}`, which is not an HTTP-date (RFC 8594 §3)"),
                    "Sunset: <HTTP-date>, e.g. Wed, 30 Jun 2027 23:59:59 GMT",
                    v.clone(),
                ));
                out.push(Assertion::skipped(
                    "sunset",
                    "the Sunset header is not a date (see sunset_valid)",
                ));
                return out;
            }
        },
    };
    out.push(match (documented, sunset_at) {
        (None, None) => Assertion::skipped(
            "sunset",
            format!("{doc} gives no x-sunset for it and the answer no Sunset: no date to judge"),
        ),
        (Some(d), None) => Assertion::fail(
            "sunset",
            format!(
                "{what} without a Sunset header, though {doc} gives x-sunset {} (RFC 8594)",
                d.show()
            ),
            format!("Sunset: {}", d.show()),
            "absent",
        ),
        (Some(d), Some(at)) if !d.matches(at) => Assertion::fail(
            "sunset",
            format!(
                "{what} with Sunset: {}, not the date {doc} gives (x-sunset {})",
                http_date(at),
                d.show()
            ),
            format!("Sunset: {}", d.show()),
            http_date(at),
        ),
        (_, Some(at)) if deprecated_at.is_some_and(|dep_at| at < dep_at) => {
            let dep_at = deprecated_at.unwrap_or_default();
            Assertion::fail(
                "sunset",
                format!(
                    "{what} with Sunset: {} earlier than its Deprecation date {} (RFC 9745 §4)",
                    http_date(at),
                    http_date(dep_at)
                ),
                format!("a Sunset not earlier than {}", http_date(dep_at)),
                http_date(at),
            )
        }
        (Some(_), Some(at)) => Assertion::pass(
            "sunset",
            format!("Sunset: {} is the date {doc} gives", http_date(at)),
        ),
        (None, Some(at)) => Assertion::pass(
            "sunset",
            format!(
                "Sunset: {} ({doc} gives no x-sunset to compare with)",
                http_date(at)
            ),
        ),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::deprecation::{parse_doc_date, Deprecated};
    use crate::outcome::Verdict as V;

    fn verdicts(
        dep: &Deprecated,
        d: Option<&str>,
        s: Option<&str>,
    ) -> Vec<(&'static str, V, String)> {
        let h = Headers {
            deprecation: d.map(str::to_owned),
            sunset: s.map(str::to_owned),
        };
        let mut v: Vec<_> = judge(dep, &h, "op (GET /x) answered 200", "doc.json")
            .into_iter()
            .map(|a| (a.property, a.verdict, a.message))
            .collect();
        v.sort_by_key(|(p, _, _)| *p);
        v
    }

    fn only(v: &[(&'static str, V, String)]) -> Vec<(&'static str, V)> {
        v.iter().map(|(p, v, _)| (*p, *v)).collect()
    }

    #[test]
    fn the_rfc_9745_date_parses_and_the_draft_forms_are_named() {
        assert_eq!(parse_deprecation("@1688169599"), Ok(1_688_169_599));
        assert_eq!(parse_deprecation(" @1688169599 "), Ok(1_688_169_599));
        for draft in ["true", "Sun, 11 Nov 2018 23:59:59 GMT"] {
            let e = parse_deprecation(draft).unwrap_err();
            assert!(e.contains("before RFC 9745"), "{draft}: {e}");
        }
        assert!(parse_deprecation("1688169599")
            .unwrap_err()
            .contains("not a date"));
        assert!(parse_deprecation("@1.5").is_err());
        assert!(
            parse_deprecation("@1, @2").is_err(),
            "two field lines are no item"
        );
    }

    #[test]
    fn both_headers_are_judged_against_the_document() {
        let dated = Deprecated {
            sunset: Some(parse_doc_date("2027-06-30")),
        };
        let good = verdicts(
            &dated,
            Some("@1767225600"),
            Some("Wed, 30 Jun 2027 23:59:59 GMT"),
        );
        assert_eq!(
            only(&good),
            [
                ("deprecation", V::Pass),
                ("deprecation_valid", V::Pass),
                ("sunset", V::Pass),
                ("sunset_valid", V::Pass)
            ]
        );
        // Both dropped: the two presence properties fail, the syntax ones
        // have nothing to judge.
        let none = verdicts(&dated, None, None);
        assert_eq!(
            only(&none),
            [
                ("deprecation", V::Fail),
                ("deprecation_valid", V::Skipped),
                ("sunset", V::Fail),
                ("sunset_valid", V::Skipped)
            ]
        );
        assert!(
            none[2]
                .2
                .contains("gives x-sunset Wed, 30 Jun 2027 (any time of that day, GMT)"),
            "{}",
            none[2].2
        );
        // A draft's `true`: malformed, named.
        let draft = verdicts(&dated, Some("true"), Some("Wed, 30 Jun 2027 12:00:00 GMT"));
        assert_eq!(draft[1].1, V::Fail);
        assert!(draft[1].2.contains("Deprecation: `true`"), "{}", draft[1].2);
        assert_eq!(draft[2].1, V::Pass, "any time of the documented day");
        // Another day; a malformed Sunset.
        let other = verdicts(
            &dated,
            Some("@1767225600"),
            Some("Thu, 01 Jul 2027 00:00:00 GMT"),
        );
        assert_eq!(other[2].1, V::Fail);
        assert!(
            other[2].2.contains("not the date doc.json gives"),
            "{}",
            other[2].2
        );
        let bad = verdicts(&dated, Some("@1767225600"), Some("2027-06-30"));
        assert_eq!(
            only(&bad),
            [
                ("deprecation", V::Pass),
                ("deprecation_valid", V::Pass),
                ("sunset", V::Skipped),
                ("sunset_valid", V::Fail)
            ]
        );
        // No documented date: a Sunset is still read, and not before the
        // deprecation; none at all is not judged.
        let undated = Deprecated { sunset: None };
        assert_eq!(
            verdicts(&undated, Some("@1767225600"), None)[2].1,
            V::Skipped
        );
        let early = verdicts(
            &undated,
            Some("@1767225600"),
            Some("Mon, 01 Jan 2024 00:00:00 GMT"),
        );
        assert_eq!(early[2].1, V::Fail);
        assert!(
            early[2].2.contains("earlier than its Deprecation date"),
            "{}",
            early[2].2
        );
    }
}
