//! OAuth2 client credentials (issue 25 item 3), with real parts: the
//! reference's token endpoint (`POST /oauth/token`, which issues opaque
//! `ref_at_...` tokens that expire) and the real binary. A suite whose
//! credential is a token passes; short-lived tokens are replaced before they
//! expire (checks and the burst); a 401 replaces the token once and never
//! loops; a wrong secret and an unreachable endpoint are errors (exit 3)
//! naming the endpoint; the secret and the tokens appear in no output, the
//! secret never reaches the target and the token never reaches anything but
//! the target.

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use base64::Engine;
use common::{repo, stderr, stdout, tminus, AppHandle, RefHandle, RefProcess};

const DEADLINE: Duration = Duration::from_secs(90);
/// Every token the reference issues starts so: none may be printed.
const TOKEN_PREFIX: &str = "ref_at_";

/// Runs `suite` with every report in `dir`; returns the exit code and all
/// that was printed or written (stdout, stderr, JUnit, JSON, HTML).
fn run(dir: &Path, suite: &Path, args: &[&str], envs: &[(&str, &str)]) -> (i32, String) {
    let reports = dir.join("reports");
    let _ = std::fs::remove_dir_all(&reports);
    let mut all = vec![
        "run",
        suite.to_str().unwrap(),
        "--report-dir",
        reports.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = tminus(dir, &all, envs, DEADLINE);
    let mut text = format!("{}\n{}\n", stdout(&out), stderr(&out));
    for name in ["junit.xml", "report.json", "report.html"] {
        let report = std::fs::read_to_string(reports.join(name))
            .unwrap_or_else(|e| panic!("no {name}: {e}\n{text}"));
        text.push_str(&report);
    }
    (out.status.code().unwrap_or(-1), text)
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The reference's token endpoint counters (`GET /__tminus/oauth`).
fn counters(base: &str) -> serde_json::Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        reqwest::Client::new()
            .get(format!("{base}/__tminus/oauth"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    })
}

fn count(c: &serde_json::Value, k: &str) -> u64 {
    c[k].as_u64().unwrap_or_else(|| panic!("no `{k}` in {c}"))
}

/// A suite whose `auth` is the client `id`/`${secret.OAUTH_SECRET}` at
/// `token_url`, with the given checks.
fn suite_text(token_url: &str, checks: &str) -> String {
    format!(
        "suite: oauth-test\ntarget:\n  auth:\n    oauth2:\n      token_url: {token_url}\n      client_id: ref_client\n      client_secret: ${{secret.OAUTH_SECRET}}\n      scope: contacts:read\nchecks:\n{checks}"
    )
}

#[test]
fn the_shipped_oauth_suite_passes_with_the_token_endpoint_on_another_origin() {
    let r = RefHandle::start(&[]);
    // Same server, another origin: `localhost` is not `127.0.0.1`.
    let port = r.url.rsplit(':').next().unwrap();
    let token_url = format!("http://localhost:{port}/oauth/token");
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = run(
        dir.path(),
        &repo().join("tests/suites/oauth.yaml"),
        &["--target", &r.url],
        &[("TMINUS_TOKEN_URL", &token_url)],
    );
    assert_eq!(code, 0, "{out}");
    let c = counters(&r.url);
    // One token per client, each used for all its requests.
    assert_eq!(count(&c, "issued"), 2, "{c}");
    // contacts 1, replay 3 (with its control: the same body under a new
    // key), key scope 2 (one per client); effects reads need none.
    assert_eq!(count(&c, "accepted"), 6, "{c}");
    assert_eq!(count(&c, "refused_clients"), 0, "{c}");
    // The secret went to the token endpoint only, as Basic only there.
    assert_eq!(count(&c, "secret_seen_elsewhere"), 0, "{c}");
    assert_eq!(count(&c, "basic_seen_elsewhere"), 0, "{c}");
    for leak in ["ref_client_secret", "ref_client_b_secret", TOKEN_PREFIX] {
        assert!(!out.contains(leak), "`{leak}` is in the output:\n{out}");
    }
}

/// With no target the embedded reference (over https with a CA made for
/// the run) is started; `token_url: /oauth/token` is joined to it.
#[test]
fn the_shipped_oauth_suite_passes_against_the_embedded_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = run(
        dir.path(),
        &repo().join("tests/suites/oauth.yaml"),
        &[],
        &[],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("3 passed"), "{out}");
    for leak in ["ref_client_secret", "ref_client_b_secret", TOKEN_PREFIX] {
        assert!(!out.contains(leak), "`{leak}` is in the output:\n{out}");
    }
}

#[test]
fn short_lived_tokens_are_replaced_before_they_expire() {
    // A process of its own, as a user starts it, with 1 s tokens.
    let r = RefProcess::start(&["--token-lifetime", "1s"]);
    let dir = tempfile::tempdir().unwrap();
    let step = "      - request: { path: /public/v1/contacts }\n        expect: { status: 200 }\n";
    let wait = "      - wait: 1500ms\n";
    let checks = format!(
        "  - id: long\n    steps:\n{step}{wait}{step}{wait}{step}  - id: after\n    steps:\n{step}"
    );
    let suite = write(
        dir.path(),
        "s.yaml",
        &suite_text(&format!("{}/oauth/token", r.url), &checks),
    );
    let (code, out) = run(
        dir.path(),
        &suite,
        &["--target", &r.url],
        &[("OAUTH_SECRET", "ref_client_secret")],
    );
    assert_eq!(code, 0, "{out}");
    let c = counters(&r.url);
    // The first token, then one per pause at least (each outlived its token).
    assert!(count(&c, "issued") >= 3, "{c}");
    // Replaced ahead of expiry: the API never saw an expired token.
    assert_eq!(count(&c, "expired"), 0, "{c}");
    assert_eq!(count(&c, "accepted"), 4, "{c}");
    assert!(!out.contains(TOKEN_PREFIX), "{out}");
}

/// A target of the test's making: records every Authorization it is sent;
/// `/echo` answers it back in the body, `/reject-first` refuses the first
/// token it ever saw (401 invalid_token), `/always-401` refuses every one.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, String)>>>);

impl Seen {
    fn app(&self) -> axum::Router {
        let seen = self.clone();
        axum::Router::new().fallback(move |uri: axum::http::Uri, headers: HeaderMap| {
            let seen = seen.clone();
            async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                let path = uri.path().to_owned();
                let first = {
                    let mut s = seen.0.lock().unwrap();
                    s.push((path.clone(), auth.clone()));
                    s.iter()
                        .find(|(p, _)| p == "/reject-first")
                        .map(|(_, a)| a.clone())
                };
                let refuse = match path.as_str() {
                    "/always-401" => true,
                    "/reject-first" => first.as_deref() == Some(auth.as_str()),
                    _ => false,
                };
                if refuse {
                    return (
                        StatusCode::UNAUTHORIZED,
                        [("www-authenticate", "Bearer error=\"invalid_token\"")],
                        "{}",
                    )
                        .into_response();
                }
                axum::Json(serde_json::json!({ "authorization": auth })).into_response()
            }
        })
    }

    fn on(&self, path: &str) -> Vec<String> {
        let s = self.0.lock().unwrap();
        s.iter()
            .filter(|(p, _)| p == path)
            .map(|(_, a)| a.clone())
            .collect()
    }

    fn all(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, a)| a.clone())
            .collect()
    }
}

#[test]
fn a_401_replaces_the_token_once_and_never_loops() {
    let issuer = RefHandle::start(&[]);
    let seen = Seen::default();
    let target = AppHandle::start(seen.app());
    let dir = tempfile::tempdir().unwrap();
    // The pauses make the held token older than a second: a token the
    // endpoint has just issued is not replaced after a 401.
    let checks = "  - id: recovers\n    steps:\n      - wait: 1200ms\n      - request: { path: /reject-first }\n        expect: { status: 200 }\n  - id: refused\n    steps:\n      - wait: 1200ms\n      - request: { path: /always-401 }\n        expect: { status: 200 }\n";
    let suite = write(
        dir.path(),
        "s.yaml",
        &suite_text(&format!("{}/oauth/token", issuer.url), checks),
    );
    let (code, out) = run(
        dir.path(),
        &suite,
        &["--target", &target.url],
        &[("OAUTH_SECRET", "ref_client_secret")],
    );
    // `recovers` passes, `refused` fails on its 401: exit 1.
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/report.json")).unwrap(),
    )
    .unwrap();
    let verdicts: Vec<&str> = v["suites"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["pass", "fail"], "{out}");
    let first = seen.on("/reject-first");
    assert_eq!(first.len(), 2, "{first:?}");
    assert_ne!(first[0], first[1], "the resend carried the refused token");
    // One resend with a new token, then the 401 is the answer.
    let always = seen.on("/always-401");
    assert_eq!(always.len(), 2, "{always:?}");
    assert_ne!(always[0], always[1]);
    let c = counters(&issuer.url);
    assert_eq!(count(&c, "issued"), 3, "{c}");
    // Only tokens reached the target, never the secret.
    for a in seen.all() {
        assert!(a.starts_with("Bearer ref_at_"), "the target was sent `{a}`");
    }
    assert!(!out.contains(TOKEN_PREFIX), "{out}");
}

#[test]
fn a_token_the_target_echoes_is_in_no_report() {
    let issuer = RefHandle::start(&[]);
    let seen = Seen::default();
    let target = AppHandle::start(seen.app());
    let dir = tempfile::tempdir().unwrap();
    // Expecting 201 where 200 comes: the failure's evidence quotes the
    // body, which holds the token.
    let checks = "  - id: echo\n    steps:\n      - request: { path: /echo }\n        expect: { status: 201 }\n";
    let suite = write(
        dir.path(),
        "s.yaml",
        &suite_text(&format!("{}/oauth/token", issuer.url), checks),
    );
    let (code, out) = run(
        dir.path(),
        &suite,
        &["--target", &target.url],
        &[("OAUTH_SECRET", "ref_client_secret")],
    );
    assert_eq!(code, 1, "{out}");
    let sent = seen.on("/echo");
    assert_eq!(sent.len(), 1, "{sent:?}");
    let token = sent[0].strip_prefix("Bearer ").unwrap();
    assert!(token.starts_with(TOKEN_PREFIX), "{token}");
    // The evidence shows the echoed body, the token masked.
    assert!(
        out.contains(r#"{\"authorization\":\"Bearer [REDACTED]\"}"#),
        "the echoed body is not shown masked:\n{out}"
    );
    assert!(
        !out.contains(TOKEN_PREFIX),
        "a token is in the output:\n{out}"
    );
    assert!(!out.contains("ref_client_secret"), "{out}");
}

#[test]
fn a_wrong_secret_is_an_error_naming_the_endpoint_and_is_in_no_output() {
    let r = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let token_url = format!("{}/oauth/token", r.url);
    let checks = "  - id: a\n    steps:\n      - request: { path: /public/v1/contacts }\n  - id: b\n    steps:\n      - request: { path: /public/v1/contacts }\n";
    let suite = write(dir.path(), "s.yaml", &suite_text(&token_url, checks));
    let secret = "wrong-secret-4711xyz";
    let (code, out) = run(
        dir.path(),
        &suite,
        &["--target", &r.url],
        &[("OAUTH_SECRET", secret)],
    );
    assert_eq!(code, 3, "{out}");
    let line = format!(
        "oauth2 token endpoint {token_url}: answered 401: invalid_client (client authentication failed)"
    );
    assert!(out.contains(&line), "`{line}` is not said:\n{out}");
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("ref_client:{secret}"));
    for leak in [secret, basic.as_str(), "4711xyz"] {
        assert!(!out.contains(leak), "`{leak}` is in the output:\n{out}");
    }
    let c = counters(&r.url);
    assert_eq!(count(&c, "refused_clients"), 1, "asked once: {c}");
    assert_eq!(count(&c, "issued"), 0, "{c}");
    // Nothing was sent to the API without a token.
    assert_eq!(count(&c, "accepted"), 0, "{c}");
}

#[test]
fn an_unreachable_token_endpoint_is_an_error_naming_its_address() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let token_url = format!("http://127.0.0.1:{port}/oauth/token");
    let checks = "  - id: a\n    steps:\n      - request: { path: /public/v1/contacts }\n";
    let suite = write(dir.path(), "s.yaml", &suite_text(&token_url, checks));
    let (code, out) = run(
        dir.path(),
        &suite,
        &["--target", &r.url],
        &[("OAUTH_SECRET", "ref_client_secret")],
    );
    assert_eq!(code, 3, "{out}");
    let line = format!("oauth2 token endpoint {token_url}: cannot connect");
    assert!(out.contains(&line), "`{line}` is not said:\n{out}");
}

#[test]
fn the_burst_carries_a_token_kept_fresh_while_it_runs() {
    let r = RefProcess::start(&["--token-lifetime", "2s"]);
    let dir = tempfile::tempdir().unwrap();
    let text = "suite: oauth-burst\ntarget:\n  auth:\n    oauth2:\n      token_url: /oauth/token\n      client_id: ref_client\n      client_secret: ${secret.OAUTH_SECRET}\nload:\n  id: burst\n  users: 2\n  hatch_rate: 10\n  hold: 5s\n  max_rate: 20/s\n  requests:\n    - name: count\n      request: { path: /public/v1/messages/count }\n  thresholds:\n    - error_rate < 0.1%\n";
    let suite = write(dir.path(), "burst.yaml", text);
    let (code, out) = run(
        dir.path(),
        &suite,
        &["--target", &r.url],
        &[("OAUTH_SECRET", "ref_client_secret")],
    );
    assert_eq!(code, 0, "{out}");
    let c = counters(&r.url);
    // The first token and at least two replacements in 5 s of 2 s tokens.
    assert!(count(&c, "issued") >= 3, "{c}");
    assert_eq!(count(&c, "expired"), 0, "{c}");
    assert!(count(&c, "accepted") >= 50, "{c}");
    assert!(!out.contains(TOKEN_PREFIX), "{out}");
}

/// The reference's token endpoint speaks RFC 6749 and its API tells an
/// expired token apart (RFC 6750 §3.1).
#[test]
fn the_reference_token_endpoint_follows_rfc_6749_and_expires_its_tokens() {
    let r = RefHandle::start_with(tminus::reference::ReferenceConfig {
        token_lifetime: Duration::from_secs(1),
        ..Default::default()
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let token_url = format!("{}/oauth/token", r.url);
    let ask = |basic: Option<(&str, &str)>, form: &str| {
        let mut req = http
            .post(&token_url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.to_owned());
        if let Some((id, secret)) = basic {
            req = req.basic_auth(id, Some(secret));
        }
        rt.block_on(async {
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            let www = resp
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap().to_owned());
            let cache = resp
                .headers()
                .get("cache-control")
                .map(|v| v.to_str().unwrap().to_owned());
            let body: serde_json::Value = resp.json().await.unwrap();
            (status, www, cache, body)
        })
    };
    let grant = "grant_type=client_credentials&scope=contacts%3Aread";
    let (status, _, cache, body) = ask(Some(("ref_client", "ref_client_secret")), grant);
    assert_eq!(status, 200, "{body}");
    assert_eq!(cache.as_deref(), Some("no-store"));
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 1);
    assert_eq!(body["scope"], "contacts:read");
    let token = body["access_token"].as_str().unwrap().to_owned();
    assert!(token.starts_with(TOKEN_PREFIX), "{token}");
    // client_secret_post is accepted too; both at once is not.
    let post = format!("{grant}&client_id=ref_client_b&client_secret=ref_client_b_secret");
    assert_eq!(ask(None, &post).0, 200);
    let (status, _, _, body) = ask(Some(("ref_client", "ref_client_secret")), &post);
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request"))
    );
    // A wrong secret: 401 invalid_client, with the Basic challenge (§5.2).
    let (status, www, _, body) = ask(Some(("ref_client", "nope")), grant);
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("invalid_client"))
    );
    assert!(www.is_some_and(|w| w.starts_with("Basic")));
    let (status, _, _, body) = ask(
        Some(("ref_client", "ref_client_secret")),
        "grant_type=password",
    );
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("unsupported_grant_type"))
    );

    let api = |token: &str| {
        rt.block_on(async {
            let resp = http
                .get(format!("{}/public/v1/contacts", r.url))
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            let www = resp
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap().to_owned());
            (resp.status().as_u16(), www)
        })
    };
    assert_eq!(api(&token).0, 200);
    std::thread::sleep(Duration::from_millis(1100));
    let (status, www) = api(&token);
    assert_eq!(status, 401);
    assert!(
        www.as_deref()
            .is_some_and(|w| w.contains("error=\"invalid_token\"")),
        "{www:?}"
    );
    // A token it never issued is an unknown key, not an expired token.
    let (status, www) = api("ref_at_never_issued");
    assert_eq!((status, www.as_deref()), (401, Some("Bearer")));
    let c = counters(&r.url);
    assert_eq!(count(&c, "issued"), 2, "{c}");
    assert_eq!(count(&c, "expired"), 1, "{c}");
    assert_eq!(count(&c, "refused_clients"), 1, "{c}");
}
