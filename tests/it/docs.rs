//! The committed check reference is the generated one, the family docs it is
//! made of document exactly their kinds, and the README keeps what a
//! newcomer needs.

use std::path::Path;

use tminus::app::{checks_markdown, CHECKS_MD_COMMAND};
use tminus::families::{kind_names, FAMILIES};
use tminus::spec::kinds::FamilyDoc;

fn repo_file(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

#[test]
fn committed_check_reference_is_the_generated_one() {
    let generated = checks_markdown();
    let committed = repo_file("docs/checks.md");
    if generated == committed {
        return;
    }
    let (line, want, got) = generated
        .lines()
        .zip(committed.lines())
        .enumerate()
        .find(|(_, (g, c))| g != c)
        .map(|(i, (g, c))| (i + 1, g.to_owned(), c.to_owned()))
        .unwrap_or_else(|| {
            let n = generated.lines().count().min(committed.lines().count());
            (
                n + 1,
                "(one file ends here)".into(),
                "(one file ends here)".into(),
            )
        });
    panic!(
        "docs/checks.md is stale (first difference at line {line}):\n  generated: {want}\n  committed: {got}\n\
         Regenerate it with:\n\n    {CHECKS_MD_COMMAND}\n"
    );
}

/// The catalogue ids' page (linked from the README and every coverage
/// table) is the generated one.
#[test]
fn committed_requirements_page_is_the_generated_one() {
    let generated = tminus::catalogue::markdown();
    let committed = repo_file("docs/requirements.md");
    if let Some((i, (g, c))) = generated
        .lines()
        .zip(committed.lines())
        .enumerate()
        .find(|(_, (g, c))| g != c)
    {
        panic!(
            "docs/requirements.md is stale (first difference at line {}):\n  generated: {g}\n  committed: {c}\n\
             Regenerate it with:\n\n    cargo run -- checks --format requirements > docs/requirements.md\n",
            i + 1
        );
    }
    assert_eq!(
        generated.lines().count(),
        committed.lines().count(),
        "docs/requirements.md is stale: regenerate it with `cargo run -- checks --format requirements > docs/requirements.md`"
    );
}

#[test]
fn the_cli_prints_the_same_reference() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tminus"))
        .args(["checks", "--format", "markdown"])
        .output()
        .expect("tminus runs");
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), checks_markdown());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tminus"))
        .arg("checks")
        .output()
        .expect("tminus runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for k in kind_names() {
        assert!(text.contains(k), "`tminus checks` lacks {k}");
    }
    assert!(
        text.contains("max_rate"),
        "`tminus checks` lacks the load section"
    );
}

#[test]
fn every_kind_has_its_section() {
    let md = checks_markdown();
    for k in kind_names() {
        assert!(md.contains(&format!("\n### `{k}`\n")), "no section for {k}");
    }
}

#[test]
fn family_docs_document_exactly_their_kinds() {
    for f in FAMILIES {
        let doc = FamilyDoc::parse(f.doc);
        assert!(
            doc.title().is_some(),
            "{}: the doc has no `## ` title",
            f.name
        );
        let mut kinds: Vec<&str> = f.kinds.iter().flat_map(|t| t.names()).collect();
        if f.name == "load" {
            // The load family's doc also documents the suite's `load:` section.
            kinds.insert(0, "load");
        }
        for (k, _) in &doc.kinds {
            assert!(
                kinds.contains(k),
                "{}: the doc has a section for unknown kind `{k}`",
                f.name
            );
        }
        for k in &kinds {
            let n = doc.kinds.iter().filter(|(d, _)| d == k).count();
            assert_eq!(
                n, 1,
                "{}: `{k}` has {n} doc sections (`<!-- kind: {k} -->`)",
                f.name
            );
        }
    }
}

#[test]
fn readme_keeps_the_quick_start_and_links_the_reference() {
    let readme = repo_file("README.md");
    for cmd in ["cargo run --release -- run suites/", "cargo test --locked"] {
        assert!(
            readme.lines().any(|l| l.trim() == cmd),
            "README lost the quick-start command `{cmd}`"
        );
    }
    assert!(
        readme.contains("docs/checks.md"),
        "README does not link the check reference"
    );
}

/// The README's exit-code table lists exactly the codes tminus exits with
/// (`tminus::exit::ALL`), and no code outside `src/exit.rs` is a bare number.
#[test]
fn the_exit_code_table_lists_every_exit_code() {
    let readme = repo_file("README.md");
    let start = readme
        .find("## Exit codes")
        .expect("README has an exit-code table");
    let table: Vec<i32> = readme[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            l.trim_start_matches('|')
                .split('|')
                .next()?
                .trim()
                .parse()
                .ok()
        })
        .collect();
    let mut want: Vec<i32> = tminus::exit::ALL.iter().map(|c| c.code).collect();
    want.sort();
    let mut got = table.clone();
    got.sort();
    assert_eq!(got, want, "README's exit codes vs tminus::exit::ALL");
    // The reference client's deliberate crash (101, as a panic) is its own.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs")
                && !p.ends_with("reference/client.rs")
            {
                let text = std::fs::read_to_string(&p).unwrap();
                for (i, line) in text.lines().enumerate() {
                    let bare = line
                        .split("process::exit(")
                        .nth(1)
                        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
                    assert!(
                        !bare,
                        "{}:{}: exit with a named code from src/exit.rs: {line}",
                        p.display(),
                        i + 1
                    );
                }
            }
        }
    }
}
