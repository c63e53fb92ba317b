//! `auth.sandbox_isolated` (issue 45, OBS-004) end to end: the shipped
//! suite with the embedded production twin, targets that prove nothing
//! (no pass without evidence), production's answers read as the kind says
//! (2xx fails, 401/403 passes, 5xx and timeouts are inconclusive, an
//! unreachable production is exit 3 naming its address), the read-only
//! rule, a counter that moves when writes are allowed, secrets never in
//! any output, and Debian's nginx with `auth_basic` standing for both
//! environments.

use crate::common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::Router;

use common::{stderr, stdout, tminus, AppHandle, RefHandle};
use tminus::reference::{Defect, ReferenceConfig};

/// Writes `suite` to `dir` and runs it against `target` with `envs`;
/// returns the JSON report's one check and the process output.
fn run(
    dir: &Path,
    suite: &str,
    target: &str,
    envs: &[(&str, &str)],
) -> (serde_json::Value, Output) {
    let path = dir.join("suite.yaml");
    std::fs::write(&path, suite).unwrap();
    let json = dir.join("report.json");
    let out = tminus(
        dir,
        &[
            "run",
            path.to_str().unwrap(),
            "--target",
            target,
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        envs,
        Duration::from_secs(60),
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|_| panic!("no report: {}{}", stdout(&out), stderr(&out)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    (v["suites"][0]["checks"][0].clone(), out)
}

/// A suite of one `auth.sandbox_isolated` check; `extra` is more of its
/// fields (indented by 4).
fn suite(probes: &str, production: &str, extra: &str) -> String {
    format!(
        "suite: s\ntarget:\n  headers: {{ Authorization: \"Bearer ${{secret.SB_KEY:-sandbox-key}}\" }}\n  timeout: 2s\nchecks:\n  - id: iso\n    kind: auth.sandbox_isolated\n    probes: {probes}\n    production:\n      base_url: ${{env.PROD_URL}}\n{production}{extra}"
    )
}

/// How a test server answers a bearer token.
type Answer = fn(&str) -> StatusCode;

/// A server that answers 401 without `Authorization`, else `bearer(token)`.
fn server(bearer: Answer) -> AppHandle {
    AppHandle::start(Router::new().fallback(move |h: HeaderMap| async move {
        match h.get("authorization").and_then(|v| v.to_str().ok()) {
            None => StatusCode::UNAUTHORIZED,
            Some(v) => bearer(v.trim_start_matches("Bearer ")),
        }
    }))
}

fn sandbox() -> AppHandle {
    server(|t| {
        if t == "sandbox-key" {
            StatusCode::OK
        } else {
            StatusCode::UNAUTHORIZED
        }
    })
}

fn assertion<'a>(check: &'a serde_json::Value, property: &str) -> &'a serde_json::Value {
    check["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["property"] == property)
        .unwrap_or_else(|| panic!("no {property}: {check}"))
}

#[test]
fn the_shipped_suite_passes_with_the_embedded_production_twin() {
    let dir = tempfile::tempdir().unwrap();
    let out = tminus(
        dir.path(),
        &[
            "run",
            common::repo().join("suites/sandbox.yaml").to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("production twin"), "{}", stderr(&out));
}

/// Against a target, production must be named: the twin is the embedded
/// reference's only.
#[test]
fn a_target_without_a_production_url_is_an_error_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let sb = RefHandle::start(&[]);
    let (check, out) = run(
        dir.path(),
        &std::fs::read_to_string(common::repo().join("suites/sandbox.yaml")).unwrap(),
        &sb.url,
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains("production.base_url is empty"),
        "{check}"
    );
}

/// No pass without evidence: targets that refuse everything, serve
/// everything, or serve nothing, as both environments, pass nothing.
#[test]
fn targets_that_prove_nothing_pass_nothing() {
    for status in [
        StatusCode::NOT_FOUND,
        StatusCode::OK,
        StatusCode::UNAUTHORIZED,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let useless = || AppHandle::start(Router::new().fallback(move || async move { status }));
        let (sb, prod) = (useless(), useless());
        let (check, out) = run(
            dir.path(),
            &suite(
                "[{ path: /x }]",
                "      headers: { Authorization: \"Bearer ${secret.PROD_KEY:-prod-key}\" }\n",
                "",
            ),
            &sb.url,
            &[("PROD_URL", prod.url.as_str())],
        );
        assert_ne!(out.status.code(), Some(0), "{status}: {check}");
        assert_ne!(check["verdict"], "pass", "{status}: {check}");
        for a in check["assertions"].as_array().unwrap() {
            assert_ne!(a["verdict"], "pass", "{status}: {a}");
        }
    }
}

#[test]
fn production_answers_are_judged_as_the_kind_says() {
    let sb = sandbox();
    let cases: [(Answer, i32, &str); 4] = [
        (|_| StatusCode::UNAUTHORIZED, 0, "pass"),
        (|_| StatusCode::FORBIDDEN, 0, "pass"),
        (|_| StatusCode::OK, 1, "fail"),
        (|_| StatusCode::SERVICE_UNAVAILABLE, 4, "error"),
    ];
    for (answer, code, verdict) in cases {
        let prod = server(answer);
        let dir = tempfile::tempdir().unwrap();
        let (check, out) = run(
            dir.path(),
            &suite("[{ path: /x }]", "", ""),
            &sb.url,
            &[("PROD_URL", prod.url.as_str())],
        );
        assert_eq!(out.status.code(), Some(code), "{check}");
        let a = assertion(&check, "sandbox_refused_by_production");
        assert_eq!(a["verdict"], verdict, "{a}");
        if verdict == "fail" {
            assert!(
                a["message"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("GET {}/x got 200", prod.url)),
                "{a}"
            );
        }
        if verdict == "error" {
            assert_eq!(a["inconclusive"], true, "{a}");
        }
        // Without a counter or a production credential, said so.
        assert_eq!(assertion(&check, "nothing_created")["verdict"], "skipped");
        assert!(assertion(&check, "nothing_created")["message"]
            .as_str()
            .unwrap()
            .starts_with("not observed"));
        assert_eq!(
            assertion(&check, "production_refused_by_sandbox")["verdict"],
            "skipped"
        );
    }
}

#[test]
fn a_production_that_does_not_answer_is_inconclusive() {
    let sb = sandbox();
    let prod = AppHandle::start(Router::new().fallback(|h: HeaderMap| async move {
        if h.contains_key("authorization") {
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        StatusCode::UNAUTHORIZED
    }));
    let dir = tempfile::tempdir().unwrap();
    let (check, out) = run(
        dir.path(),
        &suite("[{ path: /x, timeout: 300ms }]", "", ""),
        &sb.url,
        &[("PROD_URL", prod.url.as_str())],
    );
    assert_eq!(out.status.code(), Some(4), "{check}");
    assert_eq!(check["inconclusive"], true, "{check}");
}

#[test]
fn an_unreachable_production_is_exit_3_naming_its_address() {
    let sb = sandbox();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let (check, out) = run(
        dir.path(),
        &suite("[{ path: /x }]", "", ""),
        &sb.url,
        &[("PROD_URL", url.as_str())],
    );
    assert_eq!(out.status.code(), Some(3), "{check}");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{check}"
    );
}

/// The read-only rule is the suite's first error: nothing is sent.
#[test]
fn a_mutating_probe_needs_allow_production_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (sb, prod) = (sandbox(), sandbox());
    let path = dir.path().join("suite.yaml");
    std::fs::write(&path, suite("[{ method: DELETE, path: /x }]", "", "")).unwrap();
    let out = tminus(
        dir.path(),
        &["run", path.to_str().unwrap(), "--target", &sb.url],
        &[("PROD_URL", prod.url.as_str())],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("suite.yaml:8:"), "{err}");
    assert!(
        err.contains("a DELETE probe could write to production")
            && err.contains("allow_production_writes: true"),
        "{err}"
    );
    assert!(err.contains("nothing was sent"), "{err}");
}

/// With writes allowed, a production that takes the sandbox key creates a
/// message: its counter moves and `nothing_created` fails. No credential
/// appears in any output.
#[test]
fn with_writes_allowed_a_moved_counter_fails_and_no_secret_is_printed() {
    let probe = "[{ method: POST, path: /public/v1/messages, headers: { Idempotency-Key: \"${uuid}\" }, json: { contact_id: 1, text: sandbox } }]";
    let production = "      headers: { Authorization: \"Bearer ${secret.PROD_KEY}\" }\n      effects: { request: { path: /__tminus/effects/messages.create }, value: $.count }\n";
    let text = suite(probe, production, "    allow_production_writes: true\n");
    for (defects, code) in [(vec![], 0), (vec![Defect::SandboxKeyWorksInProduction], 1)] {
        let sb = RefHandle::start(&[]);
        let prod = RefHandle::start_with(ReferenceConfig {
            defects: defects.clone(),
            ..ReferenceConfig::production()
        });
        let dir = tempfile::tempdir().unwrap();
        let (check, out) = run(
            dir.path(),
            &text,
            &sb.url,
            &[
                ("PROD_URL", prod.url.as_str()),
                ("SB_KEY", "ref_test_key_a"),
                ("PROD_KEY", "ref_prod_key"),
            ],
        );
        assert_eq!(out.status.code(), Some(code), "{defects:?}: {check}");
        if code == 1 {
            let a = assertion(&check, "nothing_created");
            assert_eq!(a["verdict"], "fail", "{a}");
            assert!(a["message"].as_str().unwrap().contains("moved by 1"), "{a}");
            assert_eq!(
                assertion(&check, "sandbox_refused_by_production")["verdict"],
                "fail"
            );
        }
        assert_eq!(
            check["properties"]["production_probes"],
            "writes allowed (allow_production_writes: true)"
        );
        let mut all = stdout(&out) + &stderr(&out);
        for f in ["report.json", "junit.xml", "report.html"] {
            all.push_str(&std::fs::read_to_string(dir.path().join(f)).unwrap());
        }
        for secret in ["ref_test_key_a", "ref_prod_key"] {
            assert!(!all.contains(secret), "{secret} printed ({defects:?})");
        }
    }
}

/// Debian's nginx with `auth_basic` stands for both environments (each
/// server block its own password file): one whose production refuses the
/// sandbox's user passes, one whose production file also lists the
/// sandbox's user fails, naming the request.
#[test]
fn nginx_auth_basic_environments_are_judged() {
    use common::real_servers::{free_port, have_servers, nginx};
    if !have_servers() {
        return;
    }
    let basic = |user: &str, pw: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"))
    };
    for leaky in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("www/api")).unwrap();
        std::fs::write(d.join("www/api/ping.json"), "{\"ok\":true}").unwrap();
        std::fs::write(d.join("sandbox.htpasswd"), "sandbox:{PLAIN}sb-pass\n").unwrap();
        let prod_users = if leaky {
            "live:{PLAIN}live-pass\nsandbox:{PLAIN}sb-pass\n"
        } else {
            "live:{PLAIN}live-pass\n"
        };
        std::fs::write(d.join("production.htpasswd"), prod_users).unwrap();
        let (sp, pp) = (free_port(), free_port());
        let block = |port: u16, realm: &str| {
            format!(
                "  server {{ listen 127.0.0.1:{port}; location / {{ root {w}; auth_basic \"{realm}\"; auth_basic_user_file {f}; }} }}\n",
                w = d.join("www").display(),
                f = d.join(format!("{realm}.htpasswd")).display(),
            )
        };
        let servers = block(sp, "sandbox") + &block(pp, "production");
        let _nginx = nginx(d, &servers, &[sp, pp]);
        let text = format!(
            "suite: s\ntarget:\n  headers: {{ Authorization: \"Basic ${{secret.SB_BASIC}}\" }}\nchecks:\n  - id: iso\n    kind: auth.sandbox_isolated\n    probes: [{{ path: /api/ping.json }}, {{ method: HEAD, path: /api/ping.json }}]\n    production:\n      base_url: http://127.0.0.1:{pp}\n      headers: {{ Authorization: \"Basic ${{secret.LIVE_BASIC}}\" }}\n"
        );
        let (sb_basic, live_basic) = (basic("sandbox", "sb-pass"), basic("live", "live-pass"));
        let (check, out) = run(
            d,
            &text,
            &format!("http://127.0.0.1:{sp}"),
            &[("SB_BASIC", &sb_basic), ("LIVE_BASIC", &live_basic)],
        );
        let want = if leaky { 1 } else { 0 };
        assert_eq!(out.status.code(), Some(want), "leaky={leaky}: {check}");
        let a = assertion(&check, "sandbox_refused_by_production");
        if leaky {
            assert!(
                a["message"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("GET http://127.0.0.1:{pp}/api/ping.json got 200")),
                "{a}"
            );
        } else {
            assert_eq!(a["verdict"], "pass", "{a}");
            assert_eq!(
                assertion(&check, "production_refused_by_sandbox")["verdict"],
                "pass"
            );
        }
        let all =
            stdout(&out) + &stderr(&out) + &std::fs::read_to_string(d.join("report.json")).unwrap();
        assert!(!all.contains(&sb_basic) && !all.contains("sb-pass"));
        assert!(!all.contains(&live_basic) && !all.contains("live-pass"));
    }
}
