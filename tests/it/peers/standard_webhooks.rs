//! Peer: a webhook receiver that verifies with the `standardwebhooks` crate
//! 1.0.1 (the Standard Webhooks project's own Rust library), exactly as its
//! README shows (`Webhook::new(secret)`, `verify(payload, headers)`), against
//! tminus's sender-side `webhook.*` kinds with `scheme: standard`
//! (catalogue WH-000..WH-015).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use standardwebhooks::Webhook;

use super::expect::{self, Expect};
use super::server;

/// The receiver's signing secret (`whsec_` + base64 of 32 bytes), handed to
/// tminus as a secret through the environment.
const SECRET: &str = "whsec_cGVlci1zdGFuZGFyZHdlYmhvb2tzLWNyYXRlLWtleSE=";
const SECRET_ENV: &str = "PEER_WHSEC";

struct Receiver {
    webhook: Webhook,
    /// Deliveries that verified: the side effect tminus reads back.
    processed: AtomicU64,
}

/// `POST /webhooks` verifies the raw bytes and counts what verified (no
/// dedupe: the crate offers none, see EXPECTED); `GET /effects` reports the
/// count.
fn app() -> Router {
    let state = Arc::new(Receiver {
        webhook: Webhook::new(SECRET).expect("a base64 whsec_ secret"),
        processed: AtomicU64::new(0),
    });
    Router::new()
        .route(
            "/webhooks",
            post(
                |State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes| async move {
                    match r.webhook.verify(&body, &headers) {
                        Ok(()) => {
                            r.processed.fetch_add(1, Ordering::SeqCst);
                            (StatusCode::OK, "ok".to_owned())
                        }
                        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()),
                    }
                },
            ),
        )
        .route(
            "/effects",
            get(|State(r): State<Arc<Receiver>>| async move {
                Json(serde_json::json!({ "count": r.processed.load(Ordering::SeqCst) }))
            }),
        )
        .with_state(state)
}

/// One check per row of EXPECTED: id `rejects-forged` is kind
/// `webhook.rejects_forged`, all with the same receiver, secret and counter.
fn suite() -> String {
    let mut y = String::from("suite: peer-standardwebhooks\ntarget: { timeout: 5s }\nchecks:\n");
    let mut seen = Vec::new();
    for e in EXPECTED {
        // A check may have several rows (one per property): write it once.
        if seen.contains(&e.check) {
            continue;
        }
        seen.push(e.check);
        y.push_str(&format!(
            "  - id: {id}\n    kind: webhook.{kind}\n    receiver: /webhooks\n    scheme: standard\n    \
             secret: \"${{secret.{SECRET_ENV}}}\"\n    \
             effects: {{ request: {{ path: /effects }}, value: $.count }}\n",
            id = e.check,
            kind = e.check.replace('-', "_"),
        ));
        if e.check == "burst" {
            y.push_str("    count: 20\n    over: 1s\n");
        }
    }
    y
}

/// Written from the crate's documentation and the Standard Webhooks spec it
/// implements (spec/standard-webhooks.md, "Verifying webhook authenticity")
/// before tminus was run against it. `verify` (docs.rs standardwebhooks
/// 1.0.1) returns `MissingHeader` without `webhook-id`/`-timestamp`/
/// `-signature`, `TimestampTooOldError`/`FutureTimestampError` outside 5
/// minutes either side, and `InvalidSignature` unless one of the
/// space-delimited `v1,<base64>` entries equals the HMAC-SHA256 of
/// `{id}.{timestamp}.{payload}` over the raw payload bytes. It verifies; it
/// does not remember ids: dedupe is the application's job (the spec: "the ID
/// is often used as an idempotency key" by the consumer).
pub const EXPECTED: &[Expect] = &[
    Expect {
        check: "accepts-valid",
        property: None,
        verdict: "pass",
        why: "a correct v1 signature verifies; the app answers 200 and counts it",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "rejects-missing-headers",
        property: None,
        verdict: "pass",
        why: "MissingHeader for each of id, timestamp, signature",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "rejects-forged",
        property: None,
        verdict: "pass",
        why: "InvalidSignature: no entry equals the expected digest",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "accepts-raw-bytes",
        property: None,
        verdict: "pass",
        why: "verify signs the payload bytes as given (no JSON parsing)",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "rejects-reserialized",
        property: None,
        verdict: "pass",
        why: "other bytes, other digest: InvalidSignature",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "rejects-truncated",
        property: None,
        verdict: "pass",
        why: "entries are compared whole (length first): half, empty and `v1,` fail",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "rejects-wrong-scheme",
        property: None,
        verdict: "pass",
        why: "only entries whose version is exactly `v1` are compared",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "rejects-stale",
        property: None,
        verdict: "pass",
        why: "TimestampTooOldError beyond 300 s (tminus sends 360 s old)",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "rejects-future",
        property: None,
        verdict: "pass",
        why: "FutureTimestampError beyond 300 s ahead",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "dedupes-replay",
        property: None,
        verdict: "fail",
        why: "the crate keeps no state: the same delivery verifies twice and is \
              processed twice; a receiver must dedupe on webhook-id itself",
        message_has: Some("processed 2 time(s)"),
        tminus_wrong: None,
    },
    Expect {
        check: "replay-new-id",
        property: None,
        verdict: "pass",
        why: "the id is signed: the old signature under a new id is InvalidSignature",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "dedupes-retry",
        property: None,
        verdict: "fail",
        why: "a retry (same id, new timestamp, new valid signature) verifies and is \
              processed again: no dedupe in the crate",
        message_has: Some("processed 2 time(s)"),
        tminus_wrong: None,
    },
    Expect {
        check: "rejects-tampered",
        property: None,
        verdict: "pass",
        why: "one changed byte: InvalidSignature",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "key-rotation",
        property: None,
        verdict: "pass",
        why: "any one matching entry of the space-delimited list verifies",
        message_has: None,
        tminus_wrong: None,
    },
    Expect {
        check: "rejects-dotted-id",
        property: Some("rejected"),
        // The spec's rule is on the producer: "It's important that both the
        // message id and the timestamp not be user controlled, or at the very
        // least not be allowed to include any `.`" (Signature scheme). The
        // library accepts a validly signed dotted id, and so conforms; a
        // receiver that refuses one is defence in depth, a SHOULD at most.
        verdict: "warn",
        why: "the crate verifies `{id}.{ts}.{body}` whatever the id holds",
        message_has: Some("validly signed"),
        // Was a disagreement (tminus judged it a MUST); `rejected` is now a
        // SHOULD with this source (WH-015, Standard Webhooks §Signature scheme).
        tminus_wrong: None,
    },
    Expect {
        check: "burst",
        property: None,
        verdict: "pass",
        why: "verification is in-process and fast: 20 deliveries over 1 s all 200, \
              counted 20",
        message_has: None,
        tminus_wrong: None,
    },
];

#[test]
fn standardwebhooks_verdicts_match_its_documentation() {
    let peer = server::start(app());
    let envs = [(SECRET_ENV, SECRET)];
    let report = expect::run(&suite(), &peer.url, &[], &envs);
    expect::assert_agrees("standardwebhooks", &report, EXPECTED);
}
