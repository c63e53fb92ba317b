//! Issue 28 part 3: every check kind carries its catalogue requirements.
//! The table in `src/coverage.rs` is held to the registry and to the
//! catalogue ids each kind's summary names.

use std::collections::BTreeSet;

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
        .chain(["load.threshold", "load.delivery", "load.effects"])
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
        assert!(points.len() <= 1, "{k}: ids of several points {points:?}");
        assert_eq!(of_kind(k).point, points.first().copied(), "{k}");
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
