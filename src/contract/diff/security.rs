//! Security requirements compared as what a client must present. An
//! operation's requirement is its own `security`, else the document's; it
//! is a list of alternatives (any one will do), each a set of schemes that
//! must all be met, with scopes. A client written against OLD meets one of
//! OLD's alternatives: the change breaks it when that alternative is no
//! longer accepted, or needs more scopes. The schemes themselves
//! (`components.securitySchemes`) are compared by how the credential is
//! sent: type, `in`, header or query name, HTTP scheme.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::operations::{Diff, Where};
use super::rules;

/// One alternative: scheme -> scopes.
type Alternative = BTreeMap<String, BTreeSet<String>>;

/// The alternatives `op` accepts; `None`: anonymous calls are accepted.
fn requirement(root: &Value, op: &Value) -> Option<Vec<Alternative>> {
    let list = op
        .get("security")
        .or_else(|| root.get("security"))
        .and_then(Value::as_array)?;
    let mut out = Vec::new();
    for alt in list {
        let Some(m) = alt.as_object() else { continue };
        if m.is_empty() {
            // `{}`: no credentials is one of the ways in.
            return None;
        }
        out.push(
            m.iter()
                .map(|(k, v)| {
                    let scopes: BTreeSet<String> = v
                        .as_array()
                        .map(|s| {
                            s.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_owned)
                                .collect()
                        })
                        .unwrap_or_default();
                    (k.clone(), scopes)
                })
                .collect(),
        );
    }
    if out.is_empty() {
        None
    } else {
        Some(out)
    }
}

fn text(alt: &Alternative) -> String {
    alt.iter()
        .map(|(k, s)| {
            if s.is_empty() {
                k.clone()
            } else {
                format!("{k} [{}]", s.iter().cloned().collect::<Vec<_>>().join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Compares the requirement of one operation on both sides.
pub fn operation(d: &mut Diff<'_>, w: &Where, old_op: &Value, new_op: &Value) {
    let w = Where {
        at: "security".to_owned(),
        ..w.clone()
    };
    let old = requirement(d.old.root_value(), old_op);
    let new = requirement(d.new.root_value(), new_op);
    match (old, new) {
        (None, None) => {}
        (None, Some(n)) => {
            let all: Vec<String> = n.iter().map(text).collect();
            let msg = format!("credentials now required: {}", all.join(" or "));
            d.push(rules::rule("api-security-added"), &w, "", msg);
        }
        (Some(_), None) => {
            let msg = "no credentials needed any more".to_owned();
            d.push(rules::rule("api-security-removed"), &w, "", msg);
        }
        (Some(o), Some(n)) => {
            let mut replaced = false;
            for alt in o.iter().filter(|a| !n.contains(a)) {
                let same_schemes = n.iter().find(|b| b.keys().eq(alt.keys()));
                match same_schemes {
                    Some(b) if b.iter().all(|(k, s)| s.is_subset(&alt[k])) => {
                        // Fewer scopes asked: every old token still works.
                    }
                    Some(b) => {
                        let msg = format!("`{}` now needs `{}`", text(alt), text(b));
                        d.push(rules::rule("api-security-scope-added"), &w, "", msg);
                    }
                    None => {
                        replaced = true;
                        let now: Vec<String> = n.iter().map(text).collect();
                        let msg = format!(
                            "`{}` is no longer accepted (now: {})",
                            text(alt),
                            now.join(" or ")
                        );
                        d.push(rules::rule("api-security-updated"), &w, "", msg);
                    }
                }
            }
            // A scheme that replaced one is the replacement already reported.
            let added = n
                .iter()
                .filter(|b| !o.iter().any(|a| a.keys().eq(b.keys())));
            for alt in added.filter(|_| !replaced) {
                let msg = format!("`{}` accepted too", text(alt));
                d.push(rules::rule("api-security-alternative-added"), &w, "", msg);
            }
        }
    }
}

/// How a scheme sends its credential: the fields that, changed, make
/// every existing client send it wrong.
fn how(scheme: &Value) -> Vec<(String, String)> {
    ["type", "in", "name", "scheme"]
        .iter()
        .filter_map(|k| {
            scheme.get(*k).and_then(Value::as_str).map(|v| {
                // RFC 9110: the auth scheme is case-insensitive; so is a header name.
                let v = if *k == "scheme"
                    || (*k == "name" && scheme.get("in").and_then(Value::as_str) == Some("header"))
                {
                    v.to_ascii_lowercase()
                } else {
                    v.to_owned()
                };
                ((*k).to_owned(), v)
            })
        })
        .collect()
}

/// Compares `components.securitySchemes`.
pub fn components(d: &mut Diff<'_>) {
    let schemes = |doc: &crate::contract::load::Document| -> BTreeMap<String, Value> {
        doc.root_value()
            .pointer("/components/securitySchemes")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| {
                        doc.deref(&doc.root, v)
                            .ok()
                            .map(|(_, v)| (k.clone(), v.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (old, new) = (schemes(d.old), schemes(d.new));
    for (name, n) in &new {
        let w = Where {
            operation: None,
            at: format!("security scheme {name}"),
            allowed: None,
        };
        match old.get(name) {
            None => d.push(
                rules::rule("api-security-component-added"),
                &w,
                "",
                format!("scheme `{name}` added"),
            ),
            Some(o) => {
                let (a, b) = (how(o), how(n));
                if a != b {
                    let show = |x: &[(String, String)]| {
                        x.iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    };
                    let msg = format!("scheme `{name}`: {} -> {}", show(&a), show(&b));
                    d.push(
                        rules::rule("api-security-component-type-changed"),
                        &w,
                        "",
                        msg,
                    );
                }
            }
        }
    }
}
