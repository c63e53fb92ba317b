//! The client certificate and its key as people make them (issue 37 item 3):
//! read from PEM, checked before anything is sent, and every way it cannot
//! work said with the file and the fix, never as the TLS library's "builder
//! error" at the first request.
//!
//! Accepted: X.509 v1 or v3 certificates; RSA, ECDSA (P-256/P-384/P-521) and
//! Ed25519 keys in PKCS#1 (`RSA PRIVATE KEY`), SEC1 (`EC PRIVATE KEY`) or
//! PKCS#8 (`PRIVATE KEY`). Refused with a named cause: an encrypted key, a
//! key of another certificate, a chain whose first certificate is not the
//! key's (the leaf must come first, then each issuer in turn), and a key
//! type the TLS stack cannot sign with. The key is a secret: no message
//! quotes it or anything derived from it, only its file's name.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The chain and key, checked to belong together in the right order.
pub struct ClientPair {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// Checks the certificate chain in `cert_pem` (read from `cert_file`) and
/// the key in `key_pem` (read from `key_file`, which may be the same file).
pub fn check(
    cert_file: &str,
    cert_pem: &[u8],
    key_file: &str,
    key_pem: &[u8],
) -> Result<ClientPair, String> {
    if is_encrypted(key_pem) {
        return Err(format!(
            "{key_file}: the private key is encrypted (it needs a passphrase), and tminus reads \
             unencrypted keys only: write a decrypted copy with `openssl pkey -in KEY -out \
             plain.key` and give that (keep it as secret as the original)"
        ));
    }
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| format!("{cert_file}: a PEM certificate in it cannot be read"))?;
    if chain.is_empty() {
        return Err(format!(
            "{cert_file}: no PEM certificate in it (`-----BEGIN CERTIFICATE-----`)"
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| {
        format!(
            "{key_file}: no private key tminus can read in it: PEM `PRIVATE KEY` (PKCS#8), \
             `RSA PRIVATE KEY` (PKCS#1) or `EC PRIVATE KEY` (SEC1) expected"
        )
    })?;
    let signer = rustls::crypto::aws_lc_rs::sign::any_supported_type(&key).map_err(|_| {
        format!(
            "{key_file}: the private key is of a type TLS cannot sign with here (RSA of 2048 bits \
             or more, ECDSA P-256/P-384/P-521 or Ed25519 are)"
        )
    })?;
    let public = signer.public_key().ok_or_else(|| {
        format!("{key_file}: the private key's public half cannot be derived to check it")
    })?;
    let spkis: Vec<Option<Vec<u8>>> = chain.iter().map(|c| spki(c)).collect();
    if spkis[0].is_none() {
        return Err(format!(
            "{cert_file}: its first certificate is not an X.509 certificate tminus can read"
        ));
    }
    match spkis
        .iter()
        .position(|s| s.as_deref() == Some(public.as_ref()))
    {
        Some(0) => {}
        Some(at) => {
            return Err(format!(
                "{cert_file}: the chain is in the wrong order: the certificate of the key in \
                 {key_file} is number {} of {}, and the client's own certificate must come \
                 first, then the one that issued it, and so on (e.g. `cat client.pem \
                 intermediate.pem > chain.pem`)",
                at + 1,
                chain.len()
            ))
        }
        None => {
            return Err(format!(
                "the private key in {key_file} does not belong to the certificate in {cert_file} \
                 (their public keys differ): give the key the certificate was made for"
            ))
        }
    }
    if let Some(msg) = order_problem(&chain) {
        return Err(format!("{cert_file}: {msg}"));
    }
    Ok(ClientPair { chain, key })
}

/// Whether the PEM holds an encrypted key: PKCS#8 `ENCRYPTED PRIVATE KEY`,
/// or OpenSSL's traditional format with `Proc-Type: 4,ENCRYPTED`.
fn is_encrypted(pem: &[u8]) -> bool {
    String::from_utf8_lossy(pem).lines().any(|l| {
        let l = l.trim();
        l == "-----BEGIN ENCRYPTED PRIVATE KEY-----"
            || (l.starts_with("Proc-Type:") && l.contains("ENCRYPTED"))
    })
}

/// The DER of the certificate's SubjectPublicKeyInfo.
fn spki(cert: &CertificateDer<'_>) -> Option<Vec<u8>> {
    let (_, c) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    Some(c.tbs_certificate.subject_pki.raw.to_vec())
}

/// Why the certificates after the first are out of order: certificate n+1
/// must be the issuer of certificate n. A chain whose next issuer is not in
/// it at all is left to the server (it may hold the intermediates itself);
/// one whose issuer is there but elsewhere is in the wrong order.
fn order_problem(chain: &[CertificateDer<'_>]) -> Option<String> {
    let names: Vec<(Vec<u8>, Vec<u8>)> = chain
        .iter()
        .map(|c| {
            x509_parser::parse_x509_certificate(c.as_ref())
                .map(|(_, c)| {
                    (
                        c.tbs_certificate.subject.as_raw().to_vec(),
                        c.tbs_certificate.issuer.as_raw().to_vec(),
                    )
                })
                .unwrap_or_default()
        })
        .collect();
    for i in 0..chain.len().saturating_sub(1) {
        let issuer = &names[i].1;
        if names[i + 1].0 == *issuer || names[i].0 == *issuer {
            continue;
        }
        if let Some(at) = names.iter().position(|(subject, _)| subject == issuer) {
            return Some(format!(
                "the chain is in the wrong order: certificate {} was issued by certificate {}, \
                 which must come right after it (the client's own certificate first, then the \
                 one that issued it, and so on)",
                i + 1,
                at + 1
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encrypted_keys_are_told_by_their_pem() {
        assert!(is_encrypted(
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n"
        ));
        assert!(is_encrypted(
            b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nMIIB\n"
        ));
        assert!(!is_encrypted(
            b"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"
        ));
    }

    #[test]
    fn a_file_without_a_certificate_is_named() {
        let e = check("--cert c.pem", b"", "--key k.pem", b"nothing")
            .err()
            .unwrap();
        assert!(e.contains("--cert c.pem: no PEM certificate"), "{e}");
    }
}
