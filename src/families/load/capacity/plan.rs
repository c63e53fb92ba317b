//! Planning `load.capacity`: rates parsed, thresholds held to those a
//! window can judge with a chance band, the sample minimum each window
//! needs, and the one-window burst plan the open-arrival engine runs.

use std::time::Duration;

use super::search::Settings;
use super::spec::{defaults as d, CapacitySpec, LoadCheckSpec};
use crate::context::budget::Requests;
use crate::context::{PlanCtx, RequestPlan};
use crate::families::load::plan::{
    parse_rate, parse_share, parse_threshold, LoadPlan, Metric, MixPlan, Op, Profile, Threshold,
};
use crate::families::load::spec::defaults as ld;
use crate::model::scalar::StatusSet;

/// The most answers a window may ask for (p99.99 would ask 20,000).
pub const MAX_SAMPLES: u64 = 5_000;
/// The highest ceiling a search may declare.
pub const MAX_CEILING: f64 = 20_000.0;

#[derive(Debug, Clone)]
pub struct CapacityPlan {
    pub id: String,
    pub request: RequestPlan,
    pub thresholds: Vec<Threshold>,
    pub settings: Settings,
    pub users: usize,
    pub max_users: usize,
    /// Answers each window needs.
    pub min_samples: u64,
    pub min_window_secs: u64,
    pub at_least: Option<f64>,
    pub max_duration: Duration,
}

/// A planned `load.*` check.
#[derive(Debug, Clone)]
pub enum LoadCheckPlan {
    Capacity(CapacityPlan),
}

impl LoadCheckPlan {
    /// The search sends on the load engine's own connections, as a burst
    /// does, not through the polite client: the runner's quota does not
    /// see them (a limited target shows in `rate_429`, give one).
    pub fn requests(&self) -> Requests {
        Requests::default()
    }

    /// The most it may send and hold in flight (a remote target needs
    /// `--allow-remote-load`).
    pub fn volume(&self) -> crate::context::Volume {
        let LoadCheckPlan::Capacity(p) = self;
        crate::context::Volume {
            requests: (p.settings.ceiling * p.max_duration.as_secs_f64()).ceil() as u64,
            concurrency: p.max_users as u64,
        }
    }
}

/// The answers a window needs for `t`: two expected breaches at the
/// threshold's own share (p99: 200; `error_rate < 1%`: 200), so a window
/// that saw none has room to.
pub fn samples_for(t: &Threshold) -> u64 {
    let share = match t.metric {
        Metric::Percentile { q, .. } => 1.0 - q / 100.0,
        Metric::ErrorRate | Metric::Rate429 => t.limit,
        _ => return d::MIN_SAMPLES_FLOOR,
    };
    if share <= 0.0 {
        return MAX_SAMPLES;
    }
    ((2.0 / share).ceil() as u64).clamp(d::MIN_SAMPLES_FLOOR, MAX_SAMPLES)
}

impl CapacityPlan {
    /// Whole seconds of one window at `rate`: long enough for the sample
    /// minimum, never under `min_window`.
    pub fn window_secs(&self, rate: f64) -> u64 {
        ((self.min_samples as f64 / rate).ceil() as u64).max(self.min_window_secs)
    }

    /// The burst one window runs: `rate` held for the window, open arrival.
    pub fn window_plan(&self, rate: f64) -> LoadPlan {
        let secs = self.window_secs(rate);
        LoadPlan {
            id: self.id.clone(),
            description: None,
            tags: Vec::new(),
            // Straight to the rate (a 0 s first stage), held, then stop.
            profile: Profile::Rates(vec![(rate, 0), (rate, secs), (0.0, 0)]),
            peak_users: self.users,
            max_users: self.max_users,
            max_rate: rate,
            max_duration: Duration::from_secs(secs) + Duration::from_secs(30),
            allow_remote: false,
            mix: vec![MixPlan {
                name: "request".into(),
                weight: 1,
                idempotency: false,
                request: self.request.clone(),
                success: StatusSet(ld::SUCCESS.to_vec()),
            }],
            duplicate_share: 0.0,
            idempotency_header: ld::IDEMPOTENCY_HEADER.into(),
            effects: None,
            thresholds: self.thresholds.clone(),
            min_delivered: ld::MIN_DELIVERED,
            shard: None,
            observe: None,
            webhooks: None,
        }
    }
}

pub fn plan(ctx: &mut PlanCtx<'_>, spec: &LoadCheckSpec) -> LoadCheckPlan {
    match spec {
        LoadCheckSpec::Capacity(s) => LoadCheckPlan::Capacity(capacity(ctx, s)),
    }
}

fn rate(ctx: &mut PlanCtx<'_>, at: serde_saphyr::Location, what: &str, v: &str) -> f64 {
    match parse_rate(v) {
        Ok(r) if r <= MAX_CEILING => r,
        Ok(r) => {
            ctx.error(
                at,
                format!("`{what}` {r}/s is above the {MAX_CEILING}/s a search may try"),
            );
            MAX_CEILING
        }
        Err(e) => {
            ctx.error(at, format!("`{what}`: {e}"));
            1.0
        }
    }
}

fn capacity(ctx: &mut PlanCtx<'_>, s: &CapacitySpec) -> CapacityPlan {
    let at = s.id.referenced;
    let request = ctx.request(&s.request, at);
    let ceiling = rate(ctx, at, "max_rate", &s.max_rate);
    let start = match &s.start {
        Some(v) => rate(ctx, at, "start", v),
        None => d::START.min(ceiling),
    };
    if start > ceiling {
        ctx.error(
            at,
            format!("`start` {start}/s is above `max_rate` {ceiling}/s"),
        );
    }
    let resolution = match s.resolution.as_deref().map(parse_share) {
        None => d::RESOLUTION,
        Some(Ok(r)) if r > 0.0 => r,
        Some(Ok(_)) => {
            ctx.error(at, "`resolution` must be more than 0%");
            d::RESOLUTION
        }
        Some(Err(e)) => {
            ctx.error(at, format!("`resolution`: {e}"));
            d::RESOLUTION
        }
    };
    let mut thresholds = Vec::new();
    for text in &s.thresholds {
        match parse_threshold(text) {
            Err(e) => ctx.error(at, e),
            Ok(t) if t.scope.is_some() => ctx.error(
                at,
                format!("threshold `{text}`: a capacity search sends one request, so a threshold names no request kind"),
            ),
            Ok(t) if !matches!(t.metric, Metric::Percentile { .. } | Metric::ErrorRate | Metric::Rate429) => ctx.error(
                at,
                format!("threshold `{text}`: a step is judged with the confidence bounds of a count, so give percentiles, `error_rate` or `rate_429` (throughput is what the search varies; mean, max and dropped have no bound)"),
            ),
            Ok(t) if !matches!(t.op, Op::Lt | Op::Le) => ctx.error(
                at,
                format!("threshold `{text}`: a capacity threshold bounds from above (`<` or `<=`)"),
            ),
            Ok(t) => thresholds.push(t),
        }
    }
    if s.thresholds.is_empty() {
        ctx.error(
            at,
            "`thresholds` is empty: a capacity search needs what a rate must hold (`p99 < 200ms`, `error_rate < 1%`)",
        );
    }
    let users = s.users.unwrap_or(d::USERS).max(1) as usize;
    let max_users = match s.max_users {
        Some(m) if (m as usize) < users => {
            ctx.error(at, format!("`max_users` ({m}) is below `users` ({users})"));
            users
        }
        Some(m) if m as usize > ld::MAX_POOL => {
            ctx.error(at, format!("`max_users` is at most {}", ld::MAX_POOL));
            ld::MAX_POOL
        }
        Some(m) => m as usize,
        None => (users * ld::POOL_FACTOR).min(ld::MAX_POOL).max(users),
    };
    let min_samples = match s.min_samples {
        Some(n) if n == 0 || n > MAX_SAMPLES => {
            ctx.error(at, format!("`min_samples` must be 1 to {MAX_SAMPLES}"));
            d::MIN_SAMPLES_FLOOR
        }
        Some(n) => n,
        None => thresholds
            .iter()
            .map(samples_for)
            .max()
            .unwrap_or(d::MIN_SAMPLES_FLOOR),
    };
    let min_window = s.min_window.as_ref().map_or(d::MIN_WINDOW, |w| w.0);
    if min_window.subsec_nanos() != 0 || min_window.is_zero() {
        ctx.error(
            at,
            "`min_window` must be whole seconds, at least 1s (goose test plans count seconds)",
        );
    }
    let at_least = s.at_least.as_ref().map(|v| rate(ctx, at, "at_least", v));
    let max_duration = s.max_duration.as_ref().map_or(d::MAX_DURATION, |m| m.0);
    if max_duration.is_zero() {
        ctx.error(at, "`max_duration` must be longer than 0");
    }
    CapacityPlan {
        id: s.id.value.clone(),
        request,
        thresholds,
        settings: Settings {
            start,
            ceiling,
            resolution,
        },
        users,
        max_users,
        min_samples,
        min_window_secs: min_window.as_secs().max(1),
        at_least,
        max_duration,
    }
}
