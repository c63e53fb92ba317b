//! Templates: `${env.NAME}`, `${secret.NAME}`, `${var.NAME}`, `${uuid}`,
//! `${ulid}`, with an optional shell-style default (`${env.NAME:-fallback}`)
//! and `$${` for a literal `${`.
//!
//! Environment, secrets and suite variables are resolved while planning, so a
//! missing one is reported before anything is sent. What is left for run time
//! is fresh ids, captures from earlier steps, and the mock upstream's address
//! (`${upstream.url}`, `${upstream.host}`, `${upstream.port}`), which only a
//! client command can use: the planner admits them by putting their names
//! ([`UPSTREAM_PLACEHOLDERS`]) among the captures, and they render from the
//! scope like any capture.

use std::collections::{HashMap, HashSet};

use crate::redact::Redactor;

#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    Lit(String),
    /// A value captured by an earlier step of the same check.
    Capture(String),
    Uuid,
    Ulid,
}

/// The run-time names of the mock upstream's address, as captures: a client
/// command's argv and env may use them, nothing else knows them.
pub const UPSTREAM_PLACEHOLDERS: [&str; 3] = ["upstream.url", "upstream.host", "upstream.port"];

/// A compiled template.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Template {
    segments: Vec<Segment>,
}

/// The largest a template may become once its variables are put in.
pub const MAX_EXPANDED: usize = 1024 * 1024;

/// Values captured while a check runs, by name.
pub type Scope = HashMap<String, String>;

/// Where plan-time values come from.
pub struct Resolver<'a> {
    /// Suite variables merged with `--var` (CLI wins), already resolved.
    pub vars: &'a HashMap<String, String>,
    /// Names captured by earlier steps of the check being planned.
    pub captures: &'a HashSet<String>,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub redactor: &'a Redactor,
}

impl Template {
    pub fn literal(text: impl Into<String>) -> Self {
        Template {
            segments: vec![Segment::Lit(text.into())],
        }
    }

    /// Compiles `text`; every problem is returned, not just the first.
    /// Expansion is bounded: a template may not grow past
    /// [`MAX_EXPANDED`] bytes (variables that repeat variables would otherwise
    /// grow exponentially).
    pub fn compile(text: &str, r: &Resolver<'_>) -> Result<Template, Vec<String>> {
        let mut segments = Vec::new();
        let mut errors = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(pos) = rest.find('$') {
            lit.push_str(&rest[..pos]);
            let after = &rest[pos..];
            if let Some(tail) = after.strip_prefix("$${") {
                lit.push_str("${");
                rest = tail;
                continue;
            }
            if !after.starts_with("${") {
                lit.push('$');
                rest = &after[1..];
                continue;
            }
            let Some(end) = after.find('}') else {
                errors.push(format!("unclosed `${{` in `{text}`"));
                lit.push_str(after);
                rest = "";
                break;
            };
            let expr = &after[2..end];
            rest = &after[end + 1..];
            match resolve(expr, r) {
                Ok(Segment::Lit(v)) => {
                    if lit.len() + v.len() + segments.len() > MAX_EXPANDED {
                        errors.push(format!(
                            "`${{{expr}}}` makes this value longer than {} KiB: variables that repeat variables grow too fast",
                            MAX_EXPANDED / 1024
                        ));
                        lit.clear();
                        rest = "";
                        break;
                    }
                    lit.push_str(&v)
                }
                Ok(seg) => {
                    if !lit.is_empty() {
                        segments.push(Segment::Lit(std::mem::take(&mut lit)));
                    }
                    segments.push(seg);
                }
                Err(e) => errors.push(e),
            }
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            segments.push(Segment::Lit(lit));
        }
        if errors.is_empty() {
            Ok(Template { segments })
        } else {
            Err(errors)
        }
    }

    pub fn render(&self, scope: &Scope) -> String {
        let mut out = String::new();
        for s in &self.segments {
            match s {
                Segment::Lit(t) => out.push_str(t),
                Segment::Capture(name) => {
                    out.push_str(scope.get(name).map(String::as_str).unwrap_or(""))
                }
                Segment::Uuid => out.push_str(&uuid::Uuid::new_v4().to_string()),
                Segment::Ulid => out.push_str(&ulid::Ulid::new().to_string()),
            }
        }
        out
    }

    /// The same template with `${uuid}`/`${ulid}` fixed now, so every render
    /// gives the same id (a value the plan used to render once stays one).
    pub fn freeze_fresh(&self) -> Template {
        let mut segments: Vec<Segment> = Vec::new();
        for s in &self.segments {
            let s = match s {
                Segment::Uuid | Segment::Ulid => Segment::Lit(
                    Template {
                        segments: vec![s.clone()],
                    }
                    .render(&Scope::new()),
                ),
                other => other.clone(),
            };
            match (segments.last_mut(), s) {
                (Some(Segment::Lit(prev)), Segment::Lit(t)) => prev.push_str(&t),
                (_, s) => segments.push(s),
            }
        }
        Template { segments }
    }

    /// True when the template reads the capture `name` at run time.
    pub fn uses(&self, name: &str) -> bool {
        self.segments
            .iter()
            .any(|s| matches!(s, Segment::Capture(n) if n == name))
    }

    /// The text when the template has nothing left to resolve at run time.
    pub fn as_literal(&self) -> Option<String> {
        match self.segments.as_slice() {
            [] => Some(String::new()),
            [Segment::Lit(t)] => Some(t.clone()),
            _ => None,
        }
    }
}

fn resolve(expr: &str, r: &Resolver<'_>) -> Result<Segment, String> {
    let (name, default) = match expr.split_once(":-") {
        Some((n, d)) => (n.trim(), Some(d)),
        None => (expr.trim(), None),
    };
    match name {
        "uuid" => return Ok(Segment::Uuid),
        "ulid" => return Ok(Segment::Ulid),
        _ => {}
    }
    let Some((ns, key)) = name.split_once('.') else {
        return Err(format!(
            "unknown placeholder `${{{expr}}}`: use env.NAME, secret.NAME, var.NAME, uuid or ulid"
        ));
    };
    if key.is_empty() {
        return Err(format!("placeholder `${{{expr}}}` has no name"));
    }
    if ns == "upstream" {
        if !UPSTREAM_PLACEHOLDERS.contains(&name) {
            let hint = crate::model::text::suggest(key, ["url", "host", "port"])
                .map(|s| format!(", did you mean `${{upstream.{s}}}`?"))
                .unwrap_or_default();
            return Err(format!(
                "unknown placeholder `${{{expr}}}`: the upstream gives url, host and port{hint}"
            ));
        }
        if default.is_some() {
            return Err(format!(
                "`${{{expr}}}` cannot have a default: the upstream's address is always known when it can be used"
            ));
        }
        return if r.captures.contains(name) {
            Ok(Segment::Capture(name.to_owned()))
        } else {
            Err(format!(
                "`${{{name}}}` is only known in a client check's `client.argv` and `client.env` (the mock upstream binds a fresh port for each run)"
            ))
        };
    }
    match ns {
        "env" => match (r.env)(key).or_else(|| default.map(str::to_owned)) {
            Some(v) => Ok(Segment::Lit(v)),
            None => Err(format!(
                "environment variable `{key}` is not set (used as `${{env.{key}}}`; give a default with `${{env.{key}:-VALUE}}`)"
            )),
        },
        "secret" => match (r.env)(key).or_else(|| default.map(str::to_owned)) {
            Some(v) => {
                r.redactor.add_named(key, &v);
                Ok(Segment::Lit(v))
            }
            None => Err(format!(
                "secret `{key}` is not set: export it as the environment variable `{key}`"
            )),
        },
        "var" => {
            if let Some(v) = r.vars.get(key) {
                Ok(Segment::Lit(v.clone()))
            } else if r.captures.contains(key) {
                Ok(Segment::Capture(key.to_owned()))
            } else if let Some(d) = default {
                Ok(Segment::Lit(d.to_owned()))
            } else {
                let mut known: Vec<&str> = r.vars.keys().map(String::as_str).collect();
                known.extend(r.captures.iter().map(String::as_str));
                let hint = crate::model::text::suggest(key, known)
                    .map(|s| format!(", did you mean `{s}`?"))
                    .unwrap_or_default();
                Err(format!(
                    "variable `{key}` is not defined (not in `vars:`, `--var`, or a capture of an earlier step){hint}"
                ))
            }
        }
        other => Err(format!(
            "unknown placeholder namespace `{other}` in `${{{expr}}}`: use env, secret, var or (in a client command) upstream"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_is_bounded() {
        let mut vars = HashMap::new();
        vars.insert("a".to_owned(), "x".repeat(600 * 1024));
        let caps = HashSet::new();
        let env = |_: &str| None;
        let red = Redactor::new();
        let r = Resolver {
            vars: &vars,
            captures: &caps,
            env: &env,
            redactor: &red,
        };
        let e = Template::compile("${var.a}${var.a}${var.a}", &r).unwrap_err();
        assert!(e[0].contains("longer than 1024 KiB"), "{e:?}");
        assert!(Template::compile("${var.a}", &r).is_ok());
    }

    fn with<T>(f: impl FnOnce(&Resolver<'_>) -> T) -> T {
        let mut vars = HashMap::new();
        vars.insert("who".to_owned(), "world".to_owned());
        let caps: HashSet<String> = ["id".to_owned()].into_iter().collect();
        let env = |k: &str| {
            (k == "HOME_X")
                .then(|| "/h".to_owned())
                .or((k == "TOKEN").then(|| "s3cr3t".to_owned()))
        };
        let red = Redactor::new();
        let r = Resolver {
            vars: &vars,
            captures: &caps,
            env: &env,
            redactor: &red,
        };
        f(&r)
    }

    #[test]
    fn resolves_and_reports() {
        with(|r| {
            let t = Template::compile("hi ${var.who} ${env.HOME_X} $${x} ${var.id}", r).unwrap();
            let mut scope = Scope::new();
            scope.insert("id".into(), "7".into());
            assert_eq!(t.render(&scope), "hi world /h ${x} 7");
            let errs =
                Template::compile("${env.NOPE} ${var.whoo} ${secret.MISSING}", r).unwrap_err();
            assert_eq!(errs.len(), 3);
            assert!(errs[0].contains("`NOPE`"));
            assert!(errs[1].contains("did you mean `who`"));
            assert!(errs[2].contains("secret `MISSING`"));
            assert_eq!(
                Template::compile("${env.NOPE:-d}", r)
                    .unwrap()
                    .as_literal()
                    .unwrap(),
                "d"
            );
        });
    }

    #[test]
    fn upstream_placeholders_only_where_admitted() {
        with(|r| {
            let e = Template::compile("${upstream.url}/x", r).unwrap_err();
            assert!(e[0].contains("only known in a client check"), "{e:?}");
            let e = Template::compile("${upstream.prot}", r).unwrap_err();
            assert!(e[0].contains("did you mean `${upstream.port}`"), "{e:?}");
        });
        let vars = HashMap::new();
        let caps: HashSet<String> = UPSTREAM_PLACEHOLDERS
            .iter()
            .map(|s| s.to_string())
            .collect();
        let env = |_: &str| None;
        let red = Redactor::new();
        let r = Resolver {
            vars: &vars,
            captures: &caps,
            env: &env,
            redactor: &red,
        };
        let t = Template::compile("--id=${uuid} ${upstream.host}:${upstream.port}", &r)
            .unwrap()
            .freeze_fresh();
        assert!(t.uses("upstream.port") && !t.uses("upstream.url"));
        let mut scope = Scope::new();
        scope.insert("upstream.host".into(), "127.0.0.1".into());
        scope.insert("upstream.port".into(), "9".into());
        let (a, b) = (t.render(&scope), t.render(&scope));
        assert_eq!(a, b, "the id is fixed once");
        assert!(a.ends_with(" 127.0.0.1:9"), "{a}");
    }

    #[test]
    fn secrets_are_registered() {
        with(|r| {
            Template::compile("Bearer ${secret.TOKEN}", r).unwrap();
            assert_eq!(r.redactor.redact("Bearer s3cr3t"), "Bearer [REDACTED]");
        });
    }
}
