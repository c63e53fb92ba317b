//! The burst rehearsal (issue 8, catalogue LOAD-*): a suite's `load:`
//! section, run by `tminus run` after the suite's checks.
//!
//! goose drives the users (`engine.rs`); tminus measures with HDR histograms
//! (`stats.rs`), writes `.hgrm`, `.hlog` and a JSON summary to the report
//! folder, and judges: each threshold, the delivered load and the side-effect
//! count (LOAD-005) become results of their own (`CheckFinished` events with
//! kind `load.threshold`, `load.delivery`, `load.effects`), so they reach
//! JUnit as testcases and a breach exits 1.

use super::{engine, signal, stats};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::json;

use crate::events::{CheckResult, Event, Summary};
use crate::families::load::plan::{LoadPlan, Metric, Profile, Threshold};
use crate::families::{common, CheckContext, Outcome, Verdict};
use crate::http::{Client, Target};
use crate::plan::Scope;
use crate::redact::Redactor;
use crate::run::{EventSink, RunOptions};
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

struct Emitter<'a> {
    suite: &'a str,
    plan: &'a LoadPlan,
    sink: &'a mut dyn EventSink,
    summary: &'a mut Summary,
}

impl Emitter<'_> {
    fn emit(
        &mut self,
        slug: &str,
        kind: &'static str,
        description: String,
        outcome: Outcome,
        started: (SystemTime, Instant),
    ) {
        self.summary.add(outcome.verdict);
        self.sink.event(&Event::CheckFinished(Box::new(CheckResult {
            suite: self.suite.to_owned(),
            id: format!("{}.{slug}", self.plan.id),
            kind,
            tags: self.plan.tags.clone(),
            description: Some(description),
            outcome,
            started_at: started.0,
            duration: started.1.elapsed(),
        })));
    }

    /// Every result with the same verdict (skipped runs, refused loads).
    fn all(&mut self, make: impl Fn() -> Outcome, started: (SystemTime, Instant)) {
        let plan = self.plan;
        for t in &plan.thresholds {
            self.emit(&t.slug(), "load.threshold", t.text.clone(), make(), started);
        }
        self.emit(
            "delivered",
            "load.delivery",
            delivered_description(plan),
            make(),
            started,
        );
        if plan.effects.is_some() {
            self.emit(
                "effects",
                "load.effects",
                effects_description(),
                make(),
                started,
            );
        }
    }
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

#[allow(clippy::too_many_arguments)]
pub async fn run_suite_load(
    plan: &LoadPlan,
    suite: &str,
    target: &Target,
    opts: &RunOptions,
    redactor: Redactor,
    client: &Client,
    skip: Option<String>,
    sink: &mut dyn EventSink,
    summary: &mut Summary,
    cancel: tokio::sync::watch::Receiver<bool>,
) {
    let started = (SystemTime::now(), Instant::now());
    sink.event(&Event::CheckStarted {
        suite: suite.to_owned(),
        id: plan.id.clone(),
    });
    let mut em = Emitter {
        suite,
        plan,
        sink,
        summary,
    };
    if let Some(why) = skip {
        em.all(|| Outcome::skipped(why.clone()), started);
        return;
    }
    if !(is_loopback(&target.base_url) || plan.allow_remote || opts.allow_remote_load) {
        let msg = format!(
            "refusing to send load to {}: not a loopback address; set `allow_remote: true` in the suite's `load:` or pass --allow-remote-load",
            target.base_url
        );
        em.all(|| Outcome::error(msg.clone()), started);
        return;
    }
    let (notes, _) = tokio::sync::mpsc::unbounded_channel();
    let ctx = CheckContext {
        client: client.clone(),
        target: target.clone(),
        notes,
        redactor,
    };
    let before = match &plan.effects {
        Some(c) => {
            match common::read_counter(&ctx, c, &Scope::new(), "effects before the burst").await {
                Ok((n, _)) => Some(n),
                Err(o) => {
                    em.all(|| o.clone(), started);
                    return;
                }
            }
        }
        None => None,
    };
    let dir = if opts.report_dir.as_os_str().is_empty() {
        PathBuf::from("reports")
    } else {
        opts.report_dir.clone()
    };
    let stem = format!("load-{}-{}", sanitize(suite), sanitize(&plan.id));
    let files = Files {
        hgrm: dir.join(format!("{stem}.hgrm")),
        raw_hgrm: dir.join(format!("{stem}.raw.hgrm")),
        hlog: dir.join(format!("{stem}.hlog")),
        json: dir.join(format!("{stem}.json")),
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        em.all(
            || {
                Outcome::error(format!(
                    "cannot create the report folder {}: {e}",
                    dir.display()
                ))
            },
            started,
        );
        return;
    }
    let base = SystemTime::now();
    let hlog = match stats::HlogFile::create(
        &files.hlog,
        base,
        &format!("tminus load {suite}/{}", plan.id),
    ) {
        Ok(h) => Some(h),
        Err(e) => {
            em.all(
                || Outcome::error(format!("cannot write {}: {e}", files.hlog.display())),
                started,
            );
            return;
        }
    };
    let shared = Arc::new(engine::Shared::new(plan.clone(), target.clone()));
    let out = engine::run(shared.clone(), hlog, base).await;
    let cancelled = *cancel.borrow() || signal::cancelled();

    let mut overall = KindStats::new();
    for k in &out.kinds {
        overall.add(k);
    }
    let expected = match &plan.profile {
        Profile::Stages(_) => {
            plan.profile.user_seconds() * plan.max_rate / plan.max_users.max(1) as f64
        }
        Profile::Iterations {
            users, iterations, ..
        } => (*users as u64 * iterations) as f64,
    };
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
    let mut summary_json = json!({
        "suite": suite,
        "load": plan.id,
        "target": target.base_url,
        "cancelled": cancelled,
        "hit_max_duration": out.hit_max_duration,
        "engine_error": out.engine_error,
        "elapsed_s": out.elapsed.as_secs_f64(),
        "profile": format!("{:?}", plan.profile),
        "max_rate_per_s": plan.max_rate,
        "scheduled_requests": expected.round(),
        "delivered_share": delivered,
        "idempotency": {"distinct_keys_succeeded": distinct, "duplicate_retries": duplicates},
        "overall": stats::kind_json(&overall, out.elapsed),
        "kinds": plan.mix.iter().zip(&out.kinds).map(|(m, k)| (m.name.clone(), stats::kind_json(k, out.elapsed))).collect::<serde_json::Map<_, _>>(),
        "files": {"hgrm": files.hgrm, "raw_hgrm": files.raw_hgrm, "hlog": files.hlog},
    });
    if let (Some(b), Some(Ok((a, _)))) = (before, &after) {
        summary_json["effects"] = json!({"before": b, "after": a, "delta": a - b});
    }
    let mut write_err = None;
    for r in [
        stats::write_hgrm(&files.hgrm, &overall.corrected),
        stats::write_hgrm(&files.raw_hgrm, &overall.raw),
        std::fs::write(
            &files.json,
            serde_json::to_vec_pretty(&summary_json).unwrap_or_default(),
        ),
    ] {
        if let Err(e) = r {
            write_err = Some(format!(
                "cannot write the load figures in {}: {e}",
                dir.display()
            ));
        }
    }

    let headline = headline(&overall, out.elapsed);
    if cancelled {
        let msg = format!(
            "the burst was cancelled after {}: not judged; partial figures in {} ({headline})",
            crate::fmt_duration(out.elapsed),
            files.json.display()
        );
        em.all(|| Outcome::error(msg.clone()), started);
        return;
    }
    if let Some(e) = out.engine_error.clone().or(write_err) {
        em.all(|| Outcome::error(e.clone()), started);
        return;
    }
    for t in &plan.thresholds {
        let o = judge(t, plan, &out.kinds, &overall, out.elapsed);
        em.emit(&t.slug(), "load.threshold", t.text.clone(), o, started);
    }
    let props = vec![
        ("requests".to_owned(), overall.requests.to_string()),
        ("scheduled".to_owned(), format!("{expected:.0}")),
        ("delivered_share".to_owned(), format!("{delivered:.3}")),
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
    em.emit(
        "delivered",
        "load.delivery",
        delivered_description(plan),
        d.with_properties(props),
        started,
    );
    if let (Some(b), Some(after)) = (before, after) {
        let o = match after {
            Err(o) => o,
            Ok((a, _)) => {
                let delta = a - b;
                let props = vec![
                    ("effects_delta".to_owned(), delta.to_string()),
                    ("distinct_keys".to_owned(), distinct.to_string()),
                    ("duplicate_retries".to_owned(), duplicates.to_string()),
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
        em.emit("effects", "load.effects", effects_description(), o, started);
    }
}

struct Files {
    hgrm: PathBuf,
    raw_hgrm: PathBuf,
    hlog: PathBuf,
    json: PathBuf,
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn headline(k: &KindStats, elapsed: std::time::Duration) -> String {
    if k.requests == 0 {
        return "no request completed".into();
    }
    format!(
        "{} requests, {:.0} req/s, p95 {:.1} ms corrected / {:.1} ms raw, {} failed, {} × 429",
        k.requests,
        k.requests as f64 / elapsed.as_secs_f64().max(1e-9),
        k.corrected.value_at_quantile(0.95) as f64 / 1000.0,
        k.raw.value_at_quantile(0.95) as f64 / 1000.0,
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
        ("measured".to_owned(), format!("{v:.3}")),
        ("measured_display".to_owned(), shown.clone()),
        ("limit".to_owned(), format!("{}", t.limit)),
        (
            "unit".to_owned(),
            match t.metric {
                Metric::ErrorRate | Metric::Rate429 => "share",
                Metric::Throughput => "requests_per_s",
                _ => "us",
            }
            .to_owned(),
        ),
        ("requests".to_owned(), k.requests.to_string()),
    ];
    if let Metric::Percentile { q, .. } = t.metric {
        props.push((
            "raw_ms".to_owned(),
            format!("{:.3}", k.raw.value_at_quantile(q / 100.0) as f64 / 1000.0),
        ));
        props.push((
            "corrected_ms".to_owned(),
            format!(
                "{:.3}",
                k.corrected.value_at_quantile(q / 100.0) as f64 / 1000.0
            ),
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
