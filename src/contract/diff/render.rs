//! The report for people: the console listing (stdout) and the Markdown
//! for a pull request's step summary. Both lead with what fails the gate,
//! name every change by rule id, place and values, and say what the
//! version allowed. Text from the documents goes through the Markdown
//! escapers, so a description cannot add links or table cells.

use std::fmt::Write as _;

use super::{Level, Report};
use crate::model::text::{markdown_code as code, markdown_text as text};

/// Rows the Markdown table shows at most (a step summary has a size cap:
/// GitHub's is 1 MiB per step).
const MAX_MD_ROWS: usize = 200;

fn side(s: &super::Side) -> String {
    match &s.version {
        Some(v) => format!("{} (OpenAPI {}, version {v})", s.source, s.openapi),
        None => format!("{} (OpenAPI {})", s.source, s.openapi),
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// `3 changes: 1 breaking (ERR), ...`.
pub fn counts(r: &Report) -> String {
    let mut out = format!(
        "{}: {} breaking (ERR), {} potentially breaking (WARN), {} compatible (INFO)",
        plural(r.changes.len(), "change"),
        r.count(Level::Err),
        r.count(Level::Warn),
        r.count(Level::Info),
    );
    if r.allowed() > 0 {
        let _ = write!(out, "; {} allowed by the new major version", r.allowed());
    }
    out
}

/// The verdict word and what decided it.
pub fn verdict(r: &Report, fail_on: Level) -> (&'static str, String) {
    if let Some(why) = &r.incomplete {
        return ("ERROR", format!("the comparison could not finish: {why}"));
    }
    match r.failing(fail_on) {
        0 => ("PASS", format!("no change fails --fail-on {fail_on}")),
        n => (
            "FAIL",
            format!(
                "{} fail{} --fail-on {fail_on}",
                plural(n, "change"),
                if n == 1 { "s" } else { "" }
            ),
        ),
    }
}

/// The console listing.
pub fn console(r: &Report, fail_on: Level) -> String {
    let mut out = format!("contract diff: {} -> {}\n", side(&r.old), side(&r.new));
    let width = r.changes.iter().map(|c| c.rule.id.len()).max().unwrap_or(0);
    for c in &r.changes {
        let mark = if c.allowed.is_some() && !c.fails(fail_on) {
            " (allowed)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{:<4}  {:<width$}  {}: {}{mark}",
            c.level().as_str(),
            c.rule.id,
            c.place(),
            c.message,
        );
    }
    if let Some(note) = &r.version_note {
        let _ = writeln!(out, "{note}");
    }
    let (word, why) = verdict(r, fail_on);
    let _ = writeln!(out, "{}; {word}: {why}", counts(r));
    out
}

/// The Markdown for `$GITHUB_STEP_SUMMARY` / `--markdown`.
pub fn markdown(r: &Report, fail_on: Level) -> String {
    let (word, why) = verdict(r, fail_on);
    let mut out = format!("## tminus contract diff: {word}\n\n");
    let _ = writeln!(
        out,
        "{} → {}: {}\n",
        code(&side(&r.old)),
        code(&side(&r.new)),
        text(&why)
    );
    let _ = writeln!(out, "{}\n", text(&counts(r)));
    if let Some(note) = &r.version_note {
        let _ = writeln!(out, "> {}\n", text(note));
    }
    if r.changes.is_empty() {
        out.push_str("No change between the documents' operations, schemas and security.\n");
        return out;
    }
    out.push_str("| level | rule | where | change |\n|---|---|---|---|\n");
    for c in r.changes.iter().take(MAX_MD_ROWS) {
        let level = if c.fails(fail_on) {
            format!("**{}**", c.level())
        } else if c.allowed.is_some() {
            format!("{} (allowed)", c.level())
        } else {
            c.level().to_string()
        };
        let _ = writeln!(
            out,
            "| {level} | {} | {} | {} |",
            code(c.rule.id),
            text(&c.place()),
            text(&c.message)
        );
    }
    if r.changes.len() > MAX_MD_ROWS {
        let _ = writeln!(
            out,
            "\n… and {} more (the JSON and JUnit reports list every one).",
            r.changes.len() - MAX_MD_ROWS
        );
    }
    out
}
