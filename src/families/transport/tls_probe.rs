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
use crate::http::tls_legacy::{self, Answer};
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

/// RFC 5280 and the CA/B Forum's key sizes: the chain is trusted for the
/// host, the leaf is valid for `min_days` more days, its key is strong.
pub async fn certificate(p: &CertificatePlan, ctx: &CheckContext) -> Outcome {
    const REST: &[&str] = &["trusted", "not_expiring", "key_strength"];
    let origin = match https_origin(ctx, REST) {
        Ok(o) => o,
        Err(o) => return *o,
    };
    let tls = installed();
    // Verified even under `--insecure`: trust is what this check judges.
    let config = match tls.verifying_config() {
        Ok(c) => c,
        Err(e) => return Outcome::error(e),
    };
    let mut a = vec![Assertion::pass("https", "the target is served over https")];
    let stream = match connect(&origin, config).await {
        Ok(s) => {
            a.push(Assertion::pass(
                "trusted",
                format!(
                    "the chain of {} verifies for `{}`",
                    origin.addr,
                    tls.server_name()
                        .map(|n| n.to_str().into_owned())
                        .unwrap_or_else(|| origin.host.clone())
                ),
            ));
            s
        }
        Err(OpenError::Handshake(io)) if tls::is_certificate_error(&io) => {
            let why = tls::explain(&io).unwrap_or_else(|| io.to_string());
            a.push(Assertion::fail(
                "trusted",
                format!("{why} ({})", origin.addr),
                "a chain to a trusted root, naming the host",
                why.clone(),
            ));
            // Read the chain anyway, to judge its dates and key.
            let reading = match tls.chain_reading_config() {
                Ok(c) => c,
                Err(e) => return Outcome::error(e),
            };
            match connect(&origin, reading).await {
                Ok(s) => s,
                Err(e) => return unreachable(&origin, e),
            }
        }
        Err(e) => return unreachable(&origin, e),
    };
    let chain: Vec<CertificateDer<'static>> = stream
        .get_ref()
        .1
        .peer_certificates()
        .map(|c| c.iter().map(|d| d.clone().into_owned()).collect())
        .unwrap_or_default();
    let Some(leaf_der) = chain.first() else {
        return Outcome::error(format!("{} showed no certificate", origin.addr));
    };
    let leaf = match read_leaf(leaf_der) {
        Ok(l) => l,
        Err(e) => return Outcome::error(e),
    };
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
    let (alg, bits) = leaf.key;
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

/// What a server answers a ClientHello offering only `version`.
async fn legacy_answer(origin: &Origin, version: u16) -> Result<Answer, String> {
    let go = async {
        let mut tcp = crate::http::stream::connect_tcp(origin).await?;
        let hello = tls_legacy::client_hello(version, &origin.host, rand::random());
        tcp.write_all(&hello)
            .await
            .map_err(|e| format!("cannot send a ClientHello to {}: {e}", origin.addr))?;
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        // A record header and the first bytes of its body are enough.
        while reply.len() < 11 && reply.len() < FIRST_FLIGHT_CAP {
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

/// RFC 9325 and RFC 8996: TLS 1.2+ negotiated, 1.3 offered, 1.0 and 1.1 refused.
pub async fn protocol(p: &ProtocolPlan, ctx: &CheckContext) -> Outcome {
    const REST: &[&str] = &["modern", "tls13", "no_tls10", "no_tls11"];
    let origin = match https_origin(ctx, REST) {
        Ok(o) => o,
        Err(o) => return *o,
    };
    let config = match installed().rustls_config() {
        Ok(c) => c,
        Err(e) => return Outcome::error(e),
    };
    let stream = match connect(&origin, config).await {
        Ok(s) => s,
        Err(e) => return unreachable(&origin, e),
    };
    let version = stream.get_ref().1.protocol_version();
    let shown = version.map_or("no version".into(), |v| format!("{v:?}"));
    let mut a = vec![
        Assertion::pass("https", "the target is served over https"),
        Assertion::check(
            "modern",
            matches!(
                version,
                Some(rustls::ProtocolVersion::TLSv1_2 | rustls::ProtocolVersion::TLSv1_3)
            ),
            format!("{shown} negotiated"),
            format!("{shown} negotiated, not TLS 1.2 or 1.3"),
            "TLS 1.2 or 1.3",
            shown.clone(),
        ),
        Assertion::check(
            "tls13",
            version == Some(rustls::ProtocolVersion::TLSv1_3),
            "TLS 1.3 negotiated",
            format!("{shown} negotiated to a client offering TLS 1.3"),
            "TLSv1_3",
            shown.clone(),
        ),
    ];
    drop(stream);
    for (property, v) in [
        ("no_tls10", tls_legacy::TLS10),
        ("no_tls11", tls_legacy::TLS11),
    ] {
        let name = tls_legacy::version_name(v);
        if !p.legacy_probe {
            a.push(Assertion::skipped(property, "legacy_probe: false"));
            continue;
        }
        a.push(match legacy_answer(&origin, v).await {
            Err(e) => return Outcome::error(e),
            Ok(Answer::Hello(chosen)) if chosen == v => Assertion::fail(
                property,
                format!("{} answered a {name} ClientHello with a ServerHello for {name}: it still negotiates {name} (RFC 8996)", origin.addr),
                format!("a protocol_version alert to {name}"),
                format!("ServerHello {name}"),
            ),
            Ok(Answer::Hello(chosen)) => Assertion::pass(
                property,
                format!("a {name} ClientHello got a ServerHello for {}, not {name}", tls_legacy::version_name(chosen)),
            ),
            Ok(Answer::Alert(code)) => Assertion::pass(
                property,
                format!("a {name} ClientHello was refused with {}", tls_legacy::alert_name(code)),
            ),
            Ok(Answer::Closed) => Assertion::pass(
                property,
                format!("a {name} ClientHello was refused (connection closed)"),
            ),
            Ok(Answer::NotTls) => Assertion::not_exercised(
                property,
                format!("{} answered a {name} ClientHello with bytes that are not TLS", origin.addr),
            ),
        });
    }
    Outcome::judged(a)
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
