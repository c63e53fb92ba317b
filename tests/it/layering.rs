//! Imports point down (issue 25 step 5). Every `crate::`, `$crate::` and
//! `super::` path in `src/`, outside `#[cfg(test)]` code, is resolved to the
//! module it names and checked against [`LAYERS`]: a module may use its own
//! layer and the layers below it (a layer with an explicit list, only those),
//! never one above; the families are isolated from each other. A new
//! top-level module must be given a layer here and in docs/architecture.md,
//! which shows the same table (checked below).
//!
//! Test code is exempt: a unit test may drive the whole stack (plan a suite
//! through the driver to test one family's defaults).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One row of the layer table, top to bottom.
struct Layer {
    name: &'static str,
    /// Module paths (`families::common`); the longest match wins, and
    /// `families::*` is every direct child of `families` not named elsewhere.
    modules: &'static [&'static str],
    /// `None`: every layer below. `Some`: only these (all below).
    may_import: Option<&'static [&'static str]>,
    /// The modules of this layer may not import each other (each family
    /// is a vertical slice that sees only the layers below).
    isolated: bool,
}

const fn layer(name: &'static str, modules: &'static [&'static str]) -> Layer {
    Layer {
        name,
        modules,
        may_import: None,
        isolated: false,
    }
}

/// The layers, top to bottom (docs/architecture.md shows this table).
const LAYERS: &[Layer] = &[
    layer(
        "face",
        &["main", "cli", "app", "init", "certify", "serve", "fit"],
    ),
    // `tminus compare` (issue 27): reads the bursts' figure files through
    // the load family, renders with the reporters' escapers and plots.
    layer("comparison", &["compare"]),
    Layer {
        // The embedded reference integration: used by the face only, and it
        // never uses a family (it is what the families are proven against).
        may_import: Some(&["roles", "verdicts", "http", "values", "base"]),
        ..layer("beside", &["reference"])
    },
    layer("reporters", &["report"]),
    layer("certification", &["bundle"]),
    layer("runner", &["run", "events", "cost"]),
    layer("reader and driver", &["suite", "plan"]),
    layer("registry", &["families"]),
    Layer {
        isolated: true,
        ..layer("families", &["families::*"])
    },
    layer("family support", &["families::common"]),
    layer("context", &["context"]),
    layer("vocabulary", &["spec"]),
    layer("roles", &["upstream", "sink", "double", "signing"]),
    // The OpenAPI contract (issue 26): the driver loads it, the runner
    // hooks it into the probe's client; it judges with outcome and http.
    layer("contract", &["contract"]),
    layer(
        "verdicts",
        &["outcome", "waiver", "coverage", "catalogue", "chance"],
    ),
    layer("http", &["http", "logs"]),
    layer("values", &["model", "redact"]),
    // `""`: the crate root (`lib.rs`), which holds `fmt_duration`.
    layer("base", &["files", "exit", "fmt_duration", ""]),
];

/// A module path resolved to its layer: (layer index, unit). The unit is the
/// table entry it matched (`families::trace` for `families::*`). `modules`
/// are the crate's modules: `a::*` matches only a child module of `a`
/// (`families::trace`), not an item of `a` (`families::CheckPlan`).
fn layer_of(module: &[String], modules: &[Vec<String>]) -> Option<(usize, String)> {
    let mut best: Option<(usize, usize, String)> = None; // (specificity, layer, unit)
    for (i, l) in LAYERS.iter().enumerate() {
        for m in l.modules {
            let (unit, spec) = if let Some(parent) = m.strip_suffix("::*") {
                match module {
                    [p, child, ..]
                        if p == parent && modules.iter().any(|m| m.starts_with(&module[..2])) =>
                    {
                        (format!("{p}::{child}"), 4)
                    }
                    _ => continue,
                }
            } else if m.is_empty() {
                if !module.is_empty() {
                    continue;
                }
                (String::new(), 0)
            } else {
                let parts: Vec<&str> = m.split("::").collect();
                if module.len() < parts.len() || module[..parts.len()] != parts[..] {
                    continue;
                }
                // Deeper wins; an exact entry beats a wildcard (`a::*`
                // counts as depth 2) of the same depth.
                (m.to_string(), parts.len() * 2 + 1)
            };
            if best.as_ref().is_none_or(|b| spec > b.0) {
                best = Some((spec, i, unit));
            }
        }
    }
    best.map(|(_, i, u)| (i, u))
}

fn layer_index(name: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.name == name)
        .unwrap_or_else(|| panic!("no layer `{name}`"))
}

/// Whether a module of layer `from` (unit `from_unit`) may use one of layer
/// `to` (unit `to_unit`).
fn allowed(from: usize, from_unit: &str, to: usize, to_unit: &str) -> bool {
    let l = &LAYERS[from];
    if from == to {
        return !l.isolated || from_unit == to_unit;
    }
    match l.may_import {
        None => to > from,
        Some(names) => names.iter().any(|n| layer_index(n) == to),
    }
}

/// A path that points where its layer may not.
#[derive(Debug, PartialEq)]
struct Violation {
    file: String,
    line: usize,
    path: String,
    why: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: `{}`: {}",
            self.file, self.line, self.path, self.why
        )
    }
}

/// The module a source file is (`src/families/trace/plan.rs`:
/// `families::trace::plan`; `src/lib.rs`: the root).
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.strip_prefix("src/").unwrap_or(rel);
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Source with comments blanked and string contents lifted out (positions and
/// line breaks kept), so braces and paths are read from code only; the
/// strings are kept to find paths in attributes (`with = "crate::x::T"`).
struct Lexed {
    code: Vec<char>,
    /// (offset of the opening quote, contents)
    strings: Vec<(usize, String)>,
}

fn lex(src: &str) -> Lexed {
    let s: Vec<char> = src.chars().collect();
    let mut code = s.clone();
    let mut strings = Vec::new();
    let blank = |code: &mut Vec<char>, a: usize, b: usize| {
        for c in &mut code[a..b.min(s.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = s[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(s.len(), |p| i + p);
            blank(&mut code, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut j, mut depth) = (i + 2, 1);
            while j < s.len() && depth > 0 {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut code, i, j);
            i = j;
        } else if (c == 'r' || (c == 'b' && next == Some('r'))) && (i == 0 || !ident(s[i - 1])) && {
            let k = i + if c == 'b' { 2 } else { 1 };
            let hashes = s[k..].iter().take_while(|&&c| c == '#').count();
            s.get(k + hashes) == Some(&'"')
        } {
            let k = i + if c == 'b' { 2 } else { 1 };
            let hashes = s[k..].iter().take_while(|&&c| c == '#').count();
            let open = k + hashes;
            let mut j = open + 1;
            let end = loop {
                if j >= s.len() {
                    break s.len();
                }
                if s[j] == '"'
                    && s[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == '#')
                        .count()
                        == hashes
                {
                    break j;
                }
                j += 1;
            };
            strings.push((open, s[open + 1..end].iter().collect()));
            blank(&mut code, open + 1, end);
            i = (end + 1 + hashes).min(s.len());
        } else if c == '"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            let end = j.min(s.len());
            strings.push((i, s[i + 1..end].iter().collect()));
            blank(&mut code, i + 1, end);
            i = end + 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}'), else a lifetime.
            let end = if next == Some('\\') {
                s[i + 2..]
                    .iter()
                    .position(|&c| c == '\'')
                    .map(|p| i + 2 + p)
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    blank(&mut code, i + 1, e);
                    i = e + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    Lexed { code, strings }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn skip_ws(s: &[char], i: &mut usize) {
    while *i < s.len() && s[*i].is_whitespace() {
        *i += 1;
    }
}

fn word_at(s: &[char], i: usize, w: &str) -> bool {
    let w: Vec<char> = w.chars().collect();
    s.len() >= i + w.len()
        && s[i..i + w.len()] == w[..]
        && (i == 0 || !is_ident(s[i - 1]))
        && s.get(i + w.len()).is_none_or(|&c| !is_ident(c))
}

/// Reads a use tree (`a::b`, `{a, b::{c, d}}`, `*`) at `i` under `prefix`.
fn use_tree(s: &[char], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    skip_ws(s, i);
    if s.get(*i) == Some(&'{') {
        *i += 1;
        loop {
            skip_ws(s, i);
            match s.get(*i) {
                None => return,
                Some('}') => {
                    *i += 1;
                    return;
                }
                Some(',') => *i += 1,
                _ => {
                    let before = *i;
                    use_tree(s, i, prefix.clone(), out);
                    if *i == before {
                        *i += 1;
                    }
                }
            }
        }
    }
    let start = *i;
    while *i < s.len() && is_ident(s[*i]) {
        *i += 1;
    }
    let word: String = s[start..*i].iter().collect();
    if word.is_empty() || word == "self" {
        if s.get(*i) == Some(&'*') {
            *i += 1;
        }
        out.push(prefix);
        return;
    }
    let mut path = prefix;
    path.push(word);
    if s.get(*i) == Some(&':') && s.get(*i + 1) == Some(&':') {
        *i += 2;
        use_tree(s, i, path, out);
    } else {
        out.push(path);
        // `a::B as C`: the alias names nothing.
        let mut j = *i;
        skip_ws(s, &mut j);
        if word_at(s, j, "as") {
            j += 2;
            skip_ws(s, &mut j);
            while j < s.len() && is_ident(s[j]) {
                j += 1;
            }
            *i = j;
        }
    }
}

/// Every module path named at `at` in `s` (after `crate::` or `super::`),
/// resolved from module `here`; `None` when no path starts there.
fn paths_at(s: &[char], at: usize, here: &[String]) -> Option<(String, Vec<Vec<String>>)> {
    let (mut i, base) = if word_at(s, at, "crate") {
        (at + 5, Vec::new())
    } else if word_at(s, at, "super") {
        let mut base = here.to_vec();
        let mut i = at;
        while word_at(s, i, "super") && s.get(i + 5) == Some(&':') && s.get(i + 6) == Some(&':') {
            base.pop();
            i += 7;
        }
        (i.saturating_sub(2), base)
    } else {
        return None;
    };
    if s.get(i) != Some(&':') || s.get(i + 1) != Some(&':') {
        return None;
    }
    i += 2;
    let mut out = Vec::new();
    let start = at;
    use_tree(s, &mut i, base, &mut out);
    let text: String = s[start..i.min(s.len())].iter().collect();
    Some((text.split_whitespace().collect::<Vec<_>>().join(" "), out))
}

/// The offset of the bracket that closes the one `open` at `i` (`s.len()`
/// when none does).
fn closing(s: &[char], i: usize, open: char, close: char) -> usize {
    let mut depth = 0;
    for (j, &c) in s.iter().enumerate().skip(i) {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return j;
            }
        }
    }
    s.len()
}

/// The end (exclusive) of the item that starts at `i`: the first `;`, or the
/// brace group that opens before it.
fn item_end(s: &[char], mut i: usize) -> usize {
    while i < s.len() {
        match s[i] {
            ';' => return i + 1,
            '{' => return (closing(s, i, '{', '}') + 1).min(s.len()),
            _ => i += 1,
        }
    }
    s.len()
}

/// `#[cfg(test)]` items of a file: the ranges they cover, and the names of
/// file modules they declare (`#[cfg(test)] mod tests;`).
fn test_only(s: &[char]) -> (Vec<(usize, usize)>, Vec<String>) {
    let (mut ranges, mut mods) = (Vec::new(), Vec::new());
    let text: String = s.iter().collect();
    for start in cfg_test_attributes(&text) {
        let mut i = start;
        // Past this attribute and any that follow.
        loop {
            skip_ws(s, &mut i);
            if s.get(i) == Some(&'#') {
                let close = s[i..]
                    .iter()
                    .position(|&c| c == ']')
                    .map_or(s.len(), |p| i + p + 1);
                i = close;
            } else {
                break;
            }
        }
        let end = item_end(s, i);
        let item: String = s[i..end].iter().collect();
        let words: Vec<&str> = item.split_whitespace().collect();
        let decl = words
            .iter()
            .position(|w| *w == "mod")
            .filter(|&p| p <= 1 && item.trim_end().ends_with(';'));
        if let Some(p) = decl {
            if let Some(name) = words.get(p + 1) {
                mods.push(name.trim_end_matches(';').to_owned());
            }
        }
        ranges.push((start, end));
    }
    (ranges, mods)
}

/// Offsets of every `#[cfg(test)]` (spaces allowed inside).
fn cfg_test_attributes(text: &str) -> Vec<usize> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        if c != '#' {
            continue;
        }
        let rest: String = chars[i + 1..]
            .iter()
            .take(40)
            .filter(|c| !c.is_whitespace())
            .collect();
        if rest.starts_with("[cfg(test)]") {
            out.push(i);
        }
    }
    out
}

/// The ranges of attributes (`#[...]`, `#![...]`) in lexed code.
fn attributes(s: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let open = match (s[i], s.get(i + 1), s.get(i + 2)) {
            ('#', Some('['), _) => i + 1,
            ('#', Some('!'), Some('[')) => i + 2,
            _ => {
                i += 1;
                continue;
            }
        };
        let j = closing(s, open, '[', ']');
        out.push((i, j));
        i = j.max(i + 1);
    }
    out
}

/// What [`check`] found: the violations, and how many paths it resolved.
struct Checked {
    violations: Vec<Violation>,
    paths: usize,
}

/// Checks every file (`src/...` relative path, source text).
fn check(files: &[(String, String)]) -> Checked {
    let mut out = Vec::new();
    let mut seen = 0;
    let mut test_modules: Vec<Vec<String>> = Vec::new();
    let lexed: Vec<(String, Vec<String>, Lexed)> = files
        .iter()
        .map(|(rel, src)| (rel.clone(), module_of(rel), lex(src)))
        .collect();
    let modules: Vec<Vec<String>> = lexed.iter().map(|(_, m, _)| m.clone()).collect();
    for (_, module, l) in &lexed {
        for m in test_only(&l.code).1 {
            let mut p = module.clone();
            p.push(m);
            test_modules.push(p);
        }
    }
    for (rel, module, l) in &lexed {
        if test_modules.iter().any(|t| module.starts_with(t)) {
            continue;
        }
        let Some((from, from_unit)) = layer_of(module, &modules) else {
            out.push(Violation {
                file: rel.clone(),
                line: 1,
                path: module.join("::"),
                why: "this module is in no layer: add it to LAYERS (tests/it/layering.rs) and docs/architecture.md".into(),
            });
            continue;
        };
        let (tests, _) = test_only(&l.code);
        let s = &l.code;
        let attrs = attributes(s);
        let line_of = |at: usize| 1 + s[..at].iter().filter(|&&c| c == '\n').count();
        let report = |at: usize,
                      text: String,
                      paths: Vec<Vec<String>>,
                      out: &mut Vec<Violation>,
                      seen: &mut usize| {
            for p in paths {
                *seen += 1;
                let why = match layer_of(&p, &modules) {
                    None => format!(
                        "`{}` is in no layer: add it to LAYERS (tests/it/layering.rs) and docs/architecture.md",
                        p.join("::")
                    ),
                    Some((to, to_unit)) if !allowed(from, &from_unit, to, &to_unit) => format!(
                        "{} ({}) may not use {} ({}){}",
                        module.join("::"),
                        LAYERS[from].name,
                        p.join("::"),
                        LAYERS[to].name,
                        if from == to { ": the families see only the layers below them" } else { "" }
                    ),
                    Some(_) => continue,
                };
                out.push(Violation {
                    file: rel.clone(),
                    line: line_of(at),
                    path: text.clone(),
                    why,
                });
            }
        };
        // Inline modules (`pub mod defaults { ... }`) change what `super` means.
        let mut stack: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let strings: BTreeMap<usize, &String> = l.strings.iter().map(|(o, t)| (*o, t)).collect();
        let mut i = 0;
        while i < s.len() {
            if let Some(&(_, end)) = tests.iter().find(|(a, _)| *a == i) {
                i = end;
                continue;
            }
            let here: Vec<String> = module
                .iter()
                .cloned()
                .chain(stack.iter().map(|(m, _)| m.clone()))
                .collect();
            match s[i] {
                '{' => {
                    depth += 1;
                    let before: String = s[i.saturating_sub(80)..i].iter().collect();
                    let words: Vec<&str> = before.split_whitespace().collect();
                    if let [.., "mod", name] = words.as_slice() {
                        if name.chars().all(is_ident) {
                            stack.push((name.to_string(), depth));
                        }
                    }
                }
                '}' => {
                    if stack.last().is_some_and(|(_, d)| *d == depth) {
                        stack.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                // Paths in strings count only in attributes (`with = "..."`),
                // not in messages.
                '"' if attrs.iter().any(|(a, b)| *a < i && i < *b) => {
                    if let Some(text) = strings.get(&i) {
                        let t: Vec<char> = text.chars().collect();
                        for j in 0..t.len() {
                            if let Some((p, paths)) = paths_at(&t, j, &here) {
                                report(i, p, paths, &mut out, &mut seen);
                            }
                        }
                    }
                }
                _ => {
                    if let Some((p, paths)) = paths_at(s, i, &here) {
                        report(i, p, paths, &mut out, &mut seen);
                    }
                }
            }
            i += 1;
        }
    }
    Checked {
        violations: out,
        paths: seen,
    }
}

fn source_files(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            source_files(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/");
            let src =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            out.push((rel, src));
        }
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_import_in_src_points_down() {
    let mut files = Vec::new();
    source_files(&repo().join("src"), repo(), &mut files);
    assert!(files.len() > 100, "only {} files under src/", files.len());
    let checked = check(&files);
    // A lexer that saw nothing would pass too.
    assert!(
        checked.paths > 1000,
        "only {} crate paths found",
        checked.paths
    );
    let v = checked.violations;
    assert!(
        v.is_empty(),
        "{} import(s) point up or sideways (docs/architecture.md):\n  {}",
        v.len(),
        v.iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

/// The checker itself: it finds an upward import wherever one can hide, and
/// only there.
#[test]
fn an_upward_or_sideways_import_is_caught() {
    let files = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect()
    };
    let found = |list: &[(&str, &str)]| -> Vec<(String, usize)> {
        check(&files(list))
            .violations
            .into_iter()
            .map(|v| (v.file, v.line))
            .collect()
    };
    // Down is fine, in every spelling.
    let down = "use crate::http::{Client, quota::DeclaredQuota};\nuse crate::model::{self, text::suggest};\nfn f() -> crate::outcome::Outcome { todo!() }\nconst S: &str = \"crate::plan::Plan in a message\";\n";
    assert_eq!(found(&[("src/families/trace/x.rs", down)]), []);
    // An alias is no path of its own.
    assert_eq!(
        check(&files(&[(
            "src/http/x.rs",
            "use crate::model::{text::suggest as s, scalar};\n"
        )]))
        .paths,
        2
    );
    // Up, from the vocabulary to the driver, in a nested use tree.
    assert_eq!(
        found(&[(
            "src/spec/x.rs",
            "use crate::{model::scalar, plan::{Plan, PlanOptions}};\n"
        )]),
        [("src/spec/x.rs".into(), 1), ("src/spec/x.rs".into(), 1)]
    );
    // Sideways, from one family into another.
    assert_eq!(
        found(&[
            (
                "src/families/rate_limit/exec.rs",
                "\n\nlet b = crate::families::load::exec::is_loopback(u);\n"
            ),
            ("src/families/load/exec.rs", "pub fn is_loopback() {}\n"),
        ]),
        [("src/families/rate_limit/exec.rs".into(), 3)]
    );
    // Into the registry through `super`, from the family support module...
    assert_eq!(
        found(&[("src/families/common.rs", "use super::CheckContext;\n")]),
        [("src/families/common.rs".into(), 1)]
    );
    // ...while `super` inside an inline module stays in its file.
    assert_eq!(
        found(&[(
            "src/families/common.rs",
            "pub mod inner {\n    use super::send;\n}\n"
        )]),
        []
    );
    // In a macro (`$crate::`) and in an attribute string.
    assert_eq!(
        found(&[(
            "src/model/x.rs",
            "macro_rules! m { () => { $crate::run::go() } }\n#[schemars(with = \"crate::suite::SuiteFile\")]\nstruct S;\n"
        )]),
        [("src/model/x.rs".into(), 1), ("src/model/x.rs".into(), 2)]
    );
    // Comments and test code are not imports; code after a test module is.
    let mixed = "// use crate::plan::Plan;\n/* crate::run */\n#[cfg(test)]\nmod tests {\n    use crate::plan::build;\n    fn f() { let s = \"}\"; }\n}\nuse crate::report::Reporter;\n";
    assert_eq!(
        found(&[("src/http/x.rs", mixed)]),
        [("src/http/x.rs".into(), 8)]
    );
    // A file declared `#[cfg(test)] mod tests;` is test code.
    assert_eq!(
        found(&[
            ("src/http/mod.rs", "#[cfg(test)]\nmod tests;\n"),
            ("src/http/tests.rs", "use crate::plan::build;\n"),
        ]),
        []
    );
    // The reference never uses a family, though it sits high.
    assert_eq!(
        found(&[(
            "src/reference/x.rs",
            "use crate::signing::Scheme;\nuse crate::families::trace::spec::IdFormat;\n"
        )]),
        [("src/reference/x.rs".into(), 2)]
    );
    // A module the table does not know, and a path to one.
    assert_eq!(
        found(&[("src/brand_new.rs", "")]),
        [("src/brand_new.rs".into(), 1)]
    );
    assert_eq!(
        found(&[("src/http/x.rs", "use crate::brand_new::Thing;\n")]),
        [("src/http/x.rs".into(), 1)]
    );
}

/// Every layer's explicit list names only layers below it, so the table
/// itself cannot allow an upward import.
#[test]
fn the_table_only_points_down() {
    for (i, l) in LAYERS.iter().enumerate() {
        for n in l.may_import.unwrap_or_default() {
            assert!(
                layer_index(n) > i,
                "`{}` may import `{n}`, which is not below it",
                l.name
            );
        }
        for m in l.modules {
            let owners: Vec<&str> = LAYERS
                .iter()
                .filter(|o| o.modules.contains(m))
                .map(|o| o.name)
                .collect();
            assert_eq!(owners.len(), 1, "`{m}` is in {owners:?}");
        }
    }
    let path = |m: &str| m.split("::").map(str::to_owned).collect::<Vec<_>>();
    let known = [path("families::trace"), path("families::common")];
    let of = |m: &str| layer_of(&path(m), &known);
    assert_eq!(of("families").map(|l| LAYERS[l.0].name), Some("registry"));
    assert_eq!(
        of("families::trace::plan").map(|l| l.1),
        Some("families::trace".into())
    );
    assert_eq!(
        of("families::common").map(|l| LAYERS[l.0].name),
        Some("family support")
    );
    // An item of the registry is the registry's, not a family.
    assert_eq!(
        of("families::CheckPlan").map(|l| LAYERS[l.0].name),
        Some("registry")
    );
    assert_eq!(of("fmt_duration").map(|l| LAYERS[l.0].name), Some("base"));
}

/// docs/architecture.md shows this table, row for row.
#[test]
fn the_architecture_doc_shows_the_table() {
    let doc =
        std::fs::read_to_string(repo().join("docs/architecture.md")).expect("docs/architecture.md");
    let rows: Vec<Vec<String>> = doc
        .lines()
        .skip_while(|l| !l.starts_with("| layer |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().replace('`', ""))
                .collect()
        })
        .collect();
    let want: Vec<Vec<String>> = LAYERS
        .iter()
        .map(|l| {
            let modules = l
                .modules
                .iter()
                .map(|m| if m.is_empty() { "lib.rs" } else { m })
                .collect::<Vec<_>>()
                .join(", ");
            let may = match l.may_import {
                None if LAYERS.last().is_some_and(|x| x.name == l.name) => "nothing".to_owned(),
                None => "every layer below".to_owned(),
                Some(n) => n.join(", "),
            };
            let may = if l.isolated {
                format!("{may}; not each other")
            } else {
                may
            };
            vec![l.name.to_owned(), modules, may]
        })
        .collect();
    let show = |rows: &[Vec<String>]| {
        rows.iter()
            .map(|r| format!("| {} |", r.join(" | ")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        show(&rows),
        show(&want),
        "docs/architecture.md's layer table differs from LAYERS"
    );
}
