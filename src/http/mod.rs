//! The HTTP client side of the probe: builds requests from plans, sends them
//! with a timeout, and captures each exchange (request, response, timing) as
//! evidence. Sensitive headers are masked at capture time.

pub mod client_cert;
pub mod exchange;
pub mod oauth;
pub mod proxy;
pub mod quota;
pub mod serve_task;
pub mod stream;
pub mod tls;
pub mod tls_legacy;
pub mod tls_server;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use exchange::{Exchange, RecordedRequest, RecordedResponse, TransportError};
pub use quota::{Credential, Quota};

use crate::model::request::{BodyPlan, RequestPlan, UrlPlan};
use crate::model::template::{Scope, Template};

/// A request with every template rendered, ready to send.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub method: reqwest::Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout: Duration,
    /// Whose quota it spends (set by [`Target::render`]; `None`: the
    /// origin's, with no credential).
    pub credential: Option<CredentialScope>,
}

/// How a rendered request's credential is found when it is sent: the
/// values its credential headers have then (a check may have changed or
/// removed one, and is then another caller).
#[derive(Debug, Clone)]
pub struct CredentialScope {
    origin: String,
    names: Vec<String>,
    label: String,
    own_key: u64,
    /// The target's OAuth2 client, when its token is the credential.
    auth: Option<Arc<oauth::TokenSource>>,
}

/// The name of the header an OAuth2 token travels in.
const AUTHORIZATION: &str = "Authorization";

impl Rendered {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// Sets a header, replacing any value of the same name.
    pub fn set_header(&mut self, name: &str, value: impl Into<String>) {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.into()));
    }
    pub fn remove_header(&mut self, name: &str) {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    }
    /// The credential whose quota this request spends.
    pub fn credential(&self) -> Credential {
        match &self.credential {
            Some(c) => {
                let values: Vec<(String, String)> = c
                    .names
                    .iter()
                    .map(|n| {
                        let v = self.header(n).unwrap_or("");
                        // Any token the client was issued is the client:
                        // refreshing it does not make another caller.
                        let v = match &c.auth {
                            Some(a)
                                if n.eq_ignore_ascii_case(AUTHORIZATION) && a.is_own_bearer(v) =>
                            {
                                a.identity()
                            }
                            _ => v.to_owned(),
                        };
                        (n.clone(), v)
                    })
                    .collect();
                let key = Credential::key_of(&c.origin, &values);
                let label = if key == c.own_key {
                    c.label.clone()
                } else {
                    "a request's own credential".to_owned()
                };
                Credential::from_key(key, label)
            }
            None => {
                let o = origin_of(&self.url);
                Credential::from_key(Credential::key_of(&o, &[]), format!("requests to {o}"))
            }
        }
    }
}

/// `scheme://host:port` of a URL (the URL itself when it does not parse).
pub fn origin_of(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .map(|u| {
            format!(
                "{}://{}:{}",
                u.scheme(),
                u.host_str().unwrap_or("").to_ascii_lowercase(),
                u.port_or_known_default().unwrap_or(0)
            )
        })
        .unwrap_or_else(|| url.to_owned())
}

/// Where a check's requests go, and what they all carry.
#[derive(Debug, Clone)]
pub struct Target {
    pub base_url: String,
    pub headers: Vec<(String, Template)>,
    /// Headers of a second tenant (they replace same-named suite headers).
    pub second_tenant_headers: Option<Vec<(String, Template)>>,
    pub timeout: Duration,
    /// Whose credential `headers` are, for quota notes ("the suite's
    /// credential", "the second tenant").
    pub label: String,
    /// `target.auth`: an OAuth2 client whose bearer token every request to
    /// the target's own origin carries (set after the suite's headers).
    pub auth: Option<Arc<oauth::TokenSource>>,
    /// `target.second_tenant_auth`: the second tenant's OAuth2 client.
    pub second_tenant_auth: Option<Arc<oauth::TokenSource>>,
}

/// The label of the suite's own credential in quota notes.
pub const SUITE_CREDENTIAL: &str = "the suite's credential";
/// The label of the second tenant's credential.
pub const SECOND_TENANT: &str = "the second tenant";

impl Target {
    /// Renders a planned request: suite headers first, the request's own win.
    pub fn render(&self, req: &RequestPlan, scope: &Scope) -> Rendered {
        let mut url = match &req.url {
            UrlPlan::Path(p) => format!("{}{}", self.base_url, p.render(scope)),
            UrlPlan::Absolute(u) => u.render(scope),
        };
        if !req.query.is_empty() {
            let pairs: Vec<(String, String)> = req
                .query
                .iter()
                .map(|(k, v)| (k.clone(), v.render(scope)))
                .collect();
            let qs = pairs
                .iter()
                .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
                .collect::<Vec<_>>()
                .join("&");
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&qs);
        }
        let mut r = Rendered {
            method: req.method.clone(),
            url,
            headers: Vec::new(),
            body: Vec::new(),
            timeout: req.timeout.unwrap_or(self.timeout),
            credential: None,
        };
        // The suite's headers carry its credentials: they go to the
        // configured target only, never to an absolute URL on another host.
        let own_origin = same_origin(&r.url, &self.base_url);
        if own_origin {
            for (k, v) in &self.headers {
                r.set_header(k, v.render(scope));
            }
            // The token held now; `Client::send` replaces it with a fresh
            // one when it is due (a request's own Authorization wins).
            if let Some(t) = self.auth.as_ref().and_then(|a| a.cached()) {
                r.set_header(AUTHORIZATION, format!("Bearer {t}"));
            }
        }
        match &req.body {
            BodyPlan::None => {}
            BodyPlan::Json(j) => {
                r.body = serde_json::to_vec(&j.render(scope)).unwrap_or_default();
                if r.header("content-type").is_none() {
                    r.set_header("Content-Type", "application/json");
                }
            }
            BodyPlan::Raw(t) => r.body = t.render(scope).into_bytes(),
            BodyPlan::Form(f) => {
                r.body = f
                    .iter()
                    .map(|(k, v)| format!("{}={}", encode(k), encode(&v.render(scope))))
                    .collect::<Vec<_>>()
                    .join("&")
                    .into_bytes();
                r.set_header("Content-Type", "application/x-www-form-urlencoded");
            }
        }
        for (k, v) in &req.headers {
            r.set_header(k, v.render(scope));
        }
        if own_origin {
            r.credential = Some(self.credential_scope(scope));
        }
        r
    }

    /// Which of a request's headers identify its caller, and whose they
    /// are when they keep the target's values.
    fn credential_scope(&self, scope: &Scope) -> CredentialScope {
        let mut names: Vec<String> = self.headers.iter().map(|(k, _)| k.clone()).collect();
        let mut own: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.render(scope)))
            .collect();
        if let Some(a) = &self.auth {
            // The plan refuses an Authorization header beside `auth`.
            names.push(AUTHORIZATION.to_owned());
            own.push((AUTHORIZATION.to_owned(), a.identity()));
        }
        let origin = origin_of(&self.base_url);
        let own_key = Credential::key_of(&origin, &own);
        CredentialScope {
            origin,
            names,
            label: self.label.clone(),
            own_key,
            auth: self.auth.clone(),
        }
    }

    /// The credential of the target's own headers (what a check's requests
    /// spend unless they override them).
    pub fn credential(&self) -> Credential {
        let c = self.credential_scope(&Scope::default());
        Credential::from_key(c.own_key, c.label)
    }
}

impl Target {
    /// The same target seen as the second tenant, if one is configured
    /// (`second_tenant_headers`, `second_tenant_auth` or both). Its OAuth2
    /// client is `second_tenant_auth`; without one, an `Authorization` among
    /// its headers replaces the suite's client, and otherwise the suite's
    /// client stays (a tenant told apart by another header).
    pub fn as_second_tenant(&self) -> Option<Target> {
        if self.second_tenant_headers.is_none() && self.second_tenant_auth.is_none() {
            return None;
        }
        let mut t = self.clone();
        let extra = self.second_tenant_headers.as_deref().unwrap_or_default();
        for (k, v) in extra {
            t.headers.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
            t.headers.push((k.clone(), v.clone()));
        }
        if self.second_tenant_auth.is_some() {
            t.auth = self.second_tenant_auth.clone();
            // Its client's token is its Authorization, not the suite's.
            t.headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case(AUTHORIZATION));
        } else if extra
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(AUTHORIZATION))
        {
            t.auth = None;
        }
        t.second_tenant_auth = None;
        t.label = SECOND_TENANT.to_owned();
        Some(t)
    }

    /// Makes sure the held tokens of the target's OAuth2 clients (its own
    /// and the second tenant's) are fresh now: fetched when due. The error
    /// names the token endpoint and what went wrong.
    pub async fn fresh_tokens(&self) -> Result<(), String> {
        for a in [&self.auth, &self.second_tenant_auth].into_iter().flatten() {
            a.token().await?;
        }
        Ok(())
    }
}

/// True when `url` is on the scheme, host and port of `base` (a relative
/// path joined to `base` always is).
pub fn same_origin(url: &str, base: &str) -> bool {
    let origin = |u: &str| {
        reqwest::Url::parse(u).ok().map(|u| {
            (
                u.scheme().to_owned(),
                u.host_str().map(str::to_ascii_lowercase),
                u.port_or_known_default(),
            )
        })
    };
    match (origin(url), origin(base)) {
        (Some(a), Some(b)) => a == b,
        // An unparsable URL fails when sent; it gets no credentials either.
        _ => false,
    }
}

/// Percent-encodes a query or form component (RFC 3986 unreserved kept).
pub fn encode(s: &str) -> String {
    crate::model::text::percent_encode(s, false, true)
}

/// Largest response body the probe reads by default (8 MiB): a hostile or
/// broken target cannot make tminus's memory grow without bound.
pub const DEFAULT_MAX_BODY: usize = 8 * 1024 * 1024;

/// What every HTTP client of tminus shares (the probe's and each burst
/// user's): redirects are never followed (the probe judges them; a burst
/// must not carry load and credentials to another host), no
/// `Accept-Encoding` unless a suite sets one and nothing inflated behind
/// tminus's back (goose turns reqwest's gzip on for the whole build; a 1 MB
/// gzip bomb would become 1 GB); the TLS options of the run (`--cacert`,
/// `--cert`, `--key`, see [`tls`]) and its proxies, decided by
/// [`proxy::Proxies::for_url`] as for tminus's own connections (reqwest's
/// own reading of the environment is off).
pub fn client_builder() -> reqwest::ClientBuilder {
    let b = reqwest::Client::builder();
    let b = match tls::installed() {
        Some(t) => t.apply(b),
        None => b,
    };
    let b = match proxy::installed() {
        Some(p) => b.proxy(reqwest::Proxy::custom(move |u| p.for_url(u).cloned())),
        None => b.no_proxy(),
    };
    b.user_agent(concat!("tminus/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .no_gzip()
        .no_brotli()
        .no_deflate()
        .no_zstd()
}

/// Sees every response the probe's client receives, each attempt (a
/// suite's contract watch, issue 26): the one place responses flow
/// through, so no family has to report them.
pub trait Observer: Send + Sync {
    fn response(&self, request: &RecordedRequest, response: &RecordedResponse);
}

/// The probe's HTTP client.
#[derive(Clone)]
pub struct Client {
    inner: reqwest::Client,
    max_body: usize,
    /// The run's request budget; `None`: no quota handling at all.
    quota: Option<Quota>,
    /// A 429 (or 503 + Retry-After) is waited out and the request sent
    /// again. Off only for the families that judge rate limiting, which see
    /// every 429 (the book still learns from it).
    polite: bool,
    /// Told of every response (`None`: nobody watches).
    observer: Option<std::sync::Arc<dyn Observer>>,
}

impl Client {
    pub fn new() -> Result<Self, String> {
        let inner = client_builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Client {
            inner,
            max_body: DEFAULT_MAX_BODY,
            quota: None,
            polite: true,
            observer: None,
        })
    }

    /// Tells the observer (if any) of an exchange: every response this
    /// client receives, and those a family sent beside it on its own
    /// connections (`idempotency.concurrent`).
    pub fn observe(&self, ex: &Exchange) {
        if let Some(o) = &self.observer {
            o.response(&ex.request, &ex.response);
        }
    }

    /// The same client, telling `observer` of every response.
    pub fn observed(&self, observer: std::sync::Arc<dyn Observer>) -> Client {
        Client {
            observer: Some(observer),
            ..self.clone()
        }
    }

    /// The same client, telling nobody: what the suite sends to its own
    /// instruments (the side-effect counters), which are not the API.
    pub fn unwatched(&self) -> Client {
        Client {
            observer: None,
            ..self.clone()
        }
    }

    /// Who is told of every response, if anyone (the burst hands its
    /// contract sample to it).
    pub fn observer(&self) -> Option<std::sync::Arc<dyn Observer>> {
        self.observer.clone()
    }

    /// The same client keeping the run's request budget.
    pub fn with_quota(mut self, quota: Quota) -> Self {
        self.quota = Some(quota);
        self
    }

    /// The run's request budget, if the client keeps one.
    pub fn quota(&self) -> Option<&Quota> {
        self.quota.as_ref()
    }

    /// The same client for a family that judges rate limiting: every 429
    /// comes back as an answer (the book still learns from it and still
    /// makes later polite requests wait).
    pub fn judging_limits(&self) -> Client {
        Client {
            polite: false,
            ..self.clone()
        }
    }

    /// The same client, waiting out 429s (see [`Client::judging_limits`]).
    pub fn polite(&self) -> Client {
        Client {
            polite: true,
            ..self.clone()
        }
    }

    /// The same client with another response-body cap.
    pub fn with_max_body(mut self, max_body: usize) -> Self {
        self.max_body = max_body;
        self
    }

    /// The response-body cap this client reads up to.
    pub fn max_body(&self) -> usize {
        self.max_body
    }

    pub fn raw(&self) -> &reqwest::Client {
        &self.inner
    }

    /// Sends the request and reads the whole body, all within its timeout.
    /// With a request budget, a polite client first waits while the
    /// credential is blocked, and answers a 429 (or a 503 with Retry-After)
    /// by waiting as asked and sending the same request again (same body,
    /// same idempotency key); past the run's wait budget that is a
    /// [`TransportError::Quota`]. The timeout is per attempt.
    pub async fn send(&self, r: &Rendered) -> Result<Exchange, TransportError> {
        let Some(q) = &self.quota else {
            return self.attempt(r, None).await;
        };
        let cred = r.credential();
        let quota_error = |e: quota::QuotaError| TransportError::Quota {
            request: format!("{} {}", r.method, r.url),
            reason: e.0,
        };
        let mut hintless = 0u32;
        let mut asked_to_wait = 0u32;
        loop {
            if asked_to_wait > quota::MAX_RESENDS {
                return Err(quota_error(quota::QuotaError(format!(
                    "quota: {} was asked to wait {} times for one request; gave up",
                    cred.label, asked_to_wait
                ))));
            }
            if self.polite {
                q.before_send(&cred, &r.url).await.map_err(quota_error)?;
            }
            let ex = self.attempt(r, Some((q, &cred))).await?;
            let Some(asked) = q.learn(&cred, &r.url, &ex.response) else {
                return Ok(ex);
            };
            if !self.polite {
                return Ok(ex);
            }
            asked_to_wait += 1;
            if asked.is_none() {
                hintless += 1;
                if hintless > quota::HINTLESS_TRIES {
                    return Err(quota_error(quota::QuotaError(format!(
                        "quota: {} was answered {} {} times in a row with no Retry-After and no reset; gave up backing off",
                        cred.label,
                        ex.status(),
                        hintless
                    ))));
                }
                let wait = quota::hintless_backoff(hintless);
                q.block_for(
                    &cred,
                    wait,
                    format!("{} with no Retry-After: backoff #{hintless}", ex.status()),
                );
            }
        }
    }

    /// One attempt, counted by the budget when there is one. A request
    /// that carries its target's OAuth2 token is sent with the token that
    /// is fresh now; when the target answers 401, with one fetched anew
    /// (at most once: the second answer is the answer).
    async fn attempt(
        &self,
        r: &Rendered,
        quota: Option<(&Quota, &Credential)>,
    ) -> Result<Exchange, TransportError> {
        let source = r
            .credential
            .as_ref()
            .and_then(|c| c.auth.as_ref())
            .filter(|a| r.header(AUTHORIZATION).is_some_and(|v| a.is_own_bearer(v)));
        let Some(source) = source else {
            return self.counted(r, quota).await;
        };
        let token_error = |r: &Rendered, reason: String| TransportError::Other {
            request: RecordedRequest::capture(r).line(),
            reason,
        };
        let mut r = r.clone();
        let token = source.token().await.map_err(|e| token_error(&r, e))?;
        r.set_header(AUTHORIZATION, format!("Bearer {token}"));
        let ex = self.counted(&r, quota).await?;
        if ex.status() != 401 {
            return Ok(ex);
        }
        match source.refresh_after_401(&token).await {
            Ok(Some(fresh)) => {
                r.set_header(AUTHORIZATION, format!("Bearer {fresh}"));
                self.counted(&r, quota).await
            }
            Ok(None) => Ok(ex),
            Err(e) => Err(token_error(&r, e)),
        }
    }

    /// [`send_once`](Self::send_once), counted by the budget if any.
    async fn counted(
        &self,
        r: &Rendered,
        quota: Option<(&Quota, &Credential)>,
    ) -> Result<Exchange, TransportError> {
        if let Some((q, cred)) = quota {
            q.on_send(cred);
        }
        self.send_once(r).await
    }

    /// One attempt: send and read the whole body, within the timeout.
    async fn send_once(&self, r: &Rendered) -> Result<Exchange, TransportError> {
        let request = RecordedRequest::capture(r);
        let mut b = self.inner.request(r.method.clone(), &r.url);
        for (k, v) in &r.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        if !r.body.is_empty() {
            b = b.body(r.body.clone());
        }
        let started = Instant::now();
        let max_body = self.max_body;
        let fut = async {
            let mut resp = b.send().await?;
            let status = resp.status().as_u16();
            let headers = header_pairs(resp.headers());
            let ttfb = started.elapsed();
            // Read in chunks against the cap: an endless or huge body stops
            // at the cap instead of filling memory.
            if resp.content_length().is_some_and(|n| n > max_body as u64) {
                return Ok(None);
            }
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await? {
                if body.len() + chunk.len() > max_body {
                    return Ok(None);
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, reqwest::Error>(Some((status, headers, body, ttfb)))
        };
        // One deadline for the whole exchange: connect, headers and body.
        match tokio::time::timeout(r.timeout, fut).await {
            Err(_) => Err(TransportError::Timeout {
                request: request.line(),
                after: r.timeout,
            }),
            Ok(Err(e)) => {
                let err = TransportError::from_reqwest(&request, &e);
                // reqwest says only "tunnel error: unsuccessful" when a proxy
                // refuses CONNECT: ask the proxy once on a connection of
                // tminus's own, whose error quotes its status line.
                if e.is_connect() && exchange::error_chain(&e).contains("tunnel") {
                    let origin = reqwest::Url::parse(&r.url)
                        .ok()
                        .and_then(|u| stream::Origin::of(&u).ok());
                    if let Some(o) = origin {
                        let asked = tokio::time::timeout(r.timeout, stream::connect_tcp(&o)).await;
                        if let Ok(Err(why)) = asked {
                            return Err(err.with_reason(why));
                        }
                    }
                }
                // An https failure whose error names no TLS cause may still
                // be one (a TLS 1.3 client certificate refused after the
                // handshake): ask the TLS layer once.
                if e.is_timeout() || tls::explain(&e).is_some() {
                    return Err(err);
                }
                let origin = reqwest::Url::parse(&r.url)
                    .ok()
                    .and_then(|u| stream::Origin::of(&u).ok())
                    .filter(|o| o.tls);
                match origin {
                    Some(o) => {
                        let tls = tls::installed().cloned().unwrap_or_default();
                        match tls::diagnose(&tls, &o).await {
                            Some(why) => Err(err.with_reason(why)),
                            None => Err(err),
                        }
                    }
                    None => Err(err),
                }
            }
            Ok(Ok(None)) => Err(TransportError::Other {
                request: request.line(),
                reason: body_over_cap(max_body),
            }),
            Ok(Ok(Some((status, headers, body, ttfb)))) => {
                let ex = Exchange {
                    request,
                    response: RecordedResponse {
                        status,
                        headers,
                        body,
                    },
                    elapsed: started.elapsed(),
                    ttfb,
                };
                self.observe(&ex);
                Ok(ex)
            }
        }
    }
}

/// A response's header fields as (name, value) text pairs, in order.
pub fn header_pairs(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// Why a response was not read: its body passed the cap.
pub fn body_over_cap(max_body: usize) -> String {
    format!(
        "the response body is larger than the {} cap on what tminus reads",
        human_bytes(max_body)
    )
}

/// `8 MiB`, `512 KiB`, `100 bytes`.
pub fn human_bytes(n: usize) -> String {
    if n >= 1024 * 1024 && n.is_multiple_of(1024 * 1024) {
        format!("{} MiB", n / (1024 * 1024))
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        assert!(same_origin(
            "http://127.0.0.1:8080/x?y",
            "http://127.0.0.1:8080"
        ));
        assert!(same_origin(
            "https://API.example.com/v1",
            "https://api.example.com:443/"
        ));
        assert!(!same_origin(
            "http://127.0.0.2:8080/x",
            "http://127.0.0.1:8080"
        ));
        assert!(!same_origin(
            "https://127.0.0.1:8080/x",
            "http://127.0.0.1:8080"
        ));
        assert!(!same_origin(
            "http://127.0.0.1:8081/x",
            "http://127.0.0.1:8080"
        ));
    }
}
