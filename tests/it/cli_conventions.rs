//! Issue 16, CLI conventions: `--color auto|always|never` with NO_COLOR,
//! and shell completions and a man page generated from the clap model.

use crate::common;

use std::time::Duration;

use common::{repo, stderr, stdout, tminus};

/// One fast check of the trace suite against the embedded reference; its
/// console output (stderr, piped here, so not a terminal).
fn run_console(extra: &[&str], envs: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let suite = repo().join("suites/trace.yaml");
    let mut args = vec![
        "run",
        suite.to_str().unwrap(),
        "--only",
        "trace-ids-unique",
        "--report-dir",
        dir.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = tminus(dir.path(), &args, envs, Duration::from_secs(60));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("PASS"), "{err}");
    err
}

#[test]
fn color_always_paints_even_when_piped_and_with_no_color() {
    // The helper sets NO_COLOR=1: an explicit `always` still wins.
    let err = run_console(&["--color", "always"], &[]);
    assert!(err.contains("\x1b[32mPASS"), "{err:?}");
}

#[test]
fn color_never_and_auto_when_piped_print_no_escape_codes() {
    let never = run_console(&["--color", "never"], &[("NO_COLOR", "")]);
    assert!(!never.contains("\x1b["), "{never:?}");
    // auto (the default) with stderr a pipe and NO_COLOR empty: still none.
    let piped = run_console(&[], &[("NO_COLOR", "")]);
    assert!(!piped.contains("\x1b["), "{piped:?}");
    let auto = run_console(&["--color", "auto"], &[("NO_COLOR", "1")]);
    assert!(!auto.contains("\x1b["), "{auto:?}");
}

#[test]
fn color_rejects_an_unknown_choice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tminus(
        dir.path(),
        &["run", "--color", "sometimes"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("always"), "{}", stderr(&out));
}

#[test]
fn completions_come_from_the_clap_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = tminus(
            dir.path(),
            &["completions", shell],
            &[],
            Duration::from_secs(20),
        );
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("run"), "{shell}: {text}");
        // fish spells a long flag `-l target`, the others `--target`.
        assert!(text.contains("target"), "{shell}: {text}");
        assert!(text.contains("color"), "{shell}: {text}");
        if shell == "bash" {
            assert!(
                text.contains("--target") && text.contains("--color"),
                "{text}"
            );
        }
    }
    let out = tminus(
        dir.path(),
        &["completions", "tcsh"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn man_page_is_roff_with_every_subcommand_and_the_run_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tminus(dir.path(), &["man"], &[], Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH tminus 1"), "{page}");
    for sub in [
        "run",
        "validate",
        "checks",
        "reference",
        "sign",
        "completions",
        "man",
    ] {
        assert!(
            page.contains(&format!("tminus\\-{sub}(1)")),
            "{sub} missing: {page}"
        );
    }
    assert!(page.contains(".SH \"TMINUS RUN OPTIONS\""), "{page}");
    assert!(page.contains("\\-\\-target"), "{page}");
}
