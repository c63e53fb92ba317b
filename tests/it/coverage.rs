//! Issue 28 part 3: every check kind carries its catalogue requirements.
//! The table in `src/coverage.rs` is held to the registry and to the
//! catalogue ids each kind's summary names.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use tminus::coverage::{of_kind, point_of, CATALOGUE, KINDS};

/// The catalogue ids written in a text: `IDEM-002`, `WH-003a`, and a range
/// `IDEM-C01..C03` as its members.
fn ids_in(text: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"\b([A-Z]+)-([0-9A-Z]+[a-z]?)(?:\.\.([0-9A-Z]+))?").unwrap();
    let mut out = BTreeSet::new();
    for c in re.captures_iter(text) {
        let prefix = &c[1];
        let first = c[2].to_owned();
        out.insert(format!("{prefix}-{first}"));
        if let Some(last) = c.get(3) {
            // `C01..C03`: the same letters, the numbers in between.
            let digits = |s: &str| {
                s.trim_start_matches(|ch: char| ch.is_ascii_alphabetic())
                    .to_owned()
            };
            let letters = first
                .trim_end_matches(|ch: char| ch.is_ascii_digit())
                .to_owned();
            let (a, b): (u32, u32) = (
                digits(&first).parse().unwrap(),
                digits(last.as_str()).parse().unwrap(),
            );
            let width = digits(&first).len();
            for n in a..=b {
                out.insert(format!("{prefix}-{letters}{n:0width$}"));
            }
        }
    }
    out.into_iter()
        .filter(|id| point_of(id).is_some())
        .collect()
}

#[test]
fn every_kind_has_a_row_and_every_row_is_a_kind() {
    let registry: Vec<&str> = tminus::families::kind_names()
        .chain([
            "load.threshold",
            "load.delivery",
            "load.effects",
            "load.observe",
            "load.webhooks",
        ])
        .collect();
    let rows: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
    for k in &registry {
        assert!(rows.contains(k), "kind `{k}` has no row in coverage::KINDS");
    }
    for k in &rows {
        assert!(
            registry.contains(k),
            "coverage::KINDS names `{k}`, which is no kind"
        );
    }
    let mut seen = BTreeSet::new();
    for (k, ids) in KINDS {
        assert!(seen.insert(*k), "`{k}` has two rows");
        assert_eq!(
            *k == "steps",
            ids.is_empty(),
            "{k}: only plain steps certify nothing"
        );
        let points: BTreeSet<u8> = ids
            .iter()
            .map(|id| {
                point_of(id)
                    .unwrap_or_else(|| panic!("{k}: `{id}` is not in the catalogue"))
                    .number
            })
            .collect();
        // A dependency kind also certifies the load point's LOAD-004 or
        // LOAD-007; every other kind stays within one point.
        assert!(
            points.len() <= 1 || k.starts_with("dependency."),
            "{k}: ids of several points {points:?}"
        );
        assert_eq!(
            of_kind(k).point,
            ids.first().and_then(|id| point_of(id)).map(|p| p.number),
            "{k}"
        );
    }
}

#[test]
fn the_ids_a_kind_summary_names_are_its_requirements() {
    for k in tminus::families::all_kinds() {
        let named = ids_in(k.summary);
        let row: BTreeSet<String> = of_kind(k.name).ids.iter().map(|s| s.to_string()).collect();
        let missing: Vec<&String> = named.difference(&row).collect();
        assert!(
            missing.is_empty(),
            "{}: the summary names {missing:?}, the coverage row has {row:?}",
            k.name
        );
    }
    // The range form reads as its members.
    assert_eq!(
        ids_in("(IDEM-C01..C03)"),
        ["IDEM-C01", "IDEM-C02", "IDEM-C03"]
            .map(String::from)
            .into()
    );
}

#[test]
fn catalogue_ids_are_unique() {
    let mut seen = BTreeSet::new();
    for p in CATALOGUE {
        for id in p.ids {
            assert!(seen.insert(*id), "`{id}` is listed twice");
        }
    }
}

/// Every id of the coverage table is defined in src/catalogue.rs (what
/// docs/requirements.md shows), in the same point; and when the project's
/// catalogue file is present (../shared/checks-catalogue.md, as in CI), the
/// transcription has exactly its ids. A clone on its own skips that half.
#[test]
fn the_catalogue_transcription_defines_every_id() {
    use tminus::catalogue::{requirement, REQUIREMENTS};
    for p in CATALOGUE {
        for id in p.ids {
            let r = requirement(id).unwrap_or_else(|| panic!("`{id}` is not in src/catalogue.rs"));
            assert_eq!(r.section, p.number, "`{id}`");
            assert!(!r.what.is_empty() && !r.severity.is_empty(), "`{id}`");
        }
    }
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/checks-catalogue.md");
    let Ok(text) = std::fs::read_to_string(&file) else {
        eprintln!("skipped: {} is absent (a clone on its own)", file.display());
        return;
    };
    let re = regex::Regex::new(r"(?m)^\| ([A-Z]+-[0-9A-Z]+[ab]?) \|").unwrap();
    let mut in_file: BTreeSet<String> = re.captures_iter(&text).map(|c| c[1].to_owned()).collect();
    // The receiver's valid baseline is defined in the prose above its table.
    if text.contains("**WH-000**") {
        in_file.insert("WH-000".to_owned());
    }
    let ours: BTreeSet<String> = REQUIREMENTS
        .iter()
        .map(|r| r.id.to_owned())
        .filter(|id| !id.starts_with("SEC-"))
        .collect();
    assert_eq!(
        in_file,
        ours,
        "src/catalogue.rs and {} disagree: transcribe the catalogue again",
        file.display()
    );
}

/// A real run: the JSON report, the HTML report, JUnit and the bundle's
/// manifest carry the coverage of what ran.
#[test]
fn reports_and_the_bundle_carry_the_coverage_of_what_ran() {
    use base64::Engine;
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let suite = common::repo().join("suites/trace.yaml");
    let out = common::tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--only",
            "trace-ids-unique",
            "--bundle",
            "b.tar.gz",
        ],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let read = |f: &str| std::fs::read_to_string(dir.path().join("reports").join(f)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&read("report.json")).unwrap();
    let trace = json["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["point"] == 4)
        .unwrap()
        .clone();
    assert_eq!(trace["covered"], serde_json::json!(["TRC-002"]), "{trace}");
    assert_eq!(trace["passed"], serde_json::json!(["TRC-002"]), "{trace}");
    assert_eq!(trace["required"].as_array().unwrap().len(), 10);
    let idem = &json["coverage"][0];
    assert!(idem["covered"].as_array().unwrap().is_empty(), "{idem}");
    assert_eq!(
        json["suites"][0]["checks"][0]["requirements"],
        serde_json::json!(["TRC-002"])
    );
    assert_eq!(json["suites"][0]["checks"][0]["point"], 4);
    let html = read("report.html");
    assert!(
        html.contains("<td><b>4. Trace correlation</b></td><td>10</td><td>1</td><td>1</td>"),
        "no coverage row in the HTML"
    );
    assert!(
        html.contains("TRC-C01"),
        "the HTML lists what was not covered"
    );
    assert!(read("junit.xml").contains(r#"name="requirements" value="TRC-002""#));
    let f = std::fs::File::open(dir.path().join("b.tar.gz")).unwrap();
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut env = Vec::new();
    for e in a.entries().unwrap() {
        let mut e = e.unwrap();
        if e.path().unwrap().to_str() == Some("manifest.dsse.json") {
            e.read_to_end(&mut env).unwrap();
        }
    }
    let env: serde_json::Value = serde_json::from_slice(&env).unwrap();
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(s["predicate"]["tminus"]["coverage"], json["coverage"]);
}

/// Every catalogue id is certified by some kind, except those no kind
/// judges yet (named here, so the list shrinks as kinds arrive: a new
/// mapping fails this test until its id is taken off the list).
#[test]
fn every_catalogue_id_is_mapped_to_a_kind_but_the_known_gaps() {
    // CON-001 is the runner's `contract` property on every check and
    // CON-002 `tminus contract diff`: neither is a kind.
    const UNMAPPED: &[&str] = &["CON-001", "CON-002", "CON-003", "CON-004"];
    let mapped: BTreeSet<&str> = KINDS
        .iter()
        .flat_map(|(_, ids)| ids.iter().copied())
        .collect();
    let missing: Vec<&str> = CATALOGUE
        .iter()
        .flat_map(|p| p.ids.iter().copied())
        .filter(|id| !mapped.contains(id))
        .collect();
    assert_eq!(missing, UNMAPPED, "ids no kind certifies");
}
