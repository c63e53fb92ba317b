//! Secret redaction. Every value that came through `${secret.X}` is
//! registered here, and every reporter passes its text through `redact`
//! before writing it anywhere. Sensitive headers are masked when an exchange
//! is captured, so they never reach the event stream in clear.

use std::sync::{Arc, RwLock};

pub const MASK: &str = "[REDACTED]";

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

/// Shared, cheaply cloned set of secret values.
#[derive(Clone, Default, Debug)]
pub struct Redactor {
    secrets: Arc<RwLock<Vec<String>>>,
}

impl Redactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a secret value. Very short values (under 3 characters) would
    /// blank out ordinary text, so they are refused by the plan instead.
    pub fn add(&self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        let mut s = self.secrets.write().expect("redactor lock");
        if !s.iter().any(|x| x == secret) {
            s.push(secret.to_owned());
            // Longest first so a secret that contains another is masked whole.
            s.sort_by_key(|x| std::cmp::Reverse(x.len()));
        }
    }

    pub fn redact(&self, text: &str) -> String {
        let secrets = self.secrets.read().expect("redactor lock");
        let mut out = text.to_owned();
        for s in secrets.iter() {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), MASK);
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.read().expect("redactor lock").is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_longest_first() {
        let r = Redactor::new();
        r.add("abc");
        r.add("abcdef");
        assert_eq!(r.redact("x abcdef y abc"), "x [REDACTED] y [REDACTED]");
    }
}
