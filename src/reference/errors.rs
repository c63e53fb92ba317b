//! The one error type every handler and middleware returns, and its JSON shape.
//!
//! All errors render as `{"error":{"code":"...","message":"..."}}` so a check can key
//! on `code` without caring which layer produced the error.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An API error: an HTTP status plus a stable machine-readable code.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    #[error("missing or invalid API key")]
    InvalidApiKey,
    /// `field` is a JSON-path-like name (`text`, `contacts[3].phone`, `limit`).
    #[error("{field}: {reason}")]
    Validation { field: String, reason: String },
    #[error("cursor is not valid for this list")]
    InvalidCursor,
    #[error("{0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    /// Only under the `undocumented-500` defect.
    #[error("{0}")]
    Internal(String),
    /// The body could not be read at all (too large, broken stream).
    #[error("{reason}")]
    BadBody { status: StatusCode, reason: String },
}

impl ApiError {
    pub(crate) fn validation(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ApiError::Validation {
            field: field.into(),
            reason: reason.into(),
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidApiKey => StatusCode::UNAUTHORIZED,
            ApiError::Validation { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::InvalidCursor => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::BadBody { status, .. } => *status,
        }
    }

    fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidApiKey => "INVALID_API_KEY",
            ApiError::Validation { .. } => "VALIDATION_ERROR",
            ApiError::InvalidCursor => "INVALID_CURSOR",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ApiError::Internal(_) => "INTERNAL",
            ApiError::BadBody { status, .. } if *status == StatusCode::PAYLOAD_TOO_LARGE => {
                "PAYLOAD_TOO_LARGE"
            }
            ApiError::BadBody { .. } => "BAD_REQUEST",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code(), "message": self.to_string()}});
        let mut resp = (self.status(), axum::Json(body)).into_response();
        if matches!(self, ApiError::InvalidApiKey) {
            // RFC 6750 §3: a 401 names the scheme the client should use.
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

impl From<axum::extract::rejection::BytesRejection> for ApiError {
    fn from(r: axum::extract::rejection::BytesRejection) -> Self {
        ApiError::BadBody {
            status: r.status(),
            reason: r.body_text(),
        }
    }
}

/// Router fallback: any path no route matches.
pub(crate) async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {}", uri.path()))
}

/// Fallback for a known path called with a method it does not serve.
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
