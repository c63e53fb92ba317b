//! `transport.https_redirect`: what plain http gets from the target's host.
//!
//! RFC 6797 §7.2: an HSTS host that receives a request over plain http
//! SHOULD answer with a permanent redirect to https and must not serve it.
//! tminus asks once, over a connection of its own, WITHOUT the suite's
//! headers: the credentials would cross the network in clear, which is the
//! very thing this check is about. Nothing listening, a connection closed
//! without an answer, bytes that are not HTTP (a TLS-only port answering
//! with an alert) and the refusing statuses (`refused_status`: 400, 403,
//! 421, 426) count as refused; any other answer (a 2xx, the API's 401 or
//! 404) that is not a redirect to https is served.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::exec::https_origin;
use super::plan::HttpsRedirectPlan;
use crate::context::CheckContext;
use crate::http::stream::{connect_tcp, Origin};
use crate::model::scalar::StatusSet;
use crate::outcome::{Assertion, Outcome, Verdict};

/// The most of the plain-http answer read: its head is all that is judged.
const MAX_HEAD: usize = 16 * 1024;

/// What plain http got.
#[derive(Debug, Clone, PartialEq)]
enum Plain {
    /// No TCP connection (nothing listens, or a firewall rejects).
    NotListening(String),
    /// Connected, and the server closed, went silent or spoke no HTTP.
    NoHttpAnswer(String),
    /// An HTTP answer: status, Location (if any), the status line.
    Answer {
        status: u16,
        location: Option<String>,
        line: String,
    },
}

/// The plain-http URLs to ask: the API's `path` on `http_url`'s origin
/// (after `http_url`'s own path, when it has one), else on the target's
/// host over http (port 80 when the target is on 443, else its own port:
/// a server that sniffs the first byte answers both on one port); then the
/// origin's root when it is not the same URL. A server that redirects its
/// root and serves its API in clear (nginx's `location = / { return 301 }`)
/// is caught by the first.
fn plain_urls(p: &HttpsRedirectPlan, target: &reqwest::Url) -> Result<Vec<reqwest::Url>, String> {
    let mut api = match &p.http_url {
        Some(u) => {
            let mut given = reqwest::Url::parse(u).map_err(|e| format!("http_url `{u}`: {e}"))?;
            if p.path != "/" {
                let joined = format!("{}{}", given.path().trim_end_matches('/'), p.path);
                given.set_path(&joined);
                given.set_query(None);
            }
            given
        }
        None => {
            let mut u = target.clone();
            let port = target.port_or_known_default();
            u.set_scheme("http")
                .map_err(|_| format!("`{target}` cannot be made http"))?;
            u.set_port(match port {
                Some(443) | None => None,
                other => other,
            })
            .map_err(|_| format!("`{target}` takes no port"))?;
            u.set_path(&p.path);
            u.set_query(None);
            u
        }
    };
    api.set_fragment(None);
    let mut root = api.clone();
    root.set_path("/");
    root.set_query(None);
    Ok(if root == api {
        vec![api]
    } else {
        vec![api, root]
    })
}

async fn ask(url: &reqwest::Url, timeout: Duration) -> Result<Plain, String> {
    let origin = Origin::of(url)?;
    let host_header = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str().unwrap_or("")),
        None => url.host_str().unwrap_or("").to_owned(),
    };
    let mut tcp = match tokio::time::timeout(timeout, connect_tcp(&origin)).await {
        Err(_) => {
            return Ok(Plain::NotListening(format!(
                "no connection to {} within {timeout:?} (filtered)",
                origin.addr
            )))
        }
        // A proxy's failure, or a name that does not resolve, says nothing
        // of what the target does with plain http.
        Ok(Err(e)) if e.contains("proxy") || e.contains("lookup") || e.contains("resolve") => {
            return Err(e)
        }
        Ok(Err(e)) => return Ok(Plain::NotListening(e)),
        Ok(Ok(t)) => t,
    };
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: tminus/{}\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Err(e) = tcp.write_all(request.as_bytes()).await {
        return Ok(Plain::NoHttpAnswer(format!(
            "{} closed the connection before the request was sent ({e})",
            origin.addr
        )));
    }
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    };
    if tokio::time::timeout(timeout, read).await.is_err() && head.is_empty() {
        return Ok(Plain::NoHttpAnswer(format!(
            "{} accepted the connection and answered nothing within {timeout:?}",
            origin.addr
        )));
    }
    Ok(parse_head(&head, &origin.addr))
}

fn parse_head(head: &[u8], addr: &str) -> Plain {
    if head.is_empty() {
        return Plain::NoHttpAnswer(format!("{addr} closed the connection without an answer"));
    }
    if !head.starts_with(b"HTTP/") {
        return Plain::NoHttpAnswer(format!(
            "{addr} answered {} bytes that are not HTTP (a TLS-only port's alert)",
            head.len()
        ));
    }
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("").trim().to_owned();
    let Some(status) = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
    else {
        return Plain::NoHttpAnswer(format!(
            "{addr} answered `{}`: not an HTTP status line",
            crate::redact::quote(&line)
        ));
    };
    let location = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("location"))
        .map(|(_, v)| v.trim().to_owned());
    Plain::Answer {
        status,
        location,
        line,
    }
}

pub async fn https_redirect(p: &HttpsRedirectPlan, ctx: &CheckContext) -> Outcome {
    if let Err(o) = https_origin(ctx, &["not_served", "redirect"]) {
        return *o;
    }
    let target = match reqwest::Url::parse(&ctx.target.base_url) {
        Ok(u) => u,
        Err(e) => return Outcome::error(format!("the target is not a URL: {e}")),
    };
    let urls = match plain_urls(p, &target) {
        Ok(u) => u,
        Err(e) => return Outcome::error(e),
    };
    let mut asked = Vec::new();
    for url in urls {
        match ask(&url, ctx.target.timeout).await {
            Ok(a) => asked.push((url, a)),
            Err(e) => return Outcome::error(e),
        }
    }
    Outcome::judged(judge_all(&asked, &p.refused_status))
}

/// The verdicts over every URL asked: `not_served` fails when any of them
/// is served in clear; `redirect` is judged on the first (the API's path).
fn judge_all(asked: &[(reqwest::Url, Plain)], refused: &StatusSet) -> Vec<Assertion> {
    let judged: Vec<Vec<Assertion>> = asked
        .iter()
        .map(|(url, plain)| judge(plain, url, refused))
        .collect();
    let Some(first) = judged.first() else {
        return Vec::new();
    };
    let mut out = first.clone();
    for other in &judged[1..] {
        let (Some(mine), Some(theirs)) = (
            out.iter_mut().find(|a| a.property == "not_served"),
            other.iter().find(|a| a.property == "not_served"),
        ) else {
            continue;
        };
        match (
            mine.verdict == Verdict::Fail,
            theirs.verdict == Verdict::Fail,
        ) {
            (false, true) => *mine = theirs.clone(),
            (true, _) | (false, false) => {
                mine.message = format!("{}; {}", mine.message, theirs.message);
            }
        }
    }
    out
}

fn judge(plain: &Plain, url: &reqwest::Url, refused: &StatusSet) -> Vec<Assertion> {
    let mut a = vec![Assertion::pass("https", "the target is served over https")];
    let asked = format!("GET {url} (without the suite's credentials)");
    match plain {
        Plain::NotListening(why) | Plain::NoHttpAnswer(why) => {
            a.push(Assertion::pass(
                "not_served",
                format!("{asked}: refused: {why}"),
            ));
            a.push(Assertion::skipped(
                "redirect",
                "nothing answers plain http: there is nothing to redirect",
            ));
        }
        Plain::Answer {
            status,
            location,
            line,
        } => {
            let line = crate::redact::quote(line);
            let to_https = location
                .as_deref()
                .is_some_and(|l| l.to_ascii_lowercase().starts_with("https://"));
            let to_plain = location
                .as_deref()
                .is_some_and(|l| l.to_ascii_lowercase().starts_with("http://"));
            let redirect = (300..400).contains(status) && to_https;
            if redirect || refused.matches(*status) {
                a.push(Assertion::pass(
                    "not_served",
                    format!(
                        "{asked}: `{line}`{}",
                        location
                            .as_deref()
                            .map(|l| format!(" to {l}"))
                            .unwrap_or_default()
                    ),
                ));
            } else if (300..400).contains(status) && to_plain {
                a.push(Assertion::fail(
                    "not_served",
                    format!(
                        "{asked} was answered `{line}` to {}: a redirect that stays on plain http, so the client's next request (credentials and all) goes in clear too",
                        location.as_deref().unwrap_or("")
                    ),
                    "a redirect to https:// or a refusal",
                    format!("{status} to http://"),
                ));
            } else {
                a.push(Assertion::fail(
                    "not_served",
                    format!(
                        "{asked} was answered `{line}`{}: plain http reaches the API, credentials and all",
                        location
                            .as_deref()
                            .map(|l| format!(" (Location: {l})"))
                            .unwrap_or_default()
                    ),
                    "a redirect to https:// or a refusal",
                    status.to_string(),
                ));
            }
            if redirect && matches!(status, 301 | 308) {
                a.push(Assertion::pass(
                    "redirect",
                    format!(
                        "permanent redirect {status} to {}",
                        location.as_deref().unwrap_or("")
                    ),
                ));
            } else if redirect {
                a.push(Assertion::fail(
                    "redirect",
                    format!("a temporary redirect {status}: clients do not remember it (RFC 6797 §7.2 asks for a permanent one, 301 or 308)"),
                    "301 or 308",
                    status.to_string(),
                ));
            } else {
                a.push(Assertion::fail(
                    "redirect",
                    format!(
                        "`{line}` is not a redirect to https{}",
                        location
                            .as_deref()
                            .map(|l| format!(" (Location: {l})"))
                            .unwrap_or_default()
                    ),
                    "301 or 308 to https://",
                    status.to_string(),
                ));
            }
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(http_url: Option<&str>) -> HttpsRedirectPlan {
        HttpsRedirectPlan {
            path: "/health".into(),
            http_url: http_url.map(str::to_owned),
            refused_status: StatusSet(super::super::spec::defaults::PLAIN_REFUSED_STATUS.to_vec()),
        }
    }

    #[test]
    fn the_plain_urls_are_the_path_and_the_root_on_port_80_for_443_or_the_same_port() {
        let t = |http_url: Option<&str>, u: &str| {
            plain_urls(&plan(http_url), &u.parse().unwrap())
                .unwrap()
                .iter()
                .map(|u| u.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            t(None, "https://api.example/v1"),
            "http://api.example/health http://api.example/"
        );
        assert_eq!(
            t(None, "https://api.example:8443/v1?x=1"),
            "http://api.example:8443/health http://api.example:8443/"
        );
        // http_url's origin takes the path: it is no longer dropped.
        assert_eq!(
            t(Some("http://api.example:8080/"), "https://api.example"),
            "http://api.example:8080/health http://api.example:8080/"
        );
        assert_eq!(
            t(Some("http://api.example:8080/base/"), "https://api.example"),
            "http://api.example:8080/base/health http://api.example:8080/"
        );
        let mut root = plan(Some("http://api.example:8080/x"));
        root.path = "/".into();
        assert_eq!(
            plain_urls(&root, &"https://api.example".parse().unwrap())
                .unwrap()
                .iter()
                .map(|u| u.to_string())
                .collect::<Vec<_>>(),
            ["http://api.example:8080/x", "http://api.example:8080/"]
        );
    }

    #[test]
    fn a_redirected_root_does_not_hide_an_api_served_in_clear() {
        let api: reqwest::Url = "http://h/api/items".parse().unwrap();
        let root: reqwest::Url = "http://h/".parse().unwrap();
        let asked = [
            (api, parse_head(b"HTTP/1.1 200 OK\r\n\r\n", "h:80")),
            (
                root,
                parse_head(
                    b"HTTP/1.1 301 Moved\r\nLocation: https://h/\r\n\r\n",
                    "h:80",
                ),
            ),
        ];
        let v = judge_all(&asked, &plan(None).refused_status);
        let served = v.iter().find(|a| a.property == "not_served").unwrap();
        assert_eq!(served.verdict, Verdict::Fail, "{served:?}");
        assert!(served.message.contains("/api/items"), "{}", served.message);
        // The other order: the served one still wins.
        let rev = [asked[1].clone(), asked[0].clone()];
        let v = judge_all(&rev, &plan(None).refused_status);
        assert!(v
            .iter()
            .any(|a| a.property == "not_served" && a.verdict == Verdict::Fail));
    }

    #[test]
    fn answers_are_read_as_refusals_redirects_or_service() {
        let addr = "h:80";
        assert!(matches!(parse_head(b"", addr), Plain::NoHttpAnswer(_)));
        assert!(matches!(
            parse_head(b"\x15\x03\x03\x00\x02\x02\x46", addr),
            Plain::NoHttpAnswer(_)
        ));
        let p = parse_head(b"HTTP/1.1 301 Moved\r\nlocation: https://h/x\r\n\r\n", addr);
        assert_eq!(
            p,
            Plain::Answer {
                status: 301,
                location: Some("https://h/x".into()),
                line: "HTTP/1.1 301 Moved".into()
            }
        );
        let url: reqwest::Url = "http://h/x".parse().unwrap();
        let verdicts = |p: &Plain| {
            judge(p, &url, &plan(None).refused_status)
                .iter()
                .map(|a| format!("{}={:?}", a.property, a.verdict))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let v = verdicts(&p);
        assert!(
            v.contains("not_served=Pass") && v.contains("redirect=Pass"),
            "{v}"
        );
        let v = verdicts(&parse_head(
            b"HTTP/1.1 302 Found\r\nLocation: https://h/\r\n\r\n",
            addr,
        ));
        assert!(
            v.contains("not_served=Pass") && v.contains("redirect=Fail"),
            "{v}"
        );
        let to_plain = parse_head(b"HTTP/1.1 301 Moved\r\nLocation: http://h/\r\n\r\n", addr);
        let v = verdicts(&to_plain);
        assert!(v.contains("not_served=Fail"), "{v}");
        let said = judge(&to_plain, &url, &plan(None).refused_status);
        assert!(said
            .iter()
            .any(|a| a.message.contains("stays on plain http")));
        let v = verdicts(&parse_head(b"HTTP/1.1 200 OK\r\n\r\n{}", addr));
        assert!(
            v.contains("not_served=Fail") && v.contains("redirect=Fail"),
            "{v}"
        );
        let v = verdicts(&parse_head(b"HTTP/1.1 400 Bad Request\r\n\r\n", addr));
        assert!(
            v.contains("not_served=Pass") && v.contains("redirect=Fail"),
            "{v}"
        );
        // The API's own refusals are the API answering in clear.
        for served in [
            &b"HTTP/1.1 401 Unauthorized\r\n\r\n"[..],
            b"HTTP/1.1 404 Not Found\r\n\r\n",
        ] {
            let v = verdicts(&parse_head(served, addr));
            assert!(v.contains("not_served=Fail"), "{v}");
        }
        let v = verdicts(&Plain::NotListening("refused".into()));
        assert!(
            v.contains("not_served=Pass") && v.contains("redirect=Skipped"),
            "{v}"
        );
    }
}
