//! `tminus compare`'s outputs: the diff table on the console (stdout), the
//! same tables in Markdown (`--markdown`, `$GITHUB_STEP_SUMMARY`), and an
//! HTML page (`--html`) with the tables and, per burst and request kind,
//! the baseline's and the run's percentile curves in one plot
//! (`report::plot`). Names read from the folders are escaped for each
//! output (`report::summary::text`, `report::html::escape`); the figures
//! are numbers tminus computed.

use std::fmt::Write as _;

use super::read::shown_name;
use super::stats::{Change, CONFIDENCE, RESAMPLES, SEED};
use super::threshold::{Measure, Verdict};
use super::{Comparison, Group, Outcome, Row};
use crate::report::html::{escape, CSS};
use crate::report::plot;
use crate::report::summary::{code, text};

/// How the intervals were made, for every output.
pub fn method(c: &Comparison) -> String {
    let mut m = format!(
        "{:.0} % intervals: percentiles by a bootstrap of the HDR histograms ({RESAMPLES} resamples, seed {SEED}), throughput as Poisson counts, rates by Newcombe's score interval; each widened by the run-to-run noise (the `noise` column: how far each run's percentile wandered over its seconds beyond sampling, and a calibrated band); a verdict needs the whole interval beyond or inside its limit, the same either way round, and a change below the floor (`min`, default 1 ms for percentiles) is never a regression",
        CONFIDENCE * 100.0
    );
    for f in &c.noise_files {
        let _ = write!(
            m,
            "; noise band calibrated by `tminus compare --calibrate`, from {}",
            f.display()
        );
    }
    m
}

/// The noise added to a row's interval: `±3.2%`, `±0.10 pp`, `-`.
fn noise(row: &Row) -> String {
    if row.noise <= 0.0 {
        return "-".into();
    }
    match row.measure {
        Measure::ErrorRate | Measure::Rate429 => format!("±{:.2} pp", row.noise * 100.0),
        _ => format!("±{:.1}%", (row.noise.exp() - 1.0) * 100.0),
    }
}

/// A measured value as the table shows it.
fn value(measure: Measure, v: f64) -> String {
    match measure {
        Measure::Percentile(_) | Measure::RawPercentile(_) => format!("{v:.3} ms"),
        Measure::Throughput => format!("{v:.2}/s"),
        Measure::ErrorRate | Measure::Rate429 => format!("{:.2}%", v * 100.0),
    }
}

/// The change and its interval: `×1.02 [×0.99, ×1.05]` for ratios,
/// `+0.10 pp [-0.40, +0.60]` for rate differences.
pub fn change_text(row: &Row) -> String {
    match &row.change {
        Change::Unknown(why) => format!("not compared: {why}"),
        Change::Known(_) => {
            let (est, interval) = change_parts(row);
            format!("{est} {interval}")
        }
    }
}

/// The change and its interval, apart (`n/a` when unknown).
fn change_parts(row: &Row) -> (String, String) {
    match &row.change {
        Change::Unknown(_) => ("n/a".into(), "n/a".into()),
        Change::Known(e) => match row.measure {
            Measure::Percentile(_) | Measure::RawPercentile(_) | Measure::Throughput => (
                format!("×{:.3}", e.value),
                format!("[×{:.3}, ×{:.3}]", e.low, e.high),
            ),
            Measure::ErrorRate | Measure::Rate429 => (
                format!("{:+.2} pp", e.value * 100.0),
                format!("[{:+.2}, {:+.2}] pp", e.low * 100.0, e.high * 100.0),
            ),
        },
    }
}

/// The verdict column: each threshold on the row and what it gave, then
/// why the change could not be measured, if it could not.
fn verdicts(row: &Row) -> String {
    let mut parts: Vec<String> = row
        .verdicts
        .iter()
        .filter(|(_, v)| !matches!(v, Verdict::NotCompared(_)))
        .map(|(t, v)| format!("{} ({t})", verdict_word(v)))
        .collect();
    if let Change::Unknown(why) = &row.change {
        parts.push(format!("not compared: {why}"));
    }
    if !row.noise_notes.is_empty() {
        parts.push(format!("noise: {}", row.noise_notes.join(", ")));
    }
    if parts.is_empty() {
        parts.push("-".into());
    }
    parts.join("; ")
}

fn verdict_word(v: &Verdict) -> &'static str {
    match v {
        Verdict::NoChange => "pass, no change",
        Verdict::BelowFloor => "pass, below the floor",
        Verdict::Improvement => "pass, improvement",
        Verdict::Regression => "FAIL",
        Verdict::Inconclusive(_) => "inconclusive",
        Verdict::NotCompared(_) => "not compared",
    }
}

fn group_heading(burst: &str, g: &Group) -> String {
    format!(
        "{} · {} (baseline {} requests, run {})",
        shown_name(burst),
        g.label(),
        g.baseline_requests,
        g.run_requests
    )
}

/// The diff table for a terminal: one block per burst and request kind.
pub fn console(c: &Comparison) -> String {
    let mut out = format!(
        "tminus compare: baseline {} vs run {}\n{}\n",
        c.baseline_dir.display(),
        c.run_dir.display(),
        method(c)
    );
    for b in &c.bursts {
        if let Some(why) = &b.unjudgeable {
            let _ = writeln!(out, "\n{}: {why}", shown_name(&b.id));
        }
        for g in &b.groups {
            let _ = writeln!(out, "\n{}", group_heading(&b.id, g));
            let _ = writeln!(
                out,
                "  {:<11} {:>12} {:>12}  {:<9} {:<22} {:<8} verdict",
                "measure", "baseline", "run", "change", "95 % interval", "noise"
            );
            for row in &g.rows {
                let (est, interval) = change_parts(row);
                let _ = writeln!(
                    out,
                    "  {:<11} {:>12} {:>12}  {:<9} {:<22} {:<8} {}",
                    row.measure.label(),
                    value(row.measure, row.baseline),
                    value(row.measure, row.run),
                    est,
                    interval,
                    noise(row),
                    verdicts(row)
                );
            }
        }
    }
    out
}

/// The verdict in words, by exit code.
fn headline(code: i32) -> &'static str {
    match code {
        0 => "no regression",
        1 => "regression",
        _ => "inconclusive",
    }
}

/// The comparison in Markdown: verdict, method, one table per group.
pub fn markdown(c: &Comparison, o: &Outcome) -> String {
    let mut md = format!(
        "## tminus compare: {}\n\n{}\n\nBaseline {} against run {}. {}.\n",
        headline(o.code),
        text(&o.message),
        code(&c.baseline_dir.display().to_string()),
        code(&c.run_dir.display().to_string()),
        text(&method(c))
    );
    for b in &c.bursts {
        if let Some(why) = &b.unjudgeable {
            let _ = write!(md, "\n{}: {}\n", code(&b.id), text(why));
        }
        for g in &b.groups {
            let _ = write!(
                md,
                "\n### {}\n\n| measure | baseline | run | change | 95 % interval | noise | verdict |\n|---|---:|---:|---:|---|---|---|\n",
                text(&group_heading(&b.id, g))
            );
            for row in &g.rows {
                let (est, interval) = change_parts(row);
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    text(&row.measure.label()),
                    value(row.measure, row.baseline),
                    value(row.measure, row.run),
                    text(&est),
                    text(&interval),
                    text(&noise(row)),
                    text(&verdicts(row))
                );
            }
        }
    }
    md
}

/// A page of its own: the verdict, the tables and a plot per group.
pub fn html(c: &Comparison, o: &Outcome) -> String {
    let esc = |s: &str| escape(s);
    let word = headline(o.code);
    let class = match o.code {
        0 => "pass",
        1 => "fail",
        _ => "error",
    };
    let mut h = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>tminus compare: {}</title><style>{CSS}</style></head><body><h1>tminus compare <span class=\"v {class}\">{}</span></h1><p>{}</p><p class=\"meta\">Baseline <code>{}</code> against run <code>{}</code>. {}.</p>",
        word,
        word,
        esc(&o.message),
        esc(&c.baseline_dir.display().to_string()),
        esc(&c.run_dir.display().to_string()),
        esc(&method(c))
    );
    for b in &c.bursts {
        let _ = write!(h, "<section><h2>{}</h2>", esc(&shown_name(&b.id)));
        if let Some(why) = &b.unjudgeable {
            let _ = write!(h, "<p class=\"warning\">{}</p>", esc(why));
        }
        for g in &b.groups {
            let heading = group_heading(&b.id, g);
            let _ = write!(
                h,
                "<h3>{}</h3><table><tr><th>measure</th><th>baseline</th><th>run</th><th>change</th><th>95 % interval</th><th>noise</th><th>verdict</th></tr>",
                esc(&heading)
            );
            for row in &g.rows {
                let (est, interval) = change_parts(row);
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&row.measure.label()),
                    esc(&value(row.measure, row.baseline)),
                    esc(&value(row.measure, row.run)),
                    esc(&est),
                    esc(&interval),
                    esc(&noise(row)),
                    esc(&verdicts(row))
                );
            }
            h.push_str("</table>");
            h.push_str(&plot::comparison_figure(
                &esc,
                &format!("{heading}: corrected latency by percentile, baseline and run"),
                &format!(
                    "{}: the baseline's and the run's corrected latency by percentile",
                    g.label()
                ),
                &g.baseline_curve,
                &g.run_curve,
            ));
        }
        h.push_str("</section>");
    }
    let _ = writeln!(
        h,
        "<p class=\"meta\">Thresholds: {}</p></body></html>",
        esc(&c
            .thresholds
            .iter()
            .map(|t| t.text.clone())
            .collect::<Vec<_>>()
            .join(", "))
    );
    h
}
