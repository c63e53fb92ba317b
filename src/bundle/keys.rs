//! ed25519 keys as openssl writes them: the private key as PKCS#8 PEM
//! (`openssl genpkey -algorithm ed25519`), the public key as SPKI PEM
//! (`openssl pkey -pubout`). The private key is a secret: its PEM text, its
//! base64 body and its seed are registered with the redactor before anything
//! can print them, and errors never quote the file.

use std::path::Path;

use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::redact::Redactor;

/// The most read of a key file (a PEM key is a few hundred bytes).
const MAX_KEY_BYTES: u64 = 64 << 10;

/// The name the private key is listed under among the redacted secrets.
pub const SIGN_KEY_NAME: &str = "--sign-key";

fn read_pem(path: &Path, what: &str) -> Result<String, String> {
    let bytes = crate::files::read_file_capped(path, MAX_KEY_BYTES)?;
    String::from_utf8(bytes).map_err(|_| format!("{what} {} is not PEM text", path.display()))
}

/// Reads the signing key at `path` and registers it with `redactor`.
pub fn read_signing_key(path: &Path, redactor: &Redactor) -> Result<SigningKey, String> {
    let text = read_pem(path, "--sign-key")?;
    // Registered before parsing, so not even a parse error can show it.
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::trim)
        .collect();
    if body.len() >= 8 {
        redactor.add_named(SIGN_KEY_NAME, &body);
        // Each line alone too: an excerpt may cut the body at a line break.
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| l.len() >= 8 && !l.starts_with("-----"))
        {
            redactor.add(line);
        }
    }
    let key = SigningKey::from_pkcs8_pem(&text).map_err(|_| {
        format!(
            "--sign-key {} is not an ed25519 private key in PKCS#8 PEM (make one with `openssl genpkey -algorithm ed25519 -out key.pem`)",
            path.display()
        )
    })?;
    redactor.add_key(key.as_bytes());
    redactor.note_name(SIGN_KEY_NAME);
    Ok(key)
}

/// Reads the public key at `path`.
pub fn read_verifying_key(path: &Path) -> Result<VerifyingKey, String> {
    let text = read_pem(path, "--key")?;
    VerifyingKey::from_public_key_pem(&text).map_err(|_| {
        format!(
            "--key {} is not an ed25519 public key in SPKI PEM (make one with `openssl pkey -in key.pem -pubout -out key.pub.pem`)",
            path.display()
        )
    })
}

/// A key's id: hex SHA-256 of its SPKI DER, the bytes `openssl pkey -pubout
/// -outform DER` writes (so `openssl pkey -pubin -in key.pub.pem -outform DER
/// | sha256sum` prints it).
pub fn key_id(key: &VerifyingKey) -> String {
    let der = key
        .to_public_key_der()
        .map(|d| d.as_bytes().to_vec())
        // An ed25519 SPKI is a fixed 12-byte prefix and the key.
        .unwrap_or_else(|_| key.as_bytes().to_vec());
    hex::encode(Sha256::digest(&der))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Made with `openssl genpkey -algorithm ed25519` and `openssl pkey -pubout`.
    const PRIVATE: &str = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAbBthrwpmLMBirfENZQaWKhgHQ4aFwVqfyaZaO3AAwq\n-----END PRIVATE KEY-----\n";
    const PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA99pqd+ABU8I790m/HYJM9X2J2OOEivCBg1GR1DZcd18=\n-----END PUBLIC KEY-----\n";

    #[test]
    fn openssl_keys_read_and_the_private_one_is_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let (sk, pk) = (dir.path().join("k.pem"), dir.path().join("k.pub.pem"));
        std::fs::write(&sk, PRIVATE).unwrap();
        std::fs::write(&pk, PUBLIC).unwrap();
        let r = Redactor::new();
        let key = read_signing_key(&sk, &r).unwrap();
        let public = read_verifying_key(&pk).unwrap();
        assert_eq!(key.verifying_key(), public);
        assert_eq!(r.names(), vec![SIGN_KEY_NAME.to_owned()]);
        let shown = r.redact(&format!("{PRIVATE} {}", hex::encode(key.as_bytes())));
        assert!(!shown.contains("MC4CAQAw"), "{shown}");
        assert!(!shown.contains(&hex::encode(key.as_bytes())), "{shown}");
        // `openssl pkey -pubin -outform DER | sha256sum`.
        assert_eq!(
            key_id(&public),
            "183ad197c1e269efc3ab8405bae457dd651971a7c8891a156abdfe915d1907e7"
        );
        assert!(read_verifying_key(&sk).unwrap_err().contains("SPKI PEM"));
        assert!(read_signing_key(&pk, &Redactor::new())
            .unwrap_err()
            .contains("PKCS#8"));
    }
}
