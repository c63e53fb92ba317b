//! WH-011, `webhook.accepts_header_case`: HTTP field names are
//! case-insensitive (RFC 9110 §5.1) and HTTP/2 sends them all in lower case,
//! so a receiver must find its signature headers however they are spelled.
//! tminus sends one valid delivery per spelling (lower, UPPER, aLtErNaTiNg)
//! of every header the scheme signs with, each under a fresh id; every one
//! must be acknowledged and processed.
//!
//! The probe's HTTP client writes header names in lower case on the wire
//! whatever a check asks for, so these deliveries are written as HTTP/1.1
//! bytes on a connection of tminus's own (`http::stream`, TLS for https,
//! with the probe's trust), with the names exactly as chosen.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::sender::{Run, ACKNOWLEDGED};
use crate::http::stream::Origin;
use crate::http::Rendered;
use crate::outcome::{prop, Assertion, Evidence, Outcome, PropValue};

/// The most bytes of an answer read (status line and headers are enough).
const MAX_ANSWER: usize = 64 << 10;

/// One spelling of the header names.
#[derive(Debug, Clone, Copy)]
enum Spelling {
    Lower,
    Upper,
    Alternating,
}

impl Spelling {
    const ALL: [Spelling; 3] = [Spelling::Lower, Spelling::Upper, Spelling::Alternating];

    fn name(self) -> &'static str {
        match self {
            Spelling::Lower => "lower case",
            Spelling::Upper => "UPPER CASE",
            Spelling::Alternating => "aLtErNaTiNg case",
        }
    }

    fn apply(self, name: &str) -> String {
        match self {
            Spelling::Lower => name.to_ascii_lowercase(),
            Spelling::Upper => name.to_ascii_uppercase(),
            Spelling::Alternating => name
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_lowercase()
                    } else {
                        c.to_ascii_uppercase()
                    }
                })
                .collect(),
        }
    }
}

/// What came back on the raw connection.
struct Answer {
    status: u16,
    request_id: Option<String>,
    elapsed: Duration,
}

/// The HTTP/1.1 bytes of `r` with the names of `signed` spelled by `spelling`.
fn raw_bytes(
    r: &Rendered,
    host: &str,
    path: &str,
    signed: &[String],
    spelling: Spelling,
) -> Vec<u8> {
    let mut head = format!("POST {path} HTTP/1.1\r\nHost: {host}\r\n");
    for (k, v) in &r.headers {
        if k.eq_ignore_ascii_case("host") || k.eq_ignore_ascii_case("content-length") {
            continue;
        }
        let name = if signed.iter().any(|s| s.eq_ignore_ascii_case(k)) {
            spelling.apply(k)
        } else {
            k.clone()
        };
        head.push_str(&format!("{name}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        r.body.len()
    ));
    let mut out = head.into_bytes();
    out.extend_from_slice(&r.body);
    out
}

/// The status and request id of a raw HTTP/1.1 answer.
fn parse_answer(bytes: &[u8]) -> Option<(u16, Option<String>)> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let request_id = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| {
            ["x-request-id", "trace-id"]
                .iter()
                .any(|h| k.trim().eq_ignore_ascii_case(h))
        })
        .map(|(k, v)| format!("{}: {}", k.trim(), v.trim()));
    Some((status, request_id))
}

async fn send_raw(bytes: &[u8], url: &str, timeout: Duration) -> Result<Answer, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}`: {e}"))?;
    let origin = Origin::of(&parsed)?;
    let started = Instant::now();
    let exchange = async {
        let mut s = crate::http::stream::open(&origin, timeout).await?;
        s.write_all(bytes)
            .await
            .map_err(|e| format!("could not send to {}: {e}", origin.addr))?;
        s.flush()
            .await
            .map_err(|e| format!("could not send to {}: {e}", origin.addr))?;
        let mut answer = Vec::new();
        let mut chunk = [0u8; 8192];
        // `Connection: close`: the answer ends with the connection.
        while answer.len() < MAX_ANSWER {
            match s.read(&mut chunk).await {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
                // A TLS peer that closes without close_notify: what came is the answer.
                Err(_) if !answer.is_empty() => break,
                Err(e) => return Err(format!("no answer from {}: {e}", origin.addr)),
            }
        }
        Ok::<_, String>(answer)
    };
    let answer = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| {
            format!(
                "no answer from {} within {}",
                origin.addr,
                crate::fmt_duration(timeout)
            )
        })??;
    let (status, request_id) = parse_answer(&answer)
        .ok_or_else(|| format!("{} answered something that is not HTTP/1.1", origin.addr))?;
    Ok(Answer {
        status,
        request_id,
        elapsed: started.elapsed(),
    })
}

pub(super) async fn run(r: &mut Run<'_>, now: i64) -> Outcome {
    let before = match r.count("effects before").await {
        Ok(b) => b,
        Err(o) => return o,
    };
    let mut seen = Vec::new();
    let mut props = Vec::new();
    let mut refused = None;
    for spelling in Spelling::ALL {
        let d = r.delivery(now);
        let req = r.request(&d, None);
        let signed: Vec<String> =
            r.p.scheme
                .headers(&r.p.key.0, &d, Some(&r.p.event))
                .into_iter()
                .map(|(k, _)| k)
                .collect();
        let Ok(parsed) = reqwest::Url::parse(&req.url) else {
            return Outcome::error(format!("the receiver URL `{}` is not a URL", req.url));
        };
        let path = match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_owned(),
        };
        let host = match (parsed.host_str(), parsed.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => return Outcome::error(format!("`{}` has no host", req.url)),
        };
        let names: Vec<String> = signed.iter().map(|n| spelling.apply(n)).collect();
        let label = format!("headers in {} ({})", spelling.name(), names.join(", "));
        let bytes = raw_bytes(&req, &host, &path, &signed, spelling);
        let answer = match send_raw(&bytes, &req.url, r.ctx.target.timeout).await {
            Ok(a) => a,
            Err(e) => {
                return Outcome::error(format!("{label}: {e}"))
                    .with_evidence(std::mem::take(&mut r.evidence))
            }
        };
        r.evidence.push(Evidence {
            label: label.clone(),
            request: format!("POST {}", req.url),
            status: Some(answer.status),
            request_id: answer.request_id.clone(),
            elapsed_ms: Some(answer.elapsed.as_secs_f64() * 1000.0),
            detail: None,
        });
        let shown = match &answer.request_id {
            Some(id) => format!("{} ({id})", answer.status),
            None => answer.status.to_string(),
        };
        seen.push(format!("{}: {shown}", spelling.name()));
        props.push(prop(
            format!("{}.ack_ms", spelling.name()),
            PropValue::rounded(answer.elapsed.as_secs_f64() * 1000.0, 1),
        ));
        if !r.p.accept.matches(answer.status) {
            refused.get_or_insert(Assertion::fail(
                ACKNOWLEDGED,
                format!(
                    "a valid delivery with its header names in {} was not accepted: answered {shown}; header names are case-insensitive (RFC 9110 §5.1) and HTTP/2 lowercases them all",
                    spelling.name()
                ),
                format!("status {}", r.p.accept),
                format!("status {}", answer.status),
            ));
        }
    }
    let acknowledged = refused.unwrap_or_else(|| {
        Assertion::pass(
            ACKNOWLEDGED,
            format!("accepted in every spelling: {}", seen.join("; ")),
        )
    });
    let processed = match r
        .processed(before, Spelling::ALL.len() as i64, &seen, "")
        .await
    {
        Ok(a) => a,
        Err(o) => return o,
    };
    Outcome::judged(vec![acknowledged, processed])
        .with_evidence(std::mem::take(&mut r.evidence))
        .with_properties(props)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_change_only_the_signed_names() {
        assert_eq!(Spelling::Alternating.apply("webhook-id"), "wEbHoOk-iD");
        let r = Rendered {
            method: reqwest::Method::POST,
            url: "http://h/r".into(),
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("webhook-signature".into(), "v1,x".into()),
            ],
            body: b"{}".to_vec(),
            timeout: Duration::from_secs(1),
            credential: None,
        };
        let bytes = raw_bytes(
            &r,
            "h",
            "/r",
            &["webhook-signature".into()],
            Spelling::Upper,
        );
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\r\nWEBHOOK-SIGNATURE: v1,x\r\n"), "{text}");
        assert!(
            text.contains("\r\nContent-Type: application/json\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\n\r\n{}"), "{text}");
    }

    #[test]
    fn an_answer_gives_its_status_and_request_id() {
        let a = parse_answer(b"HTTP/1.1 401 Unauthorized\r\nx-request-id: abc\r\n\r\n{}").unwrap();
        assert_eq!(a, (401, Some("x-request-id: abc".into())));
        assert!(parse_answer(b"garbage").is_none());
    }
}
