//! `tminus compare` end to end (issue 27, release baselines), with real
//! processes: `tminus reference --latency 20ms` serves a small paced burst
//! (tests/suites/compare-burst.yaml) run twice into two report folders (an
//! unchanged rerun: exit 0), then against `--latency 60ms` (an injected
//! regression: exit 1 naming p95); bad input exits 2 and names it. `run
//! --baseline DIR` judges the same way as the run ends. Issue 38: the same
//! pairs in the other order give the mirrored verdict, `--calibrate`
//! records a noise band the later comparisons use and name, and a floor
//! (`--min-delta`, `min`) keeps a small change from being a regression.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::*;

/// Runs the burst into `dir`; `extra` adds options (`--baseline`).
fn burst_into(dir: &Path, url: &str, extra: &[&str]) -> std::process::Output {
    std::fs::create_dir_all(dir).unwrap();
    let suite = repo().join("tests/suites/compare-burst.yaml");
    run_with_json(dir, &suite, url, extra, &[]).1
}

/// `--baseline DIR` with [`THRESHOLDS`] as `--baseline-threshold`.
fn against(baseline: &Path) -> Vec<&str> {
    let mut v = vec!["--baseline", baseline.to_str().unwrap()];
    for t in THRESHOLDS.iter().filter(|t| !t.starts_with("--")) {
        v.extend(["--baseline-threshold", t]);
    }
    v
}

fn compare(cwd: &Path, baseline: &Path, run: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["compare", baseline.to_str().unwrap(), run.to_str().unwrap()];
    args.extend_from_slice(extra);
    tminus(cwd, &args, &[], Duration::from_secs(60))
}

/// Generous enough for a shared CI machine's drift between two runs, far
/// below the injected ×3.
const THRESHOLDS: &[&str] = &[
    "--threshold",
    "p95_regression < 50%",
    "--threshold",
    "error_rate_increase < 5%",
];

#[test]
fn an_unchanged_rerun_passes_and_a_slower_target_fails_on_p95() {
    let _alone = common::alone();
    let work = tempfile::tempdir().unwrap();
    let (base, rerun, slow) = (
        work.path().join("base"),
        work.path().join("rerun"),
        work.path().join("slow"),
    );
    {
        let fast = RefProcess::start(&["--latency", "20ms"]);
        let out = burst_into(&base, &fast.url, &[]);
        assert_eq!(out.status.code(), Some(0), "stderr:\n{}", stderr(&out));
        // `run --baseline`: the rerun is compared as it ends, and passes.
        let out = burst_into(&rerun, &fast.url, &against(&base));
        assert_eq!(
            out.status.code(),
            Some(0),
            "stdout:\n{}\nstderr:\n{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(stderr(&out).contains("no regression"), "{}", stderr(&out));
        assert!(rerun.join("compare.md").is_file() && rerun.join("compare.html").is_file());
    }
    {
        let slower = RefProcess::start(&["--latency", "60ms"]);
        // ... and a slower run fails on its baseline.
        let out = burst_into(&slow, &slower.url, &against(&base));
        assert_eq!(
            out.status.code(),
            Some(1),
            "stdout:\n{}\nstderr:\n{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            stdout(&out).contains("FAIL (p95_regression < 50%)"),
            "{}",
            stdout(&out)
        );
    }
    // A baseline that is not there is bad input before anything is sent.
    let suite = repo().join("tests/suites/compare-burst.yaml");
    let args = [
        "run",
        suite.to_str().unwrap(),
        "--target",
        "http://127.0.0.1:9",
        "--baseline",
        "/nonexistent/dir",
    ];
    let out = tminus(work.path(), &args, &[], Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--baseline: cannot read /nonexistent/dir"),
        "{}",
        stderr(&out)
    );
    assert!(base.join("load-compare-steady.kinds.hlog").is_file());

    let md = work.path().join("out/compare.md");
    let html = work.path().join("out/compare.html");
    let out = compare(
        work.path(),
        &base,
        &rerun,
        &[
            THRESHOLDS,
            &[
                "--markdown",
                md.to_str().unwrap(),
                "--html",
                html.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let (so, se) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{so}\nstderr:\n{se}");
    assert!(se.contains("no regression"), "{se}");
    for row in [
        "all requests",
        "request kind `list`",
        "p95",
        "raw p99",
        "throughput",
        "error rate",
    ] {
        assert!(so.contains(row), "no `{row}` in:\n{so}");
    }
    assert!(
        so.contains("pass, no change (p95_regression < 50%)")
            || so.contains("pass, below the floor (p95_regression < 50%)"),
        "{so}"
    );
    assert!(so.contains("noise"), "{so}");
    let md_text = std::fs::read_to_string(&md).unwrap();
    assert!(
        md_text.starts_with("## tminus compare: no regression"),
        "{md_text}"
    );
    assert!(md_text.contains("| p95 |"), "{md_text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<svg") && page.contains("run (corrected)"),
        "no plot"
    );

    let out = compare(work.path(), &base, &slow, THRESHOLDS);
    let (so, se) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "stdout:\n{so}\nstderr:\n{se}");
    assert!(se.starts_with("regression:"), "{se}");
    assert!(se.contains("`p95_regression < 50%` broke"), "{se}");
    assert!(so.contains("FAIL (p95_regression < 50%)"), "{so}");

    // The same folders give the same table (a fixed seed).
    let again = compare(work.path(), &base, &slow, THRESHOLDS);
    assert_eq!(stdout(&again), so);

    // Issue 38: the other order mirrors the verdict: the rerun is no
    // change either way; the slower run, taken as the baseline, makes the
    // first an improvement.
    let out = compare(work.path(), &rerun, &base, THRESHOLDS);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = compare(work.path(), &slow, &base, THRESHOLDS);
    let (so, se) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{so}\nstderr:\n{se}");
    assert!(se.contains("improvement: "), "{se}");
    assert!(
        so.contains("pass, improvement (p95_regression < 50%)"),
        "{so}"
    );

    // A floor above the change: never a regression, and said so.
    let floored = [THRESHOLDS, &["--min-delta", "200ms"]].concat();
    let out = compare(work.path(), &base, &slow, &floored);
    let (so, se) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{so}\nstderr:\n{se}");
    assert!(se.contains("below the floor"), "{se}");
    let out = compare(
        work.path(),
        &base,
        &slow,
        &["--threshold", "p95_regression < 50% min 5/s"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not in the unit"), "{}", stderr(&out));

    // Calibration: two runs of one release record their noise band in the
    // first folder; later comparisons with it name it and still fail ×3.
    let out = tminus(
        work.path(),
        &[
            "compare",
            "--calibrate",
            base.to_str().unwrap(),
            rerun.to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(60),
    );
    let (so, se) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "stdout:\n{so}\nstderr:\n{se}");
    assert!(so.contains("noise band of two runs"), "{so}");
    assert!(se.contains("tminus-noise.json written"), "{se}");
    let noise: serde_json::Value =
        serde_json::from_slice(&std::fs::read(base.join("tminus-noise.json")).unwrap()).unwrap();
    assert_eq!(noise["version"], 1);
    assert!(noise["bands"].as_array().unwrap().len() >= 9, "{noise}");
    for (a, b) in [(&base, &rerun), (&rerun, &base)] {
        let out = compare(work.path(), a, b, THRESHOLDS);
        let so = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{so}\n{}", stderr(&out));
        assert!(
            so.contains("calibrated by `tminus compare --calibrate`"),
            "{so}"
        );
        assert!(so.contains("calibrated band"), "{so}");
    }
    let out = compare(work.path(), &base, &slow, THRESHOLDS);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // The file is checked like every other.
    let mut bad = noise.clone();
    bad["bands"][0]["band"] = serde_json::json!(-1.0);
    std::fs::write(base.join("tminus-noise.json"), bad.to_string()).unwrap();
    let out = compare(work.path(), &base, &rerun, THRESHOLDS);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("tminus-noise.json: band 1"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        base.join("tminus-noise.json"),
        b"{\"version\": 1, \"extra\": 2}",
    )
    .unwrap();
    let out = compare(work.path(), &base, &rerun, THRESHOLDS);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a tminus noise band file"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(base.join("tminus-noise.json")).unwrap();

    // Bad input is exit 2, named.
    let empty = work.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = compare(work.path(), &base, &empty, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no burst summary"),
        "{}",
        stderr(&out)
    );
    let out = compare(work.path(), &base, &work.path().join("none"), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = compare(work.path(), &base, &rerun, &["--threshold", "p95 < 10%"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown measure `p95`"),
        "{}",
        stderr(&out)
    );
    let out = compare(
        work.path(),
        &base,
        &rerun,
        &["--threshold", "nope: p95_regression < 10%"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("request kind `nope`"),
        "{}",
        stderr(&out)
    );
    let input = base.join("load-compare-steady.json");
    let out = compare(
        work.path(),
        &base,
        &rerun,
        &["--markdown", input.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("would overwrite"), "{}", stderr(&out));

    // A burst in only one folder is named, not skipped.
    let other = work.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    for f in ["load-compare-steady.json", "load-compare-steady.kinds.hlog"] {
        std::fs::copy(rerun.join(f), other.join(f)).unwrap();
    }
    let summary = std::fs::read_to_string(other.join("load-compare-steady.json")).unwrap();
    std::fs::write(
        other.join("load-compare-steady.json"),
        summary.replacen("\"suite\": \"compare\"", "\"suite\": \"renamed\"", 1),
    )
    .unwrap();
    let out = compare(work.path(), &base, &other, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let se = stderr(&out);
    assert!(
        se.contains("only in the baseline")
            && se.contains("`compare/steady`")
            && se.contains("`renamed/steady`"),
        "{se}"
    );

    // A histogram file that does not match its summary is refused.
    std::fs::write(other.join("load-compare-steady.kinds.hlog"), b"not a log\n").unwrap();
    let out = compare(work.path(), &other, &other, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("kinds.hlog"), "{}", stderr(&out));
}
