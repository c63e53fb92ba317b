//! Reading an OpenAPI document: the root file (YAML or JSON) and every file
//! its `$ref`s lead to, each read once, capped in size and count, and kept
//! inside the root document's folder; every `$ref` is checked to lead
//! somewhere before a request is sent. OpenAPI 3.0 schemas are rewritten to
//! JSON Schema 2020-12 here (`normalize.rs`), so the rest of the module sees
//! one dialect.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::normalize;

/// Largest document file read (each file of a multi-file document).
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// Most files one document may be made of.
pub const MAX_FILES: usize = 64;
/// Longest chain of files (`a.yaml` -> `b.yaml` -> ...) followed.
pub const MAX_FILE_DEPTH: usize = 16;
/// Longest chain of `$ref` -> `$ref` hops resolved for one object.
pub const MAX_REF_HOPS: usize = 32;
/// Longest chain of `$ref`s each found inside what the one before led to
/// (`A: {allOf: [$ref: B]}`, `B: {allOf: [$ref: C]}`, ...). The JSON Schema
/// compiler inlines every such chain that is not a cycle by recursion: a
/// chain of 1,000 overflowed its stack (issue 44), so a longer one is
/// refused here, before anything compiles it.
pub const MAX_REF_DEPTH: usize = 64;

/// The OpenAPI major version of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V30,
    V31,
}

/// A loaded document: every file it is made of, by URI (`file:///...`, or
/// `urn:tminus:` for a document that has no file), the root first.
#[derive(Debug, Clone)]
pub struct Document {
    pub version: Version,
    /// The `openapi:` field as written (`3.0.3`, `3.1.0`).
    pub openapi: String,
    pub root: String,
    pub files: BTreeMap<String, Value>,
}

/// Reads the document at `path` and every file it refers to.
pub fn load_file(path: &Path) -> Result<Document, String> {
    let canon = path
        .canonicalize()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let folder = canon
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut loader = Loader {
        folder: Some(folder),
        files: BTreeMap::new(),
    };
    let root = file_uri(&canon);
    let value = read_one(&canon)?;
    let (version, openapi) = version_of(&value, &canon.display().to_string())?;
    loader.add(root.clone(), value, 0, version)?;
    loader.finish(root, version, openapi)
}

/// Reads a document held in memory (`name` is used in messages). It may
/// only refer to itself: there is no folder to read other files from.
pub fn load_text(text: &str, name: &str) -> Result<Document, String> {
    let value = parse(text, name, name.ends_with(".json"))?;
    let (version, openapi) = version_of(&value, name)?;
    let mut loader = Loader {
        folder: None,
        files: BTreeMap::new(),
    };
    let root = format!(
        "urn:tminus:{}",
        name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '.', "-")
    );
    loader.add(root.clone(), value, 0, version)?;
    loader.finish(root, version, openapi)
}

struct Loader {
    /// The folder every referenced file must be inside (`None`: no files).
    folder: Option<PathBuf>,
    files: BTreeMap<String, Value>,
}

impl Loader {
    fn add(
        &mut self,
        uri: String,
        mut value: Value,
        depth: usize,
        v: Version,
    ) -> Result<(), String> {
        if v == Version::V30 {
            normalize::from_3_0(&mut value);
        }
        let mut refs = BTreeSet::new();
        collect_refs(&value, &mut refs);
        self.files.insert(uri.clone(), value);
        for r in refs {
            let (file, _) = split_ref(&r);
            if file.is_empty() {
                continue;
            }
            let target = self.file_of(&uri, file, &r)?;
            if self.files.contains_key(&target.0) {
                continue;
            }
            if depth + 1 > MAX_FILE_DEPTH {
                return Err(format!(
                    "`$ref: {r}` in {uri}: more than {MAX_FILE_DEPTH} files deep"
                ));
            }
            if self.files.len() >= MAX_FILES {
                return Err(format!(
                    "the document is made of more than {MAX_FILES} files (at `$ref: {r}` in {uri})"
                ));
            }
            let value = read_one(&target.1)?;
            self.add(target.0, value, depth + 1, v)?;
        }
        Ok(())
    }

    /// The URI and path of the file `file` (a `$ref`'s part before `#`)
    /// names, seen from `from`; only files inside the root's folder.
    fn file_of(&self, from: &str, file: &str, r: &str) -> Result<(String, PathBuf), String> {
        if file.contains("://") {
            return Err(format!(
                "`$ref: {r}` in {from}: remote references are not followed (vendor the file next to the document)"
            ));
        }
        let Some(folder) = &self.folder else {
            return Err(format!(
                "`$ref: {r}`: this document is not read from a file, so it may only refer to itself"
            ));
        };
        let from_path = from
            .strip_prefix("file://")
            .map(PathBuf::from)
            .unwrap_or_default();
        let base = from_path.parent().unwrap_or(folder);
        let decoded = percent_decode(file);
        let joined = base.join(&decoded);
        let canon = joined.canonicalize().map_err(|e| {
            format!(
                "`$ref: {r}` in {from}: cannot read {}: {e}",
                joined.display()
            )
        })?;
        if !canon.starts_with(folder) {
            return Err(format!(
                "`$ref: {r}` in {from} leads outside the document's folder {}",
                folder.display()
            ));
        }
        Ok((file_uri(&canon), canon))
    }

    /// Checks every `$ref` of every file leads to a value.
    fn finish(self, root: String, version: Version, openapi: String) -> Result<Document, String> {
        let doc = Document {
            version,
            openapi,
            root,
            files: self.files,
        };
        for (uri, value) in &doc.files {
            let mut refs = BTreeSet::new();
            collect_refs(value, &mut refs);
            for r in refs {
                doc.target(uri, &r)?;
            }
        }
        let mut depths = Depths::default();
        for (uri, value) in &doc.files {
            depths.of(&doc, uri, value, 0)?;
        }
        Ok(doc)
    }
}

impl Document {
    /// The file and value a `$ref` written in file `from` leads to.
    pub fn target<'a>(&'a self, from: &str, r: &str) -> Result<(&'a str, &'a Value), String> {
        let (file, fragment) = split_ref(r);
        let uri = self
            .file_uri_of(from, file)
            .map_err(|e| format!("`$ref: {r}` in {from}: {e}"))?;
        let (key, value) = self
            .files
            .get_key_value(&uri)
            .ok_or_else(|| format!("`$ref: {r}` in {from}: {uri} was not loaded"))?;
        let pointer = percent_decode(fragment);
        let found = if pointer.is_empty() {
            Some(value)
        } else {
            value.pointer(&pointer)
        };
        found
            .map(|v| (key.as_str(), v))
            .ok_or_else(|| format!("`$ref: {r}` in {from} leads nowhere: no `{pointer}` there"))
    }

    /// The URI of the file a `$ref`'s file part (`../a.yaml`; empty: the
    /// file itself) names, seen from the file `from`.
    pub fn file_uri_of(&self, from: &str, file: &str) -> Result<String, String> {
        if file.is_empty() {
            return Ok(from.to_owned());
        }
        let from_path = from
            .strip_prefix("file://")
            .map(PathBuf::from)
            .unwrap_or_default();
        let base = from_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        base.join(percent_decode(file))
            .canonicalize()
            .map(|p| file_uri(&p))
            .map_err(|e| e.to_string())
    }

    /// `value` itself, or what its `$ref` chain leads to (bounded, cycles
    /// named), with the file it was found in.
    pub fn deref<'a>(
        &'a self,
        from: &'a str,
        value: &'a Value,
    ) -> Result<(&'a str, &'a Value), String> {
        let (mut at, mut cur) = (from, value);
        let mut seen = BTreeSet::new();
        for _ in 0..MAX_REF_HOPS {
            let Some(r) = cur.get("$ref").and_then(Value::as_str) else {
                return Ok((at, cur));
            };
            if !seen.insert((at.to_owned(), r.to_owned())) {
                return Err(format!(
                    "`$ref: {r}` in {at} is part of a cycle of references"
                ));
            }
            (at, cur) = self.target(at, r)?;
        }
        Err(format!(
            "more than {MAX_REF_HOPS} `$ref` hops from an object in {from}"
        ))
    }

    pub fn root_value(&self) -> &Value {
        &self.files[&self.root]
    }
}

/// The longest `$ref` chain under each value reached (by address, so each
/// is walked once), the values on the chain being walked (a cycle ends a
/// chain: the compiler resolves those lazily).
#[derive(Default)]
struct Depths {
    known: std::collections::HashMap<usize, usize>,
    walking: std::collections::HashSet<usize>,
}

impl Depths {
    fn of(
        &mut self,
        doc: &Document,
        uri: &str,
        value: &Value,
        chain: usize,
    ) -> Result<usize, String> {
        let at = value as *const Value as usize;
        if let Some(d) = self.known.get(&at) {
            return Ok(*d);
        }
        if !self.walking.insert(at) {
            return Ok(0);
        }
        let mut refs = BTreeSet::new();
        collect_refs(value, &mut refs);
        let mut deepest = 0;
        for r in refs {
            if chain + 1 > MAX_REF_DEPTH {
                return Err(format!(
                    "`$ref: {r}` in {uri}: more than {MAX_REF_DEPTH} `$ref`s, each inside what the one before led to; tminus reads documents nested less deep"
                ));
            }
            let (file, target) = doc.target(uri, &r)?;
            let file = file.to_owned();
            deepest = deepest.max(1 + self.of(doc, &file, target, chain + 1)?);
        }
        self.walking.remove(&at);
        self.known.insert(at, deepest);
        Ok(deepest)
    }
}

fn file_uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

/// `other.yaml#/components/schemas/X` -> (`other.yaml`, `/components/schemas/X`).
fn split_ref(r: &str) -> (&str, &str) {
    r.split_once('#').unwrap_or((r, ""))
}

fn collect_refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.insert(r.clone());
            }
            for (k, x) in m {
                // Examples are data, not document structure.
                if k != "example" && k != "examples" && k != "const" && k != "enum" {
                    collect_refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

fn read_one(path: &Path) -> Result<Value, String> {
    let bytes = crate::files::read_file_capped(path, MAX_FILE_BYTES)
        .map_err(|e| format!("cannot read OpenAPI document {}: {e}", path.display()))?;
    let text =
        String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", path.display()))?;
    let json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    parse(&text, &path.display().to_string(), json)
}

/// JSON or YAML text to a value; errors say `name:line:col`.
fn parse(text: &str, name: &str, json: bool) -> Result<Value, String> {
    if json {
        return serde_json::from_str(text)
            .map_err(|e| format!("{name}:{}:{}: not valid JSON: {e}", e.line(), e.column()));
    }
    serde_saphyr::from_str_with_options::<Value>(text, crate::files::yaml_options()).map_err(|e| {
        let (line, col) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        let text = e.without_snippet().to_string();
        let first = text.lines().next().unwrap_or("").trim().to_owned();
        format!("{name}:{line}:{col}: not valid YAML: {first}")
    })
}

fn version_of(v: &Value, name: &str) -> Result<(Version, String), String> {
    let Some(openapi) = v.get("openapi").and_then(Value::as_str) else {
        if v.get("swagger").is_some() {
            return Err(format!(
                "{name} is a Swagger 2.0 document: convert it to OpenAPI 3 first (e.g. swagger2openapi)"
            ));
        }
        return Err(format!(
            "{name} has no `openapi:` version field: not an OpenAPI 3 document"
        ));
    };
    let version = if openapi.starts_with("3.0") {
        Version::V30
    } else if openapi.starts_with("3.1") {
        Version::V31
    } else {
        return Err(format!(
            "{name}: OpenAPI {openapi} is not supported (3.0 and 3.1 are)"
        ));
    };
    if !v.get("paths").is_none_or(Value::is_object) {
        return Err(format!("{name}: `paths` must be a mapping"));
    }
    Ok((version, openapi.to_owned()))
}

/// `%7B` -> `{` (a `$ref` is a URI reference); bytes that are not valid
/// escapes stay as written.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
