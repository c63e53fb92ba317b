//! `load.observe` end to end (issue 27 part 3): the real binary reads the
//! reference's own `/metrics` around a burst, itself and through a real
//! Prometheus server (Debian's `prometheus`, started here on 127.0.0.1),
//! and judges thresholds on what the target's queue did. A healthy target
//! passes; one that really queues (4 workers at 50 ms under 120/s) fails
//! `max(queue) < 5`; what cannot be shown (no data, stale scrapes, an
//! aggregation whose scrapes cannot be counted, an unreachable source) is
//! an error, never a pass.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const BURST: &str = r#"
load:
  id: burst
  users: 4
  max_rate: 120/s
  hold: 3s
  max_duration: 60s
  requests:
    - { name: list, request: { path: /public/v1/contacts, headers: { Authorization: "Bearer ref_load_key" } } }
"#;

fn write_suite(dir: &Path, name: &str, observe: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, format!("suite: {name}\n{BURST}{observe}")).unwrap();
    path
}

fn run(dir: &Path, suite: &Path, url: &str) -> std::process::Output {
    tminus(
        dir,
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            url,
            "--report-dir",
            dir.to_str().unwrap(),
            "--json",
            dir.join("report.json").to_str().unwrap(),
        ],
        &[],
        Duration::from_secs(120),
    )
}

/// (verdict, whole result as JSON) of `id`.
fn result(dir: &Path, id: &str) -> (String, String) {
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let c = report["suites"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no result {id}: {report}"))
        .clone();
    (
        c["verdict"].as_str().unwrap_or_default().to_owned(),
        c.to_string(),
    )
}

/// The burst's JSON summary, checked against its schema.
fn summary(dir: &Path, suite: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(format!("load-{suite}-burst.json"))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("schema/load-summary.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{v:#}");
    v
}

fn reference(max_concurrency: Option<usize>) -> RefHandle {
    RefHandle::start_with(tminus::reference::ReferenceConfig {
        latency: Duration::from_millis(50),
        max_concurrency,
        ..Default::default()
    })
}

const METRICS: &str = r#"
  observe:
    metrics: /metrics
    interval: 250ms
    series:
      queue: tminus_reference_queue_depth
      served: tminus_reference_requests_total
      missing: tminus_no_such_metric
    thresholds:
      - max(queue) < 5
      - increase(served) > 100
      - after(queue) < 1
      - max(missing) < 1
"#;

/// With `metrics:` tminus polls the page itself: the healthy target's
/// queue stays empty, the saturated one's grows past the limit; the
/// counter's increase is the burst's requests; a series the page lacks is
/// an error. The series reach the JSON summary and the HTML report.
#[test]
fn metrics_pages_show_a_queue_that_grows_only_on_a_saturated_target() {
    let _alone = common::alone();
    for (saturated, pool) in [(false, None), (true, Some(4))] {
        let r = reference(pool);
        let dir = tempfile::tempdir().unwrap();
        let suite = write_suite(dir.path(), "obs", METRICS);
        let out = run(dir.path(), &suite, &r.url);
        let (queue, qmsg) = result(dir.path(), "burst.observe.max_queue");
        let expected = if saturated { "fail" } else { "pass" };
        assert_eq!(
            queue,
            expected,
            "saturated={saturated}: {qmsg}\n{}",
            stderr(&out)
        );
        assert!(qmsg.contains("during the burst"), "{qmsg}");
        let (served, smsg) = result(dir.path(), "burst.observe.increase_served");
        assert_eq!(served, "pass", "{smsg}");
        let (missing, mmsg) = result(dir.path(), "burst.observe.max_missing");
        assert_eq!(missing, "error", "{mmsg}");
        assert!(mmsg.contains("matched no sample"), "{mmsg}");
        // An error among the results: tminus could not judge everything.
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        let s = summary(dir.path(), "obs");
        let q = &s["observed"]["series"]["queue"];
        assert!(q["fresh_samples_during"].as_u64().unwrap() >= 6, "{q}");
        assert!(
            q["points"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p[0].as_f64().unwrap() < 0.0),
            "a reading before the burst: {q}"
        );
        if saturated {
            let peak = q["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p[1].as_f64().unwrap())
                .fold(0.0, f64::max);
            assert!(peak >= 5.0, "{q}");
        }
    }
}

/// A source that does not answer stops the burst before any load is sent:
/// every result is an error naming the address.
#[test]
fn an_unreachable_source_is_an_error_and_no_load_is_sent() {
    let _alone = common::alone();
    let r = reference(None);
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(
        dir.path(),
        "gone",
        "  observe:\n    prometheus: http://127.0.0.1:9\n    series: { q: up }\n    thresholds: [ \"max(q) < 1\" ]\n",
    );
    let out = run(dir.path(), &suite, &r.url);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    for id in ["burst.delivered", "burst.observe.max_q"] {
        let (v, msg) = result(dir.path(), id);
        assert_eq!(v, "error", "{msg}");
        assert!(msg.contains("127.0.0.1:9"), "{msg}");
        assert!(msg.contains("the burst was not sent"), "{msg}");
    }
    let page = get(&format!("{}/metrics", r.url)).expect("the reference's /metrics");
    assert!(
        page.contains("\ntminus_reference_requests_total 0\n"),
        "{page}"
    );
}

/// A real Prometheus server scraping the reference(s), killed (by its PID)
/// when dropped.
struct Prometheus {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts Prometheus with `jobs` (name, host:port, scrape interval) and
/// waits until every job has been scraped twice. None when the binary is
/// missing and the run does not require it (`.ci/run` does).
fn prometheus(jobs: &[(&str, &str, &str)]) -> Option<Prometheus> {
    let bin = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let Some(bin) = bin else {
        assert!(
            std::env::var_os("TMINUS_REQUIRE_PROMETHEUS").is_none(),
            "TMINUS_REQUIRE_PROMETHEUS is set but no prometheus binary is installed"
        );
        eprintln!("prometheus is not installed (apt-get install prometheus): skipping");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut config = String::from("scrape_configs:\n");
    for (name, addr, every) in jobs {
        config.push_str(&format!(
            "  - job_name: {name}\n    scrape_interval: {every}\n    scrape_timeout: {every}\n    static_configs: [ {{ targets: [\"{addr}\"] }} ]\n"
        ));
    }
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let child = Command::new(bin)
        .arg(format!(
            "--config.file={}",
            dir.path().join("prometheus.yml").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .expect("start prometheus");
    let log = dir.path().join("prometheus.log");
    let p = Prometheus {
        child,
        url,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "prometheus did not scrape every job within 60 s:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        let scraped = get(&format!(
            "{}/api/v1/query?query=count_over_time%28up%5B1m%5D%29%20%3E%3D%202",
            p.url
        ))
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["data"]["result"].as_array().map(Vec::len));
        if scraped == Some(jobs.len()) {
            return Some(p);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// One GET (2 s at most); the body, or None.
fn get(url: &str) -> Option<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .no_proxy()
            .build()
            .ok()?;
        c.get(url).send().await.ok()?.text().await.ok()
    })
}

fn host_port(url: &str) -> &str {
    url.trim_start_matches("http://").trim_end_matches('/')
}

/// Through a real Prometheus: a selector's freshness comes from its sample
/// times, an aggregation's from its job's `up`; the saturated target's
/// queue fails the threshold, the healthy one's passes; a job scraped every
/// 10 s shows too few samples in the burst (an error, not a pass), and an
/// aggregation with no job to count is an error.
#[test]
fn a_real_prometheus_shows_the_queue_and_refuses_stale_or_unverifiable_series() {
    let _alone = common::alone();
    let healthy = reference(None);
    let saturated = reference(Some(4));
    let Some(prom) = prometheus(&[
        ("healthy", host_port(&healthy.url), "500ms"),
        ("saturated", host_port(&saturated.url), "500ms"),
        ("slow", host_port(&saturated.url), "10s"),
    ]) else {
        return;
    };
    for (job, target, expected) in [
        ("healthy", &healthy, "pass"),
        ("saturated", &saturated, "fail"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let observe = format!(
            r#"
  observe:
    prometheus: {url}
    interval: 500ms
    after: 1s
    job: {job}
    series:
      queue: tminus_reference_queue_depth{{job="{job}"}}
      rate: sum(rate(tminus_reference_requests_total{{job="{job}"}}[2s]))
      stale: tminus_reference_queue_depth{{job="slow"}}
    thresholds:
      - max(queue) < 5
      - max(rate) > 40
      - max(stale) < 1000000
"#,
            url = prom.url
        );
        let suite = write_suite(dir.path(), job, &observe);
        let out = run(dir.path(), &suite, &target.url);
        let (queue, qmsg) = result(dir.path(), "burst.observe.max_queue");
        assert_eq!(queue, expected, "{job}: {qmsg}\n{}", stderr(&out));
        assert!(qmsg.contains("Prometheus at"), "{qmsg}");
        let (rate, rmsg) = result(dir.path(), "burst.observe.max_rate");
        assert_eq!(rate, "pass", "{job}: {rmsg}");
        let (stale, smsg) = result(dir.path(), "burst.observe.max_stale");
        assert_eq!(stale, "error", "{job}: {smsg}");
        assert!(smsg.contains("not evidence"), "{smsg}");
        let s = summary(dir.path(), job);
        assert!(
            s["observed"]["series"]["queue"]["fresh_samples_during"]
                .as_u64()
                .unwrap()
                >= 4,
            "{s}"
        );
    }
    // An aggregation whose labels are gone and no `job:` to count scrapes by.
    let dir = tempfile::tempdir().unwrap();
    let observe = format!(
        "  observe:\n    prometheus: {}\n    interval: 500ms\n    after: 1s\n    series: {{ total: sum(tminus_reference_queue_depth) }}\n    thresholds: [ \"max(total) < 1000000\" ]\n",
        prom.url
    );
    let suite = write_suite(dir.path(), "agg", &observe);
    let out = run(dir.path(), &suite, &healthy.url);
    let (v, msg) = result(dir.path(), "burst.observe.max_total");
    assert_eq!(v, "error", "{msg}");
    assert!(msg.contains("give `observe.job`"), "{msg}");
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

/// `--shard` refuses a burst with `observe:` up front (every shard would
/// read the same signals, and `tminus merge` judges none).
#[test]
fn a_sharded_burst_refuses_observe() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(
        dir.path(),
        "sharded",
        "  observe:\n    metrics: /metrics\n    series: { q: tminus_reference_queue_depth }\n    thresholds: [ \"max(q) < 1\" ]\n",
    );
    let out = tminus(
        dir.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--target",
            "http://127.0.0.1:9",
            "--shard",
            "1/2",
        ],
        &[],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("has `observe:`"), "{}", stderr(&out));
}
