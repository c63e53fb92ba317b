//! API-key authentication for `/public/v1/*` and the `Tenant` it yields: a
//! configured API key is its own tenant, a token the reference's OAuth2
//! endpoint issued (`oauth.rs`) is its client's (`oauth:<client_id>`), so a
//! refreshed token still reads and writes the same data.
//!
//! Auth runs as a route layer on the public router, so no public route can forget
//! it; handlers receive the result through the `Tenant` extractor. Data is scoped by
//! tenant, which is what makes cross-tenant checks (IDEM-005, RL-004) meaningful.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::defect::Defect;
use super::errors::ApiError;
use super::oauth::{Lookup, OAuth};
use super::state::AppState;

/// The authenticated caller: the API key that owns the data being read or written.
#[derive(Debug, Clone)]
pub(crate) struct Tenant(pub String);

/// Middleware: 401 `INVALID_API_KEY` unless the Bearer token is a configured
/// key or an unexpired token the OAuth2 endpoint issued; an expired one is
/// told apart in `WWW-Authenticate` (`error="invalid_token"`, RFC 6750 §3.1).
pub(crate) async fn require_api_key(
    State((state, oauth)): State<(AppState, OAuth)>,
    mut req: Request,
    next: Next,
) -> Response {
    match authenticate(&state, &oauth, req.headers()) {
        Ok(tenant) => {
            req.extensions_mut().insert(tenant);
            next.run(req).await
        }
        Err(expired) => {
            let mut resp = ApiError::InvalidApiKey.into_response();
            if expired {
                resp.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    axum::http::HeaderValue::from_static(
                        "Bearer error=\"invalid_token\", error_description=\"The access token expired\"",
                    ),
                );
            }
            // A drift defect: the header names a scheme the document's
            // schema does not allow.
            if state.has(Defect::WwwAuthenticateBasic) {
                resp.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    axum::http::HeaderValue::from_static("Basic realm=\"reference\""),
                );
            }
            // The drift defect: the header the document requires is dropped.
            if state.has(Defect::NoWwwAuthenticate) {
                resp.headers_mut()
                    .remove(axum::http::header::WWW_AUTHENTICATE);
            }
            resp
        }
    }
}

/// The caller's tenant; `Err(true)` for an issued token that expired,
/// `Err(false)` for anything else refused.
fn authenticate(state: &AppState, oauth: &OAuth, headers: &HeaderMap) -> Result<Tenant, bool> {
    let token = bearer_token(headers).ok_or(false)?;
    if state.has(Defect::AcceptAnyKey) {
        return Ok(Tenant(token.to_owned()));
    }
    // The isolation defect: production takes the sandbox's keys too.
    if state.has(Defect::SandboxKeyWorksInProduction)
        && state.config().environment == super::Environment::Production
        && super::SANDBOX_API_KEYS.contains(&token)
    {
        return Ok(Tenant(token.to_owned()));
    }
    if state.config().api_keys.iter().any(|k| k == token) {
        return Ok(Tenant(token.to_owned()));
    }
    match oauth.lookup(token) {
        Lookup::Valid(client) => Ok(Tenant(format!("oauth:{client}"))),
        Lookup::Expired => Err(true),
        Lookup::Unknown => Err(false),
    }
}

/// The token of `Authorization: Bearer <token>` (scheme case-insensitive, RFC 7235),
/// or `None` when the header is absent, not Bearer, or the token is empty.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

impl<S: Send + Sync> FromRequestParts<S> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        // Only reachable without the extension if a handler was routed outside the
        // auth layer; failing closed (401) is the safe answer to that bug.
        parts
            .extensions
            .get::<Tenant>()
            .cloned()
            .ok_or(ApiError::InvalidApiKey)
    }
}
