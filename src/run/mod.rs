//! The runner: executes a plan check by check and emits events. It knows the
//! plan and the checks, never the reporters.

use std::time::{Instant, SystemTime};

use tokio::sync::mpsc;

use crate::events::{CheckResult, Event, SuiteInfo, Summary};
use crate::families::{self, CheckContext, Outcome};
use crate::http::{Client, Target};
use crate::plan::Plan;

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Stop at the first failed or errored check; the rest are reported skipped.
    pub fail_fast: bool,
    /// Base URL for suites without a target (the embedded reference).
    pub default_base_url: Option<String>,
    /// Folder for load figures (`.hgrm`, `.hlog`, JSON); empty: `reports`.
    pub report_dir: std::path::PathBuf,
    /// `--allow-remote-load`: load may go to a non-loopback target.
    pub allow_remote_load: bool,
}

/// Something that consumes events (a set of reporters, a test's Vec, ...).
pub trait EventSink {
    fn event(&mut self, e: &Event);
}

impl<F: FnMut(&Event)> EventSink for F {
    fn event(&mut self, e: &Event) {
        self(e)
    }
}

pub fn suite_infos(plan: &Plan, opts: &RunOptions) -> Vec<SuiteInfo> {
    plan.suites
        .iter()
        .map(|s| SuiteInfo {
            name: s.name.clone(),
            file: s.file.clone(),
            version: s.version.clone(),
            target: s
                .base_url
                .clone()
                .or_else(|| opts.default_base_url.clone())
                .unwrap_or_default(),
            checks: s.checks.len()
                + s.load
                    .as_ref()
                    .map_or(0, crate::families::load::exec::result_count),
        })
        .collect()
}

/// Runs every check of the plan in order. `cancel` resolving stops the run
/// between checks (and interrupts the current one); what did not run is
/// reported skipped.
pub async fn run(
    plan: &Plan,
    opts: &RunOptions,
    client: &Client,
    sink: &mut dyn EventSink,
    cancel: tokio::sync::watch::Receiver<bool>,
) -> Summary {
    let started = Instant::now();
    let infos = suite_infos(plan, opts);
    sink.event(&Event::RunStarted {
        started_at: SystemTime::now(),
        suites: infos.clone(),
    });
    let mut summary = Summary::default();
    let mut stop: Option<String> = None;
    for (suite, info) in plan.suites.iter().zip(infos) {
        let suite_started = Instant::now();
        sink.event(&Event::SuiteStarted(info.clone()));
        let target = Target {
            base_url: info.target.clone(),
            headers: suite.headers.clone(),
            second_tenant_headers: suite.second_tenant_headers.clone(),
            timeout: suite.timeout,
        };
        for check in &suite.checks {
            if stop.is_none() && *cancel.borrow() {
                stop = Some("not run: the run was cancelled".into());
            }
            let check_started = Instant::now();
            let started_at = SystemTime::now();
            let outcome = if let Some(why) = &stop {
                Outcome::skipped(why.clone())
            } else {
                sink.event(&Event::CheckStarted {
                    suite: suite.name.clone(),
                    id: check.id.clone(),
                });
                let (tx, mut rx) = mpsc::unbounded_channel();
                let ctx = CheckContext {
                    client: client.clone(),
                    target: target.clone(),
                    notes: tx,
                    redactor: plan.redactor.clone(),
                };
                let mut fut = std::pin::pin!(families::execute(&check.body, &ctx));
                let mut cancel = cancel.clone();
                loop {
                    tokio::select! {
                        o = &mut fut => break o,
                        Some(note) = rx.recv() => sink.event(&Event::CheckNote {
                            suite: suite.name.clone(),
                            id: check.id.clone(),
                            message: note,
                        }),
                        Ok(()) = cancel.changed() => {
                            if *cancel.borrow() {
                                stop = Some("not run: the run was cancelled".into());
                                break Outcome::error("cancelled while running");
                            }
                        }
                    }
                }
            };
            summary.add(outcome.verdict);
            if opts.fail_fast
                && stop.is_none()
                && matches!(
                    outcome.verdict,
                    families::Verdict::Fail | families::Verdict::Error
                )
            {
                stop = Some(format!(
                    "not run: --fail-fast stopped after {}/{}",
                    suite.name, check.id
                ));
            }
            sink.event(&Event::CheckFinished(Box::new(CheckResult {
                suite: suite.name.clone(),
                id: check.id.clone(),
                kind: check.kind,
                tags: check.tags.clone(),
                description: check.description.clone(),
                outcome,
                started_at,
                duration: check_started.elapsed(),
            })));
        }
        // The burst rehearsal runs after the suite's checks; each threshold
        // comes back as its own result.
        if let Some(load) = &suite.load {
            let skip = stop.clone().or_else(|| {
                cancel
                    .borrow()
                    .then(|| "not run: the run was cancelled".to_owned())
            });
            crate::families::load::exec::run_suite_load(
                load,
                &suite.name,
                &target,
                opts,
                plan.redactor.clone(),
                client,
                skip,
                sink,
                &mut summary,
                cancel.clone(),
            )
            .await;
        }
        sink.event(&Event::SuiteFinished {
            suite: suite.name.clone(),
            duration: suite_started.elapsed(),
        });
    }
    let cancelled = *cancel.borrow();
    sink.event(&Event::RunFinished {
        summary,
        duration: started.elapsed(),
        cancelled,
    });
    summary
}
