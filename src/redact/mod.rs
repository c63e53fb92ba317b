//! Secret redaction. Every value that came through `${secret.X}` (and every
//! other credential tminus holds: webhook secrets, URL userinfo) is
//! registered here, and every reporter passes its final text through
//! `redact` before writing it anywhere. Sensitive headers are masked when an
//! exchange is captured, so they never reach the event stream in clear.
//!
//! A secret leaks in more forms than its raw bytes: the target may echo it
//! percent-encoded (a query string), JSON- or Debug-escaped, XML/HTML-escaped
//! by a report, base64- or hex-encoded (a Basic credential, a key), or cut in
//! half by an excerpt, and these in turn, one inside the other (a JSON echo
//! of a JSON body stored in report.json is escaped twice). `add` registers
//! every chain of up to three of the encodings tminus applies ([`forms`]),
//! and `redact` also masks a piece of any of those forms (8 characters or
//! more) that stands at a cut (`…`, or the start or end of the text)
//! ([`matcher`]).
//!
//! A secret that encodes a key (`whsec_<base64>`, a webhook secret given in
//! hex or base64) also leaks as the key: `add_key` registers the decoded key
//! and its hex and base64 forms.
//!
//! Escaping of target text lives here too ([`quote`]): the forms registered
//! for every secret are made by the same functions the output paths use, so
//! no output can hold a secret in a form the redactor does not know.

mod forms;
mod matcher;

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use base64::Engine;

use forms::{base64_forms, key_forms};
pub use forms::{encoded_forms, MAX_CHAIN, MAX_FORMS, MAX_FORM_BYTES, TEXT_ESCAPES};
use matcher::Matcher;

pub const MASK: &str = "[REDACTED]";

/// A piece of a secret this long, at a cut, is treated as the secret.
pub const MIN_CUT_PIECE: usize = 8;

/// Shortest decoded key (bytes) whose forms are registered.
pub const MIN_KEY: usize = 6;

/// The one escape of target text quoted in a message (a request id, a
/// header value): Rust's `escape_debug`, so control characters, quotes and
/// apostrophes are visible. `add` registers every secret in this form, made
/// by this same function, so quoting cannot turn a secret into text the
/// redactor does not know; quote target text with this, never with `{:?}`
/// or `escape_debug` of its own.
pub fn quote(s: &str) -> String {
    s.escape_debug().to_string()
}

/// The key of a `whsec_<base64>` secret (Standard Webhooks).
fn whsec_key(secret: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
    let b64 = secret.trim().strip_prefix("whsec_")?;
    STANDARD
        .decode(b64)
        .or_else(|_| STANDARD_NO_PAD.decode(b64))
        .ok()
}

/// Header names whose values are never shown, whatever their source.
pub const SENSITIVE_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
];

pub fn is_sensitive_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    SENSITIVE_HEADERS.contains(&n.as_str()) || n.contains("secret") || n.contains("token")
}

/// Shared, cheaply cloned set of secret values (every registered form).
#[derive(Clone, Default, Debug)]
pub struct Redactor {
    secrets: Arc<RwLock<Forms>>,
    /// What the secrets are called (`API_KEY` of `${secret.API_KEY}`,
    /// `--sign-key`), never their values: a certification bundle lists
    /// which secrets its reports were redacted of.
    names: Arc<RwLock<Vec<String>>>,
}

/// Every registered form, and their compiled matcher (made again on the
/// first use after a form was added).
#[derive(Default, Debug)]
struct Forms {
    list: Vec<String>,
    set: HashSet<String>,
    matcher: Option<Arc<Matcher>>,
}

impl Redactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a secret value and every encoded form of it. Very short
    /// values (under 3 characters) would blank out ordinary text, so they are
    /// refused by the plan instead.
    pub fn add(&self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        self.insert(encoded_forms(secret), secret);
        if let Some(key) = whsec_key(secret) {
            self.add_key(&key);
        }
    }

    /// [`add`](Self::add), and remembers `name` (never the value) for
    /// [`names`](Self::names).
    pub fn add_named(&self, name: &str, secret: &str) {
        self.add(secret);
        self.note_name(name);
    }

    /// Remembers that a secret called `name` is registered.
    pub fn note_name(&self, name: &str) {
        let mut n = self.names.write().expect("redactor lock");
        if !n.iter().any(|x| x == name) {
            n.push(name.to_owned());
        }
    }

    /// The names of the registered secrets, sorted (values are never kept
    /// apart from the masks).
    pub fn names(&self) -> Vec<String> {
        let mut n = self.names.read().expect("redactor lock").clone();
        n.sort();
        n
    }

    /// Registers a key decoded from a secret (the bytes of `whsec_<base64>`,
    /// a webhook secret given in hex or base64), which a receiver that holds
    /// it may echo: the key as text (with every form `add` registers) when
    /// it is UTF-8, and its hex and base64 forms whatever it holds. Keys
    /// under [`MIN_KEY`] bytes are left out (they would mask ordinary text).
    pub fn add_key(&self, key: &[u8]) {
        if key.len() < MIN_KEY {
            return;
        }
        if let Ok(text) = std::str::from_utf8(key) {
            self.add(text);
            return;
        }
        let mut forms = key_forms(key);
        // A binary key echoed raw is read as lossy UTF-8.
        let lossy = String::from_utf8_lossy(key);
        if lossy.chars().filter(|c| *c != '\u{FFFD}').count() >= MIN_KEY {
            forms.extend(encoded_forms(&lossy));
        }
        self.insert(forms, "");
    }

    /// Adds `forms`. A form under 3 characters would mask ordinary text and
    /// is left out, except `raw`, the value as the suite gave it.
    fn insert(&self, forms: impl IntoIterator<Item = String>, raw: &str) {
        let mut s = self.secrets.write().expect("redactor lock");
        for f in forms {
            if (f.len() >= 3 || f == raw) && !f.is_empty() && s.set.insert(f.clone()) {
                s.list.push(f);
                s.matcher = None;
            }
        }
    }

    /// The compiled matcher of every form, `None` when there is none.
    fn matcher(&self) -> Option<Arc<Matcher>> {
        if let Some(m) = &self.secrets.read().expect("redactor lock").matcher {
            return Some(m.clone());
        }
        let mut guard = self.secrets.write().expect("redactor lock");
        let s = &mut *guard;
        if s.list.is_empty() {
            return None;
        }
        let m = s
            .matcher
            .get_or_insert_with(|| Arc::new(Matcher::new(&s.list)))
            .clone();
        Some(m)
    }

    /// Registers what a header value derived from a secret looks like on the
    /// wire or in an echo: the base64 of the whole value, and for
    /// `Basic <token>` the token when it decodes to something holding a
    /// secret. Called for every rendered request header.
    pub fn add_derived_header(&self, value: &str) {
        if self.is_empty() {
            return;
        }
        if self.contains_secret(value) {
            self.insert(base64_forms(value.as_bytes()), "");
            if let Some((_, param)) = value.split_once(' ') {
                self.insert(base64_forms(param.trim().as_bytes()), "");
            }
        }
        if let Some(token) = value.strip_prefix("Basic ").map(str::trim) {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(token)
                .ok()
                .and_then(|b| String::from_utf8(b).ok());
            if decoded.is_some_and(|d| self.contains_secret(&d)) {
                self.add(token);
            }
        }
    }

    /// Registers a URL's userinfo (`user:password@`) as secret.
    pub fn add_userinfo(&self, url: &str) {
        if let Some(info) = userinfo(url) {
            self.note_name("URL userinfo");
            self.add(info);
            if let Some((_, pw)) = info.split_once(':') {
                if !pw.is_empty() {
                    self.add(pw);
                }
            }
        }
    }

    fn contains_secret(&self, text: &str) -> bool {
        self.matcher().is_some_and(|m| m.is_match(text))
    }

    pub fn redact(&self, text: &str) -> String {
        match self.matcher() {
            Some(m) => m.redact(text),
            None => text.to_owned(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.read().expect("redactor lock").list.is_empty()
    }

    /// How many forms are registered (every secret's, deduplicated).
    pub fn form_count(&self) -> usize {
        self.secrets.read().expect("redactor lock").list.len()
    }
}

/// `user:pw` of `scheme://user:pw@host/...`, if present; also of
/// `user:pw@host/...` written without a scheme (a mistyped `--target`).
pub fn userinfo(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let (info, _) = authority.rsplit_once('@')?;
    (!info.is_empty()).then_some(info)
}

/// A URL with its userinfo replaced by the mask, for headers and reports.
pub fn mask_userinfo(url: &str) -> String {
    match userinfo(url) {
        Some(info) => url.replacen(&format!("{info}@"), &format!("{MASK}@"), 1),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::forms::{ascii_json, html_escape, json_inner, xml_escape};
    use super::*;
    use crate::model::text::percent_encode;

    const SECRETS: &[&str] = &[
        "sk_live_ZQX+/=?&#%abc",
        "pa\"ss\\word with spaces",
        "ключ-секрет-123456",
        "<tag>&'quote'",
    ];

    #[test]
    fn masks_longest_first() {
        let r = Redactor::new();
        r.add("abc");
        r.add("abcdef");
        assert_eq!(r.redact("x abcdef y abc"), "x [REDACTED] y [REDACTED]");
    }

    #[test]
    fn every_encoded_form_is_masked() {
        for s in SECRETS {
            let r = Redactor::new();
            r.add(s);
            let json = serde_json::to_string(s).unwrap();
            let forms = [
                s.to_string(),
                json.clone(),
                format!("{s:?}"),
                percent_encode(s, false, true),
                percent_encode(s, true, true),
                percent_encode(s, false, false),
                base64::engine::general_purpose::STANDARD.encode(s),
                xml_escape(&json),
                html_escape(s),
                ascii_json(s),
            ];
            for f in forms {
                let out = r.redact(&format!("echo: {f} end"));
                assert!(out.contains(MASK), "{s:?} as {f:?} gave {out:?}");
                assert!(!out.contains(s), "{out:?}");
            }
        }
    }

    #[test]
    fn a_secret_cut_by_an_excerpt_is_masked() {
        let r = Redactor::new();
        let s = "0123456789abcdefg";
        r.add(s);
        // Cut after 16 of 17 characters, with and without an ellipsis.
        assert_eq!(r.redact("body: 0123456789abcdef…"), "body: [REDACTED]…");
        assert_eq!(r.redact("body: 0123456789abcdef"), "body: [REDACTED]");
        // A tail kept from the end of a stream.
        assert_eq!(r.redact("…3456789abcdefg rest"), "…[REDACTED] rest");
        assert_eq!(r.redact("56789abcdefg rest"), "[REDACTED] rest");
        // Short pieces are ordinary text.
        assert_eq!(r.redact("x 0123456…"), "x 0123456…");
    }

    #[test]
    fn basic_credentials_and_userinfo() {
        let r = Redactor::new();
        r.add("hunter2-hunter2");
        let token = base64::engine::general_purpose::STANDARD.encode("bob:hunter2-hunter2");
        r.add_derived_header(&format!("Basic {token}"));
        assert_eq!(
            r.redact(&format!("you sent {token}")),
            "you sent [REDACTED]"
        );

        let r = Redactor::new();
        r.add_userinfo("https://bob:pw-in-url@api.example.com/v1");
        let out = r.redact("GET https://bob:pw-in-url@api.example.com/v1");
        assert!(!out.contains("pw-in-url"), "{out}");
        assert_eq!(
            mask_userinfo("https://bob:pw@h/x"),
            "https://[REDACTED]@h/x".to_owned()
        );
        assert_eq!(userinfo("http://h/x@y"), None);
        // A `--target` typed without its scheme.
        assert_eq!(userinfo("bob:pw@127.0.0.1:9/x"), Some("bob:pw"));
        assert_eq!(userinfo("127.0.0.1:9/x@y"), None);
        assert_eq!(mask_userinfo("bob:pw@h"), "[REDACTED]@h");
    }

    /// Issue 24 item 9: the key a `whsec_` secret encodes, and the key of a
    /// secret decoded by its webhook scheme, are masked in every form.
    #[test]
    fn a_decoded_key_is_masked_raw_in_hex_and_in_base64() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let key = "receiver-key+/?>~";
        let r = Redactor::new();
        r.add(&format!("whsec_{}", STANDARD.encode(key)));
        for form in [
            key.to_owned(),
            hex::encode(key),
            hex::encode_upper(key),
            STANDARD.encode(key),
            URL_SAFE_NO_PAD.encode(key),
            html_escape(key),
        ] {
            assert_eq!(r.redact(&format!("echo {form} end")), "echo [REDACTED] end");
        }
        // A binary key: hex and base64.
        let r = Redactor::new();
        let bin = [0u8, 159, 146, 150, 255, 1, 2, 3, 4];
        r.add_key(&bin);
        for form in [hex::encode(bin), STANDARD.encode(bin)] {
            assert_eq!(r.redact(&form), MASK, "{form}");
        }
        // Short keys would mask ordinary text.
        let r = Redactor::new();
        r.add_key(b"abc");
        assert!(r.is_empty());
    }

    /// Issue 24 item 11: a secret quoted by [`quote`] (`\'`, `\"`), and
    /// that quoted form escaped again by a report, is masked.
    #[test]
    fn a_quoted_secret_is_masked() {
        let s = "it's \"q\" x\\y";
        let r = Redactor::new();
        r.add(s);
        let quoted = quote(s);
        assert!(quoted.contains("\\'"), "{quoted}");
        for form in [
            quoted.clone(),
            json_inner(&quoted),
            xml_escape(&quoted),
            html_escape(&json_inner(&quoted)),
        ] {
            assert_eq!(
                r.redact(&format!("id: {form}!")),
                "id: [REDACTED]!",
                "{form}"
            );
        }
    }
}
