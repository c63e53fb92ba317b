//! `tminus contract diff OLD NEW` (issue 43):
//! - the corpus in tests/fixtures/contract-diff/ (one change per folder,
//!   written by its make.py): every folder gives exactly the rule ids its
//!   expect.yaml names, at the table's levels, and the exit code it names
//!   (1 only for a breaking change no major version allows);
//! - the four outputs agree (console, JSON, JUnit with one testcase per
//!   rule, Markdown appended to $GITHUB_STEP_SUMMARY), and a URL is read;
//! - a document tminus cannot read is exit 3, named at file:line:col;
//! - the OpenAPI Initiative's examples in ../shared/openapi (third-party
//!   documents, read in place, never copied here) diffed against
//!   themselves report nothing, quickly;
//! - two versions of a document FastAPI generates at test time (Debian's
//!   python3-fastapi): the changes made to the app are the ones reported.
//!   Skipped without FastAPI unless TMINUS_REQUIRE_FASTAPI=1.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{repo, stderr, stdout, tminus};
use serde_json::Value;

fn corpus() -> PathBuf {
    repo().join("tests/fixtures/contract-diff")
}

fn diff(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut all = vec!["contract", "diff"];
    all.extend_from_slice(args);
    tminus(dir, &all, envs, Duration::from_secs(60))
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(out), stderr(out)))
}

fn ids(report: &Value) -> BTreeSet<String> {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_corpus_gives_every_change_its_class() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 40,
        "only {} pairs in the corpus",
        cases.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let mut met = BTreeSet::new();
    let mut wrong = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let expect: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(case.join("expect.yaml")).unwrap())
                .unwrap();
        let want: BTreeSet<String> = expect["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect();
        let (old, new) = (case.join("old.yaml"), case.join("new.yaml"));
        let mut args = vec![
            old.to_str().unwrap(),
            new.to_str().unwrap(),
            "--format",
            "json",
        ];
        if let Some(level) = expect["fail_on"].as_str() {
            args.extend(["--fail-on", level]);
        }
        let out = diff(dir.path(), &args, &[]);
        let report = json_of(&out);
        let got = ids(&report);
        let code = out.status.code();
        let want_code = expect["exit"].as_i64().map(|c| c as i32);
        if got != want || code != want_code {
            wrong.push(format!(
                "{name} ({}): rules {got:?}, want {want:?}; exit {code:?}, want {want_code:?}\n{}",
                expect["change"],
                serde_json::to_string_pretty(&report["changes"]).unwrap()
            ));
            continue;
        }
        let allowed = expect["allowed"].as_bool().unwrap_or(false);
        for c in report["changes"].as_array().unwrap() {
            // Every change at its rule's level in the table.
            let rule = tminus::contract::diff::rule(c["id"].as_str().unwrap());
            assert_eq!(c["level"], rule.level.as_str(), "{name}: {c}");
            if c["level"] != "INFO" {
                assert_eq!(c["allowed"].is_string(), allowed, "{name}: {c}");
            }
            met.insert(rule.id);
        }
        if allowed {
            assert!(
                report["version_note"].is_string() || report["changes"][0]["allowed"].is_string()
            );
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
    let unmet: Vec<&str> = tminus::contract::diff::RULES
        .iter()
        .map(|r| r.id)
        .filter(|id| !met.contains(id))
        .collect();
    eprintln!("{} rules met by the corpus; not met: {unmet:?}", met.len());
}

/// The case with a breaking change, through every output.
#[test]
fn console_json_junit_and_markdown_agree() {
    let case = corpus().join("35-response-required-property-removed");
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (case.join("old.yaml"), case.join("new.yaml"));
    let (junit, md, json, step) = (
        dir.path().join("diff.xml"),
        dir.path().join("diff.md"),
        dir.path().join("diff.json"),
        dir.path().join("step.md"),
    );
    std::fs::write(&step, "earlier step\n").unwrap();
    let out = diff(
        dir.path(),
        &[
            old.to_str().unwrap(),
            new.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[("GITHUB_STEP_SUMMARY", step.to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let console = stdout(&out);
    assert!(
        console.contains("ERR   response-required-property-removed")
            && console.contains("GET /pets/{petId} response 200 application/json, property status")
            && console.contains("FAIL"),
        "{console}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["exit_code"], 1);
    assert_eq!(report["verdict"], "FAIL");
    let failing = report["counts"]["failing"].as_u64().unwrap();
    assert!(failing >= 1, "{report}");
    // JUnit: one testcase per rule, the rule with the change failing.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), tminus::contract::diff::RULES.len(), "{xml}");
    let failed: Vec<&str> = cases
        .iter()
        .filter(|c| c.children().any(|x| x.has_tag_name("failure")))
        .map(|c| c.attribute("name").unwrap())
        .collect();
    assert_eq!(failed, ["response-required-property-removed"], "{xml}");
    let md_text = std::fs::read_to_string(&md).unwrap();
    assert!(
        md_text.starts_with("## tminus contract diff: FAIL")
            && md_text.contains("`response-required-property-removed`"),
        "{md_text}"
    );
    let appended = std::fs::read_to_string(&step).unwrap();
    assert!(
        appended.starts_with("earlier step\n") && appended.contains(&md_text),
        "{appended}"
    );
    // The same two documents, stdout as JUnit and Markdown.
    for (format, start) in [
        ("junit", "<?xml"),
        ("markdown", "## tminus contract diff: FAIL"),
    ] {
        let out = diff(
            dir.path(),
            &[
                old.to_str().unwrap(),
                new.to_str().unwrap(),
                "--format",
                format,
            ],
            &[],
        );
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stdout(&out).starts_with(start),
            "{format}: {}",
            stdout(&out)
        );
    }
}

/// OLD read from a URL (as a base branch's document served by a preview).
#[test]
fn a_url_is_read_and_compared() {
    let case = corpus().join("08-parameter-required-added");
    let text = std::fs::read_to_string(case.join("old.yaml")).unwrap();
    let app = axum::Router::new().route(
        "/openapi.yaml",
        axum::routing::get(move || {
            let t = text.clone();
            async move { t }
        }),
    );
    let served = common::AppHandle::start(app);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/openapi.yaml", served.url);
    let new = case.join("new.yaml");
    let out = diff(
        dir.path(),
        &[&url, new.to_str().unwrap(), "--format", "json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        ids(&json_of(&out)),
        BTreeSet::from(["new-required-request-parameter".to_owned()])
    );
    let missing = format!("{}/nothing.yaml", served.url);
    let out = diff(dir.path(), &[&missing, new.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("404"), "{}", stderr(&out));
}

#[test]
fn a_document_tminus_cannot_read_is_exit_3_named_at_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let good = corpus().join("58-identical/old.yaml");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "openapi: 3.0.3\ninfo: {title: x, version: 1}\npaths:\n  /a: [\n",
    )
    .unwrap();
    let out = diff(
        dir.path(),
        &[good.to_str().unwrap(), bad.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    let at = regex::Regex::new(r"bad\.yaml:\d+:\d+: not valid YAML").unwrap();
    assert!(at.is_match(&err), "{err}");
    let json = dir.path().join("bad.json");
    std::fs::write(&json, "{\"openapi\": \"3.1.0\",\n \"paths\": {,}}").unwrap();
    let out = diff(
        dir.path(),
        &[good.to_str().unwrap(), json.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("bad.json:2:"), "{}", stderr(&out));
    let swagger = dir.path().join("swagger.yaml");
    std::fs::write(
        &swagger,
        "swagger: '2.0'\ninfo: {title: x, version: 1}\npaths: {}\n",
    )
    .unwrap();
    let out = diff(
        dir.path(),
        &[swagger.to_str().unwrap(), good.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("Swagger 2.0"), "{}", stderr(&out));
    let out = diff(
        dir.path(),
        &["/nonexistent/openapi.yaml", good.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(3));
    // A bad flag is usage (exit 2), not a broken diff.
    let out = diff(
        dir.path(),
        &[
            good.to_str().unwrap(),
            good.to_str().unwrap(),
            "--fail-on",
            "SOMETIMES",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn real_documents_against_themselves_report_nothing_quickly() {
    let shared = repo().join("../shared/openapi");
    if !shared.is_dir() {
        eprintln!(
            "skipped: {} is absent (third-party documents live beside the checkout, never in it)",
            shared.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir(&shared).unwrap() {
        let p = entry.unwrap().path();
        if !matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            continue;
        }
        let doc = p.to_str().unwrap();
        let started = Instant::now();
        let out = diff(dir.path(), &[doc, doc, "--format", "json"], &[]);
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(0), "{doc}: {}", stderr(&out));
        let report = json_of(&out);
        assert_eq!(report["changes"], serde_json::json!([]), "{doc}");
        // The process, start-up included; a debug build on a shared machine.
        assert!(took < Duration::from_secs(10), "{doc}: {took:?}");
        seen += 1;
    }
    assert!(seen >= 5, "only {seen} documents in {}", shared.display());
}

/// Version 1 and 2 of a small FastAPI app. Version 2: `Item.name` renamed
/// `title` (FastAPI writes one `Item` schema for the body and the
/// response), a required query parameter on the listing, a new DELETE.
const APP: &str = r#"
import json, sys
from typing import List
from fastapi import FastAPI
from pydantic import BaseModel

V = sys.argv[1]
app = FastAPI(title="Items", version=sys.argv[2])

if V == "1":
    class Item(BaseModel):
        name: str
        price: float
        tags: List[str] = []
else:
    class Item(BaseModel):
        title: str
        price: float
        tags: List[str] = []

@app.post("/items", response_model=Item, status_code=201)
def create(item: Item):
    return item

if V == "1":
    @app.get("/items", response_model=List[Item])
    def list_items(limit: int = 10):
        return []
else:
    @app.get("/items", response_model=List[Item])
    def list_items(shop: str, limit: int = 10):
        return []

    @app.delete("/items/{item_id}", status_code=204)
    def delete(item_id: int):
        return None

print(json.dumps(app.openapi()))
"#;

#[test]
fn two_versions_of_a_fastapi_document_give_the_changes_made() {
    let Some(python) = common::required_python("fastapi, pydantic") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app.py");
    std::fs::write(&app, APP).unwrap();
    let dump = |v: &str, version: &str| {
        let out = Command::new(&python)
            .arg(&app)
            .args([v, version])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let path = dir.path().join(format!("v{v}-{version}.json"));
        std::fs::write(&path, &out.stdout).unwrap();
        path
    };
    let (v1, v2) = (dump("1", "1.0.0"), dump("2", "1.1.0"));
    let out = diff(
        dir.path(),
        &[
            v1.to_str().unwrap(),
            v2.to_str().unwrap(),
            "--format",
            "json",
        ],
        &[],
    );
    let report = json_of(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    let got = ids(&report);
    for want in [
        "response-property-renamed",
        "new-required-request-property",
        "request-property-removed",
        "new-required-request-parameter",
        "endpoint-added",
    ] {
        assert!(got.contains(want), "{want} not in {got:?}\n{report:#}");
    }
    // Nothing the change did not make: every reported change is about
    // Item's name/title, the new parameter or the new operation.
    for c in report["changes"].as_array().unwrap() {
        let text = c.to_string();
        assert!(
            ["name", "title", "shop", "DELETE /items/{item_id}"]
                .iter()
                .any(|w| text.contains(w)),
            "an unexpected change: {c}"
        );
    }
    assert!(
        report["version_note"]
            .as_str()
            .unwrap_or("")
            .contains("1.0.0 -> 1.1.0"),
        "{report}"
    );
    // The same change under a new major version is allowed.
    let v2_major = dump("2", "2.0.0");
    let out = diff(
        dir.path(),
        &[v1.to_str().unwrap(), v2_major.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("(allowed)"), "{}", stdout(&out));
    // A FastAPI document against itself: nothing.
    let out = diff(
        dir.path(),
        &[
            v1.to_str().unwrap(),
            v1.to_str().unwrap(),
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json_of(&out)["changes"], serde_json::json!([]));
}

/// docs/contract.md shows the rule table as `tminus contract rules` prints it.
#[test]
fn the_docs_show_the_rule_table() {
    let page = std::fs::read_to_string(repo().join("docs/contract.md")).unwrap();
    let table = tminus::contract::diff::rules_markdown();
    assert!(
        page.contains(&table),
        "docs/contract.md lacks the rule table: `tminus contract rules` prints it:\n{table}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = tminus(
        dir.path(),
        &["contract", "rules"],
        &[],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), table);
}
