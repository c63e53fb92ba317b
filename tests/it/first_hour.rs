//! Issue 37, "the first hour with your own API": the walls a new user met
//! with their own suite. Long comment blocks are read; `validate` names every
//! problem; the exit-code table is the same everywhere; a closed pipe is not
//! a panic; a user's suite run with no target says it certifies the
//! embedded reference.

use crate::common;

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

/// What a text says about exit codes, checked against `tminus::exit::ALL`:
/// `exit N (name)` and `N (name)` name the code's own name, a number before
/// `inconclusive` is 4, and a bare `N when` (the form that said "3 when the
/// noise could explain it" in `compare --help`) is not written.
fn claims_agree(what: &str, text: &str) {
    let table = tminus::exit::ALL;
    let name_of = |code: i32| table.iter().find(|c| c.code == code).map(|c| c.name);
    let is_name = |w: &str| table.iter().any(|c| c.name == w);
    let named = regex::Regex::new(r"\b(\d+) \((\w+)\)").unwrap();
    for m in named.captures_iter(text) {
        let (n, w) = (m[1].parse::<i32>().unwrap(), &m[2]);
        if is_name(w) {
            assert_eq!(
                name_of(n),
                Some(w),
                "{what}: `{}` disagrees with the table",
                &m[0]
            );
        }
    }
    let bare_exit = regex::Regex::new(r"\bexit (\d+)\b( \()?").unwrap();
    for m in bare_exit.captures_iter(text) {
        let n: i32 = m[1].parse().unwrap();
        assert!(
            name_of(n).is_some(),
            "{what}: `{}` is not in the table",
            &m[0]
        );
    }
    let before = regex::Regex::new(r"\b(\d+) inconclusive\b").unwrap();
    for m in before.captures_iter(text) {
        assert_eq!(&m[1], "4", "{what}: `{}`", &m[0]);
    }
    let after = regex::Regex::new(r"\binconclusive\W{0,4}\(exit (\d+)\)").unwrap();
    for m in after.captures_iter(text) {
        assert_eq!(&m[1], "4", "{what}: `{}`", &m[0]);
    }
    let when = regex::Regex::new(r"\b\d+ when\b").unwrap();
    assert!(
        !when.is_match(text),
        "{what}: write `N (name) when`: {text}"
    );
}

fn repo_text(path: &str) -> String {
    std::fs::read_to_string(common::repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One exit-code table everywhere (issue 37): the README and docs/ci.md show
/// it as `exit::markdown_table` renders it, action.yml's gate has one arm per
/// code with its name and meaning, and every `--help` that speaks of exit
/// codes agrees with it (the commands that exit by it print it whole).
#[test]
fn every_statement_of_the_exit_codes_is_the_table() {
    let table = tminus::exit::markdown_table();
    for doc in ["README.md", "docs/ci.md"] {
        let text = repo_text(doc);
        assert!(
            text.contains(&table),
            "{doc} does not hold the table:\n{table}"
        );
        claims_agree(doc, &text);
    }

    let action = repo_text("action.yml");
    claims_agree("action.yml", &action);
    let yaml: serde_json::Value = serde_saphyr::from_str(&action).unwrap();
    let described = yaml["outputs"]["exit-code"]["description"]
        .as_str()
        .unwrap();
    let gate = yaml["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("case \"$CODE\""))
        .expect("a gate step");
    for c in tminus::exit::ALL {
        assert!(
            described.contains(&format!("{} {}", c.code, c.name)),
            "action.yml's output does not name {c:?}: {described}"
        );
        let arm = gate
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{})", c.code)))
            .unwrap_or_else(|| panic!("action.yml: no arm for {}: {gate}", c.code));
        assert!(
            arm.contains(&format!("exit {} ({}): {}", c.code, c.name, c.meaning)),
            "action.yml's arm for {} is not the table's row: {arm}",
            c.code
        );
        let fails = arm.contains(&format!("; exit {} ;;", c.code));
        assert_eq!(fails, c.code != 0, "{arm}");
    }

    // Every command's --help, nested ones included.
    use clap::CommandFactory;
    let dir = tempfile::tempdir().unwrap();
    let mut paths: Vec<Vec<String>> = vec![vec![]];
    let mut stack = vec![(Vec::<String>::new(), tminus::cli::Cli::command())];
    while let Some((path, cmd)) = stack.pop() {
        for sub in cmd.get_subcommands() {
            let mut p = path.clone();
            p.push(sub.get_name().to_owned());
            paths.push(p.clone());
            stack.push((p, sub.clone()));
        }
    }
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let block = words(&tminus::exit::help_block());
    let by_table = [
        vec![],
        vec!["run"],
        vec!["validate"],
        vec!["merge"],
        vec!["compare"],
        vec!["serve"],
    ];
    let mut seen = 0;
    for path in &paths {
        if path.last().is_some_and(|p| p == "help") {
            continue;
        }
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let out = tminus(dir.path(), &args, &[], Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        // clap wraps long lines to the terminal's width: compare words.
        let help = words(&stdout(&out));
        let what = format!("tminus {} --help", path.join(" "));
        if by_table.iter().any(|p| p == path) {
            assert!(help.contains(&block), "{what} lacks the table:\n{help}");
            seen += 1;
        }
        claims_agree(&what, &help.replace(&block, ""));
    }
    assert_eq!(seen, by_table.len());
}

/// A closed stderr (and stdout) is not a panic (issue 37): the reader takes
/// one line and closes its end; the run goes on, writes its reports and
/// exits by the table, never 101.
#[test]
fn a_closed_stderr_is_not_a_panic() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let suite = common::repo().join("suites/trace.yaml");
    let mut child = Command::new(common::bin())
        .current_dir(dir.path())
        .args(["run", suite.to_str().unwrap(), "--report-dir"])
        .arg(dir.path())
        .env_remove("TMINUS_TARGET")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut first = String::new();
    {
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        err.read_line(&mut first).unwrap();
        // Both ends dropped here: every later write meets a closed pipe.
        drop(child.stdout.take());
    }
    assert!(!first.is_empty());
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("tminus did not finish after its pipes closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let code = status.code();
    assert!(
        code.is_some_and(|c| tminus::exit::of(c).is_some()),
        "exit {status:?} is not in the table (101 is a panic)"
    );
    assert_eq!(code, Some(tminus::exit::OK), "{first}");
    for report in ["report.json", "junit.xml", "report.html"] {
        assert!(dir.path().join(report).is_file(), "{report} not written");
    }
}

/// The issue's own words: `tminus run SUITES 2>&1 | head -1` exits by the
/// table, a burst included (goose writes to stdout, which tminus points at
/// stderr while it runs).
#[test]
fn run_piped_into_head_exits_by_the_table() {
    if std::process::Command::new("bash")
        .arg("-c")
        .arg("true")
        .status()
        .is_err()
    {
        eprintln!("skipped: no bash");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = common::repo();
    let script = format!(
        "\"{bin}\" run {repo}/suites/trace.yaml {repo}/suites/burst.yaml --report-dir \"{out}\" 2>&1 | head -1; exit ${{PIPESTATUS[0]}}",
        bin = common::bin().display(),
        repo = repo.display(),
        out = dir.path().display(),
    );
    let out = tminus_shell(dir.path(), &script);
    let code = out.status.code();
    assert!(
        code.is_some_and(|c| tminus::exit::of(c).is_some()),
        "exit {:?} is not in the table: {}",
        out.status,
        stdout(&out)
    );
    assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
    assert!(dir.path().join("report.json").is_file());
}

/// `bash -c script` with a deadline (the shell is killed past it, by pid).
fn tminus_shell(dir: &std::path::Path, script: &str) -> std::process::Output {
    let child = std::process::Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg(script)
        .env_remove("TMINUS_TARGET")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(300)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = std::process::Command::new("kill")
                .arg("-9")
                .arg(pid.to_string())
                .status();
            panic!("{script} did not finish within 300 s");
        }
    }
}

/// `validate` reports every unknown key and kind in every file (the README
/// promises "every problem at once"), and a JSON path RFC 9535 refuses says
/// how to write it.
#[test]
fn validate_names_every_unknown_key_and_kind_in_every_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.yaml"),
        "suite: a\nchecks:\n  - id: one\n    kind: stpes\n    steps: []\n  - id: two\n    steps:\n      - request: { path: /public/v1/contacts }\n        expect:\n          stauts: 200\n    tagz: [x]\n  - id: three\n    kind: trace.uniqe\nvarz: {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.yaml"),
        "suite: b\ntarget:\n  timeot: 5s\nchecks:\n  - id: four\n    steps:\n      - request: { path: /public/v1/contacts }\n        expect:\n          json: { $.headers.x-request-id: present }\n        extract: {}\n        retires: 2\n",
    )
    .unwrap();
    let out = tminus(
        dir.path(),
        &["validate", dir.path().to_str().unwrap()],
        &[],
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(tminus::exit::INVALID), "{err}");
    for (place, what) in [
        ("a.yaml:4:11", "unknown check kind `stpes`"),
        ("a.yaml:13:11", "unknown check kind `trace.uniqe`"),
        ("a.yaml:10:11", "unknown field `stauts`"),
        ("a.yaml:11:5", "unknown field `tagz`"),
        ("a.yaml:14:1", "unknown field `varz`"),
        ("b.yaml:3:3", "unknown field `timeot`"),
        ("b.yaml:10:9", "unknown field `extract`"),
        ("b.yaml:11:9", "unknown field `retires`"),
    ] {
        let at = err
            .find(place)
            .unwrap_or_else(|| panic!("{place} not reported:\n{err}"));
        // The message is on the line before its position, rustc-style.
        let before = &err[..at];
        let line = before.lines().rev().nth(1).unwrap_or("");
        assert!(line.contains(what), "{place}: {line}\n{err}");
    }
    assert!(err.contains("8 error(s)"), "{err}");
}

/// The path hint reaches the user through `validate` (planning a file whose
/// keys all read).
#[test]
fn a_json_path_with_a_dash_names_the_bracket_form() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.yaml");
    std::fs::write(
        &path,
        "suite: p\nchecks:\n  - id: one\n    steps:\n      - request: { path: /public/v1/contacts }\n        expect:\n          json: { $.headers.x-request-id: present }\n",
    )
    .unwrap();
    let out = tminus(
        dir.path(),
        &["validate", path.to_str().unwrap()],
        &[],
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(tminus::exit::INVALID), "{err}");
    assert!(
        err.contains("names with `-` need bracket notation: $.headers['x-request-id']"),
        "{err}"
    );
}

/// A user's suite run with no target says it certifies the embedded
/// reference, not their API, at the start, beside the verdict and in the
/// JSON report; a shipped suite (written for the reference) does not.
#[test]
fn a_suite_for_another_api_run_with_no_target_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.yaml");
    std::fs::write(
        &path,
        "suite: mine\nchecks:\n  - id: orders\n    steps:\n      - request: { method: GET, path: /orders }\n        expect: { status: 200 }\n",
    )
    .unwrap();
    let out = tminus(
        dir.path(),
        &[
            "run",
            path.to_str().unwrap(),
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    let said = "suite `mine` runs against the embedded reference integration, not your API";
    assert_eq!(err.matches(said).count(), 2, "start and end:\n{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    let warnings = report["warnings"].as_array().expect("warnings");
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains(said) && w.contains("`/orders`"))),
        "{warnings:?}"
    );

    let shipped = common::repo().join("suites/trace.yaml");
    let out = tminus(
        dir.path(),
        &[
            "run",
            shipped.to_str().unwrap(),
            "--only",
            "trace-ids-unique",
            "--report-dir",
            dir.path().to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("not your API"), "{err}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    // No warning at all: the report leaves the key out.
    assert!(
        report["warnings"].as_array().is_none_or(|w| w.is_empty()),
        "{report}"
    );
}

/// An API of one's own that serves none of the suite's routes: FastAPI's
/// way of answering them (404 for an unknown path, 405 for a known path
/// with the wrong method), counted.
fn another_api() -> (
    common::AppHandle,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use axum::http::StatusCode;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let app = axum::Router::new()
        .route("/orders", axum::routing::get(|| async { "[]" }))
        .fallback(|| async { (StatusCode::NOT_FOUND, "{\"detail\":\"Not Found\"}") })
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                counter.fetch_add(1, Ordering::SeqCst);
                next.run(req)
            },
        ));
    (common::AppHandle::start(app), seen)
}

#[test]
fn a_suite_its_target_does_not_serve_stops_early_and_says_why() {
    let (app, seen) = another_api();
    let dir = tempfile::tempdir().unwrap();
    let suite = common::repo().join("suites/launch-checklist.yaml");
    let (json, out) = common::run_with_json(dir.path(), &suite, &app.url, &[], &[]);
    let sent = seen.load(std::sync::atomic::Ordering::SeqCst);
    let err = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(sent <= 50, "{sent} requests before it stopped:\n{err}");
    assert!(err.contains("does not serve this suite's routes"), "{err}");
    assert!(err.contains("init --from-openapi"), "{err}");
    let verdicts = common::verdicts(&json);
    let errors = verdicts.iter().filter(|(_, v)| v == "error").count();
    let failed = verdicts.iter().filter(|(_, v)| v == "fail").count();
    // One error says it after the first few checks; what follows is not
    // run, not a page of failures.
    let decided = verdicts
        .iter()
        .position(|(_, v)| v == "skipped")
        .expect("the rest is skipped");
    assert!(decided <= 5, "{verdicts:?}");
    assert!(errors + failed <= 5, "{verdicts:?}");
    let report = std::fs::read_to_string(&json).unwrap();
    assert_eq!(
        report
            .matches("does not serve this suite's routes: all")
            .count(),
        1,
        "{report}"
    );
    assert!(
        verdicts.iter().filter(|(_, v)| v == "skipped").count() > 10,
        "{verdicts:?}"
    );
    eprintln!("stopped after {sent} requests; {verdicts:?}");
}

#[test]
fn one_served_answer_keeps_the_suite_running() {
    // The same API also serves one of the suite's routes: the rule never
    // decides, whatever else is missing.
    use axum::http::StatusCode;
    let app = axum::Router::new()
        .route(
            "/public/v1/contacts",
            axum::routing::get(|| async { (StatusCode::OK, "[]") }),
        )
        .fallback(|| async { StatusCode::NOT_FOUND });
    let app = common::AppHandle::start(app);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("s.yaml");
    let mut checks = String::new();
    for i in 0..8 {
        checks.push_str(&format!(
            "  - id: c{i}\n    steps:\n      - request: {{ path: /missing/{i} }}\n        expect: {{ status: 404 }}\n"
        ));
    }
    std::fs::write(
        &suite,
        format!(
            "suite: s\nchecks:\n  - id: served\n    steps:\n      - request: {{ path: /public/v1/contacts }}\n        expect: {{ status: 200 }}\n{checks}"
        ),
    )
    .unwrap();
    let (json, out) = common::run_with_json(dir.path(), &suite, &app.url, &[], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(common::verdicts(&json).iter().all(|(_, v)| v == "pass"));
}
