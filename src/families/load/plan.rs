//! Planning the `load:` section: the profile resolved to a goose test plan
//! (or iterations), the mix compiled with the shared request grammar, rates
//! and shares parsed, and every threshold parsed, all with positioned errors.

use std::time::Duration;

use serde_saphyr::Location;

use crate::context::{CounterPlan, PlanCtx, RequestPlan};
use crate::families::load::spec::{defaults, LoadSpec};
use crate::model::scalar::StatusSet;

/// Hard cap on any burst unless the suite sets `max_duration`.
pub const DEFAULT_MAX_DURATION: Duration = defaults::MAX_DURATION;
/// Share of the scheduled requests that must be sent for the load to count as delivered.
pub const DEFAULT_MIN_DELIVERED: f64 = defaults::MIN_DELIVERED;

#[derive(Debug, Clone)]
pub struct LoadPlan {
    pub id: String,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub profile: Profile,
    /// The most users the profile runs at once (its `users`, or the largest
    /// stage): the pool tminus starts with, and the unit of the stages' rate.
    pub peak_users: usize,
    /// The most users the pool opens (`max_users`; `iterations`: `users`,
    /// a closed pool). At least `peak_users`.
    pub max_users: usize,
    /// Requests per second for all users together at full load.
    pub max_rate: f64,
    pub max_duration: Duration,
    pub allow_remote: bool,
    pub mix: Vec<MixPlan>,
    pub duplicate_share: f64,
    pub idempotency_header: String,
    pub effects: Option<CounterPlan>,
    pub thresholds: Vec<Threshold>,
    pub min_delivered: f64,
    /// `run --shard I/N`: this process runs a slice of the burst (see
    /// `shard.rs`); None: the whole burst.
    pub shard: Option<super::shard::ShardRun>,
    /// The target's own signals read around the burst (`observe/`).
    pub observe: Option<super::observe::ObservePlan>,
    /// The burst's own events at tminus's sink (LOAD-006, `webhooks.rs`).
    pub webhooks: Option<super::webhooks::WebhooksPlan>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Profile {
    /// Goose test plan steps: (users, whole seconds to reach them); the
    /// arrival rate is `max_rate × users(t) / peak_users`.
    Stages(Vec<(usize, u64)>),
    /// Arrival-rate steps: (slots a second, whole seconds to reach it),
    /// linear from the previous step's rate (0 at the start).
    Rates(Vec<(f64, u64)>),
    /// `users` started at `hatch_rate`/s, each sending `iterations` requests.
    Iterations {
        users: usize,
        hatch_rate: f64,
        iterations: u64,
    },
}

impl Profile {
    /// `"8,2s;8,5s;0,0s"`, the goose test plan string.
    pub fn test_plan(&self) -> Option<String> {
        match self {
            Profile::Stages(s) => Some(
                s.iter()
                    .map(|(u, t)| format!("{u},{t}s"))
                    .collect::<Vec<_>>()
                    .join(";"),
            ),
            Profile::Rates(_) | Profile::Iterations { .. } => None,
        }
    }
    /// Planned wall time (stages only).
    pub fn planned_duration(&self) -> Option<Duration> {
        match self {
            Profile::Stages(s) => Some(Duration::from_secs(s.iter().map(|(_, t)| t).sum())),
            Profile::Rates(s) => Some(Duration::from_secs(s.iter().map(|(_, t)| t).sum())),
            Profile::Iterations { .. } => None,
        }
    }
    /// User-seconds under the profile (users ramp linearly within a stage);
    /// 0 for rate stages and iterations.
    pub fn user_seconds(&self) -> f64 {
        match self {
            Profile::Stages(s) => area(s.iter().map(|&(u, t)| (u as f64, t))),
            Profile::Rates(_) | Profile::Iterations { .. } => 0.0,
        }
    }
    /// The arrival rate's steps, (slots a second at the end, seconds), when
    /// each user stands for `per_user` slots a second; None: iterations.
    pub fn rate_steps(&self, per_user: f64) -> Option<Vec<(f64, u64)>> {
        match self {
            Profile::Stages(s) => Some(s.iter().map(|&(u, t)| (u as f64 * per_user, t)).collect()),
            Profile::Rates(s) => Some(s.clone()),
            Profile::Iterations { .. } => None,
        }
    }
    /// An open-arrival profile (a slot schedule, not a count per user).
    pub fn is_scheduled(&self) -> bool {
        !matches!(self, Profile::Iterations { .. })
    }
}

/// The area under a piecewise-linear curve from 0: (value at the end, seconds).
pub fn area(steps: impl Iterator<Item = (f64, u64)>) -> f64 {
    let (mut prev, mut sum) = (0.0, 0.0);
    for (v, t) in steps {
        sum += (prev + v) / 2.0 * t as f64;
        prev = v;
    }
    sum
}

impl Profile {
    /// Slots the profile schedules, unrounded (`per_user`: see [`Self::rate_steps`]).
    pub fn slots(&self, per_user: f64) -> f64 {
        self.rate_steps(per_user)
            .map(|s| area(s.into_iter()))
            .unwrap_or(0.0)
    }
}

impl LoadPlan {
    /// Whole requests the profile schedules: its user-seconds at the per-user
    /// pace (`max_rate / peak_users`), or users × iterations. The engine sends
    /// no more than this.
    pub fn scheduled_requests(&self) -> f64 {
        if let Some(s) = &self.shard {
            // The shard's exact part of the unsharded count (see shard.rs).
            return s.scheduled as f64;
        }
        match &self.profile {
            Profile::Stages(_) | Profile::Rates(_) => {
                let n = self
                    .profile
                    .slots(self.max_rate / self.peak_users.max(1) as f64);
                // A slot's fraction is no request; the epsilon absorbs float error.
                (n + 1e-6).floor()
            }
            Profile::Iterations {
                users, iterations, ..
            } => (*users as u64 * iterations) as f64,
        }
    }
}

#[derive(Debug, Clone)]
pub struct MixPlan {
    pub name: String,
    pub weight: u32,
    pub idempotency: bool,
    pub request: RequestPlan,
    pub success: StatusSet,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A latency percentile (0..100) in µs; `raw` judges uncorrected figures.
    Percentile {
        q: f64,
        raw: bool,
    },
    Mean {
        raw: bool,
    },
    Max {
        raw: bool,
    },
    /// Failed requests (not 429) over all requests.
    ErrorRate,
    /// 429 responses over all requests.
    Rate429,
    /// Requests per second.
    Throughput,
    /// Scheduled slots never sent, over all scheduled (k6's
    /// `dropped_iterations`, as a share).
    Dropped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    pub fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Op::Lt => measured < limit,
            Op::Le => measured <= limit,
            Op::Gt => measured > limit,
            Op::Ge => measured >= limit,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As written, for messages.
    pub text: String,
    /// A request kind of the mix; `None` is all requests.
    pub scope: Option<String>,
    pub metric: Metric,
    pub op: Op,
    /// µs for latencies, a fraction for rates, req/s for throughput.
    pub limit: f64,
}

impl Threshold {
    /// A stable id fragment: `p95`, `create.p99`, `error_rate`.
    pub fn slug(&self) -> String {
        let m = match self.metric {
            Metric::Percentile { q, raw } => {
                format!("{}p{}", if raw { "raw_" } else { "" }, fmt_q(q))
            }
            Metric::Mean { raw } => format!("{}mean", if raw { "raw_" } else { "" }),
            Metric::Max { raw } => format!("{}max", if raw { "raw_" } else { "" }),
            Metric::ErrorRate => "error_rate".into(),
            Metric::Rate429 => "rate_429".into(),
            Metric::Throughput => "throughput".into(),
            Metric::Dropped => "dropped".into(),
        };
        match &self.scope {
            Some(s) => format!("{s}.{m}"),
            None => m,
        }
    }
}

fn fmt_q(q: f64) -> String {
    let s = format!("{q}");
    s.replace('.', "_")
}

/// Parses `[KIND:] METRIC OP VALUE`.
pub fn parse_threshold(text: &str) -> Result<Threshold, String> {
    let t = text.trim();
    let (scope, rest) = match t.split_once(':') {
        Some((k, r)) if !k.contains(['<', '>']) => (Some(k.trim().to_owned()), r.trim()),
        _ => (None, t),
    };
    let ops = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];
    let (pos, op_s, op) = ops
        .iter()
        .filter_map(|(s, o)| rest.find(s).map(|p| (p, *s, *o)))
        .min_by_key(|(p, s, _)| (*p, std::cmp::Reverse(s.len())))
        .ok_or_else(|| {
            format!("threshold `{t}` needs a comparison: e.g. `p95 < 400ms`, `error_rate < 1%`, `throughput > 100/s`")
        })?;
    let name = rest[..pos].trim();
    let value = rest[pos + op_s.len()..].trim();
    let (raw, base) = match name.strip_prefix("raw_") {
        Some(b) => (true, b),
        None => (false, name),
    };
    let metric = match base {
        "error_rate" | "rate_429" | "throughput" | "dropped" if raw => {
            return Err(format!("`raw_` applies to latencies only, not `{base}`"))
        }
        "error_rate" => Metric::ErrorRate,
        "rate_429" => Metric::Rate429,
        "throughput" => Metric::Throughput,
        "dropped" => Metric::Dropped,
        "mean" | "avg" => Metric::Mean { raw },
        "max" => Metric::Max { raw },
        "median" => Metric::Percentile { q: 50.0, raw },
        p if p.starts_with('p') => {
            let q: f64 = p[1..]
                .replace('_', ".")
                .parse()
                .map_err(|_| format!("unknown metric `{name}`: use p50, p95, p99, p99.9, mean, max, error_rate, rate_429, throughput or dropped"))?;
            if !(0.0..=100.0).contains(&q) {
                return Err(format!("percentile `{name}` must be within p0..p100"));
            }
            Metric::Percentile { q, raw }
        }
        _ => {
            return Err(format!(
                "unknown metric `{name}`: use p50, p95, p99, p99.9, mean, max, error_rate, rate_429, throughput or dropped"
            ))
        }
    };
    let limit = match metric {
        Metric::Percentile { .. } | Metric::Mean { .. } | Metric::Max { .. } => {
            let d = crate::model::scalar::parse_duration(value)?;
            d.as_secs_f64() * 1e6
        }
        Metric::ErrorRate | Metric::Rate429 | Metric::Dropped => parse_share(value)?,
        Metric::Throughput => parse_rate(value)?,
    };
    Ok(Threshold {
        text: t.to_owned(),
        scope,
        metric,
        op,
        limit,
    })
}

/// `5%` or `0.05` -> 0.05.
pub fn parse_share(v: &str) -> Result<f64, String> {
    let v = v.trim();
    let x = match v.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => v.parse::<f64>(),
    }
    .map_err(|_| format!("`{v}` is not a share: write `5%` or `0.05`"))?;
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(format!("share `{v}` must be between 0% and 100%"))
    }
}

/// `400/s`, `400 rps`, `400` -> 400.0.
/// A rate stage's rate: as [`parse_rate`], and `0/s` (a ramp down to nothing).
fn parse_stage_rate(v: &str) -> Result<f64, String> {
    match v.trim().trim_end_matches("/s").trim().parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => parse_rate(v),
    }
}

pub fn parse_rate(v: &str) -> Result<f64, String> {
    let v = v.trim();
    let num = v
        .strip_suffix("/s")
        .or_else(|| v.strip_suffix("rps"))
        .unwrap_or(v)
        .trim();
    match num.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("`{v}` is not a rate: write `400/s`")),
    }
}

fn stage_secs(ctx: &mut PlanCtx<'_>, st: &super::spec::StageSpec) -> u64 {
    whole_secs(ctx, st.over.value.0, st.over.referenced, "a stage's `over`")
}

fn whole_secs(ctx: &mut PlanCtx<'_>, d: Duration, loc: Location, what: &str) -> u64 {
    if d.subsec_nanos() != 0 {
        ctx.error(
            loc,
            format!("{what} must be whole seconds (goose test plans count seconds)"),
        );
    }
    d.as_secs()
}

impl PlanCtx<'_> {
    pub fn load_plan(&mut self, s: &LoadSpec, suite_at: Location) -> LoadPlan {
        let id =
            s.id.as_ref()
                .map(|i| i.value.clone())
                .unwrap_or_else(|| defaults::ID.into());
        let at = s.id.as_ref().map(|i| i.referenced).unwrap_or(suite_at);
        let rate_stages = s.stages.iter().any(|st| st.rate.is_some());
        let max_rate = match (&s.max_rate, rate_stages) {
            (Some(m), false) => match parse_rate(&m.value.0) {
                Ok(r) => r,
                Err(e) => {
                    self.error(m.referenced, e);
                    1.0
                }
            },
            (Some(m), true) => {
                self.error(
                    m.referenced,
                    "give the rate in `stages` or as `max_rate`, not both (rate stages set it: their peak)",
                );
                1.0
            }
            // Set from the stages below.
            (None, true) => 1.0,
            (None, false) => {
                self.error(
                    at,
                    "a load needs `max_rate` (the arrival rate at full load, `120/s`) or stages of `rate`",
                );
                1.0
            }
        };
        let max_duration = s
            .max_duration
            .as_ref()
            .map(|d| d.value.0)
            .unwrap_or(DEFAULT_MAX_DURATION);
        let users = s.users.as_ref().map(|u| u.value as usize);
        let mut max_rate = max_rate;
        let mut rate_pool = None;
        let profile = if rate_stages {
            for (name, loc) in [
                ("hold", s.hold.as_ref().map(|h| h.referenced)),
                ("ramp", s.ramp.as_ref().map(|h| h.referenced)),
                ("ramp_down", s.ramp_down.as_ref().map(|h| h.referenced)),
                ("hatch_rate", s.hatch_rate.as_ref().map(|h| h.referenced)),
                ("iterations", s.iterations.as_ref().map(|h| h.referenced)),
            ] {
                if let Some(loc) = loc {
                    self.error(
                        loc,
                        format!(
                            "`{name}` does not go with rate stages: the stages are the profile"
                        ),
                    );
                }
            }
            let mut steps = Vec::new();
            for st in &s.stages {
                let t = stage_secs(self, st);
                let r = match (&st.rate, &st.users) {
                    (Some(r), None) => match parse_stage_rate(&r.value.0) {
                        Ok(r) => r,
                        Err(e) => {
                            self.error(r.referenced, e);
                            0.0
                        }
                    },
                    (_, Some(u)) => {
                        self.error(
                            u.referenced,
                            "a stage gives `rate` or `users`, and every stage the same one",
                        );
                        0.0
                    }
                    (None, None) => {
                        self.error(st.over.referenced, "this stage needs a `rate` (`60/s`)");
                        0.0
                    }
                };
                steps.push((r, t));
            }
            if steps.last().is_some_and(|(r, _)| *r > 0.0) {
                steps.push((0.0, 0));
            }
            let peak = steps.iter().map(|(r, _)| *r).fold(0.0, f64::max);
            if peak <= 0.0 {
                self.error(at, "the stages never reach a rate above 0/s");
            }
            max_rate = peak.max(1e-6);
            let start =
                users.unwrap_or_else(|| ((peak / defaults::RATE_PER_USER).ceil() as usize).max(1));
            if start == 0 {
                self.error(
                    s.users.as_ref().map(|u| u.referenced).unwrap_or(at),
                    "`users` (the pool to start) must be at least 1",
                );
            }
            rate_pool = Some(start.max(1));
            Profile::Rates(steps)
        } else if !s.stages.is_empty() {
            if let Some(u) = &s.users {
                self.error(u.referenced, "give `stages` or `users`/`hold`, not both");
            }
            let mut steps = Vec::new();
            for st in &s.stages {
                let t = stage_secs(self, st);
                let Some(u) = &st.users else {
                    self.error(
                        st.over.referenced,
                        "this stage needs `users` (or every stage a `rate`)",
                    );
                    continue;
                };
                steps.push((u.value as usize, t));
            }
            // goose keeps running after a last step that still has users;
            // stop them at once so the profile ends.
            if steps.last().is_some_and(|(u, _)| *u > 0) {
                steps.push((0, 0));
            }
            Profile::Stages(steps)
        } else {
            let Some(u) = users.filter(|u| *u > 0) else {
                self.error(
                    s.users.as_ref().map(|u| u.referenced).unwrap_or(at),
                    "a load needs `users` (at least 1) or `stages`",
                );
                return self.empty_load(id, max_rate);
            };
            let hatch = s.hatch_rate.as_ref().map(|h| h.value);
            if let Some(h) = &s.hatch_rate {
                if !(h.value > 0.0 && h.value.is_finite()) {
                    self.error(h.referenced, "`hatch_rate` must be above 0 users/s");
                }
            }
            if let Some(n) = &s.iterations {
                if s.hold.is_some() || s.ramp_down.is_some() {
                    self.error(
                        n.referenced,
                        "`iterations` ends the load by count: drop `hold` and `ramp_down`",
                    );
                }
                let hatch_rate = match (&hatch, &s.ramp) {
                    (Some(h), _) => *h,
                    (None, Some(r)) if !r.value.0.is_zero() => u as f64 / r.value.0.as_secs_f64(),
                    _ => u as f64,
                };
                Profile::Iterations {
                    users: u,
                    hatch_rate,
                    iterations: n.value.max(1),
                }
            } else {
                let ramp = match (&hatch, &s.ramp) {
                    (Some(_), Some(r)) => {
                        self.error(r.referenced, "give `hatch_rate` or `ramp`, not both");
                        0
                    }
                    (Some(h), None) if *h > 0.0 => (u as f64 / h).ceil() as u64,
                    (None, Some(r)) => whole_secs(self, r.value.0, r.referenced, "`ramp`"),
                    _ => defaults::RAMP.as_secs(),
                };
                let Some(hold) = &s.hold else {
                    self.error(
                        at,
                        "a load needs `hold` (time at full load) or `iterations`",
                    );
                    return self.empty_load(id, max_rate);
                };
                let hold = whole_secs(self, hold.value.0, hold.referenced, "`hold`");
                let down = s
                    .ramp_down
                    .as_ref()
                    .map(|d| whole_secs(self, d.value.0, d.referenced, "`ramp_down`"))
                    .unwrap_or(defaults::RAMP_DOWN.as_secs());
                Profile::Stages(vec![(u, ramp), (u, hold), (0, down)])
            }
        };
        let peak_users = match &profile {
            Profile::Stages(s) => s.iter().map(|(u, _)| *u).max().unwrap_or(0),
            Profile::Rates(_) => rate_pool.unwrap_or(1),
            Profile::Iterations { users, .. } => *users,
        };
        if peak_users == 0 {
            self.error(at, "the load never starts a user");
        }
        let max_users = match (&s.max_users, &profile) {
            (Some(m), Profile::Iterations { .. }) => {
                self.error(
                    m.referenced,
                    "`max_users` needs a rate schedule (`hold` or `stages`): `iterations` is a closed count per user",
                );
                peak_users
            }
            (None, Profile::Iterations { .. }) => peak_users,
            (Some(m), _) => {
                let m_ = m.value as usize;
                if m_ < peak_users {
                    self.error(
                        m.referenced,
                        format!(
                            "`max_users` ({m_}) is below the {peak_users} users the profile starts"
                        ),
                    );
                } else if m_ > defaults::MAX_POOL {
                    self.error(
                        m.referenced,
                        format!(
                            "`max_users` is at most {}: each is a goose user started up front",
                            defaults::MAX_POOL
                        ),
                    );
                }
                m_.clamp(peak_users, defaults::MAX_POOL.max(peak_users))
            }
            (None, _) => (peak_users * defaults::POOL_FACTOR)
                .min(defaults::MAX_POOL)
                .max(peak_users),
        };
        if let Some(d) = profile.planned_duration() {
            if d > max_duration {
                self.error(
                    at,
                    format!(
                        "the profile lasts {} but `max_duration` is {}",
                        crate::fmt_duration(d),
                        crate::fmt_duration(max_duration)
                    ),
                );
            }
        }
        if s.requests.is_empty() {
            self.error(at, "a load needs at least one entry under `requests`");
        }
        let mut mix = Vec::new();
        for m in &s.requests {
            let idempotency = match &m.idempotency_key {
                None => false,
                Some(k) if k.value == "auto" => true,
                Some(k) => {
                    self.error(
                        k.referenced,
                        format!("`idempotency_key` takes `auto`, not `{}`", k.value),
                    );
                    false
                }
            };
            if mix.iter().any(|x: &MixPlan| x.name == m.name.value) {
                self.error(
                    m.name.referenced,
                    format!("request kind `{}` is named twice", m.name.value),
                );
            }
            let weight = m
                .weight
                .as_ref()
                .map(|w| w.value)
                .unwrap_or(defaults::WEIGHT);
            if weight == 0 {
                if let Some(w) = &m.weight {
                    self.error(w.referenced, "a weight must be at least 1");
                }
            }
            mix.push(MixPlan {
                name: m.name.value.clone(),
                weight: weight.max(1),
                idempotency,
                request: self.request(&m.request, m.name.referenced),
                success: m
                    .success
                    .as_ref()
                    .map(|s| s.value.clone())
                    .unwrap_or_else(|| StatusSet(defaults::SUCCESS.to_vec())),
            });
        }
        let duplicate_share = match &s.duplicate_share {
            None => defaults::DUPLICATE_SHARE,
            Some(d) => match parse_share(&d.value.0) {
                Ok(x) if x < 1.0 => {
                    if x > 0.0 && !mix.iter().any(|m| m.idempotency) {
                        self.error(
                            d.referenced,
                            "`duplicate_share` needs a request with `idempotency_key: auto`",
                        );
                    }
                    x
                }
                Ok(_) => {
                    self.error(d.referenced, "`duplicate_share` must be below 100%");
                    0.0
                }
                Err(e) => {
                    self.error(d.referenced, e);
                    0.0
                }
            },
        };
        let min_delivered = match &s.min_delivered {
            None => DEFAULT_MIN_DELIVERED,
            Some(d) => parse_share(&d.value.0).unwrap_or_else(|e| {
                self.error(d.referenced, e);
                DEFAULT_MIN_DELIVERED
            }),
        };
        let mut thresholds = Vec::new();
        for t in &s.thresholds {
            match parse_threshold(&t.value) {
                Ok(th) => {
                    if th.metric == Metric::Dropped && th.scope.is_some() {
                        self.error(
                            t.referenced,
                            "`dropped` counts slots of the whole schedule: a slot is dropped before it is anybody's request kind",
                        );
                    }
                    if let Some(k) = &th.scope {
                        if !mix.iter().any(|m| &m.name == k) {
                            let names: Vec<&str> = mix.iter().map(|m| m.name.as_str()).collect();
                            self.error(
                                t.referenced,
                                format!(
                                    "threshold names request kind `{k}`, but the mix has: {}",
                                    names.join(", ")
                                ),
                            );
                        }
                    }
                    if thresholds.iter().any(|x: &Threshold| x.slug() == th.slug()) {
                        self.error(
                            t.referenced,
                            format!("threshold `{}` is given twice", th.slug()),
                        );
                    }
                    thresholds.push(th)
                }
                Err(e) => self.error(t.referenced, e),
            }
        }
        let webhooks = s.webhooks.as_ref().and_then(|w| {
            let names: Vec<&str> = mix.iter().map(|m: &MixPlan| m.name.as_str()).collect();
            self.webhooks_plan(&w.value, w.referenced, &names)
        });
        LoadPlan {
            id,
            description: s.description.clone(),
            tags: s.tags.clone(),
            profile,
            peak_users,
            max_users,
            max_rate,
            max_duration,
            allow_remote: s.allow_remote,
            mix,
            duplicate_share,
            idempotency_header: s
                .idempotency_header
                .clone()
                .unwrap_or_else(|| defaults::IDEMPOTENCY_HEADER.into()),
            effects: s.effects.as_ref().map(|c| self.counter(c)),
            thresholds,
            min_delivered,
            shard: None,
            observe: s
                .observe
                .as_ref()
                .and_then(|o| self.observe_plan(&o.value, o.referenced)),
            webhooks,
        }
    }

    fn empty_load(&mut self, id: String, max_rate: f64) -> LoadPlan {
        LoadPlan {
            id,
            description: None,
            tags: Vec::new(),
            profile: Profile::Stages(Vec::new()),
            peak_users: 0,
            max_users: 0,
            max_rate,
            max_duration: DEFAULT_MAX_DURATION,
            allow_remote: false,
            mix: Vec::new(),
            duplicate_share: 0.0,
            idempotency_header: defaults::IDEMPOTENCY_HEADER.into(),
            effects: None,
            thresholds: Vec::new(),
            min_delivered: DEFAULT_MIN_DELIVERED,
            shard: None,
            observe: None,
            webhooks: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse() {
        let t = parse_threshold("p95 < 400ms").unwrap();
        assert_eq!(
            t.metric,
            Metric::Percentile {
                q: 95.0,
                raw: false
            }
        );
        assert_eq!(t.limit, 400_000.0);
        assert_eq!(t.op, Op::Lt);
        let t = parse_threshold("create: raw_p99.9 <= 1s").unwrap();
        assert_eq!(t.scope.as_deref(), Some("create"));
        assert_eq!(t.metric, Metric::Percentile { q: 99.9, raw: true });
        assert_eq!(t.op, Op::Le);
        assert_eq!(t.slug(), "create.raw_p99_9");
        let t = parse_threshold("error_rate < 1%").unwrap();
        assert!((t.limit - 0.01).abs() < 1e-12);
        let t = parse_threshold("throughput > 100/s").unwrap();
        assert_eq!((t.op, t.limit), (Op::Gt, 100.0));
        assert!(parse_threshold("p95 400ms").is_err());
        assert!(parse_threshold("latency < 1s").is_err());
        assert!(parse_threshold("raw_error_rate < 1%").is_err());
        assert!(parse_threshold("rate_429 < 150%").is_err());
    }

    #[test]
    fn user_seconds_of_ramp_hold_down() {
        let p = Profile::Stages(vec![(10, 2), (10, 5), (0, 2)]);
        assert_eq!(p.user_seconds(), 10.0 + 50.0 + 10.0);
        assert_eq!(p.test_plan().unwrap(), "10,2s;10,5s;0,2s");
    }
}
