//! Connections tminus opens itself, beside the probe's client: the
//! pre-opened connections of `idempotency.concurrent` (one per copy, so the
//! copies leave together) and the connection `idempotency.lost_response`
//! drops before the answer. Both write HTTP/1.1 on a stream they own, so
//! this opens that stream, plain TCP for `http://` and TLS for `https://`,
//! with the trust and client certificate of the probe's client
//! ([`super::tls::installed`]): every role reaches an https target the same
//! way (issue 25 item 1).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream to the target, plain or TLS.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// An open connection, whichever its scheme.
pub type Stream = Box<dyn Io>;

/// Where `url` connects: (`host:port` to dial, the host for TLS's SNI and
/// certificate check, whether it is TLS).
pub struct Origin {
    pub addr: String,
    pub host: String,
    pub tls: bool,
}

impl Origin {
    pub fn of(url: &reqwest::Url) -> Result<Origin, String> {
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(format!(
                    "`{url}`: tminus speaks http and https, not {other}"
                ))
            }
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("`{url}` has no host"))?;
        let port = url
            .port_or_known_default()
            .unwrap_or(if tls { 443 } else { 80 });
        Ok(Origin {
            addr: format!("{host}:{port}"),
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            tls,
        })
    }
}

/// The rustls configuration of tminus's own HTTP/1.1 connections, built
/// once from the installed options (loading the platform's roots is not
/// free, and a race opens many connections at once).
pub fn http1_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut config = super::tls::installed()
                .cloned()
                .unwrap_or_default()
                .rustls_config()?;
            // These connections speak HTTP/1.1 only.
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        })
        .clone()
}

/// A TLS connection tminus opened itself.
pub type TlsStream = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// Why [`open_tls`] opened nothing.
pub enum OpenError {
    /// The handshake failed: the I/O error rustls's own error arrives in
    /// (what [`super::tls::explain`] and `is_certificate_error` read).
    Handshake(std::io::Error),
    /// Before or beside the handshake (no TCP connection, a bad name, the
    /// timeout): a line naming the address.
    Other(String),
}

impl OpenError {
    /// One line: the TLS explanation when there is one, with the address.
    pub fn line(&self, origin: &Origin) -> String {
        match self {
            OpenError::Handshake(e) => format!(
                "{} ({})",
                super::tls::explain(e).unwrap_or_else(|| format!("TLS: {e}")),
                origin.addr
            ),
            OpenError::Other(line) => line.clone(),
        }
    }
}

/// TCP (Nagle off: small requests leave in one segment, at once) to
/// `origin`, then the TLS handshake with `config`, all within `timeout`.
pub async fn open_tls(
    origin: &Origin,
    config: Arc<rustls::ClientConfig>,
    timeout: Duration,
) -> Result<TlsStream, OpenError> {
    let name = ServerName::try_from(origin.host.clone()).map_err(|e| {
        OpenError::Other(format!("`{}` is not a TLS server name: {e}", origin.host))
    })?;
    let connect = async {
        let tcp = connect_tcp(origin).await.map_err(OpenError::Other)?;
        tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .map_err(OpenError::Handshake)
    };
    tokio::time::timeout(timeout, connect).await.map_err(|_| {
        OpenError::Other(format!(
            "no TLS connection to {} within {timeout:?}",
            origin.addr
        ))
    })?
}

/// The most a proxy's answer to `CONNECT` may take before its blank line.
const MAX_CONNECT_HEAD: usize = 16 * 1024;

/// A TCP connection to `origin` (Nagle off: small requests leave in one
/// segment, at once): straight, or through the installed proxy as a
/// `CONNECT` tunnel (RFC 9110 §9.3.6) for either scheme, so the bytes
/// tminus writes reach the target as written. The caller bounds the time.
pub async fn connect_tcp(origin: &Origin) -> Result<tokio::net::TcpStream, String> {
    let port = origin
        .addr
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(if origin.tls { 443 } else { 80 });
    let proxy =
        super::proxy::installed().and_then(|p| p.for_origin(origin.tls, &origin.host, port));
    let Some(proxy) = proxy else {
        let tcp = tokio::net::TcpStream::connect(&origin.addr)
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", origin.addr))?;
        let _ = tcp.set_nodelay(true);
        return Ok(tcp);
    };
    let at = super::proxy::shown(proxy);
    let mut tcp = tokio::net::TcpStream::connect(&at).await.map_err(|e| {
        format!(
            "cannot connect to the proxy {at} (for {}): {e}",
            origin.addr
        )
    })?;
    let _ = tcp.set_nodelay(true);
    let mut head = format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n", origin.addr);
    let auth = super::proxy::basic_auth(proxy);
    if let Some(auth) = &auth {
        head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    head.push_str("\r\n");
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tcp.write_all(head.as_bytes())
        .await
        .map_err(|e| format!("the proxy {at} closed the connection: {e}"))?;
    // Read the answer byte by byte: what follows its blank line is the
    // target's, not ours to consume.
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() >= MAX_CONNECT_HEAD {
            return Err(format!(
                "the proxy {at} answered CONNECT with more than {MAX_CONNECT_HEAD} bytes of head"
            ));
        }
        match tcp.read(&mut byte).await {
            Ok(0) | Err(_) => {
                return Err(format!(
                    "the proxy {at} closed the connection before answering CONNECT {}",
                    origin.addr
                ))
            }
            Ok(_) => answer.push(byte[0]),
        }
    }
    let status_line = String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned();
    let code = status_line.split_whitespace().nth(1).unwrap_or("");
    if !code.starts_with('2') || code.len() != 3 {
        let credentials = match (&auth, code) {
            (Some(_), _) => "proxy credentials were sent (Proxy-Authorization, from the proxy URL)",
            (None, "407") => "no proxy credentials were sent: put them in the proxy URL, http://user:password@host:port",
            (None, _) => "no proxy credentials were sent",
        };
        return Err(format!(
            "the proxy {at} refused CONNECT {}: `{}`; {credentials}",
            origin.addr,
            crate::redact::quote(status_line.trim())
        ));
    }
    Ok(tcp)
}

/// Opens a connection to `origin` within `timeout`: plain TCP (Nagle off)
/// for http, [`open_tls`] with the probe's trust and client certificate
/// for https. A TLS failure reads as the line [`super::tls::explain`]
/// gives it.
pub async fn open(origin: &Origin, timeout: Duration) -> Result<Stream, String> {
    if origin.tls {
        return open_tls(origin, http1_config()?, timeout)
            .await
            .map(|s| Box::new(s) as Stream)
            .map_err(|e| e.line(origin));
    }
    let connect = async { Ok(Box::new(connect_tcp(origin).await?) as Stream) };
    tokio::time::timeout(timeout, connect)
        .await
        .map_err(|_| format!("no connection to {} within {timeout:?}", origin.addr))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_know_their_scheme_host_and_port() {
        let o = Origin::of(&"https://api.example:8443/x".parse().unwrap()).unwrap();
        assert_eq!(
            (o.addr.as_str(), o.host.as_str(), o.tls),
            ("api.example:8443", "api.example", true)
        );
        let o = Origin::of(&"http://127.0.0.1/x".parse().unwrap()).unwrap();
        assert_eq!((o.addr.as_str(), o.tls), ("127.0.0.1:80", false));
        let o = Origin::of(&"https://[::1]/".parse().unwrap()).unwrap();
        assert_eq!((o.addr.as_str(), o.host.as_str()), ("[::1]:443", "::1"));
        assert!(Origin::of(&"ftp://h/".parse().unwrap()).is_err());
    }
}
