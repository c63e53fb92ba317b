//! The accept loop of `tminus serve`, bounded against callers that hold
//! connections open (issue 44): axum's own `serve` sets no timer, so hyper's
//! header read timeout never fires and a request head trickled one byte at
//! a time holds a connection (and its task) forever. Here every connection
//! is served by hyper's HTTP/1 with a timer: the head must arrive whole
//! within [`HEAD_TIMEOUT`] (a connection that sends nothing is cut too),
//! and may not pass [`MAX_HEAD`] bytes (431). At most [`MAX_CONNECTIONS`] are
//! served at once; one more is answered 503 at once and closed, so a flood
//! of idle sockets never exhausts the process's file descriptors. The body
//! is bounded by the handlers (`flagger.rs`, [`BODY_TIMEOUT`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::{watch, Semaphore};

/// A request's head (request line and headers) must arrive within this.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// A request's body must arrive within this after its head.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request head read (hyper answers 431 past it).
pub const MAX_HEAD: usize = 64 << 10;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 256;
/// How long a stop waits for the calls in progress.
const DRAIN: Duration = Duration::from_secs(10);

const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 66\r\nretry-after: 1\r\n\r\nbusy: tminus serve holds its most connections at once; call again\n";

/// Serves `app` on `listener` until `stop` completes, then lets the calls
/// in progress end (at most [`DRAIN`]).
pub async fn run(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    stop: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let (stopping, stopped) = watch::channel(false);
    let mut stop = std::pin::pin!(stop);
    loop {
        let (mut tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of descriptors, or a connection reset before it was
                // accepted: the next accept may succeed.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(1), tcp.write_all(BUSY)).await;
            });
            continue;
        };
        let app = app.clone();
        let mut stopped = stopped.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service = hyper_util::service::TowerToHyperService::new(app);
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_header_size(MAX_HEAD)
                .max_buf_size(MAX_HEAD);
            let conn = http.serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = stopped.wait_for(|s| *s) => {}
            }
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        });
    }
    let _ = stopping.send(true);
    // Every slot back: every connection ended.
    let _ = tokio::time::timeout(DRAIN, slots.acquire_many(MAX_CONNECTIONS as u32)).await;
    Ok(())
}
