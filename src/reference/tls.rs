//! The reference served over https (`tminus reference --tls DIR`), so the
//! shipped suites can be proven against a target behind a private CA and,
//! with `--tls-client-certs`, one that demands client certificates (issue
//! 25): the deployments staging and partner environments are.
//!
//! At start a CA is generated (rcgen), a server certificate it issues for
//! 127.0.0.1, ::1 and localhost, and with client certificates a second CA
//! and one client certificate it issues. The files a client needs are
//! written to DIR: `ca.pem` (what `--cacert` takes), `client.pem` and
//! `client.key` (what `--cert` and `--key` take). The keys are made for
//! this process and die with it; the client key is written 0600.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::Defect;

/// What `--tls` asks for.
#[derive(Debug, Clone, Default)]
pub struct TlsSetup {
    /// Where the CA certificate (and the client's files) are written;
    /// `None`: nowhere (the embedded reference, whose CA the run trusts in
    /// memory).
    pub dir: Option<PathBuf>,
    /// Whether a client certificate the client CA issued is required.
    pub client_certs: bool,
    /// The transport defects that shape the certificates and the handshake
    /// (`expiring-certificate`, `client-certs-optional`).
    pub defects: Vec<Defect>,
}

/// What was made: the CA's PEM, and the files written.
pub struct Written {
    pub ca_pem: String,
    pub ca: Option<PathBuf>,
    pub client: Option<(PathBuf, PathBuf)>,
    /// With client certificates: the client's certificate and key (PEM),
    /// for a run that presents them from memory (the embedded reference's
    /// listener that requires them). The key is a secret: never printed.
    pub client_pem: Option<(String, String)>,
}

/// How long the server certificate of `--defect expiring-certificate`
/// has left: under `transport.certificate`'s default of 14 days.
pub const EXPIRING_IN_DAYS: i64 = 7;

struct Ca {
    params: CertificateParams,
    key: KeyPair,
    cert: rcgen::Certificate,
}

fn ca(name: &str) -> Result<Ca, rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key)?;
    Ok(Ca { params, key, cert })
}

fn issue(
    ca: &Ca,
    names: &[&str],
    purpose: ExtendedKeyUsagePurpose,
    expires_in_days: Option<i64>,
) -> Result<(rcgen::Certificate, KeyPair), rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
    params.distinguished_name.push(DnType::CommonName, names[0]);
    params.extended_key_usages = vec![purpose];
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::days(1);
    // A year, as public CAs issue (the default is centuries).
    params.not_after = now + time::Duration::days(expires_in_days.unwrap_or(365));
    let issuer = Issuer::from_params(&ca.params, &ca.key);
    let cert = params.signed_by(&key, &issuer)?;
    Ok((cert, key))
}

fn write(path: &Path, text: &str, private: bool) -> Result<(), String> {
    use std::io::Write as _;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt as _;
        o.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    o.open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Generates the certificates, writes the client's files to `setup.dir`
/// (when given), and returns the server's TLS configuration (HTTP/1.1, TLS 1.2 and 1.3).
pub fn generate(setup: &TlsSetup) -> Result<(Arc<rustls::ServerConfig>, Written), String> {
    let bad = |e: rcgen::Error| format!("cannot generate the reference's certificates: {e}");
    if let Some(dir) = &setup.dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let server_ca = ca("tminus reference CA").map_err(bad)?;
    let expiring = setup.defects.contains(&Defect::ExpiringCertificate);
    let (server, server_key) = issue(
        &server_ca,
        &["127.0.0.1", "::1", "localhost"],
        ExtendedKeyUsagePurpose::ServerAuth,
        expiring.then_some(EXPIRING_IN_DAYS),
    )
    .map_err(bad)?;
    let ca_pem = server_ca.cert.pem();
    let ca_file = setup.dir.as_ref().map(|d| d.join("ca.pem"));
    if let Some(f) = &ca_file {
        write(f, &ca_pem, false)?;
    }

    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let mut client_files = None;
    let mut client_pem = None;
    let builder = if setup.client_certs {
        let client_ca = ca("tminus reference client CA").map_err(bad)?;
        let (client, client_key) = issue(
            &client_ca,
            &["tminus client"],
            ExtendedKeyUsagePurpose::ClientAuth,
            None,
        )
        .map_err(bad)?;
        if let Some(dir) = &setup.dir {
            let cert_file = dir.join("client.pem");
            let key_file = dir.join("client.key");
            write(&cert_file, &client.pem(), false)?;
            write(&key_file, &client_key.serialize_pem(), true)?;
            client_files = Some((cert_file, key_file));
        }
        client_pem = Some((client.pem(), client_key.serialize_pem()));
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(client_ca.cert.der().clone())
            .map_err(|e| format!("TLS: {e}"))?;
        let mut verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        // The defect: a certificate is checked when shown, but none is asked
        // for, so a client without one gets in.
        if setup.defects.contains(&Defect::ClientCertsOptional) {
            verifier = verifier.allow_unauthenticated();
        }
        let verifier = verifier.build().map_err(|e| format!("TLS: {e}"))?;
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let chain: Vec<CertificateDer<'static>> = vec![server.der().clone()];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("TLS: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((
        Arc::new(config),
        Written {
            ca_pem,
            ca: ca_file,
            client: client_files,
            client_pem,
        },
    ))
}

/// `--defect accepts-tls10`: when the connection opens with a TLS 1.0 or
/// 1.1 ClientHello, answers it with a ServerHello for that version, as a
/// server that still negotiates them would, and closes (rustls cannot go
/// on in those versions; the probe judges only this first record). Returns
/// whether it answered; a modern ClientHello is left for rustls.
pub async fn answer_legacy_hello(tcp: &tokio::net::TcpStream) -> bool {
    use crate::http::tls_legacy::{offered_version, server_hello, TLS11};
    let mut first = [0u8; 11];
    let peeked = async {
        loop {
            match tcp.peek(&mut first).await {
                Ok(n) if n >= first.len() => return true,
                Ok(0) | Err(_) => return false,
                Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
            }
        }
    };
    let full = tokio::time::timeout(std::time::Duration::from_secs(2), peeked)
        .await
        .unwrap_or(false);
    match offered_version(&first) {
        Some(v) if full && v <= TLS11 => {
            let hello = server_hello(v, rand::random());
            let mut sent = 0;
            while sent < hello.len() {
                if tcp.writable().await.is_err() {
                    break;
                }
                match tcp.try_write(&hello[sent..]) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(_) => break,
                }
            }
            true
        }
        _ => false,
    }
}
