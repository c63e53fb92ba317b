//! The Markdown summary for CI (issue 16): a page a reviewer reads in the
//! job's summary tab. Verdict line first, then failures and errors (the
//! one-line reason and the request id to quote), counts per suite, the
//! burst's thresholds with their measured values, and where the report files
//! are. Written on finish (and so on cancel) to `--summary-md FILE`
//! (replaced) and to `$GITHUB_STEP_SUMMARY` (appended: GitHub gives every
//! step the same file and expects each to add to it).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{prepare, write_atomic, Reporter};
use crate::events::{CheckResult, Event, Summary};
use crate::families::Verdict;
use crate::fmt_duration;
use crate::redact::{Redactor, MASK};

/// Where the summary goes and which report files it points to.
#[derive(Debug, Clone, Default)]
pub struct SummaryConfig {
    /// `--summary-md`: written whole, replacing what was there.
    pub file: Option<PathBuf>,
    /// `$GITHUB_STEP_SUMMARY`: appended to.
    pub append: Option<PathBuf>,
    /// `(label, path)` of the other reports, listed at the end.
    pub reports: Vec<(&'static str, PathBuf)>,
    /// A link to the CI run page (where the uploaded artifacts are).
    pub run_url: Option<String>,
}

impl SummaryConfig {
    /// The step summary file and run link from GitHub Actions' environment
    /// (`GITHUB_STEP_SUMMARY`, `GITHUB_SERVER_URL`, `GITHUB_REPOSITORY`,
    /// `GITHUB_RUN_ID`), read through `var` so tests need not set the
    /// process environment.
    pub fn github(mut self, var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        self.append = set("GITHUB_STEP_SUMMARY").map(PathBuf::from);
        if let (Some(server), Some(repo), Some(run)) = (
            set("GITHUB_SERVER_URL"),
            set("GITHUB_REPOSITORY"),
            set("GITHUB_RUN_ID"),
        ) {
            self.run_url = Some(format!(
                "{}/{repo}/actions/runs/{run}",
                server.trim_end_matches('/')
            ));
        }
        // One file named twice is written once, appended (GitHub's way).
        let same = |a: &Path, b: &Path| std::path::absolute(a).ok() == std::path::absolute(b).ok();
        if let (Some(f), Some(a)) = (&self.file, &self.append) {
            if same(f, a) {
                self.file = None;
            }
        }
        self
    }

    pub fn is_active(&self) -> bool {
        self.file.is_some() || self.append.is_some()
    }
}

pub struct MarkdownSummary {
    config: SummaryConfig,
    redactor: Redactor,
    suites: Vec<String>,
    /// The run's warnings, under the heading.
    warnings: Vec<String>,
    results: Vec<CheckResult>,
    end: Option<(Summary, Duration, bool)>,
    finished: bool,
}

impl MarkdownSummary {
    pub fn new(config: SummaryConfig, redactor: Redactor) -> Self {
        MarkdownSummary {
            config,
            redactor,
            suites: Vec::new(),
            warnings: Vec::new(),
            results: Vec::new(),
            end: None,
            finished: false,
        }
    }

    /// Markdown text of `s`, redacted before it is escaped: escaping first
    /// would write a secret in a form the redactor does not know (`sk\_live`).
    /// The mask itself is kept as written.
    fn text(&self, s: &str) -> String {
        self.redactor
            .redact(s)
            .split(MASK)
            .map(text)
            .collect::<Vec<_>>()
            .join(MASK)
    }

    /// A code span of `s`, redacted before its characters are replaced.
    fn code(&self, s: &str) -> String {
        code(&self.redactor.redact(s))
    }

    /// The Markdown text, redacted.
    pub fn render(&self) -> String {
        let mut seen = Summary::default();
        for r in &self.results {
            seen.add_outcome(&r.outcome);
        }
        // No `RunFinished`: the run was cut short before it could say so.
        let (summary, duration, cancelled) = self
            .end
            .map_or((seen, None, true), |(s, d, c)| (s, Some(d), c));
        let mut md = String::new();
        let verdict = match (summary.verdict(), cancelled) {
            (_, true) => "INTERRUPTED",
            ("pass", _) => "PASS",
            ("warn", _) => "PASS with warnings",
            ("fail", _) => "FAIL",
            _ => "ERROR",
        };
        let took = duration.map(|d| format!(" in {}", fmt_duration(d)));
        md.push_str(&format!(
            "## tminus: {verdict}\n\n{} passed, {} failed, {} warned, {} errors, {} skipped{}{}\n\n",
            summary.passed,
            summary.failed,
            summary.warned,
            summary.errored,
            summary.skipped,
            took.unwrap_or_default(),
            if cancelled {
                " (cancelled: checks not run are not listed)"
            } else {
                ""
            }
        ));
        for w in &self.warnings {
            md.push_str(&format!("> [!WARNING]\n> {}\n\n", self.text(w)));
        }

        let mut bad: Vec<&CheckResult> = self
            .results
            .iter()
            .filter(|r| {
                matches!(
                    r.outcome.verdict,
                    Verdict::Fail | Verdict::Error | Verdict::Warn
                )
            })
            .collect();
        // Failures and errors before warnings; run order within each.
        bad.sort_by_key(|r| r.outcome.verdict == Verdict::Warn);
        if !bad.is_empty() {
            md.push_str("### Failures, errors and warnings\n\n");
            for r in bad {
                let o = &r.outcome;
                let id = o
                    .evidence
                    .iter()
                    .rev()
                    .find_map(|e| e.request_id.as_deref())
                    .map(|id| format!(" (request id {})", self.code(id)))
                    .unwrap_or_default();
                md.push_str(&format!(
                    "- **{}** {}: {}{id}\n",
                    o.verdict.as_str().to_uppercase(),
                    self.code(&format!("{}/{}", r.suite, r.id)),
                    self.text(&o.message)
                ));
            }
            md.push('\n');
        }

        if !self.suites.is_empty() {
            md.push_str("### Suites\n\n| suite | passed | failed | warned | errors | skipped |\n|---|---:|---:|---:|---:|---:|\n");
            for s in &self.suites {
                let mut c = Summary::default();
                for r in self.results.iter().filter(|r| &r.suite == s) {
                    c.add_outcome(&r.outcome);
                }
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} |\n",
                    self.text(s),
                    c.passed,
                    c.failed,
                    c.warned,
                    c.errored,
                    c.skipped
                ));
            }
            md.push('\n');
        }

        let load: Vec<&CheckResult> = self
            .results
            .iter()
            .filter(|r| r.kind.starts_with("load."))
            .collect();
        if !load.is_empty() {
            md.push_str(
                "### Burst\n\n| check | threshold | measured | verdict |\n|---|---|---|---|\n",
            );
            for r in load {
                let o = &r.outcome;
                let measured = o
                    .properties
                    .iter()
                    .find(|(k, _)| k == "measured_display")
                    .map(|(_, v)| v.text().into_owned())
                    .unwrap_or_else(|| o.message.clone());
                md.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    self.code(&format!("{}/{}", r.suite, r.id)),
                    self.text(r.description.as_deref().unwrap_or(r.kind)),
                    self.text(&measured),
                    o.verdict.as_str()
                ));
            }
            md.push('\n');
        }

        if !self.config.reports.is_empty() || self.config.run_url.is_some() {
            md.push_str("### Reports\n\n");
            for (label, path) in &self.config.reports {
                md.push_str(&format!(
                    "- {label}: {}\n",
                    self.code(&path.display().to_string())
                ));
            }
            if let Some(url) = &self.config.run_url {
                md.push_str(&format!("- artifacts: [this run]({url})\n"));
            }
            md.push('\n');
        }
        self.redactor.redact(&md)
    }
}

// The escapers live with the value types so `contract diff` (below the
// reporters) writes its Markdown by the same rules.
pub use crate::model::text::{markdown_code as code, markdown_text as text};

impl Reporter for MarkdownSummary {
    fn event(&mut self, e: &Event) {
        match e {
            Event::RunStarted { warnings, .. } => self.warnings = warnings.clone(),
            Event::SuiteStarted(info) if !self.suites.contains(&info.name) => {
                self.suites.push(info.name.clone());
            }
            Event::CheckFinished(r) => self.results.push((**r).clone()),
            Event::RunFinished {
                summary,
                duration,
                cancelled,
            } => self.end = Some((*summary, *duration, *cancelled)),
            _ => {}
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.finished || !self.config.is_active() {
            return Ok(());
        }
        self.finished = true;
        let md = self.render();
        let mut first = None;
        if let Some(f) = &self.config.file {
            if let Err(e) = prepare(f).and_then(|()| write_atomic(f, md.as_bytes())) {
                first.get_or_insert(e);
            }
        }
        if let Some(a) = &self.config.append {
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(a)
                .and_then(|mut file| file.write_all(format!("{md}\n").as_bytes()))
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", a.display())));
            if let Err(e) = appended {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_text_cannot_inject_markdown() {
        let t = text("x | <img src=y> [a](http://e) `c`\n# h");
        assert!(!t.contains('\n') && !t.contains('<'), "{t}");
        assert!(
            t.contains("\\|") && t.contains("\\[") && t.contains("\\`"),
            "{t}"
        );
        assert_eq!(code("a`b|c"), "`a'b/c`");
    }

    fn failed(secret: &str) -> Event {
        let o = crate::families::Outcome::error(format!("the target echoed {secret}"))
            .with_evidence(vec![crate::outcome::Evidence {
                label: "probe".into(),
                request: "GET http://127.0.0.1/x".into(),
                status: Some(500),
                request_id: Some(format!("X-Request-Id: {secret}")),
                elapsed_ms: None,
                detail: None,
            }]);
        Event::CheckFinished(Box::new(CheckResult {
            suite: "s".into(),
            id: "c".into(),
            kind: "steps",
            tags: Vec::new(),
            description: None,
            requirements: Default::default(),
            outcome: o,
            started_at: std::time::SystemTime::now(),
            duration: Duration::from_millis(3),
        }))
    }

    #[test]
    fn secrets_are_redacted_and_a_cancelled_run_is_still_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub/summary.md");
        let redactor = Redactor::new();
        redactor.add("s3cr3t-token-value");
        let mut r = MarkdownSummary::new(
            SummaryConfig {
                file: Some(file.clone()),
                ..Default::default()
            },
            redactor,
        );
        r.event(&failed("s3cr3t-token-value"));
        // No RunFinished: the run was interrupted; finish still writes.
        r.finish().unwrap();
        let s = std::fs::read_to_string(&file).unwrap();
        assert!(s.starts_with("## tminus: INTERRUPTED\n"), "{s}");
        assert!(s.contains("- **ERROR** `s/c`"), "{s}");
        assert!(!s.contains("s3cr3t"), "{s}");
    }

    /// Issue 24 item 11: a secret is masked before Markdown escapes it
    /// (`sk\_live\_...` is a form the redactor does not know).
    #[test]
    fn secrets_are_masked_before_markdown_escapes_them() {
        let secret = "sk_live_*abc|12`34";
        let redactor = Redactor::new();
        redactor.add(secret);
        let mut r = MarkdownSummary::new(SummaryConfig::default(), redactor);
        r.event(&failed(secret));
        let s = r.render();
        assert!(!s.contains("abc"), "{s}");
        assert!(s.contains("echoed [REDACTED]"), "{s}");
        assert!(s.contains("(request id `X-Request-Id: [REDACTED]`)"), "{s}");
    }

    #[test]
    fn github_environment_gives_the_step_file_and_the_run_link() {
        let env = |k: &str| {
            match k {
                "GITHUB_STEP_SUMMARY" => Some("/tmp/step"),
                "GITHUB_SERVER_URL" => Some("https://github.com/"),
                "GITHUB_REPOSITORY" => Some("o/r"),
                "GITHUB_RUN_ID" => Some("42"),
                _ => None,
            }
            .map(String::from)
        };
        let c = SummaryConfig {
            file: Some("/tmp/step".into()),
            ..Default::default()
        }
        .github(env);
        assert_eq!(c.append.as_deref(), Some(Path::new("/tmp/step")));
        assert_eq!(c.file, None, "one file is appended once, not written twice");
        assert_eq!(
            c.run_url.as_deref(),
            Some("https://github.com/o/r/actions/runs/42")
        );
        let none = SummaryConfig::default().github(|_| Some(String::new()));
        assert!(!none.is_active());
    }
}
