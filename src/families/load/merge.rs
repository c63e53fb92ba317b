//! `tminus merge DIR...` (issue 15): the shards of one burst (`shard.rs`)
//! become one judged burst. HDR histograms add exactly, so the merged
//! percentiles are those of one histogram of every shard's requests; the
//! thresholds, the delivery and LOAD-005 are then judged by the same code as
//! an unsharded burst (`exec::judge_figures`).
//!
//! Refused (exit 3, naming them): shards of different suites (digest, suite,
//! load or count differ), a shard given twice, a shard missing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::exec::{judge_figures, write_figures, Effects, Figures, Files, LoadResult};
use super::plan::LoadPlan;
use super::shard::{kind_tags, ShardManifest, ShardSpec, MANIFEST_FORMAT, MANIFEST_VERSION};
use super::stats::{self, HlogFile, KindStats};
use crate::families::Outcome;
use crate::redact::Redactor;

/// Largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;

/// One shard's manifest and the folder it was found in.
#[derive(Debug, Clone)]
pub struct ShardFiles {
    pub dir: PathBuf,
    pub path: PathBuf,
    pub manifest: ShardManifest,
}

/// Every `*.shard.json` in each folder and in its direct subfolders (a CI
/// download puts each artifact in a folder of its own).
pub fn find(dirs: &[PathBuf]) -> Result<Vec<ShardFiles>, String> {
    let mut paths = Vec::new();
    for d in dirs {
        if !d.is_dir() {
            return Err(format!("{} is not a folder", d.display()));
        }
        let mut folders = vec![d.clone()];
        folders.extend(entries(d)?.into_iter().filter(|p| p.is_dir()));
        for f in folders {
            paths.extend(entries(&f)?.into_iter().filter(|p| {
                p.is_file()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with(".shard.json"))
            }));
        }
    }
    if paths.is_empty() {
        let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        return Err(format!(
            "no shard manifest (*.shard.json, written by `tminus run --shard I/N`) in {}",
            shown.join(", ")
        ));
    }
    paths.sort();
    paths.dedup();
    paths.into_iter().map(|p| read_manifest(&p)).collect()
}

fn entries(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut out: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    out.sort();
    Ok(out)
}

fn read_manifest(path: &Path) -> Result<ShardFiles, String> {
    use std::io::Read as _;
    let shown = path.display();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_MANIFEST_BYTES).read_to_string(&mut text))
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let manifest: ShardManifest =
        serde_json::from_str(&text).map_err(|e| format!("{shown} is not a shard manifest: {e}"))?;
    if manifest.format != MANIFEST_FORMAT || manifest.version != MANIFEST_VERSION {
        return Err(format!(
            "{shown}: format {} version {}, this tminus reads {MANIFEST_FORMAT} version {MANIFEST_VERSION}",
            manifest.format, manifest.version
        ));
    }
    Ok(ShardFiles {
        dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
        path: path.to_path_buf(),
        manifest,
    })
}

/// Checks that `shards` are all the shards of one burst, each once: same
/// suite (name and digest), load and count; indices 1..=N without gaps.
/// Returns them ordered by index.
pub fn check_set(mut shards: Vec<ShardFiles>) -> Result<Vec<ShardFiles>, String> {
    let first = shards[0].manifest.clone();
    let key = |m: &ShardManifest| {
        (
            m.suite_digest.clone(),
            m.suite.clone(),
            m.load.clone(),
            m.shard.count,
        )
    };
    let odd: Vec<String> = shards
        .iter()
        .filter(|s| key(&s.manifest) != key(&first))
        .map(|s| {
            format!(
                "shard {} in {} (suite `{}` {}…, load `{}`, {} shards)",
                s.manifest.shard,
                s.path.display(),
                s.manifest.suite,
                short(&s.manifest.suite_digest),
                s.manifest.load,
                s.manifest.shard.count
            )
        })
        .collect();
    if !odd.is_empty() {
        return Err(format!(
            "the shards are not of one burst: {} in {} ran suite `{}` {}…, load `{}` in {} shards, but {}",
            first.shard,
            shards[0].path.display(),
            first.suite,
            short(&first.suite_digest),
            first.load,
            first.shard.count,
            odd.join("; ")
        ));
    }
    shards.sort_by_key(|s| s.manifest.shard.index);
    let mut by_index: BTreeMap<usize, Vec<&Path>> = BTreeMap::new();
    for s in &shards {
        by_index
            .entry(s.manifest.shard.index)
            .or_default()
            .push(&s.path);
    }
    let twice: Vec<String> = by_index
        .iter()
        .filter(|(_, p)| p.len() > 1)
        .map(|(i, p)| {
            let ps: Vec<String> = p.iter().map(|p| p.display().to_string()).collect();
            format!("shard {i}/{} ({})", first.shard.count, ps.join(", "))
        })
        .collect();
    if !twice.is_empty() {
        return Err(format!("duplicate shards: {}", twice.join("; ")));
    }
    let missing: Vec<String> = (1..=first.shard.count)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| {
            ShardSpec {
                index: i,
                count: first.shard.count,
            }
            .to_string()
        })
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing shard{} {} of suite `{}` load `{}` (found {})",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            first.suite,
            first.load,
            shards
                .iter()
                .map(|s| s.manifest.shard.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(shards)
}

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

fn from_unix(s: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs_f64(s.max(0.0))
}

/// Adds up the shards: histograms exactly, counts by sum, the elapsed time
/// from the first start to the last end, LOAD-005 from the counter readings
/// that bracket every shard's burst.
pub fn merge_figures(plan: &LoadPlan, shards: &[ShardFiles]) -> Result<Figures, String> {
    let mut kinds: Vec<KindStats> = plan.mix.iter().map(|_| KindStats::new()).collect();
    for s in shards {
        let m = &s.manifest;
        let names: Vec<&str> = m.kinds.iter().map(|k| k.name.as_str()).collect();
        let want: Vec<&str> = plan.mix.iter().map(|k| k.name.as_str()).collect();
        if names != want {
            return Err(format!(
                "{}: request kinds {names:?}, the suite's load has {want:?}",
                s.path.display()
            ));
        }
        let path = s.dir.join(&m.histograms);
        let intervals = stats::read_hlog(&path)?;
        for (i, (total, counts)) in kinds.iter_mut().zip(&m.kinds).enumerate() {
            let mut k = KindStats::new();
            let [raw, cor, late] = kind_tags(i);
            for iv in &intervals {
                let h = if iv.tag == raw {
                    &mut k.raw
                } else if iv.tag == cor {
                    &mut k.corrected
                } else if iv.tag == late {
                    &mut k.lateness
                } else {
                    continue;
                };
                h.add(&iv.hist)
                    .map_err(|e| format!("{}: {}: {e:?}", path.display(), iv.tag))?;
            }
            if k.raw.len() != counts.requests {
                return Err(format!(
                    "{}: kind `{}` has {} requests in its histogram but {} in {}",
                    path.display(),
                    counts.name,
                    k.raw.len(),
                    counts.requests,
                    s.path.display()
                ));
            }
            k.requests = counts.requests;
            k.failed = counts.failed;
            k.r429 = counts.responses_429;
            k.statuses = counts.statuses.clone();
            k.errors = counts.errors.clone();
            total.add(&k);
        }
    }
    let started = shards
        .iter()
        .map(|s| s.manifest.started_unix_s)
        .fold(f64::INFINITY, f64::min);
    let ended = shards
        .iter()
        .map(|s| s.manifest.ended_unix_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let elapsed = Duration::from_secs_f64((ended - started).max(0.0));
    let scheduled: u64 = shards.iter().map(|s| s.manifest.scheduled_requests).sum();
    let mut f = Figures::new(kinds, elapsed, scheduled as f64);
    f.cancelled = shards.iter().any(|s| s.manifest.cancelled);
    f.hit_max_duration = shards.iter().any(|s| s.manifest.hit_max_duration);
    let errors: Vec<String> = shards
        .iter()
        .filter_map(|s| {
            s.manifest
                .engine_error
                .as_ref()
                .map(|e| format!("shard {}: {e}", s.manifest.shard))
        })
        .collect();
    f.engine_error = (!errors.is_empty()).then(|| errors.join("; "));
    f.distinct_keys = shards
        .iter()
        .map(|s| s.manifest.distinct_keys_succeeded)
        .sum();
    f.duplicates = shards.iter().map(|s| s.manifest.duplicate_retries).sum();
    if plan.effects.is_some() {
        f.effects = merged_effects(shards, started, ended);
    }
    Ok(f)
}

/// The shards share one counter on the target: each shard's own delta also
/// counts the others' effects. The burst's delta is the last reading after
/// minus the first reading before, valid only when those readings bracket
/// every shard's burst (clocks synchronised, as `--start-at` needs anyway).
fn merged_effects(shards: &[ShardFiles], started: f64, ended: f64) -> Effects {
    let mut befores = Vec::new();
    let mut afters = Vec::new();
    for s in shards {
        let shard = s.manifest.shard;
        let Some(e) = &s.manifest.effects else {
            return Effects::Failed(Outcome::error(format!(
                "shard {shard} did not read the side-effect counter"
            )));
        };
        if let Some(err) = &e.error {
            return Effects::Failed(Outcome::error(format!("shard {shard}: {err}")));
        }
        befores.push((e.before_read_unix_s, e.before));
        if let (Some(a), Some(at)) = (e.after, e.after_read_unix_s) {
            afters.push((at, a));
        }
    }
    let first_before = befores
        .iter()
        .copied()
        .fold(None, |m: Option<(f64, i64)>, b| {
            Some(m.map_or(b, |m| if b.0 < m.0 { b } else { m }))
        });
    let last_after = afters
        .iter()
        .copied()
        .fold(None, |m: Option<(f64, i64)>, a| {
            Some(m.map_or(a, |m| if a.0 > m.0 { a } else { m }))
        });
    let (Some((before_at, before)), Some((after_at, after))) = (first_before, last_after) else {
        return Effects::Failed(Outcome::error(
            "no shard read the side-effect counter after its burst",
        ));
    };
    let show = |s: f64| humantime::format_rfc3339_millis(from_unix(s)).to_string();
    if before_at > started || after_at < ended {
        return Effects::Failed(Outcome::error(format!(
            "LOAD-005 cannot be judged: the counter readings (first before {}, last after {}) do not bracket the shards' bursts ({} to {}); use --start-at so every shard reads before any starts",
            show(before_at),
            show(after_at),
            show(started),
            show(ended)
        )));
    }
    Effects::Read { before, after }
}

/// Writes the merged figures (`.hgrm`, `.raw.hgrm`, JSON summary and an
/// interval log of every shard's intervals on one time base) and judges
/// them as one burst.
pub fn judge_merged(
    plan: &LoadPlan,
    suite: &str,
    target: &str,
    shards: &[ShardFiles],
    figures: &Figures,
    report_dir: &Path,
    redactor: &Redactor,
) -> Vec<LoadResult> {
    let (dir, stem) = super::exec::stem(report_dir, suite, plan);
    let files = Files::new(&dir, &stem);
    let mut write_err = std::fs::create_dir_all(&dir)
        .err()
        .map(|e| format!("cannot create {}: {e}", dir.display()));
    if write_err.is_none() {
        write_err = write_merged_hlog(&files.hlog, suite, plan, shards).err();
    }
    let more = write_figures(plan, suite, target, figures, &files, redactor);
    judge_figures(plan, suite, figures, &files.json, write_err.or(more))
}

/// Every shard's interval log in one, rebased on the earliest shard start
/// and ordered by time: adding its `raw` (or `corrected`) intervals gives
/// exactly the merged histogram.
fn write_merged_hlog(
    path: &Path,
    suite: &str,
    plan: &LoadPlan,
    shards: &[ShardFiles],
) -> Result<(), String> {
    let mut all = Vec::new();
    for s in shards {
        all.extend(stats::read_hlog(&s.dir.join(&s.manifest.interval_log))?);
    }
    all.sort_by_key(|iv| iv.start);
    let base = shards
        .iter()
        .map(|s| from_unix(s.manifest.started_unix_s))
        .min()
        .unwrap_or_else(SystemTime::now);
    let base = all.first().map_or(base, |iv| iv.start.min(base));
    let mut h = HlogFile::create(
        path,
        base,
        &format!(
            "tminus load {suite}/{} merged from {} shards",
            plan.id,
            shards.len()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    for iv in &all {
        h.write_tagged(iv.start, iv.len, &[(iv.tag.as_str(), &iv.hist)])
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
