//! A schema read for comparison (a [`Shape`]): its `$ref` chain
//! followed, `allOf` merged into one object, a `null` alternative read as
//! nullability, `oneOf`/`anyOf` kept as named branches, and an untyped
//! schema's type read from what it holds. Two documents that say the same
//! thing in different words (a `$ref` inlined, a schema split into `allOf`
//! parts, 3.0's `nullable` or 3.1's `null` type) read as the same shape.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::operations::Diff;
use super::schema::Node;

/// `allOf` inside `allOf` merged, at most.
const MAX_ALL_OF_DEPTH: usize = 16;

/// A schema read for comparison.
#[derive(Debug, Default)]
pub struct Shape<'a> {
    /// JSON types without `null`; empty: any.
    pub types: BTreeSet<String>,
    pub nullable: bool,
    /// Whether the schema says anything about its type (for `allOf`).
    pub typed: bool,
    pub properties: BTreeMap<String, Node<'a>>,
    pub required: BTreeSet<String>,
    pub items: Option<Node<'a>>,
    /// `enum` (or `const`) without `null`.
    pub enumv: Option<Vec<Value>>,
    /// `oneOf`/`anyOf` branches other than `null`, with their names.
    pub branches: Vec<(Option<String>, Node<'a>)>,
    pub bounds: BTreeMap<&'static str, f64>,
    pub pattern: Option<String>,
    pub read_only: bool,
    pub write_only: bool,
}

const BOUNDS: &[&str] = &[
    "maxLength",
    "minLength",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "maxItems",
    "minItems",
];

impl<'a> Shape<'a> {
    /// `allOf`: both at once.
    fn merge(&mut self, o: Shape<'a>) {
        self.nullable = match (self.typed, o.typed) {
            (true, true) => self.nullable && o.nullable,
            (true, false) => self.nullable,
            (false, true) => o.nullable,
            (false, false) => self.nullable || o.nullable,
        };
        if self.types.is_empty() {
            self.types = o.types;
        } else if !o.types.is_empty() {
            let both: BTreeSet<String> = self.types.intersection(&o.types).cloned().collect();
            if !both.is_empty() {
                self.types = both;
            }
        }
        self.typed |= o.typed;
        for (k, v) in o.properties {
            self.properties.entry(k).or_insert(v);
        }
        self.required.extend(o.required);
        self.items = self.items.or(o.items);
        if self.enumv.is_none() {
            self.enumv = o.enumv;
        }
        if self.branches.is_empty() {
            self.branches = o.branches;
        }
        for (k, v) in o.bounds {
            self.bounds.entry(k).or_insert(v);
        }
        if self.pattern.is_none() {
            self.pattern = o.pattern;
        }
        self.read_only |= o.read_only;
        self.write_only |= o.write_only;
    }

    pub fn is(&self, t: &str) -> bool {
        self.types.is_empty() || self.types.contains(t)
    }
}

/// The name a `oneOf` branch is paired by: its `$ref`'s last segment, else
/// its `title`.
fn branch_name(raw: &Value, resolved: &Value) -> Option<String> {
    if let Some(r) = raw.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next().map(str::to_owned);
    }
    resolved
        .get("title")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn is_null_schema(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("null")
        && v.as_object().is_some_and(|m| m.len() == 1)
}

impl<'a> Diff<'a> {
    /// Reads `node` (its `$ref` chain followed) into a [`Shape`].
    pub fn shape(
        &mut self,
        old: bool,
        node: Node<'a>,
        depth: usize,
    ) -> Option<(Node<'a>, Shape<'a>)> {
        let doc = if old { self.old } else { self.new };
        let (at, v) = match doc.deref(node.at, node.v) {
            Ok(found) => found,
            Err(e) => {
                self.stop(e);
                return None;
            }
        };
        let here = Node { at, v };
        let mut s = Shape::default();
        let Some(m) = v.as_object() else {
            // `true`/`false` schemas (3.1): anything, or nothing.
            return Some((here, s));
        };
        match m.get("type") {
            Some(Value::String(t)) => {
                s.typed = true;
                if t == "null" {
                    s.nullable = true;
                } else {
                    s.types.insert(t.clone());
                }
            }
            Some(Value::Array(ts)) => {
                s.typed = true;
                for t in ts.iter().filter_map(Value::as_str) {
                    if t == "null" {
                        s.nullable = true;
                    } else {
                        s.types.insert(t.to_owned());
                    }
                }
            }
            _ => {}
        }
        let listed = m
            .get("enum")
            .and_then(Value::as_array)
            .cloned()
            .or_else(|| m.get("const").map(|c| vec![c.clone()]));
        if let Some(mut values) = listed {
            if values.contains(&Value::Null) {
                s.nullable = true;
                values.retain(|x| !x.is_null());
            }
            s.enumv = Some(values);
        }
        if let Some(props) = m.get("properties").and_then(Value::as_object) {
            for (k, p) in props {
                s.properties.insert(k.clone(), Node { at, v: p });
            }
        }
        if let Some(req) = m.get("required").and_then(Value::as_array) {
            s.required
                .extend(req.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        if let Some(items) = m.get("items").filter(|i| i.is_object()) {
            s.items = Some(Node { at, v: items });
        }
        for kw in BOUNDS {
            if let Some(n) = m.get(*kw).and_then(Value::as_f64) {
                s.bounds.insert(*kw, n);
            }
        }
        s.pattern = m.get("pattern").and_then(Value::as_str).map(str::to_owned);
        s.read_only = m.get("readOnly").and_then(Value::as_bool) == Some(true);
        s.write_only = m.get("writeOnly").and_then(Value::as_bool) == Some(true);
        for key in ["oneOf", "anyOf"] {
            let Some(list) = m.get(key).and_then(Value::as_array) else {
                continue;
            };
            let mut branches = Vec::new();
            for b in list {
                let Ok((bat, bv)) = doc.deref(at, b) else {
                    continue;
                };
                if is_null_schema(bv) {
                    s.nullable = true;
                    s.typed = true;
                    continue;
                }
                branches.push((branch_name(b, bv), Node { at: bat, v: bv }));
            }
            if branches.len() == 1
                && list.len() == 2
                && s.branches.is_empty()
                && depth < MAX_ALL_OF_DEPTH
            {
                // `anyOf: [X, null]` (3.0's nullable `$ref`) is X, nullable.
                let nullable = s.nullable;
                if let Some((_, b)) = self.shape(old, branches[0].1, depth + 1) {
                    s.merge(b);
                }
                s.nullable |= nullable;
            } else if s.branches.is_empty() {
                s.branches = branches;
            }
        }
        if let Some(parts) = m.get("allOf").and_then(Value::as_array) {
            if depth >= MAX_ALL_OF_DEPTH {
                self.stop(format!(
                    "`allOf` nested more than {MAX_ALL_OF_DEPTH} deep in {at}"
                ));
                return None;
            }
            for p in parts {
                if let Some((_, b)) = self.shape(old, Node { at, v: p }, depth + 1) {
                    s.merge(b);
                }
            }
        }
        // An untyped schema says its type by what it holds.
        if s.types.is_empty() {
            if !s.properties.is_empty() {
                s.types.insert("object".into());
            } else if s.items.is_some() {
                s.types.insert("array".into());
            } else if let Some(values) = s.enumv.as_ref().filter(|v| !v.is_empty()) {
                for v in values {
                    s.types.insert(
                        match v {
                            Value::String(_) => "string",
                            Value::Bool(_) => "boolean",
                            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
                            Value::Number(_) => "number",
                            Value::Array(_) => "array",
                            _ => "object",
                        }
                        .into(),
                    );
                }
            }
        }
        Some((here, s))
    }
}
