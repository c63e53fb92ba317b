//! A mutation fuzzer for the suite parser and planner (issue "Hostile
//! targets", fuzzing): the shipped suites, mutated by byte, line and token,
//! go through `parse_str` and `plan::build_with_env` in-process. No input may
//! panic, and every input ends either in a plan or in diagnostics that point
//! at a line and column.
//!
//! And for `tminus merge`'s inputs (issue 24 item 3): a valid set of shard
//! files (manifests, interval logs), mutated by field, line and histogram
//! header, goes through `merge::find`, `check_set`, `merge_figures` and
//! `judge_merged` in-process. No input may panic, and none may make one
//! allocation larger than [`MAX_ONE_ALLOCATION`] (a counting allocator
//! watches): a declared size is never trusted. `TMINUS_FUZZ_MERGE_CASES`
//! (default 2,000) and `TMINUS_FUZZ_SEED` replay as above.
//!
//! Deterministic: case `i` uses seed `BASE_SEED + i`, printed on failure, so
//! a failing case can be replayed alone (`TMINUS_FUZZ_SEED=N`). The number of
//! cases is `TMINUS_FUZZ_CASES` (default 20,000, which `cargo test` runs in
//! CI in well under two minutes).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tminus::plan::{build_with_env, PlanOptions};
use tminus::suite::read::parse_str;
use tminus::suite::SuiteSource;

const BASE_SEED: u64 = 0x7e57_5eed;

/// The largest allocation a merge case may make: every file it reads is a
/// few KB, so anything near this came from a size a file declared.
const MAX_ONE_ALLOCATION: usize = 64 * 1024 * 1024;

/// The system allocator, noting the largest single request it served on a
/// thread that watches (the merge cases', not the suite fuzzer's).
struct Watch;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Const, without a destructor: reading it never allocates.
    static WATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn note(size: usize) {
    if WATCHING.with(|w| w.get()) {
        LARGEST.fetch_max(size, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Watch {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size());
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, size: usize) -> *mut u8 {
        note(size);
        unsafe { System.realloc(p, l, size) }
    }
}

#[global_allocator]
static WATCH: Watch = Watch;

/// Tokens a hostile or careless author might put anywhere.
const TOKENS: &[&str] = &[
    "kind: idempotency.replay",
    "kind: webhook.burst",
    "kind: client.jitter",
    "kind: trace.unique",
    "kind: rate_limit.storm",
    "kind: nope.nope",
    "${var.x}",
    "${var.",
    "${env.HOME}",
    "${secret.S}",
    "${uuid}",
    "$${",
    "${",
    "}",
    "{",
    "[",
    "]",
    ":",
    "- ",
    "&a",
    "*a",
    "!!binary",
    "~",
    "null",
    "0",
    "-1",
    "0s",
    "1e309",
    "18446744073709551616",
    "99999999999h",
    "p95 < 1ms",
    "2xx",
    "999",
    "\"\\u0000\"",
    "'\r\n'",
    "\t",
    "é",
    "\u{202e}",
    "$.a[?@.b]",
    "$..",
    "http://[::1",
    "file:///etc/passwd",
    "users: 100000000",
    "max_rate: 0/s",
    "count: 0",
    "steps: []",
    "checks: []",
    "load: {}",
];

fn shipped_suites() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites");
    let mut v: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap();
            (p, t)
        })
        .collect();
    v.sort();
    v
}

fn mutate(rng: &mut StdRng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for _ in 0..rng.random_range(1..=4) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let i = rng.random_range(0..lines.len());
        match rng.random_range(0..8) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 => {
                let j = rng.random_range(0..lines.len());
                lines.swap(i, j);
            }
            3 => {
                // Insert a token at a character boundary.
                let l = &mut lines[i];
                let cut = l
                    .char_indices()
                    .map(|(k, _)| k)
                    .nth(rng.random_range(0..=l.chars().count().max(1)) % (l.chars().count() + 1))
                    .unwrap_or(l.len());
                let tok = TOKENS[rng.random_range(0..TOKENS.len())];
                l.insert_str(cut, tok);
            }
            4 => {
                // Replace a value after `: ` with a token.
                let tok = TOKENS[rng.random_range(0..TOKENS.len())];
                if let Some((k, _)) = lines[i].split_once(": ") {
                    lines[i] = format!("{k}: {tok}");
                }
            }
            5 => {
                // Re-indent.
                let n = rng.random_range(0..6);
                lines[i] = format!("{}{}", " ".repeat(n), lines[i].trim_start());
            }
            6 => {
                // Flip a byte into something printable or not.
                let mut b = lines[i].clone().into_bytes();
                if !b.is_empty() {
                    let k = rng.random_range(0..b.len());
                    b[k] = rng.random_range(0..128u8);
                }
                lines[i] = String::from_utf8_lossy(&b).into_owned();
            }
            _ => {
                // Truncate the line.
                let n = lines[i].chars().count();
                let keep = rng.random_range(0..=n);
                lines[i] = lines[i].chars().take(keep).collect();
            }
        }
    }
    let mut out = lines.join("\n");
    if rng.random_bool(0.5) {
        out.push('\n');
    }
    out
}

/// Parses and plans `src`; panics become a failure naming the seed.
fn judge(seed: u64, path: &Path, src: &str) -> Result<(), String> {
    let outcome = std::panic::catch_unwind(|| {
        let env = |k: &str| (k == "HOME").then(|| "/home/x".to_owned());
        match parse_str(path, src) {
            Err(d) => {
                if d.line == 0 {
                    return Err(format!("a parse error without a position: {d}"));
                }
                Ok(())
            }
            Ok(file) => {
                let loaded = vec![SuiteSource {
                    path: path.to_path_buf(),
                    source: src.to_owned(),
                    file,
                }];
                match build_with_env(&loaded, &PlanOptions::default(), &env) {
                    Ok(_) => Ok(()),
                    Err(ds) => match ds.0.iter().find(|d| d.line == 0) {
                        Some(d) => Err(format!("a plan error without a position: {d}")),
                        None => Ok(()),
                    },
                }
            }
        }
    });
    match outcome {
        Ok(r) => r.map_err(|e| format!("seed {seed}: {e}\n--- input ---\n{src}")),
        Err(_) => Err(format!("seed {seed}: panicked\n--- input ---\n{src}")),
    }
}

/// The seeds to run: `TMINUS_FUZZ_SEED` alone, or `BASE_SEED` and the next
/// `$cases_var` (default `default`).
fn seeds(cases_var: &str, default: u64) -> Vec<u64> {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    match env("TMINUS_FUZZ_SEED") {
        Some(s) => vec![s],
        None => (0..env(cases_var).unwrap_or(default))
            .map(|i| BASE_SEED + i)
            .collect(),
    }
}

#[test]
fn mutated_suites_never_panic_and_always_point_at_a_position() {
    let suites = shipped_suites();
    assert!(!suites.is_empty());
    quiet_panics_on_fuzz_threads();
    let seeds = seeds("TMINUS_FUZZ_CASES", 20_000);
    // Cases are independent: spread them over the machine's cores.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = seeds.len().div_ceil(workers).max(1);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = seeds
            .chunks(chunk)
            .map(|part| {
                let suites = &suites;
                scope.spawn(move || {
                    FUZZ_THREAD.with(|f| f.set(true));
                    let mut failures = Vec::new();
                    for &seed in part {
                        let mut rng = StdRng::seed_from_u64(seed);
                        let (path, text) = &suites[rng.random_range(0..suites.len())];
                        let src = mutate(&mut rng, text);
                        if let Err(e) = judge(seed, path, &src) {
                            failures.push(e);
                            if failures.len() >= 5 {
                                break;
                            }
                        }
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

thread_local! {
    static FUZZ_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Panics of the fuzz's own threads are caught and reported with their seed,
/// so the hook prints nothing for them. Every other test of the `it` binary
/// runs in this process at the same time: their panics still go to the hook
/// that was there (libtest's capture), or a failing test would fail with no
/// message at all (seen once: a global quiet hook swallowed another test's).
fn quiet_panics_on_fuzz_threads() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !FUZZ_THREAD.with(|f| f.get()) {
                previous(info);
            }
        }));
    });
}

// ---- merge inputs (issue 24 item 3) ----

use tminus::families::load::merge;
use tminus::families::load::shard::{ShardKind, ShardManifest, ShardSpec};
use tminus::families::load::stats::{new_hist, HlogFile};

const MERGE_SUITE: &str = "suite: f\nload:\n  id: b\n  users: 2\n  hatch_rate: 10\n  iterations: 3\n  max_rate: 100/s\n  requests:\n    - name: a\n      request: { path: /a }\n    - name: c\n      request: { path: /c }\n";

/// Values a hostile shard file might hold in any field.
fn hostile_value(rng: &mut StdRng) -> serde_json::Value {
    use serde_json::json;
    match rng.random_range(0..22) {
        0 => json!(0),
        1 => json!(-1),
        2 => json!(1e300),
        3 => json!(-1e300),
        4 => json!(u64::MAX),
        5 => json!(i64::MIN),
        6 => json!(1u64 << 53),
        7 => json!(10_001),
        8 => json!(3),
        9 => json!("../../etc/passwd"),
        10 => json!("/dev/zero"),
        11 => json!("/proc/self/fd/0"),
        12 => json!(""),
        13 => json!("é".repeat(40)),
        14 => json!("x".repeat(5000)),
        15 => json!(null),
        16 => json!([]),
        17 => json!({}),
        18 => json!(true),
        19 => json!(0.5),
        20 => json!({ "index": 3, "count": 2 }),
        _ => json!({ "200": u64::MAX, "429": 1 }),
    }
}

/// Sets a random leaf (or object member) of `v` to a hostile value.
fn mutate_json(rng: &mut StdRng, v: &mut serde_json::Value) {
    let deeper = rng.random_bool(0.7);
    match v {
        serde_json::Value::Object(m) if !m.is_empty() && deeper => {
            let k = m.keys().nth(rng.random_range(0..m.len())).unwrap().clone();
            mutate_json(rng, m.get_mut(&k).unwrap());
        }
        serde_json::Value::Array(a) if !a.is_empty() && deeper => {
            let i = rng.random_range(0..a.len());
            mutate_json(rng, &mut a[i]);
        }
        _ => *v = hostile_value(rng),
    }
}

/// A histogram's V2 header fields rewritten, or the payload cut or grown.
fn mutate_histogram(rng: &mut StdRng, b64: &str) -> String {
    use base64::Engine as _;
    let e = base64::engine::general_purpose::STANDARD;
    let mut b = e.decode(b64).unwrap_or_default();
    if b.len() < 8 {
        return b64.to_owned();
    }
    // Decompress is beyond a mutator; the outer length, cookie and bytes
    // are rewritten, or a plain V2 header declaring anything is put in.
    match rng.random_range(0..5) {
        0 => b[4..8].copy_from_slice(&rng.random::<u32>().to_be_bytes()),
        1 => b[0..4].copy_from_slice(&0x1c84_9313u32.to_be_bytes()),
        2 => b.truncate(rng.random_range(0..b.len())),
        3 => {
            let i = rng.random_range(0..b.len());
            b[i] = rng.random();
        }
        _ => {
            let mut v2 = 0x1c84_9313u32.to_be_bytes().to_vec();
            v2.extend_from_slice(&rng.random::<u32>().to_be_bytes());
            v2.extend_from_slice(&0u32.to_be_bytes());
            v2.extend_from_slice(&rng.random_range(0..8u32).to_be_bytes());
            v2.extend_from_slice(&rng.random_range(0..3u64).to_be_bytes());
            let high = [u64::MAX, 1 << 40, 600_000_000, 2][rng.random_range(0..4)];
            v2.extend_from_slice(&high.to_be_bytes());
            v2.extend_from_slice(&1.0f64.to_be_bytes());
            v2.extend((0..rng.random_range(0..64)).map(|_| rng.random::<u8>()));
            b = v2;
        }
    }
    e.encode(b)
}

/// An interval log mutated by line (as a suite is), by time, by number or
/// by histogram.
fn mutate_hlog(rng: &mut StdRng, text: &str) -> String {
    if rng.random_bool(0.25) {
        return mutate(rng, text);
    }
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for _ in 0..rng.random_range(1..=3) {
        let i = rng.random_range(0..lines.len().max(1));
        let Some(line) = lines.get_mut(i) else { break };
        match rng.random_range(0..3) {
            0 => {
                if let Some((head, hist)) = line.rsplit_once(',') {
                    *line = format!("{head},{}", mutate_histogram(rng, hist));
                }
            }
            1 => {
                let n = ["1e300", "18446744073709551616", "-1", "99999999999.999"];
                *line = format!(
                    "#[BaseTime: {} (seconds since epoch)]",
                    n[rng.random_range(0..4)]
                );
            }
            _ => {
                // A number field of an interval replaced.
                let mut f: Vec<String> = line.split(',').map(str::to_owned).collect();
                if f.len() > 2 {
                    let k = rng.random_range(0..f.len() - 1);
                    f[k] = ["18446744073709551615.0", "-5", "nan", "1e300"][rng.random_range(0..4)]
                        .into();
                }
                *line = f.join(",");
            }
        }
    }
    lines.join("\n") + "\n"
}

/// The seed: two valid shards of MERGE_SUITE, as (relative path, text).
fn merge_seed(suite: &Path) -> Vec<(String, String)> {
    use sha2::Digest as _;
    let tmp = tempfile::tempdir().unwrap();
    let started = SystemTime::now() - Duration::from_secs(30);
    let t = started
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let mut files = Vec::new();
    for index in 1..=2usize {
        let stem = format!("s{index}");
        let mut hists = Vec::new();
        for k in 0..2u64 {
            let mut h = new_hist();
            for v in 0..(1 + k) {
                h.record(500 + v * 7).unwrap();
            }
            hists.push(h);
        }
        let kinds_path = tmp.path().join(format!("{stem}.kinds.hlog"));
        let mut kinds = HlogFile::create(&kinds_path, started, "seed").unwrap();
        for (i, h) in hists.iter().enumerate() {
            let tags = [
                format!("k{i}.raw"),
                format!("k{i}.corrected"),
                format!("k{i}.lateness"),
            ];
            kinds
                .write_tagged(
                    started,
                    Duration::from_secs(1),
                    &[(&tags[0], h), (&tags[1], h), (&tags[2], h)],
                )
                .unwrap();
        }
        let log_path = tmp.path().join(format!("{stem}.hlog"));
        let mut log = HlogFile::create(&log_path, started, "seed").unwrap();
        log.write(started, Duration::from_secs(1), &hists[0], &hists[1])
            .unwrap();
        let kind = |name: &str, n: u64| ShardKind {
            name: name.into(),
            requests: n,
            failed: 0,
            responses_429: 0,
            statuses: [(200u16, n)].into_iter().collect(),
            errors: Default::default(),
        };
        let m = ShardManifest {
            format: "tminus-load-shard".into(),
            version: 1,
            suite: "f".into(),
            suite_file: suite.to_path_buf(),
            suite_digest: hex::encode(sha2::Sha256::digest(MERGE_SUITE.as_bytes())),
            load: "b".into(),
            shard: ShardSpec { index, count: 2 },
            target: "http://127.0.0.1:9".into(),
            start_at: None,
            started_unix_s: t,
            ended_unix_s: t + 1.0,
            elapsed_s: 1.0,
            scheduled_requests: 3,
            requests: 3,
            cancelled: false,
            hit_max_duration: false,
            engine_error: None,
            distinct_keys_succeeded: 0,
            duplicate_retries: 0,
            effects: None,
            kinds: vec![kind("a", 1), kind("c", 2)],
            interval_log: format!("{stem}.hlog"),
            histograms: format!("{stem}.kinds.hlog"),
        };
        files.push((
            format!("shard-{index}/{stem}.shard.json"),
            serde_json::to_string_pretty(&m).unwrap(),
        ));
        for p in [kinds_path, log_path] {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            files.push((
                format!("shard-{index}/{name}"),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
    files
}

/// Mutates one to three of the seed files.
fn mutate_shard_files(rng: &mut StdRng, seed: &[(String, String)]) -> Vec<(String, String)> {
    let mut files = seed.to_vec();
    for _ in 0..rng.random_range(1..=3) {
        let i = rng.random_range(0..files.len());
        let (name, text) = &mut files[i];
        if name.ends_with(".shard.json") {
            match serde_json::from_str::<serde_json::Value>(text) {
                Ok(mut v) if rng.random_bool(0.85) => {
                    mutate_json(rng, &mut v);
                    *text = serde_json::to_string(&v).unwrap();
                }
                _ => *text = mutate(rng, text),
            }
        } else {
            *text = mutate_hlog(rng, text);
        }
    }
    files
}

#[test]
fn mutated_shard_files_never_panic_nor_allocate_what_they_declare() {
    use tminus::plan::{build_with_env, PlanOptions};
    let root = tempfile::tempdir().unwrap();
    let suite = root.path().join("f.yaml");
    std::fs::write(&suite, MERGE_SUITE).unwrap();
    let file = parse_str(&suite, MERGE_SUITE).unwrap();
    let loaded = vec![SuiteSource {
        path: suite.clone(),
        source: MERGE_SUITE.to_owned(),
        file,
    }];
    let opts = PlanOptions {
        target: Some("http://127.0.0.1:9".into()),
        ..PlanOptions::default()
    };
    let plan = build_with_env(&loaded, &opts, &|_| None).unwrap_or_else(|d| panic!("{d:?}"));
    let load = plan.suites[0].load.clone().expect("a load");
    let seed = merge_seed(&suite);
    let seeds = seeds("TMINUS_FUZZ_MERGE_CASES", 2_000);
    // The valid seed merges.
    let run = |case: &Path, files: &[(String, String)]| -> Result<usize, String> {
        for (name, text) in files {
            let p = case.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        let shards = merge::find(&[case.to_path_buf()]).and_then(merge::check_set)?;
        let figures = merge::merge_figures(&load, &shards)?;
        let results = merge::judge_merged(
            &load,
            "f",
            "http://127.0.0.1:9",
            &shards,
            &figures,
            &case.join("merged"),
            &plan.redactor,
        );
        Ok(results.len())
    };
    let first = root.path().join("seed");
    assert_eq!(run(&first, &seed), Ok(1), "the seed set must merge");
    let mut failures = Vec::new();
    for s in seeds {
        let mut rng = StdRng::seed_from_u64(s);
        let files = mutate_shard_files(&mut rng, &seed);
        let case = root.path().join(format!("case-{s}"));
        LARGEST.store(0, Ordering::Relaxed);
        WATCHING.with(|w| w.set(true));
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&case, &files)));
        WATCHING.with(|w| w.set(false));
        let largest = LARGEST.load(Ordering::Relaxed);
        let shown = || {
            files
                .iter()
                .map(|(n, t)| format!("--- {n} ---\n{}", t.chars().take(3000).collect::<String>()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        match outcome {
            Err(_) => failures.push(format!("seed {s}: panicked\n{}", shown())),
            Ok(Err(e)) if e.is_empty() => failures.push(format!("seed {s}: an empty error")),
            _ if largest > MAX_ONE_ALLOCATION => failures.push(format!(
                "seed {s}: one allocation of {largest} bytes\n{}",
                shown()
            )),
            _ => {}
        }
        let _ = std::fs::remove_dir_all(&case);
        if failures.len() >= 3 {
            break;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
