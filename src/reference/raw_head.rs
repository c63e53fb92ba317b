//! The bytes a connection carried, for the `receiver-case-sensitive-headers`
//! defect only: hyper hands handlers lower-cased header names, so a receiver
//! that looks its headers up by their exact spelling (a case-sensitive map
//! built from the raw names, as some stacks do) cannot be modelled on the
//! parsed request. Under the defect each connection's reads are recorded
//! (the last [`KEEP`] bytes) and the router gets them as an extension, from
//! which the receiver reads the header names as they were sent.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes kept per connection (a request head and a webhook body fit).
const KEEP: usize = 256 << 10;

/// What one connection has read so far (its tail), shared with the handler.
#[derive(Clone, Default)]
pub(crate) struct RawHead(Arc<Mutex<Vec<u8>>>);

impl RawHead {
    /// The header names of the request to `path` whose body is `body`, as
    /// they were written: the head that ends right before the body (the
    /// last one for `path` on this connection). `None` when not found.
    pub(crate) fn names(&self, path: &str, body: &[u8]) -> Option<Vec<String>> {
        let buf = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let head_end = buf.len().checked_sub(body.len())?;
        let head = &buf[..head_end];
        let line = format!(" {path} HTTP/1.1\r\n");
        let start = head
            .windows(line.len())
            .rposition(|w| w == line.as_bytes())?;
        let text = String::from_utf8_lossy(&head[start..]);
        Some(
            text.split("\r\n")
                .skip(1)
                .take_while(|l| !l.is_empty())
                .filter_map(|l| l.split_once(':').map(|(k, _)| k.trim().to_owned()))
                .collect(),
        )
    }
}

/// A connection whose reads are copied into a [`RawHead`].
pub(crate) struct Recording<S> {
    inner: S,
    raw: RawHead,
}

impl<S> Recording<S> {
    pub(crate) fn new(inner: S) -> (Self, RawHead) {
        let raw = RawHead::default();
        (
            Recording {
                inner,
                raw: raw.clone(),
            },
            raw,
        )
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Recording<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let mut kept = self.raw.0.lock().unwrap_or_else(|p| p.into_inner());
            kept.extend_from_slice(&buf.filled()[before..]);
            if kept.len() > KEEP {
                let cut = kept.len() - KEEP;
                kept.drain(..cut);
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Recording<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serves one connection with `app`, recording it when `record` is set.
pub(crate) async fn serve_connection<S>(io: S, app: axum::Router, record: bool)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if record {
        let (io, raw) = Recording::new(io);
        let app = app.layer(axum::Extension(raw));
        let service = hyper_util::service::TowerToHyperService::new(app);
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(io), service)
            .await;
    } else {
        let service = hyper_util::service::TowerToHyperService::new(app);
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(io), service)
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_written_from_the_last_head_before_the_body() {
        let raw = RawHead::default();
        raw.0.lock().unwrap().extend_from_slice(
            b"POST /r HTTP/1.1\r\nwebhook-id: a\r\n\r\n{}POST /r HTTP/1.1\r\nHost: x\r\nWEBHOOK-SIGNATURE: v1,x\r\nContent-Length: 4\r\n\r\nbody",
        );
        assert_eq!(
            raw.names("/r", b"body").unwrap(),
            ["Host", "WEBHOOK-SIGNATURE", "Content-Length"]
        );
        assert!(raw.names("/other", b"body").is_none());
    }
}
