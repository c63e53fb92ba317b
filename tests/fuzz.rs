//! A mutation fuzzer for the suite parser and planner (issue "Hostile
//! targets", fuzzing): the shipped suites, mutated by byte, line and token,
//! go through `parse_str` and `plan::build_with_env` in-process. No input may
//! panic, and every input ends either in a plan or in diagnostics that point
//! at a line and column.
//!
//! Deterministic: case `i` uses seed `BASE_SEED + i`, printed on failure, so
//! a failing case can be replayed alone (`TMINUS_FUZZ_SEED=N`). The number of
//! cases is `TMINUS_FUZZ_CASES` (default 20,000, which `cargo test` runs in
//! CI in well under two minutes).

use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tminus::plan::{build_with_env, PlanOptions};
use tminus::suite::read::parse_str;
use tminus::suite::SuiteSource;

const BASE_SEED: u64 = 0x7e57_5eed;

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

#[test]
fn mutated_suites_never_panic_and_always_point_at_a_position() {
    let suites = shipped_suites();
    assert!(!suites.is_empty());
    let cases: u64 = std::env::var("TMINUS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let only: Option<u64> = std::env::var("TMINUS_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok());
    // Quiet the default hook: panics are caught and reported with their seed.
    std::panic::set_hook(Box::new(|_| {}));
    let seeds: Vec<u64> = match only {
        Some(s) => vec![s],
        None => (0..cases).map(|i| BASE_SEED + i).collect(),
    };
    // Cases are independent: spread them over the machine's cores.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = seeds.len().div_ceil(workers).max(1);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = seeds
            .chunks(chunk)
            .map(|part| {
                let suites = &suites;
                scope.spawn(move || {
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
    let _ = std::panic::take_hook();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
