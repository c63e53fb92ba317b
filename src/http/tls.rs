//! TLS options of the clients tminus sends with (issue 25 item 1) and the one
//! line a TLS failure becomes (issue 24 item 16).
//!
//! `--cacert FILE` adds a private CA to the platform's roots, `--cert FILE`
//! and `--key FILE` present a client certificate (the names curl and Hurl
//! use). They are read once, before anything is sent, and installed for the
//! whole process ([`install`]): every client built from
//! [`super::client_builder`] (the probe's and each burst user's) then
//! carries them, without each role threading them through. The key's
//! content is a secret: no message quotes it, only its file's name.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// A PEM file is small; anything larger is a mistake (a wrong path).
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// What the command line and the suites' `target.tls` asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// `--cacert`: PEM certificates to trust besides the platform's roots.
    pub ca: Option<TlsFile>,
    /// `--cert`: the client certificate chain (PEM); may also hold the key.
    pub cert: Option<TlsFile>,
    /// `--key`: the client certificate's private key (PEM).
    pub key: Option<TlsFile>,
    /// The name the server's certificate is verified against instead of
    /// the URL's host (and the SNI of the connections tminus opens itself).
    pub server_name: Option<String>,
    /// Offer TLS 1.3 only (`min_version: "1.3"`); otherwise 1.2 and 1.3.
    pub tls13_only: bool,
    /// Accept any server certificate (`--insecure`).
    pub insecure: bool,
}

/// A PEM file named by an option, and which option named it (`--cacert`,
/// `target.tls.ca of suites/a.yaml`): every message about the file says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFile {
    pub path: PathBuf,
    pub option: String,
}

impl TlsFile {
    pub fn new(option: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        TlsFile {
            path: path.into(),
            option: option.into(),
        }
    }
    fn shown(&self) -> String {
        format!("{} {}", self.option, self.path.display())
    }
}

/// The options read and parsed.
#[derive(Clone, Default)]
pub struct Tls {
    roots: Vec<reqwest::Certificate>,
    /// The roots as rustls reads them, for the
    /// connections tminus opens itself ([`Tls::rustls_config`]).
    root_ders: Vec<CertificateDer<'static>>,
    client_auth: Option<Arc<ClientAuth>>,
    server_name: Option<ServerName<'static>>,
    tls13_only: bool,
    insecure: bool,
}

/// The client certificate chain and its key (a secret: no `Debug`).
struct ClientAuth {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl TlsOptions {
    pub fn is_empty(&self) -> bool {
        *self == TlsOptions::default()
    }

    /// These options with `over`'s given fields in their place (the command
    /// line over a suite's `target.tls`).
    pub fn overlaid(self, over: TlsOptions) -> TlsOptions {
        TlsOptions {
            ca: over.ca.or(self.ca),
            // A certificate and its key come as a pair: a `--cert` replaces
            // the suite's key too.
            key: if over.cert.is_some() || over.key.is_some() {
                over.key
            } else {
                self.key
            },
            cert: over.cert.or(self.cert),
            server_name: over.server_name.or(self.server_name),
            tls13_only: over.tls13_only || self.tls13_only,
            insecure: over.insecure || self.insecure,
        }
    }

    /// Whether both ask for the same TLS (the files and values, whichever
    /// option named them).
    pub fn same_as(&self, other: &TlsOptions) -> bool {
        let path = |f: &Option<TlsFile>| {
            f.as_ref()
                .map(|f| std::path::absolute(&f.path).unwrap_or_else(|_| f.path.clone()))
        };
        path(&self.ca) == path(&other.ca)
            && path(&self.cert) == path(&other.cert)
            && path(&self.key) == path(&other.key)
            && self.server_name == other.server_name
            && self.tls13_only == other.tls13_only
            && self.insecure == other.insecure
    }

    /// Reads and parses the files; an error names the option and the file,
    /// never the key's content.
    pub fn load(&self) -> Result<Tls, String> {
        let mut tls = Tls {
            tls13_only: self.tls13_only,
            insecure: self.insecure,
            ..Tls::default()
        };
        if let Some(name) = &self.server_name {
            tls.server_name = Some(ServerName::try_from(name.clone()).map_err(|_| {
                format!("TLS server_name `{name}` is not a DNS name or an IP address")
            })?);
        }
        if let Some(ca) = &self.ca {
            let pem = read(ca)?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .ok()
                .filter(|c| !c.is_empty())
                .ok_or_else(|| {
                    format!(
                        "{}: no PEM certificate in it (`-----BEGIN CERTIFICATE-----`)",
                        ca.shown()
                    )
                })?;
            tls.roots = certs;
            tls.root_ders = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<_, _>>()
                .map_err(|_| format!("{}: a PEM certificate in it cannot be read", ca.shown()))?;
        }
        match (&self.cert, &self.key) {
            (None, None) => {}
            (None, Some(k)) => {
                return Err(format!(
                    "{} needs --cert (or target.tls.cert): the certificate it belongs to",
                    k.shown()
                ))
            }
            (Some(c), key) => {
                let mut pem = read(c)?;
                if !has_pem(&pem, "CERTIFICATE") {
                    return Err(format!(
                        "{}: no PEM certificate in it (`-----BEGIN CERTIFICATE-----`)",
                        c.shown()
                    ));
                }
                let cert_pem = pem.clone();
                let key_pem = match key {
                    Some(k) => {
                        let key_pem = read(k)?;
                        if !has_pem(&key_pem, "PRIVATE KEY") {
                            return Err(format!(
                                "{}: no PEM private key in it (`-----BEGIN PRIVATE KEY-----`, PKCS#8, PKCS#1 or SEC1)",
                                k.shown()
                            ));
                        }
                        pem.push(b'\n');
                        pem.extend_from_slice(&key_pem);
                        key_pem
                    }
                    None if !has_pem(&pem, "PRIVATE KEY") => {
                        return Err(format!(
                            "{} holds no private key: give it with --key FILE (or target.tls.key)",
                            c.shown()
                        ))
                    }
                    None => pem.clone(),
                };
                let key_shown = key.as_ref().unwrap_or(c).shown();
                // Every shape that cannot work is said here, by file and
                // fix, before the TLS library would refuse it at the first
                // request with no cause.
                let super::client_cert::ClientPair { chain, key } =
                    super::client_cert::check(&c.shown(), &cert_pem, &key_shown, &key_pem)?;
                tls.client_auth = Some(Arc::new(ClientAuth { chain, key }));
            }
        }
        // With a server_name or a CA the reqwest clients take this
        // configuration (`apply`): a failure to build it is said here, not
        // swallowed there. A client certificate is tried in it too, so that
        // nothing is left for a "builder error" at the first request.
        if tls.server_name.is_some() || !tls.root_ders.is_empty() || tls.client_auth.is_some() {
            tls.rustls_config()?;
        }
        Ok(tls)
    }
}

fn read(file: &TlsFile) -> Result<Vec<u8>, String> {
    crate::files::read_file_capped(&file.path, MAX_PEM_BYTES)
        .map_err(|e| format!("{}: {e}", file.option))
}

/// Whether `pem` holds a block whose label ends with `label`
/// (`PRIVATE KEY` matches `RSA PRIVATE KEY` and `EC PRIVATE KEY`).
fn has_pem(pem: &[u8], label: &str) -> bool {
    String::from_utf8_lossy(pem).lines().any(|l| {
        l.trim()
            .strip_prefix("-----BEGIN ")
            .and_then(|r| r.strip_suffix("-----"))
            .is_some_and(|l| l.ends_with(label))
    })
}

impl Tls {
    /// Trusts the certificates of `pem` too (the embedded reference's CA,
    /// made for this run).
    pub fn trust_pem(&mut self, pem: &[u8]) -> Result<(), String> {
        let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| format!("TLS: {e}"))?;
        let ders = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("TLS: {e}"))?;
        self.roots.extend(certs);
        self.root_ders.extend(ders);
        Ok(())
    }

    /// Presents this client certificate and key (PEM, made in memory: the
    /// embedded reference's listener that requires one), checked as
    /// `--cert`/`--key` are.
    pub fn identify_pem(&mut self, cert_pem: &[u8], key_pem: &[u8]) -> Result<(), String> {
        let super::client_cert::ClientPair { chain, key } = super::client_cert::check(
            "the embedded reference's client certificate",
            cert_pem,
            "its key",
            key_pem,
        )?;
        self.client_auth = Some(Arc::new(ClientAuth { chain, key }));
        self.rustls_config().map(|_| ())
    }

    /// Whether a client certificate is given.
    pub fn has_identity(&self) -> bool {
        self.client_auth.is_some()
    }

    /// [`Tls::rustls_config`] without the client certificate (a connection
    /// that shows none: `transport.mtls_required`).
    pub fn without_identity(&self) -> Tls {
        Tls {
            client_auth: None,
            ..self.clone()
        }
    }

    /// Whether any server certificate is accepted (`--insecure`).
    pub fn is_insecure(&self) -> bool {
        self.insecure
    }

    /// The name the server's certificate is checked against, when not the
    /// URL's host (`target.tls.server_name`).
    pub fn server_name(&self) -> Option<&ServerName<'static>> {
        self.server_name.as_ref()
    }

    /// The builder with these roots, this identity and these versions.
    pub fn apply(&self, mut b: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        if self.server_name.is_some() || !self.root_ders.is_empty() || self.client_auth.is_some() {
            // reqwest checks the certificate against the URL's host, and
            // refuses a self-signed certificate given to trust as the
            // server's own (`CaUsedAsEndEntity`): another name, or a pinned
            // certificate, needs a verifier of tminus's, in a rustls
            // configuration that then carries everything else too.
            // A client certificate too: reqwest's own identity goes through
            // webpki, which refuses an X.509 v1 certificate (what `openssl
            // x509 -req` makes by default) as "builder error"; tminus's
            // resolver presents it as OpenSSL-based clients do, the pair
            // checked in `TlsOptions::load` (src/http/client_cert.rs).
            // It built in `TlsOptions::load` already.
            if let Ok(mut config) = self.rustls_config() {
                config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
                return b.tls_backend_preconfigured(config);
            }
        }
        if !self.roots.is_empty() {
            b = b.tls_certs_merge(self.roots.iter().cloned());
        }
        if self.tls13_only {
            b = b.tls_version_min(reqwest::tls::Version::TLS_1_3);
        }
        if self.insecure {
            b = b.tls_danger_accept_invalid_certs(true);
        }
        b
    }

    /// A rustls configuration with the same trust and identity as the
    /// reqwest clients: the platform's roots plus `--cacert`, verified as
    /// reqwest verifies them (rustls-platform-verifier) against the
    /// `server_name` when one is given, the client certificate when one is
    /// given; with `--insecure`, any certificate.
    pub fn rustls_config(&self) -> Result<rustls::ClientConfig, String> {
        if self.insecure {
            return self.chain_reading_config();
        }
        self.verifying_config()
    }

    /// [`Tls::rustls_config`] that verifies the server's certificate even
    /// under `--insecure` (what `transport.certificate` judges with).
    pub fn verifying_config(&self) -> Result<rustls::ClientConfig, String> {
        self.config_with(self.platform_verifier(None)?)
    }

    /// The platform's verifier with these roots, for `server_name` or the
    /// dialled host; recording into `observed` instead of enforcing, when given.
    fn platform_verifier(
        &self,
        observed: Option<Arc<std::sync::Mutex<Observed>>>,
    ) -> Result<Verifier, String> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let platform = rustls_platform_verifier::Verifier::new_with_extra_roots(
            self.root_ders.iter().cloned(),
            provider.clone(),
        )
        .map_err(|e| format!("TLS: the platform's roots cannot be loaded: {e}"))?;
        Ok(Verifier {
            inner: Some(Arc::new(platform)),
            name: self.server_name.clone(),
            provider,
            observed,
            pinned: self.root_ders.clone(),
        })
    }

    fn config_with(&self, verifier: Verifier) -> Result<rustls::ClientConfig, String> {
        let provider = verifier.provider.clone();
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone());
        let builder = if self.tls13_only {
            builder.with_protocol_versions(&[&rustls::version::TLS13])
        } else {
            builder.with_safe_default_protocol_versions()
        }
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
        match &self.client_auth {
            None => Ok(builder.with_no_client_auth()),
            Some(a) => {
                let signer = provider
                    .key_provider
                    .load_private_key(a.key.clone_key())
                    // rustls's message names the problem, never the key.
                    .map_err(|e| format!("TLS: the client certificate cannot be used: {e}"))?;
                let certified = rustls::sign::CertifiedKey::new(a.chain.clone(), signer);
                Ok(builder
                    .with_client_cert_resolver(Arc::new(FixedClientCert(Arc::new(certified)))))
            }
        }
    }
}

/// The one client certificate, presented whenever the server asks.
/// Unlike rustls's `with_client_auth_cert`, building it does not parse the
/// certificate with webpki, which refuses X.509 v1; the server judges the
/// certificate, as with any OpenSSL-based client.
#[derive(Debug)]
struct FixedClientCert(Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for FixedClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// How long [`diagnose`] waits for the handshake, and then for an alert.
const DIAGNOSE_HANDSHAKE: Duration = Duration::from_secs(5);
const DIAGNOSE_ALERT: Duration = Duration::from_secs(1);

/// Why an https exchange with `host:port` failed, when its error named no
/// TLS cause; `None` when the TLS layer is not to blame.
///
/// In TLS 1.3 the server judges the client's certificate after the client
/// has finished its handshake: the client sends its request over a
/// connection it believes is good, and the server's alert
/// (`certificate_required`, `unknown_ca`, `bad_certificate`) can reach the
/// connection before the request does. hyper then reports only "connection
/// was not ready" or "connection closed", and the alert, which says what is
/// wrong, is lost. So the handshake is repeated alone, with the same trust
/// and identity, and the first read after it waits briefly for that alert.
/// No request is sent: what the server sees is one more handshake from the
/// same client, to the origin it was already talking to. `tls` is what the
/// failed client carried (the [`installed`] options, or the default).
pub async fn diagnose(tls: &Tls, origin: &super::stream::Origin) -> Option<String> {
    let config = Arc::new(tls.rustls_config().ok()?);
    let mut stream = match super::stream::open_tls(origin, config, DIAGNOSE_HANDSHAKE).await {
        Ok(s) => s,
        Err(super::stream::OpenError::Handshake(e)) => return explain(&e),
        Err(super::stream::OpenError::Other(_)) => return None,
    };
    let mut byte = [0u8; 1];
    match tokio::time::timeout(
        DIAGNOSE_ALERT,
        tokio::io::AsyncReadExt::read(&mut stream, &mut byte),
    )
    .await
    {
        Ok(Err(e)) => explain(&e),
        _ => None,
    }
}

static INSTALLED: OnceLock<Tls> = OnceLock::new();

/// Sets the TLS options of every client built after it, once per process,
/// before the first client (`tminus run` does it right after parsing).
pub fn install(tls: Tls) -> Result<(), String> {
    INSTALLED
        .set(tls)
        .map_err(|_| "the TLS options were already set".to_owned())
}

/// The installed options (none: the platform's roots, no client certificate).
pub fn installed() -> Option<&'static Tls> {
    INSTALLED.get()
}

/// The one line a TLS failure in `e`'s chain reads as: what is wrong and
/// what to do; `None` when the failure is not TLS.
pub fn explain(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rustls::{AlertDescription, CertificateError, Error};
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(t) = rustls_error(err, 4) {
            const TRUST: &str = "to trust a private CA, pass --cacert FILE (its PEM certificate)";
            return Some(match t {
                Error::InvalidCertificate(c) => match c {
                    CertificateError::UnknownIssuer => {
                        format!("TLS: the server's certificate is signed by an unknown issuer; {TRUST}")
                    }
                    CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                        "TLS: the server's certificate has expired".to_owned()
                    }
                    CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                        "TLS: the server's certificate is not valid yet (check both clocks)".to_owned()
                    }
                    CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. } => {
                        "TLS: the server's certificate is not for this host name (name mismatch)".to_owned()
                    }
                    CertificateError::Revoked => "TLS: the server's certificate is revoked".to_owned(),
                    CertificateError::Other(o) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
                        "TLS: the server presents a CA certificate as its own (CaUsedAsEndEntity): it must serve a certificate issued by that CA".to_owned()
                    }
                    CertificateError::Other(o) if format!("{o:?}").contains("UnknownIssuer") => {
                        format!("TLS: the server's certificate is signed by an unknown issuer; {TRUST}")
                    }
                    other => format!("TLS: the server's certificate is refused ({other:?}); {TRUST}"),
                },
                Error::AlertReceived(AlertDescription::CertificateRequired)
                | Error::AlertReceived(AlertDescription::HandshakeFailure)
                    if installed().is_none_or(|t| t.client_auth.is_none()) =>
                {
                    format!(
                        "TLS: the server requires a client certificate ({}): pass --cert FILE and --key FILE",
                        alert(t)
                    )
                }
                Error::AlertReceived(AlertDescription::ProtocolVersion) => format!(
                    "TLS: the server speaks none of the TLS versions tminus offers (alert ProtocolVersion){}",
                    if installed().is_some_and(|t| t.tls13_only) {
                        ": min_version \"1.3\" offers TLS 1.3 only"
                    } else {
                        ": tminus offers TLS 1.2 and 1.3"
                    }
                ),
                Error::AlertReceived(
                    AlertDescription::BadCertificate
                    | AlertDescription::UnknownCA
                    | AlertDescription::CertificateUnknown
                    | AlertDescription::CertificateRequired,
                ) => format!(
                    "TLS: the server refused tminus's client certificate ({}): is it issued by a CA the server trusts?",
                    alert(t)
                ),
                other => format!("TLS: {other}"),
            });
        }
        cur = err.source();
    }
    None
}

/// The rustls error `e` is or wraps. rustls reaches reqwest inside an
/// `io::Error` (whose `source()` skips the error it wraps) and, on the
/// connect path, inside a boxed error: look inside both.
fn rustls_error<'a>(
    e: &'a (dyn std::error::Error + 'static),
    depth: usize,
) -> Option<&'a rustls::Error> {
    if let Some(t) = e.downcast_ref::<rustls::Error>() {
        return Some(t);
    }
    if depth == 0 {
        return None;
    }
    let inner = e
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())?;
    rustls_error(inner, depth - 1)
}

fn alert(e: &rustls::Error) -> String {
    match e {
        rustls::Error::AlertReceived(a) => format!("alert {a:?}"),
        other => other.to_string(),
    }
}

/// Whether `e`'s chain holds a rustls certificate error (the server's
/// certificate was refused), as opposed to a network or protocol failure.
pub fn is_certificate_error(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(t) = rustls_error(err, 4) {
            return matches!(t, rustls::Error::InvalidCertificate(_));
        }
        cur = err.source();
    }
    false
}

/// tminus's certificate verifier around the platform's: with `inner`, the
/// chain is verified for `name` (`target.tls.server_name`) or the dialled
/// host; without, any certificate is accepted: under `--insecure`. Handshake
/// signatures are verified, unless `observed` is set: then neither the
/// chain nor the signature is enforced, both verdicts are recorded there,
/// and the connection is one that sends nothing (see [`Tls::observing_config`]).
#[derive(Debug)]
struct Verifier {
    inner: Option<Arc<rustls_platform_verifier::Verifier>>,
    name: Option<ServerName<'static>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
    observed: Option<Arc<std::sync::Mutex<Observed>>>,
    /// The certificates given to trust (`--cacert`, `target.tls.ca`): a
    /// server that presents one of them as its own is trusted as that
    /// exact certificate, CA:TRUE or not, when it names the host and is in
    /// date, as OpenSSL-based clients (curl, Python) trust a self-signed
    /// certificate made with `openssl req -x509`. webpki alone refuses it
    /// (`CaUsedAsEndEntity`).
    pinned: Vec<CertificateDer<'static>>,
}

impl Verifier {
    /// A certificate given to trust, presented as the server's own: valid
    /// for `name` and at `now`, else the error that says why not.
    fn pinned_verdict(
        &self,
        end_entity: &CertificateDer<'_>,
        name: &ServerName<'_>,
        now: rustls::pki_types::UnixTime,
    ) -> Option<Result<(), rustls::Error>> {
        use rustls::CertificateError;
        if !self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
        {
            return None;
        }
        let invalid = |e| Some(Err(rustls::Error::InvalidCertificate(e)));
        let Ok(cert) = webpki::EndEntityCert::try_from(end_entity) else {
            return invalid(CertificateError::BadEncoding);
        };
        if cert.verify_is_valid_for_subject_name(name).is_err() {
            return invalid(CertificateError::NotValidForName);
        }
        use x509_parser::prelude::{FromDer, X509Certificate};
        let Ok((_, parsed)) = X509Certificate::from_der(end_entity.as_ref()) else {
            return invalid(CertificateError::BadEncoding);
        };
        let now = now.as_secs() as i64;
        let validity = parsed.validity();
        if now > validity.not_after.timestamp() {
            return invalid(CertificateError::Expired);
        }
        if now < validity.not_before.timestamp() {
            return invalid(CertificateError::NotValidYet);
        }
        Some(Ok(()))
    }
}

/// What an observing handshake saw of the server's proof of identity:
/// whether its chain verifies for the host (`None` when not asked), and
/// whether its handshake signature verifies (a key too weak for the
/// platform's algorithms, RSA under 2048 bits, fails here).
#[derive(Debug, Default)]
pub struct Observed {
    pub chain: Option<Result<(), rustls::Error>>,
    pub signature: Option<Result<(), rustls::Error>>,
}

impl Verifier {
    fn signature(
        &self,
        verdict: Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error>,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        match &self.observed {
            None => verdict,
            Some(seen) => {
                if let Ok(mut seen) = seen.lock() {
                    // The first failure is the one to report.
                    if !matches!(seen.signature, Some(Err(_))) {
                        seen.signature = Some(verdict.map(|_| ()));
                    }
                }
                Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
            }
        }
    }
}

impl rustls::client::danger::ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        dialled: &ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let name = self.name.as_ref().unwrap_or(dialled);
        let verdict = match &self.inner {
            None => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            Some(v) => {
                match v.verify_server_cert(end_entity, intermediates, name, ocsp_response, now) {
                    Ok(ok) => Ok(ok),
                    Err(e) => match self.pinned_verdict(end_entity, name, now) {
                        Some(Ok(())) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
                        Some(Err(pinned)) => Err(pinned),
                        None => Err(e),
                    },
                }
            }
        };
        match &self.observed {
            None => verdict,
            Some(seen) => {
                if let (Ok(mut seen), true) = (seen.lock(), self.inner.is_some()) {
                    seen.chain = Some(verdict.map(|_| ()));
                }
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.signature(rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        ))
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.signature(rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        ))
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

impl Tls {
    /// A configuration that accepts any certificate (`--insecure`); the
    /// handshake signature is still verified.
    pub fn chain_reading_config(&self) -> Result<rustls::ClientConfig, String> {
        self.config_with(Verifier {
            inner: None,
            name: None,
            provider: Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
            observed: None,
            pinned: Vec::new(),
        })
    }

    /// A configuration that completes the handshake whatever the server's
    /// certificate and handshake signature, and records in `seen` whether
    /// each would have been accepted (the chain verified as
    /// [`Tls::verifying_config`] verifies it). Only for connections that
    /// send nothing: `transport.certificate` reads and judges the chain of a
    /// server whose certificate a client would refuse (expired, for another
    /// name, a 1024-bit RSA key), and `transport.protocol` asks the version
    /// whatever the certificate. With the client certificate, so a server
    /// demanding one still shows its chain.
    pub fn observing_config(
        &self,
        seen: Arc<std::sync::Mutex<Observed>>,
    ) -> Result<rustls::ClientConfig, String> {
        self.config_with(self.platform_verifier(Some(seen))?)
    }
}
