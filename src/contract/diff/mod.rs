//! `tminus contract diff OLD NEW` (issue 43): every change between two
//! OpenAPI 3.0/3.1 documents, classified as breaking (ERR), potentially
//! breaking (WARN) or compatible (INFO), each under a stable rule id named
//! after oasdiff's where it means the same (`rules.rs`, the one table the
//! docs, the JUnit testcases and the tests are drawn from).
//!
//! The documents are read by the contract's own loader (`load.rs`: both
//! dialects normalised to JSON Schema 2020-12, so a 3.0 -> 3.1 migration
//! that only rewrites `nullable` is no change). Operations are paired by
//! method and path template (`operations.rs`), schemas compared
//! structurally in the direction the data flows (`shape.rs` reads one:
//! `$ref`s followed, `allOf` merged; `schema.rs` compares two, cycles
//! cut, `oneOf`/`anyOf` branches paired), security requirements as sets of alternatives (`security.rs`).
//! A breaking change is allowed when the major version moves
//! (`version.rs`: `info.version`, or the path's `/v1` -> `/v2`), and the
//! report says which. The renderers (`render.rs`: console and Markdown;
//! `output.rs`: JSON and JUnit) only read the [`Report`].

mod operations;
mod output;
mod render;
mod rules;
mod schema;
mod security;
mod shape;
mod version;

use std::fmt;

use super::load::Document;

pub use output::{json, junit};
pub use render::{console, markdown};
pub use rules::{markdown as rules_markdown, rule, Rule, RULES};

/// How much a change can hurt a client written against OLD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Compatible: no client written against OLD is hurt.
    Info,
    /// Potentially breaking: some clients are (a strict client, a
    /// generated SDK), the wire contract still holds.
    Warn,
    /// Breaking: a request OLD accepted is refused, or a response OLD
    /// promised is no longer what is sent.
    Err,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Err => "ERR",
            Level::Warn => "WARN",
            Level::Info => "INFO",
        }
    }

    /// `--fail-on`'s words, as oasdiff spells them.
    pub fn parse(s: &str) -> Option<Level> {
        match s.to_ascii_uppercase().as_str() {
            "ERR" | "ERROR" => Some(Level::Err),
            "WARN" | "WARNING" => Some(Level::Warn),
            "INFO" => Some(Level::Info),
            _ => None,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change between the documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub rule: &'static Rule,
    /// `GET /pets/{petId}` (as NEW writes it, OLD's for a removal); `None`
    /// for a document-wide change (a security scheme).
    pub operation: Option<String>,
    /// Where in the operation: `response 200 application/json`,
    /// `query parameter limit`, `request body application/json`.
    pub at: String,
    /// The property path inside the schema (`owner.pets[].name`; empty:
    /// the schema itself).
    pub property: String,
    /// What changed, with the values from both sides.
    pub message: String,
    /// Why a breaking change is allowed (the major version moved), if it is.
    pub allowed: Option<String>,
}

impl Change {
    pub fn level(&self) -> Level {
        self.rule.level
    }

    /// Whether this change fails a gate at `fail_on`.
    pub fn fails(&self, fail_on: Level) -> bool {
        self.allowed.is_none() && self.rule.level >= fail_on && self.rule.level > Level::Info
    }

    /// `GET /pets response 200 application/json, property owner.name`.
    pub fn place(&self) -> String {
        let mut out = String::new();
        if let Some(op) = &self.operation {
            out.push_str(op);
        }
        if !self.at.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&self.at);
        }
        if !self.property.is_empty() {
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str("property ");
            out.push_str(&self.property);
        }
        out
    }
}

/// One of the two documents, as the report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// The file or URL as given.
    pub source: String,
    /// `openapi:` as written.
    pub openapi: String,
    /// `info.version`, if any.
    pub version: Option<String>,
}

/// Everything `contract diff` found.
#[derive(Debug, Clone)]
pub struct Report {
    pub old: Side,
    pub new: Side,
    /// The major version move that allows breaking changes, said once
    /// (`info.version 1.4.0 -> 2.0.0`), or why none is allowed.
    pub version_note: Option<String>,
    /// Every change, ERR first, then by operation and place.
    pub changes: Vec<Change>,
    /// Set when the comparison stopped at its bound (a document so large or
    /// so recursive that tminus cannot say it found every change).
    pub incomplete: Option<String>,
}

impl Report {
    pub fn count(&self, level: Level) -> usize {
        self.changes.iter().filter(|c| c.level() == level).count()
    }

    pub fn allowed(&self) -> usize {
        self.changes.iter().filter(|c| c.allowed.is_some()).count()
    }

    /// The changes that fail a gate at `fail_on`.
    pub fn failing(&self, fail_on: Level) -> usize {
        self.changes.iter().filter(|c| c.fails(fail_on)).count()
    }

    /// The exit code: 1 (failed) when a change fails the gate, 3 (broken)
    /// when the comparison could not finish, else 0 (passed).
    pub fn exit_code(&self, fail_on: Level) -> i32 {
        if self.incomplete.is_some() {
            crate::exit::RUN_BROKEN
        } else if self.failing(fail_on) > 0 {
            crate::exit::CHECK_FAILED
        } else {
            crate::exit::OK
        }
    }
}

/// Compares `old` with `new` (`*_source`: how the user named them).
pub fn diff(old: &Document, old_source: &str, new: &Document, new_source: &str) -> Report {
    let side = |d: &Document, source: &str| Side {
        source: source.to_owned(),
        openapi: d.openapi.clone(),
        version: d.root_value().pointer("/info/version").map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
    };
    let (old_side, new_side) = (side(old, old_source), side(new, new_source));
    let bump = version::major_bump(old_side.version.as_deref(), new_side.version.as_deref());
    let mut cx = operations::Diff::new(old, new);
    cx.operations();
    security::components(&mut cx);
    let incomplete = cx.incomplete();
    let mut changes = cx.into_changes();
    let version_note = match &bump {
        Some(why) => {
            for c in changes.iter_mut().filter(|c| c.level() > Level::Info) {
                c.allowed.get_or_insert_with(|| why.clone());
            }
            Some(format!("{why}: breaking changes are allowed"))
        }
        None if changes
            .iter()
            .any(|c| c.level() == Level::Err && c.allowed.is_none()) =>
        {
            Some(version::not_bumped(
                old_side.version.as_deref(),
                new_side.version.as_deref(),
            ))
        }
        None => None,
    };
    changes.sort_by(|a, b| {
        b.level().cmp(&a.level()).then_with(|| {
            (&a.operation, &a.at, &a.property, a.rule.id).cmp(&(
                &b.operation,
                &b.at,
                &b.property,
                b.rule.id,
            ))
        })
    });
    changes.dedup();
    Report {
        old: old_side,
        new: new_side,
        version_note,
        changes,
        incomplete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A document of `n` schemas each referring to the next and back to
    /// the first (a dense web of cycles), and `n` operations answering one
    /// each: the shape that makes a naive walk exponential.
    fn web(n: usize, last_type: &str) -> String {
        let mut schemas = serde_json::Map::new();
        for i in 0..n {
            let next = (i + 1) % n;
            let mut props = json!({
                "next": {"$ref": format!("#/components/schemas/S{next}")},
                "first": {"$ref": "#/components/schemas/S0"},
                "list": {"type": "array", "items": {"$ref": format!("#/components/schemas/S{next}")}},
            });
            if i == n - 1 {
                props["leaf"] = json!({"type": last_type});
            }
            schemas.insert(
                format!("S{i}"),
                json!({"type": "object", "required": ["next"], "properties": props}),
            );
        }
        let mut paths = serde_json::Map::new();
        for i in 0..n {
            paths.insert(
                format!("/s{i}"),
                json!({"get": {"responses": {"200": {"description": "ok", "content": {
                    "application/json": {"schema": {"$ref": format!("#/components/schemas/S{i}")}}}}}}}),
            );
        }
        json!({
            "openapi": "3.1.0",
            "info": {"title": "web", "version": "1.0.0"},
            "paths": paths,
            "components": {"schemas": schemas},
        })
        .to_string()
    }

    /// `allOf` that contains itself never ends by merging: the diff stops
    /// at its bound and says so (exit 3), rather than overflow or pass.
    #[test]
    fn an_all_of_that_contains_itself_is_an_incomplete_diff() {
        let text = json!({
            "openapi": "3.1.0",
            "info": {"title": "loop", "version": "1"},
            "paths": {"/a": {"get": {"responses": {"200": {"description": "ok", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/A"}}}}}}}},
            "components": {"schemas": {"A": {"allOf": [{"$ref": "#/components/schemas/A"}]}}},
        })
        .to_string();
        let doc = crate::contract::load_document_text(&text, "loop.json").unwrap();
        let r = diff(&doc, "loop", &doc, "loop");
        assert!(
            r.incomplete.as_deref().is_some_and(|w| w.contains("allOf")),
            "{r:?}"
        );
        assert_eq!(r.exit_code(Level::Err), crate::exit::RUN_BROKEN);
    }

    #[test]
    fn a_web_of_cycles_ends_fast_and_reports_a_deep_change_in_every_operation() {
        let n = 50;
        let a = crate::contract::load_document_text(&web(n, "string"), "a.json").unwrap();
        let b = crate::contract::load_document_text(&web(n, "integer"), "b.json").unwrap();
        let started = std::time::Instant::now();
        let same = diff(&a, "a", &a, "a");
        assert!(
            same.changes.is_empty() && same.incomplete.is_none(),
            "{same:?}"
        );
        let changed = diff(&a, "a", &b, "b");
        assert!(changed.incomplete.is_none(), "{:?}", changed.incomplete);
        // Every operation reaches S{n-1}.leaf: each reports it once.
        let typed: Vec<_> = changed
            .changes
            .iter()
            .filter(|c| c.rule.id == "response-property-type-changed")
            .collect();
        assert_eq!(typed.len(), n, "{:#?}", changed.changes.first());
        assert_eq!(changed.changes.len(), n);
        assert_eq!(changed.exit_code(Level::Err), crate::exit::CHECK_FAILED);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }
}
