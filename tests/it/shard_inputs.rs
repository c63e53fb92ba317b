//! Issue 24 item 3: `tminus merge` reads shard files from other machines and
//! trusts none of them. Hand-made shard sets in a tempdir: a valid one
//! merges (exit 0); each hostile field is refused (exit 3) naming the file
//! and the field, before anything is allocated from it or read through it,
//! and no file read can leave the shard's folder or hang.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::{stderr, tminus};
use serde_json::{json, Value};
use tminus::families::load::stats::{new_hist, HlogFile};

/// A closed burst: 2 users × 3 iterations of one request kind, 6 requests.
const SUITE: &str = r#"suite: hand
load:
  id: b
  users: 2
  hatch_rate: 10
  iterations: 3
  max_rate: 100/s
  requests:
    - name: list
      request: { path: /v1/items }
"#;

struct Set {
    dir: tempfile::TempDir,
    shards: PathBuf,
}

fn digest(text: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// Writes shard `index` of `count` with `requests` answered 200.
fn write_shard(folder: &Path, suite: &Path, index: usize, count: usize, requests: u64) -> PathBuf {
    std::fs::create_dir_all(folder).unwrap();
    let stem = format!("load-hand-b.shard-{index}-of-{count}");
    let started = SystemTime::now() - Duration::from_secs(10);
    let mut h = new_hist();
    for v in 0..requests {
        h.record(1000 + v).unwrap();
    }
    let mut kinds =
        HlogFile::create(&folder.join(format!("{stem}.kinds.hlog")), started, "t").unwrap();
    kinds
        .write_tagged(
            started,
            Duration::from_secs(1),
            &[("k0.raw", &h), ("k0.corrected", &h), ("k0.lateness", &h)],
        )
        .unwrap();
    let mut log = HlogFile::create(&folder.join(format!("{stem}.hlog")), started, "t").unwrap();
    log.write(started, Duration::from_secs(1), &h, &h).unwrap();
    let t = started
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let manifest = json!({
        "format": "tminus-load-shard",
        "version": 1,
        "suite": "hand",
        "suite_file": suite,
        "suite_digest": digest(SUITE),
        "load": "b",
        "shard": { "index": index, "count": count },
        "target": "http://127.0.0.1:9",
        "start_at": null,
        "started_unix_s": t,
        "ended_unix_s": t + 1.0,
        "elapsed_s": 1.0,
        "scheduled_requests": requests,
        "requests": requests,
        "cancelled": false,
        "hit_max_duration": false,
        "engine_error": null,
        "distinct_keys_succeeded": 0,
        "duplicate_retries": 0,
        "effects": null,
        "kinds": [{
            "name": "list", "requests": requests, "failed": 0, "responses_429": 0,
            "statuses": { "200": requests }, "errors": {}
        }],
        "interval_log": format!("{stem}.hlog"),
        "histograms": format!("{stem}.kinds.hlog"),
    });
    let path = folder.join(format!("{stem}.shard.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    path
}

/// Two valid shards (3 requests each) under `shards/shard-I`.
fn valid_set() -> Set {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("hand.yaml");
    std::fs::write(&suite, SUITE).unwrap();
    let shards = dir.path().join("shards");
    for i in 1..=2 {
        write_shard(&shards.join(format!("shard-{i}")), &suite, i, 2, 3);
    }
    Set { dir, shards }
}

impl Set {
    fn manifest(&self, i: usize) -> PathBuf {
        self.shards
            .join(format!("shard-{i}"))
            .join(format!("load-hand-b.shard-{i}-of-2.shard.json"))
    }
    /// Rewrites shard `i`'s manifest through `f`.
    fn edit(&self, i: usize, f: impl FnOnce(&mut Value)) {
        let p = self.manifest(i);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    }
    fn merge(&self) -> std::process::Output {
        merge_in(self.dir.path(), &self.shards)
    }
}

fn merge_in(dir: &Path, shards: &Path) -> std::process::Output {
    tminus(
        dir,
        &[
            "merge",
            shards.to_str().unwrap(),
            "--report-dir",
            dir.join("merged").to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(30),
    )
}

/// Exit 3, naming the file and every `needle`.
fn refused(out: &std::process::Output, file: &str, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(file), "no {file} in: {err}");
    for n in needles {
        assert!(err.contains(n), "no {n} in: {err}");
    }
}

#[test]
fn a_hand_made_valid_set_merges() {
    let set = valid_set();
    let out = set.merge();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn shard_labels_out_of_range_are_refused_and_never_count_twice() {
    // 3/2 next to 1/2 and 2/2: its requests would have counted twice.
    let set = valid_set();
    let suite = set.dir.path().join("hand.yaml");
    write_shard(&set.shards.join("shard-3"), &suite, 3, 2, 3);
    refused(
        &set.merge(),
        "shard-3-of-2.shard.json",
        &["`shard.index` is 3", "1..=2"],
    );

    // 1/0 and 2/0.
    let set = valid_set();
    for i in 1..=2 {
        set.edit(i, |v| v["shard"]["count"] = json!(0));
    }
    refused(
        &set.merge(),
        "shard-1-of-2.shard.json",
        &["`shard.count` is 0"],
    );

    // A huge count (the missing list would be built for every index).
    let set = valid_set();
    for i in 1..=2 {
        set.edit(i, |v| v["shard"]["count"] = json!(u64::MAX));
    }
    refused(
        &set.merge(),
        "shard-1-of-2.shard.json",
        &["`shard.count` is 18446744073709551615", "1..=10000"],
    );
}

#[test]
fn times_and_counts_out_of_range_are_refused() {
    // 1e300 seconds used to panic (exit 101) converting it to a time.
    let set = valid_set();
    set.edit(2, |v| v["started_unix_s"] = json!(1e300));
    refused(
        &set.merge(),
        "shard-2-of-2.shard.json",
        &["`started_unix_s`"],
    );

    let set = valid_set();
    set.edit(1, |v| v["ended_unix_s"] = json!(-5.0));
    refused(&set.merge(), "shard-1-of-2.shard.json", &["`ended_unix_s`"]);

    let set = valid_set();
    set.edit(1, |v| v["kinds"][0]["requests"] = json!(4));
    refused(
        &set.merge(),
        "shard-1-of-2.shard.json",
        &["`kinds[0]`", "`requests`"],
    );

    let set = valid_set();
    set.edit(1, |v| v["kinds"][0]["failed"] = json!(99));
    refused(&set.merge(), "shard-1-of-2.shard.json", &["`failed`"]);

    let set = valid_set();
    set.edit(1, |v| v["scheduled_requests"] = json!(u64::MAX));
    refused(
        &set.merge(),
        "shard-1-of-2.shard.json",
        &["`scheduled_requests`"],
    );

    // Not hex: used to be cut on a byte that is not a character boundary.
    let set = valid_set();
    set.edit(1, |v| {
        v["suite_digest"] = json!("ééééééééééééééééééééééééééééééééé")
    });
    refused(&set.merge(), "shard-1-of-2.shard.json", &["`suite_digest`"]);
}

/// Makes a FIFO at `p` (`mkfifo`, as a hostile shard folder could hold).
fn mkfifo(p: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", p.display());
}

#[test]
fn file_names_stay_inside_the_shard_folder_and_are_regular_files() {
    // A `../` name: followed out of the folder before.
    let set = valid_set();
    let outside = set.dir.path().join("outside.hlog");
    std::fs::copy(
        set.shards
            .join("shard-1/load-hand-b.shard-1-of-2.kinds.hlog"),
        &outside,
    )
    .unwrap();
    set.edit(1, |v| v["histograms"] = json!("../../outside.hlog"));
    refused(
        &set.merge(),
        "shard-1-of-2.shard.json",
        &["`histograms`", "not a path"],
    );

    // An absolute path to a FIFO: the merge hung reading it.
    let set = valid_set();
    let fifo = set.dir.path().join("fifo");
    mkfifo(&fifo);
    set.edit(2, |v| v["interval_log"] = json!(fifo));
    refused(&set.merge(), "shard-2-of-2.shard.json", &["`interval_log`"]);

    // A plain name that is a FIFO in the folder: refused, never opened.
    let set = valid_set();
    let name = "load-hand-b.shard-2-of-2.kinds.hlog";
    let p = set.shards.join("shard-2").join(name);
    std::fs::remove_file(&p).unwrap();
    mkfifo(&p);
    refused(&set.merge(), name, &["not a regular file"]);

    // A symbolic link in the folder pointing out of it.
    let set = valid_set();
    let p = set
        .shards
        .join("shard-1")
        .join("load-hand-b.shard-1-of-2.kinds.hlog");
    std::fs::rename(&p, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &p).unwrap();
    refused(&set.merge(), "kinds.hlog", &["not a regular file"]);

    // A manifest that is a FIFO.
    let set = valid_set();
    let m = set.manifest(1);
    std::fs::remove_file(&m).unwrap();
    mkfifo(&m);
    refused(
        &set.merge(),
        "shard-1-of-2.shard.json",
        &["not a regular file"],
    );

    // The suite the manifest names, a FIFO: reading it would hang.
    let set = valid_set();
    let fifo = set.dir.path().join("suite.fifo");
    mkfifo(&fifo);
    for i in 1..=2 {
        set.edit(i, |v| v["suite_file"] = json!(fifo));
    }
    refused(
        &set.merge(),
        "shard-1-of-2.shard.json",
        &["`suite_file`", "not a regular file"],
    );
}

/// A V2 histogram header declaring `payload` bytes, with `extra` bytes of
/// payload really there; `deflate` wraps it as tminus writes.
fn hostile_histogram(payload: u32, extra: usize, deflate: bool) -> String {
    use base64::Engine as _;
    let mut v2 = Vec::new();
    v2.extend_from_slice(&0x1c84_9313u32.to_be_bytes());
    v2.extend_from_slice(&payload.to_be_bytes());
    v2.extend_from_slice(&0u32.to_be_bytes());
    v2.extend_from_slice(&3u32.to_be_bytes());
    v2.extend_from_slice(&1u64.to_be_bytes());
    v2.extend_from_slice(&600_000_000u64.to_be_bytes());
    v2.extend_from_slice(&1.0f64.to_be_bytes());
    v2.extend(std::iter::repeat_n(2u8, extra));
    let bytes = if deflate {
        use std::io::Write as _;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&v2).unwrap();
        let c = z.finish().unwrap();
        let mut out = 0x1c84_9314u32.to_be_bytes().to_vec();
        out.extend_from_slice(&(c.len() as u32).to_be_bytes());
        out.extend_from_slice(&c);
        out
    } else {
        v2
    };
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Runs the merge with its address space limited to 1 GiB: a 4 GiB
/// allocation from a declared size cannot hide behind lazy zero pages.
fn merge_limited(dir: &Path, shards: &Path) -> std::process::Output {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = std::process::Command::new(common::bin());
    cmd.current_dir(dir)
        .args(["merge", shards.to_str().unwrap(), "--report-dir"])
        .arg(dir.join("merged"))
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(std::process::Stdio::null());
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// Replaces the histogram of the first `tag` interval of `path` by `b64`.
fn replace_histogram(path: &Path, tag: &str, b64: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("Tag={tag},")))
        .unwrap();
    let (head, _) = line.rsplit_once(',').unwrap();
    std::fs::write(path, text.replace(line, &format!("{head},{b64}"))).unwrap();
}

#[test]
fn a_histogram_declaring_4_gib_is_refused_before_allocating() {
    for deflate in [false, true] {
        let set = valid_set();
        let name = "load-hand-b.shard-1-of-2.kinds.hlog";
        // The k0.raw interval's histogram replaced by one declaring ~4 GiB.
        let hostile = hostile_histogram(0xffff_fff0, 16, deflate);
        replace_histogram(&set.shards.join("shard-1").join(name), "k0.raw", &hostile);
        let out = merge_limited(set.dir.path(), &set.shards);
        refused(
            &out,
            name,
            &["k0.raw", "declares a payload of 4294967280 bytes"],
        );
    }
    // Bounds past what tminus records (a histogram of 2^63 at 5 digits).
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut b = b64.decode(hostile_histogram(0, 0, false)).unwrap();
    b[12..16].copy_from_slice(&5u32.to_be_bytes());
    b[24..32].copy_from_slice(&(1u64 << 63).to_be_bytes());
    let set = valid_set();
    let name = "load-hand-b.shard-2-of-2.hlog";
    replace_histogram(
        &set.shards.join("shard-2").join(name),
        "raw",
        &b64.encode(b),
    );
    let out = merge_limited(set.dir.path(), &set.shards);
    refused(&out, name, &["histogram bounds"]);
}
