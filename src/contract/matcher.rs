//! Which operation a request is: its method and path matched against the
//! document's path templates (`/scenarios/{id}/run`), under the base path of
//! the document's servers (`https://api.example.com/v1` serves `/v1/...`).
//! A concrete path wins over a templated one (`/messages/count` before
//! `/messages/{id}`), as OpenAPI requires.

use serde_json::Value;

/// One segment of a path template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    /// `{id}`, or a segment mixing text and parameters (`{name}.json`):
    /// the literal text before and after the first and last parameter.
    Param {
        prefix: String,
        suffix: String,
    },
}

/// A path template, ready to match.
#[derive(Debug, Clone)]
pub struct Template {
    pub text: String,
    segments: Vec<Segment>,
}

impl Template {
    pub fn parse(text: &str) -> Template {
        let segments = split(text)
            .map(|s| match (s.find('{'), s.rfind('}')) {
                (Some(a), Some(b)) if a < b => Segment::Param {
                    prefix: s[..a].to_owned(),
                    suffix: s[b + 1..].to_owned(),
                },
                _ => Segment::Literal(s.to_owned()),
            })
            .collect();
        Template {
            text: text.to_owned(),
            segments,
        }
    }

    /// How well `path` matches: `None` when it does not, else the number of
    /// literal segments (more is more specific).
    fn score(&self, path: &[&str]) -> Option<usize> {
        if path.len() != self.segments.len() {
            return None;
        }
        let mut literal = 0;
        for (seg, got) in self.segments.iter().zip(path) {
            match seg {
                Segment::Literal(l) if l == got => literal += 1,
                Segment::Literal(_) => return None,
                Segment::Param { prefix, suffix } => {
                    let ok = got.len() > prefix.len() + suffix.len()
                        && got.starts_with(prefix.as_str())
                        && got.ends_with(suffix.as_str());
                    if !ok {
                        return None;
                    }
                }
            }
        }
        Some(literal)
    }
}

fn split(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// The base paths of the document's `servers` (`/v1`; empty for `/` or no
/// servers), with server variables at their defaults.
pub fn base_paths(root: &Value) -> Vec<String> {
    own_base_paths(root).unwrap_or_else(|| vec![String::new()])
}

/// The base paths of `v`'s own `servers` (a path item's or an operation's,
/// which override the document's, OpenAPI 3.x §4.8.9 and §4.8.10), `None`
/// when it declares none.
pub fn own_base_paths(v: &Value) -> Option<Vec<String>> {
    let mut out: Vec<String> = v
        .get("servers")
        .and_then(Value::as_array)
        .map(|servers| servers.iter().filter_map(server_path).collect())
        .unwrap_or_default();
    if out.is_empty() {
        return None;
    }
    out.sort();
    out.dedup();
    Some(out)
}

fn server_path(server: &Value) -> Option<String> {
    let mut url = server.get("url")?.as_str()?.to_owned();
    if let Some(vars) = server.get("variables").and_then(Value::as_object) {
        for (name, var) in vars {
            if let Some(d) = var.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("{{{name}}}"), d);
            }
        }
    }
    // `https://host/v1` -> `/v1`; `/v1` and `v1` stay paths.
    let path = match url.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("", |i| &rest[i..]).to_owned(),
        None => url,
    };
    let path = path
        .split(['?', '#'])
        .next()
        .unwrap_or("")
        .trim_end_matches('/');
    Some(if path.is_empty() || path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    })
}

/// Picks the best of `templates` for `path` (a URL path, without query),
/// trying each template's base paths (its own servers', else `bases`):
/// the index of the most specific match.
pub fn best<'a>(
    templates: impl Iterator<Item = (usize, &'a Template, Option<&'a [String]>)>,
    bases: &[String],
    path: &str,
) -> Option<usize> {
    let rests = |bases: &[String]| -> Vec<Vec<&str>> {
        bases
            .iter()
            .filter_map(|b| {
                let rest = path.strip_prefix(b.as_str())?;
                (rest.is_empty() || rest.starts_with('/')).then(|| split(rest).collect())
            })
            .collect()
    };
    let shared = rests(bases);
    templates
        .filter_map(|(i, t, own)| {
            let own_rests;
            let rs = match own {
                Some(b) => {
                    own_rests = rests(b);
                    &own_rests
                }
                None => &shared,
            };
            rs.iter().filter_map(|r| t.score(r)).max().map(|s| (s, i))
        })
        // Most literal segments first; the first declared among equals.
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, i)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pick(templates: &[&str], bases: &[&str], path: &str) -> Option<String> {
        let ts: Vec<Template> = templates.iter().map(|t| Template::parse(t)).collect();
        let bases: Vec<String> = bases.iter().map(|b| b.to_string()).collect();
        best(
            ts.iter().enumerate().map(|(i, t)| (i, t, None)),
            &bases,
            path,
        )
        .map(|i| templates[i].to_owned())
    }

    #[test]
    fn templates_match_segments_and_literals_win() {
        let ts = [
            "/messages/{id}",
            "/messages/count",
            "/files/{name}.json",
            "/a/{x}/b",
        ];
        assert_eq!(
            pick(&ts, &[""], "/messages/count").as_deref(),
            Some("/messages/count")
        );
        assert_eq!(
            pick(&ts, &[""], "/messages/m1").as_deref(),
            Some("/messages/{id}")
        );
        assert_eq!(
            pick(&ts, &[""], "/files/x.json").as_deref(),
            Some("/files/{name}.json")
        );
        assert_eq!(pick(&ts, &[""], "/files/.json"), None);
        assert_eq!(pick(&ts, &[""], "/a/1/b").as_deref(), Some("/a/{x}/b"));
        assert_eq!(pick(&ts, &[""], "/a/1/c"), None);
        assert_eq!(pick(&ts, &[""], "/messages"), None);
    }

    #[test]
    fn server_base_paths_are_stripped() {
        let root = json!({"servers": [
            {"url": "https://api.example.com/{version}/", "variables": {"version": {"default": "v2"}}},
            {"url": "/"}
        ]});
        assert_eq!(base_paths(&root), vec!["".to_string(), "/v2".to_string()]);
        let ts = ["/pets/{id}"];
        assert_eq!(
            pick(&ts, &["/v2"], "/v2/pets/7").as_deref(),
            Some("/pets/{id}")
        );
        assert_eq!(pick(&ts, &["/v2"], "/pets/7"), None);
        assert_eq!(pick(&ts, &["/v2"], "/v2x/pets/7"), None);
        assert_eq!(base_paths(&json!({})), vec![String::new()]);
        assert_eq!(own_base_paths(&json!({"servers": []})), None);
        // A template's own servers replace the document's for it.
        let ts: Vec<Template> = ["/pets/{id}", "/files/{id}"]
            .iter()
            .map(|t| Template::parse(t))
            .collect();
        let files = vec!["/uploads".to_string()];
        let own = [None, Some(files.as_slice())];
        let pick_own = |path: &str| {
            best(
                ts.iter().enumerate().map(|(i, t)| (i, t, own[i])),
                &["/v2".to_string()],
                path,
            )
        };
        assert_eq!(pick_own("/v2/pets/7"), Some(0));
        assert_eq!(pick_own("/uploads/files/7"), Some(1));
        assert_eq!(pick_own("/v2/files/7"), None);
    }
}
