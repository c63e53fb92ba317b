//! The transport properties an https answer's headers carry:
//! Strict-Transport-Security (RFC 6797) and the CORS grant (Fetch §3.2.5).

use crate::context::{CheckContext, Scope};
use crate::families::common::{describe, send};
use crate::families::transport::exec::https_origin;
use crate::families::transport::plan::{CorsPlan, HstsPlan};
use crate::http::Exchange;
use crate::outcome::{Assertion, Evidence, Outcome};

/// A Strict-Transport-Security value, parsed by RFC 6797 §6.1's grammar.
#[derive(Debug, PartialEq, Eq)]
struct Sts {
    max_age: Option<u64>,
    include_subdomains: bool,
    /// Why the value is not well formed, if it is not.
    problem: Option<String>,
}

fn parse_sts(value: &str) -> Sts {
    let mut sts = Sts {
        max_age: None,
        include_subdomains: false,
        problem: None,
    };
    let mut seen: Vec<String> = Vec::new();
    for directive in value.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let (name, arg) = match directive.split_once('=') {
            Some((n, a)) => (n.trim(), Some(a.trim().trim_matches('"'))),
            None => (directive, None),
        };
        let lower = name.to_ascii_lowercase();
        if seen.contains(&lower) {
            sts.problem.get_or_insert_with(|| {
                format!("the directive `{name}` appears twice (§6.1: at most once)")
            });
        }
        seen.push(lower.clone());
        match (lower.as_str(), arg) {
            ("max-age", Some(a)) => match a.parse::<u64>() {
                Ok(n) => sts.max_age = Some(n),
                Err(_) => {
                    sts.problem
                        .get_or_insert_with(|| format!("max-age `{a}` is not a number of seconds"));
                }
            },
            ("max-age", None) => {
                sts.problem
                    .get_or_insert_with(|| "max-age has no value".into());
            }
            ("includesubdomains", _) => sts.include_subdomains = true,
            _ => {}
        }
    }
    if sts.max_age.is_none() && sts.problem.is_none() {
        sts.problem = Some("no max-age directive (§6.1.1: it is required)".into());
    }
    sts
}

/// RFC 6797: an https answer carries Strict-Transport-Security with a
/// long max-age (and includeSubDomains).
pub async fn hsts(p: &HstsPlan, ctx: &CheckContext) -> Outcome {
    const REST: &[&str] = &["present", "well_formed", "max_age", "include_subdomains"];
    if let Err(o) = https_origin(ctx, REST) {
        return *o;
    }
    let r = ctx.target.render(&p.request, &Scope::new());
    let ex = match send(ctx, &r, "https request").await {
        Ok(ex) => ex,
        Err(o) => return o,
    };
    let ev = vec![Evidence::from_exchange("https request", &ex)];
    let values: Vec<&str> = ex
        .response
        .headers_all("strict-transport-security")
        .collect();
    let https = Assertion::pass("https", "the target is served over https");
    let Some(first) = values.first() else {
        return Outcome::judged(vec![
            https,
            Assertion::fail(
                "present",
                format!("{} carries no Strict-Transport-Security: a browser that once reached the API over http can be kept on http", describe(&ex)),
                "Strict-Transport-Security: max-age=…",
                "absent",
            ),
            Assertion::skipped("well_formed", "no header (see present)"),
            Assertion::skipped("max_age", "no header (see present)"),
            Assertion::skipped("include_subdomains", "no header (see present)"),
        ])
        .with_evidence(ev);
    };
    // §8.1: a user agent honours only the first header.
    let sts = parse_sts(first);
    let shown = format!("Strict-Transport-Security: {first}");
    let mut a = vec![
        https,
        Assertion::pass("present", shown.clone()),
        match &sts.problem {
            None => Assertion::pass("well_formed", format!("{shown} parses")),
            Some(why) => Assertion::fail(
                "well_formed",
                format!("{shown}: {why}"),
                "one max-age=SECONDS, no directive twice",
                first.to_string(),
            ),
        },
    ];
    a.push(match sts.max_age {
        Some(age) => Assertion::check(
            "max_age",
            age >= p.min_max_age,
            format!("max-age={age} (at least {})", p.min_max_age),
            format!(
                "max-age={age} is under {} seconds: the protection lapses between visits",
                p.min_max_age
            ),
            format!("max-age >= {}", p.min_max_age),
            age.to_string(),
        ),
        None => Assertion::skipped("max_age", "no max-age to judge (see well_formed)"),
    });
    a.push(Assertion::check(
        "include_subdomains",
        sts.include_subdomains,
        "includeSubDomains is set",
        format!("{shown} has no includeSubDomains: subdomains stay reachable over http"),
        "includeSubDomains",
        first.to_string(),
    ));
    Outcome::judged(a).with_evidence(ev)
}

/// What one answer granted an Origin.
struct Grant {
    allow_origin: Option<String>,
    credentials: bool,
}

fn grant_of(ex: &Exchange) -> Grant {
    Grant {
        allow_origin: ex
            .response
            .header("access-control-allow-origin")
            .map(|v| v.trim().to_owned()),
        credentials: ex
            .response
            .header("access-control-allow-credentials")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
    }
}

impl Grant {
    fn grants(&self, origin: &str) -> bool {
        self.allow_origin
            .as_deref()
            .is_some_and(|a| a == "*" || a.eq_ignore_ascii_case(origin))
    }
    fn shown(&self) -> String {
        format!(
            "Access-Control-Allow-Origin: {}{}",
            self.allow_origin.as_deref().unwrap_or("(none)"),
            if self.credentials {
                ", Access-Control-Allow-Credentials: true"
            } else {
                ""
            }
        )
    }
}

/// The request with `origin`, and its preflight when asked: (label, answer).
async fn ask(
    p: &CorsPlan,
    ctx: &CheckContext,
    origin: &str,
    evidence: &mut Vec<Evidence>,
) -> Result<Vec<(String, Exchange)>, Outcome> {
    let mut r = ctx.target.render(&p.request, &Scope::new());
    r.set_header("Origin", origin);
    let mut out = Vec::new();
    let label = format!("{} from {origin}", r.method);
    let ex = send(ctx, &r, &label).await?;
    evidence.push(Evidence::from_exchange(&label, &ex));
    out.push((label, ex));
    if p.preflight {
        let mut pre = r.clone();
        pre.method = reqwest::Method::OPTIONS;
        pre.body.clear();
        pre.remove_header("content-type");
        pre.set_header("Access-Control-Request-Method", r.method.as_str());
        pre.set_header(
            "Access-Control-Request-Headers",
            "authorization,content-type",
        );
        let label = format!("preflight from {origin}");
        let ex = send(ctx, &pre, &label).await?;
        evidence.push(Evidence::from_exchange(&label, &ex));
        out.push((label, ex));
    }
    Ok(out)
}

/// The origins no deployment should grant, each with why it is asked: the
/// configured hostile one; `null` (what a sandboxed iframe, a `data:` URL
/// or a redirect chain sends: a server that lists `null` grants every
/// attacker who can make one); and, from the allowed origin (else the
/// target's own host), one that extends it with a suffix and one that
/// prefixes it: what a server grants when it matches origins with
/// `startsWith`, `endsWith` or an unanchored regular expression.
pub fn hostile_origins(
    hostile: &str,
    allowed: Option<&str>,
    target: &str,
) -> Vec<(String, &'static str)> {
    let mut out = vec![
        (hostile.to_owned(), "the hostile origin"),
        ("null".to_owned(), "the opaque origin `null`"),
    ];
    let base = allowed.unwrap_or(target);
    if let Ok(u) = reqwest::Url::parse(base) {
        if let Some(host) = u.domain() {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            let scheme = u.scheme();
            out.push((
                format!("{scheme}://{host}.evil.test{port}"),
                "an origin extending the allowed host with a suffix",
            ));
            out.push((
                format!("{scheme}://evil{host}{port}"),
                "an origin ending with the allowed host",
            ));
        }
    }
    out.retain(|(o, _)| allowed.is_none_or(|a| !a.eq_ignore_ascii_case(o)));
    out
}

/// Fetch §3.2.5 and the seed's "narrow CORS list": no hostile Origin (the
/// configured one, `null`, look-alikes of the allowed one: see
/// [`hostile_origins`]) is granted, never with credentials; an allowed one
/// is. Each origin asked is a row of evidence.
pub async fn cors(p: &CorsPlan, ctx: &CheckContext) -> Outcome {
    let mut evidence = Vec::new();
    let origins = hostile_origins(
        &p.hostile_origin,
        p.allowed_origin.as_deref(),
        &ctx.target.base_url,
    );
    let mut reflected = Vec::new();
    let mut wildcard = Vec::new();
    let mut granted = Vec::new();
    let mut asked = 0;
    for (origin, why) in &origins {
        let answers = match ask(p, ctx, origin, &mut evidence).await {
            Ok(h) => h,
            Err(o) => return o.with_evidence(evidence),
        };
        for (label, ex) in &answers {
            asked += 1;
            let g = grant_of(ex);
            let exact = g
                .allow_origin
                .as_deref()
                .is_some_and(|a| a.eq_ignore_ascii_case(origin) || a == "null");
            let star = g.allow_origin.as_deref() == Some("*");
            if exact && g.credentials {
                reflected.push(format!("{label} ({why}): {}", g.shown()));
            }
            if star && g.credentials {
                wildcard.push(format!("{label}: {}", g.shown()));
            }
            if g.grants(origin) {
                granted.push(format!("{label} ({why}): {}", g.shown()));
            }
        }
    }
    let shown: Vec<&str> = origins.iter().map(|(o, _)| o.as_str()).collect();
    let shown = shown.join(", ");
    let mut a = vec![
        Assertion::check(
            "no_credentialed_reflection",
            reflected.is_empty(),
            format!("{asked} answer(s) to Origin {shown} grant none of them credentials"),
            format!(
                "any site can read a signed-in user's answers: {}",
                reflected.join("; ")
            ),
            "no hostile Origin granted with credentials",
            reflected.join("; "),
        ),
        Assertion::check(
            "no_wildcard_with_credentials",
            wildcard.is_empty(),
            "no `*` together with credentials",
            format!("`*` with credentials: {}", wildcard.join("; ")),
            "no Access-Control-Allow-Origin: * with Access-Control-Allow-Credentials: true",
            wildcard.join("; "),
        ),
        Assertion::check(
            "narrow",
            granted.is_empty(),
            format!("none of Origin {shown} is granted ({asked} answer(s))"),
            format!("the CORS list is not narrow: {}", granted.join("; ")),
            "no hostile Origin granted",
            granted.join("; "),
        ),
    ];
    a.push(match &p.allowed_origin {
        None => Assertion::skipped("allowed_granted", "no allowed_origin given"),
        Some(origin) => {
            let allowed = match ask(p, ctx, origin, &mut evidence).await {
                Ok(x) => x,
                Err(o) => return o.with_evidence(evidence),
            };
            let refused: Vec<String> = allowed
                .iter()
                .filter(|(_, ex)| !grant_of(ex).grants(origin))
                .map(|(label, ex)| format!("{label}: {}", grant_of(ex).shown()))
                .collect();
            Assertion::check(
                "allowed_granted",
                refused.is_empty(),
                format!("Origin {origin} is granted"),
                format!("the allowed origin is not granted: {}", refused.join("; ")),
                format!("Access-Control-Allow-Origin: {origin}"),
                refused.join("; "),
            )
        }
    });
    Outcome::judged(a).with_evidence(evidence)
}

#[cfg(test)]
mod tests {
    use super::{hostile_origins, parse_sts};

    #[test]
    fn look_alikes_of_the_allowed_origin_and_null_are_asked() {
        let o = hostile_origins(
            "https://evil.example",
            Some("https://app.example:8443"),
            "https://api.example",
        );
        let names: Vec<&str> = o.iter().map(|(o, _)| o.as_str()).collect();
        assert_eq!(
            names,
            [
                "https://evil.example",
                "null",
                "https://app.example.evil.test:8443",
                "https://evilapp.example:8443"
            ]
        );
        // Without an allowed origin, the target's host; an IP has no look-alike.
        let o = hostile_origins("https://evil.example", None, "https://api.example/v1");
        assert!(o.iter().any(|(o, _)| o == "https://api.example.evil.test"));
        let o = hostile_origins("https://evil.example", None, "https://127.0.0.1:8443");
        assert_eq!(o.len(), 2);
    }

    #[test]
    fn sts_values_parse_by_the_rfc_grammar() {
        let s = parse_sts("max-age=63072000; includeSubDomains; preload");
        assert_eq!(
            (s.max_age, s.include_subdomains, s.problem),
            (Some(63072000), true, None)
        );
        let s = parse_sts("max-age=\"300\"");
        assert_eq!((s.max_age, s.include_subdomains), (Some(300), false));
        assert!(parse_sts("includeSubDomains")
            .problem
            .unwrap()
            .contains("no max-age"));
        assert!(parse_sts("max-age=1; max-age=2")
            .problem
            .unwrap()
            .contains("twice"));
        assert!(parse_sts("max-age=soon")
            .problem
            .unwrap()
            .contains("not a number"));
        assert!(parse_sts("MAX-AGE=10").problem.is_none());
    }
}
