//! Reading a run's burst figures back from its report folder, as `tminus
//! run --report-dir DIR` (or `tminus merge`) wrote them: every burst's JSON
//! summary, `load-<suite>-<id>.json` (`families::load::summary`), and its
//! per-kind totals, `load-<suite>-<id>.kinds.hlog` (lossless HDR histograms,
//! the shard format, `families::load::shard::write_kind_totals`), and its
//! interval log, `load-<suite>-<id>.hlog` (all requests, one histogram a
//! second: how the run wandered, `noise.rs`; optional).
//!
//! Nothing in the folder is trusted: files are read only when regular and
//! at most their cap (`stats::read_regular`), histograms are decoded only
//! after their declared sizes are checked (`stats::decode_checked`), and the
//! summary's shape, names and counts are checked against each other and
//! against the histograms before a figure is used. A refusal names the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::families::load::exec::KINDS_HLOG_SUFFIX;
/// A name read from a file, for a message: at most 64 characters, control
/// characters shown as U+FFFD (the merge's rule).
pub use crate::families::load::merge::bounded as shown_name;
use crate::families::load::merge::MAX_SHARD_REQUESTS;
use crate::families::load::stats::{self, KindStats};
use crate::families::load::summary::FORMAT_VERSION;

use super::stats::Empirical;

/// Largest burst summary read (a real one is a few KB).
pub const MAX_SUMMARY_BYTES: u64 = 4 * 1024 * 1024;
/// Most bursts one report folder may hold.
pub const MAX_BURSTS: usize = 1000;
/// Most request kinds one burst may have.
pub const MAX_KINDS: usize = 255;
/// Longest suite, load or request kind name.
pub const MAX_NAME: usize = 255;

/// One burst of a report folder.
pub struct BurstData {
    /// `suite/load`: how bursts of two folders are paired.
    pub id: String,
    pub summary_file: PathBuf,
    pub cancelled: bool,
    pub elapsed_s: f64,
    /// Per request kind in the suite's mix order, figures and histograms.
    pub kinds: Vec<(String, KindStats)>,
    /// All requests: the kinds added up.
    pub overall: KindStats,
    /// All requests, second by second (the interval log), raw and
    /// corrected; empty when the folder has no interval log.
    pub slices: Slices,
}

/// A burst's interval log, in time order.
#[derive(Default)]
pub struct Slices {
    pub raw: Vec<Empirical>,
    pub corrected: Vec<Empirical>,
}

/// Most seconds read from one interval log (ten hours).
pub const MAX_SLICES: usize = 36_000;

/// The burst summary's fields `compare` reads (serde ignores the rest).
#[derive(Deserialize)]
struct SummaryFile {
    version: u32,
    suite: String,
    load: String,
    cancelled: bool,
    elapsed_s: f64,
    overall: KindFile,
    kinds: BTreeMap<String, KindFile>,
    files: FilesFile,
}

#[derive(Deserialize)]
struct KindFile {
    requests: u64,
    failed: u64,
    responses_429: u64,
}

#[derive(Deserialize)]
struct FilesFile {
    #[serde(default)]
    kind_tags: BTreeMap<String, String>,
}

/// Every burst in `dir`, by id; an error names the folder or the file.
pub fn read_dir(dir: &Path) -> Result<BTreeMap<String, BurstData>, String> {
    let shown = dir.display();
    let md = std::fs::metadata(dir).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !md.is_dir() {
        return Err(format!("{shown} is not a folder"));
    }
    let mut summaries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {shown}: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("load-") && n.ends_with(".json") && !n.ends_with(".shard.json")
            })
        })
        .collect();
    summaries.sort();
    if summaries.is_empty() {
        let shards = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .any(|e| e.file_name().to_string_lossy().ends_with(".shard.json"))
            })
            .unwrap_or(false);
        let hint = if shards {
            ": it holds shards; compare the folder `tminus merge` wrote"
        } else {
            " (written by `tminus run --report-dir DIR` for a suite with a `load:` section)"
        };
        return Err(format!("no burst summary (load-*.json) in {shown}{hint}"));
    }
    if summaries.len() > MAX_BURSTS {
        return Err(format!(
            "{shown} holds {} burst summaries, more than the {MAX_BURSTS} compare reads",
            summaries.len()
        ));
    }
    let mut bursts = BTreeMap::new();
    for path in summaries {
        let b = read_burst(&path)?;
        if let Some(other) = bursts.insert(b.id.clone(), b) {
            return Err(format!(
                "{} and another summary in {shown} are both burst `{}`",
                other.summary_file.display(),
                shown_name(&other.id)
            ));
        }
    }
    Ok(bursts)
}

/// One burst: its summary checked, its histograms read and checked.
fn read_burst(path: &Path) -> Result<BurstData, String> {
    let shown = path.display().to_string();
    let bytes = stats::read_regular(path, MAX_SUMMARY_BYTES, "burst summary")?;
    let s: SummaryFile = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{shown} is not a tminus burst summary: {e}"))?;
    let fail = |what: String| format!("{shown}: {what}");
    if s.version != FORMAT_VERSION {
        return Err(fail(format!(
            "version {}, this tminus reads version {FORMAT_VERSION}",
            s.version
        )));
    }
    name("suite", &s.suite).map_err(fail)?;
    name("load", &s.load).map_err(fail)?;
    if !s.elapsed_s.is_finite() || s.elapsed_s < 0.0 || s.elapsed_s > 1e7 {
        return Err(fail(format!(
            "`elapsed_s` is {}: must be 0..1e7 seconds",
            s.elapsed_s
        )));
    }
    if s.kinds.is_empty() || s.kinds.len() > MAX_KINDS {
        return Err(fail(format!(
            "`kinds` has {} request kinds: must be 1..={MAX_KINDS}",
            s.kinds.len()
        )));
    }
    if s.files.kind_tags.is_empty() {
        return Err(fail(
            "`files.kind_tags` is missing: the summary was written by a tminus that wrote no per-kind histograms; run the baseline again with this tminus".into(),
        ));
    }
    // Each kind has one tag `k<i>`, i in 0..kinds, each i once: the mix order.
    let mut ordered: Vec<Option<&str>> = vec![None; s.kinds.len()];
    for (kind, counts) in &s.kinds {
        name("kinds", kind).map_err(fail)?;
        counts_ok(counts).map_err(|e| fail(format!("`kinds.{}`: {e}", shown_name(kind))))?;
        let tag = s.files.kind_tags.get(kind).ok_or_else(|| {
            fail(format!(
                "`files.kind_tags` has no tag for request kind `{}`",
                shown_name(kind)
            ))
        })?;
        let i = tag
            .strip_prefix('k')
            .and_then(|i| i.parse::<usize>().ok())
            .filter(|i| *i < ordered.len() && ordered[*i].is_none())
            .ok_or_else(|| {
                fail(format!(
                    "`files.kind_tags.{}` is `{}`: must be k0..k{} and name one kind each",
                    shown_name(kind),
                    shown_name(tag),
                    ordered.len() - 1
                ))
            })?;
        ordered[i] = Some(kind);
    }
    if s.files.kind_tags.len() != s.kinds.len() {
        return Err(fail(
            "`files.kind_tags` names a request kind `kinds` does not have".into(),
        ));
    }
    counts_ok(&s.overall).map_err(|e| fail(format!("`overall`: {e}")))?;
    let hlog = kinds_hlog_path(path);
    let mut hists = read_kind_histograms(&hlog, s.kinds.len())?;
    let mut kinds = Vec::with_capacity(s.kinds.len());
    let mut overall = KindStats::new();
    for (i, kind) in ordered.into_iter().enumerate() {
        let kind = kind.unwrap_or_default();
        let counts = &s.kinds[kind];
        let (raw, corrected, lateness) = hists[i].take().ok_or_else(|| {
            format!(
                "{}: no `k{i}.raw` and `k{i}.corrected` histograms (request kind `{}`)",
                hlog.display(),
                shown_name(kind)
            )
        })?;
        for (tag, h) in [("raw", &raw), ("corrected", &corrected)] {
            if h.len() != counts.requests {
                return Err(format!(
                    "{}: `k{i}.{tag}` holds {} values but {shown} counts {} requests of `{}`",
                    hlog.display(),
                    h.len(),
                    counts.requests,
                    shown_name(kind)
                ));
            }
        }
        let mut k = KindStats::new();
        k.raw = raw;
        k.corrected = corrected;
        k.lateness = lateness;
        k.requests = counts.requests;
        k.failed = counts.failed;
        k.r429 = counts.responses_429;
        overall.add(&k);
        kinds.push((kind.to_owned(), k));
    }
    if (overall.requests, overall.failed, overall.r429)
        != (
            s.overall.requests,
            s.overall.failed,
            s.overall.responses_429,
        )
    {
        return Err(fail(
            "`overall` does not add up to its request kinds".into(),
        ));
    }
    let slices = read_slices(&interval_log_path(path))?;
    Ok(BurstData {
        id: format!("{}/{}", s.suite, s.load),
        summary_file: path.to_path_buf(),
        cancelled: s.cancelled,
        elapsed_s: s.elapsed_s,
        kinds,
        overall,
        slices,
    })
}

/// `load-s-b.json` → `load-s-b.hlog`, beside it.
pub fn interval_log_path(summary: &Path) -> PathBuf {
    summary.with_extension("hlog")
}

/// The `raw` and `corrected` intervals of an interval log in time order
/// (other tags are skipped); none when there is no log.
fn read_slices(path: &Path) -> Result<Slices, String> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(Slices::default());
    }
    let shown = path.display();
    let mut tagged: Vec<(std::time::SystemTime, bool, Empirical)> = Vec::new();
    stats::for_each_encoded(path, |e| {
        let raw = match e.tag.as_str() {
            "raw" => true,
            "corrected" => false,
            _ => return Ok(()),
        };
        if tagged.len() >= 2 * MAX_SLICES {
            return Err(format!(
                "{shown}: more than {MAX_SLICES} intervals, the most compare reads"
            ));
        }
        let h = e
            .decode()
            .map_err(|m| format!("{shown}: `{}`: {m}", e.tag))?;
        tagged.push((e.start, raw, Empirical::new(&h)));
        Ok(())
    })?;
    tagged.sort_by_key(|(t, _, _)| *t);
    let mut out = Slices::default();
    for (_, raw, e) in tagged {
        if raw {
            out.raw.push(e);
        } else {
            out.corrected.push(e);
        }
    }
    Ok(out)
}

/// `load-s-b.json` → `load-s-b.kinds.hlog`, beside it.
pub fn kinds_hlog_path(summary: &Path) -> PathBuf {
    let stem = summary
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    summary.with_file_name(format!("{stem}{KINDS_HLOG_SUFFIX}"))
}

/// A kind's raw and corrected latency and the generator's lateness (empty
/// when the file has none).
type RawAndCorrected = (
    hdrhistogram::Histogram<u64>,
    hdrhistogram::Histogram<u64>,
    hdrhistogram::Histogram<u64>,
);

/// The `k<i>.raw` and `k<i>.corrected` histograms of `kinds` kinds, each
/// tag at most once.
fn read_kind_histograms(path: &Path, kinds: usize) -> Result<Vec<Option<RawAndCorrected>>, String> {
    let shown = path.display();
    if std::fs::symlink_metadata(path).is_err() {
        return Err(format!(
            "{shown} is missing: a burst's per-kind histograms are written beside its summary"
        ));
    }
    let mut raw: Vec<Option<hdrhistogram::Histogram<u64>>> = vec![None; kinds];
    let mut corrected = raw.clone();
    let mut lateness = raw.clone();
    stats::for_each_encoded(path, |e| {
        let Some((i, tag)) = e
            .tag
            .strip_prefix('k')
            .and_then(|t| t.split_once('.'))
            .and_then(|(i, tag)| Some((i.parse::<usize>().ok()?, tag)))
            .filter(|(i, _)| *i < kinds)
        else {
            return Err(format!(
                "{shown}: tag `{}` is not `k<i>.raw`/`.corrected`/`.lateness` of one of the {kinds} request kinds",
                shown_name(&e.tag)
            ));
        };
        let slot = match tag {
            "raw" => &mut raw[i],
            "corrected" => &mut corrected[i],
            "lateness" => &mut lateness[i],
            _ => return Err(format!("{shown}: unknown tag `{}`", shown_name(&e.tag))),
        };
        if slot.is_some() {
            return Err(format!(
                "{shown}: tag `{}` appears twice",
                shown_name(&e.tag)
            ));
        }
        *slot = Some(
            e.decode()
                .map_err(|m| format!("{shown}: `{}`: {m}", e.tag))?,
        );
        Ok(())
    })?;
    Ok(raw
        .into_iter()
        .zip(corrected)
        .zip(lateness)
        .map(|((r, c), l)| Some((r?, c?, l.unwrap_or_else(stats::new_hist))))
        .collect())
}

/// A request kind's counts add up: failures and 429s are requests, and
/// no count is beyond what a burst can send (so sums cannot overflow).
fn counts_ok(k: &KindFile) -> Result<(), String> {
    if k.requests > MAX_SHARD_REQUESTS {
        return Err(format!(
            "`requests` is {}: a burst counts at most {MAX_SHARD_REQUESTS} requests",
            k.requests
        ));
    }
    if k.failed.saturating_add(k.responses_429) > k.requests {
        return Err(format!(
            "{} failed and {} answered 429 of {} requests",
            k.failed, k.responses_429, k.requests
        ));
    }
    Ok(())
}

fn name(field: &str, text: &str) -> Result<(), String> {
    if text.is_empty() || text.len() > MAX_NAME || text.chars().any(char::is_control) {
        return Err(format!(
            "`{field}` holds a name of {} bytes: names are 1..={MAX_NAME} bytes without control characters",
            text.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::load::shard::write_kind_totals;
    use serde_json::json;
    use std::time::{Duration, SystemTime};

    /// A burst of two kinds written as a run writes it: its per-kind totals
    /// and a summary with `summary` merged over the real fields.
    fn write_burst(dir: &Path, patch: serde_json::Value) -> PathBuf {
        let mut kinds = vec![KindStats::new(), KindStats::new()];
        for (i, k) in kinds.iter_mut().enumerate() {
            for v in 0..10u64 {
                k.raw.record(1_000 + v).unwrap();
                k.corrected.record(2_000 + v).unwrap();
            }
            k.requests = 10;
            k.failed = i as u64;
        }
        let json = dir.join("load-s-b.json");
        write_kind_totals(
            &kinds_hlog_path(&json),
            &kinds,
            SystemTime::now(),
            Duration::from_secs(1),
            "t",
        )
        .unwrap();
        let mut v = json!({
            "version": 1, "suite": "s", "load": "b", "cancelled": false, "elapsed_s": 1.0,
            "overall": {"requests": 20, "failed": 1, "responses_429": 0},
            "kinds": {
                "list": {"requests": 10, "failed": 0, "responses_429": 0},
                "count": {"requests": 10, "failed": 1, "responses_429": 0}
            },
            "files": {"kind_tags": {"list": "k0", "count": "k1"}}
        });
        merge(&mut v, patch);
        std::fs::write(&json, serde_json::to_vec(&v).unwrap()).unwrap();
        json
    }

    fn merge(v: &mut serde_json::Value, patch: serde_json::Value) {
        match (v, patch) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
                // A null in the patch removes the field.
                for (k, p) in b {
                    if p.is_null() {
                        a.remove(&k);
                    } else {
                        merge(a.entry(k).or_insert(serde_json::Value::Null), p);
                    }
                }
            }
            (v, p) => *v = p,
        }
    }

    #[test]
    fn a_burst_reads_back_in_mix_order_with_its_histograms() {
        let dir = tempfile::tempdir().unwrap();
        write_burst(dir.path(), json!({}));
        let bursts = read_dir(dir.path()).unwrap();
        let b = &bursts["s/b"];
        let names: Vec<&str> = b.kinds.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["list", "count"]);
        assert_eq!(b.overall.requests, 20);
        assert_eq!(b.overall.corrected.len(), 20);
        assert_eq!(b.kinds[1].1.failed, 1);
    }

    #[test]
    fn summaries_that_do_not_hold_together_are_refused_by_field() {
        for (patch, says) in [
            (json!({"version": 2}), "version 2"),
            (json!({"suite": ""}), "`suite`"),
            (json!({"elapsed_s": -1.0}), "`elapsed_s`"),
            (
                json!({"files": {"kind_tags": {"list": "k0", "count": "k0"}}}),
                "name one kind each",
            ),
            (
                json!({"files": {"kind_tags": null}}),
                "no per-kind histograms",
            ),
            (
                json!({"kinds": {"list": {"requests": 11}}}),
                "holds 10 values but",
            ),
            (json!({"kinds": {"list": {"failed": 11}}}), "11 failed"),
            (json!({"overall": {"requests": 21}}), "does not add up"),
            (
                json!({"kinds": {"list": {"requests": u64::MAX}}}),
                "at most",
            ),
            (json!({"kinds": "none"}), "is not a tminus burst summary"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            write_burst(dir.path(), patch.clone());
            let e = read_dir(dir.path())
                .err()
                .unwrap_or_else(|| panic!("{patch} was read"));
            assert!(e.contains(says), "{patch}: {e}");
        }
    }

    #[test]
    fn folders_without_bursts_and_links_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_dir(dir.path()).err().unwrap();
        assert!(e.contains("no burst summary"), "{e}");
        std::fs::write(dir.path().join("load-x.shard-1-of-2.shard.json"), "{}").unwrap();
        assert!(read_dir(dir.path())
            .err()
            .unwrap()
            .contains("it holds shards"));
        assert!(read_dir(&dir.path().join("none"))
            .err()
            .unwrap()
            .contains("cannot read"));
        #[cfg(unix)]
        {
            let real = tempfile::tempdir().unwrap();
            let json = write_burst(real.path(), json!({}));
            let linked = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(&json, linked.path().join("load-s-b.json")).unwrap();
            let e = read_dir(linked.path()).err().unwrap();
            assert!(e.contains("not a regular file"), "{e}");
        }
    }

    /// Issue 44: FIFOs (never opened, so never blocking), links, a sparse
    /// log past the cap and a truncated one are refused, the path named.
    #[cfg(unix)]
    #[test]
    fn fifos_links_sparse_and_truncated_logs_are_refused_naming_the_path() {
        let mkfifo = |p: &Path| {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        };
        // Reads on a thread: a blocked open fails the test, not the run.
        let read = |dir: PathBuf| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(read_dir(&dir).map(|_| ()));
            });
            rx.recv_timeout(Duration::from_secs(10))
                .expect("compare blocked on its input")
                .expect_err("read")
        };
        type Spoil<'a> = &'a dyn Fn(&Path);
        let cases: [(&str, Spoil, &str); 5] = [
            (
                "a FIFO summary",
                &|d: &Path| mkfifo(&d.join("load-f-f.json")),
                "load-f-f.json is not a regular file",
            ),
            (
                "a FIFO histogram log",
                &|d: &Path| {
                    let h = kinds_hlog_path(&d.join("load-s-b.json"));
                    std::fs::remove_file(&h).unwrap();
                    mkfifo(&h);
                },
                "load-s-b.kinds.hlog is not a regular file",
            ),
            (
                "a linked histogram log",
                &|d: &Path| {
                    let h = kinds_hlog_path(&d.join("load-s-b.json"));
                    std::fs::rename(&h, d.join("elsewhere")).unwrap();
                    std::os::unix::fs::symlink(d.join("elsewhere"), &h).unwrap();
                },
                "load-s-b.kinds.hlog is not a regular file",
            ),
            (
                "a sparse log of 300 MiB",
                &|d: &Path| {
                    let h = kinds_hlog_path(&d.join("load-s-b.json"));
                    std::fs::File::options()
                        .write(true)
                        .open(&h)
                        .unwrap()
                        .set_len(300 << 20)
                        .unwrap();
                },
                "load-s-b.kinds.hlog is larger than",
            ),
            (
                "a truncated log",
                &|d: &Path| {
                    let h = kinds_hlog_path(&d.join("load-s-b.json"));
                    let bytes = std::fs::read(&h).unwrap();
                    std::fs::write(&h, &bytes[..bytes.len() * 2 / 3]).unwrap();
                },
                "load-s-b.kinds.hlog",
            ),
        ];
        for (what, spoil, says) in cases {
            let dir = tempfile::tempdir().unwrap();
            write_burst(dir.path(), json!({}));
            spoil(dir.path());
            let started = std::time::Instant::now();
            let e = read(dir.path().to_path_buf());
            assert!(e.contains(says), "{what}: {e}");
            assert!(started.elapsed() < Duration::from_secs(5), "{what}");
        }
    }
}
