//! `tminus compare BASELINE_DIR RUN_DIR` (issue 27, release baselines): the
//! bursts of a run judged against those of a baseline run (the last
//! release's report folder), per burst and per request kind: corrected
//! and raw p50/p95/p99 and throughput as ratios, error and 429 rates as
//! differences, each with a 95 % interval (`stats.rs`), judged by the
//! thresholds (`threshold.rs`) on the whole interval. Figures are read back
//! from the folders (`read.rs`), rendered for the console, Markdown and HTML
//! (`render.rs`).
//!
//! Exit codes: 0 every threshold held; 1 a threshold broke beyond doubt
//! (a certain regression fails even when another is inconclusive); 2 bad
//! input (a folder missing, a burst or request kind in only one folder, a
//! file that is not what tminus wrote, a bad threshold); 3 a cancelled burst (not measured); 4 inconclusive
//! (a verdict the noise could explain, too few answers).
//!
//! `tminus run --baseline DIR` reads the baseline with [`load_baseline`]
//! before anything is sent and judges the bursts it ran with [`judge_run`].

pub mod read;
pub mod render;
pub mod stats;
pub mod threshold;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::exit;
use crate::families::load::stats::KindStats;
use crate::families::load::summary::Distribution;
use read::{shown_name, BurstData};
use stats::{Change, Empirical};
use threshold::{Measure, Threshold, Verdict};

/// The percentiles every comparison shows (a threshold may add others).
pub const SHOWN_PERCENTILES: &[f64] = &[0.50, 0.95, 0.99];

/// What `tminus compare` was asked.
pub struct CompareOptions<'a> {
    pub baseline: &'a Path,
    pub run: &'a Path,
    /// As given; empty: [`threshold::DEFAULTS`].
    pub thresholds: &'a [String],
    pub outputs: Outputs,
}

/// Where a comparison is written besides the console.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    pub markdown: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// `$GITHUB_STEP_SUMMARY`, appended to.
    pub step_summary: Option<PathBuf>,
}

impl Outputs {
    fn named(&self) -> Vec<(&'static str, &Path)> {
        [
            ("--markdown", &self.markdown),
            ("--html", &self.html),
            ("$GITHUB_STEP_SUMMARY", &self.step_summary),
        ]
        .into_iter()
        .filter_map(|(f, p)| Some((f, p.as_deref()?)))
        .collect()
    }
}

/// The two folders compared, burst by burst.
pub struct Comparison {
    pub baseline_dir: PathBuf,
    pub run_dir: PathBuf,
    pub thresholds: Vec<Threshold>,
    pub bursts: Vec<BurstComparison>,
}

pub struct BurstComparison {
    /// `suite/load`.
    pub id: String,
    /// Why the burst cannot be judged at all (a cancelled run).
    pub unjudgeable: Option<String>,
    /// All requests first, then each request kind in the baseline's order.
    pub groups: Vec<Group>,
}

/// All requests of a burst, or one request kind.
pub struct Group {
    /// `None`: all requests.
    pub kind: Option<String>,
    pub baseline_requests: u64,
    pub run_requests: u64,
    pub rows: Vec<Row>,
    /// The percentile curves, for the HTML plot.
    pub baseline_curve: Distribution,
    pub run_curve: Distribution,
}

/// One measure, compared and judged.
pub struct Row {
    pub measure: Measure,
    /// ms for percentiles, per second for throughput, a share for rates.
    pub baseline: f64,
    pub run: f64,
    /// A ratio (percentiles, throughput) or a difference (rates).
    pub change: Change,
    /// Each threshold on this row with its verdict.
    pub verdicts: Vec<(String, Verdict)>,
}

impl Group {
    pub fn label(&self) -> String {
        match &self.kind {
            Some(k) => format!("request kind `{}`", shown_name(k)),
            None => "all requests".into(),
        }
    }
}

/// The run's outcome: exit code and the one-line verdict.
pub struct Outcome {
    pub code: i32,
    pub message: String,
}

/// A baseline folder read and checked, with the thresholds to judge by:
/// `tminus run --baseline DIR` reads it before anything is sent.
pub struct Baseline {
    pub dir: PathBuf,
    pub bursts: BTreeMap<String, BurstData>,
    pub thresholds: Vec<Threshold>,
}

/// Parses the thresholds (none: [`threshold::DEFAULTS`]) and reads the
/// baseline folder; an error is bad input (exit 2).
pub fn load_baseline(dir: &Path, thresholds: &[String]) -> Result<Baseline, String> {
    let texts: Vec<String> = if thresholds.is_empty() {
        threshold::DEFAULTS.iter().map(|t| t.to_string()).collect()
    } else {
        thresholds.to_vec()
    };
    let thresholds = texts
        .iter()
        .map(|t| threshold::parse(t).map_err(|e| format!("--threshold: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let bursts = read::read_dir(dir)?;
    for t in &thresholds {
        if let Some(k) = &t.scope {
            if !bursts.values().any(|b| b.kinds.iter().any(|(n, _)| n == k)) {
                return Err(format!(
                    "--threshold `{}` names request kind `{}`, which no burst of the baseline has",
                    t.text,
                    shown_name(k)
                ));
            }
        }
    }
    Ok(Baseline {
        dir: dir.to_path_buf(),
        bursts,
        thresholds,
    })
}

/// `tminus compare`: reads, compares, renders, returns the exit code.
pub fn cmd_compare(o: &CompareOptions<'_>) -> i32 {
    let judged = load_baseline(o.baseline, o.thresholds)
        .and_then(|b| judge_run(&b, o.run, None, &o.outputs));
    match judged {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            exit::INVALID
        }
    }
}

/// Compares the bursts in `run_dir` with the baseline's (only those of
/// `only`, `suite/load` ids, when given: the bursts a run just made),
/// prints the table and the verdict, writes the outputs; the exit code, or
/// bad input as an error (nothing judged, nothing written).
pub fn judge_run(
    baseline: &Baseline,
    run_dir: &Path,
    only: Option<&[String]>,
    outputs: &Outputs,
) -> Result<i32, String> {
    let mut run = read::read_dir(run_dir)?;
    let mut base: BTreeMap<String, &BurstData> = baseline
        .bursts
        .iter()
        .map(|(k, v)| (k.clone(), v))
        .collect();
    if let Some(ids) = only {
        run.retain(|k, _| ids.contains(k));
        base.retain(|k, _| ids.contains(k));
    }
    let mut inputs: Vec<PathBuf> = Vec::new();
    for b in base.values().copied().chain(run.values()) {
        inputs.push(b.summary_file.clone());
        inputs.push(read::kinds_hlog_path(&b.summary_file));
    }
    outputs_apart(&outputs.named(), &inputs)?;
    let comparison = compare(
        &baseline.dir,
        run_dir,
        &base,
        &run.iter().map(|(k, v)| (k.clone(), v)).collect(),
        baseline.thresholds.clone(),
    )?;
    let outcome = outcome(&comparison);
    print!("{}", render::console(&comparison));
    eprintln!("{}", outcome.message);
    let mut code = outcome.code;
    let markdown = render::markdown(&comparison, &outcome);
    let mut written = Vec::new();
    if let Some(p) = &outputs.markdown {
        written.push((p, crate::files::write_atomic(p, markdown.as_bytes())));
    }
    if let Some(p) = &outputs.html {
        let page = render::html(&comparison, &outcome);
        written.push((p, crate::files::write_atomic(p, page.as_bytes())));
    }
    if let Some(p) = &outputs.step_summary {
        written.push((p, append(p, &markdown)));
    }
    for (p, r) in written {
        if let Err(e) = r {
            eprintln!("error: cannot write {}: {e}", p.display());
            code = exit::worst(code, exit::RUN_BROKEN);
        }
    }
    Ok(code)
}

fn append(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    crate::files::prepare(path)?;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(format!("{text}\n").as_bytes())
}

/// No output on an input file or on another output, nor on a folder.
fn outputs_apart(outputs: &[(&str, &Path)], inputs: &[PathBuf]) -> Result<(), String> {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    for (i, (flag, out)) in outputs.iter().enumerate() {
        if out.is_dir() {
            return Err(format!("{flag} {} is a folder, not a file", out.display()));
        }
        if let Some((other, _)) = outputs[i + 1..].iter().find(|(_, o)| abs(o) == abs(out)) {
            return Err(format!(
                "{flag} and {other} both write {}: give them different files",
                out.display()
            ));
        }
        if inputs.iter().any(|p| abs(p) == abs(out)) {
            return Err(format!(
                "{flag} {} would overwrite a file compare reads",
                out.display()
            ));
        }
    }
    Ok(())
}

/// Pairs the bursts of the two folders and compares each; a burst or a
/// request kind in only one folder is an error naming it (bad input).
pub fn compare(
    baseline_dir: &Path,
    run_dir: &Path,
    baseline: &BTreeMap<String, &BurstData>,
    run: &BTreeMap<String, &BurstData>,
    thresholds: Vec<Threshold>,
) -> Result<Comparison, String> {
    let only =
        |a: &BTreeMap<String, &BurstData>, b: &BTreeMap<String, &BurstData>| -> Vec<String> {
            a.keys()
                .filter(|k| !b.contains_key(*k))
                .map(|k| format!("`{}`", shown_name(k)))
                .collect()
        };
    let (only_base, only_run) = (only(baseline, run), only(run, baseline));
    if baseline.is_empty() {
        return Err(format!(
            "no burst to compare in {} and {}",
            baseline_dir.display(),
            run_dir.display()
        ));
    }
    if !only_base.is_empty() || !only_run.is_empty() {
        let mut parts = Vec::new();
        if !only_base.is_empty() {
            parts.push(format!(
                "only in the baseline {}: {}",
                baseline_dir.display(),
                only_base.join(", ")
            ));
        }
        if !only_run.is_empty() {
            parts.push(format!(
                "only in the run {}: {}",
                run_dir.display(),
                only_run.join(", ")
            ));
        }
        return Err(format!(
            "the two folders hold different bursts ({}); compare runs of the same suites",
            parts.join("; ")
        ));
    }
    let mut bursts = Vec::new();
    for (id, b) in baseline {
        let r = run[id];
        bursts.push(compare_burst(id, b, r, &thresholds)?);
    }
    Ok(Comparison {
        baseline_dir: baseline_dir.to_path_buf(),
        run_dir: run_dir.to_path_buf(),
        thresholds,
        bursts,
    })
}

fn compare_burst(
    id: &str,
    b: &BurstData,
    r: &BurstData,
    thresholds: &[Threshold],
) -> Result<BurstComparison, String> {
    let names = |d: &BurstData| -> Vec<String> { d.kinds.iter().map(|(n, _)| n.clone()).collect() };
    let (bn, rn) = (names(b), names(r));
    let mut differ: Vec<String> = bn
        .iter()
        .filter(|n| !rn.contains(n))
        .map(|n| format!("`{}` only in the baseline", shown_name(n)))
        .collect();
    differ.extend(
        rn.iter()
            .filter(|n| !bn.contains(n))
            .map(|n| format!("`{}` only in the run", shown_name(n))),
    );
    if !differ.is_empty() {
        return Err(format!(
            "burst `{}`: the request kinds differ ({}); the two runs must use the same mix",
            shown_name(id),
            differ.join(", ")
        ));
    }
    let unjudgeable = match (b.cancelled, r.cancelled) {
        (true, _) => Some("the baseline burst was cancelled: its figures are partial".to_owned()),
        (_, true) => Some("the run's burst was cancelled: its figures are partial".to_owned()),
        _ => None,
    };
    let mut groups = vec![group(None, b, &b.overall, r, &r.overall, thresholds)];
    for (name, bk) in &b.kinds {
        let rk = r
            .kinds
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, k)| k)
            .ok_or_else(|| {
                format!(
                    "burst `{}`: request kind `{}` missing",
                    shown_name(id),
                    shown_name(name)
                )
            })?;
        groups.push(group(Some(name), b, bk, r, rk, thresholds));
    }
    Ok(BurstComparison {
        id: id.to_owned(),
        unjudgeable,
        groups,
    })
}

/// The rows of one group: the shown percentiles and those the thresholds
/// name, throughput, error and 429 rates; each with its verdicts.
fn group(
    kind: Option<&String>,
    bb: &BurstData,
    bk: &KindStats,
    rb: &BurstData,
    rk: &KindStats,
    thresholds: &[Threshold],
) -> Group {
    let applies: Vec<&Threshold> = thresholds
        .iter()
        .filter(|t| t.scope.as_ref() == kind)
        .collect();
    let mut rows: Vec<Row> = Vec::new();
    // Corrected first (what the thresholds of a burst judge), then raw.
    for raw in [false, true] {
        let variant = |q: f64| {
            if raw {
                Measure::RawPercentile(q)
            } else {
                Measure::Percentile(q)
            }
        };
        let mut percentiles: Vec<f64> = SHOWN_PERCENTILES.to_vec();
        for t in &applies {
            if let Measure::Percentile(q) | Measure::RawPercentile(q) = t.measure {
                if t.measure == variant(q) && !percentiles.iter().any(|p| (p - q).abs() < 1e-12) {
                    percentiles.push(q);
                }
            }
        }
        percentiles.sort_by(f64::total_cmp);
        let hist = |k: &KindStats| Empirical::new(if raw { &k.raw } else { &k.corrected });
        let (be, re) = (hist(bk), hist(rk));
        let ms = |e: &Empirical, q: f64| e.quantile(q) as f64 / 1000.0;
        rows.extend(percentiles.into_iter().map(|q| Row {
            measure: variant(q),
            baseline: ms(&be, q),
            run: ms(&re, q),
            change: stats::percentile_ratio(&be, &re, q),
            verdicts: Vec::new(),
        }));
    }
    let per_s = |k: &KindStats, d: &BurstData| k.requests as f64 / d.elapsed_s.max(1e-9);
    let share = |n: u64, k: &KindStats| n as f64 / k.requests.max(1) as f64;
    rows.push(Row {
        measure: Measure::Throughput,
        baseline: per_s(bk, bb),
        run: per_s(rk, rb),
        change: stats::rate_ratio((bk.requests, bb.elapsed_s), (rk.requests, rb.elapsed_s)),
        verdicts: Vec::new(),
    });
    for (measure, count) in [
        (
            Measure::ErrorRate,
            (|k: &KindStats| k.failed) as fn(&KindStats) -> u64,
        ),
        (Measure::Rate429, |k: &KindStats| k.r429),
    ] {
        rows.push(Row {
            measure,
            baseline: share(count(bk), bk),
            run: share(count(rk), rk),
            change: stats::share_increase((count(bk), bk.requests), (count(rk), rk.requests)),
            verdicts: Vec::new(),
        });
    }
    let unjudgeable = bb.cancelled || rb.cancelled;
    for t in applies {
        if let Some(row) = rows.iter_mut().find(|r| r.measure == t.measure) {
            let verdict = if unjudgeable {
                Verdict::Inconclusive("a cancelled burst's figures are partial".into())
            } else {
                t.judge(&row.change)
            };
            row.verdicts.push((t.text.clone(), verdict));
        }
    }
    let label = kind.map_or("all requests".to_owned(), |k| k.clone());
    Group {
        kind: kind.cloned(),
        baseline_requests: bk.requests,
        run_requests: rk.requests,
        rows,
        baseline_curve: Distribution::new(label.clone(), bk),
        run_curve: Distribution::new(label, rk),
    }
}

/// Exit code and verdict line: a cancelled burst was not measured (3, as a
/// run with an unjudged check); a certain regression fails (1); else any
/// inconclusive verdict is exit 4 ("inconclusive: ..."); else 0.
pub fn outcome(c: &Comparison) -> Outcome {
    let unmeasured: Vec<String> = c
        .bursts
        .iter()
        .filter_map(|b| {
            b.unjudgeable
                .as_ref()
                .map(|w| format!("{}: {w}", shown_name(&b.id)))
        })
        .collect();
    if !unmeasured.is_empty() {
        return Outcome {
            code: exit::RUN_BROKEN,
            message: format!("not compared: {}", unmeasured.join("; ")),
        };
    }
    let mut failed = Vec::new();
    let mut inconclusive = Vec::new();
    let mut held = 0usize;
    for b in &c.bursts {
        for g in &b.groups {
            for row in &g.rows {
                for (text, v) in &row.verdicts {
                    let at = format!("{} {}: `{text}`", shown_name(&b.id), g.label());
                    match v {
                        Verdict::Pass => held += 1,
                        Verdict::Fail => {
                            failed.push(format!("{at} broke ({})", render::change_text(row)))
                        }
                        Verdict::Inconclusive(why) => inconclusive.push(format!("{at}: {why}")),
                    }
                }
            }
        }
    }
    if !failed.is_empty() {
        let mut message = format!("regression: {}", failed.join("; "));
        if !inconclusive.is_empty() {
            message.push_str(&format!(
                " (and {} inconclusive: {})",
                inconclusive.len(),
                inconclusive.join("; ")
            ));
        }
        return Outcome {
            code: exit::CHECK_FAILED,
            message,
        };
    }
    if !inconclusive.is_empty() {
        return Outcome {
            code: exit::INCONCLUSIVE,
            message: format!(
                "inconclusive: the noise of the two runs could explain {}: {}; more requests per burst narrow the intervals",
                if inconclusive.len() == 1 { "one verdict".to_owned() } else { format!("{} verdicts", inconclusive.len()) },
                inconclusive.join("; ")
            ),
        };
    }
    if held == 0 {
        return Outcome {
            code: exit::INCONCLUSIVE,
            message: "inconclusive: no threshold applied to any burst (see --threshold)".into(),
        };
    }
    Outcome {
        code: exit::OK,
        message: format!(
            "no regression: {held} threshold verdict{} held over {} burst{}, each on its whole 95 % interval",
            if held == 1 { "" } else { "s" },
            c.bursts.len(),
            if c.bursts.len() == 1 { "" } else { "s" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::load::stats::new_hist;

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
        let c = compare(Path::new("b"), Path::new("r"), &by_id(base), &by_id(run), t)?;
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
        assert!(o.message.contains("1 inconclusive"), "{}", o.message);
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
}
