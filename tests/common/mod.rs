//! Shared test helpers: the real `tminus` binary, a fresh folder per test,
//! and reference servers on 127.0.0.1:0 with chosen defects.
#![allow(dead_code)]

pub mod dependency;
pub mod harness;
pub mod real_servers;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tminus::reference::{Defect, ReferenceConfig, ReferenceServer};

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tminus"))
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs tminus with `args` in `dir`, with a hard deadline so a hang fails
/// the test instead of stalling CI.
pub fn tminus(dir: &Path, args: &[&str], envs: &[(&str, &str)], deadline: Duration) -> Output {
    let mut cmd = Command::new(bin());
    cmd.current_dir(dir)
        .args(args)
        .env_remove("TMINUS_TARGET")
        .env_remove("TMINUS_API_KEY")
        // A developer's production must never be a test's.
        .env_remove("TMINUS_PRODUCTION")
        .env_remove("TMINUS_PRODUCTION_KEY")
        // On GitHub every run would append its summary to the CI job's page.
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("spawn tminus");
    let started = Instant::now();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(out) => out.expect("wait tminus"),
        Err(_) => {
            // Kill only the process we started.
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!(
                "tminus {args:?} did not finish within {deadline:?} (started {:?} ago)",
                started.elapsed()
            );
        }
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A reference integration on its own thread and runtime, so a test can
/// drive the blocking binary against it.
pub struct RefHandle {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RefHandle {
    pub fn start(defects: &[Defect]) -> RefHandle {
        Self::start_with(ReferenceConfig {
            defects: defects.to_vec(),
            ..ReferenceConfig::default()
        })
    }

    pub fn start_with(config: ReferenceConfig) -> RefHandle {
        Self::spawn(|url_tx, stop_rx| async move {
            let server = ReferenceServer::start(config, "127.0.0.1:0".parse().unwrap())
                .await
                .expect("start reference");
            url_tx.send(server.base_url()).unwrap();
            let _ = stop_rx.await;
            server.shutdown().await;
        })
    }

    /// The reference over https (`tminus reference --tls`'s server) with
    /// `defects`, requiring client certificates when asked; the folder holds
    /// ca.pem (and client.pem, client.key), kept as long as it lives.
    pub fn start_tls(defects: &[Defect], client_certs: bool) -> (RefHandle, tempfile::TempDir) {
        use tminus::reference::tls::{generate, TlsSetup};
        let pki = tempfile::tempdir().expect("tempdir");
        let setup = TlsSetup {
            dir: Some(pki.path().to_owned()),
            client_certs,
            defects: defects.to_vec(),
        };
        let (server_tls, _) = generate(&setup).expect("the reference's certificates");
        let config = ReferenceConfig {
            defects: defects.to_vec(),
            ..ReferenceConfig::default()
        };
        let handle = Self::spawn(move |url_tx, stop_rx| async move {
            let server =
                ReferenceServer::start_tls(config, "127.0.0.1:0".parse().unwrap(), server_tls)
                    .await
                    .expect("start the reference over https");
            url_tx.send(server.base_url()).unwrap();
            let _ = stop_rx.await;
            server.shutdown().await;
        });
        (handle, pki)
    }

    /// `--cacert` (and `--cert`/`--key`) for a reference of [`Self::start_tls`].
    pub fn tls_args(pki: &Path, client_cert: bool) -> Vec<String> {
        let file = |n: &str| pki.join(n).to_string_lossy().into_owned();
        let mut a = vec!["--cacert".to_owned(), file("ca.pem")];
        if client_cert {
            a.extend([
                "--cert".to_owned(),
                file("client.pem"),
                "--key".to_owned(),
                file("client.key"),
            ]);
        }
        a
    }

    /// Runs `serve` on its own thread and runtime: it sends its base URL,
    /// then serves until the stop signal (sent when the handle drops).
    pub fn spawn<F, Fut>(serve: F) -> RefHandle
    where
        F: FnOnce(std::sync::mpsc::Sender<String>, tokio::sync::oneshot::Receiver<()>) -> Fut
            + Send
            + 'static,
        Fut: std::future::Future<Output = ()>,
    {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(serve(url_tx, stop_rx));
        });
        let url = url_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("reference started");
        RefHandle {
            url,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for RefHandle {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `tminus reference ARGS` started as a user would (a process of its own),
/// killed (by its own PID) on drop. Its URL is the first line it prints.
pub struct RefProcess {
    child: std::process::Child,
    pub url: String,
}

impl RefProcess {
    pub fn start(args: &[&str]) -> RefProcess {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(bin())
            .args(["reference", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn tminus reference");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("reference prints its URL");
        let url = line.trim().to_owned();
        assert!(
            url.starts_with("http://127.0.0.1:") || url.starts_with("https://127.0.0.1:"),
            "tminus reference printed `{url}`, not its URL"
        );
        RefProcess { child, url }
    }
}

impl Drop for RefProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads a JSON report and returns `(suite/check id, verdict)` pairs.
pub fn verdicts(report: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(report).expect("read JSON report");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON report parses");
    let mut out = Vec::new();
    for s in v["suites"].as_array().expect("suites") {
        for c in s["checks"].as_array().expect("checks") {
            out.push((
                format!(
                    "{}/{}",
                    s["name"].as_str().unwrap(),
                    c["id"].as_str().unwrap()
                ),
                c["verdict"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

/// Runs `suite` (relative to the repo) against `url`; returns the verdicts
/// of every check and the process output.
pub fn run_suite_against(
    suite: &str,
    url: &str,
    extra: &[&str],
) -> (Vec<(String, String)>, Output) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (json, out) = run_with_json(dir.path(), &repo().join(suite), url, extra, &[]);
    (verdicts(&json), out)
}

/// Runs the suite at `suite_path` against `url` with its JSON report and
/// report folder in `dir`; returns the report's path (asserted to exist)
/// and the process output.
pub fn run_with_json(
    dir: &Path,
    suite_path: &Path,
    url: &str,
    extra: &[&str],
    envs: &[(&str, &str)],
) -> (PathBuf, Output) {
    run_with_json_within(dir, suite_path, url, extra, envs, Duration::from_secs(120))
}

/// [`run_with_json`] with its own deadline (runs that wait for a quota).
pub fn run_with_json_within(
    dir: &Path,
    suite_path: &Path,
    url: &str,
    extra: &[&str],
    envs: &[(&str, &str)],
    deadline: Duration,
) -> (PathBuf, Output) {
    let json = dir.join("report.json");
    let mut args = vec![
        "run",
        suite_path.to_str().unwrap(),
        "--target",
        url,
        "--json",
        json.to_str().unwrap(),
        "--report-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = tminus(dir, &args, envs, deadline);
    assert!(
        json.exists(),
        "no JSON report; stdout:\n{}\nstderr:\n{}",
        stdout(&out),
        stderr(&out)
    );
    (json, out)
}

/// The ids of checks whose verdict is not `pass`.
pub fn not_passing(v: &[(String, String)]) -> Vec<String> {
    v.iter()
        .filter(|(_, verdict)| verdict != "pass")
        .map(|(id, verdict)| format!("{id}={verdict}"))
        .collect()
}

/// An axum app served on 127.0.0.1:0 from its own thread and runtime, so a
/// test can drive the blocking binary against a server of its own making
/// (a third-party behaviour, a target that does nothing useful).
pub struct AppHandle {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl AppHandle {
    pub fn start(app: axum::Router) -> AppHandle {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                let addr = listener.local_addr().expect("addr");
                url_tx.send(format!("http://{addr}")).unwrap();
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stop_rx.await;
                    })
                    .await
                    .expect("serve");
            });
        });
        let url = url_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("app started");
        AppHandle {
            url,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for AppHandle {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves on `listener` (127.0.0.1:0) from a thread of its own with a
/// current-thread runtime, for as long as the test process lives; returns
/// `scheme://ADDR`.
pub fn serve_on_thread<F, Fut>(scheme: &str, serve: F) -> String
where
    F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("{scheme}://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            serve(listener).await
        });
    });
    url
}

/// Held for the whole of a test in `tests/serial/`: those tests run one at
/// a time whatever `--test-threads` says, because each loads the machine or
/// judges timing and must not make another's noise. A test that panicked
/// poisons nothing: the next one still runs.
pub fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A python3 that imports `modules` (PATH's, then Debian's); `None` (the
/// test skips) when there is none, unless TMINUS_REQUIRE_FASTAPI=1 (CI),
/// where that is a failure.
pub fn required_python(modules: &str) -> Option<PathBuf> {
    let found = ["python3", "/usr/bin/python3"]
        .iter()
        .map(PathBuf::from)
        .find(|p| {
            Command::new(p)
                .args(["-c", &format!("import {modules}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
    if found.is_none() {
        let required = std::env::var("TMINUS_REQUIRE_FASTAPI").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "TMINUS_REQUIRE_FASTAPI=1 but no python3 imports {modules}"
        );
        eprintln!("skipped: no python3 imports {modules} (.ci/run installs them)");
    }
    found
}
