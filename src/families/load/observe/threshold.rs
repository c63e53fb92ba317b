//! Thresholds on the target's own signals: `AGG(SERIES) OP NUMBER`, e.g.
//! `max(queue_depth) < 100`, `after(in_flight) <= 0`,
//! `increase(rejected_total) < 1`.
//!
//! An aggregate reads one window of the observation: `max`, `min`, `avg`
//! and `last` the samples taken while the burst ran; `before` the last
//! sample before it began, `after` the last one after it ended (a queue
//! that drained); `increase` how far a counter rose from before the burst
//! to its end (counter resets counted as Prometheus' `increase` does).

use super::Series;
use crate::families::load::plan::Op;

/// What a threshold reads of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Max,
    Min,
    Avg,
    Last,
    Before,
    After,
    Increase,
}

impl Aggregate {
    const ALL: [(&'static str, Aggregate); 7] = [
        ("max", Aggregate::Max),
        ("min", Aggregate::Min),
        ("avg", Aggregate::Avg),
        ("last", Aggregate::Last),
        ("before", Aggregate::Before),
        ("after", Aggregate::After),
        ("increase", Aggregate::Increase),
    ];

    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, a)| *a == self)
            .map(|(s, _)| *s)
            .unwrap_or("?")
    }

    /// Which window of the observation it reads, for messages.
    pub fn window(self) -> &'static str {
        match self {
            Aggregate::Before => "before the burst",
            Aggregate::After => "after the burst",
            Aggregate::Increase => "from before the burst to its end",
            _ => "during the burst",
        }
    }

    /// Needs samples taken during the burst (all but `before`/`after`).
    pub fn reads_during(self) -> bool {
        !matches!(self, Aggregate::Before | Aggregate::After)
    }
}

/// One threshold of `observe.thresholds`.
#[derive(Debug, Clone, PartialEq)]
pub struct ObserveThreshold {
    /// As written, for messages.
    pub text: String,
    pub aggregate: Aggregate,
    /// A name of `observe.series`.
    pub series: String,
    pub op: Op,
    pub limit: f64,
}

impl ObserveThreshold {
    /// The result id's last part: `max_queue_depth`.
    pub fn slug(&self) -> String {
        format!("{}_{}", self.aggregate.as_str(), self.series)
    }
}

/// Parses `AGG(SERIES) OP NUMBER`.
pub fn parse(text: &str) -> Result<ObserveThreshold, String> {
    let t = text.trim();
    let names: Vec<&str> = Aggregate::ALL.iter().map(|(s, _)| *s).collect();
    let usage = || {
        format!(
            "observe threshold `{t}` reads `AGG(SERIES) OP NUMBER`, e.g. `max(queue_depth) < 100`; AGG is one of {}",
            names.join(", ")
        )
    };
    let (head, rest) = t.split_once('(').ok_or_else(usage)?;
    let (series, rest) = rest.split_once(')').ok_or_else(usage)?;
    let aggregate = Aggregate::ALL
        .iter()
        .find(|(s, _)| *s == head.trim())
        .map(|(_, a)| *a)
        .ok_or_else(|| {
            format!(
                "unknown aggregate `{}` in `{t}`: use one of {}",
                head.trim(),
                names.join(", ")
            )
        })?;
    let series = series.trim();
    if !valid_name(series) {
        return Err(format!(
            "`{series}` in `{t}` is not a series name: name one of `observe.series` (letters, digits, `_`)"
        ));
    }
    let rest = rest.trim();
    let (op, value) = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)]
        .iter()
        .find_map(|(s, o)| rest.strip_prefix(s).map(|v| (*o, v.trim())))
        .ok_or_else(usage)?;
    let limit: f64 = value
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| format!("`{value}` in `{t}` is not a number"))?;
    Ok(ObserveThreshold {
        text: t.to_owned(),
        aggregate,
        series: series.to_owned(),
        op,
        limit,
    })
}

/// A series name as thresholds and result ids use it.
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// The aggregate's value over `s`, or why there is none. Times are seconds
/// since the burst began; it ended at `end_s`.
pub fn evaluate(a: Aggregate, s: &Series, end_s: f64) -> Result<f64, String> {
    let during: Vec<f64> = s
        .points
        .iter()
        .filter(|p| (0.0..=end_s).contains(&p.at_s))
        .map(|p| p.value)
        .collect();
    let before = s
        .points
        .iter()
        .rev()
        .find(|p| p.at_s < 0.0)
        .map(|p| p.value);
    let none = |what: &str| format!("no sample {what}");
    match a {
        Aggregate::Max => during
            .iter()
            .copied()
            .reduce(f64::max)
            .ok_or_else(|| none("during the burst")),
        Aggregate::Min => during
            .iter()
            .copied()
            .reduce(f64::min)
            .ok_or_else(|| none("during the burst")),
        Aggregate::Avg if during.is_empty() => Err(none("during the burst")),
        Aggregate::Avg => Ok(during.iter().sum::<f64>() / during.len() as f64),
        Aggregate::Last => during
            .last()
            .copied()
            .ok_or_else(|| none("during the burst")),
        Aggregate::Before => before.ok_or_else(|| none("before the burst")),
        Aggregate::After => s
            .points
            .iter()
            .rev()
            .find(|p| p.at_s > end_s)
            .map(|p| p.value)
            .ok_or_else(|| none("after the burst")),
        Aggregate::Increase => {
            let start = before.ok_or_else(|| none("before the burst"))?;
            if during.is_empty() {
                return Err(none("during the burst"));
            }
            // A drop is a counter reset: the counter restarted from 0.
            let mut prev = start;
            let mut total = 0.0;
            for &v in &during {
                total += if v >= prev { v - prev } else { v };
                prev = v;
            }
            Ok(total)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Point, Series};
    use super::*;

    fn series(points: &[(f64, f64)]) -> Series {
        Series {
            name: "q".into(),
            query: "q".into(),
            points: points
                .iter()
                .map(|&(at_s, value)| Point { at_s, value })
                .collect(),
            fresh_during: points.len(),
            labels: String::new(),
            error: None,
        }
    }

    #[test]
    fn thresholds_parse_and_refuse_what_they_cannot_read() {
        let t = parse(" max(queue_depth) < 100 ").unwrap();
        assert_eq!(
            (t.aggregate, t.series.as_str(), t.op, t.limit),
            (Aggregate::Max, "queue_depth", Op::Lt, 100.0)
        );
        assert_eq!(t.slug(), "max_queue_depth");
        assert_eq!(parse("after(in_flight)<=0").unwrap().op, Op::Le);
        assert!(parse("p95(q) < 1")
            .unwrap_err()
            .contains("unknown aggregate `p95`"));
        assert!(parse("max(q-1) < 1")
            .unwrap_err()
            .contains("not a series name"));
        assert!(parse("max(q) < lots").unwrap_err().contains("not a number"));
        assert!(parse("max q < 1")
            .unwrap_err()
            .contains("AGG(SERIES) OP NUMBER"));
        assert!(parse("max(q) = 1")
            .unwrap_err()
            .contains("AGG(SERIES) OP NUMBER"));
    }

    #[test]
    fn aggregates_read_their_window() {
        let s = series(&[(-1.0, 5.0), (0.5, 7.0), (1.5, 3.0), (2.5, 9.0), (4.0, 1.0)]);
        let end = 3.0;
        let v = |a| evaluate(a, &s, end).unwrap();
        assert_eq!(v(Aggregate::Max), 9.0);
        assert_eq!(v(Aggregate::Min), 3.0);
        assert!((v(Aggregate::Avg) - 19.0 / 3.0).abs() < 1e-9);
        assert_eq!(v(Aggregate::Last), 9.0);
        assert_eq!(v(Aggregate::Before), 5.0);
        assert_eq!(v(Aggregate::After), 1.0);
        // 5 -> 7 (+2), 7 -> 3 is a reset (+3), 3 -> 9 (+6).
        assert_eq!(v(Aggregate::Increase), 11.0);
        let empty = series(&[(-1.0, 5.0)]);
        assert!(evaluate(Aggregate::Max, &empty, end)
            .unwrap_err()
            .contains("during the burst"));
        assert!(evaluate(Aggregate::After, &empty, end).is_err());
    }
}
