//! tminus against a hostile target (issue "Hostile targets"): a raw HTTP
//! server on 127.0.0.1:0 that sends endless bodies, reflects what it was sent
//! (secrets included, in every encoding), and writes terminal escapes. Each
//! test names the item of the issue it pins (issue 24's as "Issue 24 item N").

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use common::{stderr, stdout, tminus};

const DEADLINE: Duration = Duration::from_secs(60);

/// A request as the hostile server read it.
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
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
    Some(Seen {
        line: line.trim_end().to_owned(),
        headers,
        body,
    })
}

/// Serves `handler` on 127.0.0.1:0 (a thread per connection, for the life
/// of the test process) and returns the base URL.
fn serve(handler: fn(&Seen, &mut TcpStream)) -> String {
    serve_on("127.0.0.1:0", handler)
}

/// `serve` on any loopback address, with a handler that may hold state.
fn serve_on(addr: &str, handler: impl Fn(&Seen, &mut TcpStream) + Send + Sync + 'static) -> String {
    let l = TcpListener::bind(addr).unwrap();
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

fn respond(s: &mut TcpStream, extra_headers: &str, body: &[u8]) {
    respond_status(s, "200 OK", extra_headers.as_bytes(), body);
}

/// `respond` with another status, and header bytes that need not be ASCII.
fn respond_status(s: &mut TcpStream, status: &str, extra_headers: &[u8], body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(extra_headers);
    let _ = s.write_all(b"\r\n");
    let _ = s.write_all(body);
}

/// Asserts the exit code, showing stderr when it differs; returns stderr.
fn exits(out: &std::process::Output, code: i32) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    err
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

/// Item 7: an endless chunked body stops at the cap; the check is an error
/// naming the cap, and the run ends in bounded time.
#[test]
fn an_endless_body_stops_at_the_cap() {
    let url = serve(|_, s| {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n",
        );
        let chunk = vec![b'a'; 64 * 1024];
        let started = Instant::now();
        // Bounded: at most 60 s or 1 GiB, and it stops when tminus hangs up.
        for _ in 0..16 * 1024 {
            if started.elapsed() > Duration::from_secs(60) {
                break;
            }
            let head = format!("{:x}\r\n", chunk.len());
            if s.write_all(head.as_bytes()).is_err()
                || s.write_all(&chunk).is_err()
                || s.write_all(b"\r\n").is_err()
            {
                break;
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "endless.yaml",
        "suite: endless\nchecks:\n  - id: endless-body\n    steps:\n      - request: { path: /x, timeout: 30s }\n        expect: { status: 200 }\n",
    );
    let started = Instant::now();
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &url],
        &[],
        DEADLINE,
    );
    let err = exits(&out, 3);
    assert!(err.contains("8 MiB cap"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// Item 8: tminus asks for no compression and inflates nothing on its own.
#[test]
fn no_accept_encoding_unless_the_suite_sets_one() {
    let url = serve(|seen, s| {
        let ae = seen
            .headers
            .iter()
            .find(|(k, _)| k == "accept-encoding")
            .map_or("none", |(_, v)| v.as_str())
            .to_owned();
        respond(
            s,
            "Content-Type: text/plain\r\n",
            format!("ae={ae}").as_bytes(),
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "ae.yaml",
        "suite: ae\nchecks:\n  - id: plain\n    steps:\n      - request: { path: /x }\n        expect: { status: 200, body_contains: \"ae=none\" }\n  - id: asked\n    steps:\n      - request: { path: /x, headers: { Accept-Encoding: br } }\n        expect: { status: 200, body_contains: \"ae=br\" }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &url],
        &[],
        DEADLINE,
    );
    exits(&out, 0);
}

/// The forms a secret can take when a target reflects it.
fn forms(secret: &str) -> Vec<(&'static str, String)> {
    let json = serde_json::to_string(secret).unwrap();
    let json = json[1..json.len() - 1].to_owned();
    let pct: String = secret
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("bob:{secret}"));
    let head: String = secret.chars().take(secret.chars().count() - 1).collect();
    let pct_head: String = pct.chars().take(10).collect();
    vec![
        ("percent-encoded, cut", pct_head),
        ("raw", secret.to_owned()),
        ("json-escaped", json),
        ("percent-encoded", pct),
        ("base64", b64),
        ("basic-credential", basic),
        ("cut-off head", head),
    ]
}

/// Items 1 and 2: the secret in a header, a query, a body and a Basic
/// credential; the target reflects the whole request (in its body and in a
/// header) and the check fails, so everything reaches every output.
#[test]
fn a_reflected_secret_never_appears_in_any_form() {
    let url = serve(|seen, s| {
        if seen.line.contains("/close") {
            // A transport error whose message quotes the request line.
            return;
        }
        let mut echo = format!("{}\n", seen.line);
        for (k, v) in &seen.headers {
            echo.push_str(&format!("{k}: {v}\n"));
        }
        echo.push_str(&String::from_utf8_lossy(&seen.body));
        // Also JSON-escaped, and a reflected request id holding it.
        let json = serde_json::to_string(&echo).unwrap();
        let reflected = seen
            .headers
            .iter()
            .find(|(k, _)| k == "x-token")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        // The query string (percent-encoded secrets first) placed across
        // the 200-character cut of a failure message and the 400-character
        // cut of the evidence excerpt.
        let query = seen.line.split_once('?').map_or("", |(_, q)| q);
        let query = query.split(' ').next().unwrap_or("");
        let head = "{\"p\":\"";
        // 12 characters of each secret copy fall before the cut.
        let first = 200 - 12 - head.len() - "a=".len();
        let second = (400 - 12 - "a=".len()).saturating_sub(head.len() + first + query.len());
        let body = format!(
            "{head}{}{query}{}{query}\",\"echo\":{json}}}",
            "p".repeat(first),
            "q".repeat(second)
        );
        respond(
            s,
            &format!("Content-Type: application/json\r\nX-Request-Id: {reflected}\r\n"),
            body.as_bytes(),
        );
    });
    // Header values must be visible ASCII, so the unicode secret travels in
    // the query and the body only.
    let ascii = "ZQX+/=?&#%\"q\\u sp ace";
    let unicode = "ключ-секрет+/=?&# 42";
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("bob:{ascii}"));
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "leak.yaml",
        "suite: leak\ntarget:\n  headers: { X-Token: \"${secret.HOSTILE_ASCII}\", Authorization: \"Basic ${secret.HOSTILE_BASIC}\" }\nchecks:\n  - id: reflects-everything\n    steps:\n      - request: { method: POST, path: /echo, query: { q: \"${secret.HOSTILE_UNICODE}\", a: \"${secret.HOSTILE_ASCII}\" }, json: { s: \"${secret.HOSTILE_UNICODE}\", t: \"${secret.HOSTILE_ASCII}\" } }\n        expect: { status: 200, body_contains: \"never there\" }\n  - id: transport-error\n    steps:\n      - request: { path: /close, query: { q: \"${secret.HOSTILE_ASCII}\" } }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &url],
        &[
            ("HOSTILE_ASCII", ascii),
            ("HOSTILE_UNICODE", unicode),
            ("HOSTILE_BASIC", &basic),
        ],
        DEADLINE,
    );
    exits(&out, 3);
    let reports = dir.path().join("reports");
    let outputs = [
        ("stdout", stdout(&out)),
        ("stderr", stderr(&out)),
        (
            "junit",
            std::fs::read_to_string(reports.join("junit.xml")).unwrap(),
        ),
        (
            "json",
            std::fs::read_to_string(reports.join("report.json")).unwrap(),
        ),
        (
            "html",
            std::fs::read_to_string(reports.join("report.html")).unwrap(),
        ),
    ];
    assert!(outputs[4].1.contains("reflects-everything"));
    if std::env::var_os("HOSTILE_SHOW").is_some() {
        eprintln!("{}", outputs[1].1);
    }
    for (name, text) in &outputs {
        for (form, value) in forms(ascii).into_iter().chain(forms(unicode)) {
            assert!(
                !text.contains(&value),
                "the secret leaked {form} ({value:?}) in {name}:\n{text}"
            );
        }
    }
}

/// Item 3: a password in the target URL is never printed.
#[test]
fn a_password_in_the_target_url_is_never_printed() {
    let url = serve(|_, s| respond(s, "", b"{}"));
    let with_pw = url.replace("http://", "http://bob:pw-in-the-url-42@");
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "pw.yaml",
        "suite: pw\nchecks:\n  - id: fails\n    steps:\n      - request: { path: /x }\n        expect: { status: 201 }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &with_pw],
        &[],
        DEADLINE,
    );
    exits(&out, 1);
    let reports = dir.path().join("reports");
    for (name, text) in [
        ("stdout", stdout(&out)),
        ("stderr", stderr(&out)),
        (
            "junit",
            std::fs::read_to_string(reports.join("junit.xml")).unwrap(),
        ),
        (
            "json",
            std::fs::read_to_string(reports.join("report.json")).unwrap(),
        ),
        (
            "html",
            std::fs::read_to_string(reports.join("report.html")).unwrap(),
        ),
    ] {
        assert!(
            !text.contains("pw-in-the-url-42"),
            "leaked in {name}:\n{text}"
        );
    }
}

/// A server on 127.0.0.2 ("another host") that counts what reaches it and
/// remembers whether any request carried credentials.
fn other_host() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let url = serve_on("127.0.0.2:0", move |r, s| {
        let creds: Vec<String> = r
            .headers
            .iter()
            .filter(|(k, _)| k == "authorization" || k == "x-api-key")
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        log.lock()
            .unwrap()
            .push(format!("{} {}", r.line, creds.join("; ")));
        respond(s, "", b"{}");
    });
    (url, seen)
}

/// Item 5: credentials set for the target never go to another host: not
/// with an absolute `url:`, not through a redirect, and the load client
/// follows no redirect at all.
#[test]
fn credentials_and_load_never_follow_to_another_host() {
    let (other, seen) = other_host();
    // The target redirects everything to the other host.
    let to = other.clone();
    let target = serve_on("127.0.0.1:0", move |_, s| {
        let head = format!(
            "HTTP/1.1 302 Found\r\nLocation: {to}/landed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let _ = s.write_all(head.as_bytes());
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "cross.yaml",
        &format!(
            "suite: cross\ntarget:\n  headers: {{ Authorization: \"Bearer ${{secret.CROSS_KEY}}\", X-Api-Key: \"${{secret.CROSS_KEY}}\" }}\nchecks:\n  - id: absolute-elsewhere\n    steps:\n      - request: {{ url: \"{other}/absolute\" }}\n        expect: {{ status: 200 }}\n  - id: redirected\n    steps:\n      - request: {{ path: /start }}\n        expect: {{ status: 302 }}\nload:\n  id: burst\n  users: 2\n  hatch_rate: 10\n  iterations: 5\n  max_rate: 50/s\n  requests:\n    - name: start\n      request: {{ path: /start }}\n      success: 302\n"
        ),
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &target],
        &[("CROSS_KEY", "cross-host-key-123456")],
        DEADLINE,
    );
    exits(&out, 0);
    let seen = seen.lock().unwrap().clone();
    // Only the explicit absolute request reached the other host, without
    // credentials; neither the probe nor the burst followed the redirect.
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].starts_with("GET /absolute"), "{seen:?}");
    assert!(!seen[0].contains("cross-host-key"), "{seen:?}");
}

/// Item 4: the loopback guard covers every destination of a burst, not
/// only `target.base_url`. Nothing is sent (the host does not resolve).
#[test]
fn load_to_an_absolute_url_elsewhere_is_refused() {
    let target = serve(|_, s| respond(s, "", b"{}"));
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "elsewhere.yaml",
        "suite: elsewhere\nload:\n  id: burst\n  users: 1\n  hatch_rate: 1\n  iterations: 3\n  max_rate: 10/s\n  requests:\n    - name: away\n      request: { url: \"http://tminus-not-here.invalid:9/x\" }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &target],
        &[],
        DEADLINE,
    );
    let err = exits(&out, 3);
    assert!(
        err.contains("refusing to send load to http://tminus-not-here.invalid:9/x"),
        "{err}"
    );
}

/// Item 6: a high-volume probe (here a 429 storm of up to 5,000 requests)
/// is load too: refused for a non-loopback target without
/// --allow-remote-load. Nothing is sent (the host does not resolve).
#[test]
fn a_high_volume_probe_to_a_remote_host_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "storm.yaml",
        "suite: storm\nchecks:\n  - id: storm\n    kind: rate_limit.storm\n    request: { path: /x }\n    concurrency: 64\n    max_requests: 5000\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", "http://tminus-remote.invalid:9"],
        &[],
        DEADLINE,
    );
    let err = exits(&out, 3);
    assert!(
        err.contains("refusing to send up to 5000 requests"),
        "{err}"
    );
}

/// Item 12: an unwritable report folder is found before anything is sent.
#[test]
fn unwritable_reports_stop_the_run_before_anything_is_sent() {
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = hits.clone();
    let url = serve_on("127.0.0.1:0", move |_, s| {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        respond(s, "", b"{}");
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "s.yaml",
        "suite: s\nchecks:\n  - id: a\n    steps:\n      - request: { path: /x }\n",
    );
    // A file where the report folder should be: nothing can be created in it.
    let blocker = write(dir.path(), "blocked", "not a folder");
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &url, "--report-dir", &blocker],
        &[],
        DEADLINE,
    );
    let err = exits(&out, 3);
    assert!(err.contains("blocked"), "{err}");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0, "{err}");
}

/// Item 14: outputs may not overwrite each other or an input suite.
#[test]
fn overlapping_outputs_and_inputs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "s.yaml",
        "suite: s\nchecks:\n  - id: a\n    steps:\n      - request: { path: /x }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--junit", "r/x", "--json", "r/x"],
        &[],
        DEADLINE,
    );
    exits(&out, 2);
    assert!(
        stderr(&out).contains("--junit and --json both write"),
        "{}",
        stderr(&out)
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--json", &suite],
        &[],
        DEADLINE,
    );
    exits(&out, 2);
    assert!(
        stderr(&out).contains("would overwrite the suite"),
        "{}",
        stderr(&out)
    );
    assert!(std::fs::read_to_string(&suite)
        .unwrap()
        .starts_with("suite: s"));
}

/// Item 11: a target's terminal escapes (clear screen, OSC 52 clipboard
/// write, a CR that overwrites the line with a fake PASS) reach neither the
/// console nor the HTML report raw.
#[test]
fn terminal_escapes_from_a_target_are_shown_not_obeyed() {
    let url = serve(|_, s| {
        respond(
            s,
            "Content-Type: text/plain\r\n",
            b"boom\x1b[2J\x1b]52;c;ZXZpbA==\x07\r  PASS  everything-is-fine\n  PASS  other",
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "esc.yaml",
        "suite: esc\nchecks:\n  - id: escapes\n    steps:\n      - request: { path: /x }\n        expect: { status: 200, body_contains: \"never\" }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &url],
        &[],
        DEADLINE,
    );
    exits(&out, 1);
    let html = std::fs::read_to_string(dir.path().join("reports/report.html")).unwrap();
    for (name, text) in [
        ("stderr", stderr(&out)),
        ("stdout", stdout(&out)),
        ("html", html),
    ] {
        assert!(!text.contains('\x1b'), "ESC in {name}: {text:?}");
        assert!(!text.contains('\x07'), "BEL in {name}: {text:?}");
        assert!(!text.contains('\r'), "CR in {name}: {text:?}");
        if name != "html" {
            assert!(
                !text.contains("\n  PASS  other"),
                "a fake result line in {name}: {text:?}"
            );
        }
    }
}

/// The secret matrix's client path: a client handed a secret in its
/// environment prints it (raw and base64) to stderr and fails; the stderr
/// tail tminus shows as evidence never holds it.
#[test]
fn a_client_printing_its_secret_leaks_nothing() {
    let secret = "client-secret-+/=?&#%-0123456789";
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "client.yaml",
        "suite: client\nchecks:\n  - id: noisy-client\n    kind: client.no_retry_on_4xx\n    client:\n      argv: [sh, -c, 'printf \"%s\\n\" \"$CLIENT_KEY\" >&2; printf \"%s\" \"$CLIENT_KEY\" | base64 >&2; printf \"%s%01488d\" \"$CLIENT_KEY\" 0 >&2; exit 3']\n      env: { CLIENT_KEY: \"${secret.CLIENT_SECRET}\" }\n      timeout: 5s\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite],
        &[("CLIENT_SECRET", secret)],
        DEADLINE,
    );
    assert!(
        matches!(out.status.code(), Some(1) | Some(3)),
        "{}",
        stderr(&out)
    );
    if std::env::var_os("HOSTILE_SHOW").is_some() {
        eprintln!("{}", stderr(&out));
    }
    let reports = dir.path().join("reports");
    for (name, text) in [
        ("stdout", stdout(&out)),
        ("stderr", stderr(&out)),
        (
            "junit",
            std::fs::read_to_string(reports.join("junit.xml")).unwrap(),
        ),
        (
            "json",
            std::fs::read_to_string(reports.join("report.json")).unwrap(),
        ),
        (
            "html",
            std::fs::read_to_string(reports.join("report.html")).unwrap(),
        ),
    ] {
        for (form, value) in forms(secret) {
            assert!(!text.contains(&value), "leaked {form} in {name}:\n{text}");
        }
        // The tail kept from the end of stderr starts 12 characters before
        // the secret's end: that piece is masked too.
        let tail: String = secret.chars().skip(secret.chars().count() - 12).collect();
        assert!(
            !text.contains(&tail),
            "leaked the cut tail in {name}:\n{text}"
        );
    }
}

/// The secret matrix's load path: a burst with a secret header against a
/// target whose URL carries a password; no load file holds either.
#[test]
fn load_files_hold_no_secret() {
    let url = serve(|seen, s| {
        let echo = format!("{} {:?}", seen.line, seen.headers);
        respond(s, "", echo.as_bytes())
    });
    let with_pw = url.replace("http://", "http://bob:load-pw-0123456789@");
    let secret = "load-secret-+/=?&#%-987654321";
    let dir = tempfile::tempdir().unwrap();
    let suite = write(
        dir.path(),
        "burst.yaml",
        "suite: burst\ntarget:\n  headers: { X-Key: \"${secret.LOAD_SECRET}\" }\nload:\n  id: b\n  users: 2\n  hatch_rate: 10\n  iterations: 5\n  max_rate: 50/s\n  requests:\n    - name: echo\n      request: { path: \"/echo\", query: { k: \"${secret.LOAD_SECRET}\" } }\n",
    );
    let out = tminus(
        dir.path(),
        &["run", &suite, "--target", &with_pw],
        &[("LOAD_SECRET", secret)],
        DEADLINE,
    );
    exits(&out, 0);
    let reports = dir.path().join("reports");
    let mut seen_files = 0;
    for entry in std::fs::read_dir(&reports).unwrap() {
        let p = entry.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        seen_files += 1;
        assert!(
            !text.contains("load-pw-0123456789"),
            "password in {}",
            p.display()
        );
        for (form, value) in forms(secret) {
            assert!(
                !text.contains(&value),
                "leaked {form} in {}:\n{text}",
                p.display()
            );
        }
    }
    assert!(
        seen_files >= 6,
        "expected the load files too, saw {seen_files}"
    );
}

/// Item 17: output into a closed pipe ends quietly, without a panic.
#[test]
fn a_closed_pipe_is_not_a_panic() {
    use std::process::{Command, Stdio};
    for args in [&["checks"][..], &["reference", "--list-defects"][..]] {
        let mut child = Command::new(common::bin())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then close our end, as `| head -c1` would.
        let mut first = [0u8; 1];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    }
}

// ---- Issue 24 (hostile targets, round 2), items 9-12: secrets in every
// path, and reports CI can parse.

/// Writes `yaml` as `name` in `dir` and runs it against `url`.
fn run_against(
    dir: &Path,
    name: &str,
    yaml: &str,
    url: &str,
    envs: &[(&str, &str)],
) -> std::process::Output {
    let suite = write(dir, name, yaml);
    tminus(dir, &["run", &suite, "--target", url], envs, DEADLINE)
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

/// Issue 24 item 9: a `whsec_` secret's decoded key, echoed by a hostile receiver raw,
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
    let url = serve_on("127.0.0.1:0", move |_, s| {
        respond_status(
            s,
            "500 Internal Server Error",
            id.as_bytes(),
            echo.as_bytes(),
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let out = run_against(dir.path(), "whsec.yaml", "suite: whsec\nchecks:\n  - id: echoes-the-key\n    kind: webhook.accepts_valid\n    receiver: /hook\n    scheme: standard\n    secret: \"${secret.WHSEC}\"\n", &url, &[("WHSEC", &whsec)]);
    exits(&out, 1);
    let all = outputs(dir.path(), &out);
    // The echo reached the reports (masked), so the check is not vacuous.
    assert!(all[2].1.contains("decoded key=[REDACTED]"), "{}", all[2].1);
    assert_absent(&all, &forms);

    // Written inline (not through `${secret.X}`), and with a custom scheme
    // whose secret is hex: the decoded key is registered too.
    let out = run_against(dir.path(), "hexkey.yaml", &format!("suite: hexkey\nchecks:\n  - id: echoes-the-key\n    kind: webhook.accepts_valid\n    receiver: /hook\n    scheme: custom\n    custom: {{ signature_header: X-Sig, content: \"{{body}}\", secret_encoding: hex }}\n    secret: \"{hex}\"\n"), &url, &[]);
    exits(&out, 1);
    let all = outputs(dir.path(), &out);
    assert!(all[2].1.contains("decoded key=[REDACTED]"), "{}", all[2].1);
    assert_absent(&all, &forms);
}

/// Issue 24 item 10: plan and usage errors built from secrets go through the
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

/// Issue 24 item 11: a secret holding quotes and an apostrophe, reflected by the
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
        respond_status(s, "500 Internal Server Error", id.as_bytes(), b"no");
    });
    let dir = tempfile::tempdir().unwrap();
    let out = run_against(dir.path(), "quoted.yaml", "suite: quoted\nchecks:\n  - id: reflects-the-token\n    kind: webhook.accepts_valid\n    receiver: /hook\n    scheme: github\n    secret: \"receiver-secret-value\"\n    headers: { X-Token: \"${secret.QUOTED}\" }\n", &url, &[("QUOTED", secret)]);
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

/// Issue 24 item 12: non-characters (U+FFFE, U+FFFF, U+FDD0) in a header and a body
/// and an unterminated `ESC ]` in a body: `junit.xml` stays well-formed, each
/// is shown as a visible escape, and the evidence after the `ESC ]` is kept.
#[test]
fn junit_stays_well_formed_and_keeps_the_evidence() {
    let url = serve(|_, s| {
        respond_status(
            s,
            "200 OK",
            "Content-Type: text/plain\r\nX-Request-Id: id-\u{FFFF}-\u{FFFE}-end\r\n".as_bytes(),
            "before \u{FFFE}\u{FFFF}\u{FDD0}\u{1FFFF} \u{1b}]0;title evidence-after-osc \u{85}\u{9b}2J tail-kept"
                .as_bytes(),
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let out = run_against(dir.path(), "xml.yaml", "suite: xml\nchecks:\n  - id: non-characters\n    steps:\n      - request: { path: /x }\n        expect: { status: 201 }\n", &url, &[]);
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
