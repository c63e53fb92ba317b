//! Finding suite files and reading them into `SuiteFile`s, turning every
//! YAML or shape error into a positioned `Diagnostic`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::defaults::{check_block, DefaultsBlock, Inheritance};
use super::model::{SuiteFile, SuiteSeed};
use super::recover::{cut_item, cut_key, At};
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
    checks: Vec<Spanned<KindOnly>>,
    #[serde(default)]
    defaults: Option<DefaultsBlock>,
}

#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: Option<Spanned<String>>,
}

/// Reads and parses one suite file: every unknown key and kind it holds, or
/// its first other error.
pub fn read_suite(path: &Path) -> Result<SuiteSource, Vec<Diagnostic>> {
    let bytes =
        crate::files::read_file_capped(path, crate::files::MAX_SUITE_BYTES).map_err(|e| {
            vec![Diagnostic::file_level(
                path,
                format!("cannot read suite: {e}"),
            )]
        })?;
    let source = decode(path, bytes).map_err(|d| vec![d])?;
    let file = parse_all(path, &source)?;
    Ok(SuiteSource {
        path: path.to_path_buf(),
        source,
        file,
    })
}

/// Parses suite text; `path` is only used in diagnostics. The first problem
/// only (see [`parse_all`] for every one).
pub fn parse_str(path: &Path, source: &str) -> Result<SuiteFile, Diagnostic> {
    parse_all(path, source).map_err(|mut d| d.remove(0))
}

/// The most problems read from one file (each costs a parse).
const MAX_PROBLEMS: usize = 50;

/// Why one parse stopped.
enum Stop {
    /// Unknown keys or kinds, each with the entry to comment out to read on
    /// (`true`: a whole list item).
    Unknown(Vec<(Diagnostic, At, bool)>),
    /// Anything else (the `defaults:` block's problems come together).
    Other(Vec<Diagnostic>),
}

/// Parses suite text, reporting every unknown key and unknown kind in it
/// (issue 37: "every problem at once"): after each, the text is parsed again
/// with that entry commented out ([`super::recover`]). Another kind of error
/// is reported only when it comes first: after an entry was cut it may be
/// the cut's own doing (a mapping left empty).
pub fn parse_all(path: &Path, source: &str) -> Result<SuiteFile, Vec<Diagnostic>> {
    let mut text = source.to_owned();
    let mut found: Vec<Diagnostic> = Vec::new();
    while found.len() < MAX_PROBLEMS {
        match parse_once(path, source, &text) {
            Ok(file) if found.is_empty() => return Ok(file),
            Ok(_) => break,
            Err(Stop::Other(d)) => {
                if found.is_empty() {
                    found = d;
                }
                break;
            }
            Err(Stop::Unknown(unknown)) => {
                let mut all_cut = true;
                for (d, at, item) in unknown {
                    found.push(d);
                    all_cut &= if item {
                        cut_item(&mut text, at)
                    } else {
                        cut_key(&mut text, at)
                    };
                }
                if !all_cut {
                    break;
                }
            }
        }
    }
    Err(found)
}

/// One parse of `text` (the file with some entries commented out; positions
/// and diagnostics are the file's, `source`).
///
/// Two passes: the first reads only the `kind` of every check (with its
/// position, so an unknown kind points at itself); the second hands those
/// kinds to [`SuiteSeed`], which deserializes each entry straight into its
/// kind's struct with every position intact.
fn parse_once(path: &Path, source: &str, text: &str) -> Result<SuiteFile, Stop> {
    let kinds: KindsOnly = serde_saphyr::from_str_with_options(text, crate::files::yaml_options())
        .map_err(|e| Stop::Other(vec![to_diag(path, source, &e)]))?;
    let mut names = Vec::with_capacity(kinds.checks.len());
    let mut unknown = Vec::new();
    for c in &kinds.checks {
        match &c.value.kind {
            Some(k) if !kind_names().any(|n| n == k.value) => {
                let mut msg = format!("unknown check kind `{}`", k.value);
                if let Some(s) = suggest(&k.value, kind_names()) {
                    msg.push_str(&format!(", did you mean `{s}`?"));
                } else {
                    msg.push_str(" (`tminus checks` lists the kinds)");
                }
                let d = Diagnostic::new(path, source, k.referenced, msg);
                unknown.push((d, at(c.referenced), true));
            }
            k => names.push(k.as_ref().map(|k| k.value.clone())),
        }
    }
    if !unknown.is_empty() {
        return Err(Stop::Unknown(unknown));
    }
    if let Some(block) = &kinds.defaults {
        check_block(path, source, block).map_err(Stop::Other)?;
    }
    let inherit = Inheritance::new(text, kinds.defaults.as_ref());
    serde_saphyr::with_deserializer_from_str_with_options(text, crate::files::yaml_options(), |d| {
        serde::de::DeserializeSeed::deserialize(
            SuiteSeed {
                kinds: &names,
                inherit: &inherit,
            },
            d,
        )
    })
    .map_err(|e| {
        // An error inside an inherited default is shown where it is written.
        let inner = inherit.take_failure();
        let e = inner.as_ref().unwrap_or(&e);
        let d = to_diag(path, source, e);
        match e.location() {
            Some(l) if core_message(e).starts_with("unknown field `") => {
                Stop::Unknown(vec![(d, at(l), false)])
            }
            _ => Stop::Other(vec![d]),
        }
    })
}

fn at(l: serde_saphyr::Location) -> At {
    At {
        line: l.line(),
        column: l.column(),
    }
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

    /// Issue 37: every unknown key and kind of a file, each at its place.
    #[test]
    fn every_unknown_key_and_kind_is_reported() {
        let src = "suite: s\nchecks:\n  - id: a\n    kind: stpes\n    steps: []\n  - id: b\n    steps:\n      - request: { path: / }\n        expect:\n          stauts: 200\n          heders:\n            X-A: present\n    tagz: [x]\n  - id: c\n    kind: trace.uniqe\n    request: { path: / }\nvarz: {}\n";
        let found = parse_all(Path::new("t.yaml"), src).unwrap_err();
        let got: Vec<(u64, u64, &str)> = found
            .iter()
            .map(|d| (d.line, d.column, d.message.as_str()))
            .collect();
        assert_eq!(got.len(), 6, "{got:#?}");
        assert!(got[0].2.contains("`stpes`") && got[0].0 == 4, "{got:#?}");
        assert!(
            got[1].2.contains("`trace.uniqe`") && got[1].0 == 15,
            "{got:#?}"
        );
        let rest: Vec<(u64, u64)> = got[2..].iter().map(|g| (g.0, g.1)).collect();
        assert_eq!(rest, [(10, 11), (11, 11), (13, 5), (17, 1)], "{got:#?}");
        assert_eq!(found[2].help.as_deref(), Some("did you mean `status`?"));
        // A file with one problem still reports that one, and a clean one parses.
        assert_eq!(
            parse_all(Path::new("t.yaml"), "suite: s\nchecks: []\nsuitee: x\n")
                .unwrap_err()
                .len(),
            1
        );
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
        let d = read_suite(&p).unwrap_err().remove(0);
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
