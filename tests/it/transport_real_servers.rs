//! The transport family against the servers people run (issue 36): Debian's
//! nginx and `openssl s_server`, configured the ways operators configure
//! them, with certificates made by the `openssl` command. Each shape states
//! the verdict tminus must give; a PASS where the property is broken fails
//! the test. Shapes:
//!
//! | shape | server | expected |
//! |---|---|---|
//! | TLS 1.0-1.3, OpenSSL's default suites | nginx | no_tls10, no_tls11 FAIL |
//! | TLS 1.0/1.1 over X25519 only | nginx | no_tls10, no_tls11 FAIL |
//! | TLS 1.0/1.1 with RSA key exchange only | nginx | no_tls10, no_tls11 FAIL |
//! | TLS 1.0/1.1 with DHE only | openssl s_server | no_tls10, no_tls11 FAIL |
//! | TLS 1.2 and 1.3 only | nginx | every protocol property PASS |
//! | RSA-1024 key | nginx | key_strength FAIL (RSA 1024), trusted FAIL |
//! | SHA-1 signed certificate | nginx | trusted FAIL, key_strength PASS |
//! | expired certificate | nginx | not_expiring and trusted FAIL; protocol judged |
//! | certificate for another name | nginx | trusted FAIL; protocol judged |
//! | root redirected, API in clear | nginx | https_redirect.not_served FAIL |
//! | everything redirected | nginx | https_redirect PASS |
//! | CORS granting `null` with credentials | nginx | no_credentialed_reflection FAIL |
//! | CORS matching the allowed origin by prefix | nginx | no_credentialed_reflection FAIL |
//! | CORS granting the allowed origin only | nginx | cors PASS |
//! | self-signed `openssl req -x509` certificate given with --cacert | nginx | trusted PASS, served |
//! | a proxy refusing CONNECT (407, 401) | tinyproxy | error quoting its status line |
//!
//! nginx, openssl and tinyproxy come from Debian's packages (`.ci/run` installs them
//! and sets TMINUS_REQUIRE_REAL_SERVERS=1, so CI never skips); elsewhere a
//! missing binary skips with a message.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::real_servers::{
    free_port, have_servers, make_ca, nginx, openssl, wait_listening, Server,
};
use common::{stderr, stdout, tminus};

const DEADLINE: Duration = Duration::from_secs(120);

/// A private CA and the leaf certificates of the shapes, made the usual
/// openssl way (`req -x509`, `x509 -req` with a SAN extension file).
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new(dir: &Path) -> Pki {
        make_ca(dir, "tminus real-server CA");
        let pki = Pki {
            dir: dir.to_owned(),
        };
        pki.leaf(
            "good",
            "rsa:2048",
            "sha256",
            "localhost",
            "IP:127.0.0.1,DNS:localhost",
        );
        pki.leaf(
            "weak",
            "rsa:1024",
            "sha256",
            "localhost",
            "IP:127.0.0.1,DNS:localhost",
        );
        pki.leaf(
            "sha1",
            "rsa:2048",
            "sha1",
            "localhost",
            "IP:127.0.0.1,DNS:localhost",
        );
        pki.leaf(
            "other",
            "rsa:2048",
            "sha256",
            "other.example",
            "DNS:other.example",
        );
        pki.expired();
        pki
    }

    fn leaf(&self, name: &str, key: &str, digest: &str, cn: &str, san: &str) {
        let d = &self.dir;
        std::fs::write(
            d.join(format!("{name}.ext")),
            format!("subjectAltName={san}\n"),
        )
        .unwrap();
        openssl(
            d,
            &[
                "req",
                "-newkey",
                key,
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN={cn}"),
            ],
        );
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &format!("{name}.pem"),
                "-days",
                "30",
                &format!("-{digest}"),
                "-extfile",
                &format!("{name}.ext"),
            ],
        );
    }

    /// A certificate that expired yesterday: `openssl ca` takes explicit
    /// dates (OpenSSL 3.0's `x509` does not).
    fn expired(&self) {
        let d = &self.dir;
        std::fs::write(d.join("index.txt"), "").unwrap();
        std::fs::write(d.join("serial"), "1000\n").unwrap();
        std::fs::write(
            d.join("ca.cnf"),
            "[ca]\ndefault_ca=tca\n[tca]\ndatabase=index.txt\nserial=serial\nnew_certs_dir=.\n\
             default_md=sha256\npolicy=any\ncopy_extensions=copy\nunique_subject=no\n\
             [any]\ncommonName=supplied\n[ext]\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )
        .unwrap();
        openssl(
            d,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "expired.key",
                "-out",
                "expired.csr",
                "-subj",
                "/CN=localhost",
            ],
        );
        openssl(
            d,
            &[
                "ca",
                "-batch",
                "-config",
                "ca.cnf",
                "-cert",
                "ca.pem",
                "-keyfile",
                "ca.key",
                "-in",
                "expired.csr",
                "-out",
                "expired.pem",
                "-startdate",
                "20240101000000Z",
                "-enddate",
                "20240201000000Z",
                "-extensions",
                "ext",
                "-notext",
            ],
        );
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).to_str().unwrap().to_owned()
    }
}

/// An https server block on `port` with `cert`, and `extra` directives.
fn tls_block(pki: &Pki, port: u16, cert: &str, extra: &str) -> String {
    format!(
        "  server {{\n    listen 127.0.0.1:{port} ssl;\n    ssl_certificate {c};\n    \
         ssl_certificate_key {k};\n    {extra}\n    location / {{ return 200 '{{\"ok\":true}}'; }}\n  }}\n",
        c = pki.path(&format!("{cert}.pem")),
        k = pki.path(&format!("{cert}.key")),
    )
}

/// `(check.property, verdict, message)` of every assertion in a report.
fn assertions(report: &Path) -> Vec<(String, String, String)> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    let mut out = Vec::new();
    for s in v["suites"].as_array().unwrap() {
        for c in s["checks"].as_array().unwrap() {
            let id = c["id"].as_str().unwrap();
            if let Some(a) = c["assertions"].as_array() {
                for a in a {
                    out.push((
                        format!("{id}.{}", a["property"].as_str().unwrap()),
                        a["verdict"].as_str().unwrap().to_owned(),
                        a["message"].as_str().unwrap_or("").to_owned(),
                    ));
                }
            }
            if c["assertions"].as_array().is_none_or(|a| a.is_empty()) {
                out.push((
                    id.to_owned(),
                    c["verdict"].as_str().unwrap().to_owned(),
                    c["message"].as_str().unwrap_or("").to_owned(),
                ));
            }
        }
    }
    out
}

/// Runs `suite` (its checks' YAML) against `url` trusting the test CA.
fn run(
    dir: &Path,
    pki: &Pki,
    name: &str,
    url: &str,
    checks: &str,
) -> Vec<(String, String, String)> {
    let suite = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &suite,
        format!("suite: {name}\nversion: \"1\"\ntarget:\n  timeout: 5s\nchecks:\n{checks}"),
    )
    .unwrap();
    let reports = dir.join(format!("{name}-reports"));
    let json = reports.join("report.json");
    let out = tminus(
        dir,
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            url,
            "--cacert",
            &pki.path("ca.pem"),
            "--report-dir",
            reports.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[],
        DEADLINE,
    );
    assert!(
        json.exists(),
        "{name}: no report\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assertions(&json)
}

fn verdict<'a>(got: &'a [(String, String, String)], property: &str) -> (&'a str, &'a str) {
    got.iter()
        .find(|(p, _, _)| p == property)
        .map(|(_, v, m)| (v.as_str(), m.as_str()))
        .unwrap_or_else(|| panic!("no {property} in {got:#?}"))
}

fn expect(got: &[(String, String, String)], shape: &str, property: &str, wanted: &str) {
    let (v, m) = verdict(got, property);
    assert_eq!(v, wanted, "{shape}: {property} was {v} ({m})");
}

const PROTOCOL: &str = "  - id: versions\n    kind: transport.protocol\n";
const CERTIFICATE: &str = "  - id: cert\n    kind: transport.certificate\n";

#[test]
fn tls_versions_on_nginx_and_openssl_servers_are_judged_by_what_they_negotiate() {
    if !have_servers() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let pki = Pki::new(dir);
    let legacy = "ssl_protocols TLSv1 TLSv1.1 TLSv1.2 TLSv1.3;";
    let shapes = [
        (
            "default suites",
            format!("{legacy} ssl_ciphers DEFAULT:@SECLEVEL=0;"),
            "fail",
        ),
        (
            "X25519 only",
            format!(
                "{legacy} ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-SHA:@SECLEVEL=0; ssl_ecdh_curve X25519;"
            ),
            "fail",
        ),
        (
            "RSA key exchange only",
            format!("{legacy} ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA:@SECLEVEL=0;"),
            "fail",
        ),
        (
            "TLS 1.2+ only",
            "ssl_protocols TLSv1.2 TLSv1.3;".to_owned(),
            "pass",
        ),
    ];
    let ports: Vec<u16> = shapes.iter().map(|_| free_port()).collect();
    let blocks: String = shapes
        .iter()
        .zip(&ports)
        .map(|((_, extra, _), port)| tls_block(&pki, *port, "good", extra))
        .collect();
    let _nginx = nginx(dir, &blocks, &ports);

    // DHE only, from OpenSSL's own server (TLS 1.3 on too, as a modern
    // client would find it).
    let dhe_port = free_port();
    let dhe_log = dir.join("s_server.log");
    let s_server = Command::new("openssl")
        .current_dir(dir)
        .args([
            "s_server",
            "-accept",
            &format!("127.0.0.1:{dhe_port}"),
            "-cert",
            &pki.path("good.pem"),
            "-key",
            &pki.path("good.key"),
            "-min_protocol",
            "TLSv1",
            "-cipher",
            "DHE-RSA-AES128-SHA:DHE-RSA-AES128-GCM-SHA256:@SECLEVEL=0",
            "-www",
            "-quiet",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&dhe_log).unwrap())
        .spawn()
        .expect("start openssl s_server");
    let _s_server = Server { child: s_server };
    wait_listening(&[dhe_port], "openssl s_server", &dhe_log);

    let mut all: Vec<(&str, u16, &str)> = shapes
        .iter()
        .zip(&ports)
        .map(|((name, _, want), port)| (*name, *port, *want))
        .collect();
    all.push(("DHE only (s_server)", dhe_port, "fail"));
    for (i, (shape, port, want)) in all.iter().enumerate() {
        let got = run(
            dir,
            &pki,
            &format!("versions{i}"),
            &format!("https://127.0.0.1:{port}"),
            PROTOCOL,
        );
        expect(&got, shape, "versions.modern", "pass");
        expect(&got, shape, "versions.no_tls10", want);
        expect(&got, shape, "versions.no_tls11", want);
        if *want == "fail" {
            let (_, m) = verdict(&got, "versions.no_tls10");
            assert!(m.contains("ServerHello for TLS 1.0"), "{shape}: {m}");
        } else {
            let (_, m) = verdict(&got, "versions.no_tls10");
            assert!(m.contains("protocol_version"), "{shape}: {m}");
        }
    }
}

#[test]
fn certificates_made_with_openssl_are_judged_and_a_bad_one_leaves_the_version_verdict() {
    if !have_servers() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let pki = Pki::new(dir);
    let modern = "ssl_protocols TLSv1.2 TLSv1.3;";
    // A 1024-bit key loads only below OpenSSL's default security level.
    let weak = "ssl_protocols TLSv1.2 TLSv1.3; ssl_ciphers DEFAULT:@SECLEVEL=0;";
    let shapes = [
        ("good", "good", modern),
        ("RSA-1024", "weak", weak),
        ("SHA-1 signature", "sha1", weak),
        ("expired", "expired", modern),
        ("another name", "other", modern),
    ];
    let ports: Vec<u16> = shapes.iter().map(|_| free_port()).collect();
    let blocks: String = shapes
        .iter()
        .zip(&ports)
        .map(|((_, cert, extra), port)| tls_block(&pki, *port, cert, extra))
        .collect();
    let _nginx = nginx(dir, &blocks, &ports);
    for (i, ((shape, _, _), port)) in shapes.iter().zip(&ports).enumerate() {
        let got = run(
            dir,
            &pki,
            &format!("cert{i}"),
            &format!("https://127.0.0.1:{port}"),
            &format!("{PROTOCOL}{CERTIFICATE}"),
        );
        // The version probe needs no trust: judged on every shape.
        for p in ["versions.modern", "versions.no_tls10", "versions.no_tls11"] {
            expect(&got, shape, p, "pass");
        }
        let (trusted, key, expiry) = match *shape {
            "good" => ("pass", "pass", "pass"),
            "RSA-1024" => ("fail", "warn", "pass"),
            "SHA-1 signature" => ("fail", "pass", "pass"),
            "expired" => ("fail", "pass", "fail"),
            _ => ("fail", "pass", "pass"),
        };
        expect(&got, shape, "cert.trusted", trusted);
        expect(&got, shape, "cert.key_strength", key);
        expect(&got, shape, "cert.not_expiring", expiry);
        if *shape == "RSA-1024" {
            let (_, m) = verdict(&got, "cert.key_strength");
            assert!(m.contains("RSA 1024"), "{m}");
        }
        if *shape == "expired" {
            let (_, m) = verdict(&got, "cert.trusted");
            assert!(m.contains("expired"), "{m}");
        }
        if *shape == "another name" {
            let (_, m) = verdict(&got, "cert.trusted");
            assert!(m.contains("not for this host name"), "{m}");
        }
    }
}

#[test]
fn plain_http_and_cors_grants_on_nginx_are_judged_on_every_url_and_origin_asked() {
    if !have_servers() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let pki = Pki::new(dir);
    let (https, clear_api, all_redirected, cors_null, cors_prefix, cors_exact) = (
        free_port(),
        free_port(),
        free_port(),
        free_port(),
        free_port(),
        free_port(),
    );
    let modern = "ssl_protocols TLSv1.2 TLSv1.3;";
    let cors = |map: &str| {
        format!(
            "{modern}\n    set $cors \"\";\n    {map}\n    \
             add_header Access-Control-Allow-Origin $cors always;\n    \
             add_header Access-Control-Allow-Credentials true always;"
        )
    };
    let blocks = format!(
        "{}{}{}{}\
         server {{ listen 127.0.0.1:{clear_api}; location = / {{ return 301 https://127.0.0.1:{https}/; }} \
         location / {{ return 200 '{{\"items\":[]}}'; }} }}\n\
         server {{ listen 127.0.0.1:{all_redirected}; location / {{ return 301 https://127.0.0.1:{https}$request_uri; }} }}\n",
        tls_block(&pki, https, "good", modern),
        tls_block(
            &pki,
            cors_null,
            "good",
            &cors("if ($http_origin = \"null\") { set $cors \"null\"; } if ($http_origin = \"https://app.example\") { set $cors $http_origin; }")
        ),
        tls_block(
            &pki,
            cors_prefix,
            "good",
            &cors("if ($http_origin ~ \"^https://app\\.example\") { set $cors $http_origin; }")
        ),
        tls_block(
            &pki,
            cors_exact,
            "good",
            &cors("if ($http_origin = \"https://app.example\") { set $cors $http_origin; }")
        ),
    );
    let _nginx = nginx(
        dir,
        &blocks,
        &[
            https,
            clear_api,
            all_redirected,
            cors_null,
            cors_prefix,
            cors_exact,
        ],
    );
    let redirect = |port: u16| {
        format!(
            "  - id: plain\n    kind: transport.https_redirect\n    path: /api/items\n    http_url: http://127.0.0.1:{port}/\n"
        )
    };
    let target = format!("https://127.0.0.1:{https}");
    let got = run(dir, &pki, "clear", &target, &redirect(clear_api));
    let (v, m) = verdict(&got, "plain.not_served");
    assert_eq!(
        v, "fail",
        "a redirected root hid the API served in clear: {m}"
    );
    assert!(m.contains("/api/items"), "{m}");
    let got = run(dir, &pki, "redirected", &target, &redirect(all_redirected));
    expect(&got, "all redirected", "plain.not_served", "pass");
    expect(&got, "all redirected", "plain.redirect", "pass");
    let (_, m) = verdict(&got, "plain.not_served");
    assert!(
        m.contains("/api/items") && m.contains(&format!("{all_redirected}/ ")),
        "both asked: {m}"
    );

    let cors_check = "  - id: cors\n    kind: transport.cors\n    request: { path: /a }\n    allowed_origin: https://app.example\n";
    for (shape, port, want) in [
        ("grants null", cors_null, "fail"),
        ("prefix match", cors_prefix, "fail"),
        ("exact list", cors_exact, "pass"),
    ] {
        let got = run(
            dir,
            &pki,
            &format!("cors{port}"),
            &format!("https://127.0.0.1:{port}"),
            cors_check,
        );
        expect(&got, shape, "cors.no_credentialed_reflection", want);
        expect(&got, shape, "cors.allowed_granted", "pass");
        if shape == "grants null" {
            let (_, m) = verdict(&got, "cors.no_credentialed_reflection");
            assert!(m.contains("`null`"), "{m}");
        }
        if shape == "prefix match" {
            let (_, m) = verdict(&got, "cors.no_credentialed_reflection");
            assert!(m.contains("app.example.evil.test"), "{m}");
        }
    }
}

#[test]
fn a_self_signed_certificate_made_with_openssl_req_x509_is_trusted_with_cacert() {
    if !have_servers() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The staging certificate of every tutorial: CA:TRUE, its own issuer.
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "self.key",
            "-out",
            "self.pem",
            "-days",
            "30",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
    );
    let pki = Pki {
        dir: dir.to_owned(),
    };
    // `run` trusts ca.pem: here that is the self-signed certificate itself.
    std::fs::copy(dir.join("self.pem"), dir.join("ca.pem")).unwrap();
    let port = free_port();
    // Also on 127.0.0.2, an address the certificate does not name.
    let block = tls_block(&pki, port, "self", "ssl_protocols TLSv1.2 TLSv1.3; add_header Strict-Transport-Security \"max-age=31536000; includeSubDomains\" always;")
        .replace(
            &format!("listen 127.0.0.1:{port} ssl;"),
            &format!("listen 127.0.0.1:{port} ssl; listen 127.0.0.2:{port} ssl;"),
        );
    let _nginx = nginx(dir, &block, &[port]);
    let checks = format!(
        "{CERTIFICATE}  - id: hsts\n    kind: transport.hsts\n    request: {{ path: /a }}\n"
    );
    let got = run(
        dir,
        &pki,
        "selfsigned",
        &format!("https://127.0.0.1:{port}"),
        &checks,
    );
    // The chain is trusted, and the probe's own client (reqwest) is served.
    expect(&got, "self-signed", "cert.trusted", "pass");
    expect(&got, "self-signed", "hsts.present", "pass");
    // The same certificate for another name is still refused.
    let got = run(
        dir,
        &pki,
        "byname",
        &format!("https://127.0.0.2:{port}"),
        CERTIFICATE,
    );
    let (v, m) = verdict(&got, "cert.trusted");
    assert_eq!(v, "fail", "{m}");
    assert!(m.contains("not for this host name"), "{m}");
}

#[test]
fn a_proxy_that_refuses_connect_is_quoted_with_whether_credentials_were_sent() {
    if !have_servers() {
        return;
    }
    let Some(tinyproxy) = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        if std::env::var_os("TMINUS_REQUIRE_REAL_SERVERS").is_some() {
            panic!("tinyproxy is required (apt-get install tinyproxy)");
        }
        eprintln!("skipped: tinyproxy missing (apt-get install tinyproxy)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let port = free_port();
    let conf = dir.join("tinyproxy.conf");
    std::fs::write(
        &conf,
        format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 30\nMaxClients 20\nBasicAuth user right-pw\n"
        ),
    )
    .unwrap();
    let log = dir.join("tinyproxy.log");
    let child = Command::new(tinyproxy)
        .args(["-d", "-c", conf.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tinyproxy");
    let _proxy = Server { child };
    wait_listening(&[port], "tinyproxy", &log);
    let pki_dir = dir.join("ref-pki");
    let reference = common::RefProcess::start(&["--tls", pki_dir.to_str().unwrap()]);
    let pki = Pki { dir: pki_dir };
    let checks = "  - id: hsts\n    kind: transport.hsts\n    request: { path: /public/v1/messages/count }\n";
    let suite = dir.join("proxied.yaml");
    std::fs::write(
        &suite,
        format!("suite: proxied\nversion: \"1\"\ntarget:\n  timeout: 5s\n  headers: {{ Authorization: \"Bearer ref_test_key_a\" }}\nchecks:\n{checks}"),
    )
    .unwrap();
    let run_via = |proxy: &str| {
        let out = tminus(
            dir,
            &[
                "run",
                suite.to_str().unwrap(),
                "--target",
                &reference.url,
                "--cacert",
                &pki.path("ca.pem"),
                "--proxy",
                proxy,
                "--report-dir",
                dir.join("r").to_str().unwrap(),
            ],
            &[],
            DEADLINE,
        );
        (
            out.status.code(),
            format!("{}{}", stdout(&out), stderr(&out)),
        )
    };
    let (code, out) = run_via(&format!("http://127.0.0.1:{port}"));
    assert_eq!(code, Some(3), "{out}");
    assert!(
        out.contains("407 Proxy Authentication Required")
            && out.contains("no proxy credentials were sent"),
        "{out}"
    );
    let (code, out) = run_via(&format!("http://user:wrong-pw@127.0.0.1:{port}"));
    assert_eq!(code, Some(3), "{out}");
    assert!(
        out.contains("refused CONNECT") && out.contains("proxy credentials were sent"),
        "{out}"
    );
    assert!(
        !out.contains("wrong-pw"),
        "the proxy password leaked: {out}"
    );
    let (code, out) = run_via(&format!("http://user:right-pw@127.0.0.1:{port}"));
    assert!(!out.contains("refused CONNECT"), "{out}");
    assert!(matches!(code, Some(0 | 1)), "{out}");
}
