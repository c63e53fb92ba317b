//! `tminus compare BASELINE_DIR RUN_DIR` (issue 27, release baselines; issue
//! 38, noise): the bursts of a run judged against those of a baseline run
//! (the last release's report folder), per burst and per request kind:
//! corrected and raw p50/p95/p99 and throughput as ratios, error and 429
//! rates as differences, each with a 95 % interval (`stats.rs`) widened by
//! the run-to-run noise (how each run wandered over its seconds,
//! `noise.rs`, and a band calibrated on two runs of one release,
//! `calibrate.rs`), judged by the thresholds (`threshold.rs`) on the whole
//! interval, with a floor below which no change matters. Verdicts are
//! symmetric: the two folders in the other order give the mirrored
//! verdict. Figures are read back from the folders (`read.rs`), judged per
//! group (`group.rs`), summed up (`outcome.rs`) and rendered for the
//! console, Markdown and HTML (`render.rs`).
//!
//! Exit codes: 0 every threshold that could judge held (no change, below
//! the floor, or an improvement); 1 a threshold broke beyond doubt (a
//! certain regression fails even when another is inconclusive); 2 bad
//! input (a folder missing, a burst or request kind in only one folder, a
//! file that is not what tminus wrote, a bad threshold); 3 a cancelled
//! burst (not measured); 4 inconclusive (a verdict the noise could
//! explain, or no threshold could judge). A measure with too few answers
//! is "not compared" and leaves the verdict to the others.
//!
//! `tminus run --baseline DIR` reads the baseline with [`load_baseline`]
//! before anything is sent and judges the bursts it ran with [`judge_run`].

pub mod calibrate;
mod group;
pub mod noise;
mod outcome;
pub mod read;
pub mod render;
pub mod stats;
#[cfg(test)]
mod tests;
pub mod threshold;

pub use outcome::outcome;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::exit;
use crate::families::load::summary::Distribution;
use calibrate::Bands;
use group::Side;
use read::{shown_name, BurstData};
use stats::Change;
use threshold::{FloorUnit, Measure, Threshold, Verdict};

/// The percentiles every comparison shows (a threshold may add others).
pub const SHOWN_PERCENTILES: &[f64] = &[0.50, 0.95, 0.99];

/// What `tminus compare` was asked.
pub struct CompareOptions<'a> {
    pub baseline: &'a Path,
    pub run: &'a Path,
    /// As given; empty: [`threshold::DEFAULTS`].
    pub thresholds: &'a [String],
    /// `--min-delta`: floors for thresholds without `min`, by unit.
    pub min_deltas: &'a [String],
    /// `--calibrate`: record the two runs' noise band in the baseline.
    pub calibrate: bool,
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
    /// The noise band files used (`calibrate::FILE` of either folder).
    pub noise_files: Vec<PathBuf>,
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
    /// A ratio (percentiles, throughput) or a difference (rates), its
    /// interval widened by the run-to-run noise.
    pub change: Change,
    /// The half-width added for run-to-run noise (log scale for ratios).
    pub noise: f64,
    /// Where it came from: each run's wander, a calibrated band.
    pub noise_notes: Vec<String>,
    /// Percentiles: the generator's lateness at the same percentile in the
    /// baseline and the run (ms), when both have enough answers.
    pub harness: Option<(f64, f64)>,
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
    /// The baseline's calibrated noise bands, if it has them.
    pub bands: Bands,
}

/// Parses the thresholds (none: [`threshold::DEFAULTS`]) and reads the
/// baseline folder; an error is bad input (exit 2).
pub fn load_baseline(dir: &Path, thresholds: &[String]) -> Result<Baseline, String> {
    load_baseline_with(dir, thresholds, &[])
}

/// [`load_baseline`] with `--min-delta` floors (`2ms`, `5/s`, `0.5%`), each
/// for the thresholds of its unit that set none.
pub fn load_baseline_with(
    dir: &Path,
    thresholds: &[String],
    min_deltas: &[String],
) -> Result<Baseline, String> {
    let texts: Vec<String> = if thresholds.is_empty() {
        threshold::DEFAULTS.iter().map(|t| t.to_string()).collect()
    } else {
        thresholds.to_vec()
    };
    let mut thresholds = texts
        .iter()
        .map(|t| threshold::parse(t).map_err(|e| format!("--threshold: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut floors: Vec<(FloorUnit, f64)> = Vec::new();
    for m in min_deltas {
        let (v, unit) = threshold::parse_floor(m).map_err(|e| format!("--min-delta: {e}"))?;
        floors.retain(|(u, _)| *u != unit);
        floors.push((unit, v));
    }
    for t in &mut thresholds {
        if t.min_delta.is_none() {
            t.min_delta = floors
                .iter()
                .find(|(u, _)| *u == FloorUnit::of(t.measure))
                .map(|(_, v)| *v);
        }
    }
    let bursts = read::read_dir(dir)?;
    let mut bands = Bands::default();
    bands.add_folder(dir)?;
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
        bands,
    })
}

/// `tminus compare`: reads, compares, renders, returns the exit code.
pub fn cmd_compare(o: &CompareOptions<'_>) -> i32 {
    if o.calibrate {
        return cmd_calibrate(o);
    }
    let judged = load_baseline_with(o.baseline, o.thresholds, o.min_deltas)
        .and_then(|b| judge_run(&b, o.run, None, &o.outputs));
    match judged {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            exit::INVALID
        }
    }
}

/// `tminus compare --calibrate A1 A2`: the noise band of two runs of the
/// same release, printed and written into A1 (any band A1 had is not used,
/// and is replaced).
fn cmd_calibrate(o: &CompareOptions<'_>) -> i32 {
    let made = (|| {
        let a1 = read::read_dir(o.baseline)?;
        let a2 = read::read_dir(o.run)?;
        fn by_id(m: &BTreeMap<String, BurstData>) -> BTreeMap<String, &BurstData> {
            m.iter().map(|(k, v)| (k.clone(), v)).collect()
        }
        compare(
            o.baseline,
            o.run,
            &by_id(&a1),
            &by_id(&a2),
            Vec::new(),
            &Bands::default(),
        )
    })();
    let c = match made {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::INVALID;
        }
    };
    print!("{}", render::console(&c));
    match calibrate::write(&c) {
        Ok((path, text)) => {
            println!(
                "\nnoise band of two runs of one release (the observed change, each measure):\n{text}"
            );
            eprintln!(
                "calibrated: {} written; comparisons with {} add these bands to their intervals",
                path.display(),
                o.baseline.display()
            );
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            exit::RUN_BROKEN
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
    // Either folder's calibration counts: the order does not matter.
    let mut bands = Bands::default();
    bands.add_folder(&baseline.dir)?;
    bands.add_folder(run_dir)?;
    let comparison = compare(
        &baseline.dir,
        run_dir,
        &base,
        &run.iter().map(|(k, v)| (k.clone(), v)).collect(),
        baseline.thresholds.clone(),
        &bands,
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
    bands: &Bands,
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
        bursts.push(compare_burst(id, b, r, &thresholds, bands)?);
    }
    Ok(Comparison {
        baseline_dir: baseline_dir.to_path_buf(),
        run_dir: run_dir.to_path_buf(),
        thresholds,
        bursts,
        noise_files: bands.sources.clone(),
    })
}

fn compare_burst(
    id: &str,
    b: &BurstData,
    r: &BurstData,
    thresholds: &[Threshold],
    bands: &Bands,
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
    let side = |burst, stats| Side { burst, stats };
    let mut groups = vec![group::group(
        id,
        None,
        side(b, &b.overall),
        side(r, &r.overall),
        thresholds,
        bands,
    )];
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
        groups.push(group::group(
            id,
            Some(name),
            side(b, bk),
            side(r, rk),
            thresholds,
            bands,
        ));
    }
    Ok(BurstComparison {
        id: id.to_owned(),
        unjudgeable,
        groups,
    })
}
