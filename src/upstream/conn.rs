//! Connections the upstream can drop on purpose: a listener whose streams
//! carry a kill flag that a handler can set (the `close` fault). After the
//! flag is set, reads see end-of-file and writes fail, so hyper drops the
//! connection without having sent a single byte of the response.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;

/// Plain TCP, or TLS with the certificate of `--upstream-cert`.
pub enum KillListener {
    Plain(TcpListener),
    Tls(crate::http::tls_server::TlsIncoming),
}

pub struct KillIo {
    inner: Box<dyn crate::http::stream::Io>,
    killed: Arc<AtomicBool>,
}

/// The handler's handle on its connection.
#[derive(Clone)]
pub struct ConnKill(Arc<AtomicBool>);

impl ConnKill {
    pub fn kill(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Listener for KillListener {
    type Io = KillIo;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (KillIo, SocketAddr) {
        let killed = Arc::new(AtomicBool::new(false));
        match self {
            KillListener::Tls(incoming) => {
                let (s, a) = incoming.next().await;
                let inner: Box<dyn crate::http::stream::Io> = Box::new(s);
                (KillIo { inner, killed }, a)
            }
            KillListener::Plain(l) => loop {
                match TcpListener::accept(l).await {
                    Ok((s, a)) => {
                        let _ = s.set_nodelay(true);
                        let inner: Box<dyn crate::http::stream::Io> = Box::new(s);
                        return (KillIo { inner, killed }, a);
                    }
                    // Out of descriptors and the like: back off briefly, as axum does.
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
                }
            },
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            KillListener::Plain(l) => l.local_addr(),
            KillListener::Tls(i) => Listener::local_addr(i),
        }
    }
}

impl Connected<IncomingStream<'_, KillListener>> for ConnKill {
    fn connect_info(s: IncomingStream<'_, KillListener>) -> Self {
        ConnKill(s.io().killed.clone())
    }
}

impl KillIo {
    fn dead(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }
}

impl AsyncRead for KillIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.dead() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.dead() {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.dead() {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
