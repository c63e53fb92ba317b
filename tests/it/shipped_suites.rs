//! What the shipped suites promise a new user: they name the reference's
//! test hooks (`/__tminus/...` paths, `X-Tminus-Test-*` headers) only as
//! `vars:` defaults, each with a comment saying what a real system must
//! offer, and they say which profile they follow (`botix`: they certify the
//! reference's BOTIX-like contract).

use crate::common;

use common::repo;

const HOOKS: [&str; 2] = ["/__tminus", "X-Tminus-Test"];

fn suites() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(repo().join("suites"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(out.len() >= 7, "{out:?}");
    out
}

#[test]
fn reference_hooks_appear_only_as_commented_variable_defaults() {
    for (name, text) in suites() {
        let lines: Vec<&str> = text.lines().collect();
        let mut in_vars = false;
        for (i, line) in lines.iter().enumerate() {
            if !line.starts_with(' ') && !line.starts_with('#') && !line.is_empty() {
                in_vars = line.starts_with("vars:");
            }
            if line.trim_start().starts_with('#') || !HOOKS.iter().any(|h| line.contains(h)) {
                continue;
            }
            // `  name: /__tminus/...` directly under `vars:`, after a comment.
            let is_var = in_vars
                && line.starts_with("  ")
                && !line.starts_with("   ")
                && line.trim_start().split_once(':').is_some();
            assert!(is_var, "{name}:{}: a hook outside `vars:`: {line}", i + 1);
            assert!(
                lines[i - 1].trim_start().starts_with('#'),
                "{name}:{}: the hook variable has no comment saying what a real system must offer",
                i + 1
            );
        }
    }
}

#[test]
fn shipped_suites_say_their_profile() {
    for (name, text) in suites() {
        assert!(
            text.lines().any(|l| l.starts_with("profile: botix")),
            "{name} does not say `profile: botix`"
        );
    }
}
