//! Client certificates as people make them (issue 37 item 3), each made with
//! the `openssl` command and presented to a real nginx that requires a
//! client certificate (`ssl_verify_client on`). The shapes that can work
//! are served; the ones that cannot are refused before anything is sent,
//! naming the file and the fix, never "builder error".
//!
//! | shape | expected |
//! |---|---|
//! | RSA key in PKCS#8, X.509 v3 | served |
//! | RSA key in PKCS#1 (`RSA PRIVATE KEY`), X.509 v1 | served |
//! | EC P-256 key in SEC1 (`EC PRIVATE KEY`), X.509 v3 | served |
//! | EC P-384 key in PKCS#8, X.509 v1, key and certificate in one file | served |
//! | Ed25519 key in PKCS#8, X.509 v3 | served |
//! | leaf then intermediate, in order | served |
//! | no client certificate (control) | refused by nginx (400) |
//! | encrypted key (PKCS#8 and OpenSSL's traditional) | error: encrypted |
//! | key of another certificate | error: does not belong |
//! | intermediate before leaf | error: wrong order |
//!
//! nginx and openssl are Debian's (`.ci/run` installs them and sets
//! TMINUS_REQUIRE_REAL_SERVERS=1, so CI never skips); elsewhere a missing
//! binary skips with a message.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::real_servers::{free_port, have_servers, make_ca, nginx, openssl, Server};
use common::{stderr, stdout, tminus};

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh")
        .current_dir(dir)
        .args(["-c", script])
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Signs `name.csr` with the CA into `name.pem`: X.509 v3 with a client
/// extension file, or v1 (what `openssl x509 -req` makes without one).
fn sign(dir: &Path, name: &str, ca: &str, v3: bool) {
    let csr = format!("{name}.csr");
    let pem = format!("{name}.pem");
    let ca_pem = format!("{ca}.pem");
    let ca_key = format!("{ca}.key");
    let mut args = vec![
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca_pem,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        &pem,
        "-days",
        "30",
    ];
    if v3 {
        args.extend(["-extfile", "client.ext"]);
    }
    openssl(dir, &args);
}

/// A client key made by `keygen` (a shell command writing `name.key`), its
/// request and its certificate signed by `ca`.
fn client(dir: &Path, name: &str, keygen: &str, ca: &str, v3: bool) {
    sh(dir, &keygen.replace("KEY", &format!("{name}.key")));
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    sign(dir, name, ca, v3);
}

/// The CA, an intermediate, the server's certificate and every client shape.
fn make_pki(dir: &Path) {
    make_ca(dir, "tminus client-cert CA");
    std::fs::write(
        dir.join("client.ext"),
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("inter.ext"),
        "basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign,cRLSign\n",
    )
    .unwrap();
    let rsa = "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out KEY";
    client(dir, "server", rsa, "ca", false);
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-out",
            "server.pem",
            "-days",
            "30",
            "-extfile",
            "server.ext",
        ],
    );
    client(dir, "rsa-pkcs8-v3", rsa, "ca", true);
    client(
        dir,
        "rsa-pkcs1-v1",
        "openssl genrsa -traditional -out KEY 2048",
        "ca",
        false,
    );
    client(
        dir,
        "ec-sec1-v3",
        "openssl ecparam -genkey -name prime256v1 -out KEY",
        "ca",
        true,
    );
    client(
        dir,
        "ec384-pkcs8-v1",
        "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out KEY",
        "ca",
        false,
    );
    sh(
        dir,
        "cat ec384-pkcs8-v1.pem ec384-pkcs8-v1.key > ec384-combined.pem",
    );
    client(
        dir,
        "ed25519-v3",
        "openssl genpkey -algorithm ed25519 -out KEY",
        "ca",
        true,
    );
    // An intermediate CA, and a leaf it issued.
    client(dir, "inter", rsa, "ca", false);
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "inter.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-out",
            "inter.pem",
            "-days",
            "30",
            "-extfile",
            "inter.ext",
        ],
    );
    client(dir, "leaf", rsa, "inter", true);
    sh(dir, "cat leaf.pem inter.pem > chain-ordered.pem");
    sh(dir, "cat inter.pem leaf.pem > chain-reversed.pem");
    // The broken shapes.
    openssl(
        dir,
        &[
            "pkey",
            "-in",
            "rsa-pkcs8-v3.key",
            "-aes256",
            "-passout",
            "pass:hunter2",
            "-out",
            "encrypted-pkcs8.key",
        ],
    );
    openssl(
        dir,
        &[
            "rsa",
            "-in",
            "rsa-pkcs8-v3.key",
            "-traditional",
            "-aes128",
            "-passout",
            "pass:hunter2",
            "-out",
            "encrypted-traditional.key",
        ],
    );
}

fn assert_version(dir: &Path, pem: &str, version: &str) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(["x509", "-in", pem, "-noout", "-text"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("Version: {version}")),
        "{pem} is not X.509 v{version}:\n{text}"
    );
}

/// nginx requiring a client certificate issued under ca.pem (two levels).
fn nginx_requiring_certs(dir: &Path, port: u16) -> Server {
    let d = dir.display();
    nginx(
        dir,
        &format!(
            "  server {{\n    listen 127.0.0.1:{port} ssl;\n    ssl_certificate {d}/server.pem;\n    \
             ssl_certificate_key {d}/server.key;\n    ssl_client_certificate {d}/ca.pem;\n    \
             ssl_verify_client on;\n    ssl_verify_depth 3;\n    \
             location / {{ default_type application/json; return 200 '{{\"verify\":\"$ssl_client_verify\"}}'; }}\n  }}\n"
        ),
        &[port],
    )
}

/// Runs a one-request suite against nginx with `cert` and `key` (files in
/// `dir`; `None` for none).
fn run(dir: &Path, port: u16, cert: Option<&str>, key: Option<&str>) -> Output {
    let suite = dir.join("mtls.yaml");
    std::fs::write(
        &suite,
        "suite: client-cert\nversion: \"1\"\ntarget:\n  timeout: 5s\nchecks:\n  - id: verified\n    steps:\n      - name: get\n        request: { method: GET, path: /who }\n        expect: { status: 200, json: { $.verify: { equals: SUCCESS } } }\n",
    )
    .unwrap();
    let target = format!("https://127.0.0.1:{port}");
    let ca = dir.join("ca.pem");
    let mut args = vec![
        "run",
        suite.to_str().unwrap(),
        "--target",
        &target,
        "--cacert",
        ca.to_str().unwrap(),
        "--report-dir",
        dir.to_str().unwrap(),
    ];
    let cert = cert.map(|c| dir.join(c).to_str().unwrap().to_owned());
    let key = key.map(|k| dir.join(k).to_str().unwrap().to_owned());
    if let Some(c) = &cert {
        args.extend(["--cert", c.as_str()]);
    }
    if let Some(k) = &key {
        args.extend(["--key", k.as_str()]);
    }
    tminus(dir, &args, &[], Duration::from_secs(60))
}

#[test]
fn client_certificates_made_with_openssl_connect_or_fail_with_the_named_cause() {
    if !have_servers() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    make_pki(dir);
    assert_version(dir, "rsa-pkcs1-v1.pem", "1");
    assert_version(dir, "ec384-pkcs8-v1.pem", "1");
    assert_version(dir, "rsa-pkcs8-v3.pem", "3");
    let port = free_port();
    let _nginx = nginx_requiring_certs(dir, port);

    // The control: nginx really requires a certificate.
    let out = run(dir, port, None, None);
    assert_eq!(
        out.status.code(),
        Some(1),
        "without a certificate nginx must refuse:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );

    let served: [(&str, &str, Option<&str>); 6] = [
        (
            "RSA PKCS#8 v3",
            "rsa-pkcs8-v3.pem",
            Some("rsa-pkcs8-v3.key"),
        ),
        (
            "RSA PKCS#1 v1",
            "rsa-pkcs1-v1.pem",
            Some("rsa-pkcs1-v1.key"),
        ),
        ("EC SEC1 v3", "ec-sec1-v3.pem", Some("ec-sec1-v3.key")),
        ("EC P-384 PKCS#8 v1, one file", "ec384-combined.pem", None),
        ("Ed25519 v3", "ed25519-v3.pem", Some("ed25519-v3.key")),
        (
            "leaf then intermediate",
            "chain-ordered.pem",
            Some("leaf.key"),
        ),
    ];
    for (shape, cert, key) in served {
        let out = run(dir, port, Some(cert), key);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{shape}: not served:\n{}\n{}",
            stdout(&out),
            stderr(&out)
        );
    }

    let refused: [(&str, &str, &str, &str, &str); 4] = [
        (
            "encrypted PKCS#8",
            "rsa-pkcs8-v3.pem",
            "encrypted-pkcs8.key",
            "encrypted-pkcs8.key: the private key is encrypted",
            "openssl pkey",
        ),
        (
            "encrypted traditional",
            "rsa-pkcs8-v3.pem",
            "encrypted-traditional.key",
            "encrypted-traditional.key: the private key is encrypted",
            "openssl pkey",
        ),
        (
            "key of another certificate",
            "rsa-pkcs8-v3.pem",
            "ec-sec1-v3.key",
            "does not belong to the certificate",
            "rsa-pkcs8-v3.pem",
        ),
        (
            "intermediate before leaf",
            "chain-reversed.pem",
            "leaf.key",
            "chain-reversed.pem: the chain is in the wrong order",
            "must come",
        ),
    ];
    for (shape, cert, key, cause, fix) in refused {
        let out = run(dir, port, Some(cert), Some(key));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{shape}: {err}");
        assert!(err.contains(cause), "{shape}: {err}");
        assert!(err.contains(fix), "{shape}: {err}");
        assert!(!err.contains("builder error"), "{shape}: {err}");
        assert!(!err.contains("hunter2"), "{shape}: {err}");
    }
}
