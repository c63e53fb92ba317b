//! The console reporter: live progress on stderr, then a summary table and
//! each failure with expected vs actual, the request line and the request id.

use std::io::Write;

use super::Reporter;
use crate::events::{CheckResult, Event};
use crate::families::Verdict;

use crate::fmt_duration;
use crate::redact::Redactor;

/// When the console uses colour (the ripgrep/cargo convention).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Private-use characters that stand for tminus's own SGR sequences until
/// `printable` has escaped everything a target could have sent.
const COLOR_ON: char = '\u{E000}';
const COLOR_END: char = '\u{E001}';

/// Text safe for a terminal: every control character a target may have put
/// in a body, header or id (ESC sequences that clear the screen or write
/// the clipboard, a CR that overwrites a line with a fake PASS) is escaped
/// (`\u{1b}`); a newline keeps an indent so it cannot start a fake result
/// line; tminus's own colour markers become colour codes.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push_str("\n      "),
            '\t' => out.push('\t'),
            COLOR_ON => {
                let code: String =
                    std::iter::from_fn(|| chars.next_if(|c| c.is_ascii_digit())).collect();
                if chars.next_if_eq(&COLOR_END).is_some() && !code.is_empty() {
                    out.push_str(&format!("\x1b[{code}m"));
                }
            }
            c if c.is_control() || c == COLOR_END => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// Whether the console paints: `always` and `never` as asked; `auto` only
/// on a terminal and when `NO_COLOR` is unset or empty (no-color.org: any
/// non-empty value disables colour, an empty one does not).
pub fn use_color(
    choice: ColorChoice,
    is_terminal: bool,
    no_color: Option<std::ffi::OsString>,
) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => is_terminal && no_color.is_none_or(|v| v.is_empty()),
    }
}

pub struct Console {
    out: Box<dyn Write + Send>,
    redactor: Redactor,
    results: Vec<CheckResult>,
    color: bool,
    /// The run's warnings, said at the start and beside the verdict.
    warnings: Vec<String>,
    /// `-v`: every property of every check, and the table of verdicts.
    verbose: bool,
}

impl Console {
    /// `color` as resolved by [`use_color`].
    pub fn stderr(redactor: Redactor, color: bool) -> Self {
        Console {
            out: Box::new(std::io::stderr()),
            redactor,
            results: Vec::new(),
            color,
            warnings: Vec::new(),
            verbose: false,
        }
    }

    /// With `verbose`, every property of every check and the summary table;
    /// without, a passing check is one line, and only a check that did not
    /// pass lists its properties (an all-green run stays short).
    pub fn verbose(mut self, verbose: bool) -> Self {
        self.verbose = verbose;
        self
    }

    fn warn(&mut self) {
        for w in self.warnings.clone() {
            self.line(&format!("WARNING: {w}"));
        }
    }

    fn line(&mut self, s: &str) {
        // Leading newlines are tminus's own blank lines; the rest may hold
        // a target's text.
        let body = s.trim_start_matches('\n');
        let blank = "\n".repeat(s.len() - body.len());
        let s = printable(&self.redactor.redact(body));
        let _ = writeln!(self.out, "{blank}{s}");
    }

    fn paint(&self, v: Verdict) -> String {
        let (label, code) = match v {
            Verdict::Pass => ("PASS ", "32"),
            Verdict::Fail => ("FAIL ", "31"),
            Verdict::Error => ("ERROR", "35"),
            Verdict::Skipped => ("SKIP ", "33"),
            Verdict::Warn => ("WARN ", "33;1"),
            Verdict::Waived => ("WAIVE", "36"),
        };
        if self.color {
            // Markers, not escape codes: `line` escapes every control
            // character (a target's body may hold some) and then turns
            // these into the colour codes.
            format!("{COLOR_ON}{code}{COLOR_END}{label}{COLOR_ON}0{COLOR_END}")
        } else {
            label.to_owned()
        }
    }

    fn details(&mut self, r: &CheckResult) {
        let o = &r.outcome;
        let mut lines = vec![format!("  {}/{}  [{}]", r.suite, r.id, r.kind)];
        lines.push(format!("    {}", o.message));
        if let Some(e) = &o.expected {
            lines.push(format!("    expected: {e}"));
        }
        if let Some(a) = &o.actual {
            lines.push(format!("    actual:   {a}"));
        }
        for a in o
            .assertions
            .iter()
            .filter(|a| !matches!(a.verdict, Verdict::Pass | Verdict::Skipped))
            .skip(1)
        {
            // The first is the message above; the others each get a line.
            lines.push(format!(
                "    also {} ({}): {}",
                a.property, a.severity, a.message
            ));
        }
        // The last exchange is the one that decided the verdict.
        if let Some(ev) = o.evidence.last() {
            let status = ev.status.map(|s| format!(" -> {s}")).unwrap_or_default();
            lines.push(format!("    request:  {}{status}", ev.request));
            if let Some(id) = &ev.request_id {
                lines.push(format!("    id:       {id}"));
            }
            if ev.status.is_none() {
                if let Some(d) = ev.detail.as_ref().filter(|d| **d != o.message) {
                    lines.push(format!("    detail:   {d}"));
                }
            }
        }
        for l in lines {
            self.line(&l);
        }
    }
}

impl Reporter for Console {
    fn event(&mut self, e: &Event) {
        match e {
            Event::RunStarted {
                suites, warnings, ..
            } => {
                let checks: usize = suites.iter().map(|s| s.checks).sum();
                self.line(&format!(
                    "tminus {}: {} suite(s), {} check(s)",
                    env!("CARGO_PKG_VERSION"),
                    suites.len(),
                    checks
                ));
                self.warnings = warnings.clone();
                self.warn();
            }
            Event::Notice(msg) => self.line(&format!("note: {msg}")),
            Event::SuiteStarted(info) => {
                self.line(&format!(
                    "\n{} ({}) -> {}",
                    info.name,
                    info.file.display(),
                    info.target
                ));
            }
            Event::CheckStarted { .. } => {}
            Event::CheckNote { id, message, .. } => self.line(&format!("        {id}: {message}")),
            Event::CheckFinished(r) => {
                let label = self.paint(r.outcome.verdict);
                let extra = match r.outcome.verdict {
                    Verdict::Pass => String::new(),
                    _ => format!("  {}", r.outcome.message),
                };
                self.line(&format!(
                    "  {label} {:<36} {:>8}{extra}",
                    r.id,
                    fmt_duration(r.duration)
                ));
                // Grouped under the check: one line per property, so a
                // partial conformer shows what it meets and what it breaks;
                // a passing check's list only with -v.
                let listed = self.verbose || r.outcome.verdict != Verdict::Pass;
                if listed && r.outcome.assertions.len() > 1 {
                    for a in &r.outcome.assertions {
                        let label = self.paint(a.verdict);
                        let why = match a.verdict {
                            Verdict::Pass => String::new(),
                            _ => format!("  {}", a.message),
                        };
                        self.line(&format!(
                            "      {label} {}.{} ({}){why}",
                            r.id, a.property, a.severity
                        ));
                    }
                }
                self.results.push((**r).clone());
            }
            Event::SuiteFinished { .. } | Event::LoadFigures(_) | Event::ContractSummary(_) => {}
            Event::RunFinished {
                summary,
                duration,
                cancelled,
            } => {
                let bad: Vec<CheckResult> = self
                    .results
                    .iter()
                    .filter(|r| matches!(r.outcome.verdict, Verdict::Fail | Verdict::Error))
                    .cloned()
                    .collect();
                let warned: Vec<CheckResult> = self
                    .results
                    .iter()
                    .filter(|r| r.outcome.verdict == Verdict::Warn)
                    .cloned()
                    .collect();
                if self.verbose && !self.results.is_empty() {
                    self.line("\nSummary");
                    let w = self
                        .results
                        .iter()
                        .map(|r| r.suite.len() + r.id.len() + 1)
                        .max()
                        .unwrap_or(10)
                        .max(10);
                    self.line(&format!(
                        "  {:<w$}  {:<7}  {:>8}",
                        "check", "verdict", "time"
                    ));
                    let rows: Vec<String> = self
                        .results
                        .iter()
                        .map(|r| {
                            format!(
                                "  {:<w$}  {:<7}  {:>8}",
                                format!("{}/{}", r.suite, r.id),
                                r.outcome.verdict.as_str(),
                                fmt_duration(r.duration)
                            )
                        })
                        .collect();
                    for row in rows {
                        self.line(&row);
                    }
                }
                if !bad.is_empty() {
                    self.line("\nFailures and errors");
                    for r in &bad {
                        self.details(r);
                    }
                }
                if !warned.is_empty() {
                    self.line("\nWarnings (SHOULD properties; failures under --strict)");
                    for r in &warned {
                        self.details(r);
                    }
                }
                let waivers: Vec<String> = self
                    .results
                    .iter()
                    .flat_map(|r| {
                        r.outcome.waivers.iter().map(move |w| {
                            format!("  {}/{}.{}  {}", r.suite, r.id, w.property, w.describe())
                        })
                    })
                    .collect();
                if !waivers.is_empty() {
                    self.line("\nWaivers (applied: reported waived; expired: failed)");
                    for w in waivers {
                        self.line(&w);
                    }
                }
                let state = if *cancelled { " (cancelled)" } else { "" };
                let mut warnings = match summary.warned {
                    0 => String::new(),
                    n => format!(", {n} warned"),
                };
                if summary.waived > 0 {
                    warnings.push_str(&format!(", {} waived", summary.waived));
                }
                let waited: f64 = self.results.iter().map(|r| r.outcome.quota_wait_s()).sum();
                let quota = if waited > 0.0 {
                    format!(
                        ", {} of it waiting for the target's quota",
                        fmt_duration(std::time::Duration::from_secs_f64(waited))
                    )
                } else {
                    String::new()
                };
                let errors = match summary.inconclusive {
                    0 => format!("{} errors", summary.errored),
                    n => format!("{} errors ({n} inconclusive)", summary.errored),
                };
                self.line(&format!(
                    "\n{} passed, {} failed, {errors}, {} skipped{warnings} in {}{quota}{state}",
                    summary.passed,
                    summary.failed,
                    summary.skipped,
                    fmt_duration(*duration)
                ));
                // Again beside the verdict: the start has scrolled away.
                self.warn();
                let _ = self.out.flush();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_text_cannot_drive_the_terminal() {
        let hostile = "ok\x1b[2J\x1b]52;c;ZXZpbA==\x07\r  PASS  fake\nPASS  other";
        let out = printable(hostile);
        assert!(
            !out.contains('\x1b') && !out.contains('\r') && !out.contains('\x07'),
            "{out:?}"
        );
        assert!(!out.contains("\nPASS"), "{out:?}");
        let coloured = printable(&format!(
            "{COLOR_ON}32{COLOR_END}PASS {COLOR_ON}0{COLOR_END}"
        ));
        assert_eq!(coloured, "\x1b[32mPASS \x1b[0m");
    }

    #[test]
    fn color_follows_the_flag_the_terminal_and_no_color() {
        let set = |v: &str| Some(std::ffi::OsString::from(v));
        assert!(use_color(ColorChoice::Auto, true, None));
        assert!(use_color(ColorChoice::Auto, true, set("")));
        assert!(!use_color(ColorChoice::Auto, true, set("1")));
        assert!(!use_color(ColorChoice::Auto, false, None));
        assert!(use_color(ColorChoice::Always, false, set("1")));
        assert!(!use_color(ColorChoice::Never, true, None));
    }
}
