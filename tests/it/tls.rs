//! TLS options and TLS failures (issue 25 item 1, issue 24 item 16), with
//! real parts: a rustls server on 127.0.0.1:0 whose certificates a CA
//! generated for the test signs (rcgen), one that demands client
//! certificates, and servers whose certificate is wrong (expired, for another
//! name, a CA presented as the server's own). The real binary runs a suite
//! against each with `--cacert`, `--cert` and `--key`: it passes where the
//! options make it trusted, and otherwise says in one tminus line what is
//! wrong, naming the address, with exit 3; the key never appears in any
//! output.

use crate::common;

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{stderr, stdout, tminus};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DEADLINE: Duration = Duration::from_secs(60);

/// A CA of the test, and certificates it issues.
struct Ca {
    params: CertificateParams,
    key: KeyPair,
    pem: String,
    der: CertificateDer<'static>,
}

fn new_ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        der: cert.der().clone(),
        params,
        key,
    }
}

/// A certificate for `names`, issued by `ca`: (chain DER, key, cert PEM, key PEM).
struct Leaf {
    der: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    pem: String,
    key_pem: String,
}

fn leaf(ca: &Ca, names: &[&str], expired: bool) -> Leaf {
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(DnType::CommonName, names[0]);
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let issuer = Issuer::from_params(&ca.params, &ca.key);
    let cert = params.signed_by(&key, &issuer).unwrap();
    Leaf {
        der: cert.der().clone(),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// An https server on 127.0.0.1:0 answering every request 200 `{}`; with
/// `client_ca`, it demands a client certificate that CA issued. Returns its
/// base URL; it lives as long as the test process.
fn serve(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_ca: Option<&Ca>,
) -> String {
    serve_versions(chain, key, client_ca, rustls::DEFAULT_VERSIONS)
}

/// [`serve`] speaking only `versions`.
fn serve_versions(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_ca: Option<&Ca>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> String {
    let builder = rustls::ServerConfig::builder_with_protocol_versions(versions);
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der.clone()).unwrap();
            let v = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
                .build()
                .unwrap();
            builder.with_client_cert_verifier(v)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder.with_single_cert(chain, key).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    common::serve_on_thread("https", move |listener| async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(tokio::time::timeout(Duration::from_secs(10), async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                // Read the request head (at most 64 KiB), then answer.
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tls
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
                        .await;
                let _ = tls.shutdown().await;
            }));
        }
    })
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    p.to_str().unwrap().to_owned()
}

/// Runs a one-request suite against `url` with `extra` flags; returns the
/// exit code and everything printed (stdout, stderr, the JSON report).
fn run(dir: &Path, url: &str, extra: &[&str]) -> (i32, String) {
    run_env(dir, url, extra, &[])
}

fn run_env(dir: &Path, url: &str, extra: &[&str], envs: &[(&str, &str)]) -> (i32, String) {
    let suite = write(
        dir,
        "tls.yaml",
        "suite: tls\nchecks:\n  - id: hello\n    steps:\n      - request: { path: /hello }\n        expect: { status: 200 }\n",
    );
    let json = dir.join("report.json");
    let mut args = vec![
        "run",
        suite.as_str(),
        "--target",
        url,
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = tminus(dir, &args, envs, DEADLINE);
    let report = std::fs::read_to_string(&json).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        format!("{}\n{}\n{report}", stdout(&out), stderr(&out)),
    )
}

/// The output of a run that must fail on TLS: exit 3, the address, the
/// expected words, and no library log line.
fn assert_tls_failure(code: i32, out: &str, url: &str, words: &[&str]) {
    assert_eq!(code, 3, "{out}");
    let addr = url.trim_start_matches("https://");
    assert!(
        out.contains(addr),
        "the address {addr} is not named:\n{out}"
    );
    for w in words {
        assert!(out.contains(w), "`{w}` is not said:\n{out}");
    }
    assert!(
        !out.lines()
            .any(|l| l.starts_with("ERROR [") || l.contains("rustls_platform_verifier")),
        "a library log line is printed:\n{out}"
    );
}

#[test]
fn a_private_ca_is_trusted_with_cacert_and_named_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let ca = new_ca("tminus test CA");
    let server = leaf(&ca, &["127.0.0.1", "localhost"], false);
    let url = serve(vec![server.der.clone()], server.key.clone_key(), None);
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);

    let (code, out) = run(dir.path(), &url, &[]);
    assert_tls_failure(code, &out, &url, &["unknown issuer", "--cacert FILE"]);
    // The library's own record is there to hide (so its absence above is
    // the filter's doing): asked for with TMINUS_LOG, it is printed.
    let (_, out) = run_env(dir.path(), &url, &[], &[("TMINUS_LOG", "debug")]);
    assert!(
        out.contains("ERROR [rustls_platform_verifier"),
        "no library record even with TMINUS_LOG=debug:\n{out}"
    );

    let (code, out) = run(dir.path(), &url, &["--cacert", &ca_file]);
    assert_eq!(code, 0, "{out}");
}

/// A server whose certificate a test CA issued and that demands a client
/// certificate another test CA issued, with the files tminus is given.
struct MutualTls {
    url: String,
    ca_file: String,
    cert_file: String,
    key_file: String,
    key_pem: String,
}

fn mutual_tls(dir: &Path) -> MutualTls {
    let ca = new_ca("tminus test CA");
    let server = leaf(&ca, &["127.0.0.1"], false);
    let client_ca = new_ca("tminus client CA");
    let client = leaf(&client_ca, &["tminus client"], false);
    let url = serve(
        vec![server.der.clone()],
        server.key.clone_key(),
        Some(&client_ca),
    );
    MutualTls {
        url,
        ca_file: write(dir, "ca.pem", &ca.pem),
        cert_file: write(dir, "client.pem", &client.pem),
        key_file: write(dir, "client.key", &client.key_pem),
        key_pem: client.key_pem,
    }
}

#[test]
fn a_server_that_requires_client_certificates_gets_cert_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let MutualTls {
        url,
        ca_file,
        cert_file,
        key_file,
        key_pem,
    } = mutual_tls(dir.path());
    // The key's base64 lines, any of which would be a leak.
    let key_lines: Vec<&str> = key_pem
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .collect();
    assert!(!key_lines.is_empty());

    let (code, out) = run(dir.path(), &url, &["--cacert", &ca_file]);
    assert_tls_failure(
        code,
        &out,
        &url,
        &[
            "requires a client certificate",
            "--cert FILE and --key FILE",
        ],
    );

    let (code, out) = run(
        dir.path(),
        &url,
        &[
            "--cacert", &ca_file, "--cert", &cert_file, "--key", &key_file,
        ],
    );
    assert_eq!(code, 0, "{out}");
    for l in &key_lines {
        assert!(!out.contains(l), "the key is printed:\n{out}");
    }

    // A certificate the server's CA did not issue is refused, and said so.
    let stranger = leaf(&new_ca("another CA"), &["tminus client"], false);
    let s_cert = write(dir.path(), "s.pem", &stranger.pem);
    let s_key = write(dir.path(), "s.key", &stranger.key_pem);
    let (code, out) = run(
        dir.path(),
        &url,
        &["--cacert", &ca_file, "--cert", &s_cert, "--key", &s_key],
    );
    assert_tls_failure(code, &out, &url, &["refused tminus's client certificate"]);
}

#[test]
fn each_certificate_problem_is_one_readable_line() {
    let dir = tempfile::tempdir().unwrap();
    let ca = new_ca("tminus test CA");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);

    let expired = leaf(&ca, &["127.0.0.1"], true);
    let url = serve(vec![expired.der.clone()], expired.key.clone_key(), None);
    let (code, out) = run(dir.path(), &url, &["--cacert", &ca_file]);
    assert_tls_failure(code, &out, &url, &["certificate has expired"]);

    let other_name = leaf(&ca, &["other.example"], false);
    let url = serve(
        vec![other_name.der.clone()],
        other_name.key.clone_key(),
        None,
    );
    let (code, out) = run(dir.path(), &url, &["--cacert", &ca_file]);
    assert_tls_failure(
        code,
        &out,
        &url,
        &["not for this host name (name mismatch)"],
    );

    // The CA's own certificate served as the server's: given with
    // --cacert it is trusted as that exact certificate (as curl does), so
    // what is wrong is what is wrong with it as a leaf: it names no host.
    let ca_key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ca.key.serialize_der()));
    let url = serve(vec![ca.der.clone()], ca_key, None);
    let (code, out) = run(dir.path(), &url, &["--cacert", &ca_file]);
    assert_tls_failure(code, &out, &url, &["not for this host name"]);
    assert!(!out.contains("OtherError"), "{out}");
    // Not given to trust, it is a CA presented as a server's certificate.
    let ca_key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ca.key.serialize_der()));
    let url = serve(vec![ca.der.clone()], ca_key, None);
    let other = new_ca("another CA");
    let other_file = dir.path().join("other-ca.pem");
    std::fs::write(&other_file, &other.pem).unwrap();
    let (code, out) = run(
        dir.path(),
        &url,
        &["--cacert", other_file.to_str().unwrap()],
    );
    assert_eq!(code, 3, "{out}");
    assert!(!out.contains("OtherError"), "{out}");
}

#[test]
fn bad_tls_files_are_named_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let url = "https://127.0.0.1:9";
    let ca = new_ca("tminus test CA");
    let client = leaf(&ca, &["tminus client"], false);
    let cert_file = write(dir.path(), "client.pem", &client.pem);
    let not_pem = write(dir.path(), "garbage.pem", "not a certificate\n");
    let secret_key = "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEYMATERIALthatisnotbase64!!\n-----END PRIVATE KEY-----\n";
    let bad_key = write(dir.path(), "bad.key", secret_key);
    let cases: &[(&[&str], &str)] = &[
        (
            &["--cacert", "/nonexistent/ca.pem"],
            "--cacert: cannot read /nonexistent/ca.pem",
        ),
        (&["--cacert", &not_pem], "no PEM certificate in it"),
        (&["--key", &bad_key], "needs --cert"),
        (
            &["--cert", &cert_file],
            "holds no private key: give it with --key FILE",
        ),
        (
            &["--cert", &cert_file, "--key", &not_pem],
            "no PEM private key in it",
        ),
        (
            &["--cert", &cert_file, "--key", &bad_key],
            "bad.key: no private key tminus can read in it",
        ),
    ];
    for (flags, want) in cases {
        let (code, out) = run(dir.path(), url, flags);
        assert_eq!(code, 2, "{flags:?}: {out}");
        assert!(out.contains(want), "{flags:?}: `{want}` not said:\n{out}");
        assert!(
            !out.contains("TOPSECRET"),
            "{flags:?}: the key is printed:\n{out}"
        );
    }
}

/// The burst's load users are built by the same builder: a burst against a
/// private-CA server with client certificates required passes with the
/// options, and without `--cacert` it is an error.
#[test]
fn the_burst_carries_the_tls_options() {
    let dir = tempfile::tempdir().unwrap();
    let m = mutual_tls(dir.path());
    let suite = write(
        dir.path(),
        "burst.yaml",
        "suite: burst\nload:\n  id: hello\n  users: 2\n  hatch_rate: 10\n  iterations: 10\n  max_rate: 50/s\n  requests:\n    - name: hello\n      request: { path: /hello }\n",
    );
    let burst = |extra: &[&str]| {
        let json = dir.path().join("report.json");
        let _ = std::fs::remove_file(&json);
        let mut args = vec![
            "run",
            suite.as_str(),
            "--target",
            m.url.as_str(),
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = tminus(dir.path(), &args, &[], DEADLINE);
        let report = std::fs::read_to_string(&json).unwrap_or_default();
        (
            out.status.code().unwrap_or(-1),
            format!("{}\n{}\n{report}", stdout(&out), stderr(&out)),
        )
    };
    let (code, out) = burst(&[
        "--cacert",
        &m.ca_file,
        "--cert",
        &m.cert_file,
        "--key",
        &m.key_file,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("\"pass\""), "{out}");
    let (code, out) = burst(&["--cert", &m.cert_file, "--key", &m.key_file]);
    // Not a pass, the address is named, and the failure is called TLS.
    assert_eq!(code, 3, "{out}");
    assert!(out.contains(m.url.trim_start_matches("https://")), "{out}");
    assert!(out.contains("the TLS handshake failed"), "{out}");
    // Trusted but without a client certificate: TLS 1.3 refuses it after
    // the handshake, the users see closed connections, and the burst's
    // error says what the server's alert says.
    let (code, out) = burst(&["--cacert", &m.ca_file]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("requires a client certificate"), "{out}");
}

/// A TLS 1.3 server judges the client certificate after the client's
/// handshake is done, so the request may meet a closed connection and the
/// error name no TLS cause (the race CI once lost: "connection was not
/// ready"). The diagnosis repeats the handshake alone and reads the
/// server's alert: asserted here directly, since the race in the run above
/// goes either way.
#[tokio::test]
async fn the_alert_after_a_tls13_handshake_is_read_by_the_diagnosis() {
    use tminus::http::tls::{diagnose, TlsFile, TlsOptions};
    let dir = tempfile::tempdir().unwrap();
    let m = mutual_tls(dir.path());
    let origin = tminus::http::stream::Origin::of(&m.url.parse().unwrap()).unwrap();
    let options = |cert: Option<(&str, &str)>| TlsOptions {
        ca: Some(TlsFile::new("--cacert", &m.ca_file)),
        cert: cert.map(|c| TlsFile::new("--cert", c.0)),
        key: cert.map(|c| TlsFile::new("--key", c.1)),
        ..TlsOptions::default()
    };

    let no_cert = options(None).load().unwrap();
    let why = diagnose(&no_cert, &origin).await;
    assert!(
        why.as_deref()
            .is_some_and(|w| w.contains("requires a client certificate")),
        "{why:?}"
    );

    let stranger = leaf(&new_ca("another CA"), &["tminus client"], false);
    let s_cert = write(dir.path(), "s.pem", &stranger.pem);
    let s_key = write(dir.path(), "s.key", &stranger.key_pem);
    let refused = options(Some((&s_cert, &s_key))).load().unwrap();
    let why = diagnose(&refused, &origin).await;
    assert!(
        why.as_deref()
            .is_some_and(|w| w.contains("refused tminus's client certificate")),
        "{why:?}"
    );

    // A certificate the server accepts: nothing to blame on TLS.
    let good = options(Some((&m.cert_file, &m.key_file))).load().unwrap();
    assert_eq!(diagnose(&good, &origin).await, None);
}

/// Runs the suite `text` (written as `tls.yaml` in `dir`, beside the PEM
/// files it names) with `extra` flags; returns the exit code and every
/// output: console, JSON, JUnit, HTML and the Markdown summary.
fn run_suite(dir: &Path, text: &str, extra: &[&str]) -> (i32, String) {
    let suite = write(dir, "tls.yaml", text);
    let out_files = ["report.json", "junit.xml", "report.html", "summary.md"];
    let paths: Vec<String> = out_files
        .iter()
        .map(|f| dir.join(f).to_str().unwrap().to_owned())
        .collect();
    let mut args = vec![
        "run",
        suite.as_str(),
        "--json",
        &paths[0],
        "--junit",
        &paths[1],
        "--html",
        &paths[2],
        "--summary-md",
        &paths[3],
    ];
    args.extend_from_slice(extra);
    let out = tminus(dir, &args, &[], DEADLINE);
    let mut all = format!("{}\n{}", stdout(&out), stderr(&out));
    for p in &paths {
        all.push_str(&format!(
            "\n==> {p}\n{}",
            std::fs::read_to_string(p).unwrap_or_default()
        ));
    }
    (out.status.code().unwrap_or(-1), all)
}

/// A one-request suite against `url` with `tls` as its `target.tls` block
/// (flow style), plus `more` checks.
fn tls_suite(url: &str, tls: &str, more: &str) -> String {
    format!(
        "suite: tls\ntarget:\n  base_url: {url}\n  tls: {tls}\nchecks:\n  - id: hello\n    steps:\n      - request: {{ path: /hello }}\n        expect: {{ status: 200 }}\n{more}"
    )
}

#[test]
fn target_tls_in_the_suite_trusts_and_presents_like_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let m = mutual_tls(dir.path());
    // Paths relative to the suite file.
    let text = tls_suite(
        &m.url,
        "{ ca: ca.pem, cert: client.pem, key: client.key }",
        "",
    );
    let (code, out) = run_suite(dir.path(), &text, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains(m.key_pem.lines().nth(1).unwrap()), "{out}");

    // A file that is not there: exit 2 at its value, before anything is sent.
    let text = tls_suite(
        &m.url,
        "{ ca: ca.pem, cert: client.pem, key: nothere.key }",
        "",
    );
    let (code, out) = run_suite(dir.path(), &text, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("tls.yaml:4:"), "no file:line:col:\n{out}");
    assert!(out.contains("target.tls.key: no file"), "{out}");

    // The command line wins over the suite, field by field: a --cacert that
    // does not hold the server's CA replaces the suite's ca.
    let other = write(dir.path(), "other-ca.pem", &new_ca("another CA").pem);
    let text = tls_suite(
        &m.url,
        "{ ca: ca.pem, cert: client.pem, key: client.key }",
        "",
    );
    let (code, out) = run_suite(dir.path(), &text, &["--cacert", &other]);
    assert_tls_failure(code, &out, &m.url, &["unknown issuer"]);

    // A bad PEM named by the suite is named as the suite's option.
    write(dir.path(), "empty.pem", "not a certificate\n");
    let text = tls_suite(&m.url, "{ ca: empty.pem }", "");
    let (code, out) = run_suite(dir.path(), &text, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("target.tls.ca of"), "{out}");
    assert!(out.contains("no PEM certificate"), "{out}");
}

#[test]
fn server_name_checks_the_certificate_for_another_name_than_the_url_host() {
    let dir = tempfile::tempdir().unwrap();
    let ca = new_ca("tminus test CA");
    let server = leaf(&ca, &["api.internal.example"], false);
    let url = serve(vec![server.der.clone()], server.key.clone_key(), None);
    write(dir.path(), "ca.pem", &ca.pem);
    // The connections tminus opens itself verify the same way.
    let cert_check = "  - id: certificate\n    kind: transport.certificate\n";

    let (code, out) = run_suite(dir.path(), &tls_suite(&url, "{ ca: ca.pem }", ""), &[]);
    assert_tls_failure(code, &out, &url, &["name mismatch"]);

    let text = tls_suite(
        &url,
        "{ ca: ca.pem, server_name: api.internal.example }",
        cert_check,
    );
    let (code, out) = run_suite(dir.path(), &text, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("api.internal.example"), "{out}");

    // Another name the certificate is not for still fails.
    let text = tls_suite(&url, "{ ca: ca.pem, server_name: other.example }", "");
    let (code, out) = run_suite(dir.path(), &text, &[]);
    assert_tls_failure(code, &out, &url, &["name mismatch"]);
}

#[test]
fn min_version_1_3_refuses_a_server_that_speaks_only_tls_1_2() {
    let dir = tempfile::tempdir().unwrap();
    let ca = new_ca("tminus test CA");
    let server = leaf(&ca, &["127.0.0.1"], false);
    let url = serve_versions(
        vec![server.der.clone()],
        server.key.clone_key(),
        None,
        &[&rustls::version::TLS12],
    );
    write(dir.path(), "ca.pem", &ca.pem);

    let (code, out) = run_suite(dir.path(), &tls_suite(&url, "{ ca: ca.pem }", ""), &[]);
    assert_eq!(code, 0, "TLS 1.2 is offered by default:\n{out}");
    let text = tls_suite(&url, "{ ca: ca.pem, min_version: \"1.3\" }", "");
    let (code, out) = run_suite(dir.path(), &text, &[]);
    assert_tls_failure(
        code,
        &out,
        &url,
        &["none of the TLS versions", "TLS 1.3 only"],
    );

    for bad in ["\"1.0\"", "\"1.1\"", "tls13"] {
        let text = tls_suite(&url, &format!("{{ ca: ca.pem, min_version: {bad} }}"), "");
        let (code, out) = run_suite(dir.path(), &text, &[]);
        assert_eq!(code, 2, "{bad}: {out}");
        assert!(out.contains("target.tls.min_version"), "{out}");
    }
}

#[test]
fn insecure_accepts_any_certificate_and_every_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let ca = new_ca("a CA nobody trusts");
    let server = leaf(&ca, &["127.0.0.1"], false);
    let url = serve(vec![server.der.clone()], server.key.clone_key(), None);
    let warning = "TLS certificates were not verified";
    let assert_warned = |out: &str| {
        for (output, marker) in [
            ("console", "WARNING: TLS certificates were not verified"),
            ("JSON", "\"warnings\": ["),
            ("JUnit", "<property name=\"warning\""),
            ("HTML", "<p class=\"warning\""),
            ("Markdown", "> [!WARNING]"),
        ] {
            assert!(out.contains(marker), "{output} does not warn:\n{out}");
        }
        assert!(out.matches(warning).count() >= 6, "{out}");
    };

    for (tls, flags) in [("{ insecure: true }", &[][..]), ("{}", &["--insecure"][..])] {
        let (code, out) = run_suite(dir.path(), &tls_suite(&url, tls, ""), flags);
        assert_eq!(code, 0, "{tls} {flags:?}: {out}");
        assert_warned(&out);
    }

    // transport.certificate still verifies: an untrusted chain fails it.
    let cert_check = "  - id: certificate\n    kind: transport.certificate\n";
    let (code, out) = run_suite(
        dir.path(),
        &tls_suite(&url, "{ insecure: true }", cert_check),
        &[],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("unknown issuer"), "{out}");

    // Without it, nothing warns.
    write(dir.path(), "ca.pem", &ca.pem);
    let (code, out) = run_suite(dir.path(), &tls_suite(&url, "{ ca: ca.pem }", ""), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains(warning), "{out}");
}

#[test]
fn suites_of_one_run_must_agree_on_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = new_ca("tminus test CA");
    write(dir.path(), "ca.pem", &ca.pem);
    write(dir.path(), "other.pem", &new_ca("other").pem);
    let url = "https://127.0.0.1:9";
    let suites = dir.path().join("suites");
    std::fs::create_dir(&suites).unwrap();
    write(&suites, "a.yaml", &tls_suite(url, "{ ca: ../ca.pem }", ""));
    let b = tls_suite(url, "{ ca: ../other.pem }", "").replace("suite: tls", "suite: tls-b");
    write(&suites, "b.yaml", &b);
    let out = tminus(
        dir.path(),
        &["run", suites.to_str().unwrap()],
        &[],
        DEADLINE,
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("a.yaml") && text.contains("b.yaml") && text.contains("different target.tls"),
        "{text}"
    );
}
