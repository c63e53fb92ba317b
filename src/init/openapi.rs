//! `tminus init --from-openapi FILE`: a suite written from the API's OpenAPI
//! document. Every mutating operation that takes an idempotency key gets
//! `idempotency.replay`, `mismatch` and `concurrent` with a request made
//! from the document (examples first, else the smallest valid values); one
//! authenticated read operation gets `rate_limit.headers`, `trace.present`
//! and `trace.propagated`; the suite judges every response against the
//! document (`contract:`). What it cannot write (no key, no counter of
//! executions, no valid body) is listed in the file with the reason, so the
//! suite validates and runs as written and says what is left to do.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::request::{self, write_request};
use super::security::{self, Need, Security};
use super::write::{flow, head, quoted, slug, Writer, RATE_LIMIT_HEADERS};
use crate::contract::{self, Contract, Document, Schemas};
use crate::model::profile::Profile;

/// What was written.
#[derive(Debug)]
pub struct Scaffold {
    pub text: String,
    /// Checks written (and not commented out).
    pub checks: usize,
    /// Mutating operations without checks (each with its reason in the text).
    pub skipped: usize,
}

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// The document and what is made from it, shared by every operation.
struct Ctx<'d> {
    doc: &'d Document,
    schemas: Schemas<'d>,
    sec: Security<'d>,
    contract: Contract,
    profile: Profile,
}

/// Writes the suite for the document at `doc_path` (read from
/// `fetched_from`, a URL, when given); the suite will live in `suite_dir`
/// (its `contract:` names the document relative to it).
pub fn from_openapi(
    doc_path: &Path,
    suite_dir: &Path,
    profile: Profile,
    fetched_from: Option<&str>,
) -> Result<Scaffold, String> {
    let doc = contract::load_document(doc_path)?;
    // The operation table must build, or the suite's `contract:` would not load.
    let contract = Contract::from_document(doc_path.display().to_string(), &doc)?;
    let ctx = Ctx {
        doc: &doc,
        schemas: Schemas::new(&doc)?,
        sec: Security::new(&doc),
        contract,
        profile,
    };
    let ops = operations(&doc)?;
    let root = doc.root_value();
    let mutating_ops: Vec<&Op<'_>> = ops.iter().filter(|o| o.method != "get").collect();

    // What the live checks' requests need decides the suite's credential.
    let mut needs: Vec<Need> = mutating_ops
        .iter()
        .filter_map(|op| live_need(&ctx, op))
        .collect();
    let read = read_operation(&ctx, &ops);
    if let Some((_, r)) = &read {
        needs.push(r.need.clone());
    }
    let suite = security::suite_need(&needs);

    let mut w = Writer::default();
    w.header(&doc, doc_path, suite_dir, profile, fetched_from);
    w.target(&doc, &suite, &needs);
    w.line("checks:");

    let mut skipped = Vec::new();
    for op in mutating_ops {
        match mutating(&ctx, &ops, op, &suite) {
            Ok(Drafted::Checks(text)) => {
                w.checks += 3;
                w.text.push_str(&text);
            }
            Ok(Drafted::Commented(why, text)) => {
                w.comment_block(&format!("{} ({}): {why}", op.label(), op.id), &text);
                skipped.push(op.label());
            }
            Err(why) => {
                w.not_written
                    .push(format!("{} ({}): {why}", op.label(), op.id));
                skipped.push(op.label());
            }
        }
    }
    match read {
        Some((op, mut req)) => {
            req.carry(&suite);
            request::check(&ctx.contract, &ctx.sec, op, &req, &suite, None).map_err(|e| {
                format!(
                    "{}: the request written for {} ({}): {e}",
                    doc_path.display(),
                    op.label(),
                    op.id
                )
            })?;
            w.read_checks(&doc, op, &req);
        }
        None => w.not_written.push(
            "rate_limit.headers, trace.present, trace.propagated: no GET operation whose \
             request could be made from the document"
                .into(),
        ),
    }
    let webhooks = webhooks(root, &ops);
    if !webhooks.is_empty() {
        w.not_written.push(format!(
            "webhooks the API sends ({}): tminus receives them with webhook.sink_delivery, \
             but cannot subscribe itself; add the check with your trigger (docs/checks.md)",
            webhooks.join(", ")
        ));
    }
    if w.checks == 0 {
        return Err(format!(
            "{}: no check could be written from the document:\n  {}",
            doc_path.display(),
            w.not_written.join("\n  ")
        ));
    }
    let checks = w.checks;
    Ok(Scaffold {
        text: w.finish(),
        checks,
        skipped: skipped.len(),
    })
}

/// What a mutating operation's requests need when its checks are live
/// (a declared key, a counter, a request that can be made).
fn live_need(ctx: &Ctx<'_>, op: &Op<'_>) -> Option<Need> {
    let key = op.key_header()?;
    effects_of(op.op)?;
    request::request(ctx.doc, &ctx.schemas, &ctx.sec, op, Some(key))
        .ok()
        .map(|r| r.need)
}

/// One operation of the document, where it is written.
pub(super) struct Op<'d> {
    pub method: &'static str,
    pub template: String,
    pub id: String,
    pub uri: &'d str,
    pub item: &'d Value,
    pub op: &'d Value,
    /// The path item's and the operation's parameters, dereferenced, the
    /// operation's replacing the item's of the same name and place.
    pub params: Vec<(&'d str, &'d Value)>,
}

impl Op<'_> {
    pub fn label(&self) -> String {
        format!("{} {}", self.method.to_uppercase(), self.template)
    }

    /// `createMessage` -> `create-message`: check ids and YAML anchors.
    fn slug(&self) -> String {
        slug(&self.id)
    }

    fn header_param(&self, wanted: impl Fn(&str) -> bool) -> Option<&str> {
        self.params
            .iter()
            .filter(|(_, p)| p.get("in").and_then(Value::as_str) == Some("header"))
            .filter_map(|(_, p)| p.get("name").and_then(Value::as_str))
            .find(|n| wanted(n))
    }

    /// The idempotency key header it declares.
    fn key_header(&self) -> Option<&str> {
        self.header_param(|n| n.to_ascii_lowercase().contains("idempotency"))
    }

    /// Every header the operation's 2xx responses document, as written.
    pub fn success_headers(&self, doc: &Document) -> Vec<String> {
        let mut out = Vec::new();
        let Some(rs) = self.op.get("responses").and_then(Value::as_object) else {
            return out;
        };
        for (status, r) in rs {
            if !status.starts_with('2') {
                continue;
            }
            let Ok((_, r)) = doc.deref(self.uri, r) else {
                continue;
            };
            if let Some(hs) = r.get("headers").and_then(Value::as_object) {
                out.extend(hs.keys().cloned());
            }
        }
        out
    }

    fn documents_status(&self, status: u16) -> bool {
        self.op
            .get("responses")
            .and_then(Value::as_object)
            .is_some_and(|rs| rs.contains_key(&status.to_string()))
    }
}

fn operations(doc: &Document) -> Result<Vec<Op<'_>>, String> {
    let mut out = Vec::new();
    for w in contract::written(doc)? {
        if !METHODS.contains(&w.method) {
            continue;
        }
        let mut all = params(doc, w.item_uri, w.item)?;
        for (u, p) in params(doc, w.item_uri, w.op)? {
            all.retain(|(_, q)| q.get("name") != p.get("name") || q.get("in") != p.get("in"));
            all.push((u, p));
        }
        out.push(Op {
            method: w.method,
            template: w.template.to_owned(),
            id: w.id(),
            uri: w.item_uri,
            item: w.item,
            op: w.op,
            params: all,
        });
    }
    Ok(out)
}

fn params<'d>(
    doc: &'d Document,
    uri: &'d str,
    holder: &'d Value,
) -> Result<Vec<(&'d str, &'d Value)>, String> {
    holder
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| doc.deref(uri, p))
        .collect()
}

enum Drafted {
    Checks(String),
    /// Written but commented out: the reason, and the text.
    Commented(String, String),
}

/// The three idempotency checks of a mutating operation.
fn mutating(ctx: &Ctx<'_>, ops: &[Op<'_>], op: &Op<'_>, suite: &Need) -> Result<Drafted, String> {
    let (doc, profile) = (ctx.doc, ctx.profile);
    let declared = op.key_header();
    if declared.is_none() && matches!(op.method, "put" | "delete") {
        return Err(
            "no idempotency key parameter; PUT and DELETE are idempotent by method \
                    (RFC 9110 §9.2.2), which these checks do not judge"
                .into(),
        );
    }
    // Undeclared, the draft's header is assumed, and the checks are
    // written commented out: the document does not say the API takes it.
    let key_header = declared.unwrap_or("Idempotency-Key");
    let key_line = if key_header.eq_ignore_ascii_case("Idempotency-Key") {
        String::new()
    } else {
        format!("    key_header: {}\n", quoted(key_header))
    };
    let mut req = request::request(doc, &ctx.schemas, &ctx.sec, op, Some(key_header))?;
    req.carry(suite);
    request::check(&ctx.contract, &ctx.sec, op, &req, suite, Some(key_header))
        .map_err(|e| format!("the request made is not valid against the document: {e}"))?;
    let slug = op.slug();
    let mut t = String::new();
    let origin = if req.made.is_empty() {
        "the request is the document's examples".to_owned()
    } else {
        format!("made from the schema (no example): {}", req.made.join(", "))
    };
    let _ = writeln!(t, "\n  # {} ({}): {origin}", op.label(), op.id);
    head(
        &mut t,
        &format!("{slug}-replay"),
        "idempotency.replay",
        "idempotency",
        &format!(
            "{}: the same request twice with one key executes once and replays",
            op.id
        ),
    );
    let _ = writeln!(t, "    request: &{slug}");
    write_request(&mut t, &req, 6);
    let effects = effects_of(op.op);
    let _ = writeln!(t, "    effects: &{slug}-effects");
    match &effects {
        Some((r, value)) => {
            let creds = counter_credentials(ctx, ops, r, suite);
            let _ = writeln!(t, "      request: {}", counter_flow(r, &creds));
            let _ = writeln!(t, "      value: {}", quoted(value));
        }
        None => {
            let _ = writeln!(
                t,
                "      # a counter of executions: a count endpoint, an admin query"
            );
            let _ = writeln!(t, "      request: {{ path: /count-of-{slug}-executions }}");
            let _ = writeln!(t, "      value: $.count");
        }
    }
    t.push_str(&key_line);
    let marker = op
        .success_headers(doc)
        .into_iter()
        .find(|h| h.to_ascii_lowercase().contains("replay"));
    // The lines every check of the operation repeats (empty: the default).
    let marker_line = marker.as_ref().map_or(String::new(), |m| {
        format!(
            "    marker: {{ header: {}, values: [\"1\", \"true\"], policy: required }}\n",
            quoted(m)
        )
    });
    if let Some(m) = &marker {
        let _ = writeln!(
            t,
            "    # the document declares {m} on its success: a replay must carry it"
        );
        t.push_str(&marker_line);
    } else if profile == Profile::Botix {
        let _ = writeln!(
            t,
            "    # botix: a replay carries Idempotent-Replayed: 1 (the seed's contract)"
        );
    }
    let reject: Vec<u16> = [409, 422]
        .into_iter()
        .filter(|s| op.documents_status(*s))
        .collect();
    head(
        &mut t,
        &format!("{slug}-mismatch"),
        "idempotency.mismatch",
        "idempotency",
        &format!(
            "{}: the same key with a changed body is rejected, not executed",
            op.id
        ),
    );
    let _ = writeln!(t, "    request: *{slug}");
    let _ = writeln!(t, "    effects: *{slug}-effects");
    t.push_str(&key_line);
    if reject.is_empty() {
        let _ = writeln!(
            t,
            "    # the document declares neither 409 nor 422: the draft's 422 is expected"
        );
    } else {
        let _ = writeln!(
            t,
            "    reject_status: {reject:?}   # the rejections the document declares"
        );
    }
    head(
        &mut t,
        &format!("{slug}-concurrent"),
        "idempotency.concurrent",
        "idempotency",
        &format!("{}: parallel requests with one new key execute once", op.id),
    );
    let _ = writeln!(t, "    request: *{slug}");
    let _ = writeln!(t, "    effects: *{slug}-effects");
    t.push_str(&key_line);
    t.push_str(&marker_line);
    let _ = writeln!(
        t,
        "    rounds: 3   # 10 parallel requests a round: 30 against your quota"
    );
    let mut why = Vec::new();
    if declared.is_none() {
        why.push(
            "it declares no Idempotency-Key header parameter (draft-ietf-httpapi-idempotency-key): \
             if it takes one, uncomment",
        );
    }
    if effects.is_none() {
        why.push(
            "the document names no counter of its executions (`x-tminus-effects` on the \
             operation, docs/contract.md): give `effects:` and uncomment",
        );
    }
    if why.is_empty() {
        Ok(Drafted::Checks(t))
    } else {
        Ok(Drafted::Commented(why.join("; "), t))
    }
}

/// `x-tminus-effects: { path: /count, value: $.count }` (or with a whole
/// `request:`) on the operation: the counter its checks read, as a request
/// object and the JSON path of its value.
fn effects_of(op: &Value) -> Option<(Value, String)> {
    let e = op.get("x-tminus-effects")?;
    let value = e.get("value").and_then(Value::as_str).unwrap_or("$.count");
    let request = match (e.get("request"), e.get("path").and_then(Value::as_str)) {
        (Some(r), _) if r.is_object() => r.clone(),
        (_, Some(p)) => serde_json::json!({ "path": p }),
        _ => return None,
    };
    Some((request, value.to_owned()))
}

/// The credentials the counter's own operation needs beyond the suite's
/// (none when the suite's already go with every request).
fn counter_credentials(
    ctx: &Ctx<'_>,
    ops: &[Op<'_>],
    r: &Value,
    suite: &Need,
) -> Vec<(String, String)> {
    let method = r.get("method").and_then(Value::as_str).unwrap_or("GET");
    let Some(path) = r.get("path").and_then(Value::as_str) else {
        return Vec::new();
    };
    let Some(found) = ctx.contract.find(method, path) else {
        return Vec::new();
    };
    let need = ops
        .iter()
        .find(|o| o.id == found.id)
        .and_then(|o| ctx.sec.need(o.op).ok())
        .unwrap_or_default();
    security::carried(&need.beyond(suite)).0
}

/// The counter's request as a flow mapping, `creds` added to its headers.
fn counter_flow(r: &Value, creds: &[(String, String)]) -> String {
    if creds.is_empty() {
        return flow(r);
    }
    let mut rest = r.as_object().cloned().unwrap_or_default();
    let headers: Vec<(String, Value)> = rest
        .remove("headers")
        .and_then(|h| h.as_object().cloned())
        .map(|h| h.into_iter().collect())
        .unwrap_or_default();
    let mut text = flow(&Value::Object(rest));
    text.pop();
    let sep = if text.len() > 1 { "," } else { "" };
    format!("{text}{sep}\"headers\":{}}}", request::map(&headers, creds))
}

/// The GET operation the read checks use: one whose request can be made,
/// preferring one that needs credentials (so an unauthenticated probe is
/// meaningful) and documents rate-limit headers.
fn read_operation<'a, 'd>(
    ctx: &Ctx<'_>,
    ops: &'a [Op<'d>],
) -> Option<(&'a Op<'d>, request::Request)> {
    let score = |op: &Op<'_>| {
        let secured = ctx.sec.need(op.op).is_ok_and(|n| !n.creds.is_empty());
        let limits = op.success_headers(ctx.doc).iter().any(|h| {
            RATE_LIMIT_HEADERS
                .iter()
                .any(|(n, _)| h.eq_ignore_ascii_case(n))
        });
        u8::from(secured) * 2 + u8::from(limits)
    };
    let mut gets: Vec<&Op<'_>> = ops.iter().filter(|o| o.method == "get").collect();
    gets.sort_by_key(|o| std::cmp::Reverse(score(o)));
    gets.into_iter().find_map(|op| {
        request::request(ctx.doc, &ctx.schemas, &ctx.sec, op, None)
            .ok()
            .map(|r| (op, r))
    })
}

/// The 3.1 `webhooks:` and every operation's `callbacks`, by name.
fn webhooks(root: &Value, ops: &[Op<'_>]) -> Vec<String> {
    let mut out: Vec<String> = root
        .get("webhooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.keys().cloned())
        .collect();
    for op in ops {
        if let Some(cs) = op.op.get("callbacks").and_then(Value::as_object) {
            out.extend(cs.keys().map(|k| format!("{k} (callback of {})", op.id)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_carries_the_credentials_the_suite_does_not() {
        let r = serde_json::json!({"path": "/count", "headers": {"X": "${y}"}});
        assert_eq!(
            counter_flow(&r, &[]),
            r#"{"path":"/count","headers":{"X":"$${y}"}}"#
        );
        assert_eq!(
            counter_flow(&r, &[("Authorization".into(), "Bearer ${secret.K}".into())]),
            r#"{"path":"/count","headers":{"X":"$${y}","Authorization":"Bearer ${secret.K}"}}"#
        );
    }
}
