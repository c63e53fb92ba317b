//! Issue 28 part 4: waivers on the real binary against the embedded
//! reference. A waiver in force turns a broken property into `waived` (the
//! run passes, every report lists it); past its date the property fails the
//! run (exit 1) with "waiver expired on DATE"; a waiver naming a property
//! the kind does not judge is an error at its file:line:col. The date logic
//! itself is unit-tested with an injected day (`src/waiver.rs`).

use crate::common;

use std::time::Duration;

use common::{stderr, tminus};

const DEADLINE: Duration = Duration::from_secs(120);

/// `steps` checks of the embedded reference: `broken` expects a status the
/// reference never sends; `fine` holds. `{BROKEN}` and `{FINE}` take waivers.
const SUITE: &str = r#"suite: waivers
checks:
  - id: broken
    {BROKEN}
    steps:
      - request: { path: /healthz }
        expect: { status: 418 }
  - id: fine
    {FINE}
    steps:
      - request: { path: /healthz }
        expect: { status: 200 }
"#;

/// The Statement of an unsigned bundle (its envelope's payload).
fn statement(bundle: &std::path::Path) -> serde_json::Value {
    use base64::Engine;
    use std::io::Read;
    let f = std::fs::File::open(bundle).unwrap();
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
    for e in a.entries().unwrap() {
        let mut e = e.unwrap();
        if e.path().unwrap().to_str() == Some("manifest.dsse.json") {
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            let env: serde_json::Value = serde_json::from_slice(&b).unwrap();
            let payload = base64::engine::general_purpose::STANDARD
                .decode(env["payload"].as_str().unwrap())
                .unwrap();
            return serde_json::from_slice(&payload).unwrap();
        }
    }
    panic!("no manifest in {}", bundle.display());
}

type Run = (
    i32,
    String,
    serde_json::Value,
    String,
    String,
    serde_json::Value,
);

fn run(broken: &str, fine: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let suite = SUITE.replace("{BROKEN}", broken).replace("{FINE}", fine);
    std::fs::write(dir.path().join("w.yaml"), suite).unwrap();
    let out = tminus(
        dir.path(),
        &["run", "w.yaml", "--bundle", "b.tar.gz"],
        &[],
        DEADLINE,
    );
    let read =
        |f: &str| std::fs::read_to_string(dir.path().join("reports").join(f)).unwrap_or_default();
    let json = serde_json::from_str(&read("report.json")).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        stderr(&out),
        json,
        read("junit.xml"),
        read("report.html"),
        statement(&dir.path().join("b.tar.gz")),
    )
}

#[test]
fn a_waiver_in_force_reports_the_broken_property_waived_and_the_run_passes() {
    let (code, err, json, junit, html, manifest) = run(
        r#"waive: { property: steps, reason: "teapot support lands in v2 (TICKET-7)", until: 2099-12-31 }"#,
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("WAIVE broken"), "{err}");
    assert!(
        err.contains(
            "waivers/broken.steps  waived until 2099-12-31: teapot support lands in v2 (TICKET-7)"
        ),
        "{err}"
    );
    assert!(err.contains("1 waived"), "{err}");
    let c = &json["suites"][0]["checks"][0];
    assert_eq!(c["verdict"], "waived", "{c}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("was fail: step 1: status: expected 418"),
        "{c}"
    );
    assert_eq!(json["waivers"][0]["state"], "applied");
    assert_eq!(json["waivers"][0]["until"], "2099-12-31");
    assert_eq!(json["totals"]["waived"], 1);
    // CI tools show a skipped testcase with its message.
    assert!(
        junit.contains(
            r#"<skipped message="waived until 2099-12-31: teapot support lands in v2 (TICKET-7)"#
        ),
        "{junit}"
    );
    assert!(junit.contains(r#"type="waived""#), "{junit}");
    assert!(
        html.contains("<h2>Waivers</h2>") && html.contains("TICKET-7"),
        "waivers not in the HTML"
    );
    // The bundle lists it, and a waived property is not a clean pass.
    let p = &manifest["predicate"];
    assert_eq!(p["result"], "WARNED", "{p}");
    assert_eq!(
        p["tminus"]["waivers"][0]["reason"],
        "teapot support lands in v2 (TICKET-7)"
    );
    assert_eq!(p["warnedTests"], serde_json::json!(["waivers/broken"]));
}

#[test]
fn an_expired_waiver_fails_the_run_even_where_the_property_holds() {
    let (code, err, json, junit, _, manifest) = run(
        r#"waive: [{ property: steps, reason: "old deviation", until: 2020-01-31 }]"#,
        r#"waive: { property: steps, reason: "fixed since", until: 2020-01-31 }"#,
    );
    assert_eq!(code, 1, "{err}");
    for id in ["broken", "fine"] {
        let c = json["suites"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()
            .clone();
        assert_eq!(c["verdict"], "fail", "{c}");
        assert!(
            c["message"]
                .as_str()
                .unwrap()
                .starts_with("waiver expired on 2020-01-31"),
            "{c}"
        );
    }
    assert!(err.contains("it now holds: remove the waiver"), "{err}");
    assert!(junit.contains("waiver expired on 2020-01-31"), "{junit}");
    assert_eq!(manifest["predicate"]["result"], "FAILED");
    assert_eq!(
        manifest["predicate"]["tminus"]["waivers"][1]["state"],
        "expired"
    );
}

#[test]
fn a_waiver_of_a_property_the_kind_does_not_judge_is_an_error_at_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let suite = "suite: w\nchecks:\n  - id: replay\n    kind: idempotency.replay\n    waive:\n      - { property: markr, reason: r, until: 2099-01-01 }\n      - { property: marker, reason: r, until: 2099-02-30 }\n    request: { method: POST, path: /public/v1/messages, json: { contact_id: 1, text: hi } }\n    effects: { request: { path: /__tminus/effects }, value: $.messages }\n";
    std::fs::write(dir.path().join("w.yaml"), suite).unwrap();
    let out = tminus(dir.path(), &["validate", "w.yaml"], &[], DEADLINE);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`waive:` names `markr`, which `idempotency.replay` does not judge"),
        "{err}"
    );
    assert!(err.contains("did you mean `marker`?"), "{err}");
    assert!(err.contains("w.yaml:6:21"), "{err}");
    assert!(
        err.contains("`until:` `2099-02-30` is not a day of the calendar"),
        "{err}"
    );
    assert!(err.contains("w.yaml:7:47"), "{err}");
}
