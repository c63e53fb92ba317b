//! The shipped suites against the reference served over https (issue 25's
//! "done when"): behind a private CA given with `--cacert`, and with client
//! certificates required and given with `--cert`/`--key`. Every role goes
//! over TLS: the probe, the pre-opened race connections of
//! `idempotency.concurrent`, the connection `idempotency.lost_response`
//! drops, and the burst. A reference defect still fails its checks over
//! https, so the TLS path judges and does not only connect. The run of
//! every shipped suite behind a private CA judges burst latency and lives in
//! tests/serial/thresholds.rs, with the suites over mutual TLS.

use crate::common;

use std::time::Duration;

use common::{repo, run_with_json_within, stderr, stdout, verdicts, RefHandle};
use tminus::reference::Defect;

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
    let (v, out) = run(&reference.url, "suites/transport-mtls.yaml", &args[2..]);
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
