//! Issue 15, a burst larger than one machine: N `tminus run --shard I/N`
//! processes against one reference on 127.0.0.1 plus `tminus merge` send and
//! judge exactly the unsharded burst; merged histograms are exactly one
//! histogram of every value; a missing, duplicate or foreign shard is refused
//! (exit 3, named); a suite changed after the shards ran is refused.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::*;
use hdrhistogram::Histogram;
use tminus::families::load::stats::{new_hist, read_hlog, HlogFile};

/// A closed burst (users × iterations), so the request count is exact; the
/// reference executes each idempotency key once, so LOAD-005 must pass when
/// the shards' distinct keys are summed and the counter bracket is right.
const SUITE: &str = r#"
suite: wide
load:
  id: wide
  users: 5
  hatch_rate: 50
  iterations: 8
  max_rate: 250/s
  duplicate_share: 20%
  requests:
    - name: create
      idempotency_key: auto
      request:
        method: POST
        path: /public/v1/messages
        headers: { Authorization: "Bearer ref_load_key" }
        json: { contact_id: 1, text: "shard" }
      success: 201
    - name: count
      weight: 2
      request: { path: /public/v1/messages/count, headers: { Authorization: "Bearer ref_load_key" } }
  effects:
    request: { path: /__tminus/effects/messages.create }
    value: $.count
  thresholds:
    - p95 < 2s
    - "count: p99 < 3s"
    - error_rate < 1%
"#;

const USERS_TIMES_ITERATIONS: u64 = 5 * 8;

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// An RFC 3339 UTC instant `secs` from now, whole seconds.
fn start_at(secs: u64) -> String {
    let t = SystemTime::now() + Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Runs shards `which` of `count` at once (one process each), each writing
/// to `out/shard-I`; returns the folders.
fn run_shards(
    dir: &Path,
    suite: &Path,
    url: &str,
    count: usize,
    which: &[usize],
    out: &Path,
) -> Vec<PathBuf> {
    let at = start_at(3);
    let children: Vec<(usize, PathBuf, std::process::Child)> = which
        .iter()
        .map(|&i| {
            let folder = out.join(format!("shard-{i}"));
            let child = Command::new(bin())
                .current_dir(dir)
                .args(["run", suite.to_str().unwrap(), "--target", url])
                .args(["--shard", &format!("{i}/{count}"), "--start-at", &at])
                .args(["--report-dir", folder.to_str().unwrap()])
                .env("NO_COLOR", "1")
                .env_remove("GITHUB_STEP_SUMMARY")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn shard");
            (i, folder, child)
        })
        .collect();
    let mut folders = Vec::new();
    for (i, folder, child) in children {
        let out = wait_bounded(child, Duration::from_secs(60));
        assert_eq!(
            out.status.code(),
            Some(0),
            "shard {i}/{count}: {}",
            stderr(&out)
        );
        // Deferred, never passed: the shard does not judge.
        let v = verdicts(&folder.join("report.json"));
        assert!(
            !v.is_empty() && v.iter().all(|(_, x)| x == "skipped"),
            "{v:?}"
        );
        let junit = std::fs::read_to_string(folder.join("junit.xml")).unwrap();
        assert!(
            junit.contains("verdict deferred to `tminus merge`"),
            "{junit}"
        );
        folders.push(folder);
    }
    folders
}

/// Waits for a child with a deadline; kills only that child on expiry.
fn wait_bounded(child: std::process::Child, deadline: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("process {pid} did not finish within {deadline:?}");
        }
    }
}

fn merge(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["merge"];
    all.extend_from_slice(args);
    tminus(dir, &all, &[], Duration::from_secs(60))
}

/// Adds every interval of an `.hlog` carrying `tag`.
fn hlog_total(path: &Path, tag: &str) -> Histogram<u64> {
    let mut h = new_hist();
    for iv in read_hlog(path).unwrap() {
        if iv.tag == tag {
            h.add(&iv.hist).unwrap();
        }
    }
    h
}

#[test]
fn three_shards_and_a_merge_send_and_judge_the_unsharded_burst() {
    let _alone = common::alone();
    let reference = RefHandle::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("wide.yaml");
    std::fs::write(&suite, SUITE).unwrap();

    // One unsharded run of the same burst.
    let whole = dir.path().join("whole");
    let out = tminus(
        dir.path(),
        &[
            "run",
            "wide.yaml",
            "--target",
            &reference.url,
            "--report-dir",
            whole.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let unsharded = json(&whole.join("load-wide-wide.json"));
    assert_eq!(
        unsharded["overall"]["requests"].as_u64(),
        Some(USERS_TIMES_ITERATIONS),
        "{unsharded}"
    );

    let shards = dir.path().join("shards");
    let folders = run_shards(dir.path(), &suite, &reference.url, 3, &[1, 2, 3], &shards);
    // Users split 2, 2, 1 (5 over 3): each shard's manifest says so.
    let per_shard: Vec<u64> = folders
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let m = json(&f.join(format!("load-wide-wide.shard-{}-of-3.shard.json", i + 1)));
            assert_eq!(m["requests"], m["scheduled_requests"], "{m}");
            m["scheduled_requests"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(per_shard, [16, 16, 8]);

    let merged = dir.path().join("merged");
    let out = merge(
        dir.path(),
        &[
            shards.to_str().unwrap(),
            "--report-dir",
            merged.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = verdicts(&merged.join("report.json"));
    let ids: Vec<&str> = v.iter().map(|(i, _)| i.as_str()).collect();
    assert_eq!(
        ids,
        [
            "wide/wide.p95",
            "wide/wide.count.p99",
            "wide/wide.error_rate",
            "wide/wide.delivered",
            "wide/wide.effects"
        ]
    );
    assert!(
        v.iter().all(|(_, x)| x == "pass"),
        "{v:?}\n{}",
        stderr(&out)
    );
    let s = json(&merged.join("load-wide-wide.json"));
    assert_eq!(
        s["overall"]["requests"], unsharded["overall"]["requests"],
        "{s}"
    );
    assert_eq!(
        s["scheduled_requests"], unsharded["scheduled_requests"],
        "{s}"
    );
    assert_eq!(s["delivered_share"].as_f64(), Some(1.0), "{s}");
    // LOAD-005 over the shards: one counter, the shards' distinct keys summed.
    let keys = s["idempotency"]["distinct_keys_succeeded"]
        .as_i64()
        .unwrap();
    assert!(keys > 0, "{s}");
    assert_eq!(s["effects"]["delta"].as_i64(), Some(keys), "{s}");
    // The merged interval log holds every request of every shard, once.
    let raw = hlog_total(&merged.join("load-wide-wide.hlog"), "raw");
    assert_eq!(raw.len(), USERS_TIMES_ITERATIONS);
    assert!(merged.join("load-wide-wide.hgrm").exists());
    assert!(merged.join("junit.xml").exists() && merged.join("report.html").exists());

    // A missing shard: refused, named.
    let partial = dir.path().join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    for i in [1, 3] {
        copy_dir(
            &shards.join(format!("shard-{i}")),
            &partial.join(format!("shard-{i}")),
        );
    }
    let out = merge(
        dir.path(),
        &[partial.to_str().unwrap(), "--report-dir", "m2"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("missing shard 2/3"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("m2/report.json").exists());

    // A shard given twice: refused, named.
    let out = merge(
        dir.path(),
        &[
            shards.to_str().unwrap(),
            partial.to_str().unwrap(),
            "--report-dir",
            "m3",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("duplicate shards: shard 1/3") && err.contains("shard 3/3"),
        "{err}"
    );

    // A shard of another suite (one changed byte): refused, named.
    let other = dir.path().join("other.yaml");
    std::fs::write(&other, SUITE.replace("p95 < 2s", "p95 < 3s")).unwrap();
    let foreign = dir.path().join("foreign");
    run_shards(dir.path(), &other, &reference.url, 3, &[2], &foreign);
    let mixed = dir.path().join("mixed");
    std::fs::create_dir_all(&mixed).unwrap();
    copy_dir(&shards.join("shard-1"), &mixed.join("shard-1"));
    copy_dir(&foreign.join("shard-2"), &mixed.join("shard-2"));
    copy_dir(&shards.join("shard-3"), &mixed.join("shard-3"));
    let out = merge(dir.path(), &[mixed.to_str().unwrap(), "--report-dir", "m4"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("not of one burst") && err.contains("shard 2/3"),
        "{err}"
    );

    // The suite changed after the shards ran: its digest no longer matches.
    std::fs::write(&suite, SUITE.replace("error_rate < 1%", "error_rate < 2%")).unwrap();
    let out = merge(
        dir.path(),
        &[shards.to_str().unwrap(), "--report-dir", "m5"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("SHA-256"), "{}", stderr(&out));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn merged_histograms_have_exactly_the_percentiles_of_one_histogram() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let base = SystemTime::now();
    // Known values, spread unevenly over three "shards" (one has the tail).
    let values: Vec<u64> = (1..=3000u64).map(|i| i * i % 97_003 + 1).collect();
    let mut one = new_hist();
    let mut paths = Vec::new();
    for (s, chunk) in [&values[..100], &values[100..2500], &values[2500..]]
        .iter()
        .enumerate()
    {
        let mut h = new_hist();
        for v in chunk.iter() {
            h.record(*v).unwrap();
            one.record(*v).unwrap();
        }
        let path = dir.path().join(format!("s{s}.hlog"));
        let mut log = HlogFile::create(&path, base, "test").unwrap();
        // Two intervals per shard: the merge must add every one.
        let (a, b) = chunk.split_at(chunk.len() / 2);
        for (k, part) in [a, b].iter().enumerate() {
            let mut ph = new_hist();
            for v in part.iter() {
                ph.record(*v).unwrap();
            }
            log.write_tagged(
                base + Duration::from_secs(k as u64),
                Duration::from_secs(1),
                &[("k0.raw", &ph)],
            )
            .unwrap();
        }
        paths.push(path);
    }
    let mut merged = new_hist();
    for p in &paths {
        merged.add(hlog_total(p, "k0.raw")).unwrap();
    }
    assert_eq!(merged.len(), values.len() as u64);
    for q in [0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
        assert_eq!(
            merged.value_at_quantile(q),
            one.value_at_quantile(q),
            "q {q}"
        );
    }
    assert_eq!(merged.mean(), one.mean());
    assert_eq!(merged, one);
}

#[test]
fn bad_shard_flags_are_usage_errors() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("wide.yaml"), SUITE).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "wide.yaml"];
        args.extend_from_slice(extra);
        tminus(dir.path(), &args, &[], Duration::from_secs(20))
    };
    let out = run(&["--shard", "0/3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("JOB_COMPLETION_INDEX + 1"),
        "{}",
        stderr(&out)
    );
    let out = run(&["--shard", "1/3", "--start-at", "2001-01-01T00:00:00Z"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("in the past"), "{}", stderr(&out));
    let out = run(&["--shard", "1/3", "--start-at", "next tuesday"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("RFC 3339"), "{}", stderr(&out));
    // --start-at alone means nothing.
    let out = run(&["--start-at", &start_at(60)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // No shard output at all.
    let out = merge(dir.path(), &["."]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no shard manifest"),
        "{}",
        stderr(&out)
    );
}
