//! The operation table built from a loaded document: for every method and
//! path template, its `operationId`, its documented responses (by status,
//! `4XX` range or `default`), each response's required headers and media
//! types, and a compiled JSON Schema validator per JSON body. Everything is
//! resolved and compiled at load, so a broken `$ref` or schema is an error
//! before the run, and judging a response is lookups and one validation.

use serde_json::{json, Value};

use super::load::Document;
use super::matcher::Template;

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// One documented operation.
#[derive(Debug)]
pub struct Operation {
    /// `operationId`, or `POST /path` when it has none.
    pub id: String,
    /// Upper case (`POST`).
    pub method: String,
    pub template: Template,
    /// `#/paths/~1messages/post`, where it is written.
    pub pointer: String,
    pub responses: Vec<Response>,
    /// Base paths of the operation's own `servers`, else its path item's;
    /// `None`: the document's.
    pub bases: Option<Vec<String>>,
    /// `deprecated: true`, with its documented sunset (CON-005).
    pub deprecated: Option<super::deprecation::Deprecated>,
}

/// One documented response of an operation.
#[derive(Debug)]
pub struct Response {
    /// `200`, `4XX` (upper case) or `default`.
    pub key: String,
    pub pointer: String,
    /// Header names the response declares `required: true` (as written).
    pub required_headers: Vec<String>,
    /// Documented headers with a schema: a value that is present is judged.
    pub header_schemas: Vec<HeaderSchema>,
    /// Documented media types; empty when the response declares no content.
    pub content: Vec<Media>,
}

/// A documented header's schema, and how its text is read as JSON: the
/// `simple` style OpenAPI gives headers (a number for `integer`/`number`,
/// `true`/`false` for `boolean`, comma-separated items for `array`).
#[derive(Debug)]
pub struct HeaderSchema {
    pub name: String,
    /// `#/.../headers/X-RateLimit-Remaining/schema`.
    pub pointer: String,
    pub read_as: ReadAs,
    pub validator: jsonschema::Validator,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAs {
    Text,
    Number,
    Boolean,
    /// Comma-separated items, each read as the item kind.
    List(Item),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    Text,
    Number,
    Boolean,
}

impl ReadAs {
    fn of_type(t: Option<&str>) -> Option<ReadAs> {
        match t {
            None | Some("string") => Some(ReadAs::Text),
            Some("integer" | "number") => Some(ReadAs::Number),
            Some("boolean") => Some(ReadAs::Boolean),
            _ => None,
        }
    }

    /// The header's text as the JSON its schema judges; `Err` says why it
    /// cannot be read so (not a number, not a boolean).
    pub fn read(self, text: &str) -> Result<Value, String> {
        fn scalar(kind: Item, t: &str) -> Result<Value, String> {
            match kind {
                Item::Text => Ok(Value::String(t.to_owned())),
                Item::Number => serde_json::from_str::<serde_json::Number>(t)
                    .map(Value::Number)
                    .map_err(|_| format!("`{t}` is not a number")),
                Item::Boolean => match t {
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    _ => Err(format!("`{t}` is not true or false")),
                },
            }
        }
        let t = text.trim();
        match self {
            ReadAs::Text => scalar(Item::Text, t),
            ReadAs::Number => scalar(Item::Number, t),
            ReadAs::Boolean => scalar(Item::Boolean, t),
            ReadAs::List(kind) => t
                .split(',')
                .map(|i| scalar(kind, i.trim()))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
        }
    }
}

#[derive(Debug)]
pub struct Media {
    /// Lower case, parameters removed (`application/json`, `image/*`).
    pub media_type: String,
    /// For a JSON media type with a schema.
    pub validator: Option<jsonschema::Validator>,
}

impl Operation {
    /// The documented response for `status`: the exact code, else its
    /// range (`5XX`), else `default`.
    pub fn response(&self, status: u16) -> Option<&Response> {
        let exact = status.to_string();
        let range = format!("{}XX", status / 100);
        self.responses
            .iter()
            .find(|r| r.key == exact)
            .or_else(|| self.responses.iter().find(|r| r.key == range))
            .or_else(|| self.responses.iter().find(|r| r.key == "default"))
    }
}

/// `a/b~c` -> `a~1b~0c` (RFC 6901).
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// True for `application/json`, `application/problem+json`, `text/json`...
pub fn is_json(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or("").trim();
    essence.ends_with("/json") || essence.ends_with("+json")
}

/// One operation as written in the document: its path template and
/// method, the file its path item is in, the path item and the operation.
pub struct Written<'d> {
    pub template: &'d str,
    /// Lower case (`post`).
    pub method: &'static str,
    pub item_uri: &'d str,
    pub item: &'d Value,
    pub op: &'d Value,
}

impl Written<'_> {
    /// `operationId`, or `POST /path` when it has none.
    pub fn id(&self) -> String {
        self.op
            .get("operationId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{} {}", self.method.to_uppercase(), self.template))
    }
}

/// Every operation of `doc` in document order, path items dereferenced.
pub fn written(doc: &Document) -> Result<Vec<Written<'_>>, String> {
    let mut out = Vec::new();
    let Some(paths) = doc.root_value().get("paths").and_then(Value::as_object) else {
        return Ok(out);
    };
    for (template, item) in paths {
        let (item_uri, item) = doc.deref(doc.root.as_str(), item)?;
        for method in METHODS {
            if let Some(op) = item.get(*method) {
                out.push(Written {
                    template,
                    method,
                    item_uri,
                    item,
                    op,
                });
            }
        }
    }
    Ok(out)
}

/// Builds every operation of `doc`.
pub fn operations(doc: &Document) -> Result<Vec<Operation>, String> {
    let registry = registry(doc)?;
    let mut out = Vec::new();
    for w in written(doc)? {
        let (template, method, item_uri, op) = (w.template, w.method, w.item_uri, w.op);
        let pointer = format!("#/paths/{}/{method}", escape(template));
        let mut responses = Vec::new();
        if let Some(rs) = op.get("responses").and_then(Value::as_object) {
            for (key, r) in rs {
                let at = format!("{pointer}/responses/{}", escape(key));
                let (r_uri, r) = doc.deref(item_uri, r).map_err(|e| format!("{at}: {e}"))?;
                responses.push(response(doc, &registry, key, at, r_uri, r)?);
            }
        }
        out.push(Operation {
            id: w.id(),
            method: method.to_uppercase(),
            template: Template::parse(template),
            pointer,
            responses,
            bases: super::matcher::own_base_paths(op)
                .or_else(|| super::matcher::own_base_paths(w.item)),
            deprecated: super::deprecation::of_operation(op),
        });
    }
    Ok(out)
}

fn response(
    doc: &Document,
    registry: &jsonschema::Registry<'_>,
    key: &str,
    pointer: String,
    uri: &str,
    r: &Value,
) -> Result<Response, String> {
    let mut required_headers = Vec::new();
    let mut header_schemas = Vec::new();
    if let Some(hs) = r.get("headers").and_then(Value::as_object) {
        for (name, h) in hs {
            let (_, h) = doc
                .deref(uri, h)
                .map_err(|e| format!("{pointer}/headers/{}: {e}", escape(name)))?;
            // OpenAPI: a Content-Type header description is ignored.
            if name.eq_ignore_ascii_case("content-type") {
                continue;
            }
            if h.get("required") == Some(&Value::Bool(true)) {
                required_headers.push(name.clone());
            }
            let Some(schema) = h.get("schema") else {
                continue;
            };
            let at = format!("{pointer}/headers/{}/schema", escape(name));
            let (_, shape) = doc.deref(uri, schema).map_err(|e| format!("{at}: {e}"))?;
            let ty = shape.get("type").and_then(Value::as_str);
            let read_as = if ty == Some("array") {
                let item_ty = shape
                    .get("items")
                    .and_then(|i| doc.deref(uri, i).ok())
                    .and_then(|(_, i)| i.get("type").and_then(Value::as_str));
                match ReadAs::of_type(item_ty) {
                    Some(ReadAs::Number) => Some(ReadAs::List(Item::Number)),
                    Some(ReadAs::Boolean) => Some(ReadAs::List(Item::Boolean)),
                    Some(_) => Some(ReadAs::List(Item::Text)),
                    None => None,
                }
            } else {
                ReadAs::of_type(ty)
            };
            // An object header (`explode` styles) is not judged.
            let Some(read_as) = read_as else { continue };
            header_schemas.push(HeaderSchema {
                name: name.clone(),
                pointer: at.clone(),
                read_as,
                validator: compile(doc, registry, uri, schema).map_err(|e| format!("{at}: {e}"))?,
            });
        }
    }
    let mut content = Vec::new();
    if let Some(cs) = r.get("content").and_then(Value::as_object) {
        for (media_type, m) in cs {
            let at = format!("{pointer}/content/{}", escape(media_type));
            let media_type = media_type
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            let validator = match m.get("schema") {
                Some(schema) if is_json(&media_type) => Some(
                    compile(doc, registry, uri, schema).map_err(|e| format!("{at}/schema: {e}"))?,
                ),
                _ => None,
            };
            content.push(Media {
                media_type,
                validator,
            });
        }
    }
    Ok(Response {
        key: key.to_ascii_uppercase().replace("DEFAULT", "default"),
        pointer,
        required_headers,
        header_schemas,
        content,
    })
}

/// Every file of `doc` indexed for `$ref` resolution, as JSON Schema 2020-12.
fn registry(doc: &Document) -> Result<jsonschema::Registry<'_>, String> {
    doc.files
        .iter()
        .try_fold(
            jsonschema::Registry::new().draft(jsonschema::Draft::Draft202012),
            |b, (uri, v)| b.add(uri, v),
        )
        .and_then(|b| b.prepare())
        .map_err(|e| format!("the document's schemas cannot be indexed: {e}"))
}

/// The document's schemas, compiled on demand: what `tminus init` checks
/// the request values it writes against.
pub struct Schemas<'d> {
    doc: &'d Document,
    registry: jsonschema::Registry<'d>,
}

impl<'d> Schemas<'d> {
    pub fn new(doc: &'d Document) -> Result<Self, String> {
        Ok(Schemas {
            doc,
            registry: registry(doc)?,
        })
    }

    /// A validator for `schema`, written in the file `uri`.
    pub fn validator(&self, uri: &str, schema: &Value) -> Result<jsonschema::Validator, String> {
        compile(self.doc, &self.registry, uri, schema)
    }
}

/// A validator for `schema`, written in the file `uri`: its `#/...`
/// references are made absolute so they resolve in that file (the schema
/// itself is compiled under a base URI of its own).
fn compile(
    doc: &Document,
    registry: &jsonschema::Registry<'_>,
    uri: &str,
    schema: &Value,
) -> Result<jsonschema::Validator, String> {
    let mut schema = schema.clone();
    absolute_refs(doc, &mut schema, uri);
    if let Value::Bool(_) = schema {
        schema = json!({"allOf": [schema]});
    }
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_pattern_options(pattern_options())
        .with_registry(registry)
        .with_base_uri(format!("{uri}.tminus-response-schema"))
        .build(&schema)
        .map_err(|e| e.to_string())
}

/// How a schema's `pattern`s are compiled (issue 44): by fancy-regex, as
/// jsonschema does by default (ECMA-262 patterns use look-arounds and
/// back-references, which the linear `regex` crate refuses), but with the
/// limits stated: a pattern without those features runs on `regex`
/// (linear in the text); one with them may backtrack at most
/// [`MAX_BACKTRACK`] steps a match (`^(a+)+\1$` on 30 `a`s and a `b` stops
/// there instead of running for minutes), and no pattern compiles to more
/// than [`MAX_PATTERN_BYTES`].
fn pattern_options() -> jsonschema::PatternOptions<jsonschema::FancyRegex> {
    jsonschema::PatternOptions::fancy_regex()
        .backtrack_limit(MAX_BACKTRACK)
        .size_limit(MAX_PATTERN_BYTES)
        .dfa_size_limit(MAX_PATTERN_BYTES)
}

/// Backtracking steps one `pattern` match may take.
pub const MAX_BACKTRACK: usize = 100_000;
/// The most memory one compiled `pattern` may take (the `regex` crate's
/// default).
pub const MAX_PATTERN_BYTES: usize = 10 << 20;

fn absolute_refs(doc: &Document, v: &mut Value, uri: &str) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        // The loader read (and checked) every file a
                        // `$ref` names, under the same canonical URIs.
                        let (file, fragment) = r.split_once('#').unwrap_or((r.as_str(), ""));
                        if let Ok(target) = doc.file_uri_of(uri, file) {
                            *r = format!("{target}#{fragment}");
                        }
                    }
                    ("example" | "examples" | "const" | "enum" | "default", _) => {}
                    (_, x) => absolute_refs(doc, x, uri),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| absolute_refs(doc, x, uri)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A catastrophic pattern (a back-reference forces the backtracking
    /// engine) is cut at the step limit: the match is an error, fast.
    #[test]
    fn a_backtracking_pattern_stops_at_its_step_limit() {
        let doc = super::super::load::load_text(
            r#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {},
                "components": {"schemas": {"S": {"type": "string", "pattern": "^(a+)+\\1$"}}}}"#,
            "redos.json",
        )
        .unwrap();
        let schemas = Schemas::new(&doc).unwrap();
        let v = schemas
            .validator(&doc.root, &doc.root_value()["components"]["schemas"]["S"])
            .unwrap();
        let evil = json!(format!("{}b", "a".repeat(40)));
        let started = std::time::Instant::now();
        let errors: Vec<String> = v.iter_errors(&evil).map(|e| e.to_string()).collect();
        let took = started.elapsed();
        assert!(
            errors.iter().any(|e| e.contains("backtracking")),
            "{errors:?}"
        );
        assert!(took < std::time::Duration::from_secs(1), "{took:?}");
        assert!(v.is_valid(&json!("aaaa")));
    }

    /// The deepest `$ref` chain the loader admits compiles on a thread of
    /// Rust's default 2 MiB stack (a tokio worker's), in a debug build.
    #[test]
    fn the_deepest_ref_chain_admitted_compiles_on_a_small_stack() {
        let n = super::super::load::MAX_REF_DEPTH - 1;
        let mut schemas = serde_json::Map::new();
        for i in 0..n {
            schemas.insert(
                format!("S{i}"),
                json!({"allOf": [{"$ref": format!("#/components/schemas/S{}", i + 1)}]}),
            );
        }
        schemas.insert(format!("S{n}"), json!({"type": "object"}));
        let text = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "paths": {}, "components": {"schemas": schemas}})
        .to_string();
        let compiled = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let doc = super::super::load::load_text(&text, "chain.json").unwrap();
                let schemas = Schemas::new(&doc).unwrap();
                let v = schemas
                    .validator(&doc.root, &doc.root_value()["components"]["schemas"]["S0"])
                    .unwrap();
                v.is_valid(&json!({})) && !v.is_valid(&json!(1))
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(compiled);
        // One more is refused by the loader, naming the document.
        let mut deeper = String::from("{\"openapi\": \"3.1.0\", \"info\": {\"title\": \"t\", \"version\": \"1\"}, \"paths\": {}, \"components\": {\"schemas\": {");
        for i in 0..=n + 1 {
            deeper.push_str(&format!(
                "\"S{i}\": {{\"allOf\": [{{\"$ref\": \"#/components/schemas/S{}\"}}]}}, ",
                i + 1
            ));
        }
        deeper.push_str(&format!("\"S{}\": {{}}}}}}}}", n + 2));
        let e = super::super::load::load_text(&deeper, "deeper.json").unwrap_err();
        assert!(
            e.contains("urn:tminus:deeper.json") && e.contains("more than 64"),
            "{e}"
        );
    }
}
