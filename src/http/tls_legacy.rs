//! TLS 1.0 and 1.1 on the wire, for `transport.protocol` (RFC 8996: TLS 1.0
//! and 1.1 MUST NOT be negotiated). rustls cannot speak them, so the probe
//! writes a minimal ClientHello of its own and judges only the server's first
//! record: a ServerHello for the offered version means the server would
//! negotiate it; an alert (protocol_version, handshake_failure) or a closed
//! connection means it refuses. No handshake is completed and nothing is
//! encrypted: what the server is asked is only "would you speak this?".
//!
//! The reference uses the other half (`server_hello`) to play a server that
//! still accepts them (`--defect accepts-tls10`).

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

/// A ClientHello offering only `version`, with the cipher suites servers of
/// that era speak (ECDHE-RSA/ECDSA with AES-CBC-SHA, RSA AES-CBC-SHA, 3DES)
/// and SNI for a DNS `host` (an IP address gets none, RFC 6066 §3).
pub fn client_hello(version: u16, host: &str, random: [u8; 32]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&version.to_be_bytes());
    body.extend_from_slice(&random);
    body.push(0); // no session id
    let suites: &[u16] = &[
        0xc013, 0xc014, 0xc009, 0xc00a, 0x002f, 0x0035, 0x000a,
        0x00ff, // the renegotiation SCSV (RFC 5746)
    ];
    body.extend_from_slice(&((suites.len() * 2) as u16).to_be_bytes());
    for s in suites {
        body.extend_from_slice(&s.to_be_bytes());
    }
    body.extend_from_slice(&[1, 0]); // compression: null only
    let mut ext = Vec::new();
    if host.parse::<std::net::IpAddr>().is_err() && !host.is_empty() && host.len() < 256 {
        let name = host.as_bytes();
        let list_len = name.len() + 3;
        ext.extend_from_slice(&[0x00, 0x00]);
        ext.extend_from_slice(&((list_len + 2) as u16).to_be_bytes());
        ext.extend_from_slice(&(list_len as u16).to_be_bytes());
        ext.push(0); // host_name
        ext.extend_from_slice(&(name.len() as u16).to_be_bytes());
        ext.extend_from_slice(name);
    }
    // supported_groups: secp256r1, secp384r1; ec_point_formats: uncompressed.
    ext.extend_from_slice(&[0x00, 0x0a, 0x00, 0x06, 0x00, 0x04, 0x00, 0x17, 0x00, 0x18]);
    ext.extend_from_slice(&[0x00, 0x0b, 0x00, 0x02, 0x01, 0x00]);
    body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
    body.extend_from_slice(&ext);
    handshake_record(version, 1, &body)
}

/// A ServerHello choosing `version` and ECDHE-RSA-AES128-CBC-SHA: the first
/// record of a server that negotiates it.
pub fn server_hello(version: u16, random: [u8; 32]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&version.to_be_bytes());
    body.extend_from_slice(&random);
    body.push(0); // no session id
    body.extend_from_slice(&0xc013u16.to_be_bytes());
    body.push(0); // null compression
    handshake_record(version, 2, &body)
}

fn handshake_record(version: u16, kind: u8, body: &[u8]) -> Vec<u8> {
    let mut hs = vec![kind];
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend_from_slice(body);
    let mut rec = vec![0x16];
    // The record layer says TLS 1.0 for a first flight (RFC 5246 appendix E.1).
    rec.extend_from_slice(&TLS10.min(version).to_be_bytes());
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend_from_slice(&hs);
    rec
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
    /// A ServerHello choosing this version.
    Hello(u16),
    /// An alert, with its description code (70: protocol_version,
    /// 40: handshake_failure).
    Alert(u8),
    /// The connection closed without a record.
    Closed,
    /// Bytes that are not a TLS record (a plain-HTTP server, say).
    NotTls,
}

impl Answer {
    /// Reads the first record of `reply` (the bytes the server sent).
    pub fn parse(reply: &[u8]) -> Answer {
        if reply.is_empty() {
            return Answer::Closed;
        }
        if reply.len() < 5 || !matches!(reply[1], 3) {
            return Answer::NotTls;
        }
        match reply[0] {
            0x15 if reply.len() >= 7 => Answer::Alert(reply[6]),
            0x16 if reply.len() >= 11 && reply[5] == 2 => {
                Answer::Hello(u16::from_be_bytes([reply[9], reply[10]]))
            }
            _ => Answer::NotTls,
        }
    }
}

/// The name of an alert description.
pub fn alert_name(code: u8) -> String {
    match code {
        40 => "handshake_failure".into(),
        47 => "illegal_parameter".into(),
        70 => "protocol_version".into(),
        71 => "insufficient_security".into(),
        80 => "internal_error".into(),
        112 => "unrecognized_name".into(),
        other => format!("alert {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_hello_says_its_version_and_a_server_hello_is_read_back() {
        let hello = client_hello(TLS11, "api.example", [7; 32]);
        assert_eq!(offered_version(&hello), Some(TLS11));
        // Record length and handshake length agree with the bytes.
        let rec_len = u16::from_be_bytes([hello[3], hello[4]]) as usize;
        assert_eq!(rec_len, hello.len() - 5);
        let hs_len = u32::from_be_bytes([0, hello[6], hello[7], hello[8]]) as usize;
        assert_eq!(hs_len, rec_len - 4);
        assert!(hello.windows(11).any(|w| w == b"api.example"));
        // An IP address is not sent as SNI.
        let by_ip = client_hello(TLS10, "127.0.0.1", [7; 32]);
        assert!(!by_ip.windows(9).any(|w| w == b"127.0.0.1"));

        assert_eq!(
            Answer::parse(&server_hello(TLS10, [1; 32])),
            Answer::Hello(TLS10)
        );
        assert_eq!(Answer::parse(&[0x15, 3, 1, 0, 2, 2, 70]), Answer::Alert(70));
        assert_eq!(Answer::parse(&[]), Answer::Closed);
        assert_eq!(
            Answer::parse(b"HTTP/1.1 400 Bad Request\r\n"),
            Answer::NotTls
        );
    }
}
