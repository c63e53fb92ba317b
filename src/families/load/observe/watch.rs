//! Reading the target's signals around one burst: [`Watch::begin`] before
//! it (the source must answer, or the burst is not sent), and
//! [`Watch::finish`] after it, which returns what was read.
//!
//! With `metrics:` a task reads the page every `interval` from `before`
//! ahead of the burst to `after` past its end, keeping only the numbers
//! (a bounded count of readings). With `prometheus:` nothing runs during
//! the burst: once `after` and one more interval (the last scrapes to
//! land) have passed, each series is read back with range queries.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

use super::prometheus::{self as prom, Api};
use super::{defaults, expo, ObservePlan, Observed, Point, Series, Source};
use crate::http::{Client, Target};
use crate::model::template::Scope;
use crate::outcome::Outcome;

/// One reading of a `/metrics` page: per series, its sum and how many
/// samples it summed (None: not on the page); Err: the page was not read.
struct Reading {
    at: SystemTime,
    values: Result<Vec<Option<(f64, usize)>>, String>,
}

/// The `/metrics` poller.
struct Poller {
    readings: Arc<Mutex<Vec<Reading>>>,
    stop: signal::Sender<bool>,
    task: JoinHandle<()>,
}

/// An observation under way.
pub struct Watch {
    plan: ObservePlan,
    client: Client,
    headers: Vec<(String, String)>,
    url: String,
    shown: String,
    poller: Option<Poller>,
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Watch {
    /// Checks that the source answers, and with `metrics:` starts reading
    /// and waits `before`. Err: the burst is not run (an error naming the
    /// address).
    pub async fn begin(plan: &ObservePlan, target: &Target) -> Result<Watch, Outcome> {
        let client = Client::new()
            .map_err(Outcome::error)?
            .with_max_body(defaults::MAX_BODY);
        let headers: Vec<(String, String)> = plan
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.render(&Scope::new())))
            .collect();
        let (url, kind) = match &plan.source {
            Source::Prometheus(base) => (base.clone(), "Prometheus"),
            Source::Metrics(m) if m.starts_with('/') => (
                format!("{}{m}", target.base_url.trim_end_matches('/')),
                "/metrics",
            ),
            Source::Metrics(m) => (m.clone(), "/metrics"),
        };
        let shown = format!("{kind} at {}", crate::redact::mask_userinfo(&url));
        let mut w = Watch {
            plan: plan.clone(),
            client,
            headers,
            url,
            shown,
            poller: None,
        };
        let unreachable = |why: String, shown: &str| {
            Outcome::error(format!(
                "observe: {shown} could not be read before the burst, so the burst was not sent: {why}"
            ))
        };
        match &plan.source {
            Source::Prometheus(_) => {
                let now = unix(SystemTime::now());
                w.api()
                    .range("vector(1)", now - 1.0, now, Duration::from_secs(1))
                    .await
                    .map_err(|e| unreachable(e, &w.shown))?;
            }
            Source::Metrics(_) => {
                let page = w.page().await.map_err(|e| unreachable(e, &w.shown))?;
                let first = Reading {
                    at: SystemTime::now(),
                    values: Ok(w.values(&page)),
                };
                w.poller = Some(w.poll(first));
                tokio::time::sleep(plan.before).await;
            }
        }
        Ok(w)
    }

    fn api(&self) -> Api<'_> {
        Api {
            client: &self.client,
            base: &self.url,
            headers: &self.headers,
            timeout: self.plan.timeout,
        }
    }

    async fn page(&self) -> Result<String, String> {
        prom::get(&self.client, &self.url, &self.headers, self.plan.timeout)
            .await
            .and_then(|body| {
                if body.trim_start().starts_with('{') {
                    Err("answered JSON, not the text exposition format (for a Prometheus server use `prometheus:`)".into())
                } else {
                    Ok(body)
                }
            })
    }

    fn values(&self, page: &str) -> Vec<Option<(f64, usize)>> {
        self.plan
            .series
            .iter()
            .map(|s| s.selector.as_ref().and_then(|sel| expo::read(page, sel)))
            .collect()
    }

    /// Reads the page every interval until stopped (at most a bounded
    /// count of readings: the longest burst and both windows).
    fn poll(&self, first: Reading) -> Poller {
        let readings = Arc::new(Mutex::new(vec![first]));
        let (stop, mut stopped) = signal::channel(false);
        let cap = ((crate::families::load::spec::defaults::MAX_DURATION + defaults::MAX_WINDOW * 2)
            .as_secs_f64()
            / self.plan.interval.as_secs_f64()) as usize
            + 16;
        let me = Watch {
            plan: self.plan.clone(),
            client: self.client.clone(),
            headers: self.headers.clone(),
            url: self.url.clone(),
            shown: self.shown.clone(),
            poller: None,
        };
        let store = readings.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.plan.interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stopped.changed() => return,
                }
                let values = me.page().await.map(|p| me.values(&p));
                let mut r = store.lock().unwrap_or_else(|p| p.into_inner());
                if r.len() >= cap {
                    return;
                }
                r.push(Reading {
                    at: SystemTime::now(),
                    values,
                });
            }
        });
        Poller {
            readings,
            stop,
            task,
        }
    }

    /// Waits `after` (not when the burst was cancelled) and returns what
    /// was read; `started`/`ended` bound the burst.
    pub async fn finish(
        mut self,
        started: SystemTime,
        ended: SystemTime,
        mut cancel: tokio::sync::watch::Receiver<bool>,
    ) -> Observed {
        let end_s = ended
            .duration_since(started)
            .unwrap_or_default()
            .as_secs_f64();
        let wait = match self.plan.source {
            Source::Metrics(_) => self.plan.after,
            // The last scrapes of the `after` window must have landed.
            Source::Prometheus(_) => self.plan.after + self.plan.interval,
        };
        let cancelled = *cancel.borrow();
        if !cancelled {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = cancel.changed() => {}
            }
        }
        let series = match self.poller.take() {
            Some(p) => {
                let _ = p.stop.send(true);
                let _ = p.task.await;
                let readings =
                    std::mem::take(&mut *p.readings.lock().unwrap_or_else(|e| e.into_inner()));
                self.series_of_readings(&readings, started, end_s)
            }
            None => self.series_from_prometheus(started, ended).await,
        };
        Observed {
            source: self.shown.clone(),
            end_s,
            series,
        }
    }

    fn series_of_readings(
        &self,
        readings: &[Reading],
        started: SystemTime,
        end_s: f64,
    ) -> Vec<Series> {
        let at = |r: &Reading| unix(r.at) - unix(started);
        let failed: Vec<&String> = readings
            .iter()
            .filter_map(|r| r.values.as_ref().err())
            .collect();
        self.plan
            .series
            .iter()
            .enumerate()
            .map(|(i, sp)| {
                let mut points = Vec::new();
                let mut fresh = 0;
                let mut summed = 0;
                for r in readings {
                    if let Ok(v) = &r.values {
                        if let Some((value, n)) = v[i] {
                            let at_s = at(r);
                            if (0.0..=end_s).contains(&at_s) {
                                fresh += 1;
                            }
                            summed = summed.max(n);
                            points.push(Point { at_s, value });
                        }
                    }
                }
                let error = if !points.is_empty() {
                    None
                } else if failed.len() == readings.len() {
                    Some(format!(
                        "{} could not be read ({} readings): {}",
                        self.shown,
                        readings.len(),
                        failed.last().map(|s| s.as_str()).unwrap_or("")
                    ))
                } else {
                    Some(format!(
                        "`{}` matched no sample on {} in {} readings: is the name right?",
                        sp.query,
                        self.shown,
                        readings.len() - failed.len()
                    ))
                };
                let mut labels = if summed > 1 {
                    format!("(the sum of {summed} series)")
                } else {
                    String::new()
                };
                if !failed.is_empty() && error.is_none() {
                    labels.push_str(&format!(
                        "{}{} of {} readings failed",
                        if labels.is_empty() { "" } else { "; " },
                        failed.len(),
                        readings.len()
                    ));
                }
                Series {
                    name: sp.name.clone(),
                    query: sp.query.clone(),
                    points,
                    fresh_during: fresh,
                    labels,
                    error,
                }
            })
            .collect()
    }

    async fn series_from_prometheus(&self, started: SystemTime, ended: SystemTime) -> Vec<Series> {
        let (s0, e0) = (unix(started), unix(ended));
        let (from, to) = (
            s0 - self.plan.before.as_secs_f64(),
            e0 + self.plan.after.as_secs_f64(),
        );
        let mut out = Vec::with_capacity(self.plan.series.len());
        for sp in &self.plan.series {
            let mut s = Series {
                name: sp.name.clone(),
                query: sp.query.clone(),
                points: Vec::new(),
                fresh_during: 0,
                labels: String::new(),
                error: None,
            };
            match self.read_series(&sp.query, (from, to), (s0, e0)).await {
                Ok((points, fresh, labels)) => {
                    s.points = points;
                    s.fresh_during = fresh;
                    s.labels = labels;
                }
                Err(e) => s.error = Some(format!("{e} ({})", self.shown)),
            }
            out.push(s);
        }
        out
    }

    /// One series' points (relative to the burst's start), its scrapes
    /// during the burst and its labels.
    async fn read_series(
        &self,
        query: &str,
        (from, to): (f64, f64),
        (s0, e0): (f64, f64),
    ) -> Result<(Vec<Point>, usize, String), String> {
        let step = self.plan.interval;
        let api = self.api();
        let m = api.range(query, from, to, step).await?;
        let series = match m.as_slice() {
            [] => {
                return Err(format!(
                    "`{query}` has no data from {:.0} s before the burst to {:.0} s after it: is the target scraped, is the name right?",
                    self.plan.before.as_secs_f64(),
                    self.plan.after.as_secs_f64()
                ))
            }
            [one] => one,
            many => {
                let shown: Vec<String> = many.iter().take(3).map(prom::Matrix::shown).collect();
                return Err(format!(
                    "`{query}` returns {} series ({}{}): aggregate them (`sum(...)`, `max(...)`) so that one remains",
                    many.len(),
                    shown.join(", "),
                    if many.len() > 3 { ", ..." } else { "" }
                ));
            }
        };
        let in_burst = |ms: &i64| {
            let t = *ms as f64 / 1000.0;
            t >= s0 && t <= e0
        };
        let stamps = api
            .range(&format!("timestamp({query})"), from, to, step)
            .await?;
        let fresh = match stamps.first().and_then(prom::sample_times) {
            Some(times) => times.iter().filter(|t| in_burst(t)).count(),
            None => {
                // An aggregation: count the scrapes of its job.
                let mut sel = Vec::new();
                match (series.label("job"), &self.plan.job) {
                    (Some(job), _) => {
                        sel.push(format!("job={}", prom::quote(job)));
                        if let Some(i) = series.label("instance") {
                            sel.push(format!("instance={}", prom::quote(i)));
                        }
                    }
                    (None, Some(job)) => sel.push(format!("job={}", prom::quote(job))),
                    (None, None) => return Err(format!(
                        "`{query}` is computed (an aggregation), so its points do not show when the target was scraped: give `observe.job`, the scrape job whose `up` shows it"
                    )),
                }
                let up_sel = format!("up{{{}}}", sel.join(","));
                let up = api.range(&up_sel, from, to, step).await?;
                let up_stamps = api
                    .range(&format!("timestamp({up_sel})"), from, to, step)
                    .await?;
                let per_instance = prom::scrapes(&up, &up_stamps);
                if per_instance.is_empty() {
                    return Err(format!(
                        "`{up_sel}` has no data, so the scrapes behind `{query}` cannot be counted"
                    ));
                }
                per_instance
                    .iter()
                    .map(|set| set.iter().filter(|t| in_burst(t)).count())
                    .min()
                    .unwrap_or(0)
            }
        };
        let points = series
            .values
            .iter()
            .map(|&(at, value)| Point {
                at_s: at - s0,
                value,
            })
            .collect();
        Ok((points, fresh, series.shown()))
    }
}
