//! What a finished `tminus run` said, read back from its report folder
//! (report.json and the bursts' load-*.json, each size-capped and
//! validated): the verdict, the checks that did not pass, and the figures
//! Argo's `successCondition` reads (p95, error rate).

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

/// Reports larger than this are not read.
const MAX_REPORT: u64 = 32 << 20;
/// A failing check's message is quoted up to this many characters.
const MAX_MESSAGE: usize = 300;
/// Failing checks named in an answer (so one is at most ~16 KB, whatever
/// the suites): the rest are counted, and the report has them all.
pub const MAX_FAILING: usize = 50;

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// `pass`, `fail` (a check or threshold failed), `inconclusive` (a
    /// verdict the run could not reach, e.g. noise or a bound pool) or
    /// `error` (tminus could not do its job).
    pub verdict: &'static str,
    pub exit_code: Option<i32>,
    /// One line per check that did not pass: `suite/id: verdict: message`.
    pub failing: Vec<String>,
    pub checks: u64,
    pub passed: u64,
    /// The worst corrected p95 of the run's bursts, in ms.
    pub p95_ms: Option<f64>,
    /// The worst error rate of the run's bursts (0–1).
    pub error_rate: Option<f64>,
    #[serde(skip)]
    pub finished: Instant,
}

impl RunResult {
    /// tminus could not judge: `why` says what went wrong.
    pub fn error(exit_code: Option<i32>, why: String) -> RunResult {
        RunResult {
            verdict: "error",
            exit_code,
            failing: vec![why],
            checks: 0,
            passed: 0,
            p95_ms: None,
            error_rate: None,
            finished: Instant::now(),
        }
    }

    pub fn passed(&self) -> bool {
        self.verdict == "pass"
    }

    /// One paragraph for a hook's answer (Flagger logs it as the reason).
    pub fn text(&self, id: u64) -> String {
        let mut s = format!(
            "tminus run {id}: {}: {} of {} checks passed",
            self.verdict, self.passed, self.checks
        );
        if let Some(p) = self.p95_ms {
            s.push_str(&format!("; burst p95 {p:.1} ms"));
        }
        if let Some(e) = self.error_rate {
            s.push_str(&format!(", error rate {:.2}%", e * 100.0));
        }
        for f in &self.failing {
            s.push_str("\n  ");
            s.push_str(f);
        }
        s
    }
}

fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bytes = crate::files::read_capped(file, MAX_REPORT, &path.display().to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: not JSON: {e}", path.display()))
}

/// Reads the run's report folder after `tminus run` exited with `code`.
pub fn read(dir: &Path, code: Option<i32>) -> RunResult {
    let report = match read_json(&dir.join("report.json")) {
        Ok(r) => r,
        Err(e) => {
            // An invalid suite writes no report: its error is on the console.
            let console = std::fs::File::open(dir.join("console.txt"))
                .ok()
                .and_then(|f| crate::files::read_capped(f, MAX_REPORT, "console").ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let tail: String = console.trim().chars().rev().take(MAX_MESSAGE).collect();
            let tail: String = tail.chars().rev().collect();
            return RunResult::error(code, format!("the run wrote no report ({e}): {tail}"));
        }
    };
    let Some(suites) = report["suites"].as_array() else {
        return RunResult::error(code, "report.json has no `suites` list".into());
    };
    let mut failing = Vec::new();
    let (mut checks, mut passed, mut more) = (0, 0, 0u64);
    for s in suites {
        let suite = s["name"].as_str().unwrap_or("?");
        for c in s["checks"].as_array().into_iter().flatten() {
            checks += 1;
            let verdict = c["verdict"].as_str().unwrap_or("?");
            let message = c["message"].as_str().unwrap_or("");
            match verdict {
                "pass" | "warn" | "waived" | "skipped" => passed += u64::from(verdict != "skipped"),
                _ => {
                    let short: String = message.chars().take(MAX_MESSAGE).collect();
                    let id = c["id"].as_str().unwrap_or("?");
                    if failing.len() < MAX_FAILING {
                        failing.push(format!("{suite}/{id}: {verdict}: {short}"));
                    } else {
                        more += 1;
                    }
                }
            }
        }
    }
    let (mut p95_ms, mut error_rate) = (None::<f64>, None::<f64>);
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("load-") && name.ends_with(".json")) {
            continue;
        }
        if let Ok(l) = read_json(&entry.path()) {
            let o = &l["overall"];
            if let Some(p) = o["latency_corrected"]["p95_ms"].as_f64() {
                p95_ms = Some(p95_ms.map_or(p, |q| q.max(p)));
            }
            if let Some(e) = o["error_rate"].as_f64() {
                error_rate = Some(error_rate.map_or(e, |q| q.max(e)));
            }
        }
    }
    if more > 0 {
        failing.push(format!(
            "... and {more} more checks that did not pass (report.json has them all)"
        ));
    }
    // From the exit-code table: broken (3), invalid, or killed is not a
    // verdict ("error"), whatever else was inconclusive.
    let verdict = crate::exit::verdict(code);
    RunResult {
        verdict,
        exit_code: code,
        failing,
        checks,
        passed,
        p95_ms,
        error_rate,
        finished: Instant::now(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_as_verdict_failing_checks_and_figures() {
        let dir = std::env::temp_dir().join(format!("tminus-verdict-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("report.json"),
            r#"{"suites": [{"name": "burst", "checks": [
                {"id": "burst.p95", "verdict": "error", "inconclusive": true, "message": "inconclusive: the pool bound the run"},
                {"id": "burst.delivered", "verdict": "pass", "message": ""},
                {"id": "burst.effects", "verdict": "skipped", "message": ""}]}]}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("load-burst-burst.json"),
            r#"{"overall": {"error_rate": 0.02, "latency_corrected": {"p95_ms": 41.5}}}"#,
        )
        .unwrap();
        let r = read(&dir, Some(4));
        assert_eq!(r.verdict, "inconclusive");
        assert_eq!((r.checks, r.passed), (3, 1));
        assert_eq!(
            r.failing,
            ["burst/burst.p95: error: inconclusive: the pool bound the run"]
        );
        assert_eq!((r.p95_ms, r.error_rate), (Some(41.5), Some(0.02)));
        assert_eq!(read(&dir, Some(1)).verdict, "fail");
        assert_eq!(read(&dir, Some(3)).verdict, "error");
        // No report (an invalid suite): an error quoting the console.
        std::fs::remove_file(dir.join("report.json")).unwrap();
        std::fs::write(
            dir.join("console.txt"),
            "error: s.yaml:3:1: unknown key `chekcs`\n",
        )
        .unwrap();
        let r = read(&dir, Some(2));
        assert_eq!(r.verdict, "error");
        assert!(
            r.failing[0].contains("unknown key `chekcs`"),
            "{:?}",
            r.failing
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 44: an answer names at most 50 failing checks, each message
    /// cut at 300 characters, whatever the suites hold.
    #[test]
    fn an_answer_is_bounded_whatever_the_report_holds() {
        let dir = tempfile::tempdir().unwrap();
        let checks: Vec<serde_json::Value> = (0..10_000)
            .map(|i| serde_json::json!({"id": format!("c{i}"), "verdict": "fail", "message": "m".repeat(1_000)}))
            .collect();
        std::fs::write(
            dir.path().join("report.json"),
            serde_json::json!({"suites": [{"name": "s", "checks": checks}]}).to_string(),
        )
        .unwrap();
        let r = read(dir.path(), Some(1));
        assert_eq!((r.checks, r.failing.len()), (10_000, MAX_FAILING + 1));
        assert!(
            r.failing[MAX_FAILING].contains("9950 more"),
            "{:?}",
            r.failing.last()
        );
        let text = r.text(1);
        assert!(text.len() < 20 << 10, "{} bytes", text.len());
    }
}
