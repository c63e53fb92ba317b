//! The requests `tminus init --from-openapi` writes: made from an
//! operation (path under its server's base path, required path, query,
//! header and cookie parameters, the JSON body, the credentials its
//! security asks for), checked against the document before they are
//! written, and written as YAML flow text.

use std::fmt::Write as _;

use serde_json::Value;

use super::body::{self, Origin};
use super::openapi::Op;
use super::security::{self, Credential, Need};
use super::write::{flow, quoted};
use crate::contract::{self, Contract, Document, Schemas};

/// A request made from the document.
pub(super) struct Request {
    pub method: &'static str,
    pub path: String,
    pub query: Vec<(String, Value)>,
    pub headers: Vec<(String, Value)>,
    pub json: Option<Value>,
    /// What was made rather than taken from an example, for the comment.
    pub made: Vec<String>,
    /// What the operation's security asks for.
    pub need: Need,
    /// Credentials this request carries itself (beyond the suite's):
    /// (name, template), written as they are.
    pub cred_headers: Vec<(String, String)>,
    pub cred_query: Vec<(String, String)>,
}

impl Request {
    /// Carries what its operation needs beyond what the suite sends.
    pub fn carry(&mut self, suite: &Need) {
        let (h, q) = security::carried(&self.need.beyond(suite));
        let (suite_h, _) = security::carried(&suite.creds);
        self.cred_headers = h
            .into_iter()
            .map(|(k, v)| {
                // A request's Cookie replaces the suite's: keep both.
                match suite_h.iter().find(|(n, _)| n == "Cookie" && k == "Cookie") {
                    Some((_, s)) => (k, format!("{s}; {v}")),
                    None => (k, v),
                }
            })
            .collect();
        self.cred_query = q;
    }
}

/// The operation's request: path, required parameters (not the key, not
/// the credentials), its JSON body, and what its security asks for.
pub(super) fn request(
    doc: &Document,
    schemas: &Schemas<'_>,
    sec: &security::Security<'_>,
    op: &Op<'_>,
    key_header: Option<&str>,
) -> Result<Request, String> {
    let need = sec.need(op.op)?;
    let own_headers = sec.header_names();
    let mut path = format!("{}{}", base_path(doc.root_value(), op), op.template);
    let (mut query, mut headers, mut cookies, mut made) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (uri, p) in &op.params {
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        let place = p.get("in").and_then(Value::as_str).unwrap_or_default();
        let required = place == "path" || p.get("required") == Some(&Value::Bool(true));
        let lower = name.to_ascii_lowercase();
        let skip = !required
            || place == "header"
                && (key_header.is_some_and(|k| k.eq_ignore_ascii_case(name))
                    || own_headers.contains(&lower)
                    || ["content-type", "accept"].contains(&lower.as_str()));
        if skip {
            continue;
        }
        let schema = p
            .get("schema")
            .cloned()
            .or_else(|| {
                // `content` instead of `schema`: its one media type's.
                p.get("content")
                    .and_then(Value::as_object)
                    .and_then(|c| c.values().next())
                    .and_then(|m| m.get("schema").cloned())
            })
            .unwrap_or(Value::Bool(true));
        let (v, origin) =
            body::value_for(doc, schemas, uri, &schema, body::given_example(doc, uri, p))
                .map_err(|e| format!("{place} parameter `{name}`: {e}"))?;
        if origin == Origin::Minimal {
            made.push(format!("{place} parameter `{name}`"));
        }
        let explode = p
            .get("explode")
            .and_then(Value::as_bool)
            .unwrap_or(matches!(place, "query" | "cookie"));
        let text = param_text(&v, explode).ok_or_else(|| {
            format!(
                "{place} parameter `{name}`: {v} is not something a suite can send as one value"
            )
        })?;
        match place {
            "path" => path = path.replace(&format!("{{{name}}}"), &percent_encode(&text)),
            "query" => query.push((name.to_owned(), Value::String(text))),
            "cookie" => cookies.push(format!("{name}={text}")),
            _ => headers.push((name.to_owned(), Value::String(text))),
        }
    }
    if !cookies.is_empty() {
        headers.push(("Cookie".into(), Value::String(cookies.join("; "))));
    }
    let json = json_body(doc, schemas, op, &mut made)?;
    Ok(Request {
        method: op.method,
        path,
        query,
        headers,
        json,
        made,
        need,
        cred_headers: Vec::new(),
        cred_query: Vec::new(),
    })
}

fn json_body(
    doc: &Document,
    schemas: &Schemas<'_>,
    op: &Op<'_>,
    made: &mut Vec<String>,
) -> Result<Option<Value>, String> {
    let Some(rb) = op.op.get("requestBody") else {
        return Ok(None);
    };
    let (rb_uri, rb) = doc.deref(op.uri, rb)?;
    let content = rb.get("content").and_then(Value::as_object);
    let json_media = content.and_then(|c| {
        c.iter()
            .find(|(t, _)| contract::is_json(&t.to_ascii_lowercase()))
    });
    match json_media {
        Some((_, media)) => {
            let schema = media.get("schema").cloned().unwrap_or(Value::Bool(true));
            let (v, origin) = body::value_for(
                doc,
                schemas,
                rb_uri,
                &schema,
                body::given_example(doc, rb_uri, media),
            )
            .map_err(|e| format!("request body: {e}"))?;
            if origin == Origin::Minimal {
                made.push("body".into());
            }
            Ok(Some(v))
        }
        None if rb.get("required") != Some(&Value::Bool(true)) => Ok(None),
        None => {
            let types: Vec<&str> = content
                .into_iter()
                .flatten()
                .map(|(t, _)| t.as_str())
                .collect();
            Err(format!(
                "its body is only {}; tminus init writes JSON bodies",
                types.join(", ")
            ))
        }
    }
}

/// Checks a request as the suite will send it (`suite`'s credentials
/// added) against the document: it is this operation's (method and path,
/// under its base path), every required parameter is there, the
/// credentials meet the operation's security, a required body is sent.
pub(super) fn check(
    contract: &Contract,
    sec: &security::Security<'_>,
    op: &Op<'_>,
    req: &Request,
    suite: &Need,
    key_header: Option<&str>,
) -> Result<(), String> {
    let found = contract.find(req.method, &req.path).map(|o| o.id.as_str());
    if found != Some(op.id.as_str()) {
        return Err(format!(
            "the written request {} {} is not this operation's in the document ({})",
            req.method.to_uppercase(),
            req.path,
            found.unwrap_or("no operation")
        ));
    }
    let sent_header = |n: &str| {
        req.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n))
            || req
                .cred_headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(n))
            || key_header.is_some_and(|k| k.eq_ignore_ascii_case(n))
    };
    for (_, p) in &op.params {
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        let place = p.get("in").and_then(Value::as_str).unwrap_or_default();
        if p.get("required") != Some(&Value::Bool(true)) || place == "path" {
            continue;
        }
        let there = match place {
            "query" => req.query.iter().any(|(k, _)| k == name),
            "header" => {
                sent_header(name)
                    || sec.header_names().contains(&name.to_ascii_lowercase())
                    || ["content-type", "accept"].contains(&name.to_ascii_lowercase().as_str())
            }
            _ => sent_header("Cookie"),
        };
        if !there {
            return Err(format!(
                "its required {place} parameter `{name}` is not sent"
            ));
        }
    }
    let mut carried = suite.creds.clone();
    carried.extend(req.need.beyond(suite));
    let missing: Vec<&Credential> = req
        .need
        .creds
        .iter()
        .filter(|c| !carried.contains(c))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "its security ({}) would not be met: {missing:?}",
            req.need.label()
        ));
    }
    let body_required = op
        .op
        .get("requestBody")
        .is_some_and(|rb| rb.get("required") == Some(&Value::Bool(true)));
    if body_required && req.json.is_none() {
        return Err("its required body is not sent".into());
    }
    Ok(())
}

/// A parameter's value as the one string a suite sends (RFC 6570 simple
/// and form styles: an array joined by `,` unless exploded, when only one
/// item can be sent).
fn param_text(v: &Value, explode: bool) -> Option<String> {
    match v {
        Value::Array(items) if items.len() == 1 || !explode && !items.is_empty() => items
            .iter()
            .map(scalar_text)
            .collect::<Option<Vec<_>>>()
            .map(|t| t.join(",")),
        v => scalar_text(v),
    }
}

/// The request's lines, `indent` spaces in.
pub(super) fn write_request(t: &mut String, req: &Request, indent: usize) {
    let pad = " ".repeat(indent);
    if req.method != "get" {
        let _ = writeln!(t, "{pad}method: {}", req.method.to_uppercase());
    }
    let _ = writeln!(t, "{pad}path: {}", quoted(&req.path));
    if !req.query.is_empty() || !req.cred_query.is_empty() {
        let _ = writeln!(t, "{pad}query: {}", map(&req.query, &req.cred_query));
    }
    if !req.headers.is_empty() || !req.cred_headers.is_empty() {
        let _ = writeln!(t, "{pad}headers: {}", map(&req.headers, &req.cred_headers));
    }
    if let Some(j) = &req.json {
        let _ = writeln!(t, "{pad}json: {}", flow(j));
    }
}

/// The request as one flow mapping (a list entry).
pub(super) fn request_flow(req: &Request) -> String {
    let mut parts = Vec::new();
    if req.method != "get" {
        parts.push(format!("\"method\":\"{}\"", req.method.to_uppercase()));
    }
    parts.push(format!("\"path\":{}", quoted(&req.path)));
    if !req.query.is_empty() || !req.cred_query.is_empty() {
        parts.push(format!("\"query\":{}", map(&req.query, &req.cred_query)));
    }
    if !req.headers.is_empty() || !req.cred_headers.is_empty() {
        parts.push(format!(
            "\"headers\":{}",
            map(&req.headers, &req.cred_headers)
        ));
    }
    if let Some(j) = &req.json {
        parts.push(format!("\"json\":{}", flow(j)));
    }
    format!("{{{}}}", parts.join(","))
}

/// A flow mapping of the document's values (escaped: never templates)
/// and tminus's own credential templates (written as they are).
pub(super) fn map(values: &[(String, Value)], templates: &[(String, String)]) -> String {
    let mut parts: Vec<String> = values
        .iter()
        .map(|(k, v)| format!("{}:{}", quoted(k), flow(v)))
        .collect();
    parts.extend(
        templates
            .iter()
            .map(|(k, v)| format!("{}:{}", quoted(k), Value::String(v.clone()))),
    );
    format!("{{{}}}", parts.join(","))
}

/// The path part of the first server that serves `op` (its own `servers`,
/// else its path item's, else the document's), variables at their
/// defaults, without a trailing `/`: what the suite's paths start with.
pub(super) fn base_path(root: &Value, op: &Op<'_>) -> String {
    let server = op
        .op
        .pointer("/servers/0")
        .or_else(|| op.item.pointer("/servers/0"))
        .or_else(|| root.pointer("/servers/0"));
    let Some(server) = server else {
        return String::new();
    };
    let mut url = server
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or("/")
        .to_owned();
    if let Some(vars) = server.get("variables").and_then(Value::as_object) {
        for (k, v) in vars {
            let d = v.get("default").and_then(Value::as_str).unwrap_or_default();
            url = url.replace(&format!("{{{k}}}"), d);
        }
    }
    let path = match url.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("", |i| &rest[i..]),
        None => url.as_str(),
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    path.trim_end_matches('/').to_owned()
}

pub(super) fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A path segment's text with everything but RFC 3986 unreserved
/// characters percent-encoded.
pub(super) fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_maps() {
        assert_eq!(percent_encode("a b/ü"), "a%20b%2F%C3%BC");
        assert_eq!(
            param_text(&serde_json::json!(["a", "b"]), false).as_deref(),
            Some("a,b")
        );
        assert_eq!(param_text(&serde_json::json!(["a", "b"]), true), None);
        assert_eq!(
            param_text(&serde_json::json!([3]), true).as_deref(),
            Some("3")
        );
        assert_eq!(
            map(
                &[("q".into(), Value::String("${x}".into()))],
                &[("Authorization".into(), "Bearer ${secret.K}".into())]
            ),
            r#"{"q":"$${x}","Authorization":"Bearer ${secret.K}"}"#
        );
    }
}
