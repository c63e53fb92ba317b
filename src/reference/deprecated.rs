//! `GET /public/v1/messages/total`: the message count under its old name,
//! deprecated in favour of `/public/v1/messages/count` (the reference's
//! deprecated operation, catalogue CON-005). Its answers say so the way RFC
//! 9745 and RFC 8594 ask: `Deprecation: @1767225600` (deprecated since
//! 2026-01-01), `Sunset` at the document's `x-sunset` (2027-06-30T23:59:59Z)
//! and a `Link` to the successor. Three defects break it:
//! `no-deprecation-header` drops both headers, `deprecation-draft-syntax`
//! sends the drafts' `Deprecation: true`, `sunset-iso-date` an RFC 3339 Sunset.

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::auth::Tenant;
use super::defect::Defect;
use super::state::AppState;

/// Since when the operation is deprecated (2026-01-01T00:00:00Z).
pub const DEPRECATED_SINCE: i64 = 1_767_225_600;
/// Its `x-sunset` in the document, as an HTTP-date.
pub const SUNSET: &str = "Wed, 30 Jun 2027 23:59:59 GMT";
/// The same date as `sunset-iso-date` sends it (not an HTTP-date).
const SUNSET_RFC3339: &str = "2027-06-30T23:59:59Z";

/// `GET /public/v1/messages/total`
pub(crate) async fn total(State(state): State<AppState>, Tenant(tenant): Tenant) -> Response {
    // The count itself, not `messages::count`: the old name keeps working
    // while the new one has its own defects (`undocumented-500`).
    let n = state.with_tenant(&tenant, |t| t.messages.len());
    let mut resp = Json(json!({"count": n})).into_response();
    if state.has(Defect::NoDeprecationHeader) {
        return resp;
    }
    let deprecation = if state.has(Defect::DeprecationDraftSyntax) {
        "true".to_owned()
    } else {
        format!("@{DEPRECATED_SINCE}")
    };
    let sunset = if state.has(Defect::SunsetIsoDate) {
        SUNSET_RFC3339
    } else {
        SUNSET
    };
    let h = resp.headers_mut();
    for (name, value) in [
        ("deprecation", deprecation.as_str()),
        ("sunset", sunset),
        (
            "link",
            "</public/v1/messages/count>; rel=\"successor-version\"",
        ),
    ] {
        h.insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(value).expect("a constant header value"),
        );
    }
    resp
}
