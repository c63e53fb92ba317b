//! The forms a secret takes on its way to an output: every chain of up to
//! [`MAX_CHAIN`] of the encodings tminus itself applies (or provokes a
//! target into applying), generated when the secret is registered.
//!
//! Why chains: a secret sent in a JSON body, echoed by the target inside its
//! JSON answer and stored in report.json is JSON-escaped twice; quoted in a
//! message (`escape_debug`) and then put in the JUnit file it is escaped
//! again for XML. One level of escaping is not enough (issue 44: the tail of
//! `ZQX"quo\te&amp<lt>'ap` stayed readable escaped twice), so the redactor
//! registers the closure of the encodings to depth 3, not a list of the
//! pairs someone thought of.
//!
//! Bounds: text escapes ([`TEXT_ESCAPES`], 13) may repeat; a byte encoding
//! ([`BYTE_ENCODINGS`], base64 and hex, 6) at most once per chain (base64 of
//! base64 is no form tminus makes, and hex of hex grows eightfold). So a
//! secret has at most 1 + 19 + 325 + 5,239 = 5,584 forms
//! ([`MAX_FORMS`]), fewer when escapes leave it unchanged (they are
//! deduplicated). A level whose forms would take the secret's forms past
//! [`MAX_FORM_BYTES`] is left out whole (a secret of several KB, a PEM key,
//! keeps two levels), and the cut-piece masking still covers its pieces.

use std::collections::HashMap;

use base64::Engine;

use crate::model::text::{html_text, markdown_code, markdown_text, percent_encode, xml_text};

/// How many encodings, one after another, a registered secret is followed
/// through.
pub const MAX_CHAIN: usize = 3;

/// The most forms one secret can have (see the module doc).
pub const MAX_FORMS: usize = 5_584;

/// The most bytes of forms one secret registers; a level past it is left
/// out whole.
pub const MAX_FORM_BYTES: usize = 4 << 20;

/// An escape of text to text.
pub type TextEscape = fn(&str) -> String;

/// An encoding of bytes to text.
pub type ByteEncoding = fn(&[u8]) -> String;

/// Escapes of text to text, each applied character by character, so a
/// prefix of the input escapes to a prefix of the output (a cut stays a
/// cut). Names are for tests and docs.
pub const TEXT_ESCAPES: &[(&str, TextEscape)] = &[
    ("json", json_inner),
    ("json-ascii", ascii_json),
    ("debug", debug_inner),
    ("escape_debug", super::quote),
    ("xml", xml_escape),
    // JUnit's text: controls made visible, then quick-junit's `&<>`.
    ("junit", |s| xml_partial(&xml_text(s))),
    // The HTML report's escape; a target's own HTML escape writes the same
    // entities (`&#39;`), controls aside.
    ("html", html_text),
    ("markdown", markdown_text),
    ("markdown-code", markdown_code_inner),
    ("percent", |s| percent_encode(s, false, true)),
    ("percent-lower", |s| percent_encode(s, false, false)),
    ("percent-plus", |s| percent_encode(s, true, true)),
    ("percent-plus-lower", |s| percent_encode(s, true, false)),
];

/// Encodings of bytes (the text's UTF-8, or a key's bytes).
pub const BYTE_ENCODINGS: &[(&str, ByteEncoding)] = &[
    ("base64", |b| {
        base64::engine::general_purpose::STANDARD.encode(b)
    }),
    ("base64-nopad", |b| {
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(b)
    }),
    ("base64url", |b| {
        base64::engine::general_purpose::URL_SAFE.encode(b)
    }),
    ("base64url-nopad", |b| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    }),
    ("hex", |b| hex::encode(b)),
    ("HEX", |b| hex::encode_upper(b)),
];

/// Every form of `secret` (itself included), deduplicated: each chain of up
/// to [`MAX_CHAIN`] encodings, byte encodings at most once per chain.
pub fn encoded_forms(secret: &str) -> Vec<String> {
    // Form -> whether a byte encoding made it. A form reached both ways is
    // expanded as the one without (it may still take a byte encoding).
    let mut seen: HashMap<String, bool> = HashMap::new();
    seen.insert(secret.to_owned(), false);
    let mut frontier = vec![(secret.to_owned(), false)];
    let mut bytes = secret.len();
    for _ in 0..MAX_CHAIN {
        let mut next: Vec<(String, bool)> = Vec::new();
        let mut level_bytes = 0;
        for (form, binary) in &frontier {
            let mut made: Vec<(String, bool)> = TEXT_ESCAPES
                .iter()
                .map(|(_, e)| (e(form), *binary))
                .collect();
            if !binary {
                made.extend(
                    BYTE_ENCODINGS
                        .iter()
                        .map(|(_, e)| (e(form.as_bytes()), true)),
                );
            }
            for (g, b) in made {
                let fresh = match seen.get_mut(&g) {
                    None => true,
                    Some(was) if *was && !b => {
                        *was = false;
                        true
                    }
                    Some(_) => false,
                };
                if fresh {
                    level_bytes += g.len();
                    seen.insert(g.clone(), b);
                    next.push((g, b));
                }
            }
        }
        if bytes + level_bytes > MAX_FORM_BYTES {
            for (g, _) in &next {
                seen.remove(g);
            }
            break;
        }
        bytes += level_bytes;
        frontier = next;
    }
    let mut out: Vec<String> = seen.into_keys().collect();
    out.sort();
    out
}

/// The forms of a key's bytes that are not text: its byte encodings, each
/// followed by up to two text escapes.
pub fn key_forms(key: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for (_, e) in BYTE_ENCODINGS {
        let encoded = e(key);
        for f in encoded_text_forms(&encoded) {
            out.push(f);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `text` and its chains of up to two text escapes (no byte encoding).
fn encoded_text_forms(text: &str) -> Vec<String> {
    let mut out = vec![text.to_owned()];
    for (_, a) in TEXT_ESCAPES {
        let once = a(text);
        for (_, b) in TEXT_ESCAPES {
            out.push(b(&once));
        }
        out.push(once);
    }
    out
}

/// The base64 forms of `bytes` (a header value's token).
pub fn base64_forms(bytes: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = BYTE_ENCODINGS[..4].iter().map(|(_, e)| e(bytes)).collect();
    v.dedup();
    v
}

/// The inside of a JSON string (`serde_json`'s escaping, quotes dropped).
pub fn json_inner(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap_or_default();
    json[1..json.len().saturating_sub(1).max(1)].to_owned()
}

/// The inside of Rust's `{:?}` of a string (quotes dropped).
pub fn debug_inner(s: &str) -> String {
    let debug = format!("{s:?}");
    debug[1..debug.len().saturating_sub(1).max(1)].to_owned()
}

/// The inside of a Markdown code span (backticks dropped).
fn markdown_code_inner(s: &str) -> String {
    let code = markdown_code(s);
    code[1..code.len() - 1].to_owned()
}

/// JSON with every non-ASCII character as `\uXXXX` (what some encoders write).
pub fn ascii_json(s: &str) -> String {
    let mut out = String::new();
    for c in json_inner(s).chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for u in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

pub fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// What quick-junit escapes in an element's text.
fn xml_partial(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
pub use crate::model::text::html_text as html_escape;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every special character class at once, so no escape leaves it
    /// unchanged: the count is the bound's worst case.
    #[test]
    fn the_closure_is_bounded_and_holds_every_chain() {
        let s = "ZQX\"quo\\te&amp<lt>'ap ü`*_|%+\u{1b}";
        let forms = encoded_forms(s);
        assert!(forms.len() <= MAX_FORMS, "{}", forms.len());
        // Measured: 1,013 (escapes that meet the same text are one form).
        assert!(forms.len() > 900, "{}", forms.len());
        // The measured leak: JSON-escaped twice.
        assert!(forms.contains(&json_inner(&json_inner(s))));
        // Three levels, a byte encoding in the middle.
        let three = html_escape(&base64::engine::general_purpose::URL_SAFE.encode(quote3(s)));
        assert!(forms.contains(&three), "{three}");
        let bytes: usize = forms.iter().map(String::len).sum();
        assert!(bytes <= MAX_FORM_BYTES, "{bytes}");
    }

    fn quote3(s: &str) -> String {
        crate::redact::quote(s)
    }

    /// A plain secret has few forms: escapes that change nothing are one.
    #[test]
    fn a_plain_secret_has_few_forms() {
        let forms = encoded_forms("abcdef123456");
        assert!(forms.len() < 200, "{}", forms.len());
    }

    /// A long secret keeps two levels rather than growing without bound.
    #[test]
    fn a_long_secret_is_bounded_in_bytes() {
        let s = "k\"e\\y<&>'".repeat(400);
        let forms = encoded_forms(&s);
        let bytes: usize = forms.iter().map(String::len).sum();
        assert!(bytes <= MAX_FORM_BYTES, "{bytes}");
        assert!(forms.contains(&json_inner(&json_inner(&s))));
    }
}
