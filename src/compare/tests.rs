//! Unit tests of `compare`: pairing, verdicts, outputs.

use super::*;
use crate::families::load::stats::new_hist;
use crate::families::load::stats::KindStats;
use read::Slices;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A burst of one request kind `k`: `n` answers at `ms` each, `failed`
/// of them failed, over 10 s.
fn burst(id: &str, kinds: &[(&str, u64, u64, u64)]) -> BurstData {
    let mut overall = KindStats::new();
    let kinds = kinds
        .iter()
        .map(|&(name, n, ms, failed)| {
            let mut k = KindStats::new();
            let (mut raw, mut corrected) = (new_hist(), new_hist());
            for i in 0..n {
                // A spread of ±10 % around `ms`, so percentiles differ.
                let us = ms * 1000 * (90 + i % 21) / 100;
                raw.record(us).unwrap();
                corrected.record(us).unwrap();
            }
            (k.raw, k.corrected, k.requests, k.failed) = (raw, corrected, n, failed);
            overall.add(&k);
            (name.to_owned(), k)
        })
        .collect();
    BurstData {
        id: id.into(),
        summary_file: PathBuf::from(format!("{id}.json")),
        cancelled: false,
        elapsed_s: 10.0,
        kinds,
        overall,
        slices: Slices::default(),
    }
}

fn by_id(b: &[BurstData]) -> BTreeMap<String, &BurstData> {
    b.iter().map(|b| (b.id.clone(), b)).collect()
}

fn run(
    base: &[BurstData],
    run: &[BurstData],
    thresholds: &[&str],
) -> Result<(Comparison, Outcome), String> {
    let t = thresholds
        .iter()
        .map(|t| threshold::parse(t).unwrap())
        .collect();
    let c = compare(
        Path::new("b"),
        Path::new("r"),
        &by_id(base),
        &by_id(run),
        t,
        &Bands::default(),
    )?;
    let o = outcome(&c);
    Ok((c, o))
}

#[test]
fn a_certain_regression_fails_even_beside_an_inconclusive_verdict() {
    let base = [burst("s/b", &[("list", 2_000, 20, 0), ("tiny", 20, 20, 0)])];
    let slow = [burst("s/b", &[("list", 2_000, 60, 0), ("tiny", 20, 20, 0)])];
    let (c, o) = run(
        &base,
        &slow,
        &["list: p95_regression < 10%", "tiny: p99_regression < 10%"],
    )
    .unwrap();
    assert_eq!(o.code, exit::CHECK_FAILED, "{}", o.message);
    assert!(
        o.message.starts_with(
            "regression: s/b request kind `list`: `list: p95_regression < 10%` broke (×"
        ),
        "{}",
        o.message
    );
    assert!(o.message.contains("not compared (1)"), "{}", o.message);
    let table = render::console(&c);
    assert!(
        table.contains("FAIL (list: p95_regression < 10%)"),
        "{table}"
    );
    assert!(table.contains("not compared: too few answers"), "{table}");
    // The same burst against itself holds; the tiny kind alone is inconclusive.
    let (_, o) = run(&base, &base, &["list: p95_regression < 10%"]).unwrap();
    assert_eq!(o.code, exit::OK, "{}", o.message);
    let (_, o) = run(&base, &base, &["tiny: p99_regression < 10%"]).unwrap();
    assert_eq!(o.code, exit::INCONCLUSIVE);
    assert!(o.message.starts_with("inconclusive: "), "{}", o.message);
}

#[test]
fn bursts_and_kinds_in_only_one_folder_are_named() {
    let a = [burst("s/a", &[("list", 100, 20, 0)])];
    let b = [burst("s/b", &[("list", 100, 20, 0)])];
    let e = run(&a, &b, &[]).err().unwrap();
    assert!(
        e.contains("only in the baseline b: `s/a`") && e.contains("only in the run r: `s/b`"),
        "{e}"
    );
    let other = [burst("s/a", &[("count", 100, 20, 0)])];
    let e = run(&a, &other, &[]).err().unwrap();
    assert!(
        e.contains("`list` only in the baseline, `count` only in the run"),
        "{e}"
    );
    assert!(run(&[], &[], &[]).err().unwrap().contains("no burst"));
}

#[test]
fn error_rates_and_cancelled_bursts_are_judged_on_their_intervals() {
    let base = [burst("s/b", &[("list", 4_000, 20, 0)])];
    let failing = [burst("s/b", &[("list", 4_000, 20, 400)])];
    let (_, o) = run(&base, &failing, &["error_rate_increase < 1%"]).unwrap();
    assert_eq!(o.code, exit::CHECK_FAILED, "{}", o.message);
    let (_, o) = run(&base, &base, &["error_rate_increase < 1%"]).unwrap();
    assert_eq!(o.code, exit::OK, "{}", o.message);
    let mut cancelled = burst("s/b", &[("list", 4_000, 20, 0)]);
    cancelled.cancelled = true;
    let (c, o) = run(&base, &[cancelled], &["error_rate_increase < 1%"]).unwrap();
    assert_eq!(o.code, exit::RUN_BROKEN);
    assert!(c.bursts[0]
        .unjudgeable
        .as_deref()
        .unwrap()
        .contains("cancelled"));
}

#[test]
fn outputs_never_overwrite_inputs_or_each_other() {
    let inputs = [PathBuf::from("/x/load-s-b.json")];
    let e = outputs_apart(&[("--html", Path::new("/x/load-s-b.json"))], &inputs).unwrap_err();
    assert!(e.contains("would overwrite"), "{e}");
    let e = outputs_apart(
        &[
            ("--html", Path::new("/y/o")),
            ("--markdown", Path::new("/y/o")),
        ],
        &inputs,
    )
    .unwrap_err();
    assert!(e.contains("both write"), "{e}");
    assert!(outputs_apart(&[("--html", Path::new("/y/o.html"))], &inputs).is_ok());
}

#[test]
fn names_from_files_are_escaped_in_markdown_and_html() {
    let base = [burst("s/<b>|x", &[("<script>", 200, 20, 0)])];
    let (c, o) = run(&base, &base, &["p95_regression < 10%"]).unwrap();
    let page = render::html(&c, &o);
    assert!(!page.contains("<script>") && page.contains("&lt;script&gt;"));
    let md = render::markdown(&c, &o);
    assert!(!md.contains("<b>") && md.contains("\\|x"), "{md}");
}
