//! The text of a suite `tminus init --from-openapi` writes: its header,
//! `target:` with the credentials the operations need, the read checks,
//! commented-out blocks and the list of what was not written.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::openapi::Op;
use super::request::{self, Request};
use super::security::{self, Credential, Need};
use crate::contract::Document;
use crate::model::profile::Profile;

/// Rate-limit header names by dialect (`rate_limit.headers` `dialect`).
pub(super) const RATE_LIMIT_HEADERS: [(&str, &str); 6] = [
    ("x-ratelimit-limit", "legacy"),
    ("x-ratelimit-remaining", "legacy"),
    ("ratelimit-limit", "ietf-draft6"),
    ("ratelimit-remaining", "ietf-draft6"),
    ("ratelimit-policy", "ietf"),
    ("ratelimit", "ietf"),
];

/// Headers `trace.present` takes as a request or trace id.
pub(super) const ID_HEADERS: [&str; 7] = [
    "Trace-Id",
    "X-Request-Id",
    "traceparent",
    "traceresponse",
    "X-Trace-Id",
    "X-Correlation-Id",
    "Request-Id",
];

#[derive(Default)]
pub(super) struct Writer {
    pub text: String,
    pub checks: usize,
    pub not_written: Vec<String>,
}

impl Writer {
    pub fn line(&mut self, s: &str) {
        self.text.push_str(s);
        self.text.push('\n');
    }

    pub fn header(
        &mut self,
        doc: &Document,
        doc_path: &Path,
        suite_dir: &Path,
        profile: Profile,
        fetched_from: Option<&str>,
    ) {
        let root = doc.root_value();
        let info = root.get("info");
        let title = info
            .and_then(|i| i.get("title"))
            .and_then(Value::as_str)
            .unwrap_or("api");
        let version = info
            .and_then(|i| i.get("version"))
            .map(|v| request::scalar_text(v).unwrap_or_default())
            .unwrap_or_default();
        let rel = relative_to(suite_dir, doc_path);
        let rel = rel.to_string_lossy();
        let _ = write!(
            self.text,
            "# yaml-language-server: $schema=suite.schema.json\n\
             # (write the schema next to this file: `tminus schema suite > suite.schema.json`)\n\
             #\n\
             # Written by `tminus init --from-openapi` from {rel}{fetched} (OpenAPI {openapi}):\n\
             # idempotency checks for every mutating operation that takes a key, rate-limit\n\
             # and trace checks on a read operation, and every response judged against the\n\
             # document. `tminus validate FILE`, then `tminus run FILE`: with no target\n\
             # (TMINUS_TARGET unset) tminus starts its embedded reference; point it at your\n\
             # staging host with TMINUS_TARGET=https://staging.example.com and the secrets\n\
             # the target block names. What could not be written is listed at the end.\n",
            openapi = doc.openapi,
            fetched = fetched_from.map_or(String::new(), |u| format!(", fetched from {u}")),
        );
        let name = slug(title);
        let _ = writeln!(
            self.text,
            "suite: {}",
            if name.is_empty() { "api".into() } else { name }
        );
        let _ = writeln!(
            self.text,
            "# `standard`: only what the RFCs and IETF drafts require; `botix`: the seed checklist's contract.\n\
             profile: {profile}"
        );
        let _ = writeln!(self.text, "version: {}", quoted(&version));
        let _ = writeln!(
            self.text,
            "description: {}",
            quoted(&format!("{title}, certified from its OpenAPI document"))
        );
        let _ = writeln!(self.text, "contract:\n  openapi: {}", quoted(&rel));
    }

    /// `target:` with the suite's credential (what every live check's
    /// operation asks for when they agree; `needs`: each of theirs).
    pub fn target(&mut self, doc: &Document, suite: &Need, needs: &[Need]) {
        let root = doc.root_value();
        self.line("target:");
        self.line("  base_url: ${env.TMINUS_TARGET:-}");
        if let Some(url) = root.pointer("/servers/0/url").and_then(Value::as_str) {
            let _ = writeln!(self.text, "  # the document's first server: {url}");
        }
        let (headers, query) = security::carried(&suite.creds);
        let mut secrets: Vec<String> = Vec::new();
        for n in needs {
            for c in &n.creds {
                let text = match c {
                    Credential::Header { value, .. }
                    | Credential::Query { value, .. }
                    | Credential::Cookie { value, .. } => value.clone(),
                    Credential::OAuth2 {
                        client_id,
                        client_secret,
                        ..
                    } => {
                        format!("{client_id} {client_secret}")
                    }
                };
                for part in text.split("${").skip(1) {
                    let name = part.split('}').next().unwrap_or_default();
                    let name = format!("${{{name}}}");
                    if !secrets.contains(&name) {
                        secrets.push(name);
                    }
                }
            }
        }
        if !secrets.is_empty() {
            let _ = writeln!(
                self.text,
                "  # Credentials come from the environment (no default: unset, `validate` names\n  \
                 # it) and never appear in any report: {}",
                secrets.join(", ")
            );
        }
        if suite.creds.is_empty() && needs.iter().any(|n| !n.creds.is_empty()) {
            self.line("  # The operations ask for different credentials (or none): each request");
            self.line("  # carries its own operation's.");
        } else if !query.is_empty() {
            self.line("  # The API key goes in the query: each request carries it.");
        }
        if !headers.is_empty() {
            let _ = writeln!(
                self.text,
                "  headers:   # the document's security: {}",
                suite.label()
            );
            for (k, v) in &headers {
                if k.eq_ignore_ascii_case("authorization") && v.starts_with("Basic ") {
                    self.line("    # base64 of user:password");
                }
                // `v` is tminus's own template: not escaped.
                let _ = writeln!(self.text, "    {}: {}", quoted(k), Value::String(v.clone()));
            }
        }
        let oauth = suite.creds.iter().find_map(|c| match c {
            Credential::OAuth2 {
                token_url,
                client_id,
                client_secret,
                scopes,
            } => Some((token_url, client_id, client_secret, scopes)),
            _ => None,
        });
        if let Some((url, id, secret, scopes)) = oauth {
            self.line("  auth:   # docs/oauth.md");
            self.line("    oauth2:");
            let _ = writeln!(self.text, "      token_url: {}", quoted(url));
            let _ = writeln!(self.text, "      client_id: {}", Value::String(id.clone()));
            let _ = writeln!(
                self.text,
                "      client_secret: {}",
                Value::String(secret.clone())
            );
            if !scopes.is_empty() {
                let _ = writeln!(self.text, "      scope: {}", quoted(&scopes.join(" ")));
            }
        }
        self.line("  timeout: 5s");
        self.line("");
    }

    pub fn read_checks(&mut self, doc: &Document, op: &Op<'_>, req: &Request) {
        let documented = op.success_headers(doc);
        let dialects: std::collections::BTreeSet<&str> = documented
            .iter()
            .filter_map(|h| {
                RATE_LIMIT_HEADERS
                    .iter()
                    .find(|(n, _)| h.eq_ignore_ascii_case(n))
                    .map(|(_, d)| *d)
            })
            .collect();
        let ids: Vec<&str> = ID_HEADERS
            .iter()
            .copied()
            .filter(|n| documented.iter().any(|h| h.eq_ignore_ascii_case(n)))
            .collect();
        let mut t = String::new();
        let _ = writeln!(
            t,
            "\n  # {} ({}): the read operation the rate-limit and trace checks use",
            op.label(),
            op.id
        );
        head(
            &mut t,
            "rate-limit-headers",
            "rate_limit.headers",
            "rate_limit",
            &format!(
                "{}: responses carry rate-limit headers that parse and agree",
                op.id
            ),
        );
        let _ = writeln!(t, "    requests:");
        let _ = writeln!(t, "      - {}", request::request_flow(req));
        let _ = writeln!(
            t,
            "    samples: 5   # each sample is a request against your quota"
        );
        match dialects.len() {
            0 => {
                let _ = writeln!(
                    t,
                    "    # the document declares no rate-limit headers: any dialect is read"
                );
            }
            1 => {
                let d = dialects.iter().next().copied().unwrap_or("auto");
                let _ = writeln!(t, "    dialect: {d}   # the one the document declares");
            }
            _ => {
                let _ = writeln!(
                    t,
                    "    # the document declares several dialects: they must agree"
                );
            }
        }
        head(
            &mut t,
            "trace-present",
            "trace.present",
            "trace",
            &format!("{}: every response carries a request or trace id", op.id),
        );
        let _ = writeln!(t, "    request: &read");
        request::write_request(&mut t, req, 6);
        if !ids.is_empty() {
            let _ = writeln!(
                t,
                "    id_headers: [{}]   # the ones the document declares",
                ids.join(", ")
            );
        }
        head(
            &mut t,
            "trace-propagated",
            "trace.propagated",
            "trace",
            &format!("{}: a sent traceparent's trace-id comes back", op.id),
        );
        let _ = writeln!(t, "    request: *read");
        self.text.push_str(&t);
        self.checks += 3;
    }

    pub fn comment_block(&mut self, why: &str, text: &str) {
        let _ = writeln!(self.text, "\n  # Not run: {why}");
        // The block's own heading comment is the reason's line already.
        for line in text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with("  # "))
        {
            let _ = writeln!(self.text, "  #{}", line.strip_prefix(' ').unwrap_or(line));
        }
    }

    pub fn finish(mut self) -> String {
        if !self.not_written.is_empty() {
            self.line("\n# Not written:");
            for n in std::mem::take(&mut self.not_written) {
                let _ = writeln!(self.text, "#   {n}");
            }
        }
        self.text
    }
}

/// A check's first lines: id, kind, tag and description.
pub(super) fn head(t: &mut String, id: &str, kind: &str, tag: &str, description: &str) {
    let _ = writeln!(t, "  - id: {id}");
    let _ = writeln!(t, "    kind: {kind}");
    let _ = writeln!(t, "    tags: [{tag}]");
    let _ = writeln!(t, "    description: {}", quoted(description));
}

/// JSON text is YAML flow text; `${` is written `$${` so a value from the
/// document is never read as a template.
pub(super) fn flow(v: &Value) -> String {
    v.to_string().replace("${", "$${")
}

pub(super) fn quoted(s: &str) -> String {
    flow(&Value::String(s.to_owned()))
}

/// `createMessage` -> `create-message`, `Pets API` -> `pets-api`.
pub(super) fn slug(s: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('-');
        }
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !out.ends_with('-') && !out.is_empty() {
                out.push('-');
            }
            prev_lower = false;
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// `to` as seen from the folder `from` (`../api/openapi.yaml`), both made
/// absolute first; `to` itself when they share nothing.
pub(super) fn relative_to(from: &Path, to: &Path) -> PathBuf {
    let abs = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (abs(from), abs(to));
    let a: Vec<Component<'_>> = from.components().collect();
    let b: Vec<Component<'_>> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return to;
    }
    let mut out = PathBuf::new();
    for _ in common..a.len() {
        out.push("..");
    }
    for c in &b[common..] {
        out.push(c.as_os_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_relative_paths() {
        assert_eq!(slug("createMessage"), "create-message");
        assert_eq!(slug("Swagger Petstore"), "swagger-petstore");
        assert_eq!(slug("POST /pets/{id}"), "post-pets-id");
        assert_eq!(
            relative_to(Path::new("/a/b/suites"), Path::new("/a/b/api/doc.yaml")),
            PathBuf::from("../api/doc.yaml")
        );
        assert_eq!(flow(&serde_json::json!({"t": "${x}"})), r#"{"t":"$${x}"}"#);
    }
}
