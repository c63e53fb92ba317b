//! The HTML certification report as a browser shows it: a short suite runs
//! against the reference integration, then headless Chromium loads the
//! report from a local file and we assert on the text it rendered (the
//! checklist, what was certified, the skipped check and why, the sign-off
//! block) and that it prints to a PDF. Skipped, with a printed message, on a
//! machine without Chromium (Debian package `chromium`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{stderr, tminus, RefHandle};

/// `chromium` or `chromium-browser` on PATH, if any.
fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// Runs headless Chromium on a local file with a hard deadline (killing
/// only the process it started). Background services are off and every
/// host name resolves to nothing, so the browser touches no network.
fn chromium(bin: &Path, profile: &Path, args: &[String], deadline: Duration) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = cmd.spawn().expect("spawn chromium");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(out) => out.expect("wait chromium"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("chromium {args:?} did not finish within {deadline:?}");
        }
    }
}

/// The text a reader sees: the rendered DOM without its tags, styles and
/// entities, whitespace collapsed.
fn visible_text(dom: &str) -> String {
    let body = dom.split_once("<body").map_or(dom, |(_, b)| b);
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

const SUITE: &str = r#"suite: partner-cert
version: "3.2"
target:
  headers: { Authorization: "Bearer ref_test_key_a" }
checks:
  - id: idem-replay
    kind: idempotency.replay
    request: { method: POST, path: /public/v1/messages, json: { contact_id: 1, text: "replay ${uuid}" } }
    effects: { request: { path: /public/v1/messages/count }, value: $.count }
  - id: rate-limit-headers
    kind: rate_limit.headers
    requests:
      - { path: /public/v1/contacts }
  - id: teapot
    description: fails on purpose, so details open with a failure
    steps:
      - request: { path: /public/v1/contacts }
        expect: { status: 418 }
  - id: trace-id-present
    kind: trace.present
    request: { path: /public/v1/messages/count }
"#;

#[test]
fn a_browser_renders_the_certification_report() {
    let Some(bin) = find_chromium() else {
        println!("SKIPPED: chromium not found on PATH (install the Debian package `chromium`)");
        return;
    };
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("partner.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    // --fail-fast turns the check after the failure into a skipped one, so
    // the report has to say which check was skipped and why.
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            &reference.url,
            "--fail-fast",
        ],
        &[],
        Duration::from_secs(120),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = dir.path().join("reports/report.html");
    assert!(report.is_file(), "no HTML report: {}", stderr(&out));

    let profile = dir.path().join("chromium-profile");
    let url = format!("file://{}", report.display());
    let dom = chromium(
        &bin,
        &profile,
        &["--dump-dom".into(), url.clone()],
        Duration::from_secs(90),
    );
    assert!(
        dom.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let text = visible_text(&String::from_utf8_lossy(&dom.stdout));

    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not rendered in:\n{text}"))
    };
    // The page opens with the checklist, each point with its verdict and
    // counts (checks, passed, MUST failures, SHOULD warnings, errors, skipped).
    let order = [
        "Checklist",
        "1. Idempotency PASS 1 1 0 0 0 0",
        "2. Rate limits and backoff PASS 1 1 0 0 0 0",
        "3. Webhooks NOT COVERED 0 0 0 0 0 0",
        "4. Trace correlation SKIPPED 1 0 0 0 0 1",
        "Burst rehearsal NOT COVERED",
        "Other checks FAIL 1 0 1 0 0 0",
        "RFC 2119 MUST or SHOULD",
        "What was certified",
        "Skipped checks",
        "Details",
        "Sign-off",
        "Certified by",
        "Date",
        "Signature",
    ];
    for w in order.windows(2) {
        assert!(
            at(w[0]) < at(w[1]),
            "{:?} before {:?} in:\n{text}",
            w[0],
            w[1]
        );
    }
    // What was certified: the suite, its version and the file's SHA-256.
    use sha2::{Digest, Sha256};
    let digest = hex::encode(Sha256::digest(SUITE.as_bytes()));
    for s in [
        "partner-cert 3.2",
        digest.as_str(),
        concat!("tminus version ", env!("CARGO_PKG_VERSION")),
        reference.url.as_str(),
        "started",
        "ended",
    ] {
        at(s);
    }
    // The skipped check, with its reason, in the list of skipped checks.
    let skipped = &text[at("Skipped checks")..at("Details")];
    assert!(
        skipped.contains("partner-cert / trace-id-present (trace.present)")
            && skipped.contains("not run: --fail-fast stopped after partner-cert/teapot"),
        "{skipped}"
    );
    // Failures first in the details.
    assert!(at("fail teapot") < at("pass idem-replay"), "{text}");

    // Print: Chromium lays the page out with the print stylesheet.
    let pdf = dir.path().join("report.pdf");
    let printed = chromium(
        &bin,
        &profile,
        &[
            "--no-pdf-header-footer".into(),
            format!("--print-to-pdf={}", pdf.display()),
            url,
        ],
        Duration::from_secs(90),
    );
    let bytes = std::fs::read(&pdf)
        .unwrap_or_else(|e| panic!("no PDF ({e}): {}", String::from_utf8_lossy(&printed.stderr)));
    assert!(bytes.starts_with(b"%PDF-"), "not a PDF");
}
