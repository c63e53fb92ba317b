//! The reference integration: a small BOTIX-like HTTP API that does everything
//! right, each of whose properties can be broken with a [`Defect`].
//!
//! It has two jobs (see `DESIGN.md`, "The reference integration"): it is the embedded
//! default target of `tminus run` (started in-process on `127.0.0.1:0`), and it is the
//! fixture every test runs checks against, once healthy and once per defect, to prove
//! that each check can fail.
//!
//! Routes (JSON everywhere; errors are `{"error":{"code","message"}}`):
//!
//! | Method | Path | Auth | Success |
//! |---|---|---|---|
//! | POST | `/public/v1/messages` | Bearer | 201 message |
//! | GET | `/public/v1/messages?limit=&cursor=` | Bearer | 200 `{data, meta.next_cursor}` |
//! | GET | `/public/v1/messages/count` | Bearer | 200 `{count}` |
//! | GET | `/public/v1/messages/total` | Bearer | 200 `{count}`, deprecated: `Deprecation`, `Sunset` (see `deprecated.rs`) |
//! | POST | `/public/v1/contacts/bulk-create` | Bearer | 201 `{created, ids}` |
//! | GET | `/public/v1/contacts?limit=&cursor=` | Bearer | 200 `{data, meta.next_cursor}` |
//! | POST | `/public/v1/scenarios/{id}/run` | Bearer | 202 + `Location` |
//! | GET | `/public/v1/scenario-runs/{run_id}` | Bearer | 200 run status |
//! | GET | `/__tminus/effects`, `/__tminus/effects/{name}` | none | side-effect counters |
//! | POST | `/public/v1/webhooks` | Bearer | 201 subscription (see `webhook.rs`) |
//! | GET | `/public/v1/events?limit=&cursor=` | Bearer | 200 `{data, meta.next_cursor}`: every emitted event (`webhook.rs`) |
//! | POST | `/integrator/webhooks` | webhook signature | 200 integrator-side receiver |
//! | POST | `/oauth/token` | client credentials | 200 `{access_token, token_type, expires_in}` (see `oauth.rs`) |
//! | GET | `/__tminus/oauth` | none | the token endpoint's counters |
//! | POST | `/public/v1/payments` | Bearer | 201 payment, charged through the provider (see `payments.rs`) |
//! | PUT | `/public/v1/payment-provider` | Bearer | 200 `{url}`: where the provider is |
//! | GET | `/healthz` | none | 200 `{"status":"ok"}` |
//! | GET | `/metrics` | none | 200 Prometheus text: in-flight requests, queue depth, pool use (see `metrics.rs`) |
//! | GET | `/openapi.json` | none | 200 this API's OpenAPI 3.1 document ([`OPENAPI_JSON`]) |
//!
//! Every response, errors included, carries `Trace-Id` and `X-Request-Id`
//! (see `trace.rs`). `/public/v1/*` is rate limited per API key (`rate_limit.rs`:
//! 100 requests per 1 s window by default, limit headers on every response, 429 +
//! Retry-After); the key `ref_load_key` is exempt, for the burst rehearsal.
//! Beside the API keys, `/public/v1/*` accepts the bearer tokens `/oauth/token`
//! issues to its clients (`ref_client` / `ref_client_secret`, `ref_client_b` /
//! `ref_client_b_secret`; `--token-lifetime`, 1 h by default); the limiter
//! counts per token, so each token has its own window.
//!
//! Layout: one file per concern. `defect.rs` is the defect table, `state.rs` holds
//! data and the single `has(Defect)` switch, `auth.rs`/`trace.rs`/`latency.rs` are
//! middleware, `messages.rs`/`contacts.rs`/`scenarios.rs` are handlers,
//! `pagination.rs` is shared cursor logic, `effects.rs` the side-effect counters,
//! `errors.rs` the error shape.

mod auth;
mod breaker;
mod clock;
mod contacts;
mod cors;
mod defect;
mod deprecated;
mod effects;
mod errors;
mod latency;
mod logs;
mod messages;
mod metrics;
pub mod oauth;
mod pagination;
mod payments;
mod raw_head;
mod scenarios;
mod state;
pub mod tls;
mod trace;
mod validate;

// Families with a module of their own (trace is the middleware above).
mod idempotency;
mod rate_limit;
mod red;
mod webhook;

pub mod client;
mod client_poll;
pub use payments::DependencyConfig;
pub use rate_limit::{RateLimitConfig, RateLimitDialect, LOAD_API_KEY};

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use defect::{Defect, DefectFamily};

use state::AppState;

/// The reference's OpenAPI 3.1 document, served at `/openapi.json`: every
/// route above with its statuses, headers and body schemas. The test
/// `tests/it/reference_openapi.rs` sends real requests to every route and judges
/// each answer against it, so it stays true; the `contract` defects break it.
pub const OPENAPI_JSON: &str = include_str!("../../suites/reference.openapi.json");

/// The first configured API key (tenant A).
pub const DEFAULT_API_KEY: &str = "ref_test_key_a";
/// The second configured API key (tenant B), for cross-tenant checks.
pub const SECOND_API_KEY: &str = "ref_test_key_b";

/// The one API key of the production twin (`--environment production`):
/// the sandbox's keys are not among its keys, nor its key among theirs.
pub const PRODUCTION_API_KEY: &str = "ref_prod_key";

/// The keys of the sandbox (the default environment), which production
/// must refuse (the `sandbox-key-works-in-production` defect accepts them).
pub const SANDBOX_API_KEYS: [&str; 3] = [DEFAULT_API_KEY, SECOND_API_KEY, LOAD_API_KEY];

/// Which environment a reference stands for: the sandbox (the default, with
/// the test keys) or production (its own key, [`PRODUCTION_API_KEY`]), so
/// two processes can prove a sandbox credential is refused by production
/// (`auth.sandbox_isolated`, OBS-004).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Environment {
    #[default]
    Sandbox,
    Production,
}

/// How long `shutdown` waits for in-flight connections before aborting the server.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);
/// A client that opens a connection and never finishes its TLS handshake
/// holds a task no longer than this.
const TLS_HANDSHAKE: Duration = Duration::from_secs(10);

/// How the reference integration behaves.
#[derive(Debug, Clone)]
pub struct ReferenceConfig {
    /// Defects switched on; duplicates are harmless.
    pub defects: Vec<Defect>,
    /// Accepted Bearer tokens; each is its own tenant.
    pub api_keys: Vec<String>,
    /// Artificial latency added to every `/public/v1/*` response; zero by default.
    pub latency: Duration,
    /// Per-key rate limit of `/public/v1/*` (`rate_limit.rs`); `ref_load_key` is exempt.
    pub rate_limit: RateLimitConfig,
    /// How long an idempotency key is remembered (24 h, as BOTIX documents).
    pub idempotency_ttl: Duration,
    /// `POST /public/v1/messages` without `Idempotency-Key` is 400 (BOTIX default).
    pub idempotency_key_required: bool,
    /// The integrator receiver's Standard Webhooks secret (`whsec_` + base64).
    pub webhook_secret: String,
    /// Delays between outgoing delivery attempts (compressed, so tests take seconds).
    pub webhook_schedule: Vec<Duration>,
    /// Time limit of one outgoing delivery attempt.
    pub webhook_attempt_timeout: Duration,
    /// With the `stall` defect: every `stall_every`-th API request stalls...
    pub stall_every: u64,
    /// ...for this long.
    pub stall_for: Duration,
    /// At most this many `/public/v1/*` requests are served at once; the rest
    /// wait (FIFO) for a slot, as a target with a fixed worker pool queues.
    /// None: no limit.
    pub max_concurrency: Option<usize>,
    /// The OAuth2 clients `/oauth/token` knows: (client_id, client_secret).
    pub oauth_clients: Vec<(String, String)>,
    /// How long a token `/oauth/token` issues is accepted (`--token-lifetime`).
    pub token_lifetime: Duration,
    /// How `POST /public/v1/payments` calls its provider (`payments.rs`).
    pub dependency: DependencyConfig,
    /// The environment it stands for (`--environment`).
    pub environment: Environment,
    /// Where the JSON request log is appended (`logs.rs`, `--log-file`).
    pub log_file: Option<std::path::PathBuf>,
    /// The JSON request log goes to stdout too (`--log-stdout`).
    pub log_stdout: bool,
}

impl ReferenceConfig {
    /// The production twin: its own API key, no OAuth2 client (a sandbox
    /// client's secret must not get a production token either).
    pub fn production() -> Self {
        ReferenceConfig {
            environment: Environment::Production,
            api_keys: vec![PRODUCTION_API_KEY.into()],
            oauth_clients: Vec::new(),
            ..ReferenceConfig::default()
        }
    }
}

/// The reference receiver's default secret (a test value, never a real one).
pub const DEFAULT_WEBHOOK_SECRET: &str = "whsec_dG1pbnVzLXJlZmVyZW5jZS1yZWNlaXZlci1rZXk=";

impl Default for ReferenceConfig {
    fn default() -> Self {
        ReferenceConfig {
            defects: Vec::new(),
            api_keys: vec![
                DEFAULT_API_KEY.into(),
                SECOND_API_KEY.into(),
                LOAD_API_KEY.into(),
            ],
            latency: Duration::ZERO,
            rate_limit: RateLimitConfig::default(),
            idempotency_ttl: Duration::from_secs(24 * 3600),
            idempotency_key_required: true,
            webhook_secret: DEFAULT_WEBHOOK_SECRET.into(),
            webhook_schedule: vec![
                Duration::from_millis(100),
                Duration::from_millis(200),
                Duration::from_millis(400),
            ],
            webhook_attempt_timeout: Duration::from_secs(2),
            stall_every: 200,
            stall_for: Duration::from_secs(1),
            max_concurrency: None,
            oauth_clients: vec![
                (oauth::CLIENT_ID.into(), oauth::CLIENT_SECRET.into()),
                (
                    oauth::SECOND_CLIENT_ID.into(),
                    oauth::SECOND_CLIENT_SECRET.into(),
                ),
            ],
            token_lifetime: oauth::DEFAULT_TOKEN_LIFETIME,
            dependency: DependencyConfig::default(),
            environment: Environment::Sandbox,
            log_file: None,
            log_stdout: false,
        }
    }
}

/// Builds the full router (all routes, fallbacks and middleware) with fresh state.
pub fn router(config: ReferenceConfig) -> Router {
    let oauth = oauth::OAuth::new(config.oauth_clients.clone(), config.token_lifetime);
    // `ReferenceServer::start*` opened it once already: a failure here is a
    // file that went away between, and the log stays off.
    let request_log = logs::RequestLog::open(config.log_file.as_ref(), config.log_stdout)
        .unwrap_or_else(|e| {
            eprintln!("warning: the reference's request log: {e}");
            logs::RequestLog::default()
        });
    let state = AppState::new(config);
    let payments = (state.clone(), payments::Payments::new(&state));

    // Route layers apply to matched public routes only; the last one added is the
    // outermost, so latency wraps auth and 401s are delayed like everything else.
    let public = Router::new()
        .route(
            "/public/v1/messages",
            post(messages::create).get(messages::list),
        )
        .route("/public/v1/messages/count", get(messages::count))
        .route("/public/v1/messages/total", get(deprecated::total))
        .route(
            "/public/v1/contacts/bulk-create",
            post(contacts::bulk_create),
        )
        .route("/public/v1/contacts", get(contacts::list))
        .route("/public/v1/scenarios/{id}/run", post(scenarios::run))
        .route("/public/v1/scenario-runs/{run_id}", get(scenarios::status))
        .route("/public/v1/webhooks", post(webhook::subscribe))
        .route("/public/v1/events", get(webhook::list_events))
        .route(
            "/public/v1/payments",
            post(payments::create).with_state(payments.clone()),
        )
        .route(
            "/public/v1/payment-provider",
            axum::routing::put(payments::set_provider).with_state(payments),
        )
        // Innermost: runs after auth, so the key is scoped by the caller's API key.
        .route_layer(middleware::from_fn_with_state(
            idempotency::Idempotency::new(state.clone()),
            idempotency::guard,
        ))
        .route_layer(middleware::from_fn_with_state(
            (state.clone(), oauth.clone()),
            auth::require_api_key,
        ))
        // Outside auth, so 401s are limited and carry the limit headers too.
        .route_layer(middleware::from_fn_with_state(
            rate_limit::Limiter::new(&state),
            rate_limit::limit,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            latency::delay,
        ))
        // Outermost of the route layers: every answer of a matched API route.
        .route_layer(middleware::from_fn_with_state(state.clone(), red::record));

    let hooks = Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route(
            "/openapi.json",
            get(|| async {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    OPENAPI_JSON,
                )
            }),
        )
        .route("/metrics", get(metrics::serve))
        .route("/__tminus/effects", get(effects::all))
        .route("/__tminus/effects/{name}", get(effects::one))
        .route("/integrator/webhooks", post(webhook::receive))
        .route(
            oauth::TOKEN_PATH,
            post(oauth::token).with_state(oauth.clone()),
        )
        .route(
            "/__tminus/oauth",
            get(oauth::counters).with_state(oauth.clone()),
        );

    public
        .merge(hooks)
        // Must come after every route: it applies to the routes present when called.
        .method_not_allowed_fallback(errors::method_not_allowed)
        .fallback(errors::not_found)
        // Outside the routes and fallbacks: a preflight is answered before
        // routing, and every answer to an Origin says Vary: Origin.
        .layer(middleware::from_fn_with_state(state.clone(), cors::cors))
        // Sees every request: a client secret anywhere but the token
        // endpoint is counted (`/__tminus/oauth`).
        .layer(middleware::from_fn_with_state(oauth.clone(), oauth::watch))
        // Inside the correlation layer, whose ids it logs.
        .layer(middleware::from_fn_with_state(
            (state.clone(), request_log),
            logs::record,
        ))
        // Outermost: wraps routes AND fallbacks, so every response gets correlation ids.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            trace::correlate,
        ))
        .with_state(state)
}

/// A running reference integration. Dropping it without [`shutdown`](Self::shutdown)
/// aborts the server task.
pub struct ReferenceServer {
    addr: SocketAddr,
    /// Served over https (`--tls`).
    tls: bool,
    shutdown_tx: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// `301 Moved Permanently` to the same host and path over https.
async fn redirect_to_https(
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && !h.contains(['/', ' ', '@']));
    let Some(host) = host else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            "a Host header is required\n",
        )
            .into_response();
    };
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    (
        axum::http::StatusCode::MOVED_PERMANENTLY,
        [(
            axum::http::header::LOCATION,
            format!("https://{host}{path}"),
        )],
    )
        .into_response()
}

impl ReferenceServer {
    /// Binds `addr` (use "127.0.0.1:0" for an ephemeral port) and serves in a spawned tokio task.
    pub async fn start(
        config: ReferenceConfig,
        addr: SocketAddr,
    ) -> std::io::Result<ReferenceServer> {
        logs::RequestLog::open(config.log_file.as_ref(), false)?;
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        if config
            .defects
            .contains(&Defect::ReceiverCaseSensitiveHeaders)
        {
            return Self::start_recording(config, listener).await;
        }
        let app = router(config);
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                // A dropped sender also means "stop".
                let _ = shutdown_rx.await;
            });
            // serve only fails on listener errors, which nobody could act on here.
            let _ = serve.await;
        });
        Ok(ReferenceServer {
            addr,
            tls: false,
            shutdown_tx: Some(shutdown_tx),
            task: Some(task),
        })
    }

    /// [`start`](Self::start) under `receiver-case-sensitive-headers`: each
    /// connection is served on its own, its bytes recorded (`raw_head`), so
    /// the receiver can see header names as they were written.
    async fn start_recording(
        config: ReferenceConfig,
        listener: tokio::net::TcpListener,
    ) -> std::io::Result<ReferenceServer> {
        let addr = listener.local_addr()?;
        let app = router(config);
        let (shutdown_tx, mut shutdown_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let accepted = tokio::select! {
                    _ = &mut shutdown_rx => break,
                    a = listener.accept() => a,
                };
                while connections.try_join_next().is_some() {}
                let Ok((tcp, _)) = accepted else { continue };
                let app = app.clone();
                connections.spawn(raw_head::serve_connection(tcp, app, true));
            }
            let drain = async { while connections.join_next().await.is_some() {} };
            let _ = tokio::time::timeout(SHUTDOWN_GRACE / 2, drain).await;
        });
        Ok(ReferenceServer {
            addr,
            tls: false,
            shutdown_tx: Some(shutdown_tx),
            task: Some(task),
        })
    }

    /// [`start`](Self::start), over https with `tls` ([`tls::generate`]):
    /// each accepted connection is given its handshake (bounded) and then
    /// served HTTP/1.1 by the same router.
    pub async fn start_tls(
        config: ReferenceConfig,
        addr: SocketAddr,
        tls: std::sync::Arc<rustls::ServerConfig>,
    ) -> std::io::Result<ReferenceServer> {
        logs::RequestLog::open(config.log_file.as_ref(), false)?;
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let legacy = config.defects.contains(&Defect::AcceptsTls10);
        let hsts = !config.defects.contains(&Defect::NoHsts);
        let serves_plain = config.defects.contains(&Defect::ServesPlainHttp);
        let record = config
            .defects
            .contains(&Defect::ReceiverCaseSensitiveHeaders);
        let mut app = router(config);
        // Plain http on this port: the API itself under the defect, else a
        // permanent redirect to https (RFC 6797 §7.2).
        let plain_app = if serves_plain {
            app.clone()
        } else {
            Router::new().fallback(redirect_to_https)
        };
        if hsts {
            // Two years with subdomains, as the HSTS preload list asks
            // (RFC 6797 §6.1): only ever over https (§7.2).
            app = app.layer(middleware::map_response(
                |mut r: axum::response::Response| async move {
                    r.headers_mut().insert(
                        axum::http::header::STRICT_TRANSPORT_SECURITY,
                        axum::http::HeaderValue::from_static("max-age=63072000; includeSubDomains"),
                    );
                    r
                },
            ));
        }
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let (shutdown_tx, mut shutdown_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // The connections die with this task (an aborted JoinSet aborts
            // its tasks).
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let accepted = tokio::select! {
                    _ = &mut shutdown_rx => break,
                    a = listener.accept() => a,
                };
                // Reap finished connections so the set stays small.
                while connections.try_join_next().is_some() {}
                let Ok((tcp, _)) = accepted else { continue };
                let acceptor = acceptor.clone();
                let app = app.clone();
                let plain_app = plain_app.clone();
                connections.spawn(async move {
                    if legacy && tls::answer_legacy_hello(&tcp).await {
                        return;
                    }
                    // A TLS connection opens with a handshake record (0x16);
                    // anything else is plain http on the https port.
                    let mut first = [0u8; 1];
                    let peeked = tokio::time::timeout(TLS_HANDSHAKE, tcp.peek(&mut first)).await;
                    if matches!(peeked, Ok(Ok(1))) && first[0] != 0x16 {
                        let service = hyper_util::service::TowerToHyperService::new(plain_app);
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                            .await;
                        return;
                    }
                    let handshake = tokio::time::timeout(TLS_HANDSHAKE, acceptor.accept(tcp));
                    let Ok(Ok(stream)) = handshake.await else {
                        return;
                    };
                    raw_head::serve_connection(stream, app, record).await;
                });
            }
            // In-flight requests get the grace period; idle keep-alive
            // connections are cut when it ends.
            let drain = async { while connections.join_next().await.is_some() {} };
            let _ = tokio::time::timeout(SHUTDOWN_GRACE / 2, drain).await;
        });
        Ok(ReferenceServer {
            addr,
            tls: true,
            shutdown_tx: Some(shutdown_tx),
            task: Some(task),
        })
    }

    /// The bound address (with the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT` (`https://` with `--tls`), without a trailing slash.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Stops accepting, lets in-flight requests finish for a short grace period, then
    /// aborts whatever is left. Bounded (well under 2 s) and never hangs, even with
    /// idle keep-alive connections open.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown_tx.take() {
            let _ = tx.send(());
        }
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
            {
                task.abort();
                let _ = task.await;
            }
        }
    }
}

impl Drop for ReferenceServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
