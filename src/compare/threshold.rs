//! The thresholds `tminus compare` judges a run against its baseline with:
//! `[KIND:] MEASURE < LIMIT%`, where MEASURE is `p<Q>_regression` (the
//! corrected percentile's rise, run / baseline − 1; `raw_p<Q>_regression`
//! the raw one's), `throughput_drop`
//! (1 − run / baseline), `error_rate_increase` or `rate_429_increase` (run −
//! baseline, in percentage points). Without `KIND:` a threshold judges all
//! requests of each burst, with it the request kind of that name, as the
//! burst's own thresholds do (`create: p95 < 500ms`).
//!
//! A verdict needs the whole 95 % interval on one side of the limit: all of
//! it below passes, all of it at or above fails, an interval across the
//! limit is inconclusive (the noise of two finite runs could explain it).

use super::stats::{percent, Change, Estimate};

/// Judged when no `--threshold` is given.
pub const DEFAULTS: &[&str] = &[
    "p95_regression < 10%",
    "p99_regression < 20%",
    "error_rate_increase < 1%",
];

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// A percentile of the corrected latency, as a quantile (0.95).
    Percentile(f64),
    /// A percentile of the raw latency (send to last byte).
    RawPercentile(f64),
    Throughput,
    ErrorRate,
    Rate429,
}

impl Measure {
    /// The name a threshold gives it: `p95_regression`, `throughput_drop`.
    pub fn threshold_name(self) -> String {
        match self {
            Measure::Percentile(q) => format!("p{}_regression", percent(q)),
            Measure::RawPercentile(q) => format!("raw_p{}_regression", percent(q)),
            Measure::Throughput => "throughput_drop".into(),
            Measure::ErrorRate => "error_rate_increase".into(),
            Measure::Rate429 => "rate_429_increase".into(),
        }
    }

    /// The row's name in the diff table.
    pub fn label(self) -> String {
        match self {
            Measure::Percentile(q) => format!("p{}", percent(q)),
            Measure::RawPercentile(q) => format!("raw p{}", percent(q)),
            Measure::Throughput => "throughput".into(),
            Measure::ErrorRate => "error rate".into(),
            Measure::Rate429 => "429 rate".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// As written, for messages.
    pub text: String,
    /// A request kind; `None`: all requests of the burst.
    pub scope: Option<String>,
    pub measure: Measure,
    /// The largest change allowed, as a fraction (10% → 0.10).
    pub limit: f64,
}

/// A threshold's verdict on one change.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass,
    Fail,
    /// Why no verdict can be given (the interval crosses the limit, or
    /// there were too few answers).
    Inconclusive(String),
}

const MEASURES: &str =
    "p50_regression, p95_regression, p99_regression (any pQ; raw_pQ_regression for the raw latency), throughput_drop, error_rate_increase or rate_429_increase";

/// Parses `[KIND:] MEASURE < LIMIT%`.
pub fn parse(text: &str) -> Result<Threshold, String> {
    let t = text.trim();
    let (scope, rest) = match t.split_once(':') {
        Some((k, r)) if !k.contains('<') => {
            let k = k.trim();
            if k.is_empty() {
                return Err(format!(
                    "threshold `{t}`: the request kind before `:` is empty"
                ));
            }
            (Some(k.to_owned()), r.trim())
        }
        _ => (None, t),
    };
    let (name, value) = rest.split_once('<').ok_or_else(|| {
        format!("threshold `{t}` needs `<` and a limit: e.g. `p95_regression < 10%`")
    })?;
    let (name, value) = (name.trim(), value.trim());
    if value.starts_with(['=', '<']) || name.contains(['>', '=']) {
        return Err(format!(
            "threshold `{t}`: only `<` is allowed (the change must stay below the limit)"
        ));
    }
    let measure = match name {
        "throughput_drop" => Measure::Throughput,
        "error_rate_increase" => Measure::ErrorRate,
        "rate_429_increase" => Measure::Rate429,
        p => {
            let (raw, p) = match p.strip_prefix("raw_") {
                Some(p) => (true, p),
                None => (false, p),
            };
            let q = p
                .strip_prefix('p')
                .and_then(|p| p.strip_suffix("_regression"))
                .and_then(|q| q.replace('_', ".").parse::<f64>().ok())
                .ok_or_else(|| {
                    format!("threshold `{t}`: unknown measure `{name}`: use {MEASURES}")
                })?;
            if !(q > 0.0 && q < 100.0) {
                return Err(format!(
                    "threshold `{t}`: the percentile must lie between p0 and p100 (exclusive)"
                ));
            }
            // Rounded to 1e-6 so that `p99.9` is the quantile 0.999.
            let q = (q * 1e4).round() / 1e6;
            if raw {
                Measure::RawPercentile(q)
            } else {
                Measure::Percentile(q)
            }
        }
    };
    let limit = value
        .strip_suffix('%')
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v / 100.0)
        .ok_or_else(|| {
            format!("threshold `{t}`: the limit `{value}` must be a percentage above 0, e.g. `10%`")
        })?;
    if measure == Measure::Throughput && limit > 1.0 {
        return Err(format!(
            "threshold `{t}`: throughput cannot drop by more than 100%"
        ));
    }
    Ok(Threshold {
        text: t.to_owned(),
        scope,
        measure,
        limit,
    })
}

impl Threshold {
    /// Judges `change` (a ratio for percentiles and throughput, a
    /// difference for rates) against the limit, on its whole interval.
    pub fn judge(&self, change: &Change) -> Verdict {
        let e = match change {
            Change::Known(e) => *e,
            Change::Unknown(why) => return Verdict::Inconclusive(why.clone()),
        };
        let (low, high) = self.excess(e);
        if high < self.limit {
            Verdict::Pass
        } else if low >= self.limit {
            Verdict::Fail
        } else {
            Verdict::Inconclusive(format!(
                "the 95 % interval of {} ({}..{}) crosses the limit {}",
                self.measure.threshold_name(),
                pct(low),
                pct(high),
                pct(self.limit)
            ))
        }
    }

    /// The interval of the thing limited: the regression (ratio − 1), the
    /// drop (1 − ratio) or the increase (the difference).
    fn excess(&self, e: Estimate) -> (f64, f64) {
        match self.measure {
            Measure::Percentile(_) | Measure::RawPercentile(_) => (e.low - 1.0, e.high - 1.0),
            Measure::Throughput => (1.0 - e.high, 1.0 - e.low),
            Measure::ErrorRate | Measure::Rate429 => (e.low, e.high),
        }
    }
}

/// A fraction as a signed percentage with one decimal: `+12.3%`.
pub fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_with_and_without_a_kind() {
        let t = parse("p95_regression < 10%").unwrap();
        assert_eq!(
            (t.scope, t.measure, t.limit),
            (None, Measure::Percentile(0.95), 0.10)
        );
        let t = parse(" create : p99.9_regression<25%").unwrap();
        assert_eq!(t.scope.as_deref(), Some("create"));
        assert_eq!(t.measure, Measure::Percentile(0.999));
        assert_eq!(t.measure.threshold_name(), "p99.9_regression");
        assert_eq!(
            parse("throughput_drop < 5%").unwrap().measure,
            Measure::Throughput
        );
        let t = parse("raw_p99_regression < 20%").unwrap();
        assert_eq!(t.measure, Measure::RawPercentile(0.99));
        assert_eq!(t.measure.label(), "raw p99");
        let t = parse("list: rate_429_increase < 0.5%").unwrap();
        assert_eq!((t.measure, t.limit), (Measure::Rate429, 0.005));
        for d in DEFAULTS {
            parse(d).unwrap();
        }
    }

    #[test]
    fn bad_thresholds_say_what_is_wrong() {
        for (text, says) in [
            ("p95 < 10%", "unknown measure `p95`"),
            ("p95_regression > 10%", "needs `<`"),
            ("p95_regression <= 10%", "only `<`"),
            ("p95_regression < 10", "must be a percentage"),
            ("p95_regression < -3%", "must be a percentage"),
            ("p100_regression < 3%", "between p0 and p100"),
            ("throughput_drop < 150%", "more than 100%"),
            (": p95_regression < 10%", "is empty"),
            ("latency_regression < 10%", "unknown measure"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "`{text}`: {e}");
        }
    }

    #[test]
    fn a_verdict_needs_the_whole_interval_on_one_side() {
        let t = parse("p95_regression < 10%").unwrap();
        let ratio = |low, high| {
            Change::Known(Estimate {
                value: (low + high) / 2.0,
                low,
                high,
            })
        };
        assert_eq!(t.judge(&ratio(0.95, 1.08)), Verdict::Pass);
        assert_eq!(t.judge(&ratio(1.12, 1.30)), Verdict::Fail);
        let Verdict::Inconclusive(why) = t.judge(&ratio(1.05, 1.15)) else {
            panic!("straddling interval judged")
        };
        assert!(
            why.contains("+5.0%..+15.0%") && why.contains("+10.0%"),
            "{why}"
        );
        let drop = parse("throughput_drop < 5%").unwrap();
        assert_eq!(drop.judge(&ratio(0.97, 1.02)), Verdict::Pass);
        assert_eq!(drop.judge(&ratio(0.80, 0.90)), Verdict::Fail);
        let unknown = Change::Unknown("too few".into());
        assert_eq!(t.judge(&unknown), Verdict::Inconclusive("too few".into()));
    }
}
