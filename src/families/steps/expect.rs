//! Evaluating an `expect:` block against a captured exchange. Each mismatch
//! keeps what was expected and what came back, in words a reviewer can read.

use crate::context::{ExpectPlan, HeaderCheck, JsonCheck, Scope};
use crate::http::Exchange;

#[derive(Debug, Clone)]
pub struct Mismatch {
    pub what: String,
    pub expected: String,
    pub actual: String,
}

fn m(what: impl Into<String>, expected: impl Into<String>, actual: impl Into<String>) -> Mismatch {
    Mismatch {
        what: what.into(),
        expected: expected.into(),
        actual: actual.into(),
    }
}

fn shorten(s: &str) -> String {
    if s.chars().count() > 200 {
        format!("{}…", s.chars().take(200).collect::<String>())
    } else {
        s.to_owned()
    }
}

pub fn evaluate(exp: &ExpectPlan, ex: &Exchange, scope: &Scope) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let resp = &ex.response;
    if let Some(st) = &exp.status {
        if !st.matches(resp.status) {
            out.push(m("status", st.to_string(), resp.status.to_string()));
        }
    }
    for (name, check) in &exp.headers {
        let got = resp.header(name);
        match (check, got) {
            (HeaderCheck::Present, None) => {
                out.push(m(format!("header {name}"), "present", "absent"))
            }
            (HeaderCheck::Absent, Some(v)) => out.push(m(
                format!("header {name}"),
                "absent",
                format!("present: {}", shorten(v)),
            )),
            (HeaderCheck::Equals(t), got) => {
                let want = t.render(scope);
                if got != Some(want.as_str()) {
                    out.push(m(
                        format!("header {name}"),
                        format!("`{want}`"),
                        got.map(|g| format!("`{}`", shorten(g)))
                            .unwrap_or_else(|| "absent".into()),
                    ));
                }
            }
            (HeaderCheck::Matches(re), got) if !got.is_some_and(|g| re.is_match(g)) => {
                out.push(m(
                    format!("header {name}"),
                    format!("matching /{}/", re.as_str()),
                    got.map(|g| format!("`{}`", shorten(g)))
                        .unwrap_or_else(|| "absent".into()),
                ));
            }
            _ => {}
        }
    }
    if !exp.json.is_empty() {
        match resp.json() {
            None => out.push(m(
                "body",
                "a JSON document",
                format!("not JSON: {}", shorten(&resp.text())),
            )),
            Some(doc) => {
                for (path, check) in &exp.json {
                    let got = path.select(&doc);
                    match check {
                        JsonCheck::Equals(want) => {
                            let want = &want.render(scope);
                            if got.as_ref() != Some(want) && !loosely_equal(got.as_ref(), want) {
                                out.push(m(
                                    path.to_string(),
                                    want.to_string(),
                                    got.map(|g| shorten(&g.to_string()))
                                        .unwrap_or_else(|| "missing".into()),
                                ));
                            }
                        }
                        JsonCheck::Exists(want) => {
                            if got.is_some() != *want {
                                out.push(m(
                                    path.to_string(),
                                    if *want { "present" } else { "absent" },
                                    if got.is_some() { "present" } else { "missing" },
                                ));
                            }
                        }
                        JsonCheck::Matches(re) => {
                            let text = got.as_ref().map(|g| match g {
                                serde_json::Value::String(s) => s.clone(),
                                other => other.to_string(),
                            });
                            if !text.as_deref().is_some_and(|t| re.is_match(t)) {
                                out.push(m(
                                    path.to_string(),
                                    format!("matching /{}/", re.as_str()),
                                    text.map(|t| shorten(&t))
                                        .unwrap_or_else(|| "missing".into()),
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    if let Some(needle) = &exp.body_contains {
        let n = needle.render(scope);
        if !resp.text().contains(&n) {
            out.push(m(
                "body",
                format!("containing `{n}`"),
                shorten(&resp.text()),
            ));
        }
    }
    if let Some(limit) = exp.latency_under {
        if ex.elapsed >= limit {
            out.push(m(
                "latency",
                format!("under {}", crate::fmt_duration(limit)),
                crate::fmt_duration(ex.elapsed),
            ));
        }
    }
    out
}

/// YAML `1` and JSON `1.0` are the same number to a reader, and a captured
/// `"2"` (captures are text) equals the number 2 it was taken from.
fn loosely_equal(got: Option<&serde_json::Value>, want: &serde_json::Value) -> bool {
    use serde_json::Value;
    let Some(got) = got else { return false };
    if let (Some(a), Some(b)) = (got.as_f64(), want.as_f64()) {
        return a == b;
    }
    match (got, want) {
        (Value::Number(n), Value::String(s)) => n.to_string() == *s,
        (Value::Bool(b), Value::String(s)) => b.to_string() == *s,
        _ => false,
    }
}
