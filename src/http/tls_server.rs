//! https for the servers tminus runs for the target to call: the webhook
//! sink (platforms that deliver only to https) and the mock upstream
//! (clients that refuse plain http), with a certificate the user gives
//! (`--sink-cert`/`--sink-key`, `--upstream-cert`/`--upstream-key`, issue 25
//! item 1). The key's content is a secret: no message quotes it.
//!
//! [`TlsIncoming`] is an axum [`Listener`]: TCP connections are accepted by
//! a task of its own and each handshake runs in a task of its own, bounded,
//! so a client that stalls its handshake holds up nobody else.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::Listener;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::tls::TlsFile;

/// How long one client may take over its handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Handshakes finished and not yet taken by the server.
const READY: usize = 64;

/// A server configuration from a PEM certificate chain and its key (`cert`
/// may hold both; `key` may be the same file). Errors name the option and
/// the file, never the key.
pub fn server_config(
    cert: &TlsFile,
    key: Option<&TlsFile>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let read = |f: &TlsFile| {
        crate::files::read_file_capped(&f.path, super::tls::MAX_PEM_BYTES)
            .map_err(|e| format!("{}: {e}", f.option))
    };
    let shown = |f: &TlsFile| format!("{} {}", f.option, f.path.display());
    let cert_pem = read(cert)?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .ok()
        .filter(|c: &Vec<_>| !c.is_empty())
        .ok_or_else(|| {
            format!(
                "{}: no PEM certificate in it (`-----BEGIN CERTIFICATE-----`)",
                shown(cert)
            )
        })?;
    let key_pem = match key {
        Some(k) => read(k)?,
        None => cert_pem.clone(),
    };
    let key_file = key.unwrap_or(cert);
    let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| {
        format!(
            "{}: no PEM private key tminus can read (PKCS#8, PKCS#1 or SEC1)",
            shown(key_file)
        )
    })?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        // rustls's message names the mismatch, never the key.
        .with_single_cert(chain, private)
        .map_err(|e| {
            format!(
                "{} and {}: not a certificate and its key ({e})",
                shown(cert),
                shown(key_file)
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A server configuration as the sink's and the upstream's settings hold
/// it: equal when it is the same one.
#[derive(Debug, Clone)]
pub struct ServerTls(pub Arc<rustls::ServerConfig>);

impl PartialEq for ServerTls {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for ServerTls {}

/// A TLS stream the server side accepted.
pub type ServerStream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

/// Accepted, handshaken TLS connections, for `axum::serve`.
pub struct TlsIncoming {
    ready: mpsc::Receiver<(ServerStream, SocketAddr)>,
    local: SocketAddr,
    accepting: tokio::task::JoinHandle<()>,
}

impl TlsIncoming {
    pub fn new(listener: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(READY);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let accepting = tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(a) => a,
                    // Out of descriptors and the like: back off, as axum does.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if tx.is_closed() {
                    return;
                }
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    if let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)).await
                    {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        });
        Ok(TlsIncoming {
            ready,
            local,
            accepting,
        })
    }

    /// The next connection whose handshake succeeded.
    pub async fn next(&mut self) -> (ServerStream, SocketAddr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accepting task ended (it never does while we hold the
            // receiver): wait for shutdown.
            None => std::future::pending().await,
        }
    }
}

impl Drop for TlsIncoming {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl Listener for TlsIncoming {
    type Io = ServerStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (ServerStream, SocketAddr) {
        self.next().await
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}
