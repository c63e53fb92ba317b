//! `tminus run --shard I/N` (issue 15): one process runs its slice of a
//! suite's burst so that N processes (a Kubernetes Indexed Job, a CI matrix)
//! together send exactly the unsharded burst, starting at one `--start-at`
//! instant. A shard never judges: it writes its exact histograms (`.hlog`,
//! lossless) and a manifest for `tminus merge` (`merge.rs`), and reports its
//! results as deferred.
//!
//! The split is deterministic, like k6's execution segments: a count `v` over
//! N shards gives shard i (1-based) `v / N` plus one for the first `v % N`
//! shards (10 users over 3: 4, 3, 3), applied to every stage's users; rates
//! follow the users (the per-user pace is the unsharded one), and the
//! scheduled request count is cut from the unsharded total so the shards'
//! counts add up to it exactly. The duplicate-key share is a per-request
//! probability, kept as is in every shard.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::exec::{uniform, Burst, Effects, LoadContext, LoadResult};
use super::plan::{LoadPlan, Profile};
use super::stats::{self, KindStats};
use crate::outcome::Outcome;

/// Most shards one burst may be cut into.
pub const MAX_SHARD_COUNT: usize = 10_000;
/// How far ahead `--start-at` may be.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);
/// How late a shard may reach `--start-at` and still count as simultaneous.
pub const START_TOLERANCE: Duration = Duration::from_secs(1);
/// The manifest's format name and version.
pub const MANIFEST_FORMAT: &str = "tminus-load-shard";
pub const MANIFEST_VERSION: u32 = 1;

/// `--shard I/N`: shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ShardSpec {
    pub index: usize,
    pub count: usize,
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for ShardSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "`{s}` is not I/N: give the shard's 1-based index and the shard count, e.g. 2/3"
            )
        };
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SHARD_COUNT {
            return Err(format!(
                "`{s}`: the shard count must be 1..={MAX_SHARD_COUNT}"
            ));
        }
        if index == 0 {
            return Err(format!(
                "`{s}`: shards count from 1 (1/{count} .. {count}/{count}); for Kubernetes' 0-based JOB_COMPLETION_INDEX pass --shard auto/{count} (or $((JOB_COMPLETION_INDEX + 1))/{count} in a shell)"
            ));
        }
        if index > count {
            return Err(format!("`{s}`: shard {index} of {count} does not exist"));
        }
        Ok(ShardSpec { index, count })
    }
}

/// The variable Kubernetes sets in every pod of an Indexed Job: the pod's
/// 0-based completion index.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The Job's `completions`, which Kubernetes does not pass to the pod: the
/// manifest sets it beside `completions` (or gives `--shard auto/N`).
pub const COUNT_ENV: &str = "JOB_COMPLETIONS";

/// `--shard` as given: `I/N`, or `auto` / `auto/N`, which a pod of an
/// Indexed Job resolves from its environment (`resolve`), so the Job needs
/// no shell to turn the 0-based index into a 1-based shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    Given(ShardSpec),
    Auto { count: Option<usize> },
}

impl std::str::FromStr for ShardArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t == "auto" {
            return Ok(ShardArg::Auto { count: None });
        }
        if let Some(n) = t.strip_prefix("auto/") {
            let count = match n.trim().parse::<usize>() {
                Ok(c) if (1..=MAX_SHARD_COUNT).contains(&c) => c,
                _ => {
                    return Err(format!(
                        "`{s}`: auto/N takes the shard count N, 1..={MAX_SHARD_COUNT}"
                    ))
                }
            };
            return Ok(ShardArg::Auto { count: Some(count) });
        }
        t.parse::<ShardSpec>().map(ShardArg::Given)
    }
}

impl ShardArg {
    /// The shard this process runs. `auto` reads `JOB_COMPLETION_INDEX`
    /// (0-based) through `env`, and the count from `auto/N` or
    /// `JOB_COMPLETIONS`; when both are given they must agree, since a
    /// count that differs from the Job's leaves part of the burst unsent
    /// or sent twice.
    pub fn resolve(self, env: impl Fn(&str) -> Option<String>) -> Result<ShardSpec, String> {
        let given = match self {
            ShardArg::Given(spec) => return Ok(spec),
            ShardArg::Auto { count } => count,
        };
        let index_text = env(INDEX_ENV).ok_or_else(|| {
            format!("--shard auto reads {INDEX_ENV}, which Kubernetes sets in the pods of an Indexed Job; it is not set here: give --shard I/N")
        })?;
        let index: usize = index_text.trim().parse().map_err(|_| {
            format!("--shard auto: {INDEX_ENV}=`{index_text}` is not a 0-based index")
        })?;
        let from_env = match env(COUNT_ENV) {
            None => None,
            Some(t) => match t.trim().parse::<usize>() {
                Ok(c) if (1..=MAX_SHARD_COUNT).contains(&c) => Some(c),
                _ => {
                    return Err(format!(
                        "--shard auto: {COUNT_ENV}=`{t}` is not a shard count 1..={MAX_SHARD_COUNT}"
                    ))
                }
            },
        };
        let count = match (given, from_env) {
            (Some(a), Some(b)) if a != b => {
                return Err(format!(
                    "--shard auto/{a}, but {COUNT_ENV}={b}: give the Job's completions once, or make them agree"
                ))
            }
            (Some(c), _) | (None, Some(c)) => c,
            (None, None) => {
                return Err(format!(
                    "--shard auto needs the shard count, which Kubernetes does not pass to the pod: set {COUNT_ENV} to the Job's completions in the manifest, or give --shard auto/N"
                ))
            }
        };
        if index >= count {
            return Err(format!(
                "--shard auto: {INDEX_ENV}={index} is shard {} of {count}, which does not exist: the Job's completions and the shard count differ",
                index + 1
            ));
        }
        Ok(ShardSpec {
            index: index + 1,
            count,
        })
    }
}

impl ShardSpec {
    /// This shard's part of `v`: `v / N`, plus one for the first `v % N`
    /// shards. Over all shards the parts add up to `v`.
    pub fn part(self, v: u64) -> u64 {
        let n = self.count as u64;
        v / n + u64::from(((self.index - 1) as u64) < v % n)
    }
}

/// What `run --shard` adds to a load plan.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardRun {
    pub spec: ShardSpec,
    /// `--start-at`: when the burst starts, on every shard.
    pub start_at: Option<SystemTime>,
    /// This shard's exact part of the unsharded scheduled count.
    pub scheduled: u64,
    /// The suite file and its SHA-256, for the merge to re-read and check.
    pub suite_file: PathBuf,
    pub suite_digest: String,
}

/// The users of a profile in shard `s`, stage by stage.
fn profile_part(p: &Profile, peak_users: usize, s: ShardSpec) -> Profile {
    match p {
        Profile::Stages(st) => Profile::Stages(
            st.iter()
                .map(|&(u, t)| (s.part(u as u64) as usize, t))
                .collect(),
        ),
        // The rate in proportion to the shard's part of the pool it starts
        // with, as `slice` scales `max_rate`.
        Profile::Rates(st) => {
            let f = s.part(peak_users as u64) as f64 / peak_users.max(1) as f64;
            Profile::Rates(st.iter().map(|&(r, t)| (r * f, t)).collect())
        }
        Profile::Iterations {
            users,
            hatch_rate,
            iterations,
        } => {
            let mine = s.part(*users as u64) as usize;
            Profile::Iterations {
                users: mine,
                hatch_rate: hatch_rate * mine as f64 / (*users).max(1) as f64,
                iterations: *iterations,
            }
        }
    }
}

/// The slice of `plan` that shard `spec` runs: users per stage split, the
/// rate in proportion to the users (the per-user pace is unchanged), the
/// scheduled count cut so that all shards add up to the unsharded count.
pub fn slice(
    plan: &LoadPlan,
    spec: ShardSpec,
    start_at: Option<SystemTime>,
    suite_file: PathBuf,
    suite_digest: String,
) -> LoadPlan {
    let per_user = plan.max_rate / plan.peak_users.max(1) as f64;
    // Shard j's unrounded count; the cumulative floors telescope, so the
    // parts add up to floor(total) = the unsharded count.
    let natural = |j: usize| -> f64 {
        let p = profile_part(
            &plan.profile,
            plan.peak_users,
            ShardSpec {
                index: j,
                count: spec.count,
            },
        );
        match p {
            Profile::Stages(_) | Profile::Rates(_) => p.slots(per_user),
            Profile::Iterations {
                users, iterations, ..
            } => (users as u64 * iterations) as f64,
        }
    };
    let cumulative = |upto: usize| -> f64 {
        let sum: f64 = (1..=upto).map(natural).sum();
        (sum + 1e-6).floor()
    };
    let scheduled = (cumulative(spec.index) - cumulative(spec.index - 1)).max(0.0) as u64;
    let mut out = plan.clone();
    out.profile = profile_part(&plan.profile, plan.peak_users, spec);
    out.peak_users = spec.part(plan.peak_users as u64) as usize;
    out.max_rate = per_user * out.peak_users as f64;
    out.max_users = (spec.part(plan.max_users as u64) as usize).max(out.peak_users);
    out.shard = Some(ShardRun {
        spec,
        start_at,
        scheduled,
        suite_file,
        suite_digest,
    });
    out
}

/// Parses `--start-at` (RFC 3339 in UTC, `2026-12-01T12:00:00Z`) and checks
/// it lies ahead of `now`, at most [`MAX_START_AHEAD`].
pub fn parse_start_at(text: &str, now: SystemTime) -> Result<SystemTime, String> {
    let at = humantime::parse_rfc3339(text.trim()).map_err(|e| {
        format!("`{text}` is not an RFC 3339 UTC time such as 2026-12-01T12:00:00Z ({e})")
    })?;
    if at <= now {
        return Err(format!(
            "`{text}` is in the past (now is {}): give every shard the same instant ahead, e.g. a few minutes from now",
            humantime::format_rfc3339_seconds(now)
        ));
    }
    if at.duration_since(now).unwrap_or_default() > MAX_START_AHEAD {
        return Err(format!(
            "`{text}` is more than {} ahead (now is {})",
            crate::fmt_duration(MAX_START_AHEAD),
            humantime::format_rfc3339_seconds(now)
        ));
    }
    Ok(at)
}

/// Waits until `at` (bounded: `parse_start_at` allows at most a day);
/// a Ctrl-C ends the wait, and a shard that arrives late is an error,
/// since its burst would not overlap the others'.
pub async fn wait_until(
    at: SystemTime,
    mut cancel: tokio::sync::watch::Receiver<bool>,
) -> Result<(), Outcome> {
    let now = SystemTime::now();
    if let Ok(late) = now.duration_since(at) {
        if late > START_TOLERANCE {
            return Err(Outcome::error(format!(
                "this shard reached --start-at {} {} late: its burst would not run with the other shards'; give a later --start-at",
                humantime::format_rfc3339_seconds(at),
                crate::fmt_duration(late)
            )));
        }
        return Ok(());
    }
    let left = at
        .duration_since(now)
        .unwrap_or_default()
        .min(MAX_START_AHEAD);
    eprintln!(
        "note: shard waits {} for --start-at {}",
        crate::fmt_duration(left),
        humantime::format_rfc3339_seconds(at)
    );
    let sleep = tokio::time::sleep(left);
    tokio::pin!(sleep);
    loop {
        if *cancel.borrow() || super::signal::cancelled() {
            return Err(Outcome::error("cancelled while waiting for --start-at"));
        }
        tokio::select! {
            _ = &mut sleep => return Ok(()),
            r = cancel.changed() => if r.is_err() {
                // The sender is gone: no cancel can come any more.
                (&mut sleep).await;
                return Ok(());
            },
        }
    }
}

/// Seconds since the Unix epoch, as the manifest records instants.
pub fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// What one shard wrote, `<stem>.shard.json`; `tminus merge` reads it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardManifest {
    pub format: String,
    pub version: u32,
    pub suite: String,
    /// The suite file as the shard was given it.
    pub suite_file: PathBuf,
    /// SHA-256 (hex) of the suite's text: shards of different suites never merge.
    pub suite_digest: String,
    pub load: String,
    pub shard: ShardSpec,
    /// The target (userinfo masked).
    pub target: String,
    /// `--start-at`, when given (RFC 3339).
    pub start_at: Option<String>,
    /// When this shard's burst started and ended, seconds since the epoch.
    pub started_unix_s: f64,
    pub ended_unix_s: f64,
    pub elapsed_s: f64,
    pub scheduled_requests: u64,
    pub requests: u64,
    pub cancelled: bool,
    pub hit_max_duration: bool,
    pub engine_error: Option<String>,
    pub distinct_keys_succeeded: u64,
    pub duplicate_retries: u64,
    pub effects: Option<ShardEffects>,
    /// Per request kind, in mix order; histograms in `histograms`.
    pub kinds: Vec<ShardKind>,
    /// File names (next to the manifest): the interval log (tags `raw`,
    /// `corrected`) and the per-kind totals (tags `k<i>.raw`,
    /// `k<i>.corrected`, `k<i>.lateness`).
    pub interval_log: String,
    pub histograms: String,
}

/// The side-effect counter as this shard read it (LOAD-005).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardEffects {
    pub before: i64,
    /// When the `before` reading had completed.
    pub before_read_unix_s: f64,
    /// None: the reading after the burst failed (`error`).
    pub after: Option<i64>,
    pub after_read_unix_s: Option<f64>,
    pub error: Option<String>,
}

/// Counts of one request kind in one shard.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardKind {
    pub name: String,
    pub requests: u64,
    pub failed: u64,
    pub responses_429: u64,
    pub statuses: BTreeMap<u16, u64>,
    pub errors: BTreeMap<String, u64>,
}

impl ShardKind {
    fn new(name: &str, k: &KindStats) -> Self {
        ShardKind {
            name: name.to_owned(),
            requests: k.requests,
            failed: k.failed,
            responses_429: k.r429,
            statuses: k.statuses.clone(),
            errors: k.errors.clone(),
        }
    }
}

/// The per-kind histogram tags of kind `i`.
pub fn kind_tags(i: usize) -> [String; 3] {
    [
        format!("k{i}.raw"),
        format!("k{i}.corrected"),
        format!("k{i}.lateness"),
    ]
}

/// Writes the per-kind totals as one interval each (lossless, V2 deflate).
fn write_kind_histograms(path: &Path, b: &Burst, plan: &LoadPlan) -> std::io::Result<()> {
    let len = b.ended.duration_since(b.started).unwrap_or_default();
    write_kind_totals(
        path,
        &b.figures.kinds,
        b.started,
        len,
        &format!("tminus load shard {}: per request kind totals", plan.id),
    )
}

/// Writes each request kind's totals as one interval from `started`, `len`
/// long, tagged by [`kind_tags`] (kind `i` in mix order): the lossless
/// per-kind histograms `tminus merge` adds up and `tminus compare` resamples.
pub fn write_kind_totals(
    path: &Path,
    kinds: &[KindStats],
    started: SystemTime,
    len: Duration,
    comment: &str,
) -> std::io::Result<()> {
    let mut h = stats::HlogFile::create(path, started, comment)?;
    for (i, k) in kinds.iter().enumerate() {
        let [raw, cor, late] = kind_tags(i);
        h.write_tagged(
            started,
            len,
            &[
                (raw.as_str(), &k.raw),
                (cor.as_str(), &k.corrected),
                (late.as_str(), &k.lateness),
            ],
        )?;
    }
    Ok(())
}

/// The end of a shard's burst: its histograms and manifest written, every
/// result deferred to `tminus merge` (skipped, never passed), or an error
/// when the shard broke.
pub(super) fn finish(
    plan: &LoadPlan,
    shard: &ShardRun,
    ctx: &LoadContext<'_>,
    b: Burst,
) -> Vec<LoadResult> {
    let f = &b.figures;
    let manifest_path = b.dir.join(format!("{}.shard.json", b.stem));
    let histograms = format!("{}.kinds.hlog", b.stem);
    let effects = match (&plan.effects, b.before_read) {
        (Some(_), Some(before_read)) => {
            let before = match &f.effects {
                Effects::Read { before, .. } => Some(*before),
                _ => None,
            };
            Some(ShardEffects {
                before: before.unwrap_or_default(),
                before_read_unix_s: unix_s(before_read),
                after: match &f.effects {
                    Effects::Read { after, .. } => Some(*after),
                    _ => None,
                },
                after_read_unix_s: b.after_read.map(unix_s),
                error: match &f.effects {
                    Effects::Failed(o) => Some(o.message.clone()),
                    Effects::NotAsked => Some("not read after the burst".into()),
                    Effects::Read { .. } => None,
                },
            })
        }
        _ => None,
    };
    let manifest = ShardManifest {
        format: MANIFEST_FORMAT.into(),
        version: MANIFEST_VERSION,
        suite: ctx.suite.to_owned(),
        suite_file: shard.suite_file.clone(),
        suite_digest: shard.suite_digest.clone(),
        load: plan.id.clone(),
        shard: shard.spec,
        target: crate::redact::mask_userinfo(&ctx.target.base_url),
        start_at: shard
            .start_at
            .map(|t| humantime::format_rfc3339(t).to_string()),
        started_unix_s: unix_s(b.started),
        ended_unix_s: unix_s(b.ended),
        elapsed_s: f.elapsed.as_secs_f64(),
        scheduled_requests: shard.scheduled,
        requests: f.overall.requests,
        cancelled: f.cancelled,
        hit_max_duration: f.hit_max_duration,
        engine_error: f.engine_error.clone(),
        distinct_keys_succeeded: f.distinct_keys,
        duplicate_retries: f.duplicates,
        effects,
        kinds: plan
            .mix
            .iter()
            .zip(&f.kinds)
            .map(|(m, k)| ShardKind::new(&m.name, k))
            .collect(),
        interval_log: format!("{}.hlog", b.stem),
        histograms: histograms.clone(),
    };
    let written = write_kind_histograms(&b.dir.join(&histograms), &b, plan).and_then(|()| {
        let text = serde_json::to_string_pretty(&manifest).map_err(std::io::Error::other)?;
        crate::files::write_atomic(
            &manifest_path,
            (ctx.redactor.redact(&text) + "\n").as_bytes(),
        )
    });
    if let Err(e) = written {
        return uniform(
            plan,
            Outcome::error(format!(
                "cannot write the shard's figures in {}: {e}",
                b.dir.display()
            )),
        );
    }
    if f.cancelled {
        return uniform(
            plan,
            Outcome::error(format!(
                "shard {} was cancelled after {}: its partial figures in {} cannot be merged",
                shard.spec,
                crate::fmt_duration(f.elapsed),
                manifest_path.display()
            )),
        );
    }
    if let Some(e) = &f.engine_error {
        return uniform(plan, Outcome::error(e.clone()));
    }
    uniform(
        plan,
        Outcome::skipped(format!(
            "verdict deferred to `tminus merge`: shard {} sent {} of {} scheduled requests; figures in {}",
            shard.spec,
            f.overall.requests,
            shard.scheduled,
            manifest_path.display()
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(index: usize, count: usize) -> ShardSpec {
        ShardSpec { index, count }
    }

    #[test]
    fn parts_add_up_and_the_first_shards_take_the_rest() {
        let parts: Vec<u64> = (1..=3).map(|i| spec(i, 3).part(10)).collect();
        assert_eq!(parts, [4, 3, 3]);
        for (v, n) in [(0u64, 4usize), (2, 5), (17, 4), (1000, 7)] {
            let sum: u64 = (1..=n).map(|i| spec(i, n).part(v)).sum();
            assert_eq!(sum, v, "{v} over {n}");
        }
    }

    fn plan(profile: Profile, peak_users: usize, max_rate: f64) -> LoadPlan {
        LoadPlan {
            id: "b".into(),
            description: None,
            tags: Vec::new(),
            profile,
            peak_users,
            max_users: peak_users * 10,
            max_rate,
            max_duration: Duration::from_secs(60),
            allow_remote: false,
            mix: Vec::new(),
            duplicate_share: 0.1,
            idempotency_header: "Idempotency-Key".into(),
            effects: None,
            thresholds: Vec::new(),
            min_delivered: 0.9,
            shard: None,
            observe: None,
            webhooks: None,
        }
    }

    /// k6's execution segments, exactly: users per stage, rates and the
    /// scheduled count of all shards add up to the unsharded burst.
    #[test]
    fn slices_add_up_to_the_whole_burst() {
        let whole = plan(Profile::Stages(vec![(10, 2), (10, 5), (0, 2)]), 10, 123.0);
        let total = whole.scheduled_requests();
        for n in [1, 2, 3, 7, 11] {
            let parts: Vec<LoadPlan> = (1..=n)
                .map(|i| slice(&whole, spec(i, n), None, "s.yaml".into(), "d".into()))
                .collect();
            let scheduled: f64 = parts.iter().map(|p| p.scheduled_requests()).sum();
            assert_eq!(scheduled, total, "{n} shards");
            let rate: f64 = parts.iter().map(|p| p.max_rate).sum();
            assert!((rate - 123.0).abs() < 1e-9, "{n} shards: {rate}");
            let users: usize = parts.iter().map(|p| p.peak_users).sum();
            assert_eq!(users, 10);
            for p in &parts {
                // The per-user pace is the unsharded one; the share is kept.
                if p.peak_users > 0 {
                    assert!((p.max_rate / p.peak_users as f64 - 12.3).abs() < 1e-9);
                }
                assert_eq!(p.duplicate_share, 0.1);
                let s = p.shard.as_ref().unwrap();
                assert!((s.scheduled as f64 - p.profile.user_seconds() * 12.3).abs() <= 1.0);
            }
        }
        let three: Vec<Profile> = (1..=3)
            .map(|i| slice(&whole, spec(i, 3), None, "s".into(), "d".into()).profile)
            .collect();
        assert_eq!(three[0], Profile::Stages(vec![(4, 2), (4, 5), (0, 2)]));
        assert_eq!(three[2], Profile::Stages(vec![(3, 2), (3, 5), (0, 2)]));
        // Rate stages: each shard's rate is its part of the pool's.
        let rates = plan(
            Profile::Rates(vec![(50.0, 2), (90.0, 5), (0.0, 2)]),
            7,
            90.0,
        );
        let total = rates.scheduled_requests();
        for n in [1, 2, 3, 7] {
            let parts: Vec<LoadPlan> = (1..=n)
                .map(|i| slice(&rates, spec(i, n), None, "s".into(), "d".into()))
                .collect();
            let scheduled: f64 = parts.iter().map(|p| p.scheduled_requests()).sum();
            assert_eq!(scheduled, total, "{n} shards");
            let rate: f64 = parts.iter().map(|p| p.max_rate).sum();
            assert!((rate - 90.0).abs() < 1e-9, "{n} shards: {rate}");
            for p in &parts {
                let Profile::Rates(st) = &p.profile else {
                    panic!("{:?}", p.profile)
                };
                assert!((st[1].0 - p.max_rate).abs() < 1e-9, "{st:?} {}", p.max_rate);
            }
        }
        let it = plan(
            Profile::Iterations {
                users: 5,
                hatch_rate: 10.0,
                iterations: 8,
            },
            5,
            50.0,
        );
        let parts: Vec<LoadPlan> = (1..=3)
            .map(|i| slice(&it, spec(i, 3), None, "s".into(), "d".into()))
            .collect();
        let counts: Vec<f64> = parts.iter().map(|p| p.scheduled_requests()).collect();
        assert_eq!(counts, [16.0, 16.0, 8.0]);
        let hatch: f64 = parts
            .iter()
            .map(|p| match p.profile {
                Profile::Iterations { hatch_rate, .. } => hatch_rate,
                _ => 0.0,
            })
            .sum();
        assert!((hatch - 10.0).abs() < 1e-9);
    }

    #[test]
    fn shard_specs_parse_one_based() {
        assert_eq!("2/3".parse::<ShardSpec>(), Ok(spec(2, 3)));
        let zero = "0/3".parse::<ShardSpec>().unwrap_err();
        assert!(zero.contains("JOB_COMPLETION_INDEX + 1"), "{zero}");
        assert!("4/3".parse::<ShardSpec>().is_err());
        assert!("1/0".parse::<ShardSpec>().is_err());
        assert!("2".parse::<ShardSpec>().is_err());
        assert!("a/b".parse::<ShardSpec>().is_err());
    }

    #[test]
    fn auto_reads_the_indexed_jobs_index_and_the_count_it_is_given() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let auto = |s: &str| s.parse::<ShardArg>().unwrap();
        // 0-based index, 1-based shard; the count from the env or auto/N.
        let pod = env(&[(INDEX_ENV, "0"), (COUNT_ENV, "3")]);
        assert_eq!(auto("auto").resolve(pod), Ok(spec(1, 3)));
        let last = env(&[(INDEX_ENV, "2")]);
        assert_eq!(auto("auto/3").resolve(last), Ok(spec(3, 3)));
        assert_eq!(auto("auto/3").resolve(pod), Ok(spec(1, 3)));
        // I/N ignores the environment.
        assert_eq!(auto("2/3").resolve(pod), Ok(spec(2, 3)));
        let err = |a: &str, e: &dyn Fn(&str) -> Option<String>| auto(a).resolve(e).unwrap_err();
        assert!(err("auto", &env(&[(COUNT_ENV, "3")])).contains("it is not set here"));
        assert!(err("auto", &env(&[(INDEX_ENV, "1")])).contains("set JOB_COMPLETIONS"));
        assert!(err("auto/4", &pod).contains("agree"));
        assert!(err("auto", &env(&[(INDEX_ENV, "3"), (COUNT_ENV, "3")]))
            .contains("shard 4 of 3, which does not exist"));
        assert!(err("auto", &env(&[(INDEX_ENV, "-1"), (COUNT_ENV, "3")])).contains("0-based"));
        assert!(err("auto", &env(&[(INDEX_ENV, "0"), (COUNT_ENV, "0")])).contains("1..="));
        assert!("auto/0".parse::<ShardArg>().is_err());
        assert!("automatic".parse::<ShardArg>().is_err());
    }

    #[test]
    fn start_at_is_ahead_and_bounded() {
        let now = humantime::parse_rfc3339("2026-12-01T12:00:00Z").unwrap();
        let at = parse_start_at("2026-12-01T12:05:00Z", now).unwrap();
        assert_eq!(at.duration_since(now).unwrap(), Duration::from_secs(300));
        assert!(parse_start_at("2026-12-01T11:59:59Z", now)
            .unwrap_err()
            .contains("in the past"));
        assert!(parse_start_at("2026-12-03T12:00:00Z", now)
            .unwrap_err()
            .contains("ahead"));
        assert!(parse_start_at("tomorrow", now)
            .unwrap_err()
            .contains("RFC 3339"));
    }
}
