//! Peer: request ids by `tower-http` 0.6's request-id layers
//! (`SetRequestIdLayer::x_request_id(MakeRequestUuid)` outside
//! `PropagateRequestIdLayer::x_request_id()`, the pairing its docs show) on an
//! app with a 401 for calls without `Authorization`, against tminus's
//! `trace.*` kinds (catalogue TRC-001..TRC-009).

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};

use super::expect::{self, Expect};
use super::server;

async fn require_authorization(req: Request, next: Next) -> Response {
    if req.headers().contains_key(header::AUTHORIZATION) {
        next.run(req).await
    } else {
        (StatusCode::UNAUTHORIZED, "missing Authorization").into_response()
    }
}

fn app() -> Router {
    Router::new()
        .route(
            "/v1/items",
            get(|| async { Json(serde_json::json!({ "items": [] })) }),
        )
        .fallback(|| async { (StatusCode::NOT_FOUND, "no such route") })
        .layer(middleware::from_fn(require_authorization))
        // The last layer added runs first: Set, then Propagate, then auth.
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

/// The layers speak `x-request-id` only (UUID v4, so `id_format: any`).
const SUITE: &str = r#"suite: peer-tower-http-request-id
target:
  headers: { Authorization: "Bearer peer" }
  timeout: 5s
checks:
  - id: present
    kind: trace.present
    request: { path: /v1/items }
  - id: unique
    kind: trace.unique
    request: { path: /v1/items }
    count: 200
    concurrency: 8
    trace_header: X-Request-Id
    id_format: any
  - id: hygiene
    kind: trace.request_id_hygiene
    request: { path: /v1/items }
  - id: propagated
    kind: trace.propagated
    request: { path: /v1/items }
  - id: version-downgrade
    kind: trace.version_downgrade
    request: { path: /v1/items }
  - id: invalid-ignored
    kind: trace.invalid_ignored
    request: { path: /v1/items }
    trace_header: X-Request-Id
    id_format: any
  - id: tracestate
    kind: trace.tracestate
    request: { path: /v1/items }
"#;

/// Written from tower-http 0.6.11's `request_id` module docs before tminus
/// was run against it: `SetRequestId` inserts a `MakeRequestUuid` id when
/// the request has none and "wont override request ids if its already
/// present" (module docs, "Doesn't override existing headers");
/// `PropagateRequestId` copies the request's header onto the response. The
/// layers know nothing of W3C Trace Context (`traceparent`, `tracestate`).
pub const EXPECTED: &[Expect] = &[
    Expect {
        check: "present",
        property: None,
        verdict: "pass",
        why: "the layers wrap the whole router, so 200, the 401 and the 404 all carry \
              x-request-id",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "unique",
        property: None,
        verdict: "pass",
        why: "a fresh UUID v4 per request without one",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "hygiene",
        property: None,
        verdict: "fail",
        why: "documented: an incoming id is kept as is and copied to the response, so the \
              10 kB and the hostile (TAB, `<script>`, non-ASCII) ids come back raw. \
              TRC-007 follows Rails' ActionDispatch::RequestId (sanitize to \
              alphanumerics and dashes, at most 255 characters); no RFC governs \
              X-Request-Id, so this is tminus's contract, not a spec disagreement, and a \
              real risk (log forging, header bloat) the crate leaves to the app",
        message_has: Some("reflected raw"),
        tminus_wrong: None,
    },
    Expect {
        check: "propagated",
        property: Some("id_returned"),
        verdict: "warn",
        why: "no Trace-Id or traceresponse comes back: the layers ignore traceparent \
              (W3C Trace Context is out of their scope); returning the trace id is a \
              SHOULD (BOTIX's Trace-Id, the traceresponse draft)",
        message_has: Some("none of Trace-Id, traceresponse"),
        tminus_wrong: None,
    },
    Expect {
        check: "propagated",
        property: Some("trace_id_continued"),
        verdict: "skipped",
        why: "with no trace id in the response, whether the trace was continued is not \
              observable: skipped, never a pass (id_returned carries the verdict, issue 22)",
        message_has: Some("is not observable"),
        tminus_wrong: None,
    },
    Expect {
        check: "version-downgrade",
        property: Some("id_returned"),
        verdict: "warn",
        why: "same: a higher-version traceparent gets no trace id back either",
        message_has: Some("none of Trace-Id, traceresponse"),
        tminus_wrong: None,
    },
    Expect {
        check: "version-downgrade",
        property: Some("version_00"),
        verdict: "skipped",
        why: "no traceparent-shaped id comes back, so its version is not observable: \
              skipped, never a pass (id_returned carries the verdict)",
        message_has: Some("is not observable"),
        tminus_wrong: None,
    },
    Expect {
        check: "invalid-ignored",
        property: None,
        verdict: "pass",
        why: "every traceparent is ignored, invalid ones included: each answer is 200 \
              with a new x-request-id and nothing echoes the invalid value (W3C: an \
              invalid traceparent MUST be ignored)",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "tracestate",
        property: None,
        verdict: "skipped",
        why: "no tracestate is ever returned (`required: false` by default)",
        message_has: Some("returns no tracestate"),
        tminus_wrong: None,
    },
];

#[test]
fn tower_http_request_id_verdicts_match_its_documentation() {
    let peer = server::start(app());
    let report = expect::run(SUITE, &peer.url, &[], &[]);
    expect::assert_agrees("tower-http request-id", &report, EXPECTED);
}
