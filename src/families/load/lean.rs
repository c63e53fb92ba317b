//! Each load user's own HTTP/1.1 connection (issue 29): a hyper client
//! connection per goose user, as `idempotency.concurrent`'s pre-opened
//! connections, instead of the shared reqwest client, and the request head
//! of a kind that never changes built once.
//!
//! Profiled on the bench (`bench/README.md`), a burst request through
//! reqwest spent about a third of tminus's own CPU outside the exchange:
//! the URL parsed again per request (by the client, by the origin guard),
//! header names and values parsed into a new map, the pooled client's
//! checkout and clones. Here a kind whose rendering never changes (no
//! `${uuid}`, no OAuth2 token that is renewed) is rendered once into a
//! [`Head`]: method, origin-form URI and header map, cloned per request;
//! only the idempotency key is added. Other kinds are converted per request.
//!
//! Used for a target reached straight (no proxy for its origin: a forward
//! proxy is reqwest's to speak), over http or https (rustls with the probe's
//! trust and client certificate, `http::stream`), always HTTP/1.1: one
//! connection per user, as browsers' and SDKs' clients open them (reqwest
//! would multiplex every user onto one HTTP/2 connection where the server
//! offers it). A connection the target
//! closed is reopened for the next request (and one the target closed while
//! idle, before the request was written, gets it on a new connection); the
//! burst's cut closes every connection at once.

use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, HOST};
use http::{HeaderMap, Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

use super::engine::TLS;
use crate::http::stream::{self, OpenError, Origin, Stream};
use crate::http::Rendered;

/// Time to open a connection (TCP, TLS), as the probe's client allows.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// How one request kind's requests are sent on the users' connections.
pub struct LeanKind {
    pub origin: Origin,
    /// `host[:port]` as the Host header gives it.
    pub authority: HeaderValue,
    /// The head of a kind that renders the same every time.
    pub fixed: Option<Head>,
}

/// A request head built once.
#[derive(Clone)]
pub struct Head {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl LeanKind {
    /// The lean path for a kind rendered as `r` (and as `again`, a second
    /// rendering: when they differ the kind has per-request parts). None:
    /// reqwest sends it (a proxy applies, a URL tminus cannot dial).
    pub fn new(r: &Rendered, again: &Rendered, fixed_ok: bool) -> Option<LeanKind> {
        let url = reqwest::Url::parse(&r.url).ok()?;
        if crate::http::proxy::installed().is_some_and(|p| p.for_url(&url).is_some()) {
            return None;
        }
        // Credentials in the URL are reqwest's to turn into Basic auth.
        if !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        let origin = Origin::of(&url).ok()?;
        let host = url.host_str()?;
        let authority = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_owned(),
        };
        let authority = HeaderValue::from_str(&authority).ok()?;
        // A kind that cannot even be converted once goes through reqwest.
        let once = head(r, &authority)?;
        let fixed = (fixed_ok && same_rendering(r, again)).then_some(once);
        Some(LeanKind {
            origin,
            authority,
            fixed,
        })
    }
}

/// Two renderings of one kind that send the same bytes: the kind has no
/// part made per request (`${uuid}`).
pub fn same_rendering(a: &Rendered, b: &Rendered) -> bool {
    a.method == b.method && a.url == b.url && a.headers == b.headers && a.body == b.body
}

/// `r` as a request head (None: a header or the URL HTTP cannot carry).
pub fn head(r: &Rendered, authority: &HeaderValue) -> Option<Head> {
    let url = reqwest::Url::parse(&r.url).ok()?;
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let uri: Uri = path.parse().ok()?;
    let mut headers = HeaderMap::with_capacity(r.headers.len() + 3);
    for (k, v) in &r.headers {
        let name = HeaderName::from_bytes(k.as_bytes()).ok()?;
        let value = HeaderValue::from_str(v).ok()?;
        headers.append(name, value);
    }
    // A suite's own Host (a virtual host) wins, as with reqwest.
    if !headers.contains_key(HOST) {
        headers.insert(HOST, authority.clone());
    }
    // What reqwest sent by default, so the target sees the same request.
    if !headers.contains_key(http::header::ACCEPT) {
        headers.insert(http::header::ACCEPT, HeaderValue::from_static("*/*"));
    }
    if !headers.contains_key(http::header::USER_AGENT) {
        headers.insert(
            http::header::USER_AGENT,
            HeaderValue::from_static(concat!("tminus/", env!("CARGO_PKG_VERSION"))),
        );
    }
    Some(Head {
        method: r.method.clone(),
        uri,
        headers,
        body: Bytes::from(r.body.clone()),
    })
}

/// A user's connection: the handle requests are given to. The connection
/// itself is driven by a task of its own, which ends when the target
/// closes it or the burst is cut. (Driving it from the user's task instead
/// measured about 12 % more CPU per request on the bench: one task polling
/// both futures, where two tasks spread over the runtime's threads.)
pub struct UserConn {
    sender: Sender,
}

impl UserConn {
    /// Whether a request may be sent on it.
    pub fn usable(&self) -> bool {
        !self.sender.is_closed()
    }
}

/// Opens a connection to `origin` and drives it until it closes or the
/// burst is cut. Err: the transport error kind (`connect`, `tls`).
pub async fn open(
    origin: &Origin,
    mut cut: tokio::sync::watch::Receiver<bool>,
) -> Result<UserConn, &'static str> {
    let stream: Stream = if origin.tls {
        let config = stream::http1_config().map_err(|_| TLS)?;
        match stream::open_tls(origin, config, CONNECT_TIMEOUT).await {
            Ok(s) => Box::new(s),
            Err(OpenError::Handshake(_)) => return Err(TLS),
            Err(OpenError::Other(_)) => return Err("connect"),
        }
    } else {
        match tokio::time::timeout(CONNECT_TIMEOUT, stream::connect_tcp(origin)).await {
            Ok(Ok(s)) => Box::new(s),
            _ => return Err("connect"),
        }
    };
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|_| "connect")?;
    tokio::spawn(async move {
        tokio::select! {
            _ = conn => {}
            // Dropping the connection closes it: the burst ends now.
            _ = cut.wait_for(|c| *c) => {}
        }
    });
    Ok(UserConn { sender })
}

/// The answer as far as a burst needs it: its status, and the head and
/// body when `keep` (the contract sample) asked, up to `max_body` bytes.
pub struct Answer {
    pub status: u16,
    pub kept: Option<Kept>,
}

/// A sampled answer's headers and body.
pub type Kept = (Vec<(String, String)>, Vec<u8>);

/// Why an exchange ended without an answer.
pub enum Failed {
    /// The request was never written (a connection the target closed
    /// while idle): it may go on a new connection.
    NotSent(Box<Request<Full<Bytes>>>),
    /// The transport error kind.
    Kind(&'static str),
}

/// Sends `req` on `c` and reads the answer to its last byte.
pub async fn exchange(
    c: &mut UserConn,
    req: Request<Full<Bytes>>,
    keep: impl FnOnce(u16) -> bool,
    max_body: usize,
) -> Result<Answer, Failed> {
    let resp = match c.sender.try_send_request(req).await {
        Ok(r) => r,
        Err(mut e) => {
            return Err(match e.take_message() {
                Some(req) => Failed::NotSent(Box::new(req)),
                None => Failed::Kind("transport"),
            })
        }
    };
    let status = resp.status().as_u16();
    let mut kept = keep(status).then(|| (super::sample::headers_of(resp.headers()), Vec::new()));
    let mut body = resp.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| Failed::Kind("body"))?;
        if let (Some(data), Some((_, buf))) = (frame.data_ref(), kept.as_mut()) {
            if buf.len() + data.len() > max_body {
                kept = None;
            } else {
                buf.extend_from_slice(data);
            }
        }
    }
    Ok(Answer { status, kept })
}

/// The request for one send: the fixed head cloned (with the key), or `r`
/// converted now.
/// `fixed_ok` false: `r` differs from the fixed head (a renewed token).
pub fn request(
    kind: &LeanKind,
    r: &Rendered,
    key: Option<(&str, &str)>,
    fixed_ok: bool,
) -> Option<Request<Full<Bytes>>> {
    let fixed = kind.fixed.as_ref().filter(|_| fixed_ok);
    let mut h = match fixed {
        Some(f) => f.clone(),
        None => head(r, &kind.authority)?,
    };
    if let (Some((name, value)), Some(_)) = (key, fixed) {
        let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
        h.headers.insert(name, HeaderValue::from_str(value).ok()?);
    }
    let mut req = Request::new(Full::new(h.body));
    *req.method_mut() = h.method;
    *req.uri_mut() = h.uri;
    *req.headers_mut() = h.headers;
    Some(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(url: &str, headers: &[(&str, &str)]) -> Rendered {
        Rendered {
            method: Method::GET,
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
            timeout: Duration::from_secs(1),
            credential: None,
        }
    }

    #[test]
    fn a_fixed_head_carries_what_reqwest_would_send() {
        let r = rendered(
            "http://127.0.0.1:8080/a/b?limit=5",
            &[("Authorization", "Bearer k")],
        );
        let k = LeanKind::new(&r, &r, true).expect("lean");
        let h = k.fixed.as_ref().expect("fixed");
        assert_eq!(h.uri, "/a/b?limit=5");
        assert_eq!(h.headers[HOST], "127.0.0.1:8080");
        assert_eq!(h.headers["authorization"], "Bearer k");
        assert_eq!(h.headers["accept"], "*/*");
        // The key is added to the fixed head; nothing else changes.
        let req = request(&k, &r, Some(("Idempotency-Key", "abc")), true).unwrap();
        assert_eq!(req.headers()["idempotency-key"], "abc");
        assert_eq!(req.headers().len(), h.headers.len() + 1);
    }

    #[test]
    fn what_lean_does_not_carry_stays_with_reqwest_or_per_request() {
        // A suite's own Host wins (one Host header only).
        let r = rendered("http://127.0.0.1:8080/", &[("Host", "api.example")]);
        let k = LeanKind::new(&r, &r, true).unwrap();
        let h = k.fixed.unwrap();
        assert_eq!(h.headers.get_all(HOST).iter().count(), 1);
        assert_eq!(h.headers[HOST], "api.example");
        // Credentials in the URL: reqwest's Basic auth.
        let r = rendered("http://u:p@127.0.0.1:8080/", &[]);
        assert!(LeanKind::new(&r, &r, true).is_none());
        // Two renderings that differ: converted per request, not fixed.
        let a = rendered("http://127.0.0.1:8080/x", &[("X-Id", "1")]);
        let b = rendered("http://127.0.0.1:8080/x", &[("X-Id", "2")]);
        assert!(LeanKind::new(&a, &b, true).unwrap().fixed.is_none());
        assert!(LeanKind::new(&a, &a, false).unwrap().fixed.is_none());
    }
}
