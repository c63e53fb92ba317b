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
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::body::{self, Origin};
use crate::contract::{self, Document, Schemas};
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

/// Rate-limit header names by dialect (`rate_limit.headers` `dialect`).
const RATE_LIMIT_HEADERS: [(&str, &str); 6] = [
    ("x-ratelimit-limit", "legacy"),
    ("x-ratelimit-remaining", "legacy"),
    ("ratelimit-limit", "ietf-draft6"),
    ("ratelimit-remaining", "ietf-draft6"),
    ("ratelimit-policy", "ietf"),
    ("ratelimit", "ietf"),
];

/// Headers `trace.present` takes as a request or trace id.
const ID_HEADERS: [&str; 7] = [
    "Trace-Id",
    "X-Request-Id",
    "traceparent",
    "traceresponse",
    "X-Trace-Id",
    "X-Correlation-Id",
    "Request-Id",
];

/// Writes the suite for the document at `doc_path`; the suite will live in
/// `suite_dir` (its `contract:` names the document relative to it).
pub fn from_openapi(
    doc_path: &Path,
    suite_dir: &Path,
    profile: Profile,
) -> Result<Scaffold, String> {
    let doc = contract::load_document(doc_path)?;
    // The operation table must build, or the suite's `contract:` would not load.
    contract::Contract::from_document(doc_path.display().to_string(), &doc)?;
    let schemas = Schemas::new(&doc)?;
    let ops = operations(&doc)?;
    let root = doc.root_value();
    let mut w = Writer::default();

    w.header(&doc, doc_path, suite_dir, profile);
    w.target(&doc);
    w.line("checks:");

    let mut skipped = Vec::new();
    for op in ops.iter().filter(|o| o.method != "get") {
        match mutating(&doc, &schemas, op, profile) {
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
    match read_operation(&doc, &schemas, &ops) {
        Some((op, request)) => w.read_checks(&doc, op, &request),
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

/// One operation of the document, where it is written.
struct Op<'d> {
    method: &'static str,
    template: String,
    id: String,
    uri: &'d str,
    item: &'d Value,
    op: &'d Value,
    /// The path item's and the operation's parameters, dereferenced, the
    /// operation's replacing the item's of the same name and place.
    params: Vec<(&'d str, &'d Value)>,
}

impl Op<'_> {
    fn label(&self) -> String {
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

    /// Every header the operation's 2xx responses document, as written.
    fn success_headers(&self, doc: &Document) -> Vec<String> {
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

/// A request made from the document.
struct Request {
    method: &'static str,
    path: String,
    query: Vec<(String, Value)>,
    headers: Vec<(String, Value)>,
    json: Option<Value>,
    /// What was made rather than taken from an example, for the comment.
    made: Vec<String>,
}

/// The operation's request: path, required query and header parameters
/// (not the key, not the credentials tminus sends), and its JSON body.
fn request(
    doc: &Document,
    schemas: &Schemas<'_>,
    op: &Op<'_>,
    key_header: Option<&str>,
) -> Result<Request, String> {
    let mut path = format!("{}{}", base_path(doc.root_value(), op), op.template);
    let mut query = Vec::new();
    let mut headers = Vec::new();
    let mut made = Vec::new();
    for (uri, p) in &op.params {
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        let place = p.get("in").and_then(Value::as_str).unwrap_or_default();
        let required = place == "path" || p.get("required") == Some(&Value::Bool(true));
        let skip = !required
            || place == "header"
                && (key_header.is_some_and(|k| k.eq_ignore_ascii_case(name))
                    || ["authorization", "content-type", "accept"]
                        .contains(&name.to_ascii_lowercase().as_str()));
        if skip {
            continue;
        }
        if place == "cookie" {
            return Err(format!(
                "its required cookie `{name}` is not something tminus init writes"
            ));
        }
        let schema = p.get("schema").cloned().unwrap_or(Value::Bool(true));
        let (v, origin) =
            body::value_for(doc, schemas, uri, &schema, body::given_example(doc, uri, p))
                .map_err(|e| format!("{place} parameter `{name}`: {e}"))?;
        if origin == Origin::Minimal {
            made.push(format!("{place} parameter `{name}`"));
        }
        match place {
            "path" => {
                let text = scalar_text(&v)
                    .ok_or_else(|| format!("path parameter `{name}` is not a scalar"))?;
                path = path.replace(&format!("{{{name}}}"), &percent_encode(&text));
            }
            "query" => query.push((name.to_owned(), v)),
            _ => headers.push((name.to_owned(), v)),
        }
    }
    let json = match op.op.get("requestBody") {
        None => None,
        Some(rb) => {
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
                    Some(v)
                }
                None if rb.get("required") != Some(&Value::Bool(true)) => None,
                None => {
                    let types: Vec<&str> = content
                        .into_iter()
                        .flatten()
                        .map(|(t, _)| t.as_str())
                        .collect();
                    return Err(format!(
                        "its body is only {}; tminus init writes JSON bodies",
                        types.join(", ")
                    ));
                }
            }
        }
    };
    Ok(Request {
        method: op.method,
        path,
        query,
        headers,
        json,
        made,
    })
}

enum Drafted {
    Checks(String),
    /// Written but commented out: the reason, and the text.
    Commented(String, String),
}

/// The three idempotency checks of a mutating operation.
fn mutating(
    doc: &Document,
    schemas: &Schemas<'_>,
    op: &Op<'_>,
    profile: Profile,
) -> Result<Drafted, String> {
    let declared = op.header_param(|n| n.to_ascii_lowercase().contains("idempotency"));
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
    let req = request(doc, schemas, op, Some(key_header))?;
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
        Some(e) => {
            let _ = writeln!(t, "      {e}");
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
/// `request:`) on the operation: the counter its checks read.
fn effects_of(op: &Value) -> Option<String> {
    let e = op.get("x-tminus-effects")?;
    let value = e.get("value").and_then(Value::as_str).unwrap_or("$.count");
    let request = match (e.get("request"), e.get("path").and_then(Value::as_str)) {
        (Some(r), _) if r.is_object() => flow(r),
        (_, Some(p)) => format!("{{ path: {} }}", quoted(p)),
        _ => return None,
    };
    Some(format!(
        "request: {request}\n      value: {}",
        quoted(value)
    ))
}

/// The GET operation the read checks use: one whose request can be made,
/// preferring one that needs credentials (so an unauthenticated probe is
/// meaningful) and documents rate-limit headers.
fn read_operation<'a, 'd>(
    doc: &Document,
    schemas: &Schemas<'_>,
    ops: &'a [Op<'d>],
) -> Option<(&'a Op<'d>, Request)> {
    let global = doc.root_value().get("security");
    let score = |op: &Op<'_>| {
        let secured = op
            .op
            .get("security")
            .or(global)
            .and_then(Value::as_array)
            .is_some_and(|s| {
                !s.is_empty()
                    && s.iter()
                        .all(|r| r.as_object().is_some_and(|m| !m.is_empty()))
            });
        let limits = op.success_headers(doc).iter().any(|h| {
            RATE_LIMIT_HEADERS
                .iter()
                .any(|(n, _)| h.eq_ignore_ascii_case(n))
        });
        u8::from(secured) * 2 + u8::from(limits)
    };
    let mut gets: Vec<&Op<'_>> = ops.iter().filter(|o| o.method == "get").collect();
    gets.sort_by_key(|o| std::cmp::Reverse(score(o)));
    gets.into_iter()
        .find_map(|op| request(doc, schemas, op, None).ok().map(|r| (op, r)))
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

#[derive(Default)]
struct Writer {
    text: String,
    checks: usize,
    not_written: Vec<String>,
}

impl Writer {
    fn line(&mut self, s: &str) {
        self.text.push_str(s);
        self.text.push('\n');
    }

    fn header(&mut self, doc: &Document, doc_path: &Path, suite_dir: &Path, profile: Profile) {
        let root = doc.root_value();
        let info = root.get("info");
        let title = info
            .and_then(|i| i.get("title"))
            .and_then(Value::as_str)
            .unwrap_or("api");
        let version = info
            .and_then(|i| i.get("version"))
            .map(|v| scalar_text(v).unwrap_or_default())
            .unwrap_or_default();
        let rel = relative_to(suite_dir, doc_path);
        let rel = rel.to_string_lossy();
        let _ = write!(
            self.text,
            "# yaml-language-server: $schema=suite.schema.json\n\
             # (write the schema next to this file: `tminus schema suite > suite.schema.json`)\n\
             #\n\
             # Written by `tminus init --from-openapi` from {rel} (OpenAPI {openapi}):\n\
             # idempotency checks for every mutating operation that takes a key, rate-limit\n\
             # and trace checks on a read operation, and every response judged against the\n\
             # document. `tminus validate FILE`, then `tminus run FILE`: with no target\n\
             # (TMINUS_TARGET unset) tminus starts its embedded reference; point it at your\n\
             # staging host with TMINUS_TARGET=https://staging.example.com and the secrets\n\
             # the target block names. What could not be written is listed at the end.\n",
            openapi = doc.openapi,
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

    /// `target:` with the credentials the document's security asks for.
    fn target(&mut self, doc: &Document) {
        let root = doc.root_value();
        self.line("target:");
        self.line("  base_url: ${env.TMINUS_TARGET:-}");
        if let Some(url) = root.pointer("/servers/0/url").and_then(Value::as_str) {
            let _ = writeln!(self.text, "  # the document's first server: {url}");
        }
        let schemes = root
            .pointer("/components/securitySchemes")
            .and_then(Value::as_object);
        let wanted: Vec<&str> = root
            .get("security")
            .and_then(Value::as_array)
            .and_then(|s| s.first())
            .and_then(Value::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut headers = Vec::new();
        let mut auth = None;
        for name in wanted {
            let Some(scheme) = schemes
                .and_then(|s| s.get(name))
                .and_then(|s| doc.deref(&doc.root, s).ok())
                .map(|(_, s)| s)
            else {
                continue;
            };
            let ty = scheme
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let http = scheme
                .get("scheme")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_ascii_lowercase();
            let place = scheme.get("in").and_then(Value::as_str).unwrap_or_default();
            let header_name = scheme
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match (ty, http.as_str(), place) {
                ("http", "bearer", _) => headers.push(("Authorization".to_owned(), "Bearer ${secret.TMINUS_API_KEY}".to_owned())),
                ("http", "basic", _) => headers.push((
                    "Authorization".to_owned(),
                    "Basic ${secret.TMINUS_API_BASIC}".to_owned(),
                )),
                ("apiKey", _, "header") => headers.push((header_name.to_owned(), "${secret.TMINUS_API_KEY}".to_owned())),
                ("oauth2", _, _) => match scheme.pointer("/flows/clientCredentials/tokenUrl").and_then(Value::as_str) {
                    Some(url) => auth = Some(url.to_owned()),
                    None => self.not_written.push(format!(
                        "security scheme `{name}`: an OAuth2 flow other than client credentials; give a token in target.headers"
                    )),
                },
                _ => self.not_written.push(format!(
                    "security scheme `{name}` ({ty} {http}{place}): give its credentials in target.headers"
                )),
            }
        }
        if !headers.is_empty() {
            self.line("  headers:");
            self.line("    # Secrets come from the environment and never appear in any report");
            self.line("    # (against the embedded reference: TMINUS_API_KEY=ref_test_key_a).");
            for (k, v) in &headers {
                // `v` is tminus's own template: not escaped.
                let _ = writeln!(self.text, "    {}: \"{v}\"", quoted(k));
            }
        }
        if let Some(url) = auth {
            self.line("  auth:");
            self.line("    oauth2:");
            let _ = writeln!(self.text, "      token_url: {}", quoted(&url));
            self.line("      client_id: ${env.TMINUS_OAUTH_CLIENT_ID}");
            self.line("      client_secret: ${secret.TMINUS_OAUTH_CLIENT_SECRET}");
        }
        self.line("  timeout: 5s");
        self.line("");
    }

    fn read_checks(&mut self, doc: &Document, op: &Op<'_>, req: &Request) {
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
        let _ = writeln!(t, "      - {}", flow(&request_value(req)));
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
        write_request(&mut t, req, 6);
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

    fn comment_block(&mut self, why: &str, text: &str) {
        let _ = writeln!(self.text, "\n  # Not run: {why}");
        // The block's own heading comment is the reason's line already.
        for line in text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with("  # "))
        {
            let _ = writeln!(self.text, "  #{}", line.strip_prefix(' ').unwrap_or(line));
        }
    }

    fn finish(mut self) -> String {
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
fn head(t: &mut String, id: &str, kind: &str, tag: &str, description: &str) {
    let _ = writeln!(t, "  - id: {id}");
    let _ = writeln!(t, "    kind: {kind}");
    let _ = writeln!(t, "    tags: [{tag}]");
    let _ = writeln!(t, "    description: {}", quoted(description));
}

/// The request's lines, `indent` spaces in.
fn write_request(t: &mut String, req: &Request, indent: usize) {
    let pad = " ".repeat(indent);
    if req.method != "get" {
        let _ = writeln!(t, "{pad}method: {}", req.method.to_uppercase());
    }
    let _ = writeln!(t, "{pad}path: {}", quoted(&req.path));
    if !req.query.is_empty() {
        let m: serde_json::Map<String, Value> = req.query.iter().cloned().collect();
        let _ = writeln!(t, "{pad}query: {}", flow(&Value::Object(m)));
    }
    if !req.headers.is_empty() {
        let m: serde_json::Map<String, Value> = req.headers.iter().cloned().collect();
        let _ = writeln!(t, "{pad}headers: {}", flow(&Value::Object(m)));
    }
    if let Some(j) = &req.json {
        let _ = writeln!(t, "{pad}json: {}", flow(j));
    }
}

/// The path part of the first server that serves `op` (its own `servers`,
/// else its path item's, else the document's), variables at their
/// defaults, without a trailing `/`: what the suite's paths start with.
fn base_path(root: &Value, op: &Op<'_>) -> String {
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

/// The request as one flow mapping (a list entry).
fn request_value(req: &Request) -> Value {
    let mut m = serde_json::Map::new();
    if req.method != "get" {
        m.insert("method".into(), Value::String(req.method.to_uppercase()));
    }
    m.insert("path".into(), Value::String(req.path.clone()));
    if !req.query.is_empty() {
        m.insert(
            "query".into(),
            Value::Object(req.query.iter().cloned().collect()),
        );
    }
    if !req.headers.is_empty() {
        m.insert(
            "headers".into(),
            Value::Object(req.headers.iter().cloned().collect()),
        );
    }
    if let Some(j) = &req.json {
        m.insert("json".into(), j.clone());
    }
    Value::Object(m)
}

/// JSON text is YAML flow text; `${` is written `$${` so a value from the
/// document is never read as a template.
fn flow(v: &Value) -> String {
    v.to_string().replace("${", "$${")
}

fn quoted(s: &str) -> String {
    flow(&Value::String(s.to_owned()))
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A path segment's text with everything but RFC 3986 unreserved
/// characters percent-encoded.
fn percent_encode(s: &str) -> String {
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

/// `createMessage` -> `create-message`, `Pets API` -> `pets-api`.
fn slug(s: &str) -> String {
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
fn relative_to(from: &Path, to: &Path) -> PathBuf {
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
        assert_eq!(percent_encode("a b/ü"), "a%20b%2F%C3%BC");
        assert_eq!(flow(&serde_json::json!({"t": "${x}"})), r#"{"t":"$${x}"}"#);
    }
}
