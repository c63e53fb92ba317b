//! Values for the requests `tminus init --from-openapi` writes: a request
//! body or a parameter's value, taken from the document's own examples
//! first and otherwise made as the smallest value its schema admits; every
//! value is checked against its schema before it is written, so a suite
//! never sends a body the document itself calls invalid. A schema no simple
//! value satisfies is a reason, written beside the operation it skips.

use serde_json::{json, Map, Value};

use crate::contract::{Document, Schemas};

/// Deepest nesting of schemas followed while making a value.
const MAX_DEPTH: usize = 16;

/// Where a value came from (said in the suite's comments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The document's `example`, `examples`, `default`, `const` or `enum`.
    Example,
    /// Made from the schema's types and bounds.
    Minimal,
}

/// A value for `schema` (written in the file `uri`), and where it came
/// from; `given` is an example written next to the schema (a media type's
/// or parameter's `example`/`examples`), tried first.
pub fn value_for(
    doc: &Document,
    schemas: &Schemas<'_>,
    uri: &str,
    schema: &Value,
    given: Option<Value>,
) -> Result<(Value, Origin), String> {
    let validator = schemas.validator(uri, schema)?;
    let check = |v: &Value| match validator.iter_errors(v).next() {
        None => Ok(()),
        Some(e) => Err(format!(
            "at `{}`: {e}",
            pointer_or_root(&e.instance_path().to_string())
        )),
    };
    if let Some(v) = given {
        return match check(&v) {
            Ok(()) => Ok((v, Origin::Example)),
            Err(e) => Err(format!("the document's example does not validate ({e})")),
        };
    }
    let (v, origin) = make(doc, uri, schema, 0)?;
    check(&v).map_err(|e| format!("no value made from the schema validates ({e})"))?;
    Ok((v, origin))
}

/// The example written beside a schema: `example`, else the first of
/// `examples` (an Example Object's `value`, following its `$ref`).
pub fn given_example(doc: &Document, uri: &str, holder: &Value) -> Option<Value> {
    if let Some(v) = holder.get("example") {
        return Some(v.clone());
    }
    let first = match holder.get("examples")? {
        Value::Object(m) => m.values().next()?,
        _ => return None,
    };
    let (_, ex) = doc.deref(uri, first).ok()?;
    ex.get("value").cloned()
}

fn pointer_or_root(p: &str) -> &str {
    if p.is_empty() {
        "/"
    } else {
        p
    }
}

/// The schema's own example, else the smallest value its types and bounds
/// admit.
fn make(
    doc: &Document,
    uri: &str,
    schema: &Value,
    depth: usize,
) -> Result<(Value, Origin), String> {
    if depth > MAX_DEPTH {
        return Err(format!("the schema nests deeper than {MAX_DEPTH} levels"));
    }
    let (uri, s) = doc.deref(uri, schema)?;
    match s {
        Value::Bool(true) => return Ok((json!({}), Origin::Minimal)),
        Value::Bool(false) => return Err("a `false` schema admits no value".into()),
        _ => {}
    }
    if let Some(v) = own_example(s) {
        return Ok((v, Origin::Example));
    }
    if let Some(parts) = s.get("allOf").and_then(Value::as_array) {
        return all_of(doc, uri, s, parts, depth);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(choices) = s.get(key).and_then(Value::as_array) {
            let mut why = Vec::new();
            for c in choices {
                match make(doc, uri, c, depth + 1) {
                    Ok(v) => return Ok(v),
                    Err(e) => why.push(e),
                }
            }
            return Err(format!(
                "no choice of `{key}` could be made: {}",
                why.join("; ")
            ));
        }
    }
    let ty = type_of(s).ok_or_else(|| "the schema names no type".to_owned())?;
    let v = match ty {
        "object" => object(doc, uri, s, depth)?,
        "array" => array(doc, uri, s, depth)?,
        "string" => string(s)?,
        "integer" => number(s, true)?,
        "number" => number(s, false)?,
        "boolean" => json!(false),
        "null" => Value::Null,
        other => return Err(format!("unknown type `{other}`")),
    };
    Ok((v, Origin::Minimal))
}

/// `example`, the first of `examples` (3.1's array), `default`, `const`, or
/// the first value of `enum` that is not null.
fn own_example(s: &Value) -> Option<Value> {
    if let Some(v) = s.get("example") {
        return Some(v.clone());
    }
    if let Some(v) = s
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return Some(v.clone());
    }
    if let Some(v) = s.get("default").or_else(|| s.get("const")) {
        return Some(v.clone());
    }
    s.get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|v| !v.is_null()).or_else(|| a.first()))
        .cloned()
}

/// The first type named that is not `null` (`["string", "null"]`), else
/// what the keywords present imply.
fn type_of(s: &Value) -> Option<&str> {
    match s.get("type") {
        Some(Value::String(t)) => return Some(t),
        Some(Value::Array(ts)) => {
            let named: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
            return named
                .iter()
                .copied()
                .find(|t| *t != "null")
                .or(named.first().copied());
        }
        _ => {}
    }
    let has = |k: &str| s.get(k).is_some();
    if has("properties") || has("required") || has("additionalProperties") {
        Some("object")
    } else if has("items") || has("prefixItems") {
        Some("array")
    } else if has("minLength") || has("maxLength") || has("pattern") || has("format") {
        Some("string")
    } else if has("minimum") || has("maximum") || has("exclusiveMinimum") || has("multipleOf") {
        Some("number")
    } else {
        None
    }
}

/// Every part's value merged: the objects' members together.
fn all_of(
    doc: &Document,
    uri: &str,
    s: &Value,
    parts: &[Value],
    depth: usize,
) -> Result<(Value, Origin), String> {
    let mut merged = Map::new();
    let mut origin = Origin::Example;
    let mut rest = s.clone();
    if let Some(m) = rest.as_object_mut() {
        m.remove("allOf");
    }
    let own = (type_of(&rest).is_some()).then_some(&rest);
    for part in parts.iter().chain(own) {
        let (v, o) = make(doc, uri, part, depth + 1)?;
        if o == Origin::Minimal {
            origin = Origin::Minimal;
        }
        match v {
            Value::Object(m) => merged.extend(m),
            other if parts.len() == 1 && own.is_none() => return Ok((other, o)),
            _ => return Err("`allOf` of values that are not objects".into()),
        }
    }
    Ok((Value::Object(merged), origin))
}

/// The required members only, each made from its property's schema.
fn object(doc: &Document, uri: &str, s: &Value, depth: usize) -> Result<Value, String> {
    let mut out = Map::new();
    let props = s.get("properties").and_then(Value::as_object);
    for name in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let member = props
            .and_then(|p| p.get(name))
            .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()));
        let v = match member {
            Some(m) => {
                make(doc, uri, m, depth + 1)
                    .map_err(|e| format!("`{name}`: {e}"))?
                    .0
            }
            None => json!("x"),
        };
        out.insert(name.to_owned(), v);
    }
    Ok(Value::Object(out))
}

/// `minItems` items (at least one: an empty list is what business rules
/// reject most), each made from `items` (or `prefixItems` in order).
fn array(doc: &Document, uri: &str, s: &Value, depth: usize) -> Result<Value, String> {
    let min = s.get("minItems").and_then(Value::as_u64).unwrap_or(0);
    let max = s
        .get("maxItems")
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX);
    let n = min.max(1).min(max);
    if n > 1 && s.get("uniqueItems") == Some(&Value::Bool(true)) {
        return Err(format!("{n} unique items cannot be made without examples"));
    }
    let prefix = s.get("prefixItems").and_then(Value::as_array);
    let mut out = Vec::new();
    for i in 0..n as usize {
        let item = prefix.and_then(|p| p.get(i)).or_else(|| s.get("items"));
        let v = match item {
            Some(item) => {
                make(doc, uri, item, depth + 1)
                    .map_err(|e| format!("item {i}: {e}"))?
                    .0
            }
            None => json!("x"),
        };
        out.push(v);
    }
    Ok(Value::Array(out))
}

/// A value of the string's `format`, else `x` repeated to `minLength`;
/// with a `pattern`, the first of a few plain candidates it matches.
fn string(s: &Value) -> Result<Value, String> {
    let min = s
        .get("minLength")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1) as usize;
    let max = s
        .get("maxLength")
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX) as usize;
    let len = min.min(max).min(4096);
    let format = s.get("format").and_then(Value::as_str).map(|f| match f {
        "email" | "idn-email" => "tminus@example.com",
        "uuid" => "00000000-0000-4000-8000-000000000000",
        "date-time" => "2026-01-01T00:00:00Z",
        "date" => "2026-01-01",
        "time" => "00:00:00Z",
        "uri" | "url" | "iri" => "https://example.com/",
        "uri-reference" | "iri-reference" => "/",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "192.0.2.1",
        "ipv6" => "2001:db8::1",
        "byte" => "eA==",
        _ => "",
    });
    if let Some(f) = format.filter(|f| !f.is_empty()) {
        return Ok(json!(f));
    }
    let Some(pattern) = s.get("pattern").and_then(Value::as_str) else {
        return Ok(json!("x".repeat(len)));
    };
    let re = regex::Regex::new(pattern).map_err(|e| {
        format!("pattern `{pattern}` is not a regular expression tminus reads: {e}")
    })?;
    ["x", "a", "1", "A", "x1", "a-1", "0"]
        .iter()
        .map(|c| c.repeat(len.div_ceil(c.len()).max(1)))
        .find(|c| re.is_match(c) && c.chars().count() <= max)
        .map(Value::String)
        .ok_or_else(|| format!("no example, and no plain value matches the pattern `{pattern}`"))
}

/// The lowest value the bounds admit (1 when unbounded: ids and counts
/// start there), rounded up to `multipleOf`.
fn number(s: &Value, integer: bool) -> Result<Value, String> {
    let get = |k: &str| s.get(k).and_then(Value::as_f64);
    let step = if integer { 1.0 } else { 0.5 };
    let mut v = match (get("minimum"), get("exclusiveMinimum")) {
        (Some(m), _) => m,
        (None, Some(e)) => e + step,
        (None, None) => 1.0,
    };
    if integer {
        v = v.ceil();
    }
    if let Some(k) = get("multipleOf").filter(|k| *k > 0.0) {
        v = (v / k).ceil() * k;
    }
    let over =
        get("maximum").is_some_and(|m| v > m) || get("exclusiveMaximum").is_some_and(|m| v >= m);
    if over {
        match get("maximum") {
            Some(m) if get("minimum").is_none() && get("exclusiveMinimum").is_none() => v = m,
            _ => return Err("its bounds admit no simple value".into()),
        }
    }
    Ok(if integer && v.abs() < 9.0e15 {
        json!(v as i64)
    } else {
        json!(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(schemas: Value) -> Document {
        let text = json!({
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1"},
            "paths": {},
            "components": {"schemas": schemas}
        })
        .to_string();
        crate::contract::load_document_text(&text, "t.json").unwrap()
    }

    fn made(schema: Value) -> Result<(Value, Origin), String> {
        let d = doc(json!({"S": schema}));
        let schemas = Schemas::new(&d).unwrap();
        let s = json!({"$ref": "#/components/schemas/S"});
        value_for(&d, &schemas, &d.root.clone(), &s, None)
    }

    #[test]
    fn required_members_are_made_within_their_bounds() {
        let (v, o) = made(json!({
            "type": "object",
            "required": ["n", "name", "tags", "when"],
            "properties": {
                "n": {"type": "integer", "minimum": 5, "multipleOf": 3},
                "name": {"type": "string", "minLength": 3},
                "tags": {"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["a", "b"]}},
                "when": {"type": "string", "format": "date-time"},
                "optional": {"type": "string"}
            }
        }))
        .unwrap();
        assert_eq!(o, Origin::Minimal);
        assert_eq!(
            v,
            json!({"n": 6, "name": "xxx", "tags": ["a", "a"], "when": "2026-01-01T00:00:00Z"})
        );
    }

    #[test]
    fn examples_come_first_and_must_validate() {
        let (v, o) = made(json!({"type": "object", "example": {"a": 1}})).unwrap();
        assert_eq!((v, o), (json!({"a": 1}), Origin::Example));
        let e = made(json!({"type": "integer", "maximum": 3, "example": 9})).unwrap_err();
        assert!(e.contains("validates"), "{e}");
    }

    #[test]
    fn a_pattern_no_plain_value_matches_is_a_reason() {
        assert_eq!(
            made(json!({"type": "string", "pattern": "^[a-z0-9_-]{1,64}$"}))
                .unwrap()
                .0,
            json!("x")
        );
        let e = made(json!({"type": "string", "pattern": "^\\+[1-9][0-9]{7,14}$"})).unwrap_err();
        assert!(e.contains("pattern"), "{e}");
    }

    #[test]
    fn all_of_merges_and_one_of_takes_the_first_that_can_be_made() {
        let (v, _) = made(json!({
            "allOf": [
                {"type": "object", "required": ["a"], "properties": {"a": {"type": "boolean"}}},
                {"type": "object", "required": ["b"], "properties": {"b": {"oneOf": [false, {"type": "null"}]}}}
            ]
        }))
        .unwrap();
        assert_eq!(v, json!({"a": false, "b": null}));
        assert!(made(json!({"type": "integer", "exclusiveMinimum": 1, "maximum": 1})).is_err());
    }
}
