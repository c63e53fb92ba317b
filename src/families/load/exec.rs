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

use super::summary::{
    BurstFigures, Distribution, EffectsSummary, FilesSummary, IdempotencySummary, KindSummary,
    LoadSummary,
};
use super::{engine, signal, stats};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

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

/// Runs the burst of `plan`, writes its figures and judges it: one result per
/// threshold, then delivery, then effects (see [`result_count`]).
pub async fn run(plan: &LoadPlan, ctx: LoadContext<'_>) -> Vec<LoadResult> {
    let res = Results::new(plan);
    let LoadContext {
        suite,
        target,
        client,
        redactor,
        report_dir,
        allow_remote,
        cancel,
    } = ctx;
    let remote_ok = plan.allow_remote || allow_remote;
    if !(is_loopback(&target.base_url) || remote_ok) {
        return res.all(Outcome::error(format!(
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
            return res.all(Outcome::error(format!(
                "request `{}` of the load goes to `{shown}`, which is not an http(s) URL with a host",
                m.name
            )));
        }
        if !(is_loopback(&url) || remote_ok) {
            return res.all(Outcome::error(format!(
                "refusing to send load to {shown} (request `{}`): not a loopback address; set `allow_remote: true` in the suite's `load:` or pass --allow-remote-load",
                m.name
            )));
        }
    }
    let (notes, _) = tokio::sync::mpsc::unbounded_channel();
    let ctx = CheckContext {
        client: client.clone(),
        target: target.clone(),
        notes,
        redactor: redactor.clone(),
        allow_remote_load: remote_ok,
        // A load runs no sink check.
        sink: Default::default(),
    };
    let before = match &plan.effects {
        Some(c) => {
            match common::read_counter(&ctx, c, &Scope::new(), "effects before the burst").await {
                Ok((n, _)) => Some(n),
                Err(o) => return res.all(o),
            }
        }
        None => None,
    };
    let dir = if report_dir.as_os_str().is_empty() {
        PathBuf::from("reports")
    } else {
        report_dir.to_path_buf()
    };
    let stem = format!("load-{}-{}", sanitize(suite), sanitize(&plan.id));
    let files = Files {
        hgrm: dir.join(format!("{stem}.hgrm")),
        raw_hgrm: dir.join(format!("{stem}.raw.hgrm")),
        hlog: dir.join(format!("{stem}.hlog")),
        json: dir.join(format!("{stem}.json")),
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return res.all(Outcome::error(format!(
            "cannot create the report folder {}: {e}",
            dir.display()
        )));
    }
    let base = SystemTime::now();
    let hlog = match stats::HlogFile::create(
        &files.hlog,
        base,
        &format!("tminus load {suite}/{}", plan.id),
    ) {
        Ok(h) => Some(h),
        Err(e) => {
            return res.all(Outcome::error(format!(
                "cannot write {}: {e}",
                files.hlog.display()
            )))
        }
    };
    let shared = Arc::new(engine::Shared::new(plan.clone(), target.clone()));
    let out = engine::run(shared.clone(), hlog, base).await;
    let cancelled = *cancel.borrow() || signal::cancelled();

    let mut overall = KindStats::new();
    for k in &out.kinds {
        overall.add(k);
    }
    // The engine never sends more than this (stages: a budget; iterations:
    // goose's count), so the share stays at or below 1.
    let expected = plan.scheduled_requests();
    let delivered = overall.requests as f64 / expected.max(1.0);
    let distinct = shared.distinct_keys_ok.load(Ordering::Relaxed);
    let duplicates = shared.duplicates.load(Ordering::Relaxed);
    let after = match (&plan.effects, before) {
        (Some(c), Some(_)) if !cancelled => {
            Some(common::read_counter(&ctx, c, &Scope::new(), "effects after the burst").await)
        }
        _ => None,
    };

    // Files first: they are written on cancel too (partial figures).
    let summary = LoadSummary {
        version: super::summary::FORMAT_VERSION,
        suite: suite.to_owned(),
        load: plan.id.clone(),
        target: target.base_url.clone(),
        cancelled,
        hit_max_duration: out.hit_max_duration,
        engine_error: out.engine_error.clone(),
        elapsed_s: out.elapsed.as_secs_f64(),
        profile: (&plan.profile).into(),
        max_rate_per_s: plan.max_rate,
        scheduled_requests: expected.round(),
        delivered_share: delivered,
        idempotency: IdempotencySummary {
            distinct_keys_succeeded: distinct,
            duplicate_retries: duplicates,
        },
        overall: KindSummary::new(&overall, out.elapsed),
        kinds: plan
            .mix
            .iter()
            .zip(&out.kinds)
            .map(|(m, k)| (m.name.clone(), KindSummary::new(k, out.elapsed)))
            .collect(),
        files: FilesSummary {
            hgrm: files.hgrm.clone(),
            raw_hgrm: files.raw_hgrm.clone(),
            hlog: files.hlog.clone(),
        },
        effects: match (before, &after) {
            (Some(b), Some(Ok((a, _)))) => Some(EffectsSummary {
                before: b,
                after: *a,
                delta: a - b,
            }),
            _ => None,
        },
    };
    let summary_text = serde_json::to_string_pretty(&summary)
        .map(|t| redactor.redact(&t) + "\n")
        .unwrap_or_default();
    let mut write_err = None;
    for r in [
        stats::write_hgrm(&files.hgrm, &overall.corrected),
        stats::write_hgrm(&files.raw_hgrm, &overall.raw),
        crate::files::write_atomic(&files.json, summary_text.as_bytes()),
    ] {
        if let Err(e) = r {
            write_err = Some(format!(
                "cannot write the load figures in {}: {e}",
                dir.display()
            ));
        }
    }

    let headline = headline(&overall, out.elapsed);
    // Drawn for partial runs too: a cancelled burst's plots are still evidence.
    let figures = BurstFigures {
        suite: suite.to_owned(),
        load: plan.id.clone(),
        distributions: std::iter::once(Distribution::new("all requests", &overall))
            .chain(
                plan.mix
                    .iter()
                    .zip(&out.kinds)
                    .map(|(m, k)| Distribution::new(m.name.clone(), k)),
            )
            .collect(),
        intervals: out.intervals,
    };
    let res = res.with_figures(figures);
    if cancelled {
        return res.all(Outcome::error(format!(
            "the burst was cancelled after {}: not judged; partial figures in {} ({headline})",
            crate::fmt_duration(out.elapsed),
            files.json.display()
        )));
    }
    if let Some(e) = out.engine_error.clone().or(write_err) {
        return res.all(Outcome::error(e));
    }
    let mut res = res;
    for t in &plan.thresholds {
        let o = judge(t, plan, &out.kinds, &overall, out.elapsed);
        res.push(&t.slug(), "load.threshold", t.text.clone(), o);
    }
    let props = vec![
        prop("requests", overall.requests),
        prop("scheduled", expected.round() as i64),
        prop("delivered_share", PropValue::rounded(delivered, 3)),
    ];
    let d = if out.hit_max_duration {
        Outcome::fail(
            format!(
                "the burst hit max_duration ({}) and was stopped",
                crate::fmt_duration(plan.max_duration)
            ),
            "the profile ends within max_duration",
            format!("stopped after {}", crate::fmt_duration(out.elapsed)),
        )
    } else if delivered < plan.min_delivered {
        Outcome::fail(
            format!(
                "could not deliver the requested load: sent {} of {:.0} scheduled requests ({:.0}%) in {}; {headline}",
                overall.requests,
                expected,
                delivered * 100.0,
                crate::fmt_duration(out.elapsed)
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
    if let (Some(b), Some(after)) = (before, after) {
        let o = match after {
            Err(o) => o,
            Ok((a, _)) => {
                let delta = a - b;
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
        };
        res.push("effects", "load.effects", effects_description(), o);
    }
    res.out
}

struct Files {
    hgrm: PathBuf,
    raw_hgrm: PathBuf,
    hlog: PathBuf,
    json: PathBuf,
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
            "{}: {shown}{which} over {} requests ({scope})",
            t.text, k.requests
        ))
    } else {
        Outcome::fail(
            format!(
                "threshold breached: {} measured {shown}{which} over {} requests ({scope})",
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
