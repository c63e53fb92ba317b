//! The burst rehearsal (issue 8, catalogue LOAD-*): a suite's `load:`
//! section, run by `tminus run` after the suite's checks.
//!
//! goose drives the users (`engine.rs`); tminus measures with HDR histograms
//! (`stats.rs`), writes `.hgrm`, `.hlog` and a JSON summary (`summary.rs`) to
//! the report folder, and judges: each threshold, the delivered load and the
//! side-effect count (LOAD-005) become results of their own ([`LoadResult`],
//! kind `load.threshold`, `load.delivery`, `load.effects`). The runner turns
//! them into `CheckFinished` events and counts them, so they reach JUnit as
//! testcases and a breach exits 1. This module never sees the runner's
//! summary or event stream.

use super::chance::{percentile_band, rate_band};
use super::summary::{
    BurstFigures, Distribution, EffectsSummary, FilesSummary, IdempotencySummary, IntervalPoint,
    KindSummary, LoadSummary,
};
use super::{engine, signal, stats};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::families::load::plan::{LoadPlan, Metric, Threshold};
use crate::families::{common, CheckContext, Outcome, Verdict};
use crate::http::{Client, Target};
use crate::outcome::{prop, PropValue};
use crate::plan::Scope;
use crate::redact::Redactor;
use stats::KindStats;

/// How many results a load reports: its thresholds, the delivery check and
/// the side-effect check when `effects:` is set.
pub fn result_count(p: &LoadPlan) -> usize {
    p.thresholds.len() + 1 + usize::from(p.effects.is_some())
}

/// True when `base_url` points at this machine (127.0.0.0/8, ::1, localhost).
pub fn is_loopback(base_url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = u.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// What a burst needs from the runner.
pub struct LoadContext<'a> {
    pub suite: &'a str,
    pub target: &'a Target,
    pub client: &'a Client,
    pub redactor: Redactor,
    /// Folder for the `.hgrm`, `.hlog` and JSON figures; empty: `reports`.
    pub report_dir: &'a Path,
    /// `--allow-remote-load`: load may go to a non-loopback target.
    pub allow_remote: bool,
    pub cancel: tokio::sync::watch::Receiver<bool>,
}

/// One judged result of a burst; the runner reports it as a check result of
/// the suite (with the load's tags).
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// `<load id>.<slug>`: `burst.p95`, `burst.delivered`, `burst.effects`.
    pub id: String,
    pub kind: &'static str,
    pub description: String,
    pub outcome: Outcome,
    /// On the delivery result of a burst that ran: what the HTML report
    /// plots (the runner passes it on as `Event::LoadFigures`).
    pub figures: Option<Box<BurstFigures>>,
}

/// Collects a load's results in their reporting order.
struct Results<'a> {
    plan: &'a LoadPlan,
    out: Vec<LoadResult>,
    /// Given to the delivery result when it is pushed.
    figures: Option<Box<BurstFigures>>,
}

impl<'a> Results<'a> {
    fn new(plan: &'a LoadPlan) -> Self {
        Results {
            plan,
            out: Vec::with_capacity(result_count(plan)),
            figures: None,
        }
    }

    fn with_figures(self, figures: BurstFigures) -> Self {
        Results {
            figures: Some(Box::new(figures)),
            ..self
        }
    }

    fn push(&mut self, slug: &str, kind: &'static str, description: String, outcome: Outcome) {
        self.out.push(LoadResult {
            id: format!("{}.{slug}", self.plan.id),
            kind,
            description,
            outcome,
            figures: if kind == "load.delivery" {
                self.figures.take()
            } else {
                None
            },
        });
    }

    /// Every result with the same outcome (skipped runs, refused loads).
    fn all(mut self, outcome: Outcome) -> Vec<LoadResult> {
        let plan = self.plan;
        for t in &plan.thresholds {
            self.push(&t.slug(), "load.threshold", t.text.clone(), outcome.clone());
        }
        self.push(
            "delivered",
            "load.delivery",
            delivered_description(plan),
            outcome.clone(),
        );
        if plan.effects.is_some() {
            self.push("effects", "load.effects", effects_description(), outcome);
        }
        self.out
    }
}

/// Every result of `plan` with the same outcome: what the runner reports for
/// a load it does not run (`--fail-fast`, cancelled).
pub fn uniform(plan: &LoadPlan, outcome: Outcome) -> Vec<LoadResult> {
    Results::new(plan).all(outcome)
}

fn delivered_description(p: &LoadPlan) -> String {
    format!(
        "the load asked for was delivered (at least {:.0}% of the scheduled requests sent, max {}/s)",
        p.min_delivered * 100.0,
        p.max_rate
    )
}

fn effects_description() -> String {
    "LOAD-005: after the burst, the side-effect count equals the number of distinct idempotency keys".into()
}

/// What a burst measured, in one process or merged from shards: everything
/// the files and the judgement need.
pub struct Figures {
    /// Per request kind of the mix, in mix order.
    pub kinds: Vec<KindStats>,
    pub overall: KindStats,
    pub elapsed: Duration,
    /// The most requests the profile schedules (see `scheduled_requests`).
    pub scheduled: f64,
    pub hit_max_duration: bool,
    pub engine_error: Option<String>,
    pub cancelled: bool,
    pub distinct_keys: u64,
    pub duplicates: u64,
    pub effects: Effects,
    /// The interval log's intervals, for the report's plots (empty for a
    /// merge of shards: each shard's `.hlog` holds its own).
    pub intervals: Vec<IntervalPoint>,
}

impl Figures {
    pub fn new(kinds: Vec<KindStats>, elapsed: Duration, scheduled: f64) -> Self {
        let mut overall = KindStats::new();
        for k in &kinds {
            overall.add(k);
        }
        Figures {
            kinds,
            overall,
            elapsed,
            scheduled,
            hit_max_duration: false,
            engine_error: None,
            cancelled: false,
            distinct_keys: 0,
            duplicates: 0,
            intervals: Vec::new(),
            effects: Effects::NotAsked,
        }
    }

    /// Requests sent over requests scheduled (the engine keeps it at or
    /// below 1: stages have a budget, iterations goose's count).
    pub fn delivered(&self) -> f64 {
        self.overall.requests as f64 / self.scheduled.max(1.0)
    }
}

/// The side-effect counter (LOAD-005) around the burst.
pub enum Effects {
    /// No `effects:` in the load, or not read (cancelled).
    NotAsked,
    Read {
        before: i64,
        after: i64,
    },
    /// Reading after the burst failed: the effects result.
    Failed(Outcome),
}

/// A burst that ran, with where its figures go and when the counter was
/// read (for shards, whose readings must bracket every shard's burst).
pub(super) struct Burst {
    pub figures: Figures,
    pub dir: PathBuf,
    pub stem: String,
    pub started: SystemTime,
    pub ended: SystemTime,
    /// When the `before` reading had completed.
    pub before_read: Option<SystemTime>,
    /// When the `after` reading was sent.
    pub after_read: Option<SystemTime>,
}

/// Runs the burst of `plan`, writes its figures and judges it: one result per
/// threshold, then delivery, then effects (see [`result_count`]). A shard
/// (`plan.shard`) writes its figures for `tminus merge` and defers its verdict.
pub async fn run(plan: &LoadPlan, ctx: LoadContext<'_>) -> Vec<LoadResult> {
    let burst = match burst(plan, &ctx).await {
        Ok(b) => b,
        Err(o) => return uniform(plan, o),
    };
    if let Some(shard) = &plan.shard {
        return super::shard::finish(plan, shard, &ctx, burst);
    }
    let files = Files::new(&burst.dir, &burst.stem);
    let write_err = write_figures(
        plan,
        ctx.suite,
        &ctx.target.base_url,
        &burst.figures,
        &files,
        &ctx.redactor,
    );
    judge_figures(plan, ctx.suite, &burst.figures, &files.json, write_err)
}

/// The report folder (`reports` when none is given) and the file stem of a
/// load: `load-<suite>-<id>`, plus `.shard-I-of-N` for a shard.
pub fn stem(dir: &Path, suite: &str, plan: &LoadPlan) -> (PathBuf, String) {
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from("reports")
    } else {
        dir.to_path_buf()
    };
    let mut stem = format!("load-{}-{}", sanitize(suite), sanitize(&plan.id));
    if let Some(s) = &plan.shard {
        stem.push_str(&format!(".shard-{}-of-{}", s.spec.index, s.spec.count));
    }
    (dir, stem)
}

/// Guards, reads the counter, waits for `--start-at` (shards), runs goose
/// and reads the counter again. Err: every result is that outcome.
async fn burst(plan: &LoadPlan, ctx: &LoadContext<'_>) -> Result<Burst, Outcome> {
    let LoadContext {
        suite,
        target,
        client,
        redactor,
        report_dir,
        allow_remote,
        cancel,
    } = ctx;
    let remote_ok = plan.allow_remote || *allow_remote;
    if !(is_loopback(&target.base_url) || remote_ok) {
        return Err(Outcome::error(format!(
            "refusing to send load to {}: not a loopback address; set `allow_remote: true` in the suite's `load:` or pass --allow-remote-load",
            crate::redact::mask_userinfo(&target.base_url)
        )));
    }
    // Every destination of the mix, not only the base URL: an absolute
    // `url:` is held to the same guard.
    for m in &plan.mix {
        let url = target.render(&m.request, &Scope::new()).url;
        let shown = crate::redact::mask_userinfo(&url);
        if engine::origin_of(&url).is_none() {
            return Err(Outcome::error(format!(
                "request `{}` of the load goes to `{shown}`, which is not an http(s) URL with a host",
                m.name
            )));
        }
        if !(is_loopback(&url) || remote_ok) {
            return Err(Outcome::error(format!(
                "refusing to send load to {shown} (request `{}`): not a loopback address; set `allow_remote: true` in the suite's `load:` or pass --allow-remote-load",
                m.name
            )));
        }
    }
    let (notes, _) = tokio::sync::mpsc::unbounded_channel();
    let cctx = CheckContext {
        client: (*client).clone(),
        target: (*target).clone(),
        notes,
        redactor: redactor.clone(),
        allow_remote_load: remote_ok,
        // A load runs no sink check.
        sink: Default::default(),
    };
    let before = match &plan.effects {
        Some(c) => Some(
            common::read_counter(&cctx, c, &Scope::new(), "effects before the burst")
                .await?
                .0,
        ),
        None => None,
    };
    let before_read = before.map(|_| SystemTime::now());
    let (dir, stem) = stem(report_dir, suite, plan);
    std::fs::create_dir_all(&dir).map_err(|e| {
        Outcome::error(format!(
            "cannot create the report folder {}: {e}",
            dir.display()
        ))
    })?;
    if let Some(at) = plan.shard.as_ref().and_then(|s| s.start_at) {
        super::shard::wait_until(at, cancel.clone()).await?;
    }
    let hlog_path = dir.join(format!("{stem}.hlog"));
    let base = SystemTime::now();
    let hlog = stats::HlogFile::create(
        &hlog_path,
        base,
        &format!("tminus load {suite}/{}", plan.id),
    )
    .map_err(|e| Outcome::error(format!("cannot write {}: {e}", hlog_path.display())))?;
    let shared = Arc::new(engine::Shared::new(plan.clone(), (*target).clone()));
    let out = if plan.max_users == 0 {
        // A shard with no user (more shards than users): nothing to send,
        // but its empty figures still count for the merge.
        engine::RunOutcome {
            kinds: shared.merged_kinds(),
            elapsed: Duration::ZERO,
            engine_error: None,
            hit_max_duration: false,
            intervals: Vec::new(),
        }
    } else {
        engine::run(shared.clone(), Some(hlog), base).await
    };
    let ended = SystemTime::now();
    let cancelled = *cancel.borrow() || signal::cancelled();
    let mut figures = Figures::new(out.kinds, out.elapsed, plan.scheduled_requests());
    figures.hit_max_duration = out.hit_max_duration;
    figures.engine_error = out.engine_error;
    figures.cancelled = cancelled;
    figures.intervals = out.intervals;
    figures.distinct_keys = shared.distinct_keys_ok.load(Ordering::Relaxed);
    figures.duplicates = shared.duplicates.load(Ordering::Relaxed);
    let mut after_read = None;
    if let (Some(c), Some(before)) = (&plan.effects, before) {
        if !cancelled {
            after_read = Some(SystemTime::now());
            figures.effects = match common::read_counter(
                &cctx,
                c,
                &Scope::new(),
                "effects after the burst",
            )
            .await
            {
                Ok((after, _)) => Effects::Read { before, after },
                Err(o) => Effects::Failed(o),
            };
        }
    }
    Ok(Burst {
        figures,
        dir,
        stem,
        started: base,
        ended,
        before_read,
        after_read,
    })
}

/// Writes the `.hgrm` files and the JSON summary of `f`; the error, if any,
/// as a message (the interval log was written as the burst ran).
pub fn write_figures(
    plan: &LoadPlan,
    suite: &str,
    target: &str,
    f: &Figures,
    files: &Files,
    redactor: &Redactor,
) -> Option<String> {
    let summary = LoadSummary {
        version: super::summary::FORMAT_VERSION,
        suite: suite.to_owned(),
        load: plan.id.clone(),
        target: target.to_owned(),
        cancelled: f.cancelled,
        hit_max_duration: f.hit_max_duration,
        engine_error: f.engine_error.clone(),
        elapsed_s: f.elapsed.as_secs_f64(),
        profile: (&plan.profile).into(),
        max_rate_per_s: plan.max_rate,
        scheduled_requests: f.scheduled.round(),
        delivered_share: f.delivered(),
        idempotency: IdempotencySummary {
            distinct_keys_succeeded: f.distinct_keys,
            duplicate_retries: f.duplicates,
        },
        overall: KindSummary::new(&f.overall, f.elapsed),
        kinds: plan
            .mix
            .iter()
            .zip(&f.kinds)
            .map(|(m, k)| (m.name.clone(), KindSummary::new(k, f.elapsed)))
            .collect(),
        files: FilesSummary {
            hgrm: files.hgrm.clone(),
            raw_hgrm: files.raw_hgrm.clone(),
            hlog: files.hlog.clone(),
        },
        effects: match f.effects {
            Effects::Read { before, after } => Some(EffectsSummary {
                before,
                after,
                delta: after - before,
            }),
            _ => None,
        },
    };
    let summary_text = serde_json::to_string_pretty(&summary)
        .map(|t| redactor.redact(&t) + "\n")
        .unwrap_or_default();
    let mut write_err = None;
    for r in [
        stats::write_hgrm(&files.hgrm, &f.overall.corrected),
        stats::write_hgrm(&files.raw_hgrm, &f.overall.raw),
        crate::files::write_atomic(&files.json, summary_text.as_bytes()),
    ] {
        if let Err(e) = r {
            let dir = files.json.parent().unwrap_or(Path::new("."));
            write_err = Some(format!(
                "cannot write the load figures in {}: {e}",
                dir.display()
            ));
        }
    }
    write_err
}

/// Judges a burst's figures (one process's or the merge of its shards):
/// each threshold, the delivery and the side effects; errors for a
/// cancelled or broken burst. `json` is the summary named in messages.
pub fn judge_figures(
    plan: &LoadPlan,
    suite: &str,
    f: &Figures,
    json: &Path,
    write_err: Option<String>,
) -> Vec<LoadResult> {
    let headline = headline(&f.overall, f.elapsed);
    // Drawn for partial runs too: a cancelled burst's plots are still evidence.
    let figures = BurstFigures {
        suite: suite.to_owned(),
        load: plan.id.clone(),
        distributions: std::iter::once(Distribution::new("all requests", &f.overall))
            .chain(
                plan.mix
                    .iter()
                    .zip(&f.kinds)
                    .map(|(m, k)| Distribution::new(m.name.clone(), k)),
            )
            .collect(),
        intervals: f.intervals.clone(),
    };
    let res = Results::new(plan).with_figures(figures);
    if f.cancelled {
        return res.all(Outcome::error(format!(
            "the burst was cancelled after {}: not judged; partial figures in {} ({headline})",
            crate::fmt_duration(f.elapsed),
            json.display()
        )));
    }
    if let Some(e) = f.engine_error.clone().or(write_err) {
        return res.all(Outcome::error(e));
    }
    let mut res = res;
    let overall = &f.overall;
    let expected = f.scheduled;
    let delivered = f.delivered();
    for t in &plan.thresholds {
        let o = judge(t, plan, &f.kinds, overall, f.elapsed);
        res.push(&t.slug(), "load.threshold", t.text.clone(), o);
    }
    let props = vec![
        prop("requests", overall.requests),
        prop("scheduled", expected.round() as i64),
        prop("delivered_share", PropValue::rounded(delivered, 3)),
    ];
    let d = if f.hit_max_duration {
        Outcome::fail(
            format!(
                "the burst hit max_duration ({}) and was stopped",
                crate::fmt_duration(plan.max_duration)
            ),
            "the profile ends within max_duration",
            format!("stopped after {}", crate::fmt_duration(f.elapsed)),
        )
    } else if delivered < plan.min_delivered {
        Outcome::fail(
            format!(
                "could not deliver the requested load: sent {} of {:.0} scheduled requests ({:.0}%) in {}; {headline}",
                overall.requests,
                expected,
                delivered * 100.0,
                crate::fmt_duration(f.elapsed)
            ),
            format!(">= {:.0}% of the scheduled requests", plan.min_delivered * 100.0),
            format!("{:.1}%", delivered * 100.0),
        )
    } else {
        Outcome::pass(format!(
            "sent {} of {:.0} scheduled requests ({:.0}%); {headline}",
            overall.requests,
            expected,
            delivered * 100.0
        ))
    };
    res.push(
        "delivered",
        "load.delivery",
        delivered_description(plan),
        d.with_properties(props),
    );
    let (distinct, duplicates) = (f.distinct_keys, f.duplicates);
    let effects = match &f.effects {
        Effects::NotAsked => None,
        Effects::Failed(o) => Some(o.clone()),
        Effects::Read {
            before: b,
            after: a,
        } => {
            let (b, a) = (*b, *a);
            let delta = a - b;
            let props = vec![
                prop("effects_delta", delta),
                prop("distinct_keys", distinct),
                prop("duplicate_retries", duplicates),
            ];
            Some(
                if delta == distinct as i64 {
                    Outcome::pass(format!(
                        "side effects went from {b} to {a} (+{delta}) for {distinct} distinct keys ({duplicates} duplicate retries)"
                    ))
                } else {
                    Outcome::fail(
                        format!(
                            "side effects went from {b} to {a} (+{delta}) but {distinct} distinct keys succeeded ({duplicates} duplicate retries): {}",
                            if delta > distinct as i64 { "retries executed twice" } else { "effects were lost" }
                        ),
                        format!("+{distinct}"),
                        format!("+{delta}"),
                    )
                }
                .with_properties(props),
            )
        }
    };
    if let Some(o) = effects {
        res.push("effects", "load.effects", effects_description(), o);
    }
    res.out
}

/// The figure files of a burst in its report folder.
pub struct Files {
    pub hgrm: PathBuf,
    pub raw_hgrm: PathBuf,
    pub hlog: PathBuf,
    pub json: PathBuf,
}

impl Files {
    pub fn new(dir: &Path, stem: &str) -> Self {
        Files {
            hgrm: dir.join(format!("{stem}.hgrm")),
            raw_hgrm: dir.join(format!("{stem}.raw.hgrm")),
            hlog: dir.join(format!("{stem}.hlog")),
            json: dir.join(format!("{stem}.json")),
        }
    }
}

/// A file-name-safe form of a suite or load name. When characters had to be
/// replaced, a short digest of the original is appended, so `a/b` and `a_b`
/// never write the same files.
fn sanitize(s: &str) -> String {
    let safe: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe == s {
        return safe;
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(s.as_bytes());
    format!("{safe}-{}", &hex::encode(digest)[..8])
}

fn headline(k: &KindStats, elapsed: std::time::Duration) -> String {
    if k.requests == 0 {
        return "no request completed".into();
    }
    format!(
        "{} requests, {:.0} req/s, p95 {:.1} ms corrected / {:.1} ms raw, generator late p50 {:.3} / p99 {:.3} ms, {} failed, {} × 429",
        k.requests,
        k.requests as f64 / elapsed.as_secs_f64().max(1e-9),
        k.corrected.value_at_quantile(0.95) as f64 / 1000.0,
        k.raw.value_at_quantile(0.95) as f64 / 1000.0,
        k.lateness.value_at_quantile(0.50) as f64 / 1000.0,
        k.lateness.value_at_quantile(0.99) as f64 / 1000.0,
        k.failed,
        k.r429
    )
}

/// Measures a threshold's metric; latencies in µs.
pub fn measure(t: &Threshold, k: &KindStats, elapsed: std::time::Duration) -> Option<f64> {
    let n = k.requests;
    let hist = |raw: bool| if raw { &k.raw } else { &k.corrected };
    match t.metric {
        _ if n == 0 => None,
        Metric::Percentile { q, raw } => Some(hist(raw).value_at_quantile(q / 100.0) as f64),
        Metric::Mean { raw } => Some(hist(raw).mean()),
        Metric::Max { raw } => Some(hist(raw).max() as f64),
        Metric::ErrorRate => Some(k.failed as f64 / n as f64),
        Metric::Rate429 => Some(k.r429 as f64 / n as f64),
        Metric::Throughput => Some(n as f64 / elapsed.as_secs_f64().max(1e-9)),
    }
}

fn show(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Percentile { .. } | Metric::Mean { .. } | Metric::Max { .. } => {
            format!("{:.1} ms", v / 1000.0)
        }
        Metric::ErrorRate | Metric::Rate429 => format!("{:.2}%", v * 100.0),
        Metric::Throughput => format!("{v:.1}/s"),
    }
}

fn judge(
    t: &Threshold,
    plan: &LoadPlan,
    kinds: &[KindStats],
    overall: &KindStats,
    elapsed: std::time::Duration,
) -> Outcome {
    let (k, scope) = match &t.scope {
        Some(name) => match plan.mix.iter().position(|m| &m.name == name) {
            Some(i) => (&kinds[i], name.as_str()),
            None => return Outcome::error(format!("no request kind `{name}` in the mix")),
        },
        None => (overall, "in all"),
    };
    // Latency and throughput of answers that all failed say nothing about
    // the target's service: a 404 everywhere is fast. Not judged, never a pass.
    let succeeded = k
        .statuses
        .values()
        .sum::<u64>()
        .saturating_sub(k.failed + k.r429);
    let on_successes = !matches!(t.metric, Metric::ErrorRate | Metric::Rate429);
    if on_successes && k.requests > 0 && succeeded == 0 {
        return Outcome::error(format!(
            "`{}`: none of the {} {scope} requests succeeded ({}), so latency and throughput were not exercised",
            t.text,
            k.requests,
            k.statuses
                .iter()
                .map(|(s, n)| format!("{s}×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let Some(v) = measure(t, k, elapsed) else {
        return Outcome::error(format!(
            "`{}`: no {scope} request completed, nothing to judge",
            t.text
        ));
    };
    let shown = show(t.metric, v);
    let limit = show(t.metric, t.limit);
    let which = match t.metric {
        Metric::Percentile { raw: false, .. }
        | Metric::Mean { raw: false }
        | Metric::Max { raw: false } => " (corrected for coordinated omission)",
        Metric::Percentile { raw: true, .. }
        | Metric::Mean { raw: true }
        | Metric::Max { raw: true } => " (raw)",
        _ => "",
    };
    let mut props = vec![
        prop("measured", PropValue::rounded(v, 3)),
        prop("measured_display", shown.clone()),
        prop("limit", t.limit),
        prop(
            "unit",
            match t.metric {
                Metric::ErrorRate | Metric::Rate429 => "share",
                Metric::Throughput => "requests_per_s",
                _ => "us",
            },
        ),
        prop("requests", k.requests),
    ];
    // The zone of true shares where this run's verdict is chance (see
    // `chance`), and this run's share to compare with it: for a
    // percentile, the share of answers under the limit; for a rate, the
    // rate itself.
    let band = match t.metric {
        Metric::Percentile { q, raw } => {
            let h = if raw { &k.raw } else { &k.corrected };
            let under = h.count_between(0, (t.limit as u64).saturating_sub(1));
            percentile_band(q / 100.0, h.len()).map(|b| {
                (
                    b,
                    under as f64 / h.len().max(1) as f64,
                    h.len(),
                    "of answers under the limit",
                )
            })
        }
        Metric::ErrorRate | Metric::Rate429 => {
            rate_band(t.limit, k.requests).map(|b| (b, v, k.requests, "measured"))
        }
        _ => None,
    };
    let mut inconclusive = String::new();
    if let Some(((lo, hi), share, n, what)) = band {
        props.push(prop(
            "chance_band_low_pct",
            PropValue::rounded(lo * 100.0, 2),
        ));
        props.push(prop(
            "chance_band_high_pct",
            PropValue::rounded(hi * 100.0, 2),
        ));
        let inside = (lo..=hi).contains(&share);
        props.push(prop("conclusive", !inside));
        if inside {
            inconclusive = format!(
                "; inconclusive: {:.2}% {what} is inside the chance band {:.2}%–{:.2}% for {n} requests, so another run may give the other verdict; send more requests to decide",
                share * 100.0,
                lo * 100.0,
                hi * 100.0,
            );
        }
    }
    if let Metric::Percentile { q, .. } = t.metric {
        props.push(prop(
            "raw_ms",
            PropValue::rounded(k.raw.value_at_quantile(q / 100.0) as f64 / 1000.0, 3),
        ));
        props.push(prop(
            "corrected_ms",
            PropValue::rounded(k.corrected.value_at_quantile(q / 100.0) as f64 / 1000.0, 3),
        ));
    }
    let o = if t.op.holds(v, t.limit) {
        Outcome::pass(format!(
            "{}: {shown}{which} over {} requests ({scope}){inconclusive}",
            t.text, k.requests
        ))
    } else {
        Outcome::fail(
            format!(
                "threshold breached: {} measured {shown}{which} over {} requests ({scope}){inconclusive}",
                t.text, k.requests
            ),
            format!("{} {}", t.op.as_str(), limit),
            shown,
        )
    };
    debug_assert!(matches!(o.verdict, Verdict::Pass | Verdict::Fail));
    o.with_properties(props)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_file_names_never_collide() {
        assert_eq!(sanitize("burst"), "burst");
        assert_ne!(sanitize("a/b"), sanitize("a_b"));
        assert!(sanitize("a/b").starts_with("a_b-"));
    }
}
