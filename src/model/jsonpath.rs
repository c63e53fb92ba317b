//! A small JSON path: `$`, `.name`, `["name"]`, `[index]` (negative counts
//! from the end) and a trailing `.length()` for arrays, objects and strings.
//! Enough for captures, expectations and side-effect counters; anything else
//! is rejected when the suite is planned, not guessed at run time.

use std::fmt;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(i64),
    Length,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    text: String,
    segs: Vec<Seg>,
}

impl JsonPath {
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let t = text.trim();
        let rest = t
            .strip_prefix('$')
            .ok_or_else(|| format!("invalid JSON path `{text}`: must start with `$`"))?;
        let chars: Vec<char> = rest.chars().collect();
        let mut i = 0;
        let mut segs = Vec::new();
        let bad = |why: &str| format!("invalid JSON path `{text}`: {why}");
        while i < chars.len() {
            if segs.last() == Some(&Seg::Length) {
                return Err(bad("`.length()` must come last"));
            }
            match chars[i] {
                '.' => {
                    let start = i + 1;
                    let mut j = start;
                    while j < chars.len() && chars[j] != '.' && chars[j] != '[' {
                        j += 1;
                    }
                    let name: String = chars[start..j].iter().collect();
                    if name.is_empty() {
                        return Err(bad("empty name after `.`"));
                    }
                    if name == "length()" {
                        segs.push(Seg::Length);
                    } else {
                        segs.push(Seg::Key(name));
                    }
                    i = j;
                }
                '[' => {
                    let close = chars[i..]
                        .iter()
                        .position(|c| *c == ']')
                        .ok_or_else(|| bad("missing `]`"))?
                        + i;
                    let inner: String = chars[i + 1..close].iter().collect();
                    let inner = inner.trim();
                    if let Some(q) = inner
                        .strip_prefix('"')
                        .and_then(|s| s.strip_suffix('"'))
                        .or_else(|| inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
                    {
                        segs.push(Seg::Key(q.to_owned()));
                    } else {
                        let n: i64 = inner
                            .parse()
                            .map_err(|_| bad("brackets take an index or a quoted name"))?;
                        segs.push(Seg::Index(n));
                    }
                    i = close + 1;
                }
                c => return Err(bad(&format!("unexpected `{c}`"))),
            }
        }
        Ok(JsonPath {
            text: t.to_owned(),
            segs,
        })
    }

    /// The value at the path, or `None` when any step is missing.
    pub fn select(&self, root: &Value) -> Option<Value> {
        let mut cur = root;
        for seg in &self.segs {
            match seg {
                Seg::Key(k) => cur = cur.get(k)?,
                Seg::Index(n) => {
                    let arr = cur.as_array()?;
                    let idx = if *n < 0 { arr.len() as i64 + n } else { *n };
                    cur = arr.get(usize::try_from(idx).ok()?)?;
                }
                Seg::Length => {
                    let len = match cur {
                        Value::Array(a) => a.len(),
                        Value::Object(o) => o.len(),
                        Value::String(s) => s.chars().count(),
                        _ => return None,
                    };
                    return Some(Value::from(len));
                }
            }
        }
        Some(cur.clone())
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
    }
}
