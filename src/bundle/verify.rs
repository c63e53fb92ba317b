//! `tminus verify`: checks a bundle made by anyone. The signature over the
//! manifest, then every file the manifest names against its SHA-256, then
//! that the archive holds exactly those files. The first thing that differs
//! is named; nothing in the bundle is trusted before the signature holds.

use std::path::Path;

use serde_json::Value;

use super::archive::{self, ReadError};
use super::{dsse, keys, manifest, ENVELOPE};

/// What `verify` concluded.
#[derive(Debug, PartialEq, Eq)]
pub enum Verified {
    /// Every check held: the lines say what was checked.
    Ok(Vec<String>),
    /// Something differs (exit 1): the lines checked so far, then what differs.
    Differs(Vec<String>, String),
    /// The input could not be read (exit 3).
    Unreadable(String),
}

/// How to verify.
#[derive(Debug, Default)]
pub struct VerifyOptions<'a> {
    /// The signer's public key (SPKI PEM).
    pub key: Option<&'a Path>,
    /// Accept an unsigned bundle (and a signed one without `key`), checking
    /// its hashes only.
    pub allow_unsigned: bool,
}

pub fn verify(bundle: &Path, opts: &VerifyOptions<'_>) -> Verified {
    let key = match opts.key.map(keys::read_verifying_key).transpose() {
        Ok(k) => k,
        Err(e) => return Verified::Unreadable(e),
    };
    if key.is_none() && !opts.allow_unsigned {
        return Verified::Unreadable(
            "give the signer's public key with --key FILE (or --allow-unsigned to check hashes only)"
                .into(),
        );
    }
    let entries = match archive::read_file(bundle) {
        Ok(e) => e,
        Err(ReadError::Unreadable(e)) => return Verified::Unreadable(e),
        Err(ReadError::Refused(e)) => return Verified::Differs(Vec::new(), e),
    };
    let mut lines = Vec::new();
    let differs = |lines: Vec<String>, why: String| Verified::Differs(lines, why);
    let Some(env) = entries.iter().find(|e| e.name == ENVELOPE) else {
        return differs(lines, format!("{ENVELOPE}: missing from the bundle"));
    };
    let envelope: dsse::Envelope = match serde_json::from_slice(&env.bytes) {
        Ok(e) => e,
        Err(e) => {
            return differs(
                lines,
                format!(
                "{ENVELOPE}: not a DSSE envelope (JSON with payload, payloadType, signatures): {e}"
            ),
            )
        }
    };
    match (&key, envelope.signatures.is_empty()) {
        (Some(k), false) => {
            let id = keys::key_id(k);
            match envelope.verify(k, &id) {
                Ok(_) => lines.push(format!(
                    "ok  signature of {ENVELOPE} (ed25519, DSSE v1, key {id})"
                )),
                Err(e) => return differs(lines, format!("{ENVELOPE}: signature: {e}")),
            }
        }
        (_, true) if !opts.allow_unsigned => {
            return differs(
                lines,
                format!(
                    "{ENVELOPE}: the bundle is unsigned (--allow-unsigned checks its hashes only)"
                ),
            )
        }
        (_, true) => lines.push(
            "--  signature: none, the bundle is unsigned (hashes only, --allow-unsigned)".into(),
        ),
        (None, false) => lines.push(format!(
            "--  signature of {ENVELOPE}: not checked (no --key, --allow-unsigned)"
        )),
    }
    if envelope.payload_type != dsse::PAYLOAD_TYPE {
        return differs(
            lines,
            format!(
                "{ENVELOPE}: payloadType `{}` is not `{}`",
                envelope.payload_type,
                dsse::PAYLOAD_TYPE
            ),
        );
    }
    let statement: Value = match envelope
        .payload_bytes()
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            return differs(
                lines,
                format!("{ENVELOPE}: the manifest is unreadable: {e}"),
            )
        }
    };
    if statement["_type"] != manifest::STATEMENT_TYPE
        || statement["predicateType"] != manifest::PREDICATE_TYPE
    {
        return differs(
            lines,
            format!(
                "{ENVELOPE}: the manifest is not an in-toto Statement v1 with the test-result predicate"
            ),
        );
    }
    let Some(subjects) = statement["subject"].as_array() else {
        return differs(
            lines,
            format!("{ENVELOPE}: the manifest has no subject list"),
        );
    };
    let mut named: Vec<&str> = Vec::new();
    for s in subjects {
        let (Some(name), Some(want)) = (s["name"].as_str(), s["digest"]["sha256"].as_str()) else {
            return differs(
                lines,
                format!("{ENVELOPE}: a subject lacks a name or a sha256"),
            );
        };
        named.push(name);
        let Some(file) = entries.iter().find(|e| e.name == name) else {
            return differs(
                lines,
                format!("{name}: named in the manifest, missing from the bundle"),
            );
        };
        let got = manifest::sha256_hex(&file.bytes);
        if got != want {
            return differs(
                lines,
                format!("{name}: its SHA-256 is {got}, the manifest says {want}"),
            );
        }
        lines.push(format!("ok  {want}  {name}"));
    }
    if let Some(extra) = entries
        .iter()
        .find(|e| e.name != ENVELOPE && !named.contains(&e.name.as_str()))
    {
        return differs(
            lines,
            format!("{}: in the bundle but not in the manifest", extra.name),
        );
    }
    let t = &statement["predicate"]["tminus"];
    lines.push(format!(
        "verified: {} file(s) and the manifest; result {}, {}",
        subjects.len(),
        statement["predicate"]["result"].as_str().unwrap_or("?"),
        t["summary"].as_str().unwrap_or("")
    ));
    Verified::Ok(lines)
}
