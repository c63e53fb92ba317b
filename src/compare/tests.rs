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

/// Every threshold verdict of a comparison, in table order.
fn classes(c: &Comparison, mirrored: bool) -> Vec<&'static str> {
    c.bursts
        .iter()
        .flat_map(|b| &b.groups)
        .flat_map(|g| &g.rows)
        .flat_map(|r| &r.verdicts)
        .map(|(_, v)| {
            if mirrored {
                v.mirrored().class()
            } else {
                v.class()
            }
        })
        .collect()
}

#[test]
fn the_other_order_gives_the_mirrored_verdict() {
    let all = [
        "p50_regression < 10%",
        "p95_regression < 10%",
        "p99_regression < 20%",
        "raw_p95_regression < 5%",
        "list: p95_regression < 10%",
        "throughput_drop < 5%",
        "error_rate_increase < 1%",
    ];
    let pairs = [
        // slower by 3 ms at 20 ms: a regression one way, an improvement back
        (("list", 4_000, 20, 0), ("list", 4_000, 23, 0)),
        // the same figures: no change both ways
        (("list", 4_000, 20, 0), ("list", 4_000, 20, 0)),
        // 2 % slower: inside the limit, or across it, the same both ways
        (("list", 2_000, 20, 0), ("list", 2_000, 21, 0)),
        // fewer answers and more errors in one
        (("list", 3_000, 20, 10), ("list", 1_500, 22, 40)),
    ];
    for (a, b) in pairs {
        let (x, y) = ([burst("s/b", &[a])], [burst("s/b", &[b])]);
        let (ab, oab) = run(&x, &y, &all).unwrap();
        let (ba, oba) = run(&y, &x, &all).unwrap();
        assert_eq!(
            classes(&ab, false),
            classes(&ba, true),
            "{a:?} vs {b:?}: {} / {}",
            oab.message,
            oba.message
        );
        // A regression one way is an improvement the other; the exit code
        // of that order is 0, or 4 when another verdict is inconclusive
        // (a certain regression fails beside an inconclusive verdict, an
        // improvement does not pass beside one).
        if oab.code == exit::CHECK_FAILED {
            assert!(
                classes(&ba, false).contains(&"improvement"),
                "{}",
                oba.message
            );
            assert!(
                oba.code == exit::OK || oba.code == exit::INCONCLUSIVE,
                "{}",
                oba.message
            );
        }
    }
    let (x, y) = (
        [burst("s/b", &[("list", 4_000, 20, 0)])],
        [burst("s/b", &[("list", 4_000, 23, 0)])],
    );
    let (_, o) = run(&x, &y, &["p95_regression < 10%"]).unwrap();
    assert_eq!(o.code, exit::CHECK_FAILED, "{}", o.message);
    let (_, o) = run(&y, &x, &["p95_regression < 10%"]).unwrap();
    assert_eq!(o.code, exit::OK, "{}", o.message);
    assert!(o.message.contains("improvement"), "{}", o.message);
}

#[test]
fn a_measure_with_too_few_answers_leaves_the_verdict_to_the_others() {
    // 300 answers: p95 is compared, p99 (500 needed) is not.
    let base = [burst("s/b", &[("list", 300, 20, 0)])];
    let (c, o) = run(
        &base,
        &base,
        &["p95_regression < 10%", "p99_regression < 20%"],
    )
    .unwrap();
    assert_eq!(o.code, exit::OK, "{}", o.message);
    assert!(o.message.contains("not compared (1)"), "{}", o.message);
    assert!(render::console(&c).contains("not compared: too few answers"));
    // Nothing could judge: inconclusive.
    let (_, o) = run(&base, &base, &["p99_regression < 20%"]).unwrap();
    assert_eq!(o.code, exit::INCONCLUSIVE, "{}", o.message);
}

#[test]
fn small_changes_are_below_the_floor_and_the_harness_lateness_counts() {
    // 0.8 ms → 1.2 ms: ×1.5, but 0.4 ms is below the 1 ms floor.
    let us = |n: u64, at: u64| {
        let mut b = burst("s/b", &[("list", n, 1, 0)]);
        for (_, k) in b.kinds.iter_mut() {
            let (mut raw, mut corrected) = (new_hist(), new_hist());
            for i in 0..n {
                raw.record(at * (95 + i % 11) / 100).unwrap();
                corrected.record(at * (95 + i % 11) / 100).unwrap();
            }
            (k.raw, k.corrected) = (raw, corrected);
        }
        b.overall = b.kinds[0].1.clone();
        b
    };
    let (fast, slow) = ([us(2_000, 800)], [us(2_000, 1_200)]);
    let (c, o) = run(&fast, &slow, &["p95_regression < 10%"]).unwrap();
    assert_eq!(o.code, exit::OK, "{}", o.message);
    assert!(o.message.contains("below the floor"), "{}", o.message);
    assert!(render::console(&c).contains("pass, below the floor"));
    let (_, o) = run(&fast, &slow, &["p95_regression < 10% min 0.1ms"]).unwrap();
    assert_eq!(o.code, exit::CHECK_FAILED, "{}", o.message);
    // 20 ms → 30 ms while tminus's own p95 lateness went 0.1 → 4 ms: the
    // machine could explain 10 ms (4 × 3.9 ms), so no verdict either way.
    let late = |mut b: BurstData, ms: u64| {
        for (_, k) in b.kinds.iter_mut() {
            k.lateness = new_hist();
            for i in 0..k.requests {
                k.lateness.record(ms * 1000 * (90 + i % 21) / 100).unwrap();
            }
        }
        b.overall = b.kinds[0].1.clone();
        b
    };
    let quiet = [late(burst("s/b", &[("list", 2_000, 20, 0)]), 0)];
    let busy = [late(burst("s/b", &[("list", 2_000, 30, 0)]), 4)];
    for (a, b) in [(&quiet, &busy), (&busy, &quiet)] {
        let (_, o) = run(a, b, &["p95_regression < 10%"]).unwrap();
        assert_eq!(o.code, exit::INCONCLUSIVE, "{}", o.message);
        assert!(
            o.message.contains("tminus's own lateness at p95"),
            "{}",
            o.message
        );
    }
}
