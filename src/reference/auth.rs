//! API-key authentication for `/public/v1/*` and the `Tenant` it yields.
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
use super::state::AppState;

/// The authenticated caller: the API key that owns the data being read or written.
#[derive(Debug, Clone)]
pub(crate) struct Tenant(pub String);

/// Middleware: 401 `INVALID_API_KEY` unless the Bearer token is a configured key.
pub(crate) async fn require_api_key(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    match authenticate(&state, req.headers()) {
        Ok(tenant) => {
            req.extensions_mut().insert(tenant);
            next.run(req).await
        }
        Err(e) => {
            let mut resp = e.into_response();
            // The drift defect: the header the document requires is dropped.
            if state.has(Defect::NoWwwAuthenticate) {
                resp.headers_mut()
                    .remove(axum::http::header::WWW_AUTHENTICATE);
            }
            resp
        }
    }
}

fn authenticate(state: &AppState, headers: &HeaderMap) -> Result<Tenant, ApiError> {
    let token = bearer_token(headers).ok_or(ApiError::InvalidApiKey)?;
    if state.has(Defect::AcceptAnyKey) {
        return Ok(Tenant(token.to_owned()));
    }
    if state.config().api_keys.iter().any(|k| k == token) {
        Ok(Tenant(token.to_owned()))
    } else {
        Err(ApiError::InvalidApiKey)
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
