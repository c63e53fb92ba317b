//! Client certification (issue 5) beyond its defect table (which is in
//! `tests/serial/defects.rs`): a broken client command gives an error within its
//! timeout and leaves no process behind, and `tminus reference` lists and
//! refuses client defects.

use crate::common;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::*;

/// True when a process whose command line holds `marker` is still alive.
fn process_alive(marker: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(|e| e.ok()).any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(marker)
            })
            .unwrap_or(false)
    })
}

fn run_broken(dir: &Path, argv: &str) -> (String, String, Duration) {
    let suite = dir.join("broken.yaml");
    std::fs::write(
        &suite,
        format!(
            "suite: broken-client\ntarget: {{ base_url: \"http://127.0.0.1:9\" }}\nchecks:\n  - id: c\n    kind: client.respects_retry_after\n    client: {{ argv: {argv}, timeout: 2s }}\n"
        ),
    )
    .unwrap();
    let json = dir.join("r.json");
    let started = Instant::now();
    let out = tminus(
        dir,
        &[
            "run",
            suite.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(30),
    );
    let took = started.elapsed();
    let v = verdicts(&json);
    let report = std::fs::read_to_string(&json).unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    (v[0].1.clone(), report, took)
}

#[test]
fn broken_client_commands_are_errors_within_the_timeout_and_leave_nothing_behind() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let (v, report, took) = run_broken(d, "[\"/nonexistent/tminus-client-xyz\"]");
    assert_eq!(v, "error", "{report}");
    assert!(
        report.contains("cannot start the client command"),
        "{report}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");

    let (v, report, _) = run_broken(d, "[sh, -c, \"echo boom >&2; exit 3\"]");
    assert_eq!(v, "error", "{report}");
    assert!(
        report.contains("sent no request")
            && report.contains("status 3")
            && report.contains("boom"),
        "{report}"
    );

    // A hanging client that also started a child: both must be gone.
    let marker = format!("91.{}", std::process::id());
    let (v, report, took) =
        run_broken(d, &format!("[sh, -c, \"sleep {marker} & sleep {marker}\"]"));
    assert_eq!(v, "error", "{report}");
    assert!(report.contains("timeout"), "{report}");
    assert!(
        took < Duration::from_secs(10),
        "hang was not cut at the 2 s timeout: {took:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !process_alive(&format!("sleep {marker}")),
        "a client process survived the check"
    );
}

#[test]
fn reference_subcommand_and_defect_listing() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let out = tminus(
        dir.path(),
        &["reference", "--list-defects"],
        &[],
        Duration::from_secs(10),
    );
    let text = stdout(&out);
    let client_section = text
        .split("client defects")
        .nth(1)
        .expect("a client section");
    assert!(client_section.contains("client-no-jitter"), "{text}");
    assert!(
        !text
            .split("client defects")
            .next()
            .unwrap()
            .contains("client-no-jitter"),
        "{text}"
    );
    let out = tminus(
        dir.path(),
        &["reference", "--defect", "client-no-key"],
        &[],
        Duration::from_secs(10),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("reference client"),
        "{}",
        stderr(&out)
    );
    // Nothing listens on port 9: the reference client gives up visibly.
    let out = tminus(
        dir.path(),
        &[
            "reference",
            "client",
            "--url",
            "http://127.0.0.1:9",
            "--max-attempts",
            "2",
            "--base-delay",
            "10ms",
        ],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("giving up after 2 attempts"),
        "{}",
        stderr(&out)
    );
}

/// Runs `checks` (YAML list items) as one suite; returns the verdicts and
/// the JSON report text.
fn run_checks(dir: &Path, checks: &str) -> (Vec<(String, String)>, String, Output) {
    let suite = dir.join("s.yaml");
    std::fs::write(
        &suite,
        format!("suite: reach\ntarget: {{ base_url: \"http://127.0.0.1:9\" }}\nchecks:\n{checks}"),
    )
    .unwrap();
    let json = dir.join("r.json");
    let out = tminus(
        dir,
        &[
            "run",
            suite.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    let report = std::fs::read_to_string(&json).unwrap_or_default();
    let v = if json.exists() {
        verdicts(&json)
    } else {
        Vec::new()
    };
    (v, report, out)
}

// Issue 13: a client that takes its URL as an argument needs no `bash -c`
// wrapper. `url_env` names a variable the reference client does not read, so
// only the argv can have told it where the upstream is.
#[test]
fn upstream_placeholders_reach_the_client_argv_and_env() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let (v, report, out) = run_checks(
        dir.path(),
        "  - id: by-url\n    kind: client.respects_retry_after\n    client:\n      argv: [\"${var.tminus_exe}\", reference, client, --url, \"${upstream.url}\", --base-delay, 10ms]\n      url_env: UNUSED_UPSTREAM\n      timeout: 15s\n\
         \x20 - id: by-host-port\n    kind: client.no_retry_on_4xx\n    statuses: [422]\n    client:\n      argv: [\"${var.tminus_exe}\", reference, client]\n      env: { TMINUS_UPSTREAM_URL: \"http://${upstream.host}:${upstream.port}\" }\n      url_env: UNUSED_UPSTREAM\n      timeout: 15s\n",
    );
    assert_eq!(
        v,
        vec![
            ("reach/by-url".to_owned(), "pass".to_owned()),
            ("reach/by-host-port".to_owned(), "pass".to_owned())
        ],
        "{report}\n{}",
        stderr(&out)
    );
}

#[test]
fn upstream_placeholders_elsewhere_are_positioned_errors() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let (_, _, out) = run_checks(
        dir.path(),
        "  - id: a\n    steps:\n      - request: { path: \"/x?u=${upstream.url}\" }\n\
         \x20 - id: j\n    kind: client.jitter\n    client: { argv: [x, \"${upstream.host}\"] }\n\
         \x20 - id: c\n    kind: client.bounded\n    max_total: 1s\n    client: { argv: [x], cwd: \"${upstream.url}\" }\n",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("s.yaml:6:") && err.contains("only known in a client check"),
        "{err}"
    );
    assert!(
        err.contains("use `${upstream.url}`, not `${upstream.host}`"),
        "{err}"
    );
    assert_eq!(
        err.matches("only known in a client check").count(),
        2,
        "{err}"
    );
}

// Issue 13: the default scenarios judge the client on its own operation. The
// shipped suite, with the reference client posting to /v1/customers instead of
// /public/v1/messages and not one `upstream:` rewritten, passes every kind.
#[test]
fn default_scenarios_judge_a_client_on_its_own_path() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let shipped = std::fs::read_to_string(repo().join("suites/client-certification.yaml")).unwrap();
    let moved = shipped.replace(
        "reference, client,",
        "reference, client, --path, /v1/customers,",
    );
    assert_eq!(
        moved.matches("--path, /v1/customers").count(),
        shipped.matches("reference, client,").count()
    );
    let checks = moved.split_once("checks:\n").unwrap().1;
    let (v, report, out) = run_checks(dir.path(), checks);
    assert!(!v.is_empty(), "{}", stderr(&out));
    let kinds: std::collections::BTreeSet<&str> = checks
        .lines()
        .filter_map(|l| l.trim().strip_prefix("kind: "))
        .collect();
    assert_eq!(kinds.len(), 12, "every client kind is exercised: {kinds:?}");
    assert!(
        not_passing(&v).is_empty(),
        "{:?}\n{report}",
        not_passing(&v)
    );

    // `match:` narrows the scenario: narrowed to another path, the same
    // client meets only unscripted 404s and cannot be judged a pass.
    let (v, report, _) = run_checks(
        dir.path(),
        "  - id: narrowed\n    kind: client.respects_retry_after\n    match: { method: POST, path: /public/v1/messages }\n    client: { argv: [\"${var.tminus_exe}\", reference, client, --path, /v1/customers], timeout: 15s }\n",
    );
    assert_ne!(v[0].1, "pass", "{report}");
    assert!(report.contains("POST /v1/customers -> 404"), "{report}");
}

// `client.no_retry_on_4xx` and `client.retry_503_policy` take `upstream:` like
// the other kinds; the judge reads the 4xx or 503 from what was answered.
#[test]
fn no_retry_and_503_policy_take_a_scripted_upstream() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let client = "    client: { argv: [\"${var.tminus_exe}\", reference, client, --path, /v1/customers, --base-delay, 20ms], timeout: 15s }\n";
    let checks = format!(
        "  - id: no-retry\n    kind: client.no_retry_on_4xx\n{client}    upstream: {{ routes: [{{ path: /v1/customers, responses: [{{ status: 409 }}, {{ status: 422 }}] }}] }}\n\
         \x20 - id: policy\n    kind: client.retry_503_policy\n{client}    upstream: {{ routes: [{{ path: /v1/customers, responses: [{{ status: 503, retry_after: 1s }}] }}] }}\n\
         \x20 - id: blind\n    kind: client.retry_503_policy\n    policy: never\n{client}    upstream: {{ routes: [{{ path: /v1/customers, responses: [{{ status: 503, retry_after: 1s }}] }}] }}\n\
         \x20 - id: unexercised\n    kind: client.no_retry_on_4xx\n{client}    upstream: {{ routes: [{{ path: /v1/customers, responses: [] }}] }}\n"
    );
    let (v, report, out) = run_checks(dir.path(), &checks);
    let got: Vec<(&str, &str)> = v.iter().map(|(i, v)| (i.as_str(), v.as_str())).collect();
    assert_eq!(
        got,
        vec![
            ("reach/no-retry", "pass"),
            ("reach/policy", "pass"),
            ("reach/blind", "fail"),
            ("reach/unexercised", "error"),
        ],
        "{report}\n{}",
        stderr(&out)
    );
}

// Issue 12: the official Stripe SDK for Node reuses its key on every retry,
// but the key is `stripe-node-retry-<uuid4>`, not a UUIDv4. A client that
// does the same passes every MUST of `client.idempotency_keys` and gets a
// warning (exit 0) for the SHOULD `key_format`, not one FAIL for the check.
#[test]
fn a_stripe_style_key_warns_on_format_only() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let client = r#"
import os, sys, time, uuid, urllib.request, urllib.error
url = os.environ["TMINUS_UPSTREAM_URL"] + "/v1/customers"
key = "stripe-node-retry-" + str(uuid.uuid4())
for attempt in range(6):
    req = urllib.request.Request(url, data=b'{"email":"a@example.com"}', method="POST",
        headers={"Idempotency-Key": key, "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=5)
        sys.exit(0)
    except urllib.error.HTTPError as e:
        wait = float(e.headers.get("Retry-After") or 0.1)
    except Exception:
        wait = 0.1
    time.sleep(wait)
sys.exit(1)
"#;
    let (v, report, out) = run_checks(
        dir.path(),
        &format!(
            // The format asked for is BOTIX's (the `botix` profile's default;
            // `standard` asks for none).
            "  - id: keys\n    kind: client.idempotency_keys\n    key_format: uuidv4-or-ulid\n    client: {{ argv: [python3, -c, {}], timeout: 15s }}\n",
            serde_json::to_string(client).unwrap()
        ),
    );
    assert_eq!(out.status.code(), Some(0), "{report}\n{}", stderr(&out));
    assert_eq!(
        v,
        vec![("reach/keys".to_owned(), "warn".to_owned())],
        "{report}"
    );
    let json: serde_json::Value = serde_json::from_str(&report).unwrap();
    let got: Vec<(String, String)> = json["suites"][0]["checks"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["property"].as_str().unwrap().to_owned(),
                a["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("key_present", "pass"),
        ("key_reused", "pass"),
        ("body_unchanged", "pass"),
        ("key_distinct", "skipped"),
        ("key_format", "warn"),
    ]
    .iter()
    .map(|(p, v)| (p.to_string(), v.to_string()))
    .collect();
    assert_eq!(got, want, "{report}");
}
