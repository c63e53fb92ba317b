//! CORS as a careful API serves it (the seed's "a narrow CORS list"): one
//! allowed browser origin, [`ALLOWED_ORIGIN`], gets
//! `Access-Control-Allow-Origin` with credentials; any other origin gets no
//! CORS grant at all, and every answer to a request with an Origin says
//! `Vary: Origin` (Fetch §3.2.5, so a cache never serves one origin's grant
//! to another). Preflights (`OPTIONS` with `Access-Control-Request-Method`)
//! are answered 204 here, before routing.
//!
//! `--defect cors-reflects-origin` is the common mistake behind credentialed
//! cross-origin leaks: whatever Origin comes is echoed, with
//! `Access-Control-Allow-Credentials: true`.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::state::AppState;
use super::Defect;

/// The one origin the reference lets read its answers from a browser.
pub const ALLOWED_ORIGIN: &str = "https://app.reference.example";

const ALLOW_METHODS: &str = "GET, POST, PUT, PATCH, DELETE";
const ALLOW_HEADERS: &str =
    "Authorization, Content-Type, Idempotency-Key, traceparent, tracestate, X-Request-Id";

pub(crate) async fn cors(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let origin = req.headers().get("origin").cloned();
    let preflight = req.method() == Method::OPTIONS
        && req.headers().contains_key("access-control-request-method");
    let Some(origin) = origin else {
        return next.run(req).await;
    };
    let granted =
        origin.as_bytes() == ALLOWED_ORIGIN.as_bytes() || state.has(Defect::CorsReflectsOrigin);
    let mut resp = if preflight {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(req).await
    };
    let h = resp.headers_mut();
    h.append("vary", HeaderValue::from_static("Origin"));
    if granted {
        h.insert("access-control-allow-origin", origin);
        h.insert(
            "access-control-allow-credentials",
            HeaderValue::from_static("true"),
        );
        if preflight {
            h.insert(
                "access-control-allow-methods",
                HeaderValue::from_static(ALLOW_METHODS),
            );
            h.insert(
                "access-control-allow-headers",
                HeaderValue::from_static(ALLOW_HEADERS),
            );
            h.insert("access-control-max-age", HeaderValue::from_static("600"));
        }
    }
    resp
}
