//! Whether a suite run with no target was written for the embedded reference
//! (issue 37). With no `--target`, `TMINUS_TARGET` or `target.base_url`,
//! `tminus run` certifies the reference integration it starts itself. For
//! the shipped suites that is the point; for a user's suite it is a mistake
//! that ends in a page of 404s. The rule: a suite that sends a request to a
//! path the reference does not serve (its OpenAPI document lists every route
//! it has) was written for another API, and the run says so in a warning,
//! at the start of the console, beside the verdict and in the JSON report.
//! A suite whose every path is the reference's (the shipped ones, or a copy
//! of them) is not warned about: its one `note:` line says the reference
//! was started.

use serde_json::Value;

/// The request paths of a suite's text (every `path:` value that starts
/// with `/`, its query cut) that the reference does not serve, in order,
/// each once. Empty when the text does not read (the reader reports that).
pub fn foreign_paths(source: &str) -> Vec<String> {
    let Ok(doc) =
        serde_saphyr::from_str_with_options::<Value>(source, crate::files::yaml_options())
    else {
        return Vec::new();
    };
    let routes = reference_routes();
    let mut paths = Vec::new();
    collect_paths(&doc, &mut paths);
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        let bare = p.split(['?', '#']).next().unwrap_or("").to_owned();
        if !routes.iter().any(|r| route_matches(r, &bare)) && !out.contains(&bare) {
            out.push(bare);
        }
    }
    out
}

/// The warning for a suite run against the reference that was not written
/// for it.
pub fn warning(suite: &str, foreign: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut list = foreign
        .iter()
        .take(SHOWN)
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if foreign.len() > SHOWN {
        list.push_str(&format!(" and {} more", foreign.len() - SHOWN));
    }
    format!(
        "suite `{suite}` runs against the embedded reference integration, not your API: no --target, \
         TMINUS_TARGET or target.base_url was given, and it sends requests to routes the \
         reference does not serve ({list}); give --target URL"
    )
}

fn collect_paths(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match v {
                    Value::String(s) if k == "path" && s.starts_with('/') => out.push(s.clone()),
                    _ => collect_paths(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_paths(v, out)),
        _ => {}
    }
}

/// The reference's routes, from its OpenAPI document.
fn reference_routes() -> Vec<String> {
    let doc: Value = serde_json::from_str(crate::reference::OPENAPI_JSON).unwrap_or(Value::Null);
    doc["paths"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// `/a/{id}/b` matches `/a/7/b`; a suite's `${...}` placeholder matches any
/// one segment (what it will be is not known before the run).
fn route_matches(route: &str, path: &str) -> bool {
    let r: Vec<&str> = route.trim_end_matches('/').split('/').collect();
    let p: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    r.len() == p.len()
        && r.iter().zip(&p).all(|(r, p)| {
            (r.starts_with('{') && r.ends_with('}') && !p.is_empty()) || p.contains("${") || r == p
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suite_for_another_api_names_its_routes() {
        let src = "suite: mine\nchecks:\n  - id: a\n    steps:\n      - request: { method: POST, path: /orders }\n      - request: { path: '/orders/${var.id}?x=1' }\n      - request: { path: /public/v1/contacts }\n      - request: { path: /public/v1/scenarios/7/run }\n      - request: { path: '/public/v1/scenario-runs/${var.run}' }\n      - request: { path: /orders }\n";
        assert_eq!(foreign_paths(src), ["/orders", "/orders/${var.id}"]);
        let w = warning("mine", &foreign_paths(src));
        assert!(w.contains("not your API") && w.contains("`/orders`"), "{w}");
    }

    #[test]
    fn the_shipped_suites_are_the_references() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap();
            assert_eq!(
                foreign_paths(&text),
                Vec::<String>::new(),
                "{}",
                e.path().display()
            );
        }
    }
}
