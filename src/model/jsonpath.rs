//! JSON paths in suites: RFC 9535 JSONPath (through the maintained
//! `serde_json_path` crate), so filters, wildcards, slices and descendants
//! work as in other tools (`$.data[?@.id == '2'].name`), plus tminus's
//! trailing `.length()` for arrays, objects and strings.
//!
//! What a path selects: nothing -> `None` (the value is missing); one node ->
//! that value; several nodes (a wildcard or a filter that matches more than
//! one) -> a JSON array of them, in document order.

use std::fmt;

use serde_json::Value;

#[derive(Debug, Clone)]
pub struct JsonPath {
    text: String,
    query: serde_json_path::JsonPath,
    /// A trailing `.length()`.
    length: bool,
}

impl PartialEq for JsonPath {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl JsonPath {
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let t = text.trim();
        let bad = |why: &str| format!("invalid JSON path `{text}`: {why}");
        if !t.starts_with('$') {
            return Err(bad("must start with `$`"));
        }
        let (query, length) = match t.strip_suffix(".length()") {
            Some(q) => (q, true),
            None => (t, false),
        };
        if query.contains(".length()") {
            return Err(bad("`.length()` must come last"));
        }
        let parsed = serde_json_path::JsonPath::parse(query).map_err(|e| {
            // The crate's message is one line; keep ours around it.
            let first = e.to_string();
            bad(first.lines().next().unwrap_or("not RFC 9535 JSONPath"))
        })?;
        Ok(JsonPath {
            text: t.to_owned(),
            query: parsed,
            length,
        })
    }

    /// The value at the path, or `None` when nothing matches (see the module
    /// doc for several matches).
    pub fn select(&self, root: &Value) -> Option<Value> {
        let nodes = self.query.query(root).all();
        let value = match nodes.as_slice() {
            [] => return None,
            [one] => (*one).clone(),
            many => Value::Array(many.iter().map(|v| (*v).clone()).collect()),
        };
        if !self.length {
            return Some(value);
        }
        let len = match &value {
            Value::Array(a) => a.len(),
            Value::Object(o) => o.len(),
            Value::String(s) => s.chars().count(),
            _ => return None,
        };
        Some(Value::from(len))
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selects() {
        let v = json!({"data": [{"id": 1}, {"id": 2}], "meta": {"next_cursor": null}, "a.b": 3});
        let p = |s: &str| JsonPath::parse(s).unwrap().select(&v);
        assert_eq!(p("$.data[1].id"), Some(json!(2)));
        assert_eq!(p("$.data[-1].id"), Some(json!(2)));
        assert_eq!(p("$.data.length()"), Some(json!(2)));
        assert_eq!(p("$.meta.next_cursor"), Some(Value::Null));
        assert_eq!(p("$[\"a.b\"]"), Some(json!(3)));
        assert_eq!(p("$.missing"), None);
        assert!(JsonPath::parse("data.id").is_err());
        assert!(JsonPath::parse("$.a[x]").is_err());
        assert!(JsonPath::parse("$.a.length().b").is_err());
    }

    #[test]
    fn rfc_9535_filters_wildcards_and_slices() {
        let v =
            json!({"data": [{"id": "1", "n": "a"}, {"id": "2", "n": "b"}, {"id": "3", "n": "c"}]});
        let p = |s: &str| JsonPath::parse(s).unwrap().select(&v);
        assert_eq!(p("$.data[?@.id == '2'].n"), Some(json!("b")));
        assert_eq!(p("$.data[?@.id != '2'].n"), Some(json!(["a", "c"])));
        assert_eq!(p("$.data[*].id.length()"), Some(json!(3)));
        assert_eq!(p("$.data[0:2].n"), Some(json!(["a", "b"])));
        assert_eq!(p("$..n"), Some(json!(["a", "b", "c"])));
        assert_eq!(p("$.data[?@.id == '9']"), None);
        assert_eq!(p("$.data[?length(@.n) == 1].id.length()"), Some(json!(3)));
    }
}
