//! The transport properties only a TLS connection shows: the server's
//! chain (`transport.certificate`), the versions it negotiates
//! (`transport.protocol`) and whether it demands a client certificate
//! (`transport.mtls_required`). The connections are tminus's own, opened
//! with the probe's trust (the platform's roots plus `--cacert`) and, where
//! the property needs it, without its client certificate; no request is
//! sent except the one `mtls_required` sends without a certificate.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::context::{CheckContext, Scope};
use crate::families::common::describe;
use crate::families::transport::exec::https_origin;
use crate::families::transport::plan::{CertificatePlan, MtlsPlan, ProtocolPlan};
use crate::http::stream::{self, OpenError, Origin, TlsStream};
use crate::http::tls::{self, Tls};
use crate::http::tls_legacy::{self, Answer, Offer, Verdict};
use crate::outcome::{Assertion, Evidence, Outcome};

/// The bound of every connection and read here.
const WAIT: Duration = Duration::from_secs(10);
/// The most a legacy probe reads of the server's first flight.
const FIRST_FLIGHT_CAP: usize = 16 * 1024;

fn installed() -> Tls {
    tls::installed().cloned().unwrap_or_default()
}

/// A TLS connection to `origin` with `config`, within [`WAIT`].
async fn connect(origin: &Origin, config: rustls::ClientConfig) -> Result<TlsStream, OpenError> {
    stream::open_tls(origin, Arc::new(config), WAIT).await
}

/// A connection that failed for another reason than the property judged:
/// tminus could not do its job, and says where and why.
fn unreachable(origin: &Origin, e: OpenError) -> Outcome {
    Outcome::error(e.line(origin))
}

/// What a leaf certificate says about itself.
struct Leaf {
    subject: String,
    not_after_unix: i64,
    /// (algorithm, bits): `("RSA", 2048)`, `("EC", 256)`, `("Ed25519", 256)`.
    key: (&'static str, usize),
}

fn read_leaf(der: &CertificateDer<'_>) -> Result<Leaf, String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    use x509_parser::public_key::PublicKey;
    let (_, cert) = X509Certificate::from_der(der.as_ref())
        .map_err(|e| format!("the server's certificate does not parse as X.509: {e}"))?;
    let spki = cert.public_key();
    let oid = spki.algorithm.algorithm.to_id_string();
    let key = match (oid.as_str(), spki.parsed()) {
        ("1.3.101.112", _) => ("Ed25519", 256),
        ("1.3.101.113", _) => ("Ed448", 456),
        (_, Ok(PublicKey::RSA(r))) => ("RSA", r.key_size()),
        (_, Ok(PublicKey::EC(e))) => ("EC", e.key_size()),
        (_, Ok(PublicKey::DSA(_))) => ("DSA", 0),
        _ => ("unknown", 0),
    };
    Ok(Leaf {
        subject: cert.subject().to_string(),
        not_after_unix: cert.validity().not_after.timestamp(),
        key,
    })
}

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// An observing handshake with `origin` (see [`Tls::observing_config`]):
/// the stream and what it saw of the chain and the signature.
async fn observe(origin: &Origin, tls: &Tls) -> Result<(TlsStream, tls::Observed), Outcome> {
    let seen = Arc::new(std::sync::Mutex::new(tls::Observed::default()));
    let config = tls.observing_config(seen.clone()).map_err(Outcome::error)?;
    let stream = connect(origin, config)
        .await
        .map_err(|e| unreachable(origin, e))?;
    let seen = std::mem::take(&mut *seen.lock().map_err(|_| Outcome::error("TLS: poisoned"))?);
    Ok((stream, seen))
}

/// The one line a refused chain or signature reads as.
fn refusal(e: &rustls::Error) -> String {
    tls::explain(e).unwrap_or_else(|| format!("TLS: {e}"))
}

/// RFC 5280 and the CA/B Forum's key sizes: the chain is trusted for the
/// host, the leaf is valid for `min_days` more days, its key is strong.
/// One handshake that enforces nothing reads the chain; trust is judged
/// from what that handshake saw (the chain verified for the host as every
/// client verifies it, and the server's signature verified with the
/// algorithms modern clients accept), so an expired or weak certificate
/// is judged, not an error.
pub async fn certificate(p: &CertificatePlan, ctx: &CheckContext) -> Outcome {
    const REST: &[&str] = &["trusted", "not_expiring", "key_strength"];
    let origin = match https_origin(ctx, REST) {
        Ok(o) => o,
        Err(o) => return *o,
    };
    // Verified even under `--insecure`: trust is what this check judges.
    let tls = installed();
    let (stream, seen) = match observe(&origin, &tls).await {
        Ok(x) => x,
        Err(o) => return o,
    };
    let chain: Vec<CertificateDer<'static>> = stream
        .get_ref()
        .1
        .peer_certificates()
        .map(|c| c.iter().map(|d| d.clone().into_owned()).collect())
        .unwrap_or_default();
    drop(stream);
    let Some(leaf_der) = chain.first() else {
        return Outcome::error(format!("{} showed no certificate", origin.addr));
    };
    let leaf = match read_leaf(leaf_der) {
        Ok(l) => l,
        Err(e) => return Outcome::error(e),
    };
    let (alg, bits) = leaf.key;
    let name = tls
        .server_name()
        .map(|n| n.to_str().into_owned())
        .unwrap_or_else(|| origin.host.clone());
    let mut a = vec![Assertion::pass("https", "the target is served over https")];
    a.push(match (&seen.chain, &seen.signature) {
        (Some(Ok(())), Some(Ok(())) | None) => Assertion::pass(
            "trusted",
            format!("the chain of {} verifies for `{name}`", origin.addr),
        ),
        (Some(Err(e)), _) => {
            let why = refusal(e);
            Assertion::fail(
                "trusted",
                format!("{why} ({})", origin.addr),
                "a chain to a trusted root, naming the host",
                why.clone(),
            )
        }
        (Some(Ok(())), Some(Err(e))) => {
            let why = format!(
                "the chain verifies, but the server's handshake signature with its {alg} {bits}-bit key is refused ({e}): clients of today refuse to connect",
            );
            Assertion::fail(
                "trusted",
                format!("{why} ({})", origin.addr),
                "a handshake signature clients accept",
                format!("{alg} {bits}-bit signature refused"),
            )
        }
        (None, _) => {
            return Outcome::error(format!(
                "{} completed a handshake without showing its chain for verification",
                origin.addr
            ))
        }
    });
    let days_left = (leaf.not_after_unix - now_unix()).div_euclid(86_400);
    a.push(Assertion::check(
        "not_expiring",
        days_left >= p.min_days as i64,
        format!("`{}` is valid for {days_left} more days", leaf.subject),
        if days_left < 0 {
            format!("`{}` expired {} days ago", leaf.subject, -days_left)
        } else {
            format!(
                "`{}` expires in {days_left} days, under {}: renew it before the launch",
                leaf.subject, p.min_days
            )
        },
        format!("at least {} days", p.min_days),
        format!("{days_left} days"),
    ));
    let strong = match alg {
        "RSA" => bits as u64 >= p.min_rsa_bits,
        "EC" => bits as u64 >= p.min_ec_bits,
        "Ed25519" | "Ed448" => true,
        _ => false,
    };
    a.push(Assertion::check(
        "key_strength",
        strong,
        format!("{alg} {bits}-bit key"),
        format!("a weak key: {alg} {bits}-bit"),
        format!(
            "RSA >= {} bits, EC >= {} bits, or Ed25519",
            p.min_rsa_bits, p.min_ec_bits
        ),
        format!("{alg} {bits}"),
    ));
    Outcome::judged(a)
}

/// What a server answers a ClientHello offering only `version`, asked as
/// `offer` says.
async fn legacy_answer(origin: &Origin, version: u16, offer: Offer) -> Result<Answer, String> {
    let go = async {
        let mut tcp = crate::http::stream::connect_tcp(origin).await?;
        let hello = tls_legacy::client_hello(version, &origin.host, rand::random(), offer);
        tcp.write_all(&hello)
            .await
            .map_err(|e| format!("cannot send a ClientHello to {}: {e}", origin.addr))?;
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        // The first record whole (a ServerHello or an alert), within the cap.
        loop {
            let need = tls_legacy::first_record_len(&reply).unwrap_or(5);
            if reply.len() >= need.min(FIRST_FLIGHT_CAP) {
                break;
            }
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => reply.extend_from_slice(&buf[..n]),
            }
        }
        Ok(Answer::parse(&reply))
    };
    tokio::time::timeout(WAIT, go).await.map_err(|_| {
        format!(
            "{} did not answer a ClientHello within {WAIT:?}",
            origin.addr
        )
    })?
}

/// Whether the server negotiates a legacy `version`: each [`Offer`] in
/// turn until one answer decides (see [`tls_legacy::judge`]); a version no
/// offer decides is not exercised (an error), never a pass.
async fn legacy_version(origin: &Origin, property: &'static str, version: u16) -> Assertion {
    let name = tls_legacy::version_name(version);
    let mut undecided = Vec::new();
    for offer in Offer::ALL {
        let answer = match legacy_answer(origin, version, offer).await {
            Ok(a) => a,
            Err(e) => {
                undecided.push(format!("{}: {e}", offer.describe()));
                continue;
            }
        };
        match tls_legacy::judge(version, &answer) {
            Verdict::Offered(what) => {
                return Assertion::fail(
                    property,
                    format!(
                        "{} answered a {name} ClientHello ({}) with {what}: it still negotiates {name} (RFC 8996)",
                        origin.addr,
                        offer.describe()
                    ),
                    format!("a protocol_version alert to {name}"),
                    format!("ServerHello {name}"),
                )
            }
            Verdict::Refused(what) => {
                return Assertion::pass(
                    property,
                    format!(
                        "a {name} ClientHello ({}) got {what}: {name} is refused",
                        offer.describe()
                    ),
                )
            }
            Verdict::Undecided(what) => undecided.push(format!("{}: {what}", offer.describe())),
        }
    }
    Assertion::not_exercised(
        property,
        format!(
            "not decided: {} answered {} {name} ClientHellos without saying whether it speaks {name} ({}); only a protocol_version alert proves a refusal. Compare with `openssl s_client -tls1{} -connect {}`",
            origin.addr,
            Offer::ALL.len(),
            undecided.join("; "),
            if version == tls_legacy::TLS11 { "_1" } else { "" },
            origin.addr
        ),
    )
}

/// RFC 9325 and RFC 8996: TLS 1.2+ negotiated, 1.3 offered, 1.0 and 1.1
/// refused. The versions are asked whatever the certificate: trust is
/// `transport.certificate`'s verdict, and nothing is sent here.
pub async fn protocol(p: &ProtocolPlan, ctx: &CheckContext) -> Outcome {
    const REST: &[&str] = &["modern", "tls13", "no_tls10", "no_tls11"];
    let origin = match https_origin(ctx, REST) {
        Ok(o) => o,
        Err(o) => return *o,
    };
    let mut a = vec![Assertion::pass("https", "the target is served over https")];
    let seen = Arc::new(std::sync::Mutex::new(tls::Observed::default()));
    let mut config = match installed().observing_config(seen) {
        Ok(c) => c,
        Err(e) => return Outcome::error(e),
    };
    let negotiated = Arc::new(Negotiated::default());
    config.key_log = negotiated.clone();
    let version = match connect(&origin, config).await {
        Ok(stream) => stream.get_ref().1.protocol_version(),
        // A handshake that failed after the ServerHello (a TLS 1.2 server
        // asking for a client certificate refuses after it) still chose a
        // version.
        Err(OpenError::Handshake(_)) if negotiated.version().is_some() => negotiated.version(),
        // The server refused, in the handshake, a client offering TLS 1.2
        // and 1.3 with RFC 9325's suites: no modern client can connect.
        Err(OpenError::Handshake(io)) if handshake_refused(&io) => {
            let why = handshake_alert(&io);
            a.push(Assertion::fail(
                "modern",
                format!(
                    "{} refused a TLS 1.2/1.3 ClientHello with RFC 9325's cipher suites before choosing a version ({why}): no modern client can connect",
                    origin.addr
                ),
                "TLS 1.2 or 1.3",
                why.clone(),
            ));
            a.push(Assertion::fail(
                "tls13",
                format!("{} negotiated no TLS 1.3 ({why})", origin.addr),
                "TLSv1_3",
                why,
            ));
            None
        }
        Err(e) => return unreachable(&origin, e),
    };
    if let Some(version) = version {
        let shown = format!("{version:?}");
        a.push(Assertion::check(
            "modern",
            matches!(
                version,
                rustls::ProtocolVersion::TLSv1_2 | rustls::ProtocolVersion::TLSv1_3
            ),
            format!("{shown} negotiated"),
            format!("{shown} negotiated, not TLS 1.2 or 1.3"),
            "TLS 1.2 or 1.3",
            shown.clone(),
        ));
        a.push(Assertion::check(
            "tls13",
            version == rustls::ProtocolVersion::TLSv1_3,
            "TLS 1.3 negotiated",
            format!("{shown} negotiated to a client offering TLS 1.3"),
            "TLSv1_3",
            shown.clone(),
        ));
    }
    for (property, v) in [
        ("no_tls10", tls_legacy::TLS10),
        ("no_tls11", tls_legacy::TLS11),
    ] {
        if !p.legacy_probe {
            a.push(Assertion::skipped(property, "legacy_probe: false"));
            continue;
        }
        a.push(legacy_version(&origin, property, v).await);
    }
    Outcome::judged(a)
}

/// The version a handshake chose, known from the first secret rustls
/// derives after the ServerHello (TLS 1.3 names its handshake secrets,
/// TLS 1.2 its master secret `CLIENT_RANDOM`): a handshake that fails
/// later, on a client certificate say, still chose it. Only the labels
/// are kept, never a secret.
#[derive(Debug, Default)]
struct Negotiated(std::sync::Mutex<Option<rustls::ProtocolVersion>>);

impl Negotiated {
    fn version(&self) -> Option<rustls::ProtocolVersion> {
        self.0.lock().ok().and_then(|v| *v)
    }
}

impl rustls::KeyLog for Negotiated {
    fn log(&self, label: &str, _client_random: &[u8], _secret: &[u8]) {
        let v = if label == "CLIENT_RANDOM" {
            rustls::ProtocolVersion::TLSv1_2
        } else {
            rustls::ProtocolVersion::TLSv1_3
        };
        if let Ok(mut seen) = self.0.lock() {
            seen.get_or_insert(v);
        }
    }
    fn will_log(&self, _label: &str) -> bool {
        true
    }
}

/// Whether a handshake failed because the server refused what was offered
/// (an alert, or rustls finding nothing in common), not the network.
fn handshake_refused(e: &std::io::Error) -> bool {
    let Some(t) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return false;
    };
    matches!(
        t,
        rustls::Error::AlertReceived(_) | rustls::Error::PeerIncompatible(_)
    )
}

fn handshake_alert(e: &std::io::Error) -> String {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::AlertReceived(a)) => format!("alert {a:?}"),
        Some(other) => other.to_string(),
        None => e.to_string(),
    }
}

/// The status line of the answer on `stream`, or `None` when the server
/// closed or refused before answering.
async fn status_without_cert<S>(stream: &mut S, request: &[u8]) -> Result<Option<u16>, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    if stream.write_all(request).await.is_err() {
        return Ok(None);
    }
    let _ = stream.flush().await;
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(2).any(|w| w == b"\r\n") && head.len() < 8192 {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&head);
    Ok(line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| line.strip_prefix("HTTP/1.0 "))
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok()))
}

/// The seed's "mTLS for critical integrations": without a client
/// certificate the server refuses; with the configured one it serves.
pub async fn mtls_required(p: &MtlsPlan, ctx: &CheckContext) -> Outcome {
    const REST: &[&str] = &["refused_without", "accepted_with"];
    let origin = match https_origin(ctx, REST) {
        Ok(o) => o,
        Err(o) => return *o,
    };
    let tls = installed();
    let mut a = vec![Assertion::pass("https", "the target is served over https")];
    let mut config = match tls.without_identity().rustls_config() {
        Ok(c) => c,
        Err(e) => return Outcome::error(e),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let r = ctx.target.render(&p.request, &Scope::new());
    let url = reqwest::Url::parse(&r.url).ok();
    let path = url.as_ref().map_or("/".into(), |u| match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_owned(),
    });
    let host = url
        .as_ref()
        .and_then(|u| {
            u.host_str().map(|h| match u.port() {
                Some(p) => format!("{h}:{p}"),
                None => h.to_owned(),
            })
        })
        .unwrap_or_default();
    // The same request as the probe's, with the suite's headers: the
    // server is the one the suite talks to (its certificate verified), so
    // an answer that refuses can only be about the missing certificate, not
    // a missing API key.
    let mut head = format!("{} {path} HTTP/1.1\r\nHost: {host}\r\n", r.method);
    for (k, v) in &r.headers {
        if ["host", "content-length", "connection"]
            .iter()
            .any(|h| k.eq_ignore_ascii_case(h))
        {
            continue;
        }
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if r.header("user-agent").is_none() {
        head.push_str(concat!(
            "User-Agent: tminus/",
            env!("CARGO_PKG_VERSION"),
            "\r\n"
        ));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        r.body.len()
    ));
    let mut request = head.into_bytes();
    request.extend_from_slice(&r.body);
    let without = match connect(&origin, config).await {
        // The server's own certificate not trusted is not a refusal of
        // ours: without trust in the server nothing here can be judged.
        Err(OpenError::Handshake(io)) if tls::is_certificate_error(&io) => {
            return unreachable(&origin, OpenError::Handshake(io))
        }
        Err(OpenError::Handshake(io)) => Err(tls::explain(&io).unwrap_or_else(|| io.to_string())),
        Err(e @ OpenError::Other(_)) => return unreachable(&origin, e),
        Ok(mut s) => {
            match tokio::time::timeout(WAIT, status_without_cert(&mut s, &request)).await {
                Ok(Ok(status)) => Ok(status),
                Ok(Err(e)) => return Outcome::error(e),
                Err(_) => Ok(None),
            }
        }
    };
    a.push(match without {
        Err(why) => Assertion::pass(
            "refused_without",
            format!("without a client certificate the handshake failed: {why}"),
        ),
        Ok(None) => Assertion::pass(
            "refused_without",
            "without a client certificate the connection was closed before any answer",
        ),
        Ok(Some(code)) if p.refused_status.matches(code) => Assertion::pass(
            "refused_without",
            format!("without a client certificate the server answered {code} (a refusal)"),
        ),
        Ok(Some(code)) => Assertion::fail(
            "refused_without",
            format!("{} {path} without a client certificate was answered {code}: anyone who reaches the address is served", r.method),
            format!("a TLS refusal or {}", p.refused_status),
            code.to_string(),
        ),
    });
    if !tls.has_identity() {
        a.push(Assertion::not_exercised(
            "accepted_with",
            "no client certificate to show: give it with --cert FILE --key FILE",
        ));
        return Outcome::judged(a);
    }
    let ex = match ctx.client.send(&r).await {
        Ok(ex) => ex,
        Err(e) => {
            a.push(Assertion::fail(
                "accepted_with",
                format!("with the configured client certificate: {e}"),
                "an answer",
                e.to_string(),
            ));
            return Outcome::judged(a)
                .with_evidence(vec![Evidence::from_transport("with the certificate", &e)]);
        }
    };
    a.push(Assertion::check(
        "accepted_with",
        !p.refused_status.matches(ex.status()),
        format!("with the configured client certificate: {}", describe(&ex)),
        format!(
            "with the configured client certificate the server still refused: {}",
            describe(&ex)
        ),
        format!("not {}", p.refused_status),
        ex.status().to_string(),
    ));
    Outcome::judged(a).with_evidence(vec![Evidence::from_exchange("with the certificate", &ex)])
}
