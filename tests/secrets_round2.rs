//! Hostile targets, round 2 (issue 24), items 9-12: secrets in every path
//! and reports CI can parse. A raw HTTP server on 127.0.0.1:0 echoes what a
//! hostile receiver could echo; each test names the item it pins.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use base64::Engine;
use common::{stderr, stdout, tminus};

const DEADLINE: Duration = Duration::from_secs(60);

/// A request as the hostile server read it.
struct Seen {
    headers: Vec<(String, String)>,
}

fn read_request(s: &mut TcpStream) -> Option<Seen> {
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len.min(1 << 20)];
    r.read_exact(&mut body).ok()?;
    Some(Seen { headers })
}

/// Serves `handler` on 127.0.0.1:0 (a thread per connection, for the life
/// of the test process) and returns the base URL.
fn serve(handler: impl Fn(&Seen, &mut TcpStream) + Send + Sync + 'static) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let handler = std::sync::Arc::new(handler);
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let handler = handler.clone();
            std::thread::spawn(move || {
                if let Some(seen) = read_request(&mut s) {
                    handler(&seen, &mut s);
                }
            });
        }
    });
    url
}

fn respond(s: &mut TcpStream, status: &str, extra_headers: &[u8], body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(extra_headers);
    let _ = s.write_all(b"\r\n");
    let _ = s.write_all(body);
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

/// Asserts the exit code, showing stderr when it differs; returns stderr.
fn exits(out: &std::process::Output, code: i32) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    err
}

/// Every output of a run: stdout, stderr and the three reports.
fn outputs(dir: &Path, out: &std::process::Output) -> Vec<(&'static str, String)> {
    let reports = dir.join("reports");
    let read = |f: &str| std::fs::read_to_string(reports.join(f)).unwrap();
    vec![
        ("stdout", stdout(out)),
        ("stderr", stderr(out)),
        ("junit", read("junit.xml")),
        ("json", read("report.json")),
        ("html", read("report.html")),
    ]
}

fn assert_absent(outputs: &[(&str, String)], forms: &[(&str, String)]) {
    for (name, text) in outputs {
        for (form, value) in forms {
            assert!(
                !text.contains(value.as_str()),
                "the secret leaked as {form} ({value:?}) in {name}:\n{text}"
            );
        }
    }
}

/// Item 9: a `whsec_` secret's decoded key, echoed by a hostile receiver raw,
/// in hex and in base64 (with and without padding, URL-safe), is masked in
/// every output, not only the `whsec_...` string itself.
#[test]
fn a_whsec_key_echoed_by_the_receiver_is_masked_in_every_form() {
    let key = "hostile-receiver-key+/?>~~";
    let b64 = base64::engine::general_purpose::STANDARD;
    let whsec = format!("whsec_{}", b64.encode(key));
    let hex = key.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    let forms = vec![
        ("decoded key", key.to_owned()),
        ("hex", hex.clone()),
        ("HEX", hex.to_uppercase()),
        ("base64", b64.encode(key)),
        (
            "base64 url-safe, no pad",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key),
        ),
    ];
    let echo = forms
        .iter()
        .map(|(f, v)| format!("{f}={v}\n"))
        .collect::<String>();
    let id = format!("X-Request-Id: {hex}\r\n");
    let url = serve(move |_, s| {
        respond(
            s,
            "500 Internal Server Error",
            id.as_bytes(),
            echo.as_bytes(),
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "whsec.yaml",
        "suite: whsec\nchecks:\n  - id: echoes-the-key\n    kind: webhook.accepts_valid\n    receiver: /hook\n    scheme: standard\n    secret: \"${secret.WHSEC}\"\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &url],
        &[("WHSEC", &whsec)],
        DEADLINE,
    );
    exits(&out, 1);
    let all = outputs(dir.path(), &out);
    // The echo reached the reports (masked), so the check is not vacuous.
    assert!(all[2].1.contains("decoded key=[REDACTED]"), "{}", all[2].1);
    assert_absent(&all, &forms);

    // Written inline (not through `${secret.X}`), and with a custom scheme
    // whose secret is hex: the decoded key is registered too.
    let suite = write(
        dir.path(),
        "hexkey.yaml",
        &format!("suite: hexkey\nchecks:\n  - id: echoes-the-key\n    kind: webhook.accepts_valid\n    receiver: /hook\n    scheme: custom\n    custom: {{ signature_header: X-Sig, content: \"{{body}}\", secret_encoding: hex }}\n    secret: \"{hex}\"\n"),
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &url],
        &[],
        DEADLINE,
    );
    exits(&out, 1);
    let all = outputs(dir.path(), &out);
    assert!(all[2].1.contains("decoded key=[REDACTED]"), "{}", all[2].1);
    assert_absent(&all, &forms);
}

/// Item 10: plan and usage errors built from secrets go through the
/// redactor: a `${secret.X}` base_url that does not parse, a secret in a
/// header name and in a request URL, `--target user:pw@host` without a
/// scheme, and a `--sink-url` with a password.
#[test]
fn plan_and_usage_errors_never_print_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "plan.yaml",
        "suite: plan\ntarget:\n  base_url: \"${secret.BASE}\"\n  headers: { \"${secret.HNAME}\": x }\nchecks:\n  - id: a\n    steps:\n      - request: { url: \"${secret.URL}\" }\n",
    );
    let envs = [
        ("BASE", "htps//base-secret-host-4711.example"),
        ("HNAME", "X-Header Secret-0815-abc"),
        ("URL", "ftp://url-secret-host-1234.example/x"),
    ];
    for cmd in ["validate", "run"] {
        let out = tminus(dir.path(), &[cmd, &suite], &envs, DEADLINE);
        let err = exits(&out, 2);
        for want in ["base_url", "header name", "url `"] {
            assert!(err.contains(want), "{cmd}: no `{want}` in\n{err}");
        }
        for (_, secret) in envs {
            for piece in secret.split(' ').chain(secret.split('/')) {
                if piece.len() >= 8 {
                    assert!(!err.contains(piece), "{cmd}: leaked {piece:?}:\n{err}");
                }
            }
        }
        assert!(err.contains("[REDACTED]"), "{err}");
    }

    let ok = write(
        dir.path(),
        "ok.yaml",
        "suite: ok\nchecks:\n  - id: a\n    steps:\n      - request: { path: /x }\n",
    );
    for args in [
        vec!["run", &ok, "--target", "bob:pw-no-scheme-4242@127.0.0.1:9"],
        vec![
            "run",
            &ok,
            "--sink-listen",
            "127.0.0.1:9099",
            "--sink-url",
            "http://bob:sink-pw-4242@127.0.0.1:9099/?q",
        ],
    ] {
        let out = tminus(dir.path(), &args, &[], DEADLINE);
        let err = exits(&out, 2);
        assert!(err.contains("[REDACTED]"), "{args:?}: {err}");
        assert!(
            !err.contains("pw-no-scheme-4242") && !err.contains("sink-pw-4242"),
            "{args:?}: {err}"
        );
    }
}

/// Item 11: a secret holding quotes and an apostrophe, reflected by the
/// target in its request id, reaches no output in any escaped form (the
/// console quotes ids with `escape_debug`, which writes `\'` and `\"`).
#[test]
fn a_quoted_secret_reflected_in_an_id_is_masked() {
    let secret = "it's \"quoted\" qs-sEcReT-7777";
    let url = serve(|seen, s| {
        let token = seen
            .headers
            .iter()
            .find(|(k, _)| k == "x-token")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let id = format!("X-Request-Id: {token}\r\n");
        respond(s, "500 Internal Server Error", id.as_bytes(), b"no");
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "quoted.yaml",
        "suite: quoted\nchecks:\n  - id: reflects-the-token\n    kind: webhook.accepts_valid\n    receiver: /hook\n    scheme: github\n    secret: \"receiver-secret-value\"\n    headers: { X-Token: \"${secret.QUOTED}\" }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &url],
        &[("QUOTED", secret)],
        DEADLINE,
    );
    let err = exits(&out, 1);
    assert!(err.contains("x-request-id: [REDACTED]"), "{err}");
    let all = outputs(dir.path(), &out);
    assert_absent(
        &all,
        &[
            ("raw", secret.to_owned()),
            ("escape_debug", secret.escape_debug().to_string()),
            ("debug", format!("{secret:?}")),
            ("its tail", "qs-sEcReT-7777".to_owned()),
        ],
    );
}

/// Item 12: non-characters (U+FFFE, U+FFFF, U+FDD0) in a header and a body
/// and an unterminated `ESC ]` in a body: `junit.xml` stays well-formed, each
/// is shown as a visible escape, and the evidence after the `ESC ]` is kept.
#[test]
fn junit_stays_well_formed_and_keeps_the_evidence() {
    let url = serve(|_, s| {
        respond(
            s,
            "200 OK",
            "Content-Type: text/plain\r\nX-Request-Id: id-\u{FFFF}-\u{FFFE}-end\r\n".as_bytes(),
            "before \u{FFFE}\u{FFFF}\u{FDD0}\u{1FFFF} \u{1b}]0;title evidence-after-osc \u{85}\u{9b}2J tail-kept"
                .as_bytes(),
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "xml.yaml",
        "suite: xml\nchecks:\n  - id: non-characters\n    steps:\n      - request: { path: /x }\n        expect: { status: 201 }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &url],
        &[],
        DEADLINE,
    );
    exits(&out, 1);
    let xml = std::fs::read_to_string(dir.path().join("reports/junit.xml")).unwrap();
    if let Err(e) = roxmltree::Document::parse(&xml) {
        panic!("junit.xml is not well-formed XML: {e}\n{xml}");
    }
    for bad in [
        '\u{FFFE}',
        '\u{FFFF}',
        '\u{FDD0}',
        '\u{1FFFF}',
        '\u{1b}',
        '\u{85}',
        '\u{9b}',
    ] {
        assert!(!xml.contains(bad), "{bad:?} in junit.xml:\n{xml}");
    }
    for want in [
        "\\u{fffe}\\u{ffff}\\u{fdd0}\\u{1ffff}",
        "\\u{1b}]0;title evidence-after-osc",
        "\\u{85}\\u{9b}2J tail-kept",
        "id-\\u{ffff}-\\u{fffe}-end",
    ] {
        assert!(xml.contains(want), "no `{want}` in junit.xml:\n{xml}");
    }
}
