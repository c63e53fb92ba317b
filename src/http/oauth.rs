//! OAuth 2.0 client credentials (RFC 6749 §4.4): the suite's credential is
//! a bearer token tminus obtains from a token endpoint, instead of a fixed
//! header.
//!
//! A [`TokenSource`] holds one client's configuration and the token it was
//! last issued. The token is fetched before the suite's first request,
//! fetched again a little before it expires (10 % of its lifetime early, at
//! most 30 s), and at most once after a 401 from the target. The client
//! authenticates with HTTP Basic (§2.3.1: id and secret form-encoded, then
//! joined by `:`), and the request carries `scope` and, in the Auth0/Okta
//! dialect, `audience`.
//!
//! What goes where: the client secret only to `token_url` (redirects are
//! never followed, so not even a 3xx can carry it elsewhere), the token only
//! to the target's own origin ([`super::Target::render`] adds it exactly
//! where it adds the suite's headers). Both are registered with the
//! [`Redactor`] the moment they are known (the secret when the source is
//! made, each token as it is issued), so no report can show them.
//!
//! Bounded: each token request has the suite's timeout and a 64 KiB body
//! cap; one fetch at a time (callers that find the token stale wait for the
//! same fetch); a failed fetch is not repeated for [`FAILURE_HOLD`].

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;

use crate::redact::Redactor;

/// The largest token endpoint answer tminus reads.
pub const MAX_TOKEN_BODY: usize = 64 * 1024;
/// A fetch that failed is answered with its error, not repeated, this long.
pub const FAILURE_HOLD: Duration = Duration::from_secs(2);
/// A token refused with a 401 younger than this is not replaced: it is the
/// token the endpoint just issued, and fetching again would only loop.
pub const MIN_AGE_TO_REFRESH_ON_401: Duration = Duration::from_secs(1);
/// The token of an `Authorization: Bearer <token>` value.
fn bearer_of(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The most a token is refreshed ahead of its expiry.
pub const MAX_EARLY: Duration = Duration::from_secs(30);
/// How many earlier tokens are still recognised as the source's own (a
/// request rendered before a refresh still carries one).
const RECENT_TOKENS: usize = 8;
/// The shortest `expires_in` (seconds) tminus accepts.
pub const MIN_LIFETIME_S: f64 = 1.0;
/// The name the client secret is listed under among a report's secrets.
pub const SECRET_NAME: &str = "oauth2 client_secret";

/// A client's registration with a token endpoint, as the suite planned it.
#[derive(Clone, PartialEq)]
pub struct ClientCredentials {
    pub token_url: String,
    pub client_id: String,
    pub client_secret: String,
    /// `scope` (space-delimited, RFC 6749 §3.3), sent when set.
    pub scope: Option<String>,
    /// `audience` (Auth0, Okta): the API the token is for, sent when set.
    pub audience: Option<String>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("token_url", &crate::redact::mask_userinfo(&self.token_url))
            .field("client_id", &self.client_id)
            .field("client_secret", &crate::redact::MASK)
            .field("scope", &self.scope)
            .field("audience", &self.audience)
            .finish()
    }
}

impl ClientCredentials {
    /// The token URL as shown in messages (userinfo masked).
    pub fn shown_url(&self) -> String {
        crate::redact::mask_userinfo(&self.token_url)
    }

    /// The value of the token request's `Authorization: Basic` credential
    /// (RFC 6749 §2.3.1: id and secret each form-encoded, then `id:secret`).
    fn basic(&self) -> String {
        let pair = format!(
            "{}:{}",
            form_encode(&self.client_id),
            form_encode(&self.client_secret)
        );
        base64::engine::general_purpose::STANDARD.encode(pair)
    }

    /// The token request's form body.
    fn form(&self) -> String {
        let mut body = String::from("grant_type=client_credentials");
        for (k, v) in [("scope", &self.scope), ("audience", &self.audience)] {
            if let Some(v) = v {
                body.push_str(&format!("&{k}={}", form_encode(v)));
            }
        }
        body
    }
}

/// application/x-www-form-urlencoded (RFC 6749 Appendix B).
fn form_encode(s: &str) -> String {
    crate::model::text::percent_encode(s, true, true)
}

/// A token as issued.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub value: String,
    /// `expires_in`; `None`: the endpoint did not say (used until a 401).
    pub lifetime: Option<Duration>,
    pub obtained: Instant,
}

impl Token {
    /// When a fresh token is fetched instead of this one.
    pub fn refresh_at(&self) -> Option<Instant> {
        self.lifetime
            .map(|l| self.obtained + l.saturating_sub(early(l)))
    }

    /// True while the token is used as it is.
    pub fn fresh_at(&self, now: Instant) -> bool {
        self.refresh_at().is_none_or(|at| now < at)
    }
}

/// How long before its expiry a token of lifetime `l` is replaced: 10 %
/// of it, at most [`MAX_EARLY`].
pub fn early(l: Duration) -> Duration {
    (l / 10).min(MAX_EARLY)
}

/// What a token endpoint answered, read (RFC 6749 §5.1 and §5.2): the
/// token and its lifetime, or what was wrong (a fragment that reads after
/// "the token endpoint URL ...").
pub fn parse_token_response(
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(String, Option<Duration>), String> {
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    if !(200..300).contains(&status) {
        if (300..400).contains(&status) {
            return Err(format!(
                "answered {status}, a redirect: tminus does not follow it (the client secret goes to token_url only); give the final token URL"
            ));
        }
        // §5.2: `error` (a code) and `error_description` (text for people).
        let field = |k: &str| {
            json.as_ref()
                .and_then(|j| j.get(k))
                .and_then(|v| v.as_str())
                .map(|s| shorten(&crate::redact::quote(s), 200))
        };
        return Err(match (field("error"), field("error_description")) {
            (Some(e), Some(d)) => format!("answered {status}: {e} ({d})"),
            (Some(e), None) => format!("answered {status}: {e}"),
            (None, _) => format!("answered {status} with no OAuth error (RFC 6749 §5.2)"),
        });
    }
    let Some(json) = json else {
        let ct = content_type.unwrap_or("no Content-Type");
        return Err(format!(
            "answered {status} with a body that is not JSON ({}, {} bytes)",
            crate::redact::quote(ct),
            body.len()
        ));
    };
    let token = match json.get("access_token") {
        Some(serde_json::Value::String(t)) if !t.is_empty() => t.clone(),
        Some(_) => {
            return Err(format!(
                "answered {status} with an access_token that is not a non-empty string"
            ))
        }
        None => return Err(format!("answered {status} without an access_token")),
    };
    if !is_b64token(&token) {
        return Err(format!(
            "answered {status} with an access_token that cannot be sent as a Bearer credential (RFC 6750 §2.1 b64token)"
        ));
    }
    match json.get("token_type").and_then(|t| t.as_str()) {
        Some(t) if t.eq_ignore_ascii_case("bearer") => {}
        Some(t) => {
            return Err(format!(
                "answered token_type `{}`, not Bearer: tminus sends Bearer tokens only (RFC 6750)",
                shorten(&crate::redact::quote(t), 40)
            ))
        }
        None => {
            return Err(format!(
                "answered {status} without a token_type (RFC 6749 §5.1 requires it)"
            ))
        }
    }
    // A number of seconds; some endpoints send it as a string of digits.
    let lifetime = match json.get("expires_in") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => {
            let secs = v
                .as_f64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse::<f64>().ok()));
            match secs {
                // Under a second, a token could not be used before it is
                // due again: tminus would do nothing but fetch.
                Some(s) if s.is_finite() && (MIN_LIFETIME_S..=1e9).contains(&s) => {
                    Some(Duration::from_secs_f64(s))
                }
                Some(s) if s.is_finite() && s > 0.0 => {
                    return Err(format!(
                        "answered expires_in `{s}`: a token must live at least {MIN_LIFETIME_S} s to be used"
                    ))
                }
                _ => {
                    return Err(format!(
                        "answered expires_in `{}`, not a positive number of seconds",
                        shorten(&crate::redact::quote(&v.to_string()), 40)
                    ))
                }
            }
        }
    };
    Ok((token, lifetime))
}

/// RFC 6750 §2.1: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_b64token(t: &str) -> bool {
    let body = t.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

/// The last cause in an error's chain ("Connection refused"), which
/// reqwest's own Display hides.
fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        last = s.to_string();
        cur = s.source();
    }
    last
}

#[derive(Default)]
struct State {
    current: Option<Token>,
    /// Values of earlier tokens, newest last.
    recent: VecDeque<String>,
    /// The last failed fetch: when, and what went wrong.
    failed: Option<(Instant, String)>,
    /// Tokens issued to this source so far.
    issued: u64,
}

/// One client's tokens: fetched, cached, refreshed (see the module docs).
pub struct TokenSource {
    config: ClientCredentials,
    http: reqwest::Client,
    timeout: Duration,
    redactor: Redactor,
    state: Mutex<State>,
    /// Held while a token is fetched, so one fetch serves every waiter.
    fetching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("token_url", &self.config.shown_url())
            .field("client_id", &self.config.client_id)
            .finish_non_exhaustive()
    }
}

impl TokenSource {
    /// A source for `config` whose token requests take at most `timeout`.
    /// The secret and the Basic credential made of it are registered with
    /// `redactor` here, before anything is sent.
    pub fn new(
        config: ClientCredentials,
        redactor: Redactor,
        timeout: Duration,
    ) -> Result<Self, String> {
        redactor.add_named(SECRET_NAME, &config.client_secret);
        redactor.add(&form_encode(&config.client_secret));
        redactor.add(&config.basic());
        redactor.add_userinfo(&config.token_url);
        let http = super::client_builder()
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| {
                format!(
                    "oauth2: cannot build the HTTP client for {}: {e}",
                    config.shown_url()
                )
            })?;
        Ok(TokenSource {
            config,
            http,
            timeout,
            redactor,
            state: Mutex::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    pub fn config(&self) -> &ClientCredentials {
        &self.config
    }

    /// What identifies this client to the request budget: the same
    /// whichever token it currently holds.
    pub fn identity(&self) -> String {
        format!(
            "oauth2 client {} at {}",
            self.config.client_id,
            self.config.shown_url()
        )
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The token held now, fresh or not (`None` before the first fetch).
    /// Rendering is synchronous and uses this; [`token`](Self::token)
    /// replaces it before it is sent when it is due.
    pub fn cached(&self) -> Option<String> {
        self.state().current.as_ref().map(|t| t.value.clone())
    }

    /// The token held now, with when it is due to be replaced.
    pub fn current(&self) -> Option<Token> {
        self.state().current.clone()
    }

    /// How many tokens the endpoint has issued to this source.
    pub fn issued(&self) -> u64 {
        self.state().issued
    }

    /// True when `header` (an Authorization value) is `Bearer` with a
    /// token this source was issued.
    pub fn is_own_bearer(&self, header: &str) -> bool {
        let Some(token) = bearer_of(header) else {
            return false;
        };
        let st = self.state();
        st.current.as_ref().is_some_and(|t| t.value == token)
            || st.recent.iter().any(|t| t == token)
    }

    /// True when `header` is `Bearer` with a token this source was issued
    /// that is no longer the fresh one: a request rendered before a refresh
    /// that came late (a loaded machine delays the keeper), which must not
    /// reach the target with a token tminus knows is due.
    pub fn is_stale_bearer(&self, header: &str) -> bool {
        let Some(token) = bearer_of(header) else {
            return false;
        };
        let st = self.state();
        match &st.current {
            Some(t) if t.value == token => !t.fresh_at(Instant::now()),
            _ => st.recent.iter().any(|t| t == token),
        }
    }

    /// A token to send now: the one held while it is fresh, else a new one.
    /// When the new one cannot be had, the held one while it has not
    /// expired (it was due early): only a token that is dead is an error.
    pub async fn token(&self) -> Result<String, String> {
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        let _one = self.fetching.lock().await;
        if let Some(t) = self.fresh() {
            return Ok(t);
        }
        match self.fetch_unless_failed().await {
            Ok(t) => Ok(t),
            Err(e) => self.alive().ok_or(e),
        }
    }

    /// The held token while its lifetime has not run out.
    fn alive(&self) -> Option<String> {
        let st = self.state();
        st.current
            .as_ref()
            .filter(|t| t.lifetime.is_none_or(|l| t.obtained.elapsed() < l))
            .map(|t| t.value.clone())
    }

    /// After the target answered 401 to `rejected`: the token to resend
    /// with, or `None` when there is none to try (the rejected token is
    /// younger than [`MIN_AGE_TO_REFRESH_ON_401`]: the endpoint's newest
    /// token is refused, and another would be too).
    pub async fn refresh_after_401(&self, rejected: &str) -> Result<Option<String>, String> {
        let _one = self.fetching.lock().await;
        {
            let st = self.state();
            if let Some(t) = &st.current {
                if t.value != rejected && t.fresh_at(Instant::now()) {
                    // Another request already replaced it.
                    return Ok(Some(t.value.clone()));
                }
                if t.value == rejected && t.obtained.elapsed() < MIN_AGE_TO_REFRESH_ON_401 {
                    return Ok(None);
                }
            }
        }
        self.fetch_unless_failed().await.map(Some)
    }

    /// Keeps the held token fresh ahead of its expiry, for a burst whose
    /// users render requests from [`cached`](Self::cached) and cannot wait
    /// for a fetch. Returns only when the held token died unreplaced (with
    /// the error); with a token of unknown lifetime it waits forever. Run it beside the
    /// burst and abort it when the burst ends.
    pub async fn keep_fresh(&self) -> String {
        loop {
            let due = self.current().and_then(|t| t.refresh_at());
            match due {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None if self.current().is_some() => std::future::pending::<()>().await,
                None => {}
            }
            if let Err(e) = self.token().await {
                return e;
            }
            if self.fresh().is_none() {
                // No replacement, but the held token still lives: try again
                // once the failure is no longer held.
                tokio::time::sleep(FAILURE_HOLD).await;
            }
        }
    }

    fn fresh(&self) -> Option<String> {
        let st = self.state();
        st.current
            .as_ref()
            .filter(|t| t.fresh_at(Instant::now()))
            .map(|t| t.value.clone())
    }

    async fn fetch_unless_failed(&self) -> Result<String, String> {
        if let Some((at, e)) = &self.state().failed {
            if at.elapsed() < FAILURE_HOLD {
                return Err(e.clone());
            }
        }
        match self.fetch().await {
            Ok(t) => Ok(t),
            Err(e) => {
                let e = self.redactor.redact(&format!(
                    "oauth2 token endpoint {}: {e}",
                    self.config.shown_url()
                ));
                self.state().failed = Some((Instant::now(), e.clone()));
                Err(e)
            }
        }
    }

    /// One token request (call with `fetching` held).
    async fn fetch(&self) -> Result<String, String> {
        let req = self
            .http
            .post(&self.config.token_url)
            .header(
                reqwest::header::AUTHORIZATION,
                format!("Basic {}", self.config.basic()),
            )
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(self.config.form());
        let exchange = async {
            let mut resp = req.send().await?;
            let status = resp.status().as_u16();
            let ct = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if resp
                .content_length()
                .is_some_and(|n| n > MAX_TOKEN_BODY as u64)
            {
                return Ok(None);
            }
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await? {
                if body.len() + chunk.len() > MAX_TOKEN_BODY {
                    return Ok(None);
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, reqwest::Error>(Some((status, ct, body)))
        };
        let obtained = Instant::now();
        let (status, ct, body) = match tokio::time::timeout(self.timeout, exchange).await {
            Err(_) => {
                return Err(format!(
                    "no answer within {}",
                    crate::fmt_duration(self.timeout)
                ))
            }
            Ok(Err(e)) => {
                let why = super::tls::explain(&e).unwrap_or_else(|| cause(&e));
                return Err(if e.is_connect() {
                    format!("cannot connect: {why}")
                } else if e.is_timeout() {
                    format!("no answer within {}", crate::fmt_duration(self.timeout))
                } else {
                    format!("the request failed: {why}")
                });
            }
            Ok(Ok(None)) => {
                return Err(format!(
                    "answered with a body larger than the {} tminus reads from a token endpoint",
                    super::human_bytes(MAX_TOKEN_BODY)
                ))
            }
            Ok(Ok(Some(x))) => x,
        };
        let (value, lifetime) = parse_token_response(status, ct.as_deref(), &body)?;
        // Known before anyone can print it.
        self.redactor.add(&value);
        self.redactor.note_name("oauth2 access token");
        let mut st = self.state();
        if let Some(old) = st.current.take() {
            st.recent.push_back(old.value);
            while st.recent.len() > RECENT_TOKENS {
                st.recent.pop_front();
            }
        }
        st.current = Some(Token {
            value: value.clone(),
            lifetime,
            obtained,
        });
        st.failed = None;
        st.issued += 1;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    fn ok(body: &str) -> Result<(String, Option<Duration>), String> {
        parse_token_response(200, Some("application/json"), body.as_bytes())
    }

    #[test]
    fn a_bearer_token_and_its_lifetime_are_read() {
        assert_eq!(
            ok(r#"{"access_token":"abc.def-1","token_type":"Bearer","expires_in":3600}"#),
            Ok(("abc.def-1".into(), Some(Duration::from_secs(3600))))
        );
        // token_type is case-insensitive (RFC 6749 §5.1); expires_in may be
        // a string (some endpoints) or absent (then unknown).
        assert_eq!(
            ok(r#"{"access_token":"t0k3n==","token_type":"bearer","expires_in":"1.5"}"#),
            Ok(("t0k3n==".into(), Some(Duration::from_millis(1500))))
        );
        assert_eq!(
            ok(r#"{"access_token":"t","token_type":"BEARER"}"#),
            Ok(("t".into(), None))
        );
    }

    #[test]
    fn what_is_wrong_with_an_answer_is_said() {
        let err =
            |status, ct, body: &str| parse_token_response(status, ct, body.as_bytes()).unwrap_err();
        assert_eq!(
            err(
                401,
                None,
                r#"{"error":"invalid_client","error_description":"bad secret"}"#
            ),
            "answered 401: invalid_client (bad secret)"
        );
        assert_eq!(
            err(400, None, r#"{"error":"invalid_scope"}"#),
            "answered 400: invalid_scope"
        );
        assert!(err(500, Some("text/html"), "<h1>oops</h1>").contains("500 with no OAuth error"));
        assert!(err(302, None, "").contains("redirect"));
        assert!(err(200, Some("text/html"), "<html>").contains("not JSON (text/html"));
        assert!(err(200, None, r#"{"token_type":"Bearer"}"#).contains("without an access_token"));
        assert!(
            err(200, None, r#"{"access_token":"","token_type":"Bearer"}"#)
                .contains("not a non-empty string")
        );
        assert!(
            err(200, None, r#"{"access_token":"a b","token_type":"Bearer"}"#).contains("b64token")
        );
        assert!(err(200, None, r#"{"access_token":"a","token_type":"mac"}"#)
            .contains("token_type `mac`, not Bearer"));
        assert!(err(200, None, r#"{"access_token":"a"}"#).contains("without a token_type"));
        assert!(err(
            200,
            None,
            r#"{"access_token":"a","token_type":"Bearer","expires_in":0.5}"#
        )
        .contains("must live at least 1 s"));
        for bad in ["0", "-5", "\"soon\"", "true"] {
            let body =
                format!(r#"{{"access_token":"a","token_type":"Bearer","expires_in":{bad}}}"#);
            assert!(
                err(200, None, &body).contains("not a positive number"),
                "{bad}"
            );
        }
        // A long description is cut, and quoted (no line breaks).
        let long = format!(
            r#"{{"error":"x","error_description":"{}\n"}}"#,
            "y".repeat(500)
        );
        let e = err(400, None, &long);
        assert!(e.len() < 300 && !e.contains('\n'), "{e}");
    }

    #[test]
    fn a_token_is_replaced_a_tenth_of_its_life_early_at_most_30s() {
        let now = Instant::now();
        let t = |secs: u64| Token {
            value: "t".into(),
            lifetime: Some(Duration::from_secs(secs)),
            obtained: now,
        };
        assert_eq!(t(3600).refresh_at(), Some(now + Duration::from_secs(3570)));
        assert_eq!(t(100).refresh_at(), Some(now + Duration::from_secs(90)));
        assert_eq!(t(1).refresh_at(), Some(now + Duration::from_millis(900)));
        assert!(t(1).fresh_at(now + Duration::from_millis(899)));
        assert!(!t(1).fresh_at(now + Duration::from_millis(900)));
        let unknown = Token {
            lifetime: None,
            ..t(1)
        };
        assert!(unknown.fresh_at(now + Duration::from_secs(86_400)));
    }

    #[test]
    fn the_basic_credential_and_form_follow_rfc_6749() {
        let c = ClientCredentials {
            token_url: "https://id.example/token".into(),
            client_id: "my client".into(),
            client_secret: "s:e&c=ret".into(),
            scope: Some("read write".into()),
            audience: Some("https://api.example/".into()),
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(c.basic())
            .unwrap();
        assert_eq!(
            String::from_utf8(decoded).unwrap(),
            "my+client:s%3Ae%26c%3Dret"
        );
        assert_eq!(
            c.form(),
            "grant_type=client_credentials&scope=read+write&audience=https%3A%2F%2Fapi.example%2F"
        );
        // Debug never shows the secret.
        assert!(!format!("{c:?}").contains("s:e&c=ret"), "{c:?}");
    }

    /// A token endpoint on 127.0.0.1:0 issuing `tok-N` tokens that live
    /// `lifetime_s`; answers 503 while `down` is set. Returns its token URL.
    async fn endpoint(
        lifetime_s: f64,
        asked: Arc<AtomicU64>,
        down: Arc<AtomicBool>,
        seen: Arc<Mutex<Vec<String>>>,
    ) -> String {
        use axum::http::HeaderMap;
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(move |headers: HeaderMap, body: String| {
                let (asked, down, seen) = (asked.clone(), down.clone(), seen.clone());
                async move {
                    let n = asked.fetch_add(1, Ordering::SeqCst) + 1;
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    seen.lock().unwrap().push(format!("{auth} {body}"));
                    if down.load(Ordering::SeqCst) {
                        return (
                            axum::http::StatusCode::SERVICE_UNAVAILABLE,
                            axum::Json(serde_json::json!({"error": "temporarily_unavailable"})),
                        );
                    }
                    (
                        axum::http::StatusCode::OK,
                        axum::Json(serde_json::json!({
                            "access_token": format!("tok-{n}"),
                            "token_type": "Bearer",
                            "expires_in": lifetime_s,
                        })),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}/token")
    }

    fn source(token_url: String, redactor: &Redactor) -> TokenSource {
        TokenSource::new(
            ClientCredentials {
                token_url,
                client_id: "cid".into(),
                client_secret: "csecret-123".into(),
                scope: Some("a b".into()),
                audience: None,
            },
            redactor.clone(),
            Duration::from_secs(5),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn tokens_are_cached_replaced_when_due_and_kept_while_the_endpoint_is_down() {
        let asked = Arc::new(AtomicU64::new(0));
        let down = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let url = endpoint(3.0, asked.clone(), down.clone(), seen.clone()).await;
        let redactor = Redactor::new();
        let src = source(url, &redactor);
        assert_eq!(src.cached(), None);
        let t1 = src.token().await.unwrap();
        assert_eq!(t1, "tok-1");
        // Fresh: no second request.
        assert_eq!(src.token().await.unwrap(), "tok-1");
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        assert!(src.is_own_bearer("bearer tok-1"));
        assert!(!src.is_own_bearer("Bearer tok-2"));
        // The token is a secret from the moment it is issued.
        assert!(!redactor.redact("got tok-1").contains("tok-1"));
        // RFC 6749 §2.3.1 Basic, the grant and the scope.
        let basic = base64::engine::general_purpose::STANDARD.encode("cid:csecret-123");
        assert_eq!(
            seen.lock().unwrap()[0],
            format!("Basic {basic} grant_type=client_credentials&scope=a+b")
        );
        // A 401 on a token younger than 1 s does not fetch again.
        assert!(src.current().unwrap().obtained.elapsed() < MIN_AGE_TO_REFRESH_ON_401);
        assert_eq!(src.refresh_after_401("tok-1").await, Ok(None));
        assert!(!src.is_stale_bearer("Bearer tok-1"));
        // Due at 2.7 s of its 3 s: a request still carrying it is stale
        // (the burst renews it before sending), an unknown token is not ours.
        tokio::time::sleep(Duration::from_millis(2750)).await;
        assert!(src.is_stale_bearer("Bearer tok-1"));
        assert_eq!(src.token().await.unwrap(), "tok-2");
        assert!(src.is_stale_bearer("Bearer tok-1"));
        assert!(!src.is_stale_bearer("Bearer tok-2"));
        assert!(!src.is_stale_bearer("Bearer someone-elses"));
        assert!(
            src.is_own_bearer("Bearer tok-1"),
            "an earlier token is still known"
        );
        // Down: the held token serves while it lives, then the error.
        tokio::time::sleep(Duration::from_millis(2750)).await;
        down.store(true, Ordering::SeqCst);
        assert_eq!(src.token().await.unwrap(), "tok-2");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let e = src.token().await.unwrap_err();
        assert!(e.contains("answered 503: temporarily_unavailable"), "{e}");
        assert_eq!(src.issued(), 2);
    }

    #[tokio::test]
    async fn a_401_on_an_older_token_fetches_once_and_the_keeper_refreshes() {
        let asked = Arc::new(AtomicU64::new(0));
        let down = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let url = endpoint(3600.0, asked.clone(), down, seen).await;
        let src = Arc::new(source(url, &Redactor::new()));
        assert_eq!(src.token().await.unwrap(), "tok-1");
        tokio::time::sleep(MIN_AGE_TO_REFRESH_ON_401 + Duration::from_millis(50)).await;
        // Two requests refused with tok-1 at once: one fetch serves both.
        let (a, b) = tokio::join!(
            src.refresh_after_401("tok-1"),
            src.refresh_after_401("tok-1")
        );
        assert_eq!((a, b), (Ok(Some("tok-2".into())), Ok(Some("tok-2".into()))));
        assert_eq!(asked.load(Ordering::SeqCst), 2);

        let asked = Arc::new(AtomicU64::new(0));
        let url = endpoint(1.0, asked.clone(), Default::default(), Default::default()).await;
        let src = Arc::new(source(url, &Redactor::new()));
        src.token().await.unwrap();
        let keeper = tokio::spawn({
            let src = src.clone();
            async move { src.keep_fresh().await }
        });
        tokio::time::sleep(Duration::from_millis(2300)).await;
        keeper.abort();
        // Replaced at 0.9 s and 1.8 s without anyone asking.
        assert_eq!(asked.load(Ordering::SeqCst), 3);
        assert_eq!(src.cached().as_deref(), Some("tok-3"));
    }

    #[tokio::test]
    async fn an_unreachable_endpoint_is_named_and_not_asked_again_at_once() {
        // A port nobody listens on: bind, read the port, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let redactor = Redactor::new();
        let src = TokenSource::new(
            ClientCredentials {
                token_url: format!("http://127.0.0.1:{port}/oauth/token"),
                client_id: "c".into(),
                client_secret: "very-secret-value".into(),
                scope: None,
                audience: None,
            },
            redactor.clone(),
            Duration::from_secs(5),
        )
        .unwrap();
        let e = src.token().await.unwrap_err();
        assert!(
            e.starts_with(&format!(
                "oauth2 token endpoint http://127.0.0.1:{port}/oauth/token: cannot connect"
            )),
            "{e}"
        );
        let again = src.token().await.unwrap_err();
        assert_eq!(again, e);
        assert_eq!(src.issued(), 0);
        assert!(!redactor
            .redact("x very-secret-value y")
            .contains("very-secret-value"));
    }
}
