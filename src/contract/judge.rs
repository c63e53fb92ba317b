//! Judging one response against its operation: the status is documented
//! (or covered by a range or `default`), the Content-Type is a documented
//! media type, a JSON body is valid against the response schema, and the
//! headers the response declares `required` are present, and a documented
//! header that is present matches its schema. Each broken rule
//! is a [`Violation`] with the JSON pointer it concerns: into the body for a
//! schema violation, into the document for the rest.

use super::operation::{is_json, Operation};

/// Most schema errors kept for one body (the first ones say enough).
const MAX_BODY_ERRORS: usize = 3;

/// The most of a header's value a message quotes.
const MAX_SHOWN: usize = 80;

/// How much a broken rule matters (the `contract` property's level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// A documented header is missing.
    Should,
    /// An undocumented status, Content-Type or a schema violation.
    Must,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub level: Level,
    /// `#/text` (a body location) or `#/paths/~1x/get/responses` (the
    /// document's), RFC 6901 in its URI-fragment form.
    pub pointer: String,
    pub message: String,
}

/// What a response looked like, as far as a contract cares.
pub struct Seen<'a> {
    pub status: u16,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

impl Seen<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Every rule `seen` breaks for `op` (empty: it conforms).
/// `required_header`: the level of a documented `required: true` response
/// header that is absent (SHOULD by default; MUST where the suite's profile
/// makes the document its contract).
pub fn judge(op: &Operation, seen: &Seen<'_>, required_header: Level) -> Vec<Violation> {
    let Some(resp) = op.response(seen.status) else {
        let documented: Vec<&str> = op.responses.iter().map(|r| r.key.as_str()).collect();
        return vec![Violation {
            level: Level::Must,
            pointer: format!("{}/responses", op.pointer),
            message: format!(
                "status {} is not documented (documented: {})",
                seen.status,
                if documented.is_empty() {
                    "none".to_owned()
                } else {
                    documented.join(", ")
                }
            ),
        }];
    };
    let mut out = Vec::new();
    for name in &resp.required_headers {
        if seen.header(name).is_none() {
            out.push(Violation {
                level: required_header,
                pointer: format!(
                    "{}/headers/{}",
                    resp.pointer,
                    super::operation::escape(name)
                ),
                message: format!("{} response lacks the required header {name}", resp.key),
            });
        }
    }
    for h in &resp.header_schemas {
        let Some(text) = seen.header(&h.name) else {
            continue;
        };
        let shown: String = text.chars().take(MAX_SHOWN).collect();
        let problem = match h.read_as.read(text) {
            Err(why) => Some(why),
            Ok(v) => h.validator.iter_errors(&v).next().map(|e| e.to_string()),
        };
        if let Some(problem) = problem {
            out.push(Violation {
                level: Level::Must,
                pointer: h.pointer.clone(),
                message: format!(
                    "{} response header {}: `{shown}`: {problem}",
                    resp.key, h.name
                ),
            });
        }
    }
    let content_type = seen.header("content-type").map(|c| {
        c.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    });
    // A response without a body and without a type has nothing to judge
    // (a HEAD, a 204, a body the document left undescribed).
    if resp.content.is_empty() || (seen.body.is_empty() && content_type.is_none()) {
        return out;
    }
    let ct = content_type.unwrap_or_default();
    let media = resp
        .content
        .iter()
        .find(|m| m.media_type == ct)
        .or_else(|| {
            resp.content.iter().find(|m| {
                m.media_type
                    .strip_suffix("/*")
                    .is_some_and(|major| ct.split('/').next() == Some(major))
            })
        })
        .or_else(|| resp.content.iter().find(|m| m.media_type == "*/*"));
    let Some(media) = media else {
        let documented: Vec<&str> = resp.content.iter().map(|m| m.media_type.as_str()).collect();
        out.push(Violation {
            level: Level::Must,
            pointer: format!("{}/content", resp.pointer),
            message: format!(
                "{} response has Content-Type `{}`, not a documented one ({})",
                resp.key,
                if ct.is_empty() { "(none)" } else { ct.as_str() },
                documented.join(", ")
            ),
        });
        return out;
    };
    let Some(validator) = &media.validator else {
        return out;
    };
    if !is_json(&ct) && !ct.is_empty() {
        return out;
    }
    let body: serde_json::Value = match serde_json::from_slice(seen.body) {
        Ok(b) => b,
        Err(e) => {
            out.push(Violation {
                level: Level::Must,
                pointer: "#".into(),
                message: format!("{} body is not JSON: {e}", resp.key),
            });
            return out;
        }
    };
    for e in validator.iter_errors(&body).take(MAX_BODY_ERRORS) {
        out.push(Violation {
            level: Level::Must,
            pointer: format!("#{}", e.instance_path().as_str()),
            message: format!("{} body: {e}", resp.key),
        });
    }
    out
}
