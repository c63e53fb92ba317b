//! `tminus serve` (issue 27): the canary gate progressive-delivery
//! controllers call. Flagger's webhooks (`POST /flagger/pre-rollout`,
//! `/flagger/rollout`, `/flagger/confirm-promotion`: `flagger.rs`) and Argo
//! Rollouts' web metric provider (`GET /argo/NAMESPACE/NAME`: `argo.rs`) run
//! the suites of one folder against the canary as a `tminus run` child
//! (`child.rs`), keyed so a repeated call never starts a second run
//! (`runs.rs`), and answer from its report (`verdict.rs`). Every call must
//! carry the `TMINUS_SERVE_TOKEN`; a wrong or missing one is 401 and starts
//! nothing.

mod argo;
mod child;
mod flagger;
mod listen;
mod runs;
mod select;
mod verdict;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use sha2::Digest;

use crate::exit;

/// The environment variable every caller's token must equal.
pub const TOKEN_ENV: &str = "TMINUS_SERVE_TOKEN";
/// A shorter token is refused at start: the server starts load on demand.
const MIN_TOKEN: usize = 16;
/// A hook's request body is read up to this size.
const MAX_BODY: usize = 64 << 10;

/// What every handler shares.
pub struct Server {
    /// The SHA-256 of `TMINUS_SERVE_TOKEN`.
    token_digest: [u8; 32],
    suites_dir: PathBuf,
    /// `--allow-target`: the origins a call may name (empty: any).
    allowed: Vec<select::Allowed>,
    hook_wait: Duration,
    runs: runs::Registry,
}

impl Server {
    /// Whether the caller showed the token: `Authorization: Bearer TOKEN`,
    /// or (Flagger sends no custom headers) `metadata.token` in the body.
    fn authorized(&self, headers: &HeaderMap, body_token: Option<&str>) -> bool {
        let bearer = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        [bearer, body_token].into_iter().flatten().any(|t| {
            // Digests of equal length, compared in constant time: neither
            // the token's length nor its first differing byte shows in
            // the time a refusal takes.
            let shown = sha2::Sha256::digest(t.trim().as_bytes());
            crate::signing::ct_eq(&shown, &self.token_digest)
        })
    }
}

fn answer(status: StatusCode, text: impl Into<String>) -> Response {
    let mut text = text.into();
    text.push('\n');
    (status, text).into_response()
}

/// A place among the calls waiting on `run` (none needed without
/// `--hook-wait`); when all are taken the call is answered 429 at once.
fn wait_place(
    server: &Server,
    run: &runs::Handle,
) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Box<Response>> {
    if server.hook_wait.is_zero() {
        return Ok(None);
    }
    run.waiter().map(Some).ok_or_else(|| {
        let mut r = answer(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "tminus run {}: {} calls are already waiting on it; call again",
                run.id,
                runs::MAX_WAITERS
            ),
        );
        r.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("1"),
        );
        Box::new(r)
    })
}

fn unauthorized() -> Response {
    answer(
        StatusCode::UNAUTHORIZED,
        format!("unauthorized: the call must carry {TOKEN_ENV} (metadata.token, or Authorization: Bearer); nothing was started"),
    )
}

pub fn cmd_serve(a: crate::cli::ServeArgs) -> i32 {
    let usage = |msg: String| {
        eprintln!("error: {msg}");
        exit::INVALID
    };
    let token = std::env::var(TOKEN_ENV).unwrap_or_default();
    if token.trim().len() < MIN_TOKEN {
        return usage(format!(
            "{TOKEN_ENV} must be set to a token of at least {MIN_TOKEN} characters: every call must carry it, since a call starts runs (and load) against the target it names"
        ));
    }
    if !a.suites.is_dir() {
        return usage(format!("--suites {}: not a folder", a.suites.display()));
    }
    let duration = |flag: &str, text: &str| {
        crate::model::scalar::parse_duration(text).map_err(|e| format!("{flag} {text}: {e}"))
    };
    let (keep, run_timeout, hook_wait) = match (
        duration("--keep", &a.keep),
        duration("--run-timeout", &a.run_timeout),
        duration("--hook-wait", &a.hook_wait),
    ) {
        (Ok(k), Ok(r), Ok(h)) => (k, r, h),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return usage(e),
    };
    let allowed = match a
        .allow_target
        .iter()
        .map(|t| t.parse::<select::Allowed>())
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(v) => v,
        Err(e) => return usage(e),
    };
    if a.max_runs == 0 {
        return usage("--max-runs must be at least 1".into());
    }
    let reports = a.reports.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("tminus-serve-{}", std::process::id()))
    });
    // Written to before the first call, so a read-only root filesystem (a
    // hardened pod without a volume for reports) stops serve at start with
    // the fix, not every run later with a report it could not write.
    if let Err(e) = writable(&reports) {
        eprintln!(
            "error: cannot write the runs' reports to {}: {e}; give --reports DIR (or TMPDIR) a writable folder, e.g. an emptyDir volume when the root filesystem is read-only",
            reports.display()
        );
        return exit::RUN_BROKEN;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find this binary to run suites with: {e}");
            return exit::RUN_BROKEN;
        }
    };
    let server = Arc::new(Server {
        token_digest: sha2::Sha256::digest(token.trim().as_bytes()).into(),
        suites_dir: a.suites.clone(),
        allowed,
        hook_wait,
        runs: runs::Registry::new(runs::Settings {
            exe,
            reports,
            keep,
            run_timeout,
            max_runs: a.max_runs,
            allow_remote_load: a.allow_remote_load,
            strict: a.strict,
        }),
    });
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return exit::RUN_BROKEN;
        }
    };
    rt.block_on(serve(server, a.listen))
}

/// Creates the reports folder and proves a file can be written in it
/// (`create_dir_all` succeeds on an existing read-only mount).
fn writable(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".tminus-serve-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

async fn serve(server: Arc<Server>, listen: std::net::SocketAddr) -> i32 {
    let listener = match tokio::net::TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {listen}: {e}");
            return exit::RUN_BROKEN;
        }
    };
    let addr = listener.local_addr().unwrap_or(listen);
    println!("tminus serve: listening on http://{addr}");
    {
        use std::io::Write;
        let _ = std::io::stdout().flush();
    }
    let app = axum::Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/flagger/{hook}", post(flagger::hook))
        .route("/argo/{namespace}/{name}", get(argo::metric))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(server);
    // Ctrl-C, or SIGTERM as Kubernetes sends: the server stops and the
    // runtime's end drops every run, killing its child (kill_on_drop).
    let shutdown = async {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    };
    match listen::run(listener, app, shutdown).await {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: serving on {addr}: {e}");
            exit::RUN_BROKEN
        }
    }
}
