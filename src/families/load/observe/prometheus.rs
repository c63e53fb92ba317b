//! Prometheus' HTTP API, the part `observe` needs: range queries
//! (`GET /api/v1/query_range`), each answer capped and validated before it
//! is trusted, and the freshness of what they return.
//!
//! A range query answers at every step with the newest sample up to five
//! minutes old, so a target that was not scraped during the burst still
//! shows values there. Freshness is read from the scrapes themselves:
//! `timestamp(Q)` gives a selector's sample times; an aggregation's
//! (`sum(...)`) are only its evaluation times, so its scrapes are those of
//! the scrape job's `up` (the job and instance labels the series kept, or
//! `observe.job`), counted where `up` was 1.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Deserialize;

use crate::http::{Client, Rendered};

/// One series of a range query's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// The series' labels, `__name__` included when present.
    pub labels: Vec<(String, String)>,
    /// (unix seconds, value).
    pub values: Vec<(f64, f64)>,
}

impl Matrix {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    /// `{job="api",instance="10.0.0.1:9100"}`.
    pub fn shown(&self) -> String {
        let inner: Vec<String> = self
            .labels
            .iter()
            .filter(|(k, _)| k != "__name__")
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect();
        if inner.is_empty() {
            String::new()
        } else {
            format!("{{{}}}", inner.join(","))
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<RawSeries>,
}

#[derive(Deserialize)]
struct RawSeries {
    metric: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// The API of one Prometheus server.
pub struct Api<'a> {
    pub client: &'a Client,
    /// The base URL as configured (`http://prom:9090`, `https://host/prometheus`).
    pub base: &'a str,
    pub headers: &'a [(String, String)],
    pub timeout: Duration,
}

impl Api<'_> {
    /// `query` evaluated from `start` to `end` (unix seconds) every `step`.
    pub async fn range(
        &self,
        query: &str,
        start: f64,
        end: f64,
        step: Duration,
    ) -> Result<Vec<Matrix>, String> {
        let mut url = reqwest::Url::parse(&format!(
            "{}/api/v1/query_range",
            self.base.trim_end_matches('/')
        ))
        .map_err(|e| format!("the Prometheus URL cannot be used: {e}"))?;
        url.query_pairs_mut()
            .append_pair("query", query)
            .append_pair("start", &format!("{start:.3}"))
            .append_pair("end", &format!("{end:.3}"))
            .append_pair("step", &format!("{:.3}", step.as_secs_f64()))
            .append_pair("timeout", &format!("{}s", self.timeout.as_secs().max(1)));
        let text = get(self.client, url.as_str(), self.headers, self.timeout).await?;
        parse_answer(&text)
    }
}

/// One GET with the observe headers; the body as text, or why not.
pub async fn get(
    client: &Client,
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<String, String> {
    let r = Rendered {
        method: reqwest::Method::GET,
        url: url.to_owned(),
        headers: headers.to_vec(),
        body: Vec::new(),
        timeout,
        credential: None,
    };
    let ex = client.send(&r).await.map_err(|e| e.to_string())?;
    let body = String::from_utf8_lossy(&ex.response.body).into_owned();
    // Prometheus answers a bad query 400/422 with its JSON error: kept.
    if ex.status() >= 300 && !matches!(ex.status(), 400 | 422 | 503) {
        return Err(format!(
            "answered {}: {}",
            ex.status(),
            shorten(body.trim())
        ));
    }
    Ok(body)
}

/// Reads a `query_range` answer: a matrix, or Prometheus' own error.
pub fn parse_answer(text: &str) -> Result<Vec<Matrix>, String> {
    let a: Answer = serde_json::from_str(text).map_err(|e| {
        format!(
            "the answer is not Prometheus' API JSON ({e}): {}",
            shorten(text.trim())
        )
    })?;
    if a.status != "success" {
        return Err(format!(
            "Prometheus says {}: {}",
            a.error_type.as_deref().unwrap_or("error"),
            shorten(a.error.as_deref().unwrap_or("no reason given"))
        ));
    }
    let data = a.data.ok_or("Prometheus' answer has no `data`")?;
    if data.result_type != "matrix" {
        return Err(format!(
            "a range query answered a `{}`, not a matrix",
            data.result_type
        ));
    }
    data.result
        .into_iter()
        .map(|s| {
            let values = s
                .values
                .into_iter()
                .map(|(t, v)| {
                    let x = match v.as_str() {
                        "+Inf" | "Inf" => f64::INFINITY,
                        "-Inf" => f64::NEG_INFINITY,
                        other => other
                            .parse::<f64>()
                            .map_err(|_| format!("`{other}` is not a sample value"))?,
                    };
                    if t.is_finite() {
                        Ok((t, x))
                    } else {
                        Err("a sample has no time".to_owned())
                    }
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(Matrix {
                labels: s.metric.into_iter().collect(),
                values,
            })
        })
        .collect()
}

/// The sample times `timestamp(Q)` gave, when they are sample times: None
/// when every point is its own evaluation time (an aggregation).
pub fn sample_times(stamps: &Matrix) -> Option<BTreeSet<i64>> {
    let real = stamps.values.iter().any(|(at, v)| (at - v).abs() > 1e-3);
    real.then(|| {
        stamps
            .values
            .iter()
            .map(|(_, v)| (v * 1000.0).round() as i64)
            .collect()
    })
}

/// Scrape times (ms) of `up` where it was 1, per instance; the fewest any
/// instance had is what counts (each must have been seen).
pub fn scrapes(up: &[Matrix], stamps: &[Matrix]) -> Vec<BTreeSet<i64>> {
    stamps
        .iter()
        .map(|st| {
            let ok: BTreeSet<i64> = up
                .iter()
                // `timestamp()` drops `__name__`; the other labels match.
                .find(|u| u.shown() == st.shown())
                .map(|u| {
                    u.values
                        .iter()
                        .filter(|(_, v)| *v == 1.0)
                        .map(|(at, _)| (at * 1000.0).round() as i64)
                        .collect()
                })
                .unwrap_or_default();
            st.values
                .iter()
                .filter(|(at, _)| ok.contains(&((at * 1000.0).round() as i64)))
                .map(|(_, v)| (v * 1000.0).round() as i64)
                .collect()
        })
        .collect()
}

/// At most 300 characters of another server's text, control characters
/// replaced: it never drives the terminal.
pub fn shorten(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(300)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect();
    if s.chars().count() > 300 {
        out.push('…');
    }
    out
}

/// A PromQL string literal.
pub fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_and_errors_say_why() {
        let ok = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"api"},"values":[[10,"1"],[11.5,"+Inf"]]}]}}"#;
        let m = parse_answer(ok).unwrap();
        assert_eq!(m[0].values, vec![(10.0, 1.0), (11.5, f64::INFINITY)]);
        assert_eq!(m[0].shown(), "{job=\"api\"}");
        let bad = r#"{"status":"error","errorType":"bad_data","error":"parse error at char 4"}"#;
        assert!(parse_answer(bad)
            .unwrap_err()
            .contains("bad_data: parse error"));
        assert!(parse_answer("<html>")
            .unwrap_err()
            .contains("not Prometheus' API JSON"));
        let vector = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert!(parse_answer(vector).unwrap_err().contains("not a matrix"));
    }

    #[test]
    fn freshness_comes_from_sample_times_or_up() {
        let m = |values: Vec<(f64, f64)>| Matrix {
            labels: vec![("job".into(), "api".into())],
            values,
        };
        // A selector: values are the scrape times, repeated between scrapes.
        let sel = m(vec![(10.0, 9.4), (10.5, 9.4), (11.0, 10.4), (11.5, 10.4)]);
        assert_eq!(sample_times(&sel).unwrap().len(), 2);
        // An aggregation: every value is its evaluation time.
        let agg = m(vec![(10.0, 10.0), (10.5, 10.5)]);
        assert_eq!(sample_times(&agg), None);
        // up was 0 at the second scrape: only the first counts.
        let mut up = m(vec![(10.0, 1.0), (11.0, 0.0)]);
        up.labels.push(("__name__".into(), "up".into()));
        let stamps = m(vec![(10.0, 9.4), (11.0, 10.4)]);
        assert_eq!(scrapes(&[up], &[stamps])[0].len(), 1);
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
