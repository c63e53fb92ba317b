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
            let mut why = first
                .lines()
                .next()
                .unwrap_or("not RFC 9535 JSONPath")
                .to_owned();
            if let Some(hint) = bracket_hint(t) {
                why.push_str("; ");
                why.push_str(&hint);
            }
            bad(&why)
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

/// RFC 9535's dot notation takes only names of letters, digits and `_`
/// (not first a digit): `$.headers.x-request-id` is refused. When writing
/// each such name in brackets makes the path valid, says so, with the path
/// rewritten: "names with `-` need bracket notation: $.headers['x-request-id']".
fn bracket_hint(full: &str) -> Option<String> {
    let (path, suffix) = match full.strip_suffix(".length()") {
        Some(p) => (p, ".length()"),
        None => (full, ""),
    };
    let shorthand = |c: char| c.is_alphanumeric() || c == '_' || !c.is_ascii();
    let mut out = String::with_capacity(path.len() + 8);
    let mut odd: Vec<char> = Vec::new();
    let chars: Vec<char> = path.chars().collect();
    let (mut i, mut depth, mut quote) = (0, 0usize, None::<char>);
    while i < chars.len() {
        let c = chars[i];
        match (quote, c) {
            (Some(q), _) => {
                if c == '\\' && i + 1 < chars.len() {
                    out.push(c);
                    i += 1;
                    out.push(chars[i]);
                } else {
                    if c == q {
                        quote = None;
                    }
                    out.push(c);
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                out.push(c);
            }
            (None, '[' | '(') => {
                depth += 1;
                out.push(c);
            }
            (None, ']' | ')') => {
                depth = depth.saturating_sub(1);
                out.push(c);
            }
            (None, '.') if depth == 0 => {
                out.push('.');
                if chars.get(i + 1) == Some(&'.') {
                    out.push('.');
                    i += 1;
                }
                // A name runs to the next `.` or `[` (or the end).
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && chars[end] != '.' && chars[end] != '[' {
                    end += 1;
                }
                let name: String = chars[start..end].iter().collect();
                let bad: Vec<char> = name.chars().filter(|c| !shorthand(*c)).collect();
                let digit_first = name.starts_with(|c: char| c.is_ascii_digit());
                if !name.is_empty() && name != "*" && (!bad.is_empty() || digit_first) {
                    if out.ends_with("..") {
                        // `..name` -> `..['name']`
                    } else {
                        out.pop();
                    }
                    out.push_str(&format!(
                        "['{}']",
                        name.replace('\\', "\\\\").replace('\'', "\\'")
                    ));
                    odd.extend(bad);
                } else {
                    out.push_str(&name);
                }
                i = end;
                continue;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    if out == path {
        return None;
    }
    serde_json_path::JsonPath::parse(&out).ok()?;
    out.push_str(suffix);
    odd.sort_unstable();
    odd.dedup();
    let what = match odd.as_slice() {
        [] => "names that start with a digit".to_owned(),
        chars => format!(
            "names with {}",
            chars
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    };
    Some(format!("{what} need bracket notation: {out}"))
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

    /// Issue 37: the natural `$.headers.x-request-id` says how RFC 9535
    /// wants it written.
    #[test]
    fn a_name_with_a_dash_gets_the_bracket_form() {
        let e = JsonPath::parse("$.headers.x-request-id").unwrap_err();
        assert!(
            e.ends_with("names with `-` need bracket notation: $.headers['x-request-id']"),
            "{e}"
        );
        let e = JsonPath::parse("$.data[0].created-at.length()").unwrap_err();
        assert!(
            e.ends_with("need bracket notation: $.data[0]['created-at'].length()"),
            "{e}"
        );
        let e = JsonPath::parse("$..x-id").unwrap_err();
        assert!(e.ends_with("need bracket notation: $..['x-id']"), "{e}");
        // The hint's path is itself valid; a path with no such fix gets none.
        JsonPath::parse("$.headers['x-request-id']").unwrap();
        let e = JsonPath::parse("$.a[").unwrap_err();
        assert!(!e.contains("bracket notation"), "{e}");
        assert!(bracket_hint("$.a.b").is_none());
    }

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
