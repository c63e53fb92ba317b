//! The reference's OpenAPI document is true: real requests to every route of
//! the reference (successes and every error status it can be made to send),
//! each response judged against `/openapi.json` by tminus's contract module,
//! and every documented operation exercised.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::{Client, Method};
use serde_json::{json, Value};
use tminus::contract::{Contract, Seen, Verdict};
use tminus::reference::{
    RateLimitConfig, ReferenceConfig, ReferenceServer, DEFAULT_API_KEY, OPENAPI_JSON,
};

struct Probe {
    client: Client,
    base: String,
    contract: Contract,
    problems: Vec<String>,
    seen: BTreeSet<(String, u16)>,
}

impl Probe {
    /// Sends one request and judges its answer; `want` is the status the
    /// request is meant to provoke (a probe that misses it is a problem too).
    async fn send(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
        want: u16,
    ) -> (Vec<(String, String)>, Value) {
        let mut b = self
            .client
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(DEFAULT_API_KEY);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        if let Some(body) = body {
            b = b.header("Content-Type", "application/json").body(body);
        }
        let resp = b.send().await.expect("the reference answers");
        let status = resp.status().as_u16();
        let hs = tminus::http::header_pairs(resp.headers());
        let bytes = resp.bytes().await.expect("body");
        if status != want {
            self.problems.push(format!(
                "{method} {path}: meant to get {want}, got {status}: {}",
                String::from_utf8_lossy(&bytes)
            ));
        }
        let seen = Seen {
            status,
            headers: &hs,
            body: &bytes,
        };
        match self
            .contract
            .judge(method.as_str(), &format!("{}{path}", self.base), &seen)
        {
            Verdict::Operation {
                operation,
                violations,
                ..
            } => {
                self.seen.insert((operation.clone(), status));
                for v in violations {
                    self.problems.push(format!(
                        "{method} {path} -> {status} ({operation}): {} at {}",
                        v.message, v.pointer
                    ));
                }
            }
            other => self
                .problems
                .push(format!("{method} {path} -> {status}: {other:?}")),
        }
        (hs, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

fn j(v: Value) -> Option<Vec<u8>> {
    Some(serde_json::to_vec(&v).unwrap())
}

fn key() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[tokio::test]
async fn every_reference_response_conforms_to_its_openapi_document() {
    let server = ReferenceServer::start(ReferenceConfig::default(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let client = Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    // The served document is the embedded one.
    let served = client
        .get(format!("{}/openapi.json", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(served.headers()["content-type"], "application/json");
    assert_eq!(served.text().await.unwrap(), OPENAPI_JSON);
    let mut p = Probe {
        client,
        base: server.base_url(),
        contract: Contract::from_text(OPENAPI_JSON, "openapi.json").unwrap(),
        problems: Vec::new(),
        seen: BTreeSet::new(),
    };
    use Method as M;
    p.send(M::GET, "/healthz", &[], None, 200).await;
    p.send(M::GET, "/openapi.json", &[], None, 200).await;
    p.send(M::GET, "/metrics", &[], None, 200).await;
    p.send(M::GET, "/__tminus/effects", &[], None, 200).await;
    p.send(M::GET, "/__tminus/effects/messages.create", &[], None, 200)
        .await;
    p.send(M::GET, "/__tminus/effects/nope", &[], None, 404)
        .await;

    let k = key();
    let msg = json!({"contact_id": 1, "text": "hi"});
    p.send(
        M::POST,
        "/public/v1/messages",
        &[("Idempotency-Key", &k)],
        j(msg.clone()),
        201,
    )
    .await;
    let (hs, _) = p
        .send(
            M::POST,
            "/public/v1/messages",
            &[("Idempotency-Key", &k)],
            j(msg.clone()),
            201,
        )
        .await;
    assert!(
        hs.iter()
            .any(|(n, v)| n == "idempotent-replayed" && v == "1"),
        "{hs:?}"
    );
    p.send(
        M::POST,
        "/public/v1/messages",
        &[("Idempotency-Key", &k)],
        j(json!({"contact_id": 2, "text": "x"})),
        422,
    )
    .await;
    p.send(M::POST, "/public/v1/messages", &[], j(msg.clone()), 400)
        .await;
    p.send(
        M::POST,
        "/public/v1/messages",
        &[("Idempotency-Key", "")],
        j(msg.clone()),
        400,
    )
    .await;
    p.send(
        M::POST,
        "/public/v1/messages",
        &[("Idempotency-Key", &key())],
        j(json!({})),
        422,
    )
    .await;
    let big = vec![b' '; 3 << 20];
    p.send(
        M::POST,
        "/public/v1/messages",
        &[("Idempotency-Key", &key())],
        Some(big),
        413,
    )
    .await;
    // A retry while the first is still running: 409.
    let k2 = key();
    let slow = {
        let (c, url, k2, body) = (
            p.client.clone(),
            format!("{}/public/v1/messages", p.base),
            k2.clone(),
            j(msg.clone()).unwrap(),
        );
        tokio::spawn(async move {
            c.post(url)
                .bearer_auth(DEFAULT_API_KEY)
                .header("Idempotency-Key", k2)
                .header("X-Tminus-Test-Delay-Ms", "600")
                .header("Content-Type", "application/json")
                .body(body)
                .send()
                .await
                .map(|r| r.status().as_u16())
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    p.send(
        M::POST,
        "/public/v1/messages",
        &[("Idempotency-Key", &k2)],
        j(msg.clone()),
        409,
    )
    .await;
    assert_eq!(slow.await.unwrap().unwrap(), 201);

    p.send(M::GET, "/public/v1/messages?limit=1", &[], None, 200)
        .await;
    p.send(
        M::GET,
        "/public/v1/messages?cursor=not-a-cursor",
        &[],
        None,
        400,
    )
    .await;
    p.send(M::GET, "/public/v1/messages?limit=0", &[], None, 422)
        .await;
    p.send(M::GET, "/public/v1/messages/count", &[], None, 200)
        .await;
    // The deprecated alias, with its Deprecation and Sunset headers.
    p.send(M::GET, "/public/v1/messages/total", &[], None, 200)
        .await;
    // The event log the created messages emitted to (the polling fallback).
    p.send(M::GET, "/public/v1/events?limit=5", &[], None, 200)
        .await;
    p.send(M::GET, "/public/v1/events?cursor=bogus", &[], None, 400)
        .await;

    let people = json!({"contacts": [{"name": "Ada", "phone": "+15550100"}]});
    p.send(
        M::POST,
        "/public/v1/contacts/bulk-create",
        &[("Idempotency-Key", &key())],
        j(people),
        201,
    )
    .await;
    p.send(
        M::POST,
        "/public/v1/contacts/bulk-create",
        &[],
        j(json!({"contacts": []})),
        422,
    )
    .await;
    p.send(M::GET, "/public/v1/contacts?limit=5", &[], None, 200)
        .await;

    let (hs, body) = p
        .send(
            M::POST,
            "/public/v1/scenarios/welcome/run",
            &[],
            j(json!({"params": {"a": 1}})),
            202,
        )
        .await;
    let location = hs
        .iter()
        .find(|(n, _)| n == "location")
        .map(|(_, v)| v.clone())
        .expect("Location");
    assert!(location.ends_with(body["run_id"].as_str().unwrap()));
    p.send(M::GET, &location, &[], None, 200).await;
    p.send(M::GET, "/public/v1/scenario-runs/run_nope", &[], None, 404)
        .await;
    p.send(M::POST, "/public/v1/scenarios/bad%20id/run", &[], None, 422)
        .await;

    p.send(
        M::POST,
        "/public/v1/webhooks",
        &[],
        j(json!({"url": "http://127.0.0.1:9/hook"})),
        201,
    )
    .await;
    p.send(
        M::POST,
        "/public/v1/webhooks",
        &[],
        j(json!({"url": "https://example.com/"})),
        422,
    )
    .await;

    // Payments through a provider: tminus's dependency double plays it.
    p.send(
        M::POST,
        "/public/v1/payments",
        &[],
        j(json!({"amount": 100})),
        503,
    )
    .await;
    let provider = tminus::double::Double::start(&Default::default(), None)
        .await
        .unwrap();
    p.send(
        M::PUT,
        "/public/v1/payment-provider",
        &[],
        j(json!({"url": provider.url()})),
        200,
    )
    .await;
    p.send(
        M::PUT,
        "/public/v1/payment-provider",
        &[],
        j(json!({"url": "https://provider.example.com"})),
        422,
    )
    .await;
    p.send(
        M::POST,
        "/public/v1/payments",
        &[],
        j(json!({"amount": 100})),
        201,
    )
    .await;
    p.send(M::POST, "/public/v1/payments", &[], j(json!({})), 422)
        .await;
    provider.set_phase(tminus::double::Phase::Fail(500, Duration::ZERO));
    p.send(
        M::POST,
        "/public/v1/payments",
        &[],
        j(json!({"amount": 100})),
        502,
    )
    .await;
    provider.set_phase(tminus::double::Phase::Hang);
    p.send(
        M::POST,
        "/public/v1/payments",
        &[],
        j(json!({"amount": 100})),
        504,
    )
    .await;
    provider.shutdown().await;

    // The receiver: an unsigned delivery is refused (401 without a scheme).
    p.send(
        M::POST,
        "/integrator/webhooks",
        &[],
        j(json!({"type": "x"})),
        401,
    )
    .await;

    // Without a key: 401 with WWW-Authenticate, on a public route.
    let unauth = p
        .client
        .get(format!("{}/public/v1/messages/count", p.base))
        .send()
        .await
        .unwrap();
    let status = unauth.status().as_u16();
    let hs = tminus::http::header_pairs(unauth.headers());
    let bytes = unauth.bytes().await.unwrap();
    assert_eq!(status, 401);
    match p.contract.judge(
        "GET",
        "/public/v1/messages/count",
        &Seen {
            status,
            headers: &hs,
            body: &bytes,
        },
    ) {
        Verdict::Operation { violations, .. } => assert!(violations.is_empty(), "{violations:?}"),
        other => panic!("{other:?}"),
    }
    p.seen.insert(("countMessages".into(), 401));
    server.shutdown().await;

    // 429 + Retry-After from a reference limited to 2 requests a window.
    let limited = ReferenceServer::start(
        ReferenceConfig {
            rate_limit: RateLimitConfig {
                limit: 2,
                window: Duration::from_secs(60),
                ..RateLimitConfig::default()
            },
            ..ReferenceConfig::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    p.base = limited.base_url();
    p.send(M::GET, "/public/v1/contacts", &[], None, 200).await;
    p.send(M::GET, "/public/v1/contacts", &[], None, 200).await;
    p.send(M::GET, "/public/v1/contacts", &[], None, 429).await;
    limited.shutdown().await;

    assert!(p.problems.is_empty(), "{}", p.problems.join("\n"));
    let exercised: BTreeSet<&str> = p.seen.iter().map(|(o, _)| o.as_str()).collect();
    let missing: Vec<&str> = p
        .contract
        .operations()
        .iter()
        .map(|o| o.id.as_str())
        .filter(|id| !exercised.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "operations never exercised: {missing:?}"
    );
    for want in [400, 401, 404, 409, 413, 422, 429] {
        assert!(
            p.seen.iter().any(|(_, s)| *s == want),
            "no {want} was judged"
        );
    }
}
