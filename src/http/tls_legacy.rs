//! TLS 1.0 and 1.1 on the wire, for `transport.protocol` (RFC 8996: TLS 1.0
//! and 1.1 MUST NOT be negotiated). rustls cannot speak them, so the probe
//! sends ClientHellos of its own (built and read back with `tls-parser`,
//! the rusticata parser) and judges only the server's first record. No
//! handshake is completed and nothing is encrypted: what the server is
//! asked is only "would you speak this?".
//!
//! What an answer proves (issue 36): a ServerHello at the offered version
//! means the server negotiates it; a `protocol_version` alert, or a
//! ServerHello at a higher version, means it refuses the version itself.
//! Anything else (`handshake_failure`, `insufficient_security`, a closed
//! connection) may only mean that the server shares no cipher suite,
//! group or extension with this one offer: a server that speaks TLS 1.0
//! over X25519 only answers a P-256-only hello with `handshake_failure`.
//! Such an answer decides nothing ([`Verdict::Undecided`]); the probe then
//! asks again with the next [`Offer`], and a version no offer decides is an
//! error, never a pass.
//!
//! The reference uses the other half (`server_hello`) to play a server that
//! still accepts them (`--defect accepts-tls10`).

use tls_parser::{
    Serialize as _, TlsCipherEnc, TlsCipherKx, TlsCipherMac, TlsCipherSuite, TlsMessage,
    TlsMessageHandshake,
};

/// TLS 1.0's and 1.1's version numbers on the wire.
pub const TLS10: u16 = 0x0301;
pub const TLS11: u16 = 0x0302;

/// The name a version is known by.
pub fn version_name(v: u16) -> String {
    match v {
        0x0300 => "SSL 3.0".into(),
        TLS10 => "TLS 1.0".into(),
        TLS11 => "TLS 1.1".into(),
        0x0303 => "TLS 1.2".into(),
        0x0304 => "TLS 1.3".into(),
        other => format!("version {other:#06x}"),
    }
}

/// One way of asking a server whether it speaks a legacy version. Servers
/// differ in what they refuse besides the version (a large hello, an
/// extension they do not know, a group), so the probe asks up to three
/// ways, the broadest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Every cipher suite the version can negotiate (IANA's registry as
    /// tls-parser carries it: RSA, DHE, ECDHE, PSK-free key exchanges with
    /// CBC, RC4 or NULL encryption and an MD5 or SHA-1 MAC), every named
    /// group (X25519, X448, P-256, P-384, P-521, the FFDHE groups), SNI,
    /// signature algorithms, extended master secret, session tickets,
    /// padded past 512 bytes.
    Every,
    /// What a browser of the era offered (ECDHE and DHE with AES-CBC, RSA
    /// key exchange, 3DES, RC4), SNI, the groups and signature algorithms:
    /// a small hello for servers that choke on a large one.
    Era,
    /// The era's suites with no extension at all, as the oldest clients
    /// sent them: for servers that refuse an extension they do not know.
    Bare,
}

impl Offer {
    pub const ALL: [Offer; 3] = [Offer::Every, Offer::Era, Offer::Bare];

    pub fn describe(self) -> &'static str {
        match self {
            Offer::Every => "every suite and group of the version",
            Offer::Era => "a browser-of-the-era offer",
            Offer::Bare => "the era's suites with no extensions",
        }
    }
}

/// The suites a browser of the TLS 1.0 era offered, in its order.
const ERA_SUITES: &[u16] = &[
    0xc00a, // ECDHE-ECDSA-AES256-SHA
    0xc009, // ECDHE-ECDSA-AES128-SHA
    0xc013, // ECDHE-RSA-AES128-SHA
    0xc014, // ECDHE-RSA-AES256-SHA
    0x0033, // DHE-RSA-AES128-SHA
    0x0039, // DHE-RSA-AES256-SHA
    0x002f, // AES128-SHA
    0x0035, // AES256-SHA
    0x000a, // DES-CBC3-SHA
    0x0005, // RC4-SHA
    0x0004, // RC4-MD5
];

/// The renegotiation SCSV (RFC 5746): every client of the era sent it.
const RENEGOTIATION_SCSV: u16 = 0x00ff;

/// Every named group a server of the era or since may hold its key
/// exchange to: X25519, X448, P-256, P-384, P-521, ffdhe2048..8192.
const GROUPS: &[u16] = &[
    0x001d, 0x0017, 0x0018, 0x0019, 0x001e, 0x0100, 0x0101, 0x0102, 0x0103, 0x0104,
];

/// RSA PKCS#1, ECDSA, RSA-PSS and Ed25519 with SHA-2, then SHA-1's.
const SIGNATURE_SCHEMES: &[u16] = &[
    0x0403, 0x0503, 0x0603, 0x0804, 0x0805, 0x0806, 0x0401, 0x0501, 0x0601, 0x0807, 0x0201, 0x0203,
];

/// The cipher suites `version` (TLS 1.0 or 1.1) can negotiate, from IANA's
/// registry: no AEAD suite and no SHA-2 MAC (both are TLS 1.2's), no TLS
/// 1.3 suite, no Kerberos or SRP (they need more than a hello to
/// negotiate), and never TLS_FALLBACK_SCSV (that asks a server of a higher
/// version to refuse, which is not the question).
pub fn legacy_suites() -> Vec<u16> {
    let mut suites: Vec<&TlsCipherSuite> = tls_parser::CIPHERS
        .values()
        .filter(|s| {
            s.id.0 != 0
                && matches!(s.mac, TlsCipherMac::HmacMd5 | TlsCipherMac::HmacSha1)
                && !matches!(
                    s.kx,
                    TlsCipherKx::Tls13 | TlsCipherKx::Krb5 | TlsCipherKx::Srp | TlsCipherKx::Eccpwd
                )
        })
        .collect();
    // Strongest first, as clients order them: forward secrecy, then the
    // cipher's strength; the id breaks ties so the hello is reproducible.
    let kx_rank = |k: TlsCipherKx| match k {
        TlsCipherKx::Ecdhe => 0,
        TlsCipherKx::Dhe => 1,
        TlsCipherKx::Rsa => 2,
        _ => 3,
    };
    let enc_rank = |e: TlsCipherEnc| match e {
        TlsCipherEnc::Aes | TlsCipherEnc::Camellia | TlsCipherEnc::Aria => 0,
        TlsCipherEnc::TripleDes | TlsCipherEnc::Seed | TlsCipherEnc::Idea => 1,
        TlsCipherEnc::Rc4 => 2,
        TlsCipherEnc::Null => 4,
        _ => 3,
    };
    suites.sort_by_key(|s| (kx_rank(s.kx), enc_rank(s.enc), s.id.0));
    suites.iter().map(|s| s.id.0).collect()
}

/// The IANA name of a suite, or its number.
pub fn suite_name(id: u16) -> String {
    TlsCipherSuite::from_id(id).map_or_else(|| format!("suite {id:#06x}"), |s| s.name.to_owned())
}

fn extension(out: &mut Vec<u8>, kind: u16, body: &[u8]) {
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(body);
}

fn u16_list(items: &[u16]) -> Vec<u8> {
    let mut v = ((items.len() * 2) as u16).to_be_bytes().to_vec();
    for i in items {
        v.extend_from_slice(&i.to_be_bytes());
    }
    v
}

/// The extensions of `offer`: SNI for a DNS `host` (an IP address gets
/// none, RFC 6066 §3), the groups and point formats, and for
/// [`Offer::Every`] the rest of what a client of the era sent.
fn extensions(offer: Offer, host: &str) -> Vec<u8> {
    let mut ext = Vec::new();
    if offer == Offer::Bare {
        return ext;
    }
    if host.parse::<std::net::IpAddr>().is_err() && !host.is_empty() && host.len() < 256 {
        let name = host.as_bytes();
        let mut sni = ((name.len() + 3) as u16).to_be_bytes().to_vec();
        sni.push(0); // host_name
        sni.extend_from_slice(&(name.len() as u16).to_be_bytes());
        sni.extend_from_slice(name);
        extension(&mut ext, 0x0000, &sni);
    }
    let groups: &[u16] = if offer == Offer::Every {
        GROUPS
    } else {
        &GROUPS[..4]
    };
    extension(&mut ext, 0x000a, &u16_list(groups));
    extension(&mut ext, 0x000b, &[1, 0]); // ec_point_formats: uncompressed
                                          // signature_algorithms means nothing below TLS 1.2 and servers of those
                                          // versions ignore it (RFC 5246 §7.4.1.4.1), but a modern server may
                                          // demand it before it looks at the version: rustls answers a hello
                                          // without it with handshake_failure, where the version alone would
                                          // have drawn protocol_version.
    extension(&mut ext, 0x000d, &u16_list(SIGNATURE_SCHEMES));
    if offer == Offer::Every {
        extension(&mut ext, 0x0023, &[]); // session_ticket
        extension(&mut ext, 0x0017, &[]); // extended_master_secret
    }
    ext
}

/// A ClientHello offering only `version`, asked the way `offer` says.
pub fn client_hello(version: u16, host: &str, random: [u8; 32], offer: Offer) -> Vec<u8> {
    use tls_parser::{
        TlsClientHelloContents, TlsCompressionID, TlsPlaintext, TlsRecordHeader, TlsRecordType,
        TlsVersion,
    };
    let mut suites = match offer {
        Offer::Every => legacy_suites(),
        Offer::Era | Offer::Bare => ERA_SUITES.to_vec(),
    };
    suites.push(RENEGOTIATION_SCSV);
    let mut ext = extensions(offer, host);
    if offer == Offer::Every {
        // RFC 7685: some servers hang on hellos of 256 to 511 bytes; the
        // padding extension takes this one past 512.
        let so_far = 4 + 2 + 32 + 1 + 2 + suites.len() * 2 + 2 + 2 + ext.len();
        if so_far < 512 {
            extension(&mut ext, 0x0015, &vec![0; 512 - so_far]);
        }
    }
    let hello = TlsClientHelloContents {
        version: TlsVersion(version),
        random: &random,
        session_id: None,
        ciphers: suites
            .into_iter()
            .map(tls_parser::TlsCipherSuiteID)
            .collect(),
        comp: vec![TlsCompressionID(0)],
        ext: (!ext.is_empty()).then_some(&ext[..]),
    };
    let record = TlsPlaintext {
        hdr: TlsRecordHeader {
            record_type: TlsRecordType::Handshake,
            // The record layer says TLS 1.0 for a first flight (RFC 5246
            // appendix E.1).
            version: TlsVersion(TLS10.min(version)),
            len: 0,
        },
        msg: vec![TlsMessage::Handshake(TlsMessageHandshake::ClientHello(
            hello,
        ))],
    };
    record.serialize().expect("a ClientHello always serializes")
}

/// A ServerHello choosing `version` and ECDHE-RSA-AES128-CBC-SHA: the first
/// record of a server that negotiates it.
pub fn server_hello(version: u16, random: [u8; 32]) -> Vec<u8> {
    use tls_parser::{
        TlsCipherSuiteID, TlsCompressionID, TlsPlaintext, TlsRecordHeader, TlsRecordType,
        TlsServerHelloContents, TlsVersion,
    };
    let record = TlsPlaintext {
        hdr: TlsRecordHeader {
            record_type: TlsRecordType::Handshake,
            version: TlsVersion(version),
            len: 0,
        },
        msg: vec![TlsMessage::Handshake(TlsMessageHandshake::ServerHello(
            TlsServerHelloContents {
                version: TlsVersion(version),
                random: &random,
                session_id: None,
                cipher: TlsCipherSuiteID(0xc013),
                compression: TlsCompressionID(0),
                ext: None,
            },
        ))],
    };
    record.serialize().expect("a ServerHello always serializes")
}

/// The version a ClientHello offers, from the first bytes of a connection
/// (`None` when they are not a ClientHello).
pub fn offered_version(first: &[u8]) -> Option<u16> {
    if first.len() < 11 || first[0] != 0x16 || first[5] != 1 {
        return None;
    }
    Some(u16::from_be_bytes([first[9], first[10]]))
}

/// What the server's first record said to a legacy ClientHello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A ServerHello choosing this version and this suite.
    Hello { version: u16, suite: u16 },
    /// An alert, with its description code (70: protocol_version,
    /// 40: handshake_failure).
    Alert(u8),
    /// The connection closed without a record.
    Closed,
    /// Bytes that are not a TLS record (a plain-HTTP server, say).
    NotTls,
}

/// How many bytes of a reply [`Answer::parse`] needs: the first record
/// whole (its header says how long it is), or `None` when the header is
/// not there yet.
pub fn first_record_len(reply: &[u8]) -> Option<usize> {
    (reply.len() >= 5).then(|| 5 + u16::from_be_bytes([reply[3], reply[4]]) as usize)
}

impl Answer {
    /// Reads the first record of `reply` (the bytes the server sent).
    pub fn parse(reply: &[u8]) -> Answer {
        if reply.is_empty() {
            return Answer::Closed;
        }
        if reply.len() < 5 || reply[1] != 3 {
            return Answer::NotTls;
        }
        match tls_parser::parse_tls_plaintext(reply) {
            Ok((_, record)) => {
                for m in &record.msg {
                    match m {
                        TlsMessage::Alert(a) => return Answer::Alert(a.code.0),
                        TlsMessage::Handshake(TlsMessageHandshake::ServerHello(h)) => {
                            return Answer::Hello {
                                version: h.version.0,
                                suite: h.cipher.0,
                            }
                        }
                        _ => {}
                    }
                }
                Answer::NotTls
            }
            // A ServerHello split over records, or a record cut short: the
            // handshake header still says what it is.
            Err(_) if reply[0] == 0x16 && reply.len() >= 11 && reply[5] == 2 => Answer::Hello {
                version: u16::from_be_bytes([reply[9], reply[10]]),
                suite: 0,
            },
            Err(_) if reply[0] == 0x15 && reply.len() >= 7 => Answer::Alert(reply[6]),
            Err(_) => Answer::NotTls,
        }
    }
}

/// What one answer proves about a legacy `version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The server negotiated it: a ServerHello at that version.
    Offered(String),
    /// The server refused the version itself: a `protocol_version` alert
    /// or a ServerHello at a higher version.
    Refused(String),
    /// Nothing about the version: the offer, not the version, may be what
    /// was refused.
    Undecided(String),
}

/// RFC 8446 appendix D and RFC 5246 appendix E: what `answer` to a hello
/// offering `version` proves.
pub fn judge(version: u16, answer: &Answer) -> Verdict {
    let name = version_name(version);
    match answer {
        Answer::Hello { version: v, suite } if *v == version => Verdict::Offered(format!(
            "a ServerHello for {name}{}",
            if *suite == 0 {
                String::new()
            } else {
                format!(" with {}", suite_name(*suite))
            }
        )),
        Answer::Hello { version: v, .. } if *v > version => Verdict::Refused(format!(
            "a ServerHello for {}, not {name}",
            version_name(*v)
        )),
        Answer::Hello { version: v, .. } => Verdict::Undecided(format!(
            "a ServerHello for {}, lower than offered",
            version_name(*v)
        )),
        Answer::Alert(70) => Verdict::Refused("a protocol_version alert".into()),
        Answer::Alert(code) => Verdict::Undecided(format!(
            "a {} alert (it may refuse the offer's suites or groups, not the version)",
            alert_name(*code)
        )),
        Answer::Closed => Verdict::Undecided("the connection closed without an answer".into()),
        Answer::NotTls => Verdict::Undecided("bytes that are not TLS".into()),
    }
}

/// The name of an alert description.
pub fn alert_name(code: u8) -> String {
    match code {
        40 => "handshake_failure".into(),
        47 => "illegal_parameter".into(),
        50 => "decode_error".into(),
        70 => "protocol_version".into(),
        71 => "insufficient_security".into(),
        80 => "internal_error".into(),
        86 => "inappropriate_fallback".into(),
        112 => "unrecognized_name".into(),
        other => format!("alert {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed_hello(bytes: &[u8]) -> (u16, Vec<u16>, Vec<u16>) {
        let (rest, record) = tls_parser::parse_tls_plaintext(bytes).expect("a TLS record");
        assert!(rest.is_empty());
        let Some(TlsMessage::Handshake(TlsMessageHandshake::ClientHello(h))) = record.msg.first()
        else {
            panic!("not a ClientHello");
        };
        let mut kinds = Vec::new();
        if let Some(ext) = h.ext {
            let (_, exts) = tls_parser::parse_tls_client_hello_extensions(ext).expect("extensions");
            for e in &exts {
                kinds.push(u16::from(tls_parser::TlsExtensionType::from(e)));
            }
        }
        (h.version.0, h.ciphers.iter().map(|c| c.0).collect(), kinds)
    }

    #[test]
    fn every_offer_is_a_well_formed_client_hello_for_its_version() {
        for offer in Offer::ALL {
            let hello = client_hello(TLS11, "api.example", [7; 32], offer);
            assert_eq!(offered_version(&hello), Some(TLS11));
            let (version, suites, exts) = parsed_hello(&hello);
            assert_eq!(version, TLS11);
            assert!(
                suites.contains(&0x002f) && suites.contains(&0x00ff),
                "{offer:?}"
            );
            // TLS_FALLBACK_SCSV would ask a modern server to refuse.
            assert!(!suites.contains(&0x5600));
            match offer {
                Offer::Bare => assert!(exts.is_empty()),
                _ => assert!(
                    exts.contains(&0x0000) && exts.contains(&0x000a) && exts.contains(&0x000d),
                    "{exts:?}"
                ),
            }
        }
        let every = client_hello(TLS10, "api.example", [7; 32], Offer::Every);
        assert!(every.len() >= 512 + 5, "padded: {}", every.len());
        let (_, suites, _) = parsed_hello(&every);
        // Every key exchange family: ECDHE, DHE, RSA, and no TLS 1.2 suite.
        for id in [
            0xc013, 0xc009, 0x0033, 0x0039, 0x0016, 0x002f, 0x000a, 0x0005,
        ] {
            assert!(suites.contains(&id), "{id:#06x} missing");
        }
        for tls12_only in [0xc02f, 0x009c, 0xc027, 0x003c, 0x1301] {
            assert!(!suites.contains(&tls12_only), "{tls12_only:#06x} offered");
        }
        // X25519 is among the groups of the broad offer.
        assert!(every.windows(2).any(|w| w == [0x00, 0x1d]));
        // An IP address is not sent as SNI.
        let by_ip = client_hello(TLS10, "127.0.0.1", [7; 32], Offer::Every);
        assert!(!by_ip.windows(9).any(|w| w == b"127.0.0.1"));
    }

    #[test]
    fn only_a_protocol_version_alert_or_a_higher_hello_proves_a_refusal() {
        let hello = Answer::parse(&server_hello(TLS10, [1; 32]));
        assert_eq!(
            hello,
            Answer::Hello {
                version: TLS10,
                suite: 0xc013
            }
        );
        assert!(matches!(judge(TLS10, &hello), Verdict::Offered(m) if m.contains("ECDHE")));
        let higher = Answer::parse(&server_hello(0x0303, [1; 32]));
        assert!(matches!(judge(TLS10, &higher), Verdict::Refused(_)));
        let alert = Answer::parse(&[0x15, 3, 1, 0, 2, 2, 70]);
        assert_eq!(alert, Answer::Alert(70));
        assert!(matches!(judge(TLS10, &alert), Verdict::Refused(_)));
        // handshake_failure, insufficient_security and a close decide nothing.
        for undecided in [
            Answer::parse(&[0x15, 3, 1, 0, 2, 2, 40]),
            Answer::parse(&[0x15, 3, 1, 0, 2, 2, 71]),
            Answer::parse(&[]),
            Answer::parse(b"HTTP/1.1 400 Bad Request\r\n"),
        ] {
            assert!(
                matches!(judge(TLS11, &undecided), Verdict::Undecided(_)),
                "{undecided:?}"
            );
        }
        assert_eq!(first_record_len(&[0x16, 3, 1, 0, 42]), Some(47));
        assert_eq!(first_record_len(&[0x16, 3]), None);
    }
}
