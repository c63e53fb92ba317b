//! The thresholds `tminus compare` judges a run against its baseline with:
//! `[KIND:] MEASURE < LIMIT% [min FLOOR]`, where MEASURE is
//! `p<Q>_regression` (the corrected percentile's rise, run / baseline − 1;
//! `raw_p<Q>_regression` the raw one's), `throughput_drop`
//! (1 − run / baseline), `error_rate_increase` or `rate_429_increase` (run −
//! baseline, in percentage points). Without `KIND:` a threshold judges all
//! requests of each burst, with it the request kind of that name, as the
//! burst's own thresholds do (`create: p95 < 500ms`).
//!
//! The floor (`min 2ms`, `min 5/s`, `min 0.5%`; default [`default_floor`],
//! or `--min-delta`) is the smallest change that can matter: a change
//! smaller than it, in the measure's own unit, is never a regression
//! ("below the floor").
//!
//! Verdicts are symmetric: the same two runs in the other order give the
//! mirrored verdict (a regression one way is an improvement the other
//! way). The limit is a band around "no change" on the scale the change
//! is measured on (log ratio for percentiles and throughput, difference
//! for rates): the whole 95 % interval beyond the limit on the bad side is
//! a regression, beyond it on the good side an improvement, inside it no
//! change; an interval across either edge is inconclusive (the noise could
//! explain it).

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

    /// The measure of a row's label (as [`Measure::label`] writes it).
    pub fn from_label(label: &str) -> Option<Measure> {
        let pq = |p: &str| -> Option<f64> {
            let q = p.strip_prefix('p')?.parse::<f64>().ok()?;
            (q > 0.0 && q < 100.0).then(|| (q * 1e4).round() / 1e6)
        };
        match label {
            "throughput" => Some(Measure::Throughput),
            "error rate" => Some(Measure::ErrorRate),
            "429 rate" => Some(Measure::Rate429),
            l => match l.strip_prefix("raw ") {
                Some(p) => pq(p).map(Measure::RawPercentile),
                None => pq(l).map(Measure::Percentile),
            },
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
    /// The smallest change that matters, in the row's unit (ms for
    /// percentiles, per second for throughput, a share for rates); `None`:
    /// `--min-delta` or [`default_floor`].
    pub min_delta: Option<f64>,
}

/// The floor of a threshold without `min`: 1 ms for percentiles (below
/// it, a loopback target's latency moves with the scheduler, not the
/// release); none for throughput and rates (their limits are the floor).
pub fn default_floor(m: Measure) -> f64 {
    match m {
        Measure::Percentile(_) | Measure::RawPercentile(_) => 1.0,
        Measure::Throughput | Measure::ErrorRate | Measure::Rate429 => 0.0,
    }
}

/// Which measures a floor's unit applies to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FloorUnit {
    /// ms (from `us`, `ms`, `s`): percentiles.
    Latency,
    /// per second (`/s`): throughput.
    PerSecond,
    /// a share (`%`, percentage points): rates.
    Share,
}

impl FloorUnit {
    pub fn of(m: Measure) -> FloorUnit {
        match m {
            Measure::Percentile(_) | Measure::RawPercentile(_) => FloorUnit::Latency,
            Measure::Throughput => FloorUnit::PerSecond,
            Measure::ErrorRate | Measure::Rate429 => FloorUnit::Share,
        }
    }
}

/// A floor as written (`2ms`, `500us`, `0.01s`, `5/s`, `0.5%`): its
/// value in the row's unit and which measures it fits.
pub fn parse_floor(text: &str) -> Result<(f64, FloorUnit), String> {
    let t = text.trim();
    let (num, scale, unit) = if let Some(n) = t.strip_suffix("/s") {
        (n, 1.0, FloorUnit::PerSecond)
    } else if let Some(n) = t.strip_suffix('%') {
        (n, 0.01, FloorUnit::Share)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 0.001, FloorUnit::Latency)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0, FloorUnit::Latency)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0, FloorUnit::Latency)
    } else {
        return Err(format!(
            "floor `{t}` needs a unit: `ms`, `us` or `s` (percentiles), `/s` (throughput) or `%` (rates)"
        ));
    };
    let v = num
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("floor `{t}`: `{}` is not a number of 0 or more", num.trim()))?;
    Ok((v * scale, unit))
}

/// A threshold's verdict on one change.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The whole interval inside the limit both ways.
    NoChange,
    /// The change is smaller than the floor: never a regression.
    BelowFloor,
    /// The whole interval beyond the limit on the good side.
    Improvement,
    /// The whole interval beyond the limit on the bad side.
    Regression,
    /// The interval crosses an edge of the limit: the noise could explain it.
    Inconclusive(String),
    /// The change could not be measured (too few answers): this measure
    /// is left out, the others still judge.
    NotCompared(String),
}

impl Verdict {
    /// The verdict of the same threshold with the two runs swapped.
    pub fn mirrored(&self) -> Verdict {
        match self {
            Verdict::Improvement => Verdict::Regression,
            Verdict::Regression => Verdict::Improvement,
            other => other.clone(),
        }
    }

    /// The class the issue names: regression, improvement, no change (below
    /// the floor included), inconclusive, not compared.
    pub fn class(&self) -> &'static str {
        match self {
            Verdict::NoChange | Verdict::BelowFloor => "no change",
            Verdict::Improvement => "improvement",
            Verdict::Regression => "regression",
            Verdict::Inconclusive(_) => "inconclusive",
            Verdict::NotCompared(_) => "not compared",
        }
    }
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
    let (value, floor) = match value.split_once(" min ") {
        Some((v, f)) => (v.trim(), Some(f.trim())),
        None => (value, None),
    };
    let min_delta = match floor {
        None => None,
        Some(f) => {
            let (v, unit) = parse_floor(f).map_err(|e| format!("threshold `{t}`: {e}"))?;
            if unit != FloorUnit::of(measure) {
                return Err(format!(
                    "threshold `{t}`: the floor `{f}` is not in the unit of {name}: use {}",
                    match FloorUnit::of(measure) {
                        FloorUnit::Latency => "ms, us or s",
                        FloorUnit::PerSecond => "/s",
                        FloorUnit::Share => "% (percentage points)",
                    }
                ));
            }
            Some(v)
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
        min_delta,
    })
}

impl Threshold {
    /// The floor this threshold judges with.
    pub fn floor(&self) -> f64 {
        self.min_delta
            .unwrap_or_else(|| default_floor(self.measure))
    }

    /// Judges `change` (a ratio for percentiles and throughput, a
    /// difference for rates) of `baseline` → `run` (the row's figures)
    /// against the floor and the limit, on its whole interval.
    pub fn judge(&self, baseline: f64, run: f64, change: &Change) -> Verdict {
        let e = match change {
            Change::Known(e) => *e,
            Change::Unknown(why) => return Verdict::NotCompared(why.clone()),
        };
        if (run - baseline).abs() < self.floor() {
            return Verdict::BelowFloor;
        }
        let (low, high, limit) = self.scaled(e);
        if low >= limit {
            Verdict::Regression
        } else if high <= -limit {
            Verdict::Improvement
        } else if low > -limit && high < limit {
            Verdict::NoChange
        } else {
            let (from, to) = (self.unscaled(low), self.unscaled(high));
            let edge = if high >= limit { limit } else { -limit };
            Verdict::Inconclusive(format!(
                "the 95 % interval of {} ({}..{}) crosses {}{}",
                self.measure.threshold_name(),
                pct(from.min(to)),
                pct(from.max(to)),
                if edge > 0.0 {
                    "the limit "
                } else {
                    "the limit the other way, "
                },
                pct(self.unscaled(edge))
            ))
        }
    }

    /// The interval and the limit on the scale verdicts are symmetric on,
    /// the bad direction positive: log ratio (percentiles), minus log
    /// ratio (throughput), difference (rates).
    fn scaled(&self, e: Estimate) -> (f64, f64, f64) {
        let ln = |x: f64| x.max(1e-300).ln();
        match self.measure {
            Measure::Percentile(_) | Measure::RawPercentile(_) => {
                (ln(e.low), ln(e.high), (1.0 + self.limit).ln())
            }
            Measure::Throughput => (-ln(e.high), -ln(e.low), -(1.0 - self.limit).max(0.0).ln()),
            Measure::ErrorRate | Measure::Rate429 => (e.low, e.high, self.limit),
        }
    }

    /// A scaled value as the threshold states its change: the rise
    /// (ratio − 1), the drop (1 − ratio) or the increase.
    fn unscaled(&self, x: f64) -> f64 {
        match self.measure {
            Measure::Percentile(_) | Measure::RawPercentile(_) => x.exp() - 1.0,
            Measure::Throughput => 1.0 - (-x).exp(),
            Measure::ErrorRate | Measure::Rate429 => x,
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
        // Figures far apart: the floor does not decide.
        let j = |t: &Threshold, c: &Change| t.judge(10.0, 100.0, c);
        assert_eq!(j(&t, &ratio(0.95, 1.08)), Verdict::NoChange);
        assert_eq!(j(&t, &ratio(1.12, 1.30)), Verdict::Regression);
        assert_eq!(j(&t, &ratio(0.5, 0.9)), Verdict::Improvement);
        let Verdict::Inconclusive(why) = j(&t, &ratio(0.85, 1.05)) else {
            panic!("an interval across the good edge judged")
        };
        assert!(why.contains("the other way, -9.1%"), "{why}");
        let Verdict::Inconclusive(why) = j(&t, &ratio(1.05, 1.15)) else {
            panic!("straddling interval judged")
        };
        assert!(
            why.contains("+5.0%..+15.0%") && why.contains("+10.0%"),
            "{why}"
        );
        let drop = parse("throughput_drop < 5%").unwrap();
        assert_eq!(j(&drop, &ratio(0.97, 1.02)), Verdict::NoChange);
        assert_eq!(j(&drop, &ratio(0.80, 0.90)), Verdict::Regression);
        let unknown = Change::Unknown("too few".into());
        assert_eq!(j(&t, &unknown), Verdict::NotCompared("too few".into()));
    }

    #[test]
    fn a_change_below_the_floor_is_never_a_regression() {
        let t = parse("p95_regression < 10%").unwrap();
        assert_eq!(t.floor(), 1.0);
        let certain = Change::Known(Estimate {
            value: 2.0,
            low: 1.8,
            high: 2.2,
        });
        // 0.6 ms → 1.2 ms: twice as slow, 0.6 ms slower.
        assert_eq!(t.judge(0.6, 1.2, &certain), Verdict::BelowFloor);
        assert_eq!(t.judge(0.6, 1.7, &certain), Verdict::Regression);
        let t = parse("p95_regression < 10% min 0.5ms").unwrap();
        assert_eq!(t.judge(0.6, 1.2, &certain), Verdict::Regression);
        let t = parse("create: p99_regression < 20% min 2ms").unwrap();
        assert_eq!(
            (t.scope.as_deref(), t.min_delta),
            (Some("create"), Some(2.0))
        );
        assert_eq!(
            parse("throughput_drop < 5% min 3/s").unwrap().min_delta,
            Some(3.0)
        );
        assert_eq!(
            parse("error_rate_increase < 1% min 0.5%")
                .unwrap()
                .min_delta,
            Some(0.005)
        );
        assert_eq!(parse_floor("250us").unwrap(), (0.25, FloorUnit::Latency));
        for (text, says) in [
            ("p95_regression < 10% min 5/s", "not in the unit"),
            ("p95_regression < 10% min 2", "needs a unit"),
            ("p95_regression < 10% min -2ms", "0 or more"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "`{text}`: {e}");
        }
    }

    #[test]
    fn verdicts_mirror_when_the_runs_are_swapped() {
        for text in [
            "p95_regression < 10%",
            "throughput_drop < 5%",
            "error_rate_increase < 1%",
        ] {
            let t = parse(text).unwrap();
            let rate = matches!(t.measure, Measure::ErrorRate);
            for (low, high) in [
                (0.95, 1.08),
                (1.12, 1.3),
                (0.5, 0.9),
                (0.85, 1.05),
                (1.05, 1.15),
            ] {
                let (e, swapped) = if rate {
                    let (l, h) = (low - 1.0, high - 1.0);
                    (
                        Estimate {
                            value: (l + h) / 2.0,
                            low: l,
                            high: h,
                        },
                        Estimate {
                            value: -(l + h) / 2.0,
                            low: -h,
                            high: -l,
                        },
                    )
                } else {
                    (
                        Estimate {
                            value: 1.0,
                            low,
                            high,
                        },
                        Estimate {
                            value: 1.0,
                            low: 1.0 / high,
                            high: 1.0 / low,
                        },
                    )
                };
                let one = t.judge(10.0, 100.0, &Change::Known(e));
                let other = t.judge(100.0, 10.0, &Change::Known(swapped));
                assert_eq!(
                    one.class(),
                    other.mirrored().class(),
                    "{text} [{low}, {high}]"
                );
            }
        }
    }
}
