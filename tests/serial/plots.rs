//! Issue 15, part 3: the pictures of a burst. A real burst of two request
//! kinds runs against the reference on 127.0.0.1:0 (once, shared by the
//! tests); its HTML report must carry the SVG plots, each well-formed XML
//! with a title and the expected series, nothing to fetch or run; and its
//! stderr, a pipe and so not a terminal, must carry the plain progress line.

use crate::common;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use common::{stderr, tminus, RefHandle};

/// Long enough (1 s ramp + 6 s hold) for one progress line at 5 s.
const SUITE: &str = r#"
suite: plots
target:
  base_url: ${env.TMINUS_TARGET:-}
  headers:
    Authorization: "Bearer ${secret.PLOTS_LOAD_KEY}"
load:
  id: burst
  users: 2
  hatch_rate: 2
  hold: 6s
  max_rate: 40/s
  requests:
    - name: list
      weight: 3
      request: { path: /public/v1/messages, query: { limit: 5 } }
    - name: count
      request: { path: /public/v1/messages/count }
  thresholds:
    - p99 < 2s
"#;

struct Burst {
    html: String,
    stderr: String,
    _dir: tempfile::TempDir,
}

/// The burst, run once for every test here.
fn burst() -> &'static Burst {
    static RUN: OnceLock<Burst> = OnceLock::new();
    RUN.get_or_init(|| {
        let reference = RefHandle::start(&[]);
        let dir = tempfile::tempdir().unwrap();
        let suite = dir.path().join("plots.yaml");
        std::fs::write(&suite, SUITE).unwrap();
        let reports: PathBuf = dir.path().join("reports");
        let out = tminus(
            dir.path(),
            &[
                "run",
                suite.to_str().unwrap(),
                "--target",
                &reference.url,
                "--report-dir",
                reports.to_str().unwrap(),
            ],
            &[("PLOTS_LOAD_KEY", "ref_load_key")],
            Duration::from_secs(60),
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "stderr:\n{err}");
        Burst {
            html: std::fs::read_to_string(reports.join("report.html")).expect("report.html"),
            stderr: err,
            _dir: dir,
        }
    })
}

/// Every `<svg>…</svg>` of the page.
fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("an <svg> is closed") + start + 6;
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}

/// The drawn series of an SVG: each polyline's stroke and point count.
/// The legend's samples are two-point lines; series have more.
fn series(doc: &roxmltree::Document<'_>) -> Vec<(String, usize)> {
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .map(|n| {
            let points = n
                .attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .count();
            (n.attribute("stroke").unwrap_or("").to_owned(), points)
        })
        .filter(|(_, points)| *points > 2)
        .collect()
}

const RAW: &str = "#1F77B4";
const CORRECTED: &str = "#D62728";

#[test]
fn the_html_report_plots_each_distribution_and_the_intervals_as_svg() {
    let _alone = common::alone();
    let b = burst();
    let svgs = svgs(&b.html);
    // Over time, all requests, and the two kinds.
    assert_eq!(svgs.len(), 4, "{}", b.html);
    let mut titles = Vec::new();
    for svg in &svgs {
        let doc = roxmltree::Document::parse(svg)
            .unwrap_or_else(|e| panic!("not well-formed XML ({e}):\n{svg}"));
        let root = doc.root_element();
        assert!(root.has_tag_name("svg"));
        assert_eq!(root.attribute("role"), Some("img"));
        assert!(root.attribute("viewBox").is_some(), "scales for print");
        let title = root
            .children()
            .find(|n| n.has_tag_name("title"))
            .and_then(|n| n.text())
            .expect("a <title> first");
        titles.push(title.to_owned());
        // Offline: nothing to fetch, nothing to run, no font file.
        for bad in ["<script", "href", "url(", "@font-face", "@import", "<image"] {
            assert!(!svg.contains(bad), "{bad} in {svg}");
        }
        let lines = series(&doc);
        let strokes: Vec<&str> = lines.iter().map(|(s, _)| s.as_str()).collect();
        if title.ends_with("latency by percentile") {
            // Raw and corrected, one line each, stepping through the percentiles.
            assert_eq!(strokes, [RAW, CORRECTED], "{title}: {lines:?}");
            // The axis as HdrHistogram draws it.
            let text: String = doc
                .descendants()
                .filter_map(|n| n.text())
                .collect::<Vec<_>>()
                .join(" ");
            for tick in ["0%", "90%", "99%"] {
                assert!(
                    text.contains(tick),
                    "{title}: tick {tick} missing in {text}"
                );
            }
        } else {
            // Latency (raw p99, corrected p99 and p50) and throughput
            // (answered, failed), one point a second for ~7 s.
            assert_eq!(lines.len(), 5, "{title}: {lines:?}");
            assert!(strokes.contains(&RAW) && strokes.contains(&CORRECTED));
            assert!(lines.iter().all(|(_, n)| *n >= 5), "{title}: {lines:?}");
        }
    }
    assert_eq!(
        titles,
        [
            "plots / burst: latency and throughput over time",
            "plots / burst: all requests: latency by percentile",
            "plots / burst: list: latency by percentile",
            "plots / burst: count: latency by percentile",
        ]
    );
    assert!(b.html.contains("<h2>Burst plots</h2>"));
    assert!(!b.html.contains("<script") && !b.html.contains("ref_load_key"));
}

#[test]
fn a_burst_on_a_pipe_prints_plain_progress_lines() {
    let _alone = common::alone();
    let b = burst();
    let lines: Vec<&str> = b
        .stderr
        .lines()
        .filter(|l| l.starts_with("load ") && l.contains(" req/s · p95 "))
        .collect();
    assert!(!lines.is_empty(), "no progress line:\n{}", b.stderr);
    // `load 5s/7s: 38 req/s · p95 6.9 ms (corrected) · 198 sent · 0 errors`
    let first = lines[0];
    let (head, rest) = first.split_once(": ").expect("elapsed: figures");
    assert!(
        head.starts_with("load 5s/") || head.starts_with("load 6s/"),
        "{first}"
    );
    let sent: u64 = rest
        .split(" · ")
        .find_map(|p| p.strip_suffix(" sent"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no request count in {first}"));
    assert!(sent > 0, "{first}");
    // No control sequences of a bar, no secret.
    assert!(!b.stderr.contains('\u{1b}'), "{}", b.stderr);
    assert!(!b.stderr.contains("ref_load_key"));
}
