//! OpenAPI documents from strangers (issue 44): `init --from-openapi` and
//! `contract diff` (the loader `contract:` uses too) on documents built to
//! exhaust a reader. Each is refused with an error naming the file, within
//! a stated time, and never by a crash; a remote `$ref` is never fetched.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BASE: &str = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\n";

/// A document with one operation whose body is the schema `S0`, and `rest`
/// (more schemas) under `components.schemas`.
fn with_schemas(rest: &str) -> String {
    format!(
        "{BASE}paths:\n  /a:\n    post:\n      requestBody:\n        required: true\n        content:\n          application/json:\n            schema: {{$ref: '#/components/schemas/S0'}}\n      responses:\n        '200':\n          description: ok\ncomponents:\n  schemas:\n{rest}"
    )
}

/// Runs tminus with `args` in `dir`: (exit code, stderr and stdout, time).
fn tminus(dir: &Path, args: &[&str]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let out = Command::new(common::bin())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    (out.status.code(), text, started.elapsed())
}

#[test]
fn hostile_documents_are_refused_naming_the_file_within_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Billion laughs: ten aliases of ten aliases ... (10^9 leaves).
    let mut laughs = format!("{BASE}x-a0: &a0 [lol,lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        laughs.push_str(&format!("x-a{i}: &a{i} [{}]\n", vec![prev; 10].join(",")));
    }
    laughs.push_str("paths: {}\n");
    std::fs::write(d.join("laughs.yaml"), laughs).unwrap();
    // 100 MB (a sparse file: the reader must stop at its cap, not read it).
    let huge = std::fs::File::create(d.join("huge.yaml")).unwrap();
    huge.set_len(100 << 20).unwrap();
    // Nesting 100,000 deep, in YAML and JSON.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    std::fs::write(
        d.join("deep.yaml"),
        format!("{BASE}paths: {{}}\nx: {deep}\n"),
    )
    .unwrap();
    std::fs::write(
        d.join("deep.json"),
        format!(r#"{{"openapi": "3.1.0", "info": {{"title": "t", "version": "1"}}, "paths": {{}}, "x": {deep}}}"#),
    )
    .unwrap();
    // A chain of 1,000 `allOf`s, each a `$ref` to the next: it overflowed
    // the JSON Schema compiler's stack (a crash, signal 6).
    let mut chain = String::new();
    for i in 0..1000 {
        chain.push_str(&format!(
            "    S{i}: {{allOf: [{{$ref: '#/components/schemas/S{}'}}]}}\n",
            i + 1
        ));
    }
    chain.push_str("    S1000: {type: object}\n");
    std::fs::write(d.join("chain.yaml"), with_schemas(&chain)).unwrap();

    let cases: &[(&str, &str)] = &[
        ("laughs.yaml", "budget breached"),
        ("huge.yaml", "larger than 16 MiB"),
        ("deep.yaml", "recursion limit exceeded"),
        ("deep.json", "recursion limit exceeded"),
        ("chain.yaml", "more than 64 `$ref`s"),
    ];
    for (file, why) in cases {
        for args in [
            vec!["init", "--from-openapi", file, "--output", "out.yaml"],
            vec!["contract", "diff", file, file],
        ] {
            let (code, text, took) = tminus(d, &args);
            assert!(
                matches!(code, Some(2 | 3)),
                "{args:?}: exit {code:?} (a crash is none): {text}"
            );
            assert!(
                text.contains(file),
                "{args:?}: the file is not named: {text}"
            );
            assert!(text.contains(why), "{args:?}: {text}");
            // Debug build, two cores shared: the billion laughs is the
            // slowest (2.9 s measured alone, 23.6 s while the whole test
            // binary ran beside other builds).
            assert!(took < Duration::from_secs(60), "{args:?}: {took:?}");
            assert!(!d.join("out.yaml").exists(), "{args:?} wrote a suite");
        }
    }
}

#[test]
fn cycles_are_named_and_a_remote_ref_is_never_fetched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A listener that counts who connects: the remote `$ref` points at it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let remote = format!("http://{}/s.yaml#/S", listener.local_addr().unwrap());
    std::fs::write(
        d.join("remote.yaml"),
        with_schemas(&format!("    S0: {{$ref: '{remote}'}}\n")),
    )
    .unwrap();
    std::fs::write(
        d.join("cycle.yaml"),
        with_schemas(
            "    S0: {$ref: '#/components/schemas/S1'}\n    S1: {$ref: '#/components/schemas/S0'}\n",
        ),
    )
    .unwrap();
    let (code, text, _) = tminus(d, &["contract", "diff", "remote.yaml", "remote.yaml"]);
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("remote references are not followed"),
        "{text}"
    );
    assert!(text.contains("remote.yaml"), "{text}");
    let (code, text, _) = tminus(
        d,
        &[
            "init",
            "--from-openapi",
            "remote.yaml",
            "--output",
            "o.yaml",
        ],
    );
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("remote references are not followed"),
        "{text}"
    );
    assert!(
        listener.accept().is_err(),
        "tminus connected to the remote `$ref`"
    );
    let (code, text, took) = tminus(d, &["contract", "diff", "cycle.yaml", "cycle.yaml"]);
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("cycle of references") && text.contains("cycle.yaml"),
        "{text}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}
