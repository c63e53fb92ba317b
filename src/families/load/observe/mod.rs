//! `load.observe` (issue 27 part 3): the target's own signals during the
//! burst. The seed's T-3 rehearsal asks that "p95, pools and queues stay
//! in the green zone"; the latency tminus measures is only half of that.
//!
//! tminus reads named series before, during and after the burst, from a
//! Prometheus HTTP API (`prometheus:`, any PromQL, read back with range
//! queries once the burst is over) or from a `/metrics` page itself
//! (`metrics:`, polled every `interval`), and judges thresholds on them
//! (`max(queue_depth) < 100`, `threshold.rs`). Each threshold is a result
//! of the burst (kind `load.observe`); the series reach the JSON summary
//! and the HTML report's plots.
//!
//! No evidence, no verdict: a series that is missing, ambiguous (several
//! series where one was meant) or was not freshly sampled through the
//! burst is an error (exit 3), never a pass. Prometheus answers a range
//! query with the last value it has for up to five minutes, so a stale
//! value could pose as a reading during the burst: tminus counts the
//! scrapes themselves (`timestamp()`, or the scrape job's `up`) and asks
//! for at least one per two intervals of the burst.
//!
//! Files: `spec.rs` the suite grammar and its plan, `threshold.rs` the
//! thresholds, `model::expo` the text format (shared with the
//! observability family), `prometheus.rs` the HTTP API,
//! `watch.rs` the reading around the burst.

pub use crate::model::expo;
pub mod prometheus;
pub mod spec;
pub mod threshold;
pub mod watch;

use std::time::Duration;

use crate::model::template::Template;
use crate::outcome::{prop, Outcome, PropValue};
use threshold::ObserveThreshold;

/// Defaults of `observe:`.
pub mod defaults {
    use std::time::Duration;
    pub const INTERVAL: Duration = Duration::from_secs(1);
    pub const BEFORE: Duration = Duration::from_secs(2);
    pub const AFTER: Duration = Duration::from_secs(2);
    pub const TIMEOUT: Duration = Duration::from_secs(10);
    /// `interval` may not be shorter (Prometheus' step resolution is ms,
    /// but a scrape faster than this measures the scraper).
    pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
    pub const MAX_INTERVAL: Duration = Duration::from_secs(300);
    pub const MAX_WINDOW: Duration = Duration::from_secs(300);
    /// At most this many series.
    pub const MAX_SERIES: usize = 32;
    /// Byte cap of one answer (a `/metrics` page, a range query).
    pub const MAX_BODY: usize = 8 << 20;
}

/// Where the series come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A Prometheus HTTP API's base URL (`/api/v1/query_range` is joined).
    Prometheus(String),
    /// A `/metrics` page: a path on the target or an absolute URL.
    Metrics(String),
}

/// One named series: PromQL for Prometheus, a selector for `/metrics`.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesPlan {
    pub name: String,
    pub query: String,
    /// With `metrics:`: the parsed selector.
    pub selector: Option<expo::Selector>,
}

/// The planned `observe:` of a burst.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservePlan {
    pub source: Source,
    pub interval: Duration,
    pub before: Duration,
    pub after: Duration,
    pub timeout: Duration,
    /// Sent with every read (a managed Prometheus' credentials), to that
    /// host only.
    pub headers: Vec<(String, Template)>,
    /// Prometheus: the scrape job whose `up` shows when an aggregated
    /// query's target was scraped.
    pub job: Option<String>,
    pub series: Vec<SeriesPlan>,
    pub thresholds: Vec<ObserveThreshold>,
}

impl ObservePlan {
    /// Fresh samples a series needs while the burst ran `burst_s`: at
    /// least two, and one per two intervals.
    pub fn needed_samples(&self, burst_s: f64) -> usize {
        let per = (burst_s / self.interval.as_secs_f64() / 2.0).floor() as usize;
        per.max(2)
    }
}

/// One reading: seconds since the burst began (negative before it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub at_s: f64,
    pub value: f64,
}

/// What was read of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub query: String,
    pub points: Vec<Point>,
    /// Samples really taken (scraped, or read) while the burst ran.
    pub fresh_during: usize,
    /// The series' labels as Prometheus gave them (`{job="api"}`), or how
    /// many series of the page were summed.
    pub labels: String,
    /// Why the series cannot be judged (missing, ambiguous, unreadable).
    pub error: Option<String>,
}

/// Everything `observe:` read around one burst.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// `Prometheus at URL` or `/metrics at URL` (userinfo masked).
    pub source: String,
    /// The burst's length: readings at 0..=end_s were taken during it.
    pub end_s: f64,
    pub series: Vec<Series>,
}

/// The result id's slug of a threshold: `observe.max_queue_depth`.
pub fn slug(t: &ObserveThreshold) -> String {
    format!("observe.{}", t.slug())
}

/// Judges every threshold on what was read; `None` (not read: a shard, a
/// merge without the reading) is an error for each.
pub fn judge(plan: &ObservePlan, observed: Option<&Observed>) -> Vec<(String, String, Outcome)> {
    plan.thresholds
        .iter()
        .map(|t| {
            let o = match observed {
                Some(obs) => judge_one(plan, t, obs),
                None => Outcome::error(format!(
                    "`{}`: the target's signals were not read around this burst",
                    t.text
                )),
            };
            (slug(t), t.text.clone(), o)
        })
        .collect()
}

fn judge_one(plan: &ObservePlan, t: &ObserveThreshold, obs: &Observed) -> Outcome {
    let Some(s) = obs.series.iter().find(|s| s.name == t.series) else {
        return Outcome::error(format!("`{}`: no series `{}` was read", t.text, t.series));
    };
    if let Some(e) = &s.error {
        return Outcome::error(format!("`{}`: {e}", t.text));
    }
    let needed = plan.needed_samples(obs.end_s);
    let mut props = vec![
        prop("series", s.name.clone()),
        prop("query", s.query.clone()),
        prop("fresh_samples_during", s.fresh_during),
        prop("needed_samples", needed),
        prop("limit", PropValue::rounded(t.limit, 6)),
    ];
    if t.aggregate.reads_during() && s.fresh_during < needed {
        return Outcome::error(format!(
            "`{}`: `{}` was sampled {} times during the {:.1} s burst ({}), at least {needed} needed (one per two intervals of {}): not evidence; give `interval` the scrape interval, or run a longer burst",
            t.text,
            s.query,
            s.fresh_during,
            obs.end_s,
            obs.source,
            crate::fmt_duration(plan.interval),
        ))
        .with_properties(props);
    }
    let v = match threshold::evaluate(t.aggregate, s, obs.end_s) {
        Ok(v) => v,
        Err(why) => {
            return Outcome::error(format!(
                "`{}`: {why} of `{}` ({})",
                t.text, s.query, obs.source
            ))
            .with_properties(props)
        }
    };
    props.push(prop("measured", PropValue::rounded(v, 6)));
    let shown = format!(
        "{}({}) = {} {} ({} samples, `{}`{}, {})",
        t.aggregate.as_str(),
        t.series,
        number(v),
        t.aggregate.window(),
        s.fresh_during,
        s.query,
        if s.labels.is_empty() {
            String::new()
        } else {
            format!(" {}", s.labels)
        },
        obs.source
    );
    if t.op.holds(v, t.limit) {
        Outcome::pass(format!("{}: {shown}", t.text)).with_properties(props)
    } else {
        Outcome::fail(
            format!("threshold breached: {}: {shown}", t.text),
            format!("{} {}", t.op.as_str(), number(t.limit)),
            number(v),
        )
        .with_properties(props)
    }
}

/// A value as people read it: integers without decimals.
pub fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Verdict;

    fn plan(thresholds: &[&str]) -> ObservePlan {
        ObservePlan {
            source: Source::Metrics("/metrics".into()),
            interval: Duration::from_secs(1),
            before: defaults::BEFORE,
            after: defaults::AFTER,
            timeout: defaults::TIMEOUT,
            headers: Vec::new(),
            job: None,
            series: Vec::new(),
            thresholds: thresholds
                .iter()
                .map(|t| threshold::parse(t).unwrap())
                .collect(),
        }
    }

    fn observed(fresh: usize, error: Option<&str>) -> Observed {
        Observed {
            source: "/metrics at http://127.0.0.1:1/metrics".into(),
            end_s: 6.0,
            series: vec![Series {
                name: "queue".into(),
                query: "q".into(),
                points: (0..7)
                    .map(|i| Point {
                        at_s: i as f64 - 1.0,
                        value: (i * 10) as f64,
                    })
                    .collect(),
                fresh_during: fresh,
                labels: String::new(),
                error: error.map(str::to_owned),
            }],
        }
    }

    #[test]
    fn thresholds_pass_fail_and_never_pass_without_evidence() {
        let p = plan(&["max(queue) < 100", "max(queue) < 50", "before(queue) < 1"]);
        let r = judge(&p, Some(&observed(6, None)));
        let verdicts: Vec<Verdict> = r.iter().map(|(_, _, o)| o.verdict).collect();
        assert_eq!(verdicts, [Verdict::Pass, Verdict::Fail, Verdict::Pass]);
        assert_eq!(r[0].0, "observe.max_queue");
        assert!(
            r[1].2.message.contains("max(queue) = 60 during the burst"),
            "{}",
            r[1].2.message
        );
        // Two samples in six seconds at 1 s: not evidence (3 needed).
        let thin = judge(&p, Some(&observed(2, None)));
        assert_eq!(thin[0].2.verdict, Verdict::Error);
        assert!(
            thin[0].2.message.contains("sampled 2 times"),
            "{}",
            thin[0].2.message
        );
        // `before` needs no sample during the burst.
        assert_eq!(thin[2].2.verdict, Verdict::Pass);
        let broken = judge(&p, Some(&observed(6, Some("no data"))));
        assert!(broken.iter().all(|(_, _, o)| o.verdict == Verdict::Error));
        let unread = judge(&p, None);
        assert!(unread.iter().all(|(_, _, o)| o.verdict == Verdict::Error));
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(number(100.0), "100");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(1.0 / 3.0), "0.3333");
    }
}
