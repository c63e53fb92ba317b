//! An OAuth 2.0 token endpoint (RFC 6749 §4.4, client credentials) and the
//! bearer tokens it issues, which the public API accepts beside its API keys.
//!
//! `POST /oauth/token` authenticates a configured client (HTTP Basic, or
//! `client_id`/`client_secret` in the form, §2.3.1; never both) and issues an
//! opaque token living [`ReferenceConfig::token_lifetime`]: the default
//! clients are `ref_client` / `ref_client_secret` (tenant `oauth:ref_client`)
//! and `ref_client_b` / `ref_client_b_secret` (a second tenant). A wrong
//! secret is 401 `{"error":"invalid_client"}`; an issued token past its
//! lifetime is 401 with `WWW-Authenticate: Bearer error="invalid_token"`
//! (RFC 6750 §3.1).
//!
//! `GET /__tminus/oauth` (a test hook, no auth) counts what happened: tokens
//! issued, clients refused, tokens the API accepted and refused as expired,
//! and every request outside the token endpoint that carried a client
//! secret or a Basic credential (`secret_seen_elsewhere`,
//! `basic_seen_elsewhere`): a client that leaks its secret to the API is
//! caught by the target itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use serde_json::json;

/// The default client (tenant `oauth:ref_client`).
pub const CLIENT_ID: &str = "ref_client";
pub const CLIENT_SECRET: &str = "ref_client_secret";
/// The second default client, for cross-tenant checks.
pub const SECOND_CLIENT_ID: &str = "ref_client_b";
pub const SECOND_CLIENT_SECRET: &str = "ref_client_b_secret";
/// How long an issued token is accepted by default.
pub const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// The token endpoint's path.
pub const TOKEN_PATH: &str = "/oauth/token";
/// Issued tokens kept (expired ones are forgotten first past this).
const MAX_TOKENS: usize = 100_000;
/// How long an expired token is still told apart from an unknown one.
const REMEMBER_EXPIRED: Duration = Duration::from_secs(3600);

/// The token endpoint's state: its clients, the tokens it issued, and the
/// counters of `/__tminus/oauth`. Cheap to clone.
#[derive(Clone)]
pub(crate) struct OAuth {
    inner: Arc<Inner>,
}

struct Inner {
    clients: Vec<(String, String)>,
    /// What a leaked secret looks like: each raw, and each `id:secret` in base64.
    needles: Vec<String>,
    lifetime: Duration,
    /// Token -> (client id, expiry).
    tokens: Mutex<HashMap<String, (String, Instant)>>,
    issued: AtomicU64,
    refused_clients: AtomicU64,
    accepted: AtomicU64,
    expired: AtomicU64,
    secret_elsewhere: AtomicU64,
    basic_elsewhere: AtomicU64,
}

/// What the API makes of a Bearer token.
pub(crate) enum Lookup {
    /// Issued to this client and unexpired.
    Valid(String),
    Expired,
    Unknown,
}

impl OAuth {
    pub(crate) fn new(clients: Vec<(String, String)>, lifetime: Duration) -> Self {
        let needles = clients
            .iter()
            .flat_map(|(id, secret)| {
                [
                    secret.clone(),
                    base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}")),
                ]
            })
            .filter(|n| !n.is_empty())
            .collect();
        OAuth {
            inner: Arc::new(Inner {
                clients,
                needles,
                lifetime,
                tokens: Mutex::new(HashMap::new()),
                issued: AtomicU64::new(0),
                refused_clients: AtomicU64::new(0),
                accepted: AtomicU64::new(0),
                expired: AtomicU64::new(0),
                secret_elsewhere: AtomicU64::new(0),
                basic_elsewhere: AtomicU64::new(0),
            }),
        }
    }

    fn tokens(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.inner.tokens.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Is `token` one this endpoint issued, and is it still alive?
    pub(crate) fn lookup(&self, token: &str) -> Lookup {
        let found = self.tokens().get(token).cloned();
        match found {
            Some((client, expires)) if Instant::now() < expires => {
                self.inner.accepted.fetch_add(1, Ordering::Relaxed);
                Lookup::Valid(client)
            }
            Some(_) => {
                self.inner.expired.fetch_add(1, Ordering::Relaxed);
                Lookup::Expired
            }
            None => Lookup::Unknown,
        }
    }

    fn issue(&self, client: &str) -> String {
        let token = format!("ref_at_{}", uuid::Uuid::new_v4().simple());
        let now = Instant::now();
        let mut tokens = self.tokens();
        if tokens.len() >= MAX_TOKENS {
            tokens.retain(|_, (_, exp)| now < *exp + REMEMBER_EXPIRED);
            if tokens.len() >= MAX_TOKENS {
                tokens.clear();
            }
        }
        tokens.insert(
            token.clone(),
            (client.to_owned(), now + self.inner.lifetime),
        );
        self.inner.issued.fetch_add(1, Ordering::Relaxed);
        token
    }

    /// True when `text` holds a client secret, raw or as a Basic credential.
    fn holds_secret(&self, text: &str) -> bool {
        self.inner.needles.iter().any(|n| text.contains(n.as_str()))
    }
}

/// An OAuth error answer (RFC 6749 §5.2).
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    let mut resp = (
        status,
        Json(json!({"error": error, "error_description": description})),
    )
        .into_response();
    no_store(resp.headers_mut());
    if status == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"tminus reference\""),
        );
    }
    resp
}

fn no_store(h: &mut HeaderMap) {
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

/// `application/x-www-form-urlencoded` decoding of one component.
fn form_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The form's fields; `None` when it is not a form, or a field repeats
/// (§3.2: parameters MUST NOT be included more than once).
fn form_fields(body: &[u8]) -> Option<HashMap<String, String>> {
    let text = std::str::from_utf8(body).ok()?;
    let mut out = HashMap::new();
    for pair in text.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if out.insert(form_decode(k)?, form_decode(v)?).is_some() {
            return None;
        }
    }
    Some(out)
}

/// The client's (id, secret) from `Authorization: Basic` (§2.3.1: each
/// form-encoded before joining); `Err` when the header is there but unreadable.
fn basic_credentials(headers: &HeaderMap) -> Result<Option<(String, String)>, ()> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().map_err(|_| ())?;
    let (scheme, b64) = value.trim().split_once(' ').ok_or(())?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(());
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|_| ())?;
    let pair = String::from_utf8(decoded).map_err(|_| ())?;
    let (id, secret) = pair.split_once(':').ok_or(())?;
    Ok(Some((
        form_decode(id).ok_or(())?,
        form_decode(secret).ok_or(())?,
    )))
}

/// `POST /oauth/token`.
pub(crate) async fn token(State(o): State<OAuth>, headers: HeaderMap, body: Bytes) -> Response {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            v.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !is_form {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "the body must be application/x-www-form-urlencoded",
        );
    }
    let Some(form) = form_fields(&body) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "the body is not a form, or repeats a parameter",
        );
    };
    let basic = match basic_credentials(&headers) {
        Ok(b) => b,
        Err(()) => {
            o.inner.refused_clients.fetch_add(1, Ordering::Relaxed);
            return oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "the Authorization header is not a readable Basic credential",
            );
        }
    };
    let in_body = form.contains_key("client_secret");
    let (id, secret) = match (basic, in_body) {
        (Some(_), true) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "the client authenticated twice (Basic and client_secret in the body)",
            )
        }
        (Some(b), false) => b,
        (None, true) => (
            form.get("client_id").cloned().unwrap_or_default(),
            form.get("client_secret").cloned().unwrap_or_default(),
        ),
        (None, false) => {
            o.inner.refused_clients.fetch_add(1, Ordering::Relaxed);
            return oauth_error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "no client authentication",
            );
        }
    };
    if !o
        .inner
        .clients
        .iter()
        .any(|(i, s)| *i == id && *s == secret)
    {
        o.inner.refused_clients.fetch_add(1, Ordering::Relaxed);
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "client authentication failed",
        );
    }
    match form.get("grant_type").map(String::as_str) {
        Some("client_credentials") => {}
        Some(_) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "only client_credentials is supported",
            )
        }
        None => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "grant_type is missing",
            )
        }
    }
    let token = o.issue(&id);
    let lifetime = o.inner.lifetime;
    let expires_in = if lifetime.subsec_nanos() == 0 {
        json!(lifetime.as_secs())
    } else {
        json!(lifetime.as_secs_f64())
    };
    let mut body = json!({
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": expires_in,
    });
    if let Some(scope) = form.get("scope") {
        body["scope"] = json!(scope);
    }
    let mut resp = (StatusCode::OK, Json(body)).into_response();
    no_store(resp.headers_mut());
    resp
}

/// `GET /__tminus/oauth`: the counters.
pub(crate) async fn counters(State(o): State<OAuth>) -> Json<serde_json::Value> {
    let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let i = &o.inner;
    Json(json!({
        "issued": n(&i.issued),
        "refused_clients": n(&i.refused_clients),
        "accepted": n(&i.accepted),
        "expired": n(&i.expired),
        "secret_seen_elsewhere": n(&i.secret_elsewhere),
        "basic_seen_elsewhere": n(&i.basic_elsewhere),
        "token_lifetime_s": i.lifetime.as_secs_f64(),
    }))
}

/// Middleware on every route: a request anywhere but the token endpoint
/// that carries a client secret (in a header or the URL) or a Basic
/// credential is counted, so a test can assert a client never leaks one.
pub(crate) async fn watch(State(o): State<OAuth>, req: Request, next: Next) -> Response {
    let at_token = req.method() == Method::POST && req.uri().path() == TOKEN_PATH;
    if !at_token {
        let basic = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim()
                    .get(..6)
                    .is_some_and(|s| s.eq_ignore_ascii_case("basic "))
            });
        if basic {
            o.inner.basic_elsewhere.fetch_add(1, Ordering::Relaxed);
        }
        let in_headers = req
            .headers()
            .values()
            .any(|v| o.holds_secret(&String::from_utf8_lossy(v.as_bytes())));
        let uri = req.uri().to_string();
        let in_uri = o.holds_secret(&uri) || form_decode(&uri).is_some_and(|u| o.holds_secret(&u));
        if in_headers || in_uri {
            o.inner.secret_elsewhere.fetch_add(1, Ordering::Relaxed);
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_and_basic_credentials_are_read_as_rfc_6749_writes_them() {
        let f = form_fields(b"grant_type=client_credentials&scope=a+b&x=%2F").unwrap();
        assert_eq!(f["scope"], "a b");
        assert_eq!(f["x"], "/");
        assert!(form_fields(b"a=1&a=2").is_none());
        let mut h = HeaderMap::new();
        let b64 = base64::engine::general_purpose::STANDARD.encode("my+id:s%3Acret");
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Basic {b64}")).unwrap(),
        );
        assert_eq!(
            basic_credentials(&h),
            Ok(Some(("my id".into(), "s:cret".into())))
        );
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        assert_eq!(basic_credentials(&h), Err(()));
    }

    #[test]
    fn a_token_lives_its_lifetime() {
        let o = OAuth::new(
            vec![(CLIENT_ID.into(), CLIENT_SECRET.into())],
            Duration::from_millis(50),
        );
        let t = o.issue(CLIENT_ID);
        assert!(matches!(o.lookup(&t), Lookup::Valid(c) if c == CLIENT_ID));
        std::thread::sleep(Duration::from_millis(60));
        assert!(matches!(o.lookup(&t), Lookup::Expired));
        assert!(matches!(o.lookup("nope"), Lookup::Unknown));
        assert!(o.holds_secret(&format!("x {CLIENT_SECRET} y")));
        assert!(!o.holds_secret("ref_client only"));
    }
}
