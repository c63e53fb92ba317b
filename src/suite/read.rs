//! Finding suite files and reading them into `SuiteFile`s, turning every
//! YAML or shape error into a positioned `Diagnostic`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::defaults::{check_block, DefaultsBlock, Inheritance};
use super::model::{SuiteFile, SuiteSeed};
use crate::families::kind_names;
use crate::spec::diagnostic::{suggest, Diagnostic};

/// A parsed suite with the text it came from (for later diagnostics).
#[derive(Debug)]
pub struct SuiteSource {
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
    #[serde(default)]
    defaults: Option<DefaultsBlock>,
}

#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: Option<Spanned<String>>,
}

/// Reads and parses one suite file.
pub fn read_suite(path: &Path) -> Result<SuiteSource, Diagnostic> {
    let bytes = crate::files::read_file_capped(path, crate::files::MAX_SUITE_BYTES)
        .map_err(|e| Diagnostic::file_level(path, format!("cannot read suite: {e}")))?;
    let source = decode(path, bytes)?;
    let file = parse_str(path, &source)?;
    Ok(SuiteSource {
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
    let kinds: KindsOnly =
        serde_saphyr::from_str_with_options(source, crate::files::yaml_options())
            .map_err(|e| to_diag(path, source, &e))?;
    let mut names = Vec::with_capacity(kinds.checks.len());
    for c in &kinds.checks {
        match &c.kind {
            Some(k) if !kind_names().any(|n| n == k.value) => {
                let mut msg = format!("unknown check kind `{}`", k.value);
                if let Some(s) = suggest(&k.value, kind_names()) {
                    msg.push_str(&format!(", did you mean `{s}`?"));
                } else {
                    msg.push_str(" (`tminus checks` lists the kinds)");
                }
                return Err(Diagnostic::new(path, source, k.referenced, msg));
            }
            k => names.push(k.as_ref().map(|k| k.value.clone())),
        }
    }
    if let Some(block) = &kinds.defaults {
        check_block(path, source, block)?;
    }
    let inherit = Inheritance::new(source, kinds.defaults.as_ref());
    serde_saphyr::with_deserializer_from_str_with_options(
        source,
        crate::files::yaml_options(),
        |d| {
            serde::de::DeserializeSeed::deserialize(
                SuiteSeed {
                    kinds: &names,
                    inherit: &inherit,
                },
                d,
            )
        },
    )
    .map_err(|e| {
        // An error inside an inherited default is shown where it is written.
        let inner = inherit.take_failure();
        to_diag(path, source, inner.as_ref().unwrap_or(&e))
    })
}

/// The file's text, or an error at the line and column of its first byte that
/// is not UTF-8.
fn decode(path: &Path, bytes: Vec<u8>) -> Result<String, Diagnostic> {
    String::from_utf8(bytes).map_err(|e| {
        let good = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let before = String::from_utf8_lossy(&bytes[..good]);
        let line = before.matches('\n').count() as u64 + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u64 + 1;
        let lossy = String::from_utf8_lossy(bytes);
        Diagnostic::at(
            path,
            &lossy,
            line,
            column,
            format!(
                "the suite is not valid UTF-8 (byte 0x{:02x}): save it as UTF-8",
                bytes[good]
            ),
        )
    })
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
    in_our_words(cut)
}

/// serde-saphyr's messages speak to Rust programmers ("use Option<String>",
/// "set DuplicateKeyPolicy in Options"); a suite author gets these instead.
fn in_our_words(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("duplicate mapping key") {
        let key = rest
            .split(", set DuplicateKeyPolicy")
            .next()
            .unwrap_or("")
            .trim_start_matches(':')
            .trim();
        return match key {
            "" => "the same key is written twice in this mapping".to_owned(),
            k => format!("key `{k}` is written twice in this mapping"),
        };
    }
    if message.contains("cannot deserialize null into string") {
        return "a value is required here (found nothing or `null`)".to_owned();
    }
    if message.contains("invalid char: cannot deserialize null") {
        return "a single character is required here (found nothing or `null`)".to_owned();
    }
    if let Some(rest) = message.strip_prefix("budget breached: ") {
        let what = rest.split([' ', '{']).next().unwrap_or("");
        return match what {
            "Depth" => "the suite nests too deeply (more than 64 levels)".to_owned(),
            "Aliases" | "Anchors" => "the suite uses too many YAML anchors or aliases".to_owned(),
            _ => "the suite is too large to read".to_owned(),
        };
    }
    message.to_owned()
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
        // The caret sits on the `kind:` value itself.
        assert_eq!((d.line, d.column), (4, 11), "{d}");
    }

    #[test]
    fn errors_inside_a_family_kind_keep_their_position() {
        let src = "suite: s\nchecks:\n  - id: a\n    steps: []\n  - id: b\n    kind: idempotency.replay\n    request: { method: POST, path: /x }\n    effects: { request: { path: /n }, value: $.n }\n    ignroe: [$.at]\n";
        let d = parse(src).unwrap_err();
        assert_eq!(d.line, 9, "{d}");
        assert!(d.message.contains("ignroe"), "{d}");
        assert_eq!(d.help.as_deref(), Some("did you mean `ignore`?"), "{d}");
    }

    #[test]
    fn kinds_follow_their_entries_in_order() {
        let src = "suite: s\nchecks:\n  - id: a\n    kind: trace.unique\n    request: { path: / }\n  - id: b\n    steps: []\n  - request: { path: / }\n    kind: trace.present\n    id: c\n";
        let f = parse(src).unwrap();
        let kinds: Vec<&str> = f.checks.iter().map(|c| c.kind_name()).collect();
        assert_eq!(kinds, ["trace.unique", "steps", "trace.present"]);
    }

    #[test]
    fn wrong_type_points_at_value() {
        let src = "suite: s\nchecks:\n  - id: a\n    steps:\n      - request: { path: / }\n        expect: { status: fast }\n";
        let d = parse(src).unwrap_err();
        assert_eq!(d.line, 6, "{d}");
        assert!(d.message.contains("invalid status"), "{d}");
    }

    #[test]
    fn library_wording_is_translated() {
        let d = parse("suite: s\nsuite: t\nchecks: []\n").unwrap_err();
        assert!(!d.message.contains("DuplicateKeyPolicy"), "{d}");
        assert!(d.message.contains("written twice"), "{d}");
        let deep = format!(
            "suite: s\nvars:\n  x: {}1{}\n",
            "[".repeat(100),
            "]".repeat(100)
        );
        let d = parse(&deep).unwrap_err();
        assert!(!d.message.contains("Depth {"), "{d}");
    }

    #[test]
    fn invalid_utf8_points_at_the_byte() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.yaml");
        std::fs::write(&p, b"suite: s\nchecks:\n  - id: a\xff\n").unwrap();
        let d = read_suite(&p).unwrap_err();
        assert_eq!((d.line, d.column), (3, 10), "{d}");
        assert!(d.message.contains("UTF-8"), "{d}");
    }

    /// Issue 37: 500 comment lines in a row, anywhere, are read (the
    /// parser's comment buffer stopped at 96 while looking ahead for a key).
    #[test]
    fn long_comment_blocks_anywhere() {
        let block = |indent: &str| -> String {
            (0..500)
                .map(|i| format!("{indent}# comment {i}: - id: x\n"))
                .collect()
        };
        let src = format!(
            "{top}suite: s\n{between}checks:\n{list}  - id: a\n{inner}    steps:\n{deep}      - request: {{ path: / }}\n  # - id: b\n{list}  - id: c\n    steps: []\n{end}",
            top = block(""),
            between = block(""),
            list = block("  "),
            inner = block("    "),
            deep = block("      "),
            end = block(""),
        );
        let f = parse(&src).unwrap_or_else(|d| panic!("{d}"));
        assert_eq!(f.checks.len(), 2);
        // Positions still count the comment lines.
        assert_eq!(f.checks[1].id().referenced.line(), 3007);
        // The other bounds hold: nesting is still refused after comments.
        let deep = format!(
            "{}suite: s\nvars:\n  x: {}1{}\n",
            block(""),
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(parse(&deep).is_err());
    }

    #[test]
    fn good_suite_parses_with_positions() {
        let src = "suite: s\nchecks:\n  - id: a\n    steps:\n      - request: { method: POST, path: /x, json: {a: 1} }\n        expect: { status: [200, 201], headers: { Trace-Id: present }, json: { $.a: 1 } }\n";
        let f = parse(src).unwrap();
        assert_eq!(f.checks.len(), 1);
        assert_eq!(f.checks[0].id().referenced.line(), 3);
    }
}
