//! `tminus init --from-openapi` (issue 26): the suite written from the
//! reference's own document validates, passes against the healthy reference
//! and fails, on idempotency checks only, against its idempotency defects;
//! published documents (the OpenAPI specification's Petstore examples) give
//! a suite that validates and says what it could not write.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{not_passing, repo, run_with_json, stderr, tminus, verdicts, RefHandle};
use tminus::reference::Defect;

const KEY: (&str, &str) = ("TMINUS_API_KEY", "ref_test_key_a");

fn init(dir: &Path, doc: &Path, extra: &[&str]) -> (std::process::Output, PathBuf) {
    let out_path = dir.join("suite.yaml");
    let mut args = vec![
        "init",
        "--from-openapi",
        doc.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = tminus(dir, &args, &[], Duration::from_secs(30));
    (out, out_path)
}

fn reference_doc() -> PathBuf {
    repo().join("suites/reference.openapi.json")
}

/// The reference's suite, written once per test into `dir`.
fn reference_suite(dir: &Path, profile: &str) -> PathBuf {
    let (out, path) = init(dir, &reference_doc(), &["--profile", profile]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    path
}

#[test]
fn the_reference_document_gives_a_suite_that_validates_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    let suite = reference_suite(dir.path(), "botix");
    let text = std::fs::read_to_string(&suite).unwrap();
    for op in ["create-message", "bulk-create-contacts", "run-scenario"] {
        for kind in ["replay", "mismatch", "concurrent"] {
            assert!(
                text.contains(&format!("  - id: {op}-{kind}\n")),
                "{op}-{kind} missing:\n{text}"
            );
        }
    }
    // The webhook subscription declares no key: written commented out, with the reason.
    assert!(
        text.contains(
            "# Not run: POST /public/v1/webhooks (subscribeWebhook): it declares no Idempotency-Key"
        ),
        "{text}"
    );
    assert!(
        text.contains("  # - id: subscribe-webhook-replay\n"),
        "{text}"
    );
    assert!(text.contains("contract:\n  openapi: "), "{text}");
    let v = tminus(
        dir.path(),
        &["validate", suite.to_str().unwrap()],
        &[KEY],
        Duration::from_secs(30),
    );
    assert_eq!(v.status.code(), Some(0), "{}", stderr(&v));

    let reference = RefHandle::start(&[]);
    let (json, out) = run_with_json(dir.path(), &suite, &reference.url, &[], &[KEY]);
    let verdicts = verdicts(&json);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{:?}\n{}",
        not_passing(&verdicts),
        stderr(&out)
    );
    assert_eq!(verdicts.len(), 12, "{verdicts:?}");
    assert!(not_passing(&verdicts).is_empty(), "{verdicts:?}");
}

#[test]
fn the_written_suite_fails_on_the_references_idempotency_defects_and_only_there() {
    let dir = tempfile::tempdir().unwrap();
    // botix: the reference's contract makes a missing replay marker a MUST
    // (under `standard` the marker is a SHOULD: a warning).
    let suite = reference_suite(dir.path(), "botix");
    for defect in [
        Defect::NoIdempotency,
        Defect::ReplayReexecutes,
        Defect::MismatchReplayed,
        Defect::ReplayWithoutMarker,
    ] {
        let run_dir = tempfile::tempdir().unwrap();
        let reference = RefHandle::start(&[defect]);
        let (json, out) = run_with_json(run_dir.path(), &suite, &reference.url, &[], &[KEY]);
        let failing = not_passing(&verdicts(&json));
        assert_eq!(
            out.status.code(),
            Some(1),
            "{defect:?}: {failing:?}\n{}",
            stderr(&out)
        );
        assert!(!failing.is_empty(), "{defect:?}");
        for f in &failing {
            let id = f.split_once('/').map_or(f.as_str(), |(_, id)| id);
            assert!(
                ["-replay=", "-mismatch=", "-concurrent="]
                    .iter()
                    .any(|k| id.contains(k)),
                "{defect:?} failed a check that is not an idempotency check: {failing:?}"
            );
        }
    }
}

#[test]
fn published_documents_give_suites_that_validate_and_name_what_was_not_written() {
    let fixtures = repo().join("tests/fixtures/openapi");
    for name in ["petstore.yaml", "petstore-expanded.yaml"] {
        let dir = tempfile::tempdir().unwrap();
        let (out, suite) = init(dir.path(), &fixtures.join(name), &[]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let text = std::fs::read_to_string(&suite).unwrap();
        // Petstore's POST declares no idempotency key: its checks are
        // commented out with the reason, never run.
        assert!(
            text.contains("it declares no Idempotency-Key header parameter"),
            "{name}:\n{text}"
        );
        assert!(
            !text.contains("\n    kind: idempotency."),
            "{name}:\n{text}"
        );
        assert!(text.contains("kind: trace.present"), "{name}:\n{text}");
        let v = tminus(
            dir.path(),
            &["validate", suite.to_str().unwrap()],
            &[],
            Duration::from_secs(30),
        );
        assert_eq!(v.status.code(), Some(0), "{name}: {}\n{text}", stderr(&v));
    }
}

#[test]
fn bad_input_is_a_clear_error_and_nothing_is_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.yaml");
    let (out, path) = init(dir.path(), &missing, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("nope.yaml"), "{}", stderr(&out));
    assert!(!path.exists());

    // A document with webhooks only: nothing to certify as a caller.
    let (out, _) = init(
        dir.path(),
        &repo().join("tests/fixtures/openapi/webhook-example.yaml"),
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no check could be written"),
        "{}",
        stderr(&out)
    );

    std::fs::write(&path, "mine").unwrap();
    let (out, _) = init(dir.path(), &reference_doc(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");

    let (out, _) = init(dir.path(), &reference_doc(), &["--role", "client"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
