//! `load.observe` as written, and its plan: one source (`prometheus:` or
//! `metrics:`), the named series, the windows and the thresholds, each
//! checked where it is written.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};

use super::{defaults as d, expo, threshold, ObservePlan, SeriesPlan, Source};
use crate::context::PlanCtx;
use crate::model::scalar::{DurationValue, Scalar};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserveSpec {
    /// A Prometheus HTTP API's base URL.
    #[serde(default)]
    pub prometheus: Option<Spanned<String>>,
    /// A `/metrics` page: a path on the target or an absolute URL.
    #[serde(default)]
    pub metrics: Option<Spanned<String>>,
    /// Name -> PromQL (`prometheus:`) or selector (`metrics:`).
    pub series: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub thresholds: Vec<Spanned<String>>,
    #[serde(default)]
    pub interval: Option<Spanned<DurationValue>>,
    #[serde(default)]
    pub before: Option<Spanned<DurationValue>>,
    #[serde(default)]
    pub after: Option<Spanned<DurationValue>>,
    #[serde(default)]
    pub timeout: Option<Spanned<DurationValue>>,
    #[serde(default)]
    pub job: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<Scalar>>,
}

impl PlanCtx<'_> {
    /// Plans `observe:`; `at` is the load section's position.
    pub fn observe_plan(&mut self, s: &ObserveSpec, at: Location) -> Option<ObservePlan> {
        let source = match (&s.prometheus, &s.metrics) {
            (Some(p), None) => Source::Prometheus(self.observe_url(p, false)?),
            (None, Some(m)) => Source::Metrics(self.observe_url(m, true)?),
            (Some(p), Some(_)) => {
                self.error(
                    p.referenced,
                    "`observe` reads `prometheus:` or `metrics:`, not both",
                );
                return None;
            }
            (None, None) => {
                self.error(
                    at,
                    "`observe` needs a source: `prometheus: URL` (a Prometheus HTTP API) or `metrics: /metrics` (a text exposition page)",
                );
                return None;
            }
        };
        let dur = |ctx: &mut Self, v: &Option<Spanned<DurationValue>>, def, lo, hi, what: &str| {
            let Some(v) = v else { return def };
            let x = v.value.0;
            if x < lo || x > hi {
                ctx.error(
                    v.referenced,
                    format!(
                        "`observe.{what}` must be from {} to {}",
                        crate::fmt_duration(lo),
                        crate::fmt_duration(hi)
                    ),
                );
            }
            x
        };
        let interval = dur(
            self,
            &s.interval,
            d::INTERVAL,
            d::MIN_INTERVAL,
            d::MAX_INTERVAL,
            "interval",
        );
        let zero = std::time::Duration::ZERO;
        let before = dur(self, &s.before, d::BEFORE, zero, d::MAX_WINDOW, "before");
        let after = dur(self, &s.after, d::AFTER, zero, d::MAX_WINDOW, "after");
        let timeout = dur(
            self,
            &s.timeout,
            d::TIMEOUT,
            std::time::Duration::from_millis(100),
            std::time::Duration::from_secs(120),
            "timeout",
        );
        let prometheus = matches!(source, Source::Prometheus(_));
        if s.series.is_empty() {
            self.error(at, "`observe.series` names no series");
        }
        if s.series.len() > d::MAX_SERIES {
            self.error(
                at,
                format!("`observe.series` names more than {} series", d::MAX_SERIES),
            );
        }
        let mut series = Vec::new();
        for (name, q) in &s.series {
            if !threshold::valid_name(name) {
                self.error(
                    q.referenced,
                    format!("series name `{name}` must be letters, digits and `_` (it is part of result ids)"),
                );
            }
            let query = q.value.trim().to_owned();
            if query.is_empty() || query.len() > 4096 {
                self.error(
                    q.referenced,
                    format!("series `{name}` needs a query of at most 4096 characters"),
                );
            }
            let selector = if prometheus {
                None
            } else {
                match expo::parse_selector(&query) {
                    Ok(sel) => Some(sel),
                    Err(e) => {
                        self.error(q.referenced, e);
                        None
                    }
                }
            };
            series.push(SeriesPlan {
                name: name.clone(),
                query,
                selector,
            });
        }
        let mut thresholds: Vec<threshold::ObserveThreshold> = Vec::new();
        for t in &s.thresholds {
            match threshold::parse(&t.value) {
                Ok(th) => {
                    if !series.iter().any(|s| s.name == th.series) {
                        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
                        self.error(
                            t.referenced,
                            format!(
                                "threshold reads series `{}`, but `observe.series` has: {}",
                                th.series,
                                names.join(", ")
                            ),
                        );
                    }
                    if thresholds.iter().any(|x| x.slug() == th.slug()) {
                        self.error(
                            t.referenced,
                            format!("threshold `{}` is given twice", th.slug()),
                        );
                    }
                    thresholds.push(th);
                }
                Err(e) => self.error(t.referenced, e),
            }
        }
        if let (Some(j), false) = (&s.job, prometheus) {
            self.error(j.referenced, "`observe.job` goes with `prometheus:`");
        }
        let headers = s.headers.iter().map(|(k, v)| self.header(k, v)).collect();
        Some(ObservePlan {
            source,
            interval,
            before,
            after,
            timeout,
            headers,
            job: s.job.as_ref().map(|j| j.value.clone()),
            series,
            thresholds,
        })
    }

    /// A URL (or, for `metrics:`, a target path), resolved at plan time.
    fn observe_url(&mut self, v: &Spanned<String>, path_ok: bool) -> Option<String> {
        let t = self.template_at(&v.value, v.referenced);
        let Some(text) = t.as_literal() else {
            self.error(
                v.referenced,
                "the address may use `${var.}`, `${env.}` and `${secret.}`, fixed when the suite is planned",
            );
            return None;
        };
        let text = text.trim().to_owned();
        if path_ok && text.starts_with('/') {
            return Some(text);
        }
        match crate::context::request::http_url(&text) {
            Ok(u) if u.query().is_none() && u.fragment().is_none() => Some(text),
            Ok(_) => {
                self.error(
                    v.referenced,
                    "the address may not carry a query or fragment",
                );
                None
            }
            Err(e) => {
                self.error(
                    v.referenced,
                    format!(
                        "`{}` {e}{}",
                        crate::redact::mask_userinfo(&text),
                        if path_ok {
                            " (or a path on the target, `/metrics`)"
                        } else {
                            ""
                        }
                    ),
                );
                None
            }
        }
    }
}
