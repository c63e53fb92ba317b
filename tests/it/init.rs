//! `tminus init`: every role and profile writes a starter suite that
//! validates as written; the API starter runs green against the embedded
//! reference; an existing file is never overwritten.

use crate::common;

use std::time::Duration;

use common::{stderr, tminus};

const ROLES: [&str; 4] = ["api", "client", "receiver", "platform"];

#[test]
fn every_starter_validates_as_written() {
    let dir = tempfile::tempdir().unwrap();
    for role in ROLES {
        for profile in ["standard", "botix"] {
            let file = format!("{role}-{profile}.yaml");
            let out = tminus(
                dir.path(),
                &["init", "--role", role, "--profile", profile, "-o", &file],
                &[],
                Duration::from_secs(20),
            );
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            let text = std::fs::read_to_string(dir.path().join(&file)).unwrap();
            assert!(
                text.starts_with("# yaml-language-server: $schema="),
                "{text}"
            );
            assert!(text.contains(&format!("profile: {profile}\n")), "{text}");
            let out = tminus(
                dir.path(),
                &["validate", &file],
                &[],
                Duration::from_secs(20),
            );
            assert_eq!(out.status.code(), Some(0), "{file}: {}", stderr(&out));
        }
    }
}

#[test]
fn the_api_starter_runs_against_the_reference_and_files_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let out = tminus(
        dir.path(),
        &["init", "-o", "api.yaml"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = tminus(
        dir.path(),
        &["run", "api.yaml", "--report-dir", "r"],
        &[],
        Duration::from_secs(120),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("5 passed, 0 failed"), "{err}");

    // A second init over the same file refuses and keeps it.
    std::fs::write(dir.path().join("api.yaml"), "mine").unwrap();
    let out = tminus(
        dir.path(),
        &["init", "-o", "api.yaml"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not overwritten"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("api.yaml")).unwrap(),
        "mine"
    );
}
