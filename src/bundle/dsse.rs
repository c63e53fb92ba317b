//! The DSSE envelope (Dead Simple Signing Envelope, secure-systems-lab/dsse
//! v1) that carries a bundle's manifest: the payload, its type, and ed25519
//! signatures over the PAE encoding, so any DSSE implementation can check a
//! tminus bundle without tminus.

use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};

/// The payload type of an in-toto Statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// `DSSEv1 <len(type)> <type> <len(payload)> <payload>`: what is signed,
/// so a signature cannot be moved to a payload of another type.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Envelope {
    /// The Statement, standard base64.
    pub payload: String,
    pub payload_type: String,
    /// Empty for an unsigned bundle (`tminus verify` then needs `--allow-unsigned`).
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSignature {
    /// Hex SHA-256 of the public key's SPKI DER (see `keys::key_id`): a hint
    /// for which key to check with, never trusted on its own.
    #[serde(default)]
    pub keyid: String,
    /// The ed25519 signature over the PAE, standard base64.
    pub sig: String,
}

/// Wraps `payload`, signed with `key` (with `keyid`) when one is given.
pub fn seal(payload: &[u8], key: Option<(&SigningKey, String)>) -> Envelope {
    let b64 = base64::engine::general_purpose::STANDARD;
    let signatures = key
        .map(|(k, keyid)| {
            let sig = k.sign(&pae(PAYLOAD_TYPE, payload));
            vec![EnvelopeSignature {
                keyid,
                sig: b64.encode(sig.to_bytes()),
            }]
        })
        .unwrap_or_default();
    Envelope {
        payload: b64.encode(payload),
        payload_type: PAYLOAD_TYPE.to_owned(),
        signatures,
    }
}

impl Envelope {
    /// The payload's bytes, or why they cannot be read.
    pub fn payload_bytes(&self) -> Result<Vec<u8>, String> {
        base64::engine::general_purpose::STANDARD
            .decode(self.payload.trim())
            .map_err(|e| format!("its payload is not base64: {e}"))
    }

    /// The index of the first signature that `key` verifies over the PAE,
    /// or why none does.
    pub fn verify(&self, key: &VerifyingKey, keyid: &str) -> Result<usize, String> {
        if self.payload_type != PAYLOAD_TYPE {
            return Err(format!(
                "payloadType is `{}`, not `{PAYLOAD_TYPE}`",
                self.payload_type
            ));
        }
        let payload = self.payload_bytes()?;
        let signed = pae(&self.payload_type, &payload);
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut why = Vec::new();
        for (i, s) in self.signatures.iter().enumerate() {
            let bytes = match b64.decode(s.sig.trim()) {
                Ok(b) => b,
                Err(e) => {
                    why.push(format!("signature {} is not base64: {e}", i + 1));
                    continue;
                }
            };
            let Ok(sig) = Signature::from_slice(&bytes) else {
                why.push(format!(
                    "signature {} is {} bytes, not an ed25519 signature (64)",
                    i + 1,
                    bytes.len()
                ));
                continue;
            };
            if key.verify(&signed, &sig).is_ok() {
                return Ok(i);
            }
            let hint = if s.keyid == keyid {
                String::new()
            } else {
                format!(" (it names key {}, the key given is {keyid})", s.keyid)
            };
            why.push(format!(
                "signature {} does not verify with the key given{hint}",
                i + 1
            ));
        }
        Err(why.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_dsse_spec_example() {
        // The DSSE protocol's worked example (protocol.md, "Test vectors").
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    #[test]
    fn a_signature_holds_for_its_payload_only() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let vk = key.verifying_key();
        let env = seal(b"{\"a\":1}", Some((&key, "k".into())));
        assert_eq!(env.verify(&vk, "k"), Ok(0));
        let mut moved = env.clone();
        moved.payload = base64::engine::general_purpose::STANDARD.encode(b"{\"a\":2}");
        assert!(moved
            .verify(&vk, "k")
            .unwrap_err()
            .contains("does not verify"));
        let mut retyped = env.clone();
        retyped.payload_type = "text/plain".into();
        assert!(retyped.verify(&vk, "k").is_err());
        let other = SigningKey::from_bytes(&[8u8; 32]).verifying_key();
        assert!(env
            .verify(&other, "o")
            .unwrap_err()
            .contains("it names key k"));
        assert!(seal(b"x", None).verify(&vk, "k").is_err());
    }
}
