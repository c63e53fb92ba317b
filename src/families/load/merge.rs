//! `tminus merge DIR...` (issue 15): the shards of one burst (`shard.rs`)
//! become one judged burst. HDR histograms add exactly, so the merged
//! percentiles are those of one histogram of every shard's requests; the
//! thresholds, the delivery and LOAD-005 are then judged by the same code as
//! an unsharded burst (`exec::judge_figures`).
//!
//! Refused (exit 3, naming them): shards of different suites (digest, suite,
//! load or count differ), a shard given twice, a shard missing.
//!
//! A shard file is data from another machine, so every field is checked
//! before anything is allocated or read from it (issue 24 item 3,
//! `docs/safety.md`, "Merge validation"): the manifest's size, ranges and
//! finite numbers, its counts adding up, its file names plain names inside
//! its folder, every file a regular file of bounded size, every histogram's
//! declared sizes and bounds (`stats::decode_checked`). A refusal names the
//! file and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::exec::{judge_figures, write_figures, Effects, Figures, Files, LoadResult};
use super::plan::LoadPlan;
use super::shard::{
    kind_tags, ShardKind, ShardManifest, ShardSpec, MANIFEST_FORMAT, MANIFEST_VERSION,
    MAX_SHARD_COUNT,
};
use super::stats::{self, HlogFile, KindStats};
use crate::outcome::Outcome;
use crate::redact::Redactor;

/// Largest manifest read (a real one is a few KB).
pub const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;
/// Largest sum of the manifests read by one merge.
pub const MAX_MANIFESTS_BYTES: u64 = 64 * 1024 * 1024;
/// Latest instant a manifest may record: 9999-12-31T23:59:59Z.
pub const MAX_UNIX_S: f64 = 253_402_300_799.0;
/// Most requests one shard may count (2^40: exact in a float, and 10,000
/// shards of it still add up inside a u64).
pub const MAX_SHARD_REQUESTS: u64 = 1 << 40;
/// Longest name (suite, load, request kind, error kind) or file name.
pub const MAX_NAME: usize = 255;
/// Longest free text (target, engine error, counter error, suite path).
pub const MAX_TEXT: usize = 4096;

/// One shard's manifest and the folder it was found in.
#[derive(Debug, Clone)]
pub struct ShardFiles {
    pub dir: PathBuf,
    pub path: PathBuf,
    pub manifest: ShardManifest,
    /// The manifest's size.
    pub bytes: u64,
}

/// Every `*.shard.json` in each folder and in its direct subfolders (a CI
/// download puts each artifact in a folder of its own).
pub fn find(dirs: &[PathBuf]) -> Result<Vec<ShardFiles>, String> {
    let mut paths = Vec::new();
    for d in dirs {
        if !d.is_dir() {
            return Err(format!("{} is not a folder", d.display()));
        }
        // Subfolders are entered only when they are folders themselves,
        // never through a symbolic link out of the folder given.
        let mut folders = vec![d.clone()];
        folders.extend(
            entries(d)?
                .into_iter()
                .filter(|(_, t)| t.is_dir())
                .map(|(p, _)| p),
        );
        for f in folders {
            for (p, t) in entries(&f)? {
                let manifest = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(".shard.json"));
                if !manifest || t.is_dir() {
                    continue;
                }
                if !t.is_file() {
                    return Err(format!(
                        "{} is not a regular file: a shard manifest is read only from a regular file (no FIFO, device or symbolic link)",
                        p.display()
                    ));
                }
                paths.push(p);
            }
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
    if paths.len() > MAX_SHARD_COUNT {
        return Err(format!(
            "{} shard manifests found, more than the {MAX_SHARD_COUNT} shards a burst may have",
            paths.len()
        ));
    }
    let mut total = 0u64;
    paths
        .into_iter()
        .map(|p| {
            let s = read_manifest(&p, MAX_MANIFESTS_BYTES.saturating_sub(total))?;
            total += s.bytes;
            Ok(s)
        })
        .collect()
}

fn entries(dir: &Path) -> Result<Vec<(PathBuf, std::fs::FileType)>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut out: Vec<(PathBuf, std::fs::FileType)> = rd
        .filter_map(|e| e.ok().and_then(|e| Some((e.path(), e.file_type().ok()?))))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn read_manifest(path: &Path, budget: u64) -> Result<ShardFiles, String> {
    let shown = path.display();
    let cap = MAX_MANIFEST_BYTES.min(budget);
    let bytes = stats::read_regular(path, cap, "shard manifest").map_err(|e| {
        if cap < MAX_MANIFEST_BYTES {
            format!("{e} (the manifests of one merge may hold {MAX_MANIFESTS_BYTES} bytes in all)")
        } else {
            e
        }
    })?;
    let manifest: ShardManifest = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{shown} is not a shard manifest: {e}"))?;
    if manifest.format != MANIFEST_FORMAT || manifest.version != MANIFEST_VERSION {
        return Err(format!(
            "{shown}: format {} version {}, this tminus reads {MANIFEST_FORMAT} version {MANIFEST_VERSION}",
            bounded(&manifest.format),
            manifest.version
        ));
    }
    validate(&manifest).map_err(|e| format!("{shown}: {e}"))?;
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    Ok(ShardFiles {
        dir,
        path: path.to_path_buf(),
        manifest,
        bytes: bytes.len() as u64,
    })
}

/// At most 64 characters of a text from a file, for a message.
pub fn bounded(s: &str) -> String {
    // Control characters shown as U+FFFD: a file's text never drives the
    // terminal, and no escaped form of it is printed.
    let mut out: String = s
        .chars()
        .take(64)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    if s.chars().count() > 64 {
        out.push('…');
    }
    out
}

/// Every field of a manifest within its range (see `docs/safety.md`,
/// "Merge validation"); the error names the field.
fn validate(m: &ShardManifest) -> Result<(), String> {
    let count = m.shard.count;
    if !(1..=MAX_SHARD_COUNT).contains(&count) {
        return Err(format!(
            "`shard.count` is {count}: must be 1..={MAX_SHARD_COUNT}"
        ));
    }
    if !(1..=count).contains(&m.shard.index) {
        return Err(format!(
            "`shard.index` is {}: shard {} of {count} does not exist (1..={count})",
            m.shard.index, m.shard
        ));
    }
    if m.suite_digest.len() != 64 || !m.suite_digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "`suite_digest` is `{}`: must be a SHA-256 in hex (64 digits)",
            bounded(&m.suite_digest)
        ));
    }
    for (field, text, max) in [
        ("suite", m.suite.as_str(), MAX_NAME),
        ("load", m.load.as_str(), MAX_NAME),
        ("target", m.target.as_str(), MAX_TEXT),
        ("start_at", m.start_at.as_deref().unwrap_or("-"), MAX_NAME),
        (
            "engine_error",
            m.engine_error.as_deref().unwrap_or("-"),
            MAX_TEXT,
        ),
    ] {
        text_field(field, text, max)?;
    }
    let suite_file = m.suite_file.to_string_lossy();
    text_field("suite_file", &suite_file, MAX_TEXT)?;
    // The suite is re-read from here when --suite is not given: a FIFO or
    // a device would hang or never end.
    if let Ok(md) = std::fs::metadata(&m.suite_file) {
        if !md.is_file() {
            return Err(format!("`suite_file` {suite_file} is not a regular file"));
        }
    }
    for (field, name) in [
        ("interval_log", &m.interval_log),
        ("histograms", &m.histograms),
    ] {
        file_name(field, name)?;
    }
    let started = instant("started_unix_s", m.started_unix_s)?;
    let ended = instant("ended_unix_s", m.ended_unix_s)?;
    if ended < started {
        return Err(format!(
            "`ended_unix_s` {ended} is before `started_unix_s` {started}"
        ));
    }
    instant("elapsed_s", m.elapsed_s)?;
    for (field, v) in [
        ("scheduled_requests", m.scheduled_requests),
        ("requests", m.requests),
        ("distinct_keys_succeeded", m.distinct_keys_succeeded),
        ("duplicate_retries", m.duplicate_retries),
    ] {
        if v > MAX_SHARD_REQUESTS {
            return Err(format!(
                "`{field}` is {v}: a shard counts at most {MAX_SHARD_REQUESTS} requests"
            ));
        }
    }
    if m.kinds.is_empty() || m.kinds.len() > MAX_NAME {
        return Err(format!(
            "`kinds` has {} request kinds: must be 1..={MAX_NAME}",
            m.kinds.len()
        ));
    }
    let mut sum = 0u64;
    for (i, k) in m.kinds.iter().enumerate() {
        kind(k).map_err(|e| format!("`kinds[{i}]` ({}): {e}", bounded(&k.name)))?;
        sum += k.requests;
    }
    if sum != m.requests {
        return Err(format!(
            "`requests` is {} but its request kinds count {sum}",
            m.requests
        ));
    }
    if let Some(e) = &m.effects {
        instant("effects.before_read_unix_s", e.before_read_unix_s)?;
        if let Some(at) = e.after_read_unix_s {
            instant("effects.after_read_unix_s", at)?;
        }
        text_field("effects.error", e.error.as_deref().unwrap_or("-"), MAX_TEXT)?;
    }
    Ok(())
}

/// One request kind's counts: every request ended as a status or a
/// transport error, failures and 429s among them.
fn kind(k: &ShardKind) -> Result<(), String> {
    text_field("name", &k.name, MAX_NAME)?;
    if k.requests > MAX_SHARD_REQUESTS {
        return Err(format!(
            "`requests` is {}: a shard counts at most {MAX_SHARD_REQUESTS} requests",
            k.requests
        ));
    }
    if k.statuses.len() > 500 || k.errors.len() > MAX_NAME {
        return Err("more status or error kinds than HTTP has".into());
    }
    let mut ended = 0u64;
    for (status, n) in &k.statuses {
        if !(100..=599).contains(status) {
            return Err(format!("`statuses` holds {status}, not an HTTP status"));
        }
        ended = ended.saturating_add(*n);
    }
    let mut transport = 0u64;
    for (what, n) in &k.errors {
        text_field("errors", what, MAX_NAME)?;
        transport = transport.saturating_add(*n);
    }
    if ended.saturating_add(transport) != k.requests {
        return Err(format!(
            "`requests` is {} but `statuses` and `errors` count {}",
            k.requests,
            ended.saturating_add(transport)
        ));
    }
    let r429 = k.statuses.get(&429).copied().unwrap_or_default();
    if k.responses_429 != r429 {
        return Err(format!(
            "`responses_429` is {} but `statuses` has {r429} × 429",
            k.responses_429
        ));
    }
    if k.failed > k.requests - r429 {
        return Err(format!(
            "`failed` is {}, more than the {} requests other than 429",
            k.failed,
            k.requests - r429
        ));
    }
    Ok(())
}

fn text_field(field: &str, text: &str, max: usize) -> Result<(), String> {
    if text.is_empty() || text.len() > max {
        return Err(format!(
            "`{field}` is {} bytes long: must be 1..={max}",
            text.len()
        ));
    }
    if text.chars().any(|c| c == '\0') {
        return Err(format!("`{field}` holds a NUL character"));
    }
    Ok(())
}

/// A file next to the manifest: a plain name, never a path.
fn file_name(field: &str, name: &str) -> Result<(), String> {
    text_field(field, name, MAX_NAME)?;
    let plain = !name.contains(['/', '\\'])
        && name != "."
        && name != ".."
        && Path::new(name).file_name().is_some_and(|n| n == name);
    if !plain || !name.ends_with(".hlog") {
        return Err(format!(
            "`{field}` is `{}`: must be the name of a `.hlog` file in the manifest's own folder, not a path",
            bounded(name)
        ));
    }
    Ok(())
}

/// Seconds since the epoch: finite, 0..=[`MAX_UNIX_S`].
fn instant(field: &str, v: f64) -> Result<f64, String> {
    if !v.is_finite() || !(0.0..=MAX_UNIX_S).contains(&v) {
        return Err(format!(
            "`{field}` is {v}: must be seconds 0..={MAX_UNIX_S:.0} (year 9999)"
        ));
    }
    Ok(v)
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
        let mut found: Vec<KindStats> = m.kinds.iter().map(|_| KindStats::new()).collect();
        let tags: Vec<[String; 3]> = (0..m.kinds.len()).map(kind_tags).collect();
        // One interval decoded at a time, added at once: memory stays that
        // of the kinds' totals, whatever the file holds.
        stats::for_each_encoded(&path, |iv| {
            let Some((i, which)) = tags
                .iter()
                .enumerate()
                .find_map(|(i, t)| t.iter().position(|t| *t == iv.tag).map(|w| (i, w)))
            else {
                return Ok(());
            };
            let hist = iv
                .decode()
                .map_err(|e| format!("{}: {}: {e}", path.display(), iv.tag))?;
            let k = &mut found[i];
            let h = [&mut k.raw, &mut k.corrected, &mut k.lateness][which].add(&hist);
            h.map_err(|e| format!("{}: {}: {e:?}", path.display(), iv.tag))
        })?;
        for (total, (counts, mut k)) in kinds.iter_mut().zip(m.kinds.iter().zip(found)) {
            let lens = [k.raw.len(), k.corrected.len(), k.lateness.len()];
            if lens.iter().any(|&n| n != counts.requests) {
                return Err(format!(
                    "{}: kind `{}` has {} requests in its histograms (raw, corrected, lateness) but {} in {}",
                    path.display(),
                    counts.name,
                    lens.map(|n| n.to_string()).join(", "),
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
    judge_figures(
        plan,
        suite,
        target,
        figures,
        &files.json,
        write_err.or(more),
    )
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
    // Kept encoded (a few hundred bytes an interval) and decoded one at a
    // time as they are written.
    let mut all = Vec::new();
    for s in shards {
        stats::for_each_encoded(&s.dir.join(&s.manifest.interval_log), |iv| {
            all.push(iv);
            Ok(())
        })?;
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
        let hist = iv.decode().map_err(|e| {
            let from = shards.iter().map(|s| s.manifest.interval_log.as_str());
            format!("{}: {e}", from.collect::<Vec<_>>().join(", "))
        })?;
        h.write_tagged(iv.start, iv.len, &[(iv.tag.as_str(), &hist)])
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
