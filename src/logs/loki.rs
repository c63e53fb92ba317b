//! Loki's HTTP API: `GET /loki/api/v1/query_range` with a LogQL selector,
//! from the check's start to now, `direction=forward`, at most `limit`
//! lines and `max_bytes` of answer. An answer with exactly `limit` lines may
//! have left some out: it is marked capped.

use std::time::{Duration, SystemTime};

use serde::Deserialize;

use super::{push_line, Logs};
use crate::http::{Client, Rendered};

/// One `query_range` request.
pub struct Query<'a> {
    pub url: &'a str,
    pub query: &'a str,
    pub headers: &'a [(String, String)],
    pub since: SystemTime,
    pub limit: u64,
    pub max_bytes: u64,
    pub timeout: Duration,
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    result_type: String,
    #[serde(default)]
    result: Vec<Stream>,
}

#[derive(Deserialize)]
struct Stream {
    #[serde(default)]
    values: Vec<(String, String)>,
}

fn nanos(t: SystemTime) -> u128 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos()
}

/// Asks Loki for the lines since `q.since`.
pub async fn read(client: &Client, q: &Query<'_>) -> Result<Logs, String> {
    let mut url = reqwest::Url::parse(q.url).map_err(|e| format!("bad URL: {e}"))?;
    url.path_segments_mut()
        .map_err(|_| "the URL cannot take a path".to_owned())?
        .pop_if_empty()
        .extend(["loki", "api", "v1", "query_range"]);
    // A second of slack before the mark: Loki's and this machine's clocks.
    let start = nanos(q.since).saturating_sub(1_000_000_000);
    let end = nanos(SystemTime::now()) + 1_000_000_000;
    url.query_pairs_mut()
        .append_pair("query", q.query)
        .append_pair("start", &start.to_string())
        .append_pair("end", &end.to_string())
        .append_pair("limit", &q.limit.to_string())
        .append_pair("direction", "forward");
    let r = Rendered {
        method: reqwest::Method::GET,
        url: url.to_string(),
        headers: q.headers.to_vec(),
        body: Vec::new(),
        timeout: q.timeout,
        credential: None,
    };
    let client = client
        .unwatched()
        .with_max_body(q.max_bytes.try_into().unwrap_or(usize::MAX));
    let ex = client.send(&r).await.map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&ex.response.body);
    if ex.status() != 200 {
        return Err(format!(
            "query_range answered {}: {}",
            ex.status(),
            shorten(text.trim())
        ));
    }
    parse(&text, q.limit, ex.response.body.len() as u64)
}

/// Reads a `query_range` answer into lines, oldest first.
pub fn parse(text: &str, limit: u64, bytes: u64) -> Result<Logs, String> {
    let a: Answer = serde_json::from_str(text).map_err(|e| {
        format!(
            "the answer is not Loki's query_range JSON ({e}): {}",
            shorten(text.trim())
        )
    })?;
    if a.status != "success" {
        return Err(format!(
            "Loki says: {}",
            a.error.as_deref().unwrap_or("no reason given")
        ));
    }
    let data = a.data.ok_or("Loki's answer has no `data`")?;
    if data.result_type != "streams" {
        return Err(format!(
            "a log query answered `{}`, not `streams` (the query must be a selector, not a metric query)",
            data.result_type
        ));
    }
    let mut entries: Vec<(u128, String)> = Vec::new();
    for s in data.result {
        for (ts, line) in s.values {
            let t = ts
                .parse::<u128>()
                .map_err(|_| format!("an entry's timestamp `{ts}` is not nanoseconds"))?;
            entries.push((t, line));
        }
    }
    entries.sort_by_key(|(t, _)| *t);
    let mut logs = Logs {
        bytes,
        capped: entries.len() as u64 >= limit,
        ..Logs::default()
    };
    for (_, line) in entries {
        push_line(&mut logs, line.as_bytes(), None);
    }
    Ok(logs)
}

/// The head of an answer, for a message.
fn shorten(s: &str) -> String {
    const MAX: usize = 200;
    if s.chars().count() <= MAX {
        crate::redact::quote(s)
    } else {
        format!(
            "{}… ({} bytes)",
            crate::redact::quote(&s.chars().take(MAX).collect::<String>()),
            s.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer as Loki 3 gives it (recorded): two streams, merged by time.
    #[test]
    fn streams_are_merged_oldest_first() {
        let text = r#"{"status":"success","data":{"resultType":"streams","result":[
          {"stream":{"app":"api","level":"info"},"values":[["1700000000000000002","b"],["1700000000000000003","c"]]},
          {"stream":{"app":"api","level":"warn"},"values":[["1700000000000000001","a"]]}],
          "stats":{"summary":{"bytesProcessedPerSecond":1}}}}"#;
        let logs = parse(text, 10, 1).unwrap();
        let lines: Vec<&str> = logs.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(lines, ["a", "b", "c"]);
        assert!(!logs.capped);
        assert!(parse(text, 3, 1).unwrap().capped);
    }

    #[test]
    fn a_metric_query_or_an_error_is_said() {
        let e = parse(
            r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#,
            10,
            1,
        )
        .unwrap_err();
        assert!(e.contains("not `streams`"), "{e}");
        let e = parse(r#"{"status":"error","error":"parse error"}"#, 10, 1).unwrap_err();
        assert!(e.contains("parse error"), "{e}");
    }
}
