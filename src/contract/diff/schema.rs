//! Two schemas compared in the direction the data flows: a request schema
//! may accept more and never less, a response schema may promise more and
//! never less. Each is first read into a [`Shape`] (`shape.rs`): `$ref`s followed,
//! `allOf` merged into one object (so a document that splits a schema into
//! `allOf` parts, or inlines what was a `$ref`, changes nothing), a `null`
//! alternative read as nullability (3.0's `nullable` arrives here already
//! rewritten as one), `oneOf`/`anyOf` kept as branches paired by their
//! `$ref` name or `title`, else by position.
//!
//! Recursive schemas end: a pair of schemas already being compared is not
//! compared again below itself, and a pair found clean is remembered across
//! operations (a real document's shared schemas are compared once, which
//! keeps a diff of a large document against itself fast). Every comparison
//! counts against [`MAX_STEPS`]; past it the report says it is incomplete.

use std::collections::BTreeSet;

use serde_json::Value;

use super::operations::{Diff, Where};
use super::rules;
use super::shape::Shape;

/// Schema pairs compared in one diff, at most.
pub const MAX_STEPS: usize = 1_000_000;
/// Nesting followed below one schema (properties, items, branches), at most.
pub const MAX_DEPTH: usize = 128;

/// A schema where it was found: the file its `$ref`s are read from, and it.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub at: &'a str,
    pub v: &'a Value,
}

/// Which way the data flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flow {
    Request,
    Response,
}

/// What the schema describes: it picks the rule ids' prefix at the top
/// (`request-parameter-type-changed` vs `request-property-type-changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    Parameter,
    Body,
    Header,
}

/// A pair being compared or compared: (old value, new value, flow,
/// subject, at the top). Values are keyed by address: both documents are
/// borrowed for the whole diff, so an address names one schema object.
pub type Key = (usize, usize, Flow, Subject, bool);

/// What a comparison below a pair found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// A change was reported below.
    pub dirty: bool,
    /// The stack depth of the shallowest pair still being compared that
    /// was met below (`usize::MAX`: none). A pair whose region met only
    /// pairs at its own depth or deeper is decided when it ends (as
    /// Tarjan's algorithm decides a strongly connected component at its
    /// root), so a web of recursive schemas is remembered clean whole.
    pub low: usize,
}

impl Found {
    pub const CLEAN: Found = Found {
        dirty: false,
        low: usize::MAX,
    };
    /// Undecided for good (the diff stopped): never remembered clean.
    const UNKNOWN: Found = Found {
        dirty: false,
        low: 0,
    };

    fn and(self, other: Found) -> Found {
        Found {
            dirty: self.dirty || other.dirty,
            low: self.low.min(other.low),
        }
    }
}

/// A pair's state in the comparison of one top-level schema.
#[derive(Debug, Clone, Copy)]
pub enum Visit {
    /// Being compared, at this stack depth.
    Open(usize),
    Done(Found),
}

/// `integer` is a `number`: a set of types `wide` accepts every value of `narrow`.
fn covers(wide: &BTreeSet<String>, narrow: &BTreeSet<String>) -> bool {
    if wide.is_empty() {
        return true;
    }
    !narrow.is_empty()
        && narrow
            .iter()
            .all(|t| wide.contains(t) || (t == "integer" && wide.contains("number")))
}

fn types_text(s: &Shape<'_>) -> String {
    let mut t: Vec<&str> = s.types.iter().map(String::as_str).collect();
    if t.is_empty() {
        t.push("any");
    }
    t.join("|")
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => format!("`{s}`"),
        other => format!("`{other}`"),
    }
}

fn num_text(n: Option<f64>) -> String {
    n.map_or_else(|| "none".to_owned(), |n| n.to_string())
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// The rule id prefix for a change at `path` of a `subject` schema.
fn prefix(flow: Flow, subject: Subject, path: &str) -> &'static str {
    match (flow, subject, path.is_empty()) {
        (Flow::Request, Subject::Parameter, true) => "request-parameter",
        (Flow::Request, _, _) => "request-property",
        (Flow::Response, Subject::Header, true) => "response-header",
        (Flow::Response, _, _) => "response-property",
    }
}

impl<'a> Diff<'a> {
    /// Compares the schema `old` with `new` at `path` (`""`: the schema
    /// itself), reporting under `w`.
    #[allow(clippy::too_many_arguments)]
    pub fn schema(
        &mut self,
        w: &Where,
        flow: Flow,
        subject: Subject,
        path: &str,
        old: Node<'a>,
        new: Node<'a>,
        depth: usize,
    ) -> Found {
        if self.stopped() {
            return Found::UNKNOWN;
        }
        if depth > MAX_DEPTH {
            self.stop(format!(
                "schemas nested more than {MAX_DEPTH} deep at {path}"
            ));
            return Found::UNKNOWN;
        }
        if !self.step() {
            return Found::UNKNOWN;
        }
        let Some((o_node, o)) = self.shape(true, old, 0) else {
            return Found::UNKNOWN;
        };
        let Some((n_node, n)) = self.shape(false, new, 0) else {
            return Found::UNKNOWN;
        };
        let key: Key = (
            o_node.v as *const Value as usize,
            n_node.v as *const Value as usize,
            flow,
            subject,
            // Only a parameter's or header's own schema reports under its
            // own rule ids; a body is the same pair at any depth.
            path.is_empty() && subject != Subject::Body,
        );
        if self.clean.contains(&key) {
            return Found::CLEAN;
        }
        match self.visiting.get(&key) {
            Some(Visit::Open(d)) => {
                return Found {
                    dirty: false,
                    low: *d,
                }
            }
            // Compared already under this top-level schema: its changes
            // were reported at the first path that led to it.
            Some(Visit::Done(found)) => return *found,
            None => {}
        }
        let me = self.open;
        self.open += 1;
        self.visiting.insert(key, Visit::Open(me));
        let (before, pending) = (self.changes.len(), self.pending.len());
        let mut found = self.compare(w, flow, subject, path, &o, &n, depth);
        self.open -= 1;
        found.dirty |= self.changes.len() > before;
        if found.dirty || self.stopped() {
            self.pending.truncate(pending);
        } else if found.low >= me {
            // Every pair met below is decided now: clean, all of them.
            found.low = usize::MAX;
            self.clean.insert(key);
            let region: Vec<Key> = self.pending.drain(pending..).collect();
            self.clean.extend(region);
        } else {
            self.pending.push(key);
        }
        self.visiting.insert(key, Visit::Done(found));
        found
    }

    /// Reports a change of the rule `{prefix}-{concept}`, the prefix from
    /// the flow and subject (a header's rule falls back to the property's).
    fn emit(
        &mut self,
        w: &Where,
        flow: Flow,
        subject: Subject,
        path: &str,
        concept: &str,
        message: String,
    ) {
        let primary = format!("{}-{concept}", prefix(flow, subject, path));
        let fallback = match flow {
            Flow::Request => format!("request-property-{concept}"),
            Flow::Response => format!("response-property-{concept}"),
        };
        if let Some(rule) = rules::find(&primary).or_else(|| rules::find(&fallback)) {
            self.push(rule, w, path, message);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn compare(
        &mut self,
        w: &Where,
        flow: Flow,
        subject: Subject,
        path: &str,
        o: &Shape<'a>,
        n: &Shape<'a>,
        depth: usize,
    ) -> Found {
        let request = flow == Flow::Request;
        // The type.
        if o.types != n.types {
            let (concept, ok) = if request {
                ("type-generalized", covers(&n.types, &o.types))
            } else {
                ("type-specialized", covers(&o.types, &n.types))
            };
            let msg = format!("type {} -> {}", types_text(o), types_text(n));
            if ok {
                self.emit(w, flow, subject, path, concept, msg);
            } else {
                self.emit(w, flow, subject, path, "type-changed", msg);
            }
        }
        if o.nullable != n.nullable {
            let concept = if n.nullable {
                "became-nullable"
            } else {
                "became-not-nullable"
            };
            let msg = if n.nullable {
                "may now be null"
            } else {
                "may no longer be null"
            };
            self.emit(w, flow, subject, path, concept, msg.to_owned());
        }
        self.enums(w, flow, subject, path, o, n);
        self.bounds(w, flow, subject, path, o, n);
        if request {
            match (&o.pattern, &n.pattern) {
                (None, Some(p)) => self.emit(
                    w,
                    flow,
                    subject,
                    path,
                    "pattern-added",
                    format!("pattern `{p}` added"),
                ),
                (Some(a), Some(b)) if a != b => self.emit(
                    w,
                    flow,
                    subject,
                    path,
                    "pattern-changed",
                    format!("pattern `{a}` -> `{b}`"),
                ),
                _ => {}
            }
        }
        let mut found = Found::CLEAN;
        if o.is("object") && n.is("object") {
            found = found.and(self.properties(w, flow, subject, path, o, n, depth));
        }
        if let (Some(oi), Some(ni)) = (o.items, n.items) {
            if o.is("array") && n.is("array") {
                let p = format!("{path}[]");
                found = found.and(self.schema(w, flow, subject, &p, oi, ni, depth + 1));
            }
        }
        if !o.branches.is_empty() && !n.branches.is_empty() {
            found = found.and(self.branches(w, flow, subject, path, o, n, depth));
        }
        found
    }

    fn enums(
        &mut self,
        w: &Where,
        flow: Flow,
        subject: Subject,
        path: &str,
        o: &Shape<'a>,
        n: &Shape<'a>,
    ) {
        let request = flow == Flow::Request;
        match (&o.enumv, &n.enumv) {
            (Some(a), Some(b)) => {
                for v in a.iter().filter(|v| !b.contains(v)) {
                    let msg = format!("enum value {} removed", value_text(v));
                    self.emit(w, flow, subject, path, "enum-value-removed", msg);
                }
                for v in b.iter().filter(|v| !a.contains(v)) {
                    let msg = format!("enum value {} added", value_text(v));
                    self.emit(w, flow, subject, path, "enum-value-added", msg);
                }
            }
            (None, Some(b)) if request => {
                let values: Vec<String> = b.iter().map(value_text).collect();
                let msg = format!("restricted to the values {}", values.join(", "));
                self.emit(w, flow, subject, path, "became-enum", msg);
            }
            (Some(_), None) if !request => {
                let msg = "its enum was removed: any value may be sent".to_owned();
                self.emit(w, flow, subject, path, "enum-value-added", msg);
            }
            _ => {}
        }
    }

    fn bounds(
        &mut self,
        w: &Where,
        flow: Flow,
        subject: Subject,
        path: &str,
        o: &Shape<'a>,
        n: &Shape<'a>,
    ) {
        const KINDS: &[(&str, bool, &str)] = &[
            ("maxLength", true, "max-length"),
            ("maximum", true, "max"),
            ("exclusiveMaximum", true, "max"),
            ("maxItems", true, "max-items"),
            ("minLength", false, "min-length"),
            ("minimum", false, "min"),
            ("exclusiveMinimum", false, "min"),
            ("minItems", false, "min-items"),
        ];
        for (kw, is_max, name) in KINDS {
            let (a, b) = (o.bounds.get(kw).copied(), n.bounds.get(kw).copied());
            // A new `minLength: 0` or `minItems: 0` bounds nothing.
            let trivial = |x: Option<f64>| !is_max && *name != "min" && x == Some(0.0);
            let tightened = match (a, b) {
                (None, Some(_)) if trivial(b) => false,
                (None, Some(_)) => true,
                (Some(a), Some(b)) => {
                    if *is_max {
                        b < a
                    } else {
                        b > a
                    }
                }
                _ => false,
            };
            let loosened = match (a, b) {
                (Some(_), None) if trivial(a) => false,
                (Some(_), None) => true,
                (Some(a), Some(b)) => {
                    if *is_max {
                        b > a
                    } else {
                        b < a
                    }
                }
                _ => false,
            };
            let msg = format!("{kw} {} -> {}", num_text(a), num_text(b));
            let dir = if *is_max { "decreased" } else { "increased" };
            let opposite = if *is_max { "increased" } else { "decreased" };
            if flow == Flow::Request && tightened {
                self.emit(w, flow, subject, path, &format!("{name}-{dir}"), msg);
            } else if flow == Flow::Response && loosened {
                self.emit(w, flow, subject, path, &format!("{name}-{opposite}"), msg);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn properties(
        &mut self,
        w: &Where,
        flow: Flow,
        subject: Subject,
        path: &str,
        o: &Shape<'a>,
        n: &Shape<'a>,
        depth: usize,
    ) -> Found {
        let request = flow == Flow::Request;
        // A readOnly property is never sent in a request, a writeOnly one
        // never in a response: neither side's change reaches a client.
        let unseen = |old: bool, name: &str, me: &Self| -> bool {
            let (doc, node) = if old {
                (me.old, o.properties.get(name))
            } else {
                (me.new, n.properties.get(name))
            };
            let flag = if request { "readOnly" } else { "writeOnly" };
            node.and_then(|node| doc.deref(node.at, node.v).ok())
                .and_then(|(_, v)| v.get(flag))
                .and_then(Value::as_bool)
                == Some(true)
        };
        let removed: Vec<String> = o
            .properties
            .keys()
            .filter(|k| !n.properties.contains_key(*k))
            .filter(|k| !unseen(true, k.as_str(), self))
            .cloned()
            .collect();
        let added: Vec<String> = n
            .properties
            .keys()
            .filter(|k| !o.properties.contains_key(*k))
            .filter(|k| !unseen(false, k.as_str(), self))
            .cloned()
            .collect();
        let renamed = !request
            && removed.len() == 1
            && added.len() == 1
            && o.required.contains(&removed[0])
            && self.same(o.properties[&removed[0]], n.properties[&added[0]]);
        if renamed {
            let msg = format!("`{}` renamed to `{}`", removed[0], added[0]);
            self.push(
                rules::rule("response-property-renamed"),
                w,
                &join(path, &removed[0]),
                msg,
            );
        } else {
            for name in &removed {
                let p = join(path, name);
                let (id, msg) = match (request, o.required.contains(name)) {
                    (true, _) => ("request-property-removed", format!("`{name}` removed")),
                    (false, true) => (
                        "response-required-property-removed",
                        format!("required `{name}` removed"),
                    ),
                    (false, false) => (
                        "response-optional-property-removed",
                        format!("optional `{name}` removed"),
                    ),
                };
                self.push(rules::rule(id), w, &p, msg);
            }
            for name in &added {
                let p = join(path, name);
                let (id, msg) = match (request, n.required.contains(name)) {
                    (true, true) => (
                        "new-required-request-property",
                        format!("required `{name}` added"),
                    ),
                    (true, false) => (
                        "new-optional-request-property",
                        format!("optional `{name}` added"),
                    ),
                    (false, true) => (
                        "response-required-property-added",
                        format!("required `{name}` added"),
                    ),
                    (false, false) => (
                        "response-optional-property-added",
                        format!("optional `{name}` added"),
                    ),
                };
                self.push(rules::rule(id), w, &p, msg);
            }
        }
        let mut found = Found::CLEAN;
        let common: Vec<(String, Node<'a>, Node<'a>)> = o
            .properties
            .iter()
            .filter_map(|(k, ov)| n.properties.get(k).map(|nv| (k.clone(), *ov, *nv)))
            .collect();
        for (name, ov, nv) in common {
            if unseen(true, name.as_str(), self) && unseen(false, name.as_str(), self) {
                // Never sent in this direction on either side.
                continue;
            }
            let p = join(path, &name);
            let (was, is) = (o.required.contains(&name), n.required.contains(&name));
            if was != is && !unseen(false, name.as_str(), self) {
                let id = match (request, is) {
                    (true, true) => "request-property-became-required",
                    (true, false) => "request-property-became-optional",
                    (false, true) => "response-property-became-required",
                    (false, false) => "response-property-became-optional",
                };
                let msg = format!(
                    "`{name}` became {}",
                    if is { "required" } else { "optional" }
                );
                self.push(rules::rule(id), w, &p, msg);
            }
            found = found.and(self.schema(w, flow, subject, &p, ov, nv, depth + 1));
        }
        found
    }

    #[allow(clippy::too_many_arguments)]
    fn branches(
        &mut self,
        w: &Where,
        flow: Flow,
        subject: Subject,
        path: &str,
        o: &Shape<'a>,
        n: &Shape<'a>,
        depth: usize,
    ) -> Found {
        let named = |s: &Shape<'_>| s.branches.iter().all(|(k, _)| k.is_some());
        let label = |k: &Option<String>, i: usize| k.clone().unwrap_or_else(|| format!("#{i}"));
        let mut pairs = Vec::new();
        let mut removed = Vec::new();
        let mut added = Vec::new();
        if named(o) && named(n) {
            for (k, on) in &o.branches {
                match n.branches.iter().find(|(nk, _)| nk == k) {
                    Some((_, nn)) => pairs.push((label(k, 0), *on, *nn)),
                    None => removed.push(label(k, 0)),
                }
            }
            for (k, _) in &n.branches {
                if !o.branches.iter().any(|(ok, _)| ok == k) {
                    added.push(label(k, 0));
                }
            }
        } else {
            for (i, (k, on)) in o.branches.iter().enumerate() {
                match n.branches.get(i) {
                    Some((_, nn)) => pairs.push((label(k, i), *on, *nn)),
                    None => removed.push(label(k, i)),
                }
            }
            for (i, (k, _)) in n.branches.iter().enumerate().skip(o.branches.len()) {
                added.push(label(k, i));
            }
        }
        for b in removed {
            self.emit(
                w,
                flow,
                subject,
                path,
                "one-of-removed",
                format!("alternative `{b}` removed"),
            );
        }
        for b in added {
            self.emit(
                w,
                flow,
                subject,
                path,
                "one-of-added",
                format!("alternative `{b}` added"),
            );
        }
        let mut found = Found::CLEAN;
        for (label, on, nn) in pairs {
            let p = format!("{path}({label})");
            found = found.and(self.schema(w, flow, subject, &p, on, nn, depth + 1));
        }
        found
    }

    /// Whether two schemas read the same, their annotations aside (a
    /// generator titles a property after its name: pydantic writes
    /// `title: Name`), their `$ref`s followed: enough to call a property
    /// that left under one name and came back under another renamed.
    fn same(&self, old: Node<'a>, new: Node<'a>) -> bool {
        const NOTES: &[&str] = &["title", "description", "example", "examples", "$comment"];
        let bare = |v: &Value| -> Value {
            match v {
                Value::Object(m) => Value::Object(
                    m.iter()
                        .filter(|(k, _)| !NOTES.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                ),
                other => other.clone(),
            }
        };
        match (self.old.deref(old.at, old.v), self.new.deref(new.at, new.v)) {
            (Ok((_, a)), Ok((_, b))) => bare(a) == bare(b),
            _ => false,
        }
    }
}
