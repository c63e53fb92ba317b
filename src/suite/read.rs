//! Finding suite files and reading them into `SuiteFile`s, turning every
//! YAML or shape error into a positioned `Diagnostic`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::diagnostic::{suggest, Diagnostic};
use super::model::{SuiteFile, SuiteSeed};
use crate::families::kind_names;

/// A parsed suite with the text it came from (for later diagnostics).
#[derive(Debug)]
pub struct LoadedSuite {
    pub path: PathBuf,
    pub source: String,
    pub file: SuiteFile,
}

/// Expands files and folders into a sorted list of `.yaml`/`.yml` files.
/// Folders are read one level deep: suites live side by side in `suites/`.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Diagnostic> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| Diagnostic::file_level(p, format!("cannot read suite path: {e}")))?;
        if meta.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| Diagnostic::file_level(p, format!("cannot list folder: {e}")))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.is_file()
                        && matches!(
                            f.extension().and_then(|e| e.to_str()),
                            Some("yaml") | Some("yml")
                        )
                })
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(Diagnostic::file_level(p, "folder holds no .yaml suite"));
            }
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
struct KindsOnly {
    #[serde(default)]
    checks: Vec<KindOnly>,
}

#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: Option<Spanned<String>>,
}

/// Reads and parses one suite file.
pub fn load_file(path: &Path) -> Result<LoadedSuite, Diagnostic> {
    let source = std::fs::read_to_string(path)
        .map_err(|e| Diagnostic::file_level(path, format!("cannot read suite: {e}")))?;
    let file = parse_str(path, &source)?;
    Ok(LoadedSuite {
        path: path.to_path_buf(),
        source,
        file,
    })
}

/// Parses suite text; `path` is only used in diagnostics.
///
/// Two passes: the first reads only the `kind` of every check (with its
/// position, so an unknown kind points at itself); the second hands those
/// kinds to [`SuiteSeed`], which deserializes each entry straight into its
/// kind's struct with every position intact.
pub fn parse_str(path: &Path, source: &str) -> Result<SuiteFile, Diagnostic> {
    let kinds: KindsOnly = serde_saphyr::from_str(source).map_err(|e| to_diag(path, source, &e))?;
    let mut names = Vec::with_capacity(kinds.checks.len());
    for c in kinds.checks {
        match c.kind {
            Some(k) if !kind_names().any(|n| n == k.value) => {
                let mut msg = format!("unknown check kind `{}`", k.value);
                if let Some(s) = suggest(&k.value, kind_names()) {
                    msg.push_str(&format!(", did you mean `{s}`?"));
                } else {
                    msg.push_str(" (`tminus checks` lists the kinds)");
                }
                return Err(Diagnostic::new(path, source, k.referenced, msg));
            }
            k => names.push(k.map(|k| k.value)),
        }
    }
    serde_saphyr::with_deserializer_from_str(source, |d| {
        serde::de::DeserializeSeed::deserialize(SuiteSeed { kinds: &names }, d)
    })
    .map_err(|e| to_diag(path, source, &e))
}

fn to_diag(path: &Path, source: &str, err: &serde_saphyr::Error) -> Diagnostic {
    let message = core_message(err);
    let (line, col) = err
        .location()
        .map(|l| (l.line(), l.column()))
        .unwrap_or((0, 0));
    let mut d = Diagnostic::at(path, source, line, col, message.clone());
    if let Some(help) = did_you_mean(&message) {
        d = d.with_help(help);
    }
    d
}

/// The error text without serde-saphyr's own location and snippet, which we
/// render ourselves in one consistent style.
fn core_message(err: &serde_saphyr::Error) -> String {
    let text = err.without_snippet().to_string();
    let first = text.lines().next().unwrap_or("").trim();
    // serde-saphyr appends " at line X column Y"; we print the position apart.
    let cut = first
        .find(" at line ")
        .map(|i| &first[..i])
        .unwrap_or(first);
    let cut = cut.strip_prefix("error: ").unwrap_or(cut);
    cut.to_owned()
}

/// "unknown field `stauts`, expected one of `status`, ..." -> "did you mean `status`?"
fn did_you_mean(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (word, tail) = rest.split_once('`')?;
    let list = tail
        .split_once("expected one of ")
        .or_else(|| tail.split_once("expected "))
        .map(|(_, l)| l)
        .unwrap_or("");
    let expected: Vec<&str> = list
        .split(',')
        .map(|w| w.trim().trim_matches('`'))
        .filter(|w| !w.is_empty() && !w.contains(' '))
        .collect();
    match suggest(word, expected.iter().copied()) {
        Some(s) => Some(format!("did you mean `{s}`?")),
        None if !expected.is_empty() => Some(format!(
            "expected one of {}",
            expected
                .iter()
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Result<SuiteFile, Diagnostic> {
        parse_str(Path::new("t.yaml"), src)
    }

    #[test]
    fn unknown_field_has_position_and_suggestion() {
        let src = "suite: s\nchecks:\n  - id: a\n    steps:\n      - request: { path: / }\n        expect:\n          stauts: 200\n";
        let d = parse(src).unwrap_err();
        assert_eq!(d.line, 7, "{d}");
        assert!(d.message.contains("stauts"), "{d}");
        assert_eq!(d.help.as_deref(), Some("did you mean `status`?"), "{d}");
    }

    #[test]
    fn unknown_kind_suggests() {
        let src = "suite: s\nchecks:\n  - id: a\n    kind: stpes\n    steps: []\n";
        let d = parse(src).unwrap_err();
        assert!(d.message.contains("did you mean `steps`"), "{d}");
        assert!(d.line >= 3, "{d}");
    }

    #[test]
    fn wrong_type_points_at_value() {
        let src = "suite: s\nchecks:\n  - id: a\n    steps:\n      - request: { path: / }\n        expect: { status: fast }\n";
        let d = parse(src).unwrap_err();
        assert_eq!(d.line, 6, "{d}");
        assert!(d.message.contains("invalid status"), "{d}");
    }

    #[test]
    fn good_suite_parses_with_positions() {
        let src = "suite: s\nchecks:\n  - id: a\n    steps:\n      - request: { method: POST, path: /x, json: {a: 1} }\n        expect: { status: [200, 201], headers: { Trace-Id: present }, json: { $.a: 1 } }\n";
        let f = parse(src).unwrap();
        assert_eq!(f.checks.len(), 1);
        assert_eq!(f.checks[0].id().referenced.line(), 3);
    }
}
