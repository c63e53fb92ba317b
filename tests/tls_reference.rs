//! The shipped suites against the reference served over https (issue 25's
//! "done when"): behind a private CA given with `--cacert`, and with client
//! certificates required and given with `--cert`/`--key`. Every role goes
//! over TLS: the probe, the pre-opened race connections of
//! `idempotency.concurrent`, the connection `idempotency.lost_response`
//! drops, and the burst. A reference defect still fails its checks over
//! https, so the TLS path judges and does not only connect.

mod common;

use std::time::Duration;

use common::{
    not_passing, repo, run_with_json_within, stderr, stdout, verdicts, RefHandle, RefProcess,
};
use tminus::reference::Defect;

#[test]
fn the_shipped_suites_pass_over_https_behind_a_private_ca() {
    let pki = tempfile::tempdir().unwrap();
    let reference = RefProcess::start(&["--tls", pki.path().to_str().unwrap()]);
    assert!(
        reference.url.starts_with("https://127.0.0.1:"),
        "{}",
        reference.url
    );
    let ca = pki.path().join("ca.pem");
    assert!(std::fs::read_to_string(&ca)
        .unwrap()
        .contains("BEGIN CERTIFICATE"));

    let dir = tempfile::tempdir().unwrap();
    let (json, out) = run_with_json_within(
        dir.path(),
        &repo().join("suites"),
        &reference.url,
        &["--cacert", ca.to_str().unwrap()],
        &[],
        Duration::from_secs(600),
    );
    let v = verdicts(&json);
    assert!(v.len() > 50, "{} checks ran:\n{}", v.len(), stdout(&out));
    assert!(
        not_passing(&v).is_empty(),
        "not passing over https: {:?}\n{}\n{}",
        not_passing(&v),
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for kind in ["idem-concurrent", "idem-lost-response", "idem-in-flight"] {
        assert!(
            v.iter().any(|(id, _)| id.ends_with(kind)),
            "{kind} did not run"
        );
    }
}

fn run(url: &str, suite: &str, args: &[String]) -> (Vec<(String, String)>, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (json, out) = run_with_json_within(
        dir.path(),
        &repo().join(suite),
        url,
        &args,
        &[],
        Duration::from_secs(300),
    );
    (verdicts(&json), out)
}

#[test]
fn with_client_certificates_required_the_suites_pass_only_with_cert_and_key() {
    let (reference, pki) = RefHandle::start_tls(&[], true);
    assert!(reference.url.starts_with("https://"));
    for suite in ["suites/idempotency.yaml", "suites/burst.yaml"] {
        let (v, out) = run(
            &reference.url,
            suite,
            &RefHandle::tls_args(pki.path(), true),
        );
        assert!(!v.is_empty(), "{suite}: nothing ran");
        assert!(
            not_passing(&v).is_empty(),
            "{suite} over mutual TLS: {:?}\n{}",
            not_passing(&v),
            stdout(&out)
        );
        assert_eq!(out.status.code(), Some(0), "{suite}: {}", stderr(&out));
    }
    // Without the certificate: tminus could not do its job, and says why.
    let (v, out) = run(
        &reference.url,
        "suites/idempotency.yaml",
        &RefHandle::tls_args(pki.path(), false),
    );
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(v.iter().all(|(_, verdict)| verdict == "error"), "{v:?}");
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("requires a client certificate"), "{said}");
}

#[test]
fn a_race_defect_fails_the_race_checks_over_mutual_tls() {
    let (reference, pki) = RefHandle::start_tls(&[Defect::RaceExecutesTwice], true);
    let (v, out) = run(
        &reference.url,
        "suites/idempotency.yaml",
        &RefHandle::tls_args(pki.path(), true),
    );
    let verdict = |id: &str| {
        v.iter()
            .find(|(c, _)| c.ends_with(id))
            .map(|(_, v)| v.as_str())
    };
    // The pre-opened TLS connections released the copies together, and the
    // connection dropped over TLS left a retry to race the first attempt.
    assert_eq!(verdict("idem-concurrent"), Some("fail"), "{}", stdout(&out));
    assert_eq!(verdict("idem-in-flight"), Some("fail"), "{}", stdout(&out));
    assert_eq!(
        verdict("idem-lost-response"),
        Some("fail"),
        "{}",
        stdout(&out)
    );
    assert_eq!(verdict("idem-replay"), Some("pass"), "{}", stdout(&out));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

/// `transport.mtls_required` cannot judge a server it does not trust: a
/// handshake that fails on the server's certificate is not the server
/// refusing tminus's (a wrong PASS of refused_without), it is an error.
#[test]
fn an_untrusted_server_is_not_taken_for_one_refusing_the_client() {
    let (reference, pki) = RefHandle::start_tls(&[], true);
    let args = RefHandle::tls_args(pki.path(), true);
    // --cert and --key, but not --cacert.
    let (v, out) = run(
        &reference.url,
        "tests/suites/transport-mtls.yaml",
        &args[2..],
    );
    assert_eq!(
        v,
        [("transport-mtls/mtls".to_owned(), "error".to_owned())],
        "{}",
        stdout(&out)
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("unknown issuer"), "{said}");
}
