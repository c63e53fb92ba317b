//! Webhook signature schemes: how a delivery is signed and verified.
//!
//! Every scheme is HMAC-SHA256 over a signed-content template (`{body}`,
//! `{timestamp}.{body}`, `{id}.{timestamp}.{body}`, `v0:{timestamp}:{body}`)
//! computed over the RAW body bytes, with a secret encoding (raw string,
//! base64, hex, or Standard Webhooks' `whsec_` + base64) and a digest encoding
//! (hex or base64), carried in a header whose value format differs per
//! provider (`sha256=<hex>`, `v1,<b64>` lists, Stripe's `t=..,v1=..`).
//! The same description drives signing (the sender checks, `tminus sign`, the
//! reference sender) and verifying (the sink checks, the reference receiver),
//! so both sides agree by construction and the published vectors pin both.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The names `--scheme` and suites accept.
pub const SCHEME_NAMES: &[&str] = &[
    "botix",
    "timestamped",
    "standard",
    "stripe",
    "github",
    "slack",
    "shopify",
    "custom",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretEncoding {
    /// The secret string's bytes are the key (Stripe, GitHub, Slack, BOTIX).
    Raw,
    Base64,
    Hex,
    /// `whsec_` + base64 (Standard Webhooks); the prefix is optional on input.
    Whsec,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DigestEncoding {
    Hex,
    Base64,
}

/// How the signature header's value is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SigFormat {
    /// `<prefix><digest>`; the prefix may be empty (Shopify).
    Prefixed(String),
    /// Standard Webhooks: space-separated `v1,<digest>` entries.
    Standard,
    /// Stripe: `t=<ts>,v1=<digest>[,v1=<digest>...]`; the timestamp lives here.
    Stripe,
}

/// One piece of the signed content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Lit(String),
    Id,
    Timestamp,
    Body,
}

/// A signing scheme, fully described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    pub name: String,
    pub signature_header: String,
    pub id_header: Option<String>,
    /// `None` for schemes whose timestamp is not a header (Stripe) or absent.
    pub timestamp_header: Option<String>,
    pub event_header: Option<String>,
    pub secret_encoding: SecretEncoding,
    pub digest_encoding: DigestEncoding,
    pub content: Vec<Part>,
    pub format: SigFormat,
}

/// What is being signed: a delivery id, a Unix timestamp and the raw body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: String,
    pub timestamp: i64,
    pub body: Vec<u8>,
}

/// Why a delivery does not verify; the messages read after "rejected: ".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing header {0}")]
    MissingHeader(String),
    #[error("malformed signature header {0}")]
    Malformed(String),
    #[error("no signature matches")]
    NoMatch,
    #[error("timestamp {0} is older than the tolerance")]
    TooOld(i64),
    #[error("timestamp {0} is in the future beyond the tolerance")]
    TooNew(i64),
}

/// A description for a custom scheme (all parts configurable).
#[derive(Debug, Clone)]
pub struct CustomScheme {
    pub signature_header: String,
    pub signature_prefix: String,
    pub id_header: Option<String>,
    pub timestamp_header: Option<String>,
    pub event_header: Option<String>,
    pub secret_encoding: SecretEncoding,
    pub digest_encoding: DigestEncoding,
    /// e.g. `{timestamp}.{body}`.
    pub content: String,
}

impl SecretEncoding {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "raw" => Ok(Self::Raw),
            "base64" => Ok(Self::Base64),
            "hex" => Ok(Self::Hex),
            "whsec" => Ok(Self::Whsec),
            o => Err(format!(
                "unknown secret encoding `{o}`: use raw, base64, hex or whsec"
            )),
        }
    }
}

impl DigestEncoding {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "hex" => Ok(Self::Hex),
            "base64" => Ok(Self::Base64),
            o => Err(format!("unknown digest encoding `{o}`: use hex or base64")),
        }
    }
    fn encode(self, d: &[u8]) -> String {
        match self {
            Self::Hex => hex::encode(d),
            Self::Base64 => B64.encode(d),
        }
    }
}

/// Parses `{id}.{timestamp}.{body}` into parts; unknown `{x}` is an error.
pub fn parse_content(t: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut rest = t;
    while let Some(p) = rest.find('{') {
        lit.push_str(&rest[..p]);
        let after = &rest[p..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed `{{` in signed-content template `{t}`"));
        };
        let part = match &after[1..end] {
            "id" => Part::Id,
            "timestamp" => Part::Timestamp,
            "body" => Part::Body,
            o => {
                return Err(format!(
                "unknown `{{{o}}}` in signed-content template: use {{id}}, {{timestamp}}, {{body}}"
            ))
            }
        };
        if !lit.is_empty() {
            parts.push(Part::Lit(std::mem::take(&mut lit)));
        }
        parts.push(part);
        rest = &after[end + 1..];
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        parts.push(Part::Lit(lit));
    }
    if !parts.contains(&Part::Body) {
        return Err(format!(
            "signed-content template `{t}` must include {{body}}"
        ));
    }
    Ok(parts)
}

fn h(s: &str) -> Option<String> {
    Some(s.to_owned())
}

impl Scheme {
    /// A built-in scheme by name (`custom` needs [`Scheme::custom`]).
    pub fn builtin(name: &str) -> Result<Scheme, String> {
        let s = |sig: &str,
                 id: Option<String>,
                 ts: Option<String>,
                 ev: Option<String>,
                 sec: SecretEncoding,
                 dig: DigestEncoding,
                 content: &str,
                 format: SigFormat| Scheme {
            name: name.to_owned(),
            signature_header: sig.to_owned(),
            id_header: id,
            timestamp_header: ts,
            event_header: ev,
            secret_encoding: sec,
            digest_encoding: dig,
            content: parse_content(content).expect("built-in template"),
            format,
        };
        use DigestEncoding as D;
        use SecretEncoding as S;
        let p = |x: &str| SigFormat::Prefixed(x.to_owned());
        Ok(match name {
            "botix" => s(
                "X-Botix-Signature",
                h("X-Botix-Request-Id"),
                None,
                h("X-Botix-Event"),
                S::Raw,
                D::Hex,
                "{body}",
                p("sha256="),
            ),
            "timestamped" => s(
                "X-Signature",
                h("X-Webhook-Id"),
                h("X-Timestamp"),
                h("X-Event-Type"),
                S::Raw,
                D::Hex,
                "{timestamp}.{body}",
                p("sha256="),
            ),
            "standard" => s(
                "webhook-signature",
                h("webhook-id"),
                h("webhook-timestamp"),
                None,
                S::Whsec,
                D::Base64,
                "{id}.{timestamp}.{body}",
                SigFormat::Standard,
            ),
            "stripe" => s(
                "Stripe-Signature",
                None,
                None,
                None,
                S::Raw,
                D::Hex,
                "{timestamp}.{body}",
                SigFormat::Stripe,
            ),
            "github" => s(
                "X-Hub-Signature-256",
                h("X-GitHub-Delivery"),
                None,
                h("X-GitHub-Event"),
                S::Raw,
                D::Hex,
                "{body}",
                p("sha256="),
            ),
            "slack" => s(
                "X-Slack-Signature",
                None,
                h("X-Slack-Request-Timestamp"),
                None,
                S::Raw,
                D::Hex,
                "v0:{timestamp}:{body}",
                p("v0="),
            ),
            "shopify" => s(
                "X-Shopify-Hmac-Sha256",
                h("X-Shopify-Webhook-Id"),
                None,
                h("X-Shopify-Topic"),
                S::Raw,
                D::Base64,
                "{body}",
                p(""),
            ),
            "custom" => return Err("the custom scheme needs its `custom:` description".into()),
            o => {
                let hint = crate::model::text::suggest(o, SCHEME_NAMES.iter().copied())
                    .map(|s| format!(", did you mean `{s}`?"))
                    .unwrap_or_default();
                return Err(format!(
                    "unknown signing scheme `{o}`{hint} (schemes: {})",
                    SCHEME_NAMES.join(", ")
                ));
            }
        })
    }

    pub fn custom(c: &CustomScheme) -> Result<Scheme, String> {
        let content = parse_content(&c.content)?;
        if content.contains(&Part::Id) && c.id_header.is_none() {
            return Err("the signed content uses {id} but no id header is set".into());
        }
        if content.contains(&Part::Timestamp) && c.timestamp_header.is_none() {
            return Err(
                "the signed content uses {timestamp} but no timestamp header is set".into(),
            );
        }
        Ok(Scheme {
            name: "custom".into(),
            signature_header: c.signature_header.clone(),
            id_header: c.id_header.clone(),
            timestamp_header: c.timestamp_header.clone(),
            event_header: c.event_header.clone(),
            secret_encoding: c.secret_encoding,
            digest_encoding: c.digest_encoding,
            content,
            format: SigFormat::Prefixed(c.signature_prefix.clone()),
        })
    }

    /// Does the signature cover a timestamp (so stale/future checks apply)?
    pub fn signs_timestamp(&self) -> bool {
        self.content.contains(&Part::Timestamp)
    }

    /// Can one header carry several signatures (key rotation)?
    pub fn supports_rotation(&self) -> bool {
        matches!(self.format, SigFormat::Standard | SigFormat::Stripe)
    }

    /// Decodes the secret as the scheme says; the error never quotes it.
    pub fn decode_secret(&self, secret: &str) -> Result<Vec<u8>, String> {
        decode_secret(self.secret_encoding, secret)
    }

    /// The bytes the HMAC runs over.
    pub fn signed_content(&self, d: &Delivery) -> Vec<u8> {
        let mut out = Vec::with_capacity(d.body.len() + 64);
        for p in &self.content {
            match p {
                Part::Lit(s) => out.extend_from_slice(s.as_bytes()),
                Part::Id => out.extend_from_slice(d.id.as_bytes()),
                Part::Timestamp => out.extend_from_slice(d.timestamp.to_string().as_bytes()),
                Part::Body => out.extend_from_slice(&d.body),
            }
        }
        out
    }

    /// The encoded digest alone (no prefix).
    pub fn digest(&self, key: &[u8], d: &Delivery) -> String {
        self.digest_encoding
            .encode(&hmac_sha256(key, &self.signed_content(d)))
    }

    /// The signature header's value carrying these digests (several = rotation).
    pub fn signature_value(&self, d: &Delivery, digests: &[String]) -> String {
        match &self.format {
            SigFormat::Prefixed(p) => format!("{p}{}", digests.first().map_or("", |s| s)),
            SigFormat::Standard => digests
                .iter()
                .map(|x| format!("v1,{x}"))
                .collect::<Vec<_>>()
                .join(" "),
            SigFormat::Stripe => {
                let mut s = format!("t={}", d.timestamp);
                for x in digests {
                    s.push_str(&format!(",v1={x}"));
                }
                s
            }
        }
    }

    /// Every header a signed delivery carries (Content-Type excluded).
    pub fn headers(&self, key: &[u8], d: &Delivery, event: Option<&str>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(h) = &self.id_header {
            out.push((h.clone(), d.id.clone()));
        }
        if let Some(h) = &self.timestamp_header {
            out.push((h.clone(), d.timestamp.to_string()));
        }
        if let (Some(h), Some(e)) = (&self.event_header, event) {
            out.push((h.clone(), e.to_owned()));
        }
        let digest = self.digest(key, d);
        out.push((
            self.signature_header.clone(),
            self.signature_value(d, &[digest]),
        ));
        out
    }

    /// Wrong-scheme variants of a valid signature (catalogue WH-005): the
    /// right digest under a prefix the scheme does not define.
    pub fn wrong_scheme_values(&self, d: &Delivery, digest: &str) -> Vec<String> {
        match &self.format {
            SigFormat::Prefixed(p) if p.is_empty() => {
                vec![format!("sha256={digest}"), format!("v1,{digest}")]
            }
            SigFormat::Prefixed(p) => {
                let other = if p == "sha1=" { "sha512=" } else { "sha1=" };
                vec![
                    format!("{other}{digest}"),
                    digest.to_owned(),
                    format!("{}{digest}", p.to_ascii_uppercase().replace('=', "-")),
                ]
            }
            SigFormat::Standard => vec![
                format!("v1a,{digest}"),
                format!("v2,{digest}"),
                digest.to_owned(),
            ],
            SigFormat::Stripe => vec![
                format!("t={},v0={digest}", d.timestamp),
                format!("t={},{digest}", d.timestamp),
            ],
        }
    }

    /// Truncated / empty / prefix-only variants (catalogue WH-004).
    pub fn truncated_values(&self, d: &Delivery, digest: &str) -> Vec<String> {
        let half = &digest[..digest.len() / 2];
        let mut v = vec![self.signature_value(d, &[half.to_owned()]), String::new()];
        match &self.format {
            SigFormat::Prefixed(p) if !p.is_empty() => v.push(p.clone()),
            SigFormat::Prefixed(_) => v.push(digest[..1].to_owned()),
            SigFormat::Standard => v.push("v1,".into()),
            SigFormat::Stripe => v.push(format!("t={},v1=", d.timestamp)),
        }
        v
    }

    /// Verifies a delivery from its headers and raw body. `now` and
    /// `tolerance` are seconds; `check_future` false reproduces verifiers that
    /// only look at the past side (stripe-python).
    pub fn verify(
        &self,
        key: &[u8],
        header: &dyn Fn(&str) -> Option<String>,
        body: &[u8],
        now: i64,
        tolerance: Option<i64>,
        check_future: bool,
    ) -> Result<Delivery, VerifyError> {
        self.verify_with(key, header, body, now, tolerance, check_future, ct_eq)
    }

    /// [`Scheme::verify`] with another comparison of the presented and the
    /// expected digest: only the reference's `receiver-leaky-compare`
    /// defect passes one (a leaky compare, for WH-013's timing probe).
    #[allow(clippy::too_many_arguments)] // `verify`'s six, plus the one under test
    pub fn verify_with(
        &self,
        key: &[u8],
        header: &dyn Fn(&str) -> Option<String>,
        body: &[u8],
        now: i64,
        tolerance: Option<i64>,
        check_future: bool,
        eq: fn(&[u8], &[u8]) -> bool,
    ) -> Result<Delivery, VerifyError> {
        let need = |name: &str| header(name).ok_or_else(|| VerifyError::MissingHeader(name.into()));
        let sig = need(&self.signature_header)?;
        let id = match &self.id_header {
            Some(h) => need(h)?,
            None => String::new(),
        };
        let (timestamp, presented) = match &self.format {
            SigFormat::Stripe => parse_stripe(&sig)
                .ok_or_else(|| VerifyError::Malformed(self.signature_header.clone()))?,
            f => {
                let ts = match &self.timestamp_header {
                    Some(h) => need(h)?
                        .trim()
                        .parse::<i64>()
                        .map_err(|_| VerifyError::Malformed(h.clone()))?,
                    None => 0,
                };
                let list = match f {
                    SigFormat::Prefixed(p) => sig
                        .strip_prefix(p.as_str())
                        .map(|s| vec![s.to_owned()])
                        .unwrap_or_default(),
                    _ => sig
                        .split(' ')
                        .filter_map(|e| e.strip_prefix("v1,"))
                        .map(str::to_owned)
                        .collect(),
                };
                (ts, list)
            }
        };
        let d = Delivery {
            id,
            timestamp,
            body: body.to_vec(),
        };
        let expected = self.digest(key, &d);
        if !presented
            .iter()
            .any(|p| !p.is_empty() && eq(p.as_bytes(), expected.as_bytes()))
        {
            return Err(VerifyError::NoMatch);
        }
        if let (true, Some(tol)) = (self.signs_timestamp(), tolerance) {
            if timestamp < now - tol {
                return Err(VerifyError::TooOld(timestamp));
            }
            if check_future && timestamp > now + tol {
                return Err(VerifyError::TooNew(timestamp));
            }
        }
        Ok(d)
    }
}

/// `t=..,v1=..,v1=..` -> (t, [v1...]).
fn parse_stripe(v: &str) -> Option<(i64, Vec<String>)> {
    let mut t = None;
    let mut sigs = Vec::new();
    for item in v.split(',') {
        let (k, val) = item.trim().split_once('=')?;
        match k {
            "t" => t = val.parse().ok(),
            "v1" => sigs.push(val.to_owned()),
            _ => {}
        }
    }
    Some((t?, sigs))
}

pub fn decode_secret(enc: SecretEncoding, secret: &str) -> Result<Vec<u8>, String> {
    match enc {
        SecretEncoding::Raw => {
            if secret.is_empty() {
                Err("the secret is empty".into())
            } else {
                Ok(secret.as_bytes().to_vec())
            }
        }
        SecretEncoding::Base64 => B64
            .decode(secret.trim())
            .map_err(|_| "the secret is not valid base64".into()),
        SecretEncoding::Hex => {
            hex::decode(secret.trim()).map_err(|_| "the secret is not valid hex".into())
        }
        SecretEncoding::Whsec => B64
            .decode(
                secret
                    .trim()
                    .strip_prefix("whsec_")
                    .unwrap_or(secret.trim()),
            )
            .map_err(|_| "the secret is not `whsec_` followed by base64".into()),
    }
}

pub fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Constant-time equality, so a verifier never leaks the matching prefix length.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Random bytes encoded like a real digest of this scheme (a forgery).
pub fn forged_digest(s: &Scheme) -> String {
    let bytes: [u8; 32] = rand::random();
    s.digest_encoding.encode(&bytes)
}

/// Two forgeries of `d`'s digest for a timing probe (catalogue WH-013), of
/// the right length and encoding: `far` shares no leading character with
/// the valid digest (its first byte's top bit is flipped, which changes the
/// first hex and base64 character; the rest is random), `near` shares all
/// but the last significant one (the last byte's lowest bit is flipped: the
/// last hex character, or the last base64 character before the `=`).
pub fn prefix_forgeries(s: &Scheme, key: &[u8], d: &Delivery) -> (String, String) {
    let mac = hmac_sha256(key, &s.signed_content(d));
    let mut far: [u8; 32] = rand::random();
    far[0] = (far[0] & 0x7f) | (!mac[0] & 0x80);
    let mut near = mac;
    if let Some(last) = near.last_mut() {
        *last ^= 0x01;
    }
    (
        s.digest_encoding.encode(&far),
        s.digest_encoding.encode(&near),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forgeries of a timing probe share 0 and all but one significant
    /// character with the valid digest, in hex and in base64.
    #[test]
    fn prefix_forgeries_share_the_stated_prefixes() {
        let common =
            |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        for (name, significant) in [("github", 64), ("standard", 43)] {
            let s = Scheme::builtin(name).unwrap();
            for i in 0..50 {
                let d = Delivery {
                    id: format!("msg_{i}"),
                    timestamp: 1_700_000_000 + i,
                    body: b"{}".to_vec(),
                };
                let valid = s.digest(b"key", &d);
                let (far, near) = prefix_forgeries(&s, b"key", &d);
                assert_eq!(far.len(), valid.len());
                assert_eq!(near.len(), valid.len());
                assert_eq!(common(&far, &valid), 0, "{name}: {far} {valid}");
                assert_eq!(
                    common(&near, &valid),
                    significant - 1,
                    "{name}: {near} {valid}"
                );
            }
        }
    }

    #[test]
    fn github_published_vector() {
        let s = Scheme::builtin("github").unwrap();
        let key = s.decode_secret("It's a Secret to Everybody").unwrap();
        let d = Delivery {
            id: "x".into(),
            timestamp: 0,
            body: b"Hello, World!".to_vec(),
        };
        let sig = s.signature_value(&d, &[s.digest(&key, &d)]);
        assert_eq!(
            sig,
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
        let hdr = |n: &str| match n {
            "X-Hub-Signature-256" => Some(sig.clone()),
            "X-GitHub-Delivery" => Some("x".into()),
            _ => None,
        };
        assert!(s
            .verify(&key, &hdr, b"Hello, World!", 0, Some(300), true)
            .is_ok());
        assert_eq!(
            s.verify(&key, &hdr, b"Hello, World?", 0, Some(300), true),
            Err(VerifyError::NoMatch)
        );
    }

    fn sw_delivery() -> Delivery {
        Delivery {
            id: "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk".into(),
            timestamp: 1649367553,
            body: br#"{"email":"test@example.com","username":"test_user"}"#.to_vec(),
        }
    }

    #[test]
    fn standard_webhooks_library_vector() {
        let s = Scheme::builtin("standard").unwrap();
        let key = s
            .decode_secret("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD")
            .unwrap();
        let d = sw_delivery();
        let digest = s.digest(&key, &d);
        assert_eq!(
            s.signature_value(&d, std::slice::from_ref(&digest)),
            "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="
        );
        // Rotation: any one matching entry verifies, in either order.
        let rotated = s.signature_value(&d, &[forged_digest(&s), digest.clone()]);
        let hdr = |n: &str| match n {
            "webhook-signature" => Some(rotated.clone()),
            "webhook-id" => Some(d.id.clone()),
            "webhook-timestamp" => Some(d.timestamp.to_string()),
            _ => None,
        };
        assert!(s
            .verify(&key, &hdr, &d.body, d.timestamp, Some(300), true)
            .is_ok());
        assert_eq!(
            s.verify(&key, &hdr, &d.body, d.timestamp + 301, Some(300), true),
            Err(VerifyError::TooOld(d.timestamp))
        );
        assert_eq!(
            s.verify(&key, &hdr, &d.body, d.timestamp - 301, Some(300), true),
            Err(VerifyError::TooNew(d.timestamp))
        );
        assert!(s
            .verify(&key, &hdr, &d.body, d.timestamp - 301, Some(300), false)
            .is_ok());
    }

    #[test]
    fn truncated_and_wrong_scheme_never_verify() {
        for name in [
            "botix",
            "timestamped",
            "standard",
            "stripe",
            "github",
            "slack",
            "shopify",
        ] {
            let s = Scheme::builtin(name).unwrap();
            let key = b"k3y".to_vec();
            let d = sw_delivery();
            let digest = s.digest(&key, &d);
            let bad: Vec<String> = s
                .truncated_values(&d, &digest)
                .into_iter()
                .chain(s.wrong_scheme_values(&d, &digest))
                .collect();
            for v in bad {
                let hdr = |n: &str| {
                    if n == s.signature_header {
                        Some(v.clone())
                    } else if Some(n) == s.id_header.as_deref() {
                        Some(d.id.clone())
                    } else if Some(n) == s.timestamp_header.as_deref() {
                        Some(d.timestamp.to_string())
                    } else {
                        None
                    }
                };
                assert!(
                    s.verify(&key, &hdr, &d.body, d.timestamp, Some(300), true)
                        .is_err(),
                    "{name}: {v}"
                );
            }
        }
    }

    #[test]
    fn stripe_and_custom() {
        let s = Scheme::builtin("stripe").unwrap();
        let d = sw_delivery();
        let v = s.signature_value(&d, &["aa".into(), "bb".into()]);
        assert_eq!(v, "t=1649367553,v1=aa,v1=bb");
        assert_eq!(
            parse_stripe(&v),
            Some((1649367553, vec!["aa".into(), "bb".into()]))
        );
        let c = Scheme::custom(&CustomScheme {
            signature_header: "X-Sig".into(),
            signature_prefix: "".into(),
            id_header: None,
            timestamp_header: Some("X-Ts".into()),
            event_header: None,
            secret_encoding: SecretEncoding::Hex,
            digest_encoding: DigestEncoding::Base64,
            content: "{timestamp}|{body}".into(),
        })
        .unwrap();
        assert_eq!(c.signed_content(&d)[..11], *b"1649367553|");
        assert!(parse_content("{nope}").is_err());
        assert!(parse_content("{id}").is_err());
    }
}
