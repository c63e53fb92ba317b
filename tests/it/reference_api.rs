//! HTTP-level tests of the reference integration: the healthy behaviour, and one test
//! per defect proving it changes exactly the behaviour it names.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use tminus::reference::{
    Defect, DefectFamily, ReferenceConfig, ReferenceServer, DEFAULT_API_KEY, SECOND_API_KEY,
};

async fn start(defects: &[Defect]) -> ReferenceServer {
    let cfg = ReferenceConfig {
        defects: defects.to_vec(),
        ..ReferenceConfig::default()
    };
    ReferenceServer::start(cfg, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind reference server")
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

fn is_trace_id(v: &str) -> bool {
    v.len() == 32
        && v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && v.bytes().any(|b| b != b'0')
}

fn header<'a>(resp: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    resp.headers().get(name).map(|v| v.to_str().unwrap())
}

async fn create_message(c: &Client, base: &str, key: &str, text: &str) -> reqwest::Response {
    c.post(format!("{base}/public/v1/messages"))
        .bearer_auth(key)
        // Required on this route by the idempotency layer.
        .header("Idempotency-Key", uuid::Uuid::new_v4().to_string())
        .json(&json!({"contact_id": 1, "text": text}))
        .send()
        .await
        .unwrap()
}

async fn count(c: &Client, base: &str, key: &str) -> u64 {
    let v: Value = c
        .get(format!("{base}/public/v1/messages/count"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["count"].as_u64().unwrap()
}

/// Walks `/public/v1/messages` with `limit`, returning every id seen (bounded).
async fn walk_messages(c: &Client, base: &str, limit: usize) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let mut req = c
            .get(format!("{base}/public/v1/messages"))
            .bearer_auth(DEFAULT_API_KEY)
            .query(&[("limit", limit.to_string())]);
        if let Some(cur) = &cursor {
            req = req.query(&[("cursor", cur)]);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let page: Value = resp.json().await.unwrap();
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= limit);
        ids.extend(data.iter().map(|m| m["id"].as_str().unwrap().to_owned()));
        match page["meta"]["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return ids,
        }
    }
    panic!("pagination did not terminate");
}

async fn create_n(c: &Client, base: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let resp = create_message(c, base, DEFAULT_API_KEY, &format!("m{i}")).await;
        assert_eq!(resp.status(), StatusCode::CREATED);
        let v: Value = resp.json().await.unwrap();
        ids.push(v["id"].as_str().unwrap().to_owned());
    }
    ids
}

#[tokio::test]
async fn bad_key_is_401_with_code_and_trace_id() {
    let srv = start(&[]).await;
    let c = client();
    for req in [
        c.get(format!("{}/public/v1/messages/count", srv.base_url()))
            .bearer_auth("nope"),
        c.get(format!("{}/public/v1/messages/count", srv.base_url())),
    ] {
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert!(is_trace_id(header(&resp, "trace-id").unwrap()));
        assert!(header(&resp, "x-request-id").is_some());
        assert!(header(&resp, "date").is_some());
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "INVALID_API_KEY");
    }
    srv.shutdown().await;
}

#[tokio::test]
async fn create_message_counts_and_records_effect() {
    let srv = start(&[]).await;
    let (c, base) = (client(), srv.base_url());
    let resp = create_message(&c, &base, DEFAULT_API_KEY, "hello").await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert!(header(&resp, "date").is_some());
    let m: Value = resp.json().await.unwrap();
    assert!(m["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(m["contact_id"], 1);
    assert_eq!(m["text"], "hello");
    let created_at = m["created_at"].as_str().unwrap();
    assert!(
        created_at.ends_with('Z') && created_at.contains('T'),
        "{created_at}"
    );

    assert_eq!(count(&c, &base, DEFAULT_API_KEY).await, 1);
    let effects: Value = c
        .get(format!("{base}/__tminus/effects"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // Families add counters of their own; the foundation ones must be exact.
    for (k, want) in [
        ("messages.create", 1),
        ("contacts.bulk_create", 0),
        ("scenarios.run", 0),
    ] {
        assert_eq!(effects[k], json!(want), "{k} in {effects}");
    }
    let one: Value = c
        .get(format!("{base}/__tminus/effects/messages.create"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one, json!({"name": "messages.create", "count": 1}));
    srv.shutdown().await;
}

#[tokio::test]
async fn tenants_are_isolated() {
    let srv = start(&[]).await;
    let (c, base) = (client(), srv.base_url());
    create_message(&c, &base, DEFAULT_API_KEY, "for A").await;
    assert_eq!(count(&c, &base, DEFAULT_API_KEY).await, 1);
    assert_eq!(count(&c, &base, SECOND_API_KEY).await, 0);
    let list: Value = c
        .get(format!("{base}/public/v1/messages"))
        .bearer_auth(SECOND_API_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["data"], json!([]));
    srv.shutdown().await;
}

#[tokio::test]
async fn validation_errors_are_422_naming_the_field() {
    let srv = start(&[]).await;
    let (c, base) = (client(), srv.base_url());
    let cases = [
        ("/public/v1/messages", "{not json".to_owned(), "body"),
        (
            "/public/v1/messages",
            json!({"contact_id": 1}).to_string(),
            "text",
        ),
        (
            "/public/v1/messages",
            json!({"contact_id": 1, "text": ""}).to_string(),
            "text",
        ),
        (
            "/public/v1/messages",
            json!({"contact_id": "x", "text": "a"}).to_string(),
            "contact_id",
        ),
        (
            "/public/v1/contacts/bulk-create",
            json!({"contacts": []}).to_string(),
            "contacts",
        ),
        (
            "/public/v1/contacts/bulk-create",
            json!({"contacts": [{"name": "a", "phone": "+1"}, {"name": "b"}]}).to_string(),
            "contacts[1].phone",
        ),
    ];
    for (path, body, field) in cases {
        let resp = c
            .post(format!("{base}{path}"))
            .bearer_auth(DEFAULT_API_KEY)
            .header("Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(header(&resp, "trace-id").is_some());
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], "VALIDATION_ERROR");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.starts_with(field), "{msg:?} should name {field}");
    }
    // Nothing was executed by failed requests.
    let effects: Value = c
        .get(format!("{base}/__tminus/effects"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(effects["messages.create"], 0);
    assert_eq!(effects["contacts.bulk_create"], 0);
    srv.shutdown().await;
}

#[tokio::test]
async fn pagination_walks_everything_once() {
    let srv = start(&[]).await;
    let (c, base) = (client(), srv.base_url());
    let created = create_n(&c, &base, 45).await;
    let seen = walk_messages(&c, &base, 10).await;
    assert_eq!(
        seen, created,
        "walk must return every message once, in order"
    );

    // Invalid cursors and limits are rejected.
    let resp = c
        .get(format!("{base}/public/v1/messages?cursor=garbage"))
        .bearer_auth(DEFAULT_API_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        resp.json::<Value>().await.unwrap()["error"]["code"],
        "INVALID_CURSOR"
    );
    let resp = c
        .get(format!("{base}/public/v1/messages?limit=101"))
        .bearer_auth(DEFAULT_API_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    srv.shutdown().await;
}

#[tokio::test]
async fn pagination_is_stable_under_concurrent_inserts() {
    let srv = start(&[]).await;
    let (c, base) = (client(), srv.base_url());
    let created = create_n(&c, &base, 25).await;
    let first: Value = c
        .get(format!("{base}/public/v1/messages?limit=10"))
        .bearer_auth(DEFAULT_API_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let cursor = first["meta"]["next_cursor"].as_str().unwrap().to_owned();
    // Inserts between pages land after the walk's position, never shifting it.
    create_n(&c, &base, 3).await;
    let second: Value = c
        .get(format!("{base}/public/v1/messages"))
        .query(&[("limit", "10"), ("cursor", &cursor)])
        .bearer_auth(DEFAULT_API_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = second["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        created[10..20]
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    srv.shutdown().await;
}

#[tokio::test]
async fn contacts_bulk_create_and_list() {
    let srv = start(&[]).await;
    let (c, base) = (client(), srv.base_url());
    let contacts: Vec<Value> = (0..15)
        .map(|i| json!({"name": format!("c{i}"), "phone": format!("+4470000000{i:02}")}))
        .collect();
    let resp = c
        .post(format!("{base}/public/v1/contacts/bulk-create"))
        .bearer_auth(DEFAULT_API_KEY)
        .json(&json!({ "contacts": contacts }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["created"], 15);
    let ids: Vec<u64> = v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_u64().unwrap())
        .collect();

    let mut seen = Vec::new();
    let mut url = format!("{base}/public/v1/contacts?limit=7");
    for _ in 0..10 {
        let page: Value = c
            .get(&url)
            .bearer_auth(DEFAULT_API_KEY)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        seen.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_u64().unwrap()),
        );
        match page["meta"]["next_cursor"].as_str() {
            Some(cur) => url = format!("{base}/public/v1/contacts?limit=7&cursor={cur}"),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    srv.shutdown().await;
}

#[tokio::test]
async fn scenario_run_202_location_then_status() {
    let srv = start(&[]).await;
    let (c, base) = (client(), srv.base_url());
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let resp = c
        .post(format!("{base}/public/v1/scenarios/onboarding/run"))
        .bearer_auth(DEFAULT_API_KEY)
        .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
        .json(&json!({"params": {"x": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert_eq!(header(&resp, "trace-id"), Some(trace));
    let location = header(&resp, "location").unwrap().to_owned();
    let v: Value = resp.json().await.unwrap();
    let run_id = v["run_id"].as_str().unwrap();
    assert!(run_id.starts_with("run_"));
    assert_eq!(v["status"], "queued");
    assert_eq!(location, format!("/public/v1/scenario-runs/{run_id}"));

    let resp = c
        .get(format!("{base}{location}"))
        .bearer_auth(DEFAULT_API_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let s: Value = resp.json().await.unwrap();
    assert_eq!(s["run_id"], run_id);
    assert_eq!(s["scenario_id"], "onboarding");
    assert_eq!(s["status"], "completed");
    assert_eq!(s["trace_id"], trace);

    // Another tenant cannot see the run; an unknown run is 404 too.
    for (key, path) in [
        (SECOND_API_KEY, location.clone()),
        (DEFAULT_API_KEY, "/public/v1/scenario-runs/run_nope".into()),
    ] {
        let resp = c
            .get(format!("{base}{path}"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            resp.json::<Value>().await.unwrap()["error"]["code"],
            "NOT_FOUND"
        );
    }
    // A run without a body is fine.
    let resp = c
        .post(format!("{base}/public/v1/scenarios/s2/run"))
        .bearer_auth(DEFAULT_API_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    srv.shutdown().await;
}

#[tokio::test]
async fn correlation_headers_and_fallbacks() {
    let srv = start(&[]).await;
    let (c, base) = (client(), srv.base_url());

    // 404 and 405 are JSON and carry correlation ids.
    let resp = c.get(format!("{base}/nowhere")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert!(is_trace_id(header(&resp, "trace-id").unwrap()));
    assert_eq!(
        resp.json::<Value>().await.unwrap()["error"]["code"],
        "NOT_FOUND"
    );
    let resp = c
        .delete(format!("{base}/public/v1/messages"))
        .bearer_auth(DEFAULT_API_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(header(&resp, "allow").unwrap().contains("POST"));
    assert!(is_trace_id(header(&resp, "trace-id").unwrap()));
    assert_eq!(
        resp.json::<Value>().await.unwrap()["error"]["code"],
        "METHOD_NOT_ALLOWED"
    );

    // A valid traceparent and a safe request id are continued / echoed.
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let resp = c
        .get(format!("{base}/healthz"))
        .header("traceparent", format!("00-{trace}-b7ad6b7169203331-01"))
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "trace-id"), Some(trace));
    assert_eq!(header(&resp, "x-request-id"), Some("abc-123"));
    assert_eq!(resp.json::<Value>().await.unwrap(), json!({"status": "ok"}));

    // Invalid inputs are replaced, never reflected; fresh trace ids are unique.
    let mut traces = HashSet::new();
    for (tp, rid) in [
        (
            format!("00-{}-b7ad6b7169203331-01", trace.to_uppercase()),
            "a b".to_owned(),
        ),
        (format!("ff-{trace}-b7ad6b7169203331-01"), "x".repeat(200)),
        (
            format!("00-{}-b7ad6b7169203331-01", "0".repeat(32)),
            "<script>".to_owned(),
        ),
    ] {
        let resp = c
            .get(format!("{base}/healthz"))
            .header("traceparent", tp)
            .header("x-request-id", rid.clone())
            .send()
            .await
            .unwrap();
        let t = header(&resp, "trace-id").unwrap();
        assert!(is_trace_id(t) && t != trace);
        traces.insert(t.to_owned());
        let r = header(&resp, "x-request-id").unwrap();
        assert_ne!(r, rid);
        assert!(uuid::Uuid::parse_str(r).is_ok(), "{r}");
    }
    assert_eq!(traces.len(), 3);
    srv.shutdown().await;
}

#[tokio::test]
async fn defect_accept_any_key() {
    let srv = start(&[Defect::AcceptAnyKey]).await;
    let (c, base) = (client(), srv.base_url());
    let resp = create_message(&c, &base, "whatever", "hi").await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    // The bogus token is its own tenant; real tenants are untouched.
    assert_eq!(count(&c, &base, "whatever").await, 1);
    assert_eq!(count(&c, &base, DEFAULT_API_KEY).await, 0);
    // A missing header is still rejected: only "any non-empty Bearer token" passes.
    let resp = c
        .get(format!("{base}/public/v1/messages/count"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    srv.shutdown().await;
}

#[tokio::test]
async fn defect_no_trace_id() {
    let srv = start(&[Defect::NoTraceId]).await;
    let (c, base) = (client(), srv.base_url());
    for resp in [
        c.get(format!("{base}/public/v1/messages/count"))
            .bearer_auth("bad")
            .send()
            .await
            .unwrap(),
        c.get(format!("{base}/nowhere")).send().await.unwrap(),
    ] {
        assert!(resp.status().as_u16() >= 400);
        assert!(header(&resp, "trace-id").is_none());
        assert!(header(&resp, "x-request-id").is_none());
    }
    // Successful responses keep them.
    let resp = create_message(&c, &base, DEFAULT_API_KEY, "ok").await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert!(is_trace_id(header(&resp, "trace-id").unwrap()));
    assert!(header(&resp, "x-request-id").is_some());
    srv.shutdown().await;
}

#[tokio::test]
async fn defect_broken_pagination() {
    let srv = start(&[Defect::BrokenPagination]).await;
    let (c, base) = (client(), srv.base_url());
    let created = create_n(&c, &base, 45).await;
    let seen = walk_messages(&c, &base, 10).await;
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates, only gaps");
    // Four page boundaries at limit 10, each drops one message.
    assert_eq!(seen.len(), 41);
    let missing: Vec<&String> = created.iter().filter(|id| !unique.contains(id)).collect();
    assert_eq!(
        missing,
        [&created[10], &created[21], &created[32], &created[43]]
    );
    // Still a full count: only the walk is broken.
    assert_eq!(count(&c, &base, DEFAULT_API_KEY).await, 45);
    srv.shutdown().await;
}

#[tokio::test]
async fn latency_is_applied_to_public_routes_only() {
    let cfg = ReferenceConfig {
        latency: Duration::from_millis(150),
        ..ReferenceConfig::default()
    };
    let srv = ReferenceServer::start(cfg, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let (c, base) = (client(), srv.base_url());
    let t = std::time::Instant::now();
    let resp = c
        .get(format!("{base}/public/v1/messages/count"))
        .bearer_auth(DEFAULT_API_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(t.elapsed() >= Duration::from_millis(150));
    let t = std::time::Instant::now();
    let resp = c.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(t.elapsed() < Duration::from_millis(150));
    srv.shutdown().await;
}

#[tokio::test]
async fn defect_names_parse_and_list() {
    for d in Defect::all() {
        assert_eq!(d.name().parse::<Defect>().unwrap(), *d);
    }
    let names: Vec<&str> = Defect::all().iter().map(|d| d.name()).collect();
    // The foundation's defects come first; every family's block follows.
    assert_eq!(names[..2], ["accept-any-key", "broken-pagination"]);
    assert_eq!(Defect::NoTraceId.family(), DefectFamily::Trace);
    let err = "nope".parse::<Defect>().unwrap_err();
    assert!(err.contains("accept-any-key"), "{err}");
}

#[tokio::test]
async fn shutdown_is_bounded_with_open_connections() {
    let srv = start(&[]).await;
    let c = client();
    // Leave a keep-alive connection open in the client pool.
    let resp = c
        .get(format!("{}/healthz", srv.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let base = srv.base_url();
    let t = std::time::Instant::now();
    srv.shutdown().await;
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // The port no longer serves.
    let fresh = client();
    assert!(fresh.get(format!("{base}/healthz")).send().await.is_err());
    drop(c);
}
