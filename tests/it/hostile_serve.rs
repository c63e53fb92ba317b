//! `tminus serve`'s HTTP API under attack (issue 44): a real server
//! process, raw sockets where a client library would be too polite. Every
//! answer comes within a stated time and size, and no hostile call starts
//! a run (the reports folder holds one `run-N` folder per run started).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "hostile-serve-token-0123456789";
/// tminus serve's head and body timeouts (`serve::listen`).
const CUT: Duration = Duration::from_secs(10);

struct Serve {
    child: Child,
    addr: String,
    dir: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn start(extra: &[&str]) -> Serve {
        let dir = tempfile::tempdir().unwrap();
        let suites = dir.path().join("suites");
        std::fs::create_dir(&suites).unwrap();
        // A request to a target that accepts and never answers: the run
        // lasts until its request timeout.
        for name in ["gate.yaml", "other.yaml"] {
            std::fs::write(
                suites.join(name),
                "suite: gate\ntarget: { timeout: 20s }\nchecks:\n  - id: health\n    steps:\n      - request: { path: /healthz }\n        expect: { status: 200 }\n",
            )
            .unwrap();
        }
        std::fs::write(dir.path().join("secret.yaml"), "suite: s\nchecks: []\n").unwrap();
        std::os::unix::fs::symlink("../secret.yaml", suites.join("out.yaml")).unwrap();
        let mut child = Command::new(common::bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--suites"])
            .arg(&suites)
            .arg("--reports")
            .arg(dir.path().join("reports"))
            .args(extra)
            .env(tminus::serve::TOKEN_ENV, TOKEN)
            .env_remove("GITHUB_STEP_SUMMARY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn tminus serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("tminus serve: listening on http://")
            .unwrap_or_else(|| panic!("serve printed `{line}`"))
            .to_owned();
        Serve { child, addr, dir }
    }

    fn runs_started(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.dir.path().join("reports"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("run-"))
            .collect()
    }

    /// The server's peak resident memory, in KiB (Linux).
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(CUT * 2)).unwrap();
        s
    }

    /// Sends `raw` and reads the answer (at most 64 KiB): (status, text, time).
    fn raw(&self, raw: &[u8]) -> (u16, String, Duration) {
        let started = Instant::now();
        let mut s = self.connect();
        // The server may answer (413, 431) and close before all is sent.
        let _ = s.write_all(raw);
        let text = read_answer(&mut s);
        (status_of(&text), text, started.elapsed())
    }

    fn post(&self, path: &str, bearer: bool, body: &str) -> (u16, String, Duration) {
        let auth = if bearer {
            format!("authorization: Bearer {TOKEN}\r\n")
        } else {
            String::new()
        };
        self.raw(
            format!(
                "POST {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\n{auth}content-length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    }
}

fn read_answer(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let _ = s.take(64 << 10).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

fn status_of(text: &str) -> u16 {
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn payload(name: &str, meta: serde_json::Value) -> String {
    serde_json::json!({"name": name, "namespace": "test", "phase": "Progressing", "metadata": meta})
        .to_string()
}

/// A target that accepts connections and never answers (held open).
fn silent_target() -> (std::net::TcpListener, String) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    (l, url)
}

#[test]
fn slow_heads_and_bodies_are_cut_and_idle_floods_answered_at_once() {
    let s = Serve::start(&[]);
    let started = Instant::now();
    // Slowloris: a connection that sends nothing, one that trickles its
    // head a byte at a time, one that trickles its body.
    let mut idle = s.connect();
    let head = s.connect();
    let body = s.connect();
    let trickle = |mut c: TcpStream, bytes: Vec<u8>| {
        std::thread::spawn(move || {
            for b in bytes {
                if c.write_all(&[b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let endless_head = b"POST /flagger/pre-rollout HTTP/1.1\r\nhost: x\r\n".repeat(40);
    let mut head_reader = head.try_clone().unwrap();
    let t1 = trickle(head, endless_head);
    let mut body_head = body.try_clone().unwrap();
    body_head
        .write_all(
            format!("POST /flagger/pre-rollout HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\ncontent-length: 1000\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    let mut body_reader = body.try_clone().unwrap();
    let t2 = trickle(body, vec![b' '; 1000]);

    // More idle connections than serve holds at once: the one past them is
    // answered 503 at once, never queued.
    let flood: Vec<TcpStream> = (0..256).map(|_| s.connect()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let (status, text, took) = s.post("/flagger/pre-rollout", true, "{}");
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("most connections at once"), "{text}");
    assert!(took < Duration::from_secs(2), "{took:?}");

    let closed = |c: &mut TcpStream, what: &str| {
        let text = read_answer(c);
        let at = started.elapsed();
        assert!(
            at < CUT + Duration::from_secs(5),
            "{what}: held {at:?}, past the {CUT:?} cut: {text}"
        );
        text
    };
    let text = closed(&mut idle, "a connection that sends nothing");
    assert!(text.is_empty() || status_of(&text) == 408, "{text}");
    let text = closed(&mut head_reader, "a head trickled a byte at a time");
    assert!(text.is_empty() || status_of(&text) == 408, "{text}");
    let text = closed(&mut body_reader, "a body trickled a byte at a time");
    assert_eq!(status_of(&text), 408, "{text}");
    assert!(text.contains("nothing was started"), "{text}");
    eprintln!(
        "slow calls cut {:?} after they began; serve's peak memory {} KiB",
        started.elapsed(),
        s.peak_kib()
    );
    assert!(s.peak_kib() < 64 << 10, "{} KiB", s.peak_kib());
    drop(flood);
    t1.join().unwrap();
    t2.join().unwrap();
    // The flood ended, the server serves again.
    let (status, _, _) = s.raw(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    assert_eq!(status, 200);
    assert!(s.runs_started().is_empty(), "{:?}", s.runs_started());
}

#[test]
fn oversized_malformed_and_unknown_calls_are_answered_at_once() {
    let s = Serve::start(&[]);
    let quick = |(status, text, took): (u16, String, Duration), want: u16, what: &str| {
        assert_eq!(status, want, "{what}: {text}");
        assert!(took < Duration::from_secs(3), "{what}: {took:?}");
        assert!(text.len() < 4096, "{what}: {} bytes", text.len());
        text
    };
    // A head past 64 KiB.
    let big = format!(
        "GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(100 << 10)
    );
    quick(s.raw(big.as_bytes()), 431, "a 100 KiB header");
    // A body declared past 64 KiB is refused before it is read; one sent
    // chunked (no length) is cut at the limit; a million keys is 8 MB.
    let declared = format!(
        "POST /flagger/pre-rollout HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\ncontent-length: 100000000\r\n\r\n{{"
    );
    quick(s.raw(declared.as_bytes()), 413, "a body declared 100 MB");
    let mut keys = String::from("{");
    for i in 0..1_000_000 {
        keys.push_str(&format!("\"k{i}\":1,"));
    }
    keys.push_str("\"name\":\"x\"}");
    let chunked = format!(
        "POST /flagger/pre-rollout HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN}\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{keys}\r\n0\r\n\r\n",
        keys.len()
    );
    quick(s.raw(chunked.as_bytes()), 413, "a million keys, chunked");
    eprintln!("serve's peak memory {} KiB", s.peak_kib());
    assert!(s.peak_kib() < 64 << 10, "{} KiB", s.peak_kib());
    // Malformed JSON and nesting past serde_json's 128 levels: 400 with
    // the token, 401 without (the body's token is unreadable).
    let t = quick(
        s.post("/flagger/pre-rollout", true, "{\"name\": "),
        400,
        "JSON cut short",
    );
    assert!(t.contains("not a Flagger webhook payload"), "{t}");
    let deep = format!(
        "{{\"name\":\"p\",\"namespace\":\"t\",\"metadata\":{{\"a\":{}{}}}}}",
        "[".repeat(30_000),
        "]".repeat(30_000)
    );
    let t = quick(
        s.post("/flagger/rollout", true, &deep),
        400,
        "nesting 30,000 deep",
    );
    assert!(t.contains("recursion limit"), "{t}");
    quick(
        s.post("/flagger/rollout", false, &deep),
        401,
        "nesting, no token",
    );
    // An unknown hook, with and without the token.
    let meta = serde_json::json!({"target": "http://127.0.0.1:9", "token": TOKEN});
    let t = quick(
        s.post("/flagger/drop-tables", false, &payload("p", meta)),
        404,
        "unknown hook",
    );
    assert!(t.contains("no hook `drop-tables`"), "{t}");
    let meta = serde_json::json!({"target": "http://127.0.0.1:9"});
    quick(
        s.post("/flagger/drop-tables", false, &payload("p", meta)),
        401,
        "unknown hook, no token",
    );
    // A wrong token of every length, and none.
    for wrong in ["", "h", &TOKEN[..TOKEN.len() - 1], &format!("{TOKEN}x")] {
        let meta = serde_json::json!({"target": "http://127.0.0.1:9", "token": wrong});
        quick(
            s.post("/flagger/pre-rollout", false, &payload("p", meta)),
            401,
            "a wrong token",
        );
    }
    let argo = format!(
        "GET /argo/test/p?target=http://127.0.0.1:9 HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer {TOKEN}0\r\n\r\n"
    );
    quick(s.raw(argo.as_bytes()), 401, "Argo, a wrong bearer");
    assert!(s.runs_started().is_empty(), "{:?}", s.runs_started());
}

#[test]
fn targets_and_suites_outside_what_serve_allows_start_nothing() {
    let s = Serve::start(&["--allow-target", "http://127.0.0.1:*"]);
    let meta = |target: &str, suites: &str| {
        payload(
            "p",
            serde_json::json!({"target": target, "suites": suites, "token": TOKEN}),
        )
    };
    for target in [
        "http://127.0.0.2:80",
        "https://127.0.0.1:443",
        "http://localhost:80",
    ] {
        let (status, text, _) = s.post("/flagger/pre-rollout", false, &meta(target, "gate.yaml"));
        assert_eq!(status, 403, "{target}: {text}");
        assert!(text.contains("--allow-target"), "{text}");
    }
    let argo = format!(
        "GET /argo/test/p?target=http://10.0.0.1/ HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer {TOKEN}\r\n\r\n"
    );
    let (status, text, _) = s.raw(argo.as_bytes());
    assert_eq!(status, 403, "{text}");
    for suites in [
        "../secret.yaml",
        "/etc/passwd",
        "out.yaml",
        "gate.yaml,out.yaml",
    ] {
        let (status, text, _) = s.post(
            "/flagger/pre-rollout",
            false,
            &meta("http://127.0.0.1:9", suites),
        );
        assert_eq!(status, 400, "{suites}: {text}");
        assert!(text.contains("suite `"), "{text}");
    }
    assert!(s.runs_started().is_empty(), "{:?}", s.runs_started());
}

#[test]
fn many_calls_for_one_canary_start_one_run_and_wait_in_a_bounded_queue() {
    let (_held, target) = silent_target();
    let s = Serve::start(&["--hook-wait", "4s"]);
    let body = payload(
        "podinfo",
        serde_json::json!({"target": target, "suites": "gate.yaml", "token": TOKEN}),
    );
    let calls: Vec<_> = (0..24)
        .map(|_| {
            let addr = s.addr.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                let mut c = TcpStream::connect(addr).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                c.write_all(
                    format!(
                        "POST /flagger/rollout HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                )
                .unwrap();
                let text = read_answer(&mut c);
                (status_of(&text), text, started.elapsed())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    // Another selection for the same canary and hook while the run goes.
    let other = payload(
        "podinfo",
        serde_json::json!({"target": target, "suites": "other.yaml", "token": TOKEN}),
    );
    let (status, text, took) = s.post("/flagger/rollout", false, &other);
    assert_eq!(status, 409, "{text}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    let answers: Vec<_> = calls.into_iter().map(|c| c.join().unwrap()).collect();
    let waited = answers
        .iter()
        .filter(|(st, t, _)| *st == 503 && t.contains("running"))
        .count();
    let refused: Vec<_> = answers.iter().filter(|(st, _, _)| *st == 429).collect();
    assert_eq!(waited, 8, "{answers:?}");
    assert_eq!(refused.len(), 16, "{answers:?}");
    for (_, text, took) in &refused {
        assert!(
            *took < Duration::from_secs(2),
            "a 429 took {took:?}: {text}"
        );
        assert!(text.contains("retry-after: 1"), "{text}");
    }
    let runs = s.runs_started();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(Path::new(&runs[0]).ends_with("run-1"));
}
