//! Operations paired across the documents and compared part by part:
//! parameters, request body, responses (statuses, media types, headers),
//! security. An operation is named by its method and path template under
//! the document's base path, with the template's parameter names left out,
//! so renaming `{id}` to `{petId}` pairs the two (and is reported). An
//! operation that moved from `/v1/...` to `/v2/...` is paired too: its
//! breaking changes, and the removal of the old path, are allowed by the
//! path's new major version.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::schema::{Flow, Key, Node, Subject, Visit, MAX_STEPS};
use super::{rules, version, Change, Level, Rule};
use crate::contract::load::Document;

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Where a change is, for the report.
#[derive(Debug, Clone)]
pub struct Where {
    pub operation: Option<String>,
    pub at: String,
    /// Why a breaking change here is allowed (the path's major version).
    pub allowed: Option<String>,
}

impl Where {
    fn place(&self, at: impl Into<String>) -> Where {
        Where {
            at: at.into(),
            ..self.clone()
        }
    }
}

/// The state of one diff.
pub struct Diff<'a> {
    pub old: &'a Document,
    pub new: &'a Document,
    pub changes: Vec<Change>,
    steps: usize,
    stopped: Option<String>,
    /// Schema pairs found clean, in any operation.
    pub clean: HashSet<Key>,
    /// Schema pairs of the top-level schema being compared.
    pub visiting: HashMap<Key, Visit>,
    /// How many pairs are being compared (the stack's depth).
    pub open: usize,
    /// Pairs that ended with no change while a pair above them was still
    /// open: clean once that pair ends clean.
    pub pending: Vec<Key>,
}

/// One operation of one document.
#[derive(Debug, Clone)]
struct Op<'a> {
    method: &'static str,
    /// The path as the document writes it.
    path: String,
    /// Base path + path, as a client sends it.
    full: String,
    /// Base path + path with `{}` for every parameter.
    key: String,
    /// The path's parameter names, in order.
    names: Vec<String>,
    item: Node<'a>,
    op: Node<'a>,
}

impl<'a> Op<'a> {
    fn label(&self) -> String {
        format!("{} {}", self.method.to_ascii_uppercase(), self.path)
    }

    fn deprecated(&self) -> bool {
        self.op.v.get("deprecated").and_then(Value::as_bool) == Some(true)
    }
}

/// `/pets/{petId}` -> (`/pets/{}`, [`petId`]).
fn template(path: &str) -> (String, Vec<String>) {
    let mut key = String::new();
    let mut names = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        key.push_str(&rest[..open]);
        key.push_str("{}");
        names.push(rest[open + 1..open + close].to_owned());
        rest = &rest[open + close + 1..];
    }
    key.push_str(rest);
    (key, names)
}

impl<'a> Diff<'a> {
    pub fn new(old: &'a Document, new: &'a Document) -> Diff<'a> {
        Diff {
            old,
            new,
            changes: Vec::new(),
            steps: 0,
            stopped: None,
            clean: HashSet::new(),
            visiting: HashMap::new(),
            open: 0,
            pending: Vec::new(),
        }
    }

    pub fn into_changes(self) -> Vec<Change> {
        self.changes
    }

    /// Why the diff stopped before it was done, if it did.
    pub fn incomplete(&self) -> Option<String> {
        self.stopped.clone()
    }

    pub fn stop(&mut self, why: String) {
        self.stopped.get_or_insert(why);
    }

    pub fn stopped(&self) -> bool {
        self.stopped.is_some()
    }

    /// Counts one schema comparison; false past [`MAX_STEPS`].
    pub fn step(&mut self) -> bool {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            self.stop(format!(
                "more than {MAX_STEPS} schema comparisons: the documents are too large or too recursive to compare whole"
            ));
            return false;
        }
        true
    }

    pub fn push(&mut self, rule: &'static Rule, w: &Where, property: &str, message: String) {
        self.changes.push(Change {
            rule,
            operation: w.operation.clone(),
            at: w.at.clone(),
            property: property.to_owned(),
            message,
            allowed: w.allowed.clone().filter(|_| rule.level > Level::Info),
        });
    }

    fn ops(&self, old: bool) -> Vec<Op<'a>> {
        let doc = if old { self.old } else { self.new };
        let root = doc.root.as_str();
        let base = crate::contract::matcher::base_paths(doc.root_value())
            .into_iter()
            .next()
            .unwrap_or_default();
        let base = base.trim_end_matches('/').to_owned();
        let mut out = Vec::new();
        let Some(paths) = doc.root_value().get("paths").and_then(Value::as_object) else {
            return out;
        };
        for (path, item) in paths {
            let Ok((at, item)) = doc.deref(root, item) else {
                continue;
            };
            let (key, names) = template(path);
            for m in METHODS {
                if let Some(op) = item.get(*m).filter(|o| o.is_object()) {
                    out.push(Op {
                        method: m,
                        path: path.clone(),
                        full: format!("{base}{path}"),
                        key: format!("{} {base}{key}", m),
                        names: names.clone(),
                        item: Node { at, v: item },
                        op: Node { at, v: op },
                    });
                }
            }
        }
        out
    }

    /// Pairs the operations and compares each pair.
    pub fn operations(&mut self) {
        let olds = self.ops(true);
        let news = self.ops(false);
        let mut new_left: BTreeMap<String, usize> = news
            .iter()
            .enumerate()
            .map(|(i, o)| (o.key.clone(), i))
            .collect();
        let mut unpaired = Vec::new();
        let mut pairs = Vec::new();
        for o in &olds {
            match new_left.remove(&o.key) {
                Some(i) => pairs.push((o.clone(), news[i].clone(), None)),
                None => unpaired.push(o.clone()),
            }
        }
        // `/v1/pets` -> `/v2/pets`: the same operation under a new major.
        let mut removed = Vec::new();
        for o in unpaired {
            let (vkey, from) = version::path_versions(&o.key);
            let found = new_left
                .iter()
                .find(|(k, _)| {
                    let (nk, to) = version::path_versions(k);
                    nk == vkey && !from.is_empty() && to != from
                })
                .map(|(k, i)| (k.clone(), *i));
            match found {
                Some((k, i)) => {
                    new_left.remove(&k);
                    let why = version::path_bump(&o.key, &k);
                    match why {
                        Some(why) => {
                            let n = news[i].clone();
                            let w = Where {
                                operation: Some(o.label()),
                                at: String::new(),
                                allowed: Some(why.clone()),
                            };
                            let msg = format!("moved from {} to {}", o.full, n.full);
                            let id = if o.deprecated() {
                                "api-removed-with-deprecation"
                            } else {
                                "api-removed-without-deprecation"
                            };
                            self.push(rules::rule(id), &w, "", msg);
                            pairs.push((o, n, Some(why)));
                        }
                        None => {
                            removed.push(o);
                            new_left.insert(k, i);
                        }
                    }
                }
                None => removed.push(o),
            }
        }
        for o in removed {
            let w = Where {
                operation: Some(o.label()),
                at: String::new(),
                allowed: None,
            };
            let (id, msg) = if o.deprecated() {
                (
                    "api-removed-with-deprecation",
                    "removed (it was deprecated)",
                )
            } else {
                ("api-removed-without-deprecation", "removed")
            };
            self.push(rules::rule(id), &w, "", msg.to_owned());
        }
        for i in new_left.into_values() {
            let w = Where {
                operation: Some(news[i].label()),
                at: String::new(),
                allowed: None,
            };
            self.push(rules::rule("endpoint-added"), &w, "", "added".to_owned());
        }
        for (o, n, allowed) in pairs {
            if self.stopped() {
                break;
            }
            self.operation(&o, &n, allowed);
        }
    }

    fn operation(&mut self, o: &Op<'a>, n: &Op<'a>, allowed: Option<String>) {
        let w = Where {
            operation: Some(n.label()),
            at: String::new(),
            allowed,
        };
        self.visiting.clear();
        self.pending.clear();
        let mut renames = HashMap::new();
        for (a, b) in o.names.iter().zip(&n.names) {
            if a != b {
                let msg = format!("path parameter `{a}` renamed to `{b}`");
                self.push(
                    rules::rule("api-path-parameter-renamed"),
                    &w.place(format!("path parameter {b}")),
                    "",
                    msg,
                );
                renames.insert(a.clone(), b.clone());
            }
        }
        if !o.deprecated() && n.deprecated() {
            self.push(
                rules::rule("endpoint-deprecated"),
                &w,
                "",
                "deprecated".to_owned(),
            );
        }
        let id = |op: &Op<'_>| {
            op.op
                .v
                .get("operationId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        if let (Some(a), b) = (id(o), id(n)) {
            if Some(&a) != b.as_ref() {
                let msg = match b {
                    Some(b) => format!("operationId `{a}` -> `{b}`"),
                    None => format!("operationId `{a}` removed"),
                };
                self.push(rules::rule("api-operation-id-removed"), &w, "", msg);
            }
        }
        self.parameters(&w, o, n, &renames);
        self.request_body(&w, o, n);
        self.responses(&w, o, n);
        super::security::operation(self, &w, o.op.v, n.op.v);
    }

    /// The parameters of an operation, its path item's included (the
    /// operation's win), by (`in`, name; a header's case-insensitive).
    fn params(&self, old: bool, op: &Op<'a>) -> BTreeMap<(String, String), (String, Node<'a>)> {
        let doc = if old { self.old } else { self.new };
        let mut out = BTreeMap::new();
        for holder in [op.item, op.op] {
            let Some(list) = holder.v.get("parameters").and_then(Value::as_array) else {
                continue;
            };
            for p in list {
                let Ok((at, v)) = doc.deref(holder.at, p) else {
                    continue;
                };
                let (Some(name), Some(place)) = (
                    v.get("name").and_then(Value::as_str),
                    v.get("in").and_then(Value::as_str),
                ) else {
                    continue;
                };
                let key = if place == "header" {
                    name.to_ascii_lowercase()
                } else {
                    name.to_owned()
                };
                out.insert((place.to_owned(), key), (name.to_owned(), Node { at, v }));
            }
        }
        out
    }

    fn parameters(&mut self, w: &Where, o: &Op<'a>, n: &Op<'a>, renames: &HashMap<String, String>) {
        let mut olds = self.params(true, o);
        // A renamed path parameter is the same parameter.
        for (from, to) in renames {
            if let Some(v) = olds.remove(&("path".to_owned(), from.clone())) {
                olds.insert(("path".to_owned(), to.clone()), v);
            }
        }
        let news = self.params(false, n);
        let required = |p: &Node<'_>, place: &str| {
            place == "path" || p.v.get("required").and_then(Value::as_bool) == Some(true)
        };
        for ((place, key), (name, _)) in &olds {
            if !news.contains_key(&(place.clone(), key.clone())) {
                let at = w.place(format!("{place} parameter {name}"));
                self.push(
                    rules::rule("request-parameter-removed"),
                    &at,
                    "",
                    format!("`{name}` removed"),
                );
            }
        }
        for ((place, key), (name, p)) in &news {
            let at = w.place(format!("{place} parameter {name}"));
            match olds.get(&(place.clone(), key.clone())) {
                None => {
                    let (id, word) = if required(p, place) {
                        ("new-required-request-parameter", "required")
                    } else {
                        ("new-optional-request-parameter", "optional")
                    };
                    self.push(rules::rule(id), &at, "", format!("{word} `{name}` added"));
                }
                Some((_, op)) => {
                    let (was, is) = (required(op, place), required(p, place));
                    if was != is {
                        let id = if is {
                            "request-parameter-became-required"
                        } else {
                            "request-parameter-became-optional"
                        };
                        let msg = format!(
                            "`{name}` became {}",
                            if is { "required" } else { "optional" }
                        );
                        self.push(rules::rule(id), &at, "", msg);
                    }
                    if let (Some(a), Some(b)) = (param_schema(*op), param_schema(*p)) {
                        self.visiting.clear();
                        self.pending.clear();
                        self.schema(&at, Flow::Request, Subject::Parameter, "", a, b, 0);
                    }
                }
            }
        }
    }

    fn request_body(&mut self, w: &Where, o: &Op<'a>, n: &Op<'a>) {
        let body = |doc: &'a Document, op: &Op<'a>| -> Option<Node<'a>> {
            let b = op.op.v.get("requestBody")?;
            doc.deref(op.op.at, b).ok().map(|(at, v)| Node { at, v })
        };
        let (ob, nb) = (body(self.old, o), body(self.new, n));
        let required = |b: &Node<'_>| b.v.get("required").and_then(Value::as_bool) == Some(true);
        let at = w.place("request body");
        match (ob, nb) {
            (None, None) => {}
            (None, Some(b)) => {
                let id = if required(&b) {
                    "request-body-added-required"
                } else {
                    "request-body-added-optional"
                };
                self.push(rules::rule(id), &at, "", "request body added".to_owned());
            }
            (Some(_), None) => {
                self.push(
                    rules::rule("request-body-removed"),
                    &at,
                    "",
                    "request body removed".to_owned(),
                );
            }
            (Some(a), Some(b)) => {
                if required(&a) != required(&b) {
                    let id = if required(&b) {
                        "request-body-became-required"
                    } else {
                        "request-body-became-optional"
                    };
                    let msg = format!(
                        "became {}",
                        if required(&b) { "required" } else { "optional" }
                    );
                    self.push(rules::rule(id), &at, "", msg);
                }
                self.content(&at, Flow::Request, a, b);
            }
        }
    }

    /// The media types of a request body or a response, and their schemas.
    fn content(&mut self, w: &Where, flow: Flow, a: Node<'a>, b: Node<'a>) {
        let media = |n: Node<'a>| -> BTreeMap<String, (String, Node<'a>)> {
            n.v.get("content")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.to_ascii_lowercase(), (k.clone(), Node { at: n.at, v })))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (om, nm) = (media(a), media(b));
        let (removed, added) = match flow {
            Flow::Request => (
                "request-body-media-type-removed",
                "request-body-media-type-added",
            ),
            Flow::Response => ("response-media-type-removed", "response-media-type-added"),
        };
        for (k, (name, _)) in &om {
            if !nm.contains_key(k) {
                self.push(
                    rules::rule(removed),
                    w,
                    "",
                    format!("media type `{name}` removed"),
                );
            }
        }
        for (k, (name, nv)) in &nm {
            let Some((_, ov)) = om.get(k) else {
                self.push(
                    rules::rule(added),
                    w,
                    "",
                    format!("media type `{name}` added"),
                );
                continue;
            };
            let here = w.place(format!("{} {name}", w.at));
            let schema = |m: &Node<'a>| m.v.get("schema").map(|s| Node { at: m.at, v: s });
            if let (Some(sa), Some(sb)) = (schema(ov), schema(nv)) {
                self.visiting.clear();
                self.pending.clear();
                self.schema(&here, flow, Subject::Body, "", sa, sb, 0);
            }
        }
    }

    fn responses(&mut self, w: &Where, o: &Op<'a>, n: &Op<'a>) {
        let list = |doc: &'a Document, op: &Op<'a>| -> BTreeMap<String, Node<'a>> {
            op.op
                .v
                .get("responses")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| {
                            doc.deref(op.op.at, v)
                                .ok()
                                .map(|(at, v)| (status_key(k), Node { at, v }))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let (ol, nl) = (list(self.old, o), list(self.new, n));
        let success = |s: &str| s.starts_with('2');
        for s in ol.keys().filter(|s| !nl.contains_key(*s)) {
            let id = if success(s) {
                "response-success-status-removed"
            } else {
                "response-non-success-status-removed"
            };
            self.push(
                rules::rule(id),
                &w.place(format!("response {s}")),
                "",
                format!("status {s} removed"),
            );
        }
        for (s, nr) in &nl {
            let at = w.place(format!("response {s}"));
            let Some(or) = ol.get(s) else {
                let id = if success(s) {
                    "response-success-status-added"
                } else {
                    "response-non-success-status-added"
                };
                self.push(rules::rule(id), &at, "", format!("status {s} added"));
                continue;
            };
            self.headers(&at, *or, *nr);
            self.content(&at, Flow::Response, *or, *nr);
        }
    }

    fn headers(&mut self, w: &Where, o: Node<'a>, n: Node<'a>) {
        let list = |doc: &'a Document, r: Node<'a>| -> BTreeMap<String, (String, Node<'a>)> {
            r.v.get("headers")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| {
                            doc.deref(r.at, v).ok().map(|(at, v)| {
                                (k.to_ascii_lowercase(), (k.clone(), Node { at, v }))
                            })
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let (ol, nl) = (list(self.old, o), list(self.new, n));
        let required = |h: &Node<'_>| h.v.get("required").and_then(Value::as_bool) == Some(true);
        for (k, (name, h)) in &ol {
            if !nl.contains_key(k) {
                let (id, word) = if required(h) {
                    ("required-response-header-removed", "required")
                } else {
                    ("optional-response-header-removed", "optional")
                };
                let at = w.place(format!("{} header {name}", w.at));
                self.push(
                    rules::rule(id),
                    &at,
                    "",
                    format!("{word} header `{name}` removed"),
                );
            }
        }
        for (k, (name, nh)) in &nl {
            let at = w.place(format!("{} header {name}", w.at));
            let Some((_, oh)) = ol.get(k) else {
                self.push(
                    rules::rule("response-header-added"),
                    &at,
                    "",
                    format!("header `{name}` added"),
                );
                continue;
            };
            if required(oh) && !required(nh) {
                self.push(
                    rules::rule("response-header-became-optional"),
                    &at,
                    "",
                    format!("header `{name}` became optional"),
                );
            }
            if let (Some(a), Some(b)) = (param_schema(*oh), param_schema(*nh)) {
                self.visiting.clear();
                self.pending.clear();
                self.schema(&at, Flow::Response, Subject::Header, "", a, b, 0);
            }
        }
    }
}

/// A parameter's or header's schema: `schema`, else its one media type's.
fn param_schema(p: Node<'_>) -> Option<Node<'_>> {
    if let Some(s) = p.v.get("schema") {
        return Some(Node { at: p.at, v: s });
    }
    let (_, m) = p.v.get("content")?.as_object()?.iter().next()?;
    m.get("schema").map(|s| Node { at: p.at, v: s })
}

/// `2xx` and `2XX` are one range; `default` stays as written.
fn status_key(k: &str) -> String {
    if k.eq_ignore_ascii_case("default") {
        "default".to_owned()
    } else {
        k.to_ascii_uppercase()
    }
}
