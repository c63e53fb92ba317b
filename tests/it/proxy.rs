//! Forward proxies (issue 25 item 2), with a real one: a small HTTP proxy on
//! 127.0.0.1:0 in this test process that answers `CONNECT` with a tunnel and
//! forwards absolute-form requests, logs what it was asked, can demand
//! Basic credentials (407), and resolves `*.test` names to 127.0.0.1 (a
//! staging name only the proxy can reach). The real binary runs the shipped
//! suites through it against the reference, over http and https, with the
//! proxy from `--proxy` and from the environment.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{repo, run_with_json, stderr, stdout, tminus, verdicts, RefHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DEADLINE: Duration = Duration::from_secs(120);

struct TestProxy {
    url: String,
    /// One line per request the proxy took: `CONNECT host:port` or
    /// `GET http://...`, then ` auth=<Proxy-Authorization or ->`.
    log: Arc<Mutex<Vec<String>>>,
}

impl TestProxy {
    fn lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

/// Reads a request head (at most 64 KiB); returns it and what followed it.
async fn read_head(s: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Some((String::from_utf8_lossy(&buf).into_owned(), rest));
        }
        if buf.len() > 65536 {
            return None;
        }
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// `name.test:port` is 127.0.0.1:port (a name only the proxy knows).
fn resolve(authority: &str) -> String {
    match authority.rsplit_once(':') {
        Some((host, port)) if host.ends_with(".test") => format!("127.0.0.1:{port}"),
        _ => authority.to_owned(),
    }
}

fn start_proxy(require: Option<&'static str>) -> TestProxy {
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = log.clone();
    let url = common::serve_on_thread("http", move |listener| async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                continue;
            };
            let log = log2.clone();
            tokio::spawn(tokio::time::timeout(Duration::from_secs(60), async move {
                let Some((head, rest)) = read_head(&mut client).await else {
                    return;
                };
                let mut lines = head.split("\r\n");
                let request_line = lines.next().unwrap_or("").to_owned();
                let headers: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
                let auth = headers
                    .iter()
                    .find_map(|h| {
                        h.split_once(':')
                            .filter(|(k, _)| k.eq_ignore_ascii_case("proxy-authorization"))
                            .map(|(_, v)| v.trim().to_owned())
                    })
                    .unwrap_or_else(|| "-".into());
                let mut parts = request_line.split_whitespace();
                let (method, target) = (
                    parts.next().unwrap_or("").to_owned(),
                    parts.next().unwrap_or("").to_owned(),
                );
                log.lock()
                    .unwrap()
                    .push(format!("{method} {target} auth={auth}"));
                if let Some(want) = require {
                    if auth != want {
                        let _ = client
                            .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                        return;
                    }
                }
                if method == "CONNECT" {
                    let Ok(mut upstream) = tokio::net::TcpStream::connect(resolve(&target)).await
                    else {
                        let _ = client
                            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                            .await;
                        return;
                    };
                    let _ = client
                        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                        .await;
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                    return;
                }
                // Absolute form: http://authority/path.
                let Some(after) = target.strip_prefix("http://") else {
                    let _ = client
                        .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                };
                let (authority, path) = match after.find('/') {
                    Some(i) => (&after[..i], &after[i..]),
                    None => (after, "/"),
                };
                let Ok(mut upstream) = tokio::net::TcpStream::connect(resolve(authority)).await
                else {
                    let _ = client
                        .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                };
                let mut out = format!("{method} {path} HTTP/1.1\r\n");
                for h in headers {
                    let name = h.split(':').next().unwrap_or("").to_ascii_lowercase();
                    if name != "proxy-authorization" && name != "proxy-connection" {
                        out.push_str(h);
                        out.push_str("\r\n");
                    }
                }
                out.push_str("\r\n");
                let _ = upstream.write_all(out.as_bytes()).await;
                let _ = upstream.write_all(&rest).await;
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            }));
        }
    });
    TestProxy { url, log }
}

fn text(out: &std::process::Output) -> String {
    format!("{}\n{}", stdout(out), stderr(out))
}

fn not_passing(json: &std::path::Path) -> Vec<String> {
    common::not_passing(&verdicts(json))
}

#[test]
fn proxy_carries_every_role_over_http_and_https() {
    // Over http: the probe's requests in absolute form, tminus's own
    // connections (the race, the dropped response) as CONNECT tunnels.
    let proxy = start_proxy(None);
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (json, out) = run_with_json(
        dir.path(),
        &repo().join("suites/idempotency.yaml"),
        &reference.url,
        &["--proxy", &proxy.url, "--allow-remote-load"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(not_passing(&json).is_empty(), "{:?}", not_passing(&json));
    let lines = proxy.lines();
    let host = reference.url.trim_start_matches("http://");
    assert!(
        // The proxy logs the first request of each connection it keeps.
        lines
            .iter()
            .any(|l| !l.starts_with("CONNECT") && l.contains(&format!(" {}/", reference.url))),
        "no absolute-form request: {lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("CONNECT {host} "))),
        "tminus's own connections did not tunnel: {lines:?}"
    );

    // Over https: everything tunnels, the TLS is end to end.
    let proxy = start_proxy(None);
    let (reference, pki) = RefHandle::start_tls(&[], false);
    let tls = RefHandle::tls_args(pki.path(), false);
    let mut args: Vec<&str> = tls.iter().map(String::as_str).collect();
    args.extend(["--proxy", &proxy.url, "--allow-remote-load"]);
    let dir = tempfile::tempdir().unwrap();
    for suite in ["suites/idempotency.yaml", "suites/transport.yaml"] {
        let (json, out) =
            run_with_json(dir.path(), &repo().join(suite), &reference.url, &args, &[]);
        assert_eq!(out.status.code(), Some(0), "{suite}: {}", text(&out));
        assert!(
            not_passing(&json).is_empty(),
            "{suite}: {:?}",
            not_passing(&json)
        );
    }
    let lines = proxy.lines();
    assert!(
        !lines.is_empty() && lines.iter().all(|l| l.starts_with("CONNECT ")),
        "{lines:?}"
    );
}

#[test]
fn the_environment_names_the_proxy_and_no_proxy_bypasses_it() {
    let proxy = start_proxy(None);
    let (reference, pki) = RefHandle::start_tls(&[], false);
    let port = reference.url.rsplit(':').next().unwrap().to_owned();
    // A name only the proxy resolves; the certificate is for 127.0.0.1.
    let target = format!("https://staging.test:{port}");
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    std::fs::write(
        &suite,
        format!(
            "suite: via-env\ntarget:\n  tls: {{ ca: {}, server_name: 127.0.0.1 }}\nchecks:\n  - id: count\n    steps:\n      - request: {{ path: /public/v1/messages/count, headers: {{ Authorization: Bearer ref_test_key_a }} }}\n        expect: {{ status: 200 }}\n",
            pki.path().join("ca.pem").display()
        ),
    )
    .unwrap();
    let (json, out) = run_with_json(
        dir.path(),
        &suite,
        &target,
        &[],
        &[("HTTPS_PROXY", &proxy.url)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(not_passing(&json).is_empty());
    assert!(
        proxy
            .lines()
            .iter()
            .any(|l| l.starts_with(&format!("CONNECT staging.test:{port} "))),
        "{:?}",
        proxy.lines()
    );

    // NO_PROXY sends it direct, where the name does not resolve: an error
    // naming the address, and the proxy asked nothing more.
    let before = proxy.lines().len();
    let (_, out) = run_with_json(
        dir.path(),
        &suite,
        &target,
        &[],
        &[("HTTPS_PROXY", &proxy.url), ("NO_PROXY", ".test")],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("staging.test"), "{}", text(&out));
    assert_eq!(proxy.lines().len(), before);

    // A proxy variable tminus cannot use is a usage error naming it.
    let out = tminus(
        dir.path(),
        &["run", suite.to_str().unwrap(), "--target", &target],
        &[("HTTPS_PROXY", "socks5://u:pw-in-env@127.0.0.1:1080")],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("HTTPS_PROXY"), "{}", text(&out));
    assert!(!text(&out).contains("pw-in-env"), "{}", text(&out));
    // ...unless it would not be used: `--noproxy '*'` goes direct (where
    // the staging name does not resolve: an error of the run, not of usage).
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            &target,
            "--noproxy",
            "*",
        ],
        &[("HTTPS_PROXY", "socks5://u:pw-in-env@127.0.0.1:1080")],
        DEADLINE,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(!text(&out).contains("pw-in-env"), "{}", text(&out));
}

#[test]
fn proxy_credentials_go_to_the_proxy_only_and_are_never_printed() {
    // base64("tester:s3cret-proxy-pw")
    let proxy = start_proxy(Some("Basic dGVzdGVyOnMzY3JldC1wcm94eS1wdw=="));
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let with_creds = proxy
        .url
        .replace("http://", "http://tester:s3cret-proxy-pw@");
    let (json, out) = run_with_json(
        dir.path(),
        &repo().join("suites/idempotency.yaml"),
        &reference.url,
        &["--proxy", &with_creds, "--allow-remote-load"],
        &[],
    );
    let report = std::fs::read_to_string(&json).unwrap();
    let all = format!("{}{report}", text(&out));
    assert_eq!(out.status.code(), Some(0), "{all}");
    for leak in ["s3cret-proxy-pw", "dGVzdGVyOnMzY3JldC1wcm94eS1wdw"] {
        assert!(!all.contains(leak), "{leak} printed:\n{all}");
    }
    assert!(proxy
        .lines()
        .iter()
        .all(|l| l.ends_with("auth=Basic dGVzdGVyOnMzY3JldC1wcm94eS1wdw==")));

    // Wrong credentials: every check is an error naming the proxy's 407.
    let wrong = proxy.url.replace("http://", "http://tester:wrong-pw@");
    let (_, out) = run_with_json(
        dir.path(),
        &repo().join("suites/idempotency.yaml"),
        &reference.url,
        &["--proxy", &wrong, "--allow-remote-load"],
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("407"), "{}", text(&out));
    assert!(!text(&out).contains("wrong-pw"), "{}", text(&out));

    // A proxy that is not there is named.
    let (_, out) = run_with_json(
        dir.path(),
        &repo().join("suites/idempotency.yaml"),
        &reference.url,
        &["--proxy", "http://127.0.0.1:9"],
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("127.0.0.1:9"), "{}", text(&out));
}

#[test]
fn load_goes_through_a_proxy_only_with_allow_remote_load() {
    let proxy = start_proxy(None);
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("burst.yaml");
    std::fs::write(
        &suite,
        "suite: burst\nload:\n  id: burst\n  users: 2\n  hold: 2s\n  ramp_down: 1s\n  max_rate: 20/s\n  requests:\n    - { name: count, request: { path: /public/v1/messages/count, headers: { Authorization: Bearer ref_load_key } } }\n  thresholds:\n    - p99 < 2s\n",
    )
    .unwrap();
    let (_, out) = run_with_json(
        dir.path(),
        &suite,
        &reference.url,
        &["--proxy", &proxy.url],
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let shown = proxy.url.trim_start_matches("http://");
    assert!(
        text(&out).contains(&format!("it goes through the proxy {shown}")),
        "{}",
        text(&out)
    );
    assert!(proxy.lines().is_empty(), "{:?}", proxy.lines());

    let (json, out) = run_with_json(
        dir.path(),
        &suite,
        &reference.url,
        &["--proxy", &proxy.url, "--allow-remote-load"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(not_passing(&json).is_empty(), "{:?}", not_passing(&json));
    assert!(!proxy.lines().is_empty());
}
