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

use super::judge::{judge, pool_bound_message, pool_props};
use super::pool::{PoolFigures, PoolRule};
use super::summary::{
    BurstFigures, Distribution, EffectsSummary, FilesSummary, IdempotencySummary, IntervalPoint,
    KindSummary, LoadSummary, PoolSummary,
};
use super::{engine, signal, stats};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::context::Scope;
use crate::context::{remote_because, CheckContext};
use crate::families::common;
use crate::families::load::plan::LoadPlan;
use crate::http::{Client, Target};
use crate::outcome::Outcome;
use crate::outcome::{prop, PropValue};
use crate::redact::Redactor;
use stats::KindStats;

/// How many results a load reports: its thresholds, the delivery check and
/// the side-effect check when `effects:` is set.
pub fn result_count(p: &LoadPlan) -> usize {
    p.thresholds.len()
        + 1
        + usize::from(p.effects.is_some())
        + p.observe.as_ref().map_or(0, |o| o.thresholds.len())
        + usize::from(p.webhooks.is_some())
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
    /// Where the sink of `webhooks:` listens and how the platform reaches it.
    pub sink: crate::sink::SinkEndpoint,
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
            self.push(
                "effects",
                "load.effects",
                effects_description(),
                outcome.clone(),
            );
        }
        if let Some(o) = &plan.observe {
            for t in &o.thresholds {
                self.push(
                    &super::observe::slug(t),
                    "load.observe",
                    observe_description(t),
                    outcome.clone(),
                );
            }
        }
        if plan.webhooks.is_some() {
            self.push(
                "webhooks",
                "load.webhooks",
                webhooks_description(),
                outcome.clone(),
            );
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

fn webhooks_description() -> String {
    "LOAD-006: the burst's own events reach tminus's sink, none lost, within the latency thresholds"
        .into()
}

fn effects_description() -> String {
    "LOAD-005: after the burst, the side-effect count equals the number of distinct idempotency keys".into()
}

fn observe_description(t: &super::observe::threshold::ObserveThreshold) -> String {
    format!("the target's own signal during the burst: {}", t.text)
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
    /// The open-arrival pool (None: `iterations`, or a merge of shards).
    pub pool: Option<PoolFigures>,
    /// The target's own signals (`observe:`), when read.
    pub observed: Option<super::observe::Observed>,
    /// LOAD-006 judged after the burst (None: not asked, or a merge of shards).
    pub webhooks: Option<Outcome>,
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
            pool: None,
            observed: None,
            webhooks: None,
        }
    }

    /// Whether the pool bound the run and whose fault that was.
    pub fn pool_rule(&self, plan: &LoadPlan) -> Option<PoolRule> {
        let p = self.pool.as_ref()?;
        Some(PoolRule::new(
            &p.counts,
            plan.max_rate,
            self.overall.raw.value_at_quantile(0.99),
        ))
    }

    /// Slots of the schedule never sent.
    pub fn dropped(&self) -> u64 {
        (self.scheduled.round() as u64).saturating_sub(self.overall.requests)
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
    let target = crate::redact::mask_userinfo(&ctx.target.base_url);
    let mut results = judge_figures(
        plan,
        ctx.suite,
        &target,
        &burst.figures,
        &files.json,
        write_err,
    );
    explain_tls_losses(&mut results, &ctx.target.base_url).await;
    results
}

/// A burst that lost its requests at the transport over https may have
/// met a TLS 1.3 server refusing the client certificate after the
/// handshake: the users saw only closed connections. The handshake is
/// repeated alone once (`http::tls::diagnose`) and what the server's alert
/// says is added to the error.
async fn explain_tls_losses(results: &mut [LoadResult], base_url: &str) {
    let lost = |r: &LoadResult| {
        r.outcome.verdict == crate::outcome::Verdict::Error
            && r.outcome.message.contains("failed at the transport")
    };
    if !results.iter().any(lost) {
        return;
    }
    let Some(origin) = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| crate::http::stream::Origin::of(&u).ok())
        .filter(|o| o.tls)
    else {
        return;
    };
    let tls = crate::http::tls::installed().cloned().unwrap_or_default();
    let Some(why) = crate::http::tls::diagnose(&tls, &origin).await else {
        return;
    };
    for r in results.iter_mut().filter(|r| lost(r)) {
        r.outcome
            .message
            .push_str(&format!(" The TLS layer says: {why}"));
    }
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
        sink,
    } = ctx;
    let remote_ok = plan.allow_remote || *allow_remote;
    if let Some(why) = remote_because(&target.base_url).filter(|_| !remote_ok) {
        return Err(Outcome::error(format!(
            "refusing to send load to {}: {why}; set `allow_remote: true` in the suite's `load:` or pass --allow-remote-load",
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
        if let Some(why) = remote_because(&url).filter(|_| !remote_ok) {
            return Err(Outcome::error(format!(
                "refusing to send load to {shown} (request `{}`): {why}; set `allow_remote: true` in the suite's `load:` or pass --allow-remote-load",
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
        // A load runs no sink check, and no client check.
        sink: Default::default(),
        upstream_max_body: crate::upstream::DEFAULT_MAX_BODY,
        dependency: Default::default(),
        upstream_tls: None,
        exhaustion: Default::default(),
        production_twin: None,
        seen: Default::default(),
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
    // LOAD-006: the sink listens and the platform is subscribed before the
    // first request of the burst, so every event it causes can be followed.
    let webhooks = match (&plan.webhooks, &plan.shard) {
        (Some(_), Some(_)) => Some(Err(Outcome::error(
            "`webhooks:` follows the burst's events in one process: it does not run with --shard",
        ))),
        (Some(w), None) => Some(super::webhooks::begin(w, &cctx, sink).await),
        (None, _) => None,
    };
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
    // The target's own signals: the source must answer before any load is
    // sent; with `metrics:` this waits the `before` window.
    let watch = match &plan.observe {
        Some(o) => Some(super::observe::watch::Watch::begin(o, target).await?),
        None => None,
    };
    let hlog_path = dir.join(format!("{stem}.hlog"));
    let base = SystemTime::now();
    let hlog = stats::HlogFile::create(
        &hlog_path,
        base,
        &format!("tminus load {suite}/{}", plan.id),
    )
    .map_err(|e| Outcome::error(format!("cannot write {}: {e}", hlog_path.display())))?;
    let created = match (&plan.webhooks, &webhooks) {
        (Some(w), Some(Ok(_))) => Some(Arc::new(super::webhooks::Created::new(w))),
        _ => None,
    };
    let shared = Arc::new(
        engine::Shared::new(plan.clone(), (*target).clone())
            .with_sample(client.observer())
            .with_created(created.clone()),
    );
    let out = if plan.peak_users == 0 {
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
        // The users render each request with the token held then
        // (`Target::render`), and cannot wait for a fetch: a keeper replaces
        // it ahead of its expiry while the burst runs.
        let keeper = target
            .auth
            .clone()
            .map(|a| tokio::spawn(async move { a.keep_fresh().await }));
        let mut out = engine::run(shared.clone(), Some(hlog), base).await;
        if let Some(k) = keeper {
            // A keeper still waiting is stopped (dropping the handle
            // would leave it running).
            let failed = if k.is_finished() {
                k.await.ok()
            } else {
                k.abort();
                None
            };
            if let Some(e) = failed.filter(|_| out.engine_error.is_none()) {
                out.engine_error = Some(format!(
                    "the burst's OAuth2 token could not be refreshed while it ran, so later requests carried an expired one: {e}"
                ));
            }
        }
        out
    };
    let ended = SystemTime::now();
    let cancelled = *cancel.borrow() || signal::cancelled();
    let mut figures = Figures::new(out.kinds, out.elapsed, plan.scheduled_requests());
    figures.hit_max_duration = out.hit_max_duration;
    figures.engine_error = out.engine_error;
    figures.cancelled = cancelled;
    figures.intervals = out.intervals;
    figures.pool = shared.pool.as_ref().map(|p| {
        let (peak_in_use, opened) = p.peak_and_opened();
        PoolFigures {
            users: p.users,
            max_users: p.max_users,
            peak_in_use,
            opened,
            counts: shared.merged_pool(),
        }
    });
    if let Some(w) = watch {
        let cancel = if cancelled {
            let (tx, rx) = tokio::sync::watch::channel(true);
            drop(tx);
            rx
        } else {
            cancel.clone()
        };
        figures.observed = Some(w.finish(base, ended, cancel).await);
    }
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
    figures.webhooks = match (webhooks, &plan.webhooks) {
        (Some(Ok(session)), Some(w)) if !cancelled => {
            let created = created.as_deref().expect("followed with a session");
            Some(super::webhooks::finish(w, session, created, cancel.clone()).await)
        }
        (Some(Err(o)), _) => Some(o),
        _ => None,
    };
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
        dropped: f.dropped(),
        pool: match (&f.pool, f.pool_rule(plan)) {
            (Some(p), Some(r)) => {
                let n = f.overall.requests.max(1) as f64;
                Some(PoolSummary {
                    users: p.users,
                    max_users: p.max_users,
                    opened: p.opened,
                    peak_in_use: p.peak_in_use,
                    waited_share: p.counts.waited as f64 / n,
                    waited_full_share: p.counts.waited_full as f64 / n,
                    bound: r.bound,
                    target_saturated: r.saturated,
                    raw_bound_mean_ms: stats::ms(r.bound_ms * 1000.0),
                    raw_light_mean_ms: stats::ms(r.light_ms * 1000.0),
                    needed_users: r.needed_users,
                })
            }
            _ => None,
        },
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
            kinds_hlog: Some(files.kinds_hlog.clone()),
            kind_tags: plan
                .mix
                .iter()
                .enumerate()
                .map(|(i, m)| (m.name.clone(), format!("k{i}")))
                .collect(),
        },
        effects: match f.effects {
            Effects::Read { before, after } => Some(EffectsSummary {
                before,
                after,
                delta: after.saturating_sub(before),
            }),
            _ => None,
        },
        observed: f.observed.as_ref().map(Into::into),
    };
    let summary_text = serde_json::to_string_pretty(&summary)
        .map(|t| redactor.redact(&t) + "\n")
        .unwrap_or_default();
    let mut write_err = None;
    // The totals are written as one interval ending now (a merge's burst
    // ran elsewhere; only the histograms matter to their readers).
    let ended = SystemTime::now();
    let started = ended.checked_sub(f.elapsed).unwrap_or(ended);
    for r in [
        super::shard::write_kind_totals(
            &files.kinds_hlog,
            &f.kinds,
            started,
            f.elapsed,
            &format!("tminus load {suite}/{}: per request kind totals", plan.id),
        ),
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
/// cancelled or broken burst, and for one whose requests mostly failed at
/// the transport ([`MAX_TRANSPORT_SHARE`]). `target` (userinfo masked) and
/// `json`, the summary, are named in messages.
pub fn judge_figures(
    plan: &LoadPlan,
    suite: &str,
    target: &str,
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
        observed: f.observed.clone().map(|o| {
            let limits = plan
                .observe
                .iter()
                .flat_map(|p| &p.thresholds)
                .map(|t| (t.series.clone(), t.limit))
                .collect();
            (o, limits)
        }),
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
    let scopes = std::iter::once(("the burst".to_owned(), &f.overall)).chain(
        plan.mix
            .iter()
            .zip(&f.kinds)
            .map(|(m, k)| (format!("request `{}`", m.name), k)),
    );
    if let Some(e) = transport_gate(scopes, target) {
        return res.all(e);
    }
    let mut res = res;
    let overall = &f.overall;
    let expected = f.scheduled;
    let delivered = f.delivered();
    let rule = f.pool_rule(plan);
    // LOAD-001: sends the generator dropped make every verdict of the run
    // inconclusive, sends it made late every breach (`validity.rs`).
    let invalid = super::validity::invalid_because(f, rule.as_ref(), plan.min_delivered);
    for t in &plan.thresholds {
        let o = judge(t, plan, f, rule.as_ref());
        let o = match &invalid {
            Some(why) => why.apply(o),
            None => o,
        };
        res.push(&t.slug(), "load.threshold", t.text.clone(), o);
    }
    let mut props = vec![
        prop("requests", overall.requests),
        prop("scheduled", expected.round() as i64),
        prop("delivered_share", PropValue::rounded(delivered, 3)),
        prop("dropped", f.dropped()),
    ];
    let pool_line = match (&f.pool, &rule) {
        (Some(p), Some(r)) => {
            props.push(prop("users", p.users));
            props.push(prop("max_users", p.max_users));
            props.push(prop("peak_users", p.peak_in_use));
            props.push(prop(
                "waited_share",
                PropValue::rounded(p.counts.waited as f64 / overall.requests.max(1) as f64, 4),
            ));
            props.extend(pool_props(r));
            format!(
                "; users: peak {} in use of {} opened (started {}, max_users {}), {:.1}% of slots waited for a user, {} dropped",
                p.peak_in_use,
                p.opened,
                p.users,
                p.max_users,
                p.counts.waited as f64 / overall.requests.max(1) as f64 * 100.0,
                f.dropped()
            )
        }
        _ => String::new(),
    };
    let pool_inconclusive = rule.filter(|r| r.inconclusive());
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
        let what = format!(
            "could not deliver the requested load: sent {} of {:.0} scheduled requests ({:.0}%) in {}; {headline}{pool_line}",
            overall.requests,
            expected,
            delivered * 100.0,
            crate::fmt_duration(f.elapsed)
        );
        match (&pool_inconclusive, &invalid) {
            // The harness's pool, not the target, held the load back.
            (Some(r), _) => {
                props.push(prop("conclusive", false));
                Outcome::inconclusive(format!(
                    "invalid run (LOAD-001): {what}; {}",
                    pool_bound_message(r, plan, f)
                ))
            }
            // The generator fell behind with users to spare.
            (None, Some(why)) => {
                props.push(prop("conclusive", false));
                Outcome::inconclusive(format!(
                    "inconclusive: invalid run (LOAD-001): {}; {what}",
                    why.why()
                ))
            }
            (None, None) => Outcome::fail(
                what,
                format!(
                    ">= {:.0}% of the scheduled requests",
                    plan.min_delivered * 100.0
                ),
                format!("{:.1}%", delivered * 100.0),
            ),
        }
    } else if let Some(why) = &invalid {
        // Sent in the end, some late beyond the bound: delivered, bunched
        // (`validity.rs`); the thresholds' breaches were made inconclusive.
        Outcome::pass(format!(
            "sent {} of {:.0} scheduled requests ({:.0}%), {}: the target met them bunched; {headline}{pool_line}{}",
            overall.requests,
            expected,
            delivered * 100.0,
            why.why(),
            transport_line(overall)
        ))
    } else {
        Outcome::pass(format!(
            "sent {} of {:.0} scheduled requests ({:.0}%); {headline}{pool_line}{}",
            overall.requests,
            expected,
            delivered * 100.0,
            transport_line(overall)
        ))
    };
    props.push(prop("transport_errors", transport_errors(overall)));
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
            match common::counter_moved(b, a, None, "of the burst's `effects`") {
                Err(why) => Some(Outcome::error(why)),
                Ok(delta) => Some(effects_outcome(b, a, delta, distinct, duplicates)),
            }
        }
    };
    if let Some(o) = effects {
        res.push("effects", "load.effects", effects_description(), o);
    }
    if let Some(op) = &plan.observe {
        let judged = super::observe::judge(op, f.observed.as_ref());
        for ((slug, _, o), t) in judged.into_iter().zip(&op.thresholds) {
            res.push(&slug, "load.observe", observe_description(t), o);
        }
    }
    if plan.webhooks.is_some() {
        let o = f.webhooks.clone().unwrap_or_else(|| {
            Outcome::error("the burst's webhooks were not followed (a merge of shards: `webhooks:` runs in one process)")
        });
        res.push("webhooks", "load.webhooks", webhooks_description(), o);
    }
    res.out
}

/// LOAD-005 on a counter that moved by `delta` from `b` to `a`.
fn effects_outcome(b: i64, a: i64, delta: i64, distinct: u64, duplicates: u64) -> Outcome {
    let props = vec![
        prop("effects_delta", delta),
        prop("distinct_keys", distinct),
        prop("duplicate_retries", duplicates),
    ];
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
    .with_properties(props)
}

/// The implicit gate of every burst (issue 24 item 15): when more than this
/// share of its requests (or of one request kind's) failed at the transport
/// (refused, reset, timed out, never answered), the target was not
/// measured and nothing is certified: every result is an error (exit 3).
/// Fewer are judged like any failure (`error_rate`) and reported on the
/// delivery result. A status, 5xx included, is the target's answer and
/// never a transport error.
pub const MAX_TRANSPORT_SHARE: f64 = 0.5;

/// Requests of `k` that ended without an HTTP answer.
fn transport_errors(k: &KindStats) -> u64 {
    k.errors.values().sum()
}

/// `connect×7, timeout×1`.
fn error_kinds(k: &KindStats) -> String {
    let kinds: Vec<String> = k
        .errors
        .iter()
        .map(|(e, n)| match e.as_str() {
            super::engine::CUT => format!("{e}×{n}: in flight when the burst was stopped"),
            super::engine::TLS => format!(
                "{e}×{n}: the TLS handshake failed (a private CA is trusted with --cacert FILE, a client certificate given with --cert/--key; docs/tls.md)"
            ),
            _ => format!("{e}×{n}"),
        })
        .collect();
    kinds.join(", ")
}

/// What the delivery result says of a few transport errors.
fn transport_line(k: &KindStats) -> String {
    match transport_errors(k) {
        0 => String::new(),
        n => format!(
            "; {n} of {} failed at the transport ({}), judged as failures",
            k.requests,
            error_kinds(k)
        ),
    }
}

/// The error when one of `scopes` (the burst, each request kind) mostly
/// failed at the transport ([`MAX_TRANSPORT_SHARE`]).
fn transport_gate<'a>(
    scopes: impl Iterator<Item = (String, &'a KindStats)>,
    target: &str,
) -> Option<Outcome> {
    for (scope, k) in scopes {
        let lost = transport_errors(k);
        if k.requests == 0 || (lost as f64) <= MAX_TRANSPORT_SHARE * k.requests as f64 {
            continue;
        }
        let answered: Vec<String> = k.statuses.iter().map(|(s, n)| format!("{s}×{n}")).collect();
        let answered = if answered.is_empty() {
            "none was answered".to_owned()
        } else {
            format!("{} answered ({})", k.requests - lost, answered.join(", "))
        };
        return Some(
            Outcome::error(format!(
                "{scope} against {target} cannot certify anything: {lost} of {} requests ({:.0}%) failed at the transport ({}), more than the {:.0}% a burst may lose there; {answered}. Is the target up and listening at that address?",
                k.requests,
                lost as f64 / k.requests as f64 * 100.0,
                error_kinds(k),
                MAX_TRANSPORT_SHARE * 100.0,
            ))
            .with_properties(vec![
                prop("requests", k.requests),
                prop("transport_errors", lost),
            ]),
        );
    }
    None
}

/// What the per-kind totals' file adds to the burst's stem.
pub const KINDS_HLOG_SUFFIX: &str = ".kinds.hlog";

/// The figure files of a burst in its report folder.
pub struct Files {
    pub hgrm: PathBuf,
    pub raw_hgrm: PathBuf,
    pub hlog: PathBuf,
    /// Each request kind's totals, lossless (`shard::write_kind_totals`).
    pub kinds_hlog: PathBuf,
    pub json: PathBuf,
}

impl Files {
    pub fn new(dir: &Path, stem: &str) -> Self {
        Files {
            hgrm: dir.join(format!("{stem}.hgrm")),
            raw_hgrm: dir.join(format!("{stem}.raw.hgrm")),
            hlog: dir.join(format!("{stem}.hlog")),
            kinds_hlog: dir.join(format!("{stem}{KINDS_HLOG_SUFFIX}")),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(statuses: &[(u16, u64)], errors: &[(&str, u64)]) -> KindStats {
        let mut k = KindStats::new();
        k.statuses = statuses.iter().copied().collect();
        k.errors = errors.iter().map(|(e, n)| ((*e).to_owned(), *n)).collect();
        k.requests = k.statuses.values().sum::<u64>() + k.errors.values().sum::<u64>();
        k
    }

    fn gate(k: &KindStats) -> Option<Outcome> {
        transport_gate(
            std::iter::once(("the burst".into(), k)),
            "http://127.0.0.1:1",
        )
    }

    /// More than half failed at the transport: an error naming the address
    /// and counts; half or fewer, or any number of 5xx answers: judged.
    #[test]
    fn the_transport_gate_opens_past_half_and_never_on_answers() {
        let e = gate(&kind(&[(200, 4)], &[("connect", 5)])).expect("5 of 9 lost");
        assert_eq!(e.verdict, crate::outcome::Verdict::Error);
        for part in [
            "http://127.0.0.1:1",
            "5 of 9",
            "connect×5",
            "4 answered (200×4)",
        ] {
            assert!(e.message.contains(part), "{part}: {}", e.message);
        }
        assert!(gate(&kind(&[(200, 5)], &[("timeout", 5)])).is_none());
        assert!(gate(&kind(&[(503, 100)], &[])).is_none());
        assert!(gate(&kind(&[], &[])).is_none());
        let none = gate(&kind(&[], &[("connect", 1)])).expect("1 of 1 lost");
        assert!(
            none.message.contains("none was answered"),
            "{}",
            none.message
        );
    }

    #[test]
    fn load_file_names_never_collide() {
        assert_eq!(sanitize("burst"), "burst");
        assert_ne!(sanitize("a/b"), sanitize("a_b"));
        assert!(sanitize("a/b").starts_with("a_b-"));
    }
}
