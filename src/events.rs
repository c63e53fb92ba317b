//! The event stream between the runner and the reporters. The runner emits
//! these and never imports a reporter; each reporter consumes them alone.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::families::load::summary::BurstFigures;
use crate::families::{Outcome, Verdict};

#[derive(Debug, Clone)]
pub struct SuiteInfo {
    pub name: String,
    pub file: PathBuf,
    /// SHA-256 (hex) of the suite file as it was read for this run.
    pub digest: Option<String>,
    pub version: Option<String>,
    pub target: String,
    pub checks: usize,
    /// `standard` or `botix`: which reading of the specs the defaults follow.
    pub profile: &'static str,
}

#[derive(Debug, Clone)]
pub struct CheckResult {
    pub suite: String,
    pub id: String,
    pub kind: &'static str,
    pub tags: Vec<String>,
    pub description: Option<String>,
    /// The catalogue requirements (and checklist point) the kind certifies.
    pub requirements: crate::coverage::Requirements,
    pub outcome: Outcome,
    pub started_at: SystemTime,
    pub duration: Duration,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub errored: usize,
    pub skipped: usize,
    /// Checks whose only broken properties are SHOULDs (not failures unless
    /// the run is strict, when they are counted as failed instead).
    pub warned: usize,
    /// Checks whose only broken properties are waived (`waive:` in force):
    /// not failures.
    pub waived: usize,
    /// Of the `errored`, those that are errors only because their evidence
    /// could go either way (`Outcome::inconclusive`).
    pub inconclusive: usize,
}

impl Summary {
    pub fn add(&mut self, v: Verdict) {
        match v {
            Verdict::Pass => self.passed += 1,
            Verdict::Fail => self.failed += 1,
            Verdict::Error => self.errored += 1,
            Verdict::Skipped => self.skipped += 1,
            Verdict::Warn => self.warned += 1,
            Verdict::Waived => self.waived += 1,
        }
    }
    /// [`add`](Self::add), telling an inconclusive error apart.
    pub fn add_outcome(&mut self, o: &Outcome) {
        self.add(o.verdict);
        if o.verdict == Verdict::Error && o.inconclusive {
            self.inconclusive += 1;
        }
    }
    /// Errors that are not merely inconclusive: tminus could not do its job.
    pub fn broken(&self) -> usize {
        self.errored - self.inconclusive.min(self.errored)
    }
    pub fn total(&self) -> usize {
        self.passed + self.failed + self.errored + self.skipped + self.warned + self.waived
    }
    /// 3 when something could not be judged, 1 when something failed, 4
    /// when a verdict could go either way, else 0 (warnings do not fail a
    /// run; `--strict` makes them failures first).
    pub fn exit_code(&self) -> i32 {
        if self.broken() > 0 {
            crate::exit::RUN_BROKEN
        } else if self.failed > 0 {
            crate::exit::CHECK_FAILED
        } else if self.inconclusive > 0 {
            crate::exit::INCONCLUSIVE
        } else {
            crate::exit::OK
        }
    }
    pub fn verdict(&self) -> &'static str {
        if self.broken() > 0 {
            "error"
        } else if self.failed > 0 {
            "fail"
        } else if self.inconclusive > 0 {
            "inconclusive"
        } else if self.warned > 0 {
            "warn"
        } else {
            "pass"
        }
    }
}

#[derive(Debug, Clone)]
pub enum Event {
    RunStarted {
        started_at: SystemTime,
        suites: Vec<SuiteInfo>,
        /// What every report says about the whole run, before and beside
        /// its verdicts (`--insecure`: nothing was authenticated).
        warnings: Vec<String>,
    },
    /// Something a person should know that is not a check result
    /// ("started the embedded reference at ...").
    Notice(String),
    SuiteStarted(SuiteInfo),
    CheckStarted {
        suite: String,
        id: String,
    },
    CheckNote {
        suite: String,
        id: String,
        message: String,
    },
    CheckFinished(Box<CheckResult>),
    /// A burst's percentile distributions and interval series, sent once
    /// per burst that ran, before its results; the HTML report plots them.
    LoadFigures(Box<BurstFigures>),
    /// A suite's contract figures per operation (suites with `contract:`),
    /// sent once, after its last result.
    ContractSummary(Box<crate::model::contract::ContractSummary>),
    SuiteFinished {
        suite: String,
        duration: Duration,
    },
    RunFinished {
        summary: Summary,
        duration: Duration,
        cancelled: bool,
    },
}
