//! Issue 37, "the first hour with your own API": the walls a new user met
//! with their own suite. Long comment blocks are read; `validate` names every
//! problem; the exit-code table is the same everywhere; a closed pipe is not
//! a panic; a user's suite run with no target says it certifies the
//! embedded reference.

mod common;

use std::time::Duration;

use common::{stderr, stdout, tminus};

/// 500 comment lines in a row, at the top, between keys, inside lists and at
/// the end, as `init --from-openapi` writes commented-out blocks.
#[test]
fn five_hundred_comment_lines_anywhere_validate() {
    let dir = tempfile::tempdir().unwrap();
    let block = |indent: &str| -> String {
        (0..500)
            .map(|i| {
                format!(
                    "{indent}# {i}: - id: commented-out\n{indent}#   kind: idempotency.replay\n"
                )
            })
            .collect()
    };
    let suite = format!(
        "{top}suite: comments\n{between}target:\n{inmap}  timeout: 5s\nchecks:\n{list}  - id: a\n{inner}    steps:\n{deep}      - request: {{ path: /public/v1/contacts }}\n{list}  - id: b\n    steps:\n      - request: {{ path: /public/v1/contacts }}\n{end}",
        top = block(""),
        between = block(""),
        inmap = block("  "),
        list = block("  "),
        inner = block("    "),
        deep = block("      "),
        end = block(""),
    );
    let path = dir.path().join("comments.yaml");
    std::fs::write(&path, suite).unwrap();
    let out = tminus(
        dir.path(),
        &["validate", path.to_str().unwrap()],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}
