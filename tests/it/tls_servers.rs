//! tminus's own servers over https (issue 25 item 1): the webhook sink, for
//! platforms that deliver only to https, and the mock upstream of the
//! `client.*` checks, for clients that refuse plain http, each serving the
//! certificate given with `--sink-cert`/`--upstream-cert` (a CA generated
//! for the test, rcgen). Real TLS on 127.0.0.1: a client that trusts the CA
//! is served, and the upstream's faults (a dropped connection) still work
//! inside TLS. Bad files are usage errors naming the option, never the key.

use crate::common;

use std::path::Path;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use tminus::http::tls::TlsFile;
use tminus::http::tls_server::{server_config, ServerTls};

struct Pki {
    ca_pem: String,
    cert: String,
    key: String,
}

/// A CA and a server certificate for 127.0.0.1 it issued, written to `dir`.
fn pki(dir: &Path) -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "tminus servers test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = leaf
        .signed_by(&key, &Issuer::from_params(&ca, &ca_key))
        .unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    Pki {
        ca_pem: ca_cert.pem(),
        cert: write("server.pem", &cert.pem()),
        key: write("server.key", &key.serialize_pem()),
    }
}

fn tls_of(p: &Pki) -> ServerTls {
    ServerTls(
        server_config(
            &TlsFile::new("--sink-cert", &p.cert),
            Some(&TlsFile::new("--sink-key", &p.key)),
        )
        .unwrap(),
    )
}

fn trusting(p: &Pki) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_certs_merge([reqwest::Certificate::from_pem(p.ca_pem.as_bytes()).unwrap()])
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_sink_serves_https_with_the_given_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let p = pki(dir.path());
    let at = tminus::sink::SinkEndpoint {
        tls: Some(tls_of(&p)),
        ..Default::default()
    };
    let sink = tminus::sink::Sink::start(vec![200], None, None, &at)
        .await
        .unwrap();
    assert!(
        sink.url().starts_with("https://127.0.0.1:"),
        "{}",
        sink.url()
    );
    let r = trusting(&p)
        .post(sink.url())
        .header("content-type", "application/json")
        .body(r#"{"type":"message.delivered"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let got = sink.wait_for(1, Duration::from_secs(5)).await;
    assert_eq!(got.len(), 1);
    // Plain http to the https sink is not a delivery.
    let plain = sink.url().replacen("https://", "http://", 1);
    assert!(reqwest::Client::new().post(&plain).send().await.is_err());
    // A client that does not trust the CA is refused by its own TLS.
    assert!(reqwest::Client::new()
        .post(sink.url())
        .send()
        .await
        .is_err());
    assert_eq!(sink.received().len(), 1);
    sink.shutdown().await;
}

#[tokio::test]
async fn the_mock_upstream_serves_https_and_its_faults_work_inside_tls() {
    use tminus::upstream::{Action, Reply, RouteScript, Script, Step, Upstream};
    let dir = tempfile::tempdir().unwrap();
    let p = pki(dir.path());
    let script = Script {
        routes: vec![RouteScript {
            method: Some("POST".into()),
            path: Some("/p".into()),
            steps: vec![Step::fault(Action::Close)],
            then: Step::reply(Reply::status(201)),
            rate_limit: None,
            inject: None,
        }],
        hang_cap: Some(Duration::from_secs(1)),
        herd: None,
    };
    let up = Upstream::start_with(script, None, 1 << 20, Some(tls_of(&p)))
        .await
        .unwrap();
    let url = format!("{}/p", up.client_url(1));
    assert!(url.starts_with("https://"), "{url}");
    let c = trusting(&p);
    assert!(
        c.post(&url).send().await.is_err(),
        "the close fault answers nothing"
    );
    assert_eq!(c.post(&url).send().await.unwrap().status(), 201);
    assert_eq!(up.attempt_count(1), 2);
    up.shutdown().await;
}

#[test]
fn bad_server_certificates_are_usage_errors_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let p = pki(dir.path());
    let secret =
        "-----BEGIN PRIVATE KEY-----\nSINKKEYMATERIALnotbase64!!\n-----END PRIVATE KEY-----\n";
    let bad_key = dir.path().join("bad.key");
    std::fs::write(&bad_key, secret).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--sink-cert", "/nonexistent/c.pem"],
            "--sink-cert: cannot read",
        ),
        (vec!["--sink-cert", &p.key], "no PEM certificate"),
        (vec!["--sink-cert", &p.cert], "no PEM private key"),
        (
            vec![
                "--sink-cert",
                &p.cert,
                "--sink-key",
                bad_key.to_str().unwrap(),
            ],
            "--sink-key",
        ),
        (
            vec![
                "--upstream-cert",
                &p.cert,
                "--upstream-key",
                bad_key.to_str().unwrap(),
            ],
            "--upstream-key",
        ),
    ];
    let suite = common::repo().join("suites/webhooks.yaml");
    for (flags, want) in cases {
        let mut args = vec!["run", suite.to_str().unwrap()];
        args.extend(flags.iter().copied());
        let out = common::tminus(dir.path(), &args, &[], Duration::from_secs(60));
        let text = format!("{}{}", common::stdout(&out), common::stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {text}");
        assert!(text.contains(want), "{flags:?}: `{want}` not said: {text}");
        assert!(
            !text.contains("SINKKEYMATERIAL"),
            "{flags:?}: the key is printed: {text}"
        );
    }
}
