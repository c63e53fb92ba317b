//! The suite JSON Schema (`tminus schema suite`, committed as
//! `schema/suite.schema.json`): it is the generated one, every shipped suite
//! carries the editor modeline and validates against it, and what it rejects
//! `tminus validate` rejects too (each rejected suite is paired with a fixed
//! one both accept, so a schema that rejects everything fails as surely as
//! one that accepts everything).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tminus::suite::schema::{suite_schema_text, MODELINE, SCHEMA_COMMAND};

fn committed_schema() -> Value {
    let path = common::repo().join("schema/suite.schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("the committed schema is JSON")
}

fn validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&committed_schema()).expect("the schema compiles")
}

/// The schema's complaints about a YAML text (empty: valid).
fn schema_errors(v: &jsonschema::Validator, yaml: &str) -> Vec<String> {
    let doc: Value = serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    v.iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// `tminus validate` on the text: `Ok(())` or its stderr.
fn tminus_validate(dir: &Path, name: &str, yaml: &str) -> Result<(), String> {
    let file = dir.join(name);
    std::fs::write(&file, yaml).unwrap();
    let out = common::tminus(
        dir,
        &["validate", file.to_str().unwrap()],
        &[],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        Some(0) => Ok(()),
        Some(2) => Err(err),
        other => panic!("tminus validate exited {other:?}:\n{err}"),
    }
}

fn shipped_suites() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["suites", "tests/suites"] {
        for e in std::fs::read_dir(common::repo().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn committed_schema_is_the_generated_one() {
    let committed = std::fs::read_to_string(common::repo().join("schema/suite.schema.json"))
        .unwrap_or_default();
    assert!(
        committed == suite_schema_text(),
        "schema/suite.schema.json is stale (the suite model or a KINDS table changed).\n\
         Regenerate it with:\n\n    {SCHEMA_COMMAND}\n"
    );
    let out = common::tminus(
        &common::repo(),
        &["schema", "suite"],
        &[],
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(common::stdout(&out), suite_schema_text());
    let schema = committed_schema();
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "draft 2020-12"
    );
}

/// yaml-language-server validates with a draft-07 engine (its 2019-09 and
/// 2020-12 support is still partial), so the schema keeps to keywords both
/// drafts read alike; `$defs` is only reached through `$ref` pointers.
#[test]
fn the_schema_uses_no_keyword_editors_ignore() {
    fn walk(v: &Value, found: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    if [
                        "prefixItems",
                        "unevaluatedProperties",
                        "unevaluatedItems",
                        "dependentRequired",
                        "dependentSchemas",
                        "$dynamicRef",
                        "$anchor",
                        "minContains",
                        "maxContains",
                    ]
                    .contains(&k.as_str())
                    {
                        found.push(k.clone());
                    }
                    walk(v, found);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&committed_schema(), &mut found);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn every_shipped_suite_has_the_modeline_and_validates() {
    let v = validator();
    let suites = shipped_suites();
    assert!(suites.len() >= 8, "{suites:?}");
    for path in suites {
        let text = std::fs::read_to_string(&path).unwrap();
        // The schema path is relative to the suite's folder.
        let depth = path
            .strip_prefix(common::repo())
            .unwrap()
            .components()
            .count()
            - 1;
        let want = MODELINE.replace("../", &"../".repeat(depth));
        assert_eq!(
            text.lines().next(),
            Some(want.as_str()),
            "{} must start with the modeline",
            path.display()
        );
        let errors = schema_errors(&v, &text);
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    }
}

const REPLAY: &str = "suite: s
checks:
  - id: r
    kind: idempotency.replay
    request: { method: POST, path: /m, json: { a: 1 } }
    effects: { request: { path: /c }, value: $.count }
    ignore: [$.at]
    marker: { policy: optional }
";

const STEPS: &str = "suite: s
version: 1.2
vars: { n: 3 }
target: { base_url: \"http://127.0.0.1:1\", timeout: 2s }
checks:
  - id: a
    tags: [smoke]
    steps:
      - request: { method: GET, path: /x, headers: { Accept: json } }
        expect: { status: [200, 2xx], headers: { Trace-Id: present }, json: { $.a: 1, $.b: { exists: true } } }
";

const LOAD: &str = "suite: s
load:
  users: 2
  hold: 1s
  max_rate: 10/s
  requests:
    - { name: a, request: { path: /a } }
";

/// (what, a suite both accept, the same suite broken, a word of
/// `tminus validate`'s complaint).
const CASES: &[(&str, &str, (&str, &str), &str)] = &[
    ("top-level unknown key", STEPS, ("vars:", "varz:"), "varz"),
    (
        "top-level wrong type",
        STEPS,
        ("suite: s", "suite: [s]"),
        "suite",
    ),
    (
        "target unknown key",
        STEPS,
        ("base_url:", "base_ur:"),
        "base_ur",
    ),
    (
        "per-check unknown key",
        REPLAY,
        ("ignore:", "ignroe:"),
        "ignroe",
    ),
    (
        "per-check wrong type",
        REPLAY,
        ("ignore: [$.at]", "ignore: { a: 1 }"),
        "ignore",
    ),
    (
        "unknown kind",
        REPLAY,
        ("idempotency.replay", "idempotency.replya"),
        "replya",
    ),
    (
        "missing required parameter",
        REPLAY,
        ("    effects:", "    x_effects:"),
        "effects",
    ),
    (
        "nested unknown key",
        STEPS,
        ("method: GET", "methd: GET"),
        "methd",
    ),
    (
        "nested wrong type",
        STEPS,
        ("status: [200, 2xx]", "status: fast"),
        "fast",
    ),
    (
        "nested duration",
        STEPS,
        ("timeout: 2s", "timeout: soon"),
        "soon",
    ),
    (
        "nested keyword",
        REPLAY,
        ("policy: optional", "policy: maybe"),
        "maybe",
    ),
    (
        "nested expectation",
        STEPS,
        ("exists: true", "exits: true"),
        "exits",
    ),
    (
        "steps field on a kind",
        REPLAY,
        ("ignore: [$.at]", "steps: []"),
        "steps",
    ),
    ("load unknown key", LOAD, ("hold: 1s", "hodl: 1s"), "hodl"),
    (
        "load wrong type",
        LOAD,
        ("hold: 1s", "hold: 1s\n  ramp_down: soon"),
        "soon",
    ),
];

#[test]
fn what_the_schema_rejects_validate_rejects() {
    let v = validator();
    let dir = tempfile::tempdir().unwrap();
    for (what, good, (from, to), word) in CASES {
        assert!(good.contains(from), "{what}: `{from}` is not in the suite");
        let bad = good.replacen(from, to, 1);
        let errors = schema_errors(&v, good);
        assert!(
            errors.is_empty(),
            "{what}: the good suite fails the schema: {errors:#?}"
        );
        if let Err(e) = tminus_validate(dir.path(), "good.yaml", good) {
            panic!("{what}: the good suite fails validate:\n{e}");
        }
        assert!(
            !schema_errors(&v, &bad).is_empty(),
            "{what}: the schema accepts\n{bad}"
        );
        match tminus_validate(dir.path(), "bad.yaml", &bad) {
            Ok(()) => panic!("{what}: tminus validate accepts\n{bad}"),
            Err(e) => assert!(e.contains(word), "{what}: `{word}` not in\n{e}"),
        }
    }
}

#[test]
fn lenient_spellings_and_defaults_pass_both() {
    let v = validator();
    let dir = tempfile::tempdir().unwrap();
    // A keyword in another case and a check without `kind` (a `steps` check).
    let suite = REPLAY.replace("policy: optional", "policy: Optional");
    for text in [
        suite.as_str(),
        "suite: s\nchecks:\n  - id: a\n    steps: [{ request: { path: / } }]\n",
    ] {
        let errors = schema_errors(&v, text);
        assert!(errors.is_empty(), "{errors:#?}\n{text}");
        tminus_validate(dir.path(), "ok.yaml", text).unwrap_or_else(|e| panic!("{e}"));
    }
}
