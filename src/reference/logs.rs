//! The reference's request log: one JSON line per request (every route,
//! fallbacks included), written to a file (`--log-file`, appended) and/or
//! stdout (`--log-stdout`), as a service that takes observability seriously
//! logs: `ts_ms`, `level`, `msg`, `method`, `path`, `status`, `duration_ms`,
//! `trace_id` (the trace id of the request's traceparent, or the one the
//! reference started) and `request_id` (the `X-Request-Id` it answered).
//! Nothing the caller sent beyond the method and path is logged.
//!
//! Defects of the observability family (catalogue §10) live here:
//! `logs-without-trace-id` (no `trace_id` field), `logs-secrets` (the
//! Authorization header logged as it came), `logs-pii` (a payment's card
//! number logged).

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

use super::defect::Defect;
use super::state::AppState;
use super::trace::RequestContext;

/// The largest payment body read for the `logs-pii` defect.
const MAX_PII_BODY: usize = 64 << 10;

/// Lines waiting for the writer at most: a request never waits for the
/// disk; past this backlog (a burst far beyond what the disk takes) lines
/// are dropped and counted, as a real log shipper does.
const BACKLOG: usize = 65_536;

/// Where the log lines go: a writer thread (the file, buffered and flushed
/// whenever the backlog is empty) and/or stdout.
#[derive(Clone, Default)]
pub(crate) struct RequestLog {
    file: Option<std::sync::mpsc::SyncSender<String>>,
    dropped: Arc<AtomicU64>,
    stdout: bool,
}

impl RequestLog {
    /// Opens (creates, appends to) `file`; `stdout` writes every line there too.
    pub(crate) fn open(file: Option<&PathBuf>, stdout: bool) -> std::io::Result<RequestLog> {
        let file = match file {
            Some(p) => {
                if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)?;
                }
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)?;
                let (tx, rx) = std::sync::mpsc::sync_channel::<String>(BACKLOG);
                // Ends when every sender (the router's clones) is gone.
                std::thread::Builder::new()
                    .name("reference-log".into())
                    .spawn(move || write_lines(f, rx))?;
                Some(tx)
            }
            None => None,
        };
        Ok(RequestLog {
            file,
            dropped: Arc::default(),
            stdout,
        })
    }

    fn active(&self) -> bool {
        self.file.is_some() || self.stdout
    }

    fn write(&self, line: String) {
        if self.stdout {
            println!("{line}");
        }
        if let Some(tx) = &self.file {
            if tx.try_send(line).is_err() {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The writer thread: whole lines, flushed whenever no line is waiting.
fn write_lines(f: std::fs::File, rx: std::sync::mpsc::Receiver<String>) {
    let mut out = std::io::BufWriter::new(f);
    while let Ok(line) = rx.recv() {
        let _ = writeln!(out, "{line}");
        while let Ok(more) = rx.try_recv() {
            let _ = writeln!(out, "{more}");
        }
        let _ = out.flush();
    }
}

/// The middleware: inside `trace::correlate` (it reads the ids that layer set).
pub(crate) async fn record(
    State((state, log)): State<(AppState, RequestLog)>,
    req: Request,
    next: Next,
) -> Response {
    if !log.active() {
        return next.run(req).await;
    }
    let started = Instant::now();
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let ids = req.extensions().get::<RequestContext>().cloned();
    let authorization = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (req, card) =
        if state.has(Defect::LogsPii) && method == "POST" && path == "/public/v1/payments" {
            card_of(req).await
        } else {
            (req, None)
        };
    let resp = next.run(req).await;
    let status = resp.status().as_u16();
    let mut line = json!({
        "ts_ms": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        "level": if status >= 500 { "error" } else { "info" },
        "msg": "request",
        "method": method,
        "path": path,
        "status": status,
        "duration_ms": (started.elapsed().as_secs_f64() * 1000.0 * 10.0).round() / 10.0,
    });
    if let Some(ids) = ids {
        if !state.has(Defect::LogsWithoutTraceId) {
            line["trace_id"] = json!(ids.trace_id);
        }
        line["request_id"] = json!(ids.request_id);
    }
    if let (true, Some(a)) = (state.has(Defect::LogsSecrets), authorization) {
        line["authorization"] = json!(a);
    }
    if let Some(c) = card {
        line["card"] = json!(c);
    }
    log.write(line.to_string());
    resp
}

/// Reads a payment's body (bounded) for its card number, and puts it back.
async fn card_of(req: Request) -> (Request, Option<String>) {
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_PII_BODY).await else {
        // Too large or broken: the handler answers it, unlogged.
        return (Request::from_parts(parts, axum::body::Body::empty()), None);
    };
    let card = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| {
            v.pointer("/card/number")
                .or_else(|| v.get("card_number"))
                .and_then(|c| c.as_str().map(str::to_owned))
        });
    (
        Request::from_parts(parts, axum::body::Body::from(bytes)),
        card,
    )
}
