//! `tminus reference client --poll PATH`: the reference client's polling
//! loop (the fallback for local development and cron jobs, POLL-003). It
//! GETs the list, then again with `?cursor=` each page's
//! `meta.next_cursor`, until that is null, absent or empty; it paces
//! itself to X-RateLimit-Remaining as the operations do (`pacing`), and a
//! 429, a 503 with Retry-After or a 5xx is retried with the same cursor,
//! bounded as an operation's attempts are. The defect
//! `client-polls-past-end` asks the list once more after its end, with an
//! empty cursor (a loop that reads "no cursor" as "start again").

use std::time::Instant;

use super::client::{backoff, classify, pacing, ClientArgs, Next};
use super::Defect;

/// Most pages walked: a list that never ends is the server's fault, and the
/// loop still stops.
const MAX_PAGES: u32 = 1000;

/// Walks the list at `url`; returns the exit code (0: walked to its end).
pub(super) async fn walk(
    a: &ClientArgs,
    http: &reqwest::Client,
    url: &str,
    has: &dyn Fn(Defect) -> bool,
) -> i32 {
    let mut cursor: Option<String> = None;
    let mut past_end = false;
    for page in 1..=MAX_PAGES {
        let started = Instant::now();
        let mut attempt: u32 = 0;
        let (headers, body) = loop {
            attempt += 1;
            let mut req = http.get(url);
            if let Some(c) = &cursor {
                req = req.query(&[("cursor", c.as_str())]);
            } else if past_end {
                req = req.query(&[("cursor", "")]);
            }
            let next = match req.send().await {
                Ok(resp) => {
                    let next = classify(resp.status().as_u16(), resp.headers(), has);
                    match next {
                        Next::Done(h) => match resp.bytes().await {
                            Ok(b) => break (h, b),
                            Err(e) => Next::Retry {
                                retry_after: None,
                                why: format!("reading the page: {e}"),
                            },
                        },
                        other => other,
                    }
                }
                Err(e) => Next::Retry {
                    retry_after: None,
                    why: format!("transport error: {e}"),
                },
            };
            let (retry_after, why) = match next {
                Next::Retry { retry_after, why } => (retry_after, why),
                Next::GiveUp(why) => {
                    eprintln!("page {page}: giving up: {why}");
                    return 1;
                }
                Next::Done(_) | Next::Replayed => (None, "an answer not taken".into()),
            };
            if attempt >= a.max_attempts {
                eprintln!("page {page}: giving up after {attempt} attempts (last: {why})");
                return 1;
            }
            let wait = match retry_after {
                Some(ra) if ra > a.max_wait => {
                    eprintln!("page {page}: giving up: Retry-After {} s exceeds the longest wait accepted", ra.as_secs_f64());
                    return 1;
                }
                Some(ra) => ra + backoff(a, attempt - 1, true, has),
                None => backoff(a, attempt - 1, false, has),
            };
            if started.elapsed() + wait > a.deadline {
                eprintln!(
                    "page {page}: giving up: the next wait would pass the {} s budget",
                    a.deadline.as_secs_f64()
                );
                return 1;
            }
            eprintln!(
                "page {page} attempt {attempt}: {why}; retrying in {} ms",
                wait.as_millis()
            );
            tokio::time::sleep(wait).await;
        };
        let next = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["meta"]["next_cursor"].as_str().map(str::to_owned))
            .filter(|c| !c.is_empty());
        eprintln!(
            "page {page}: next_cursor {}",
            next.as_deref().unwrap_or("null")
        );
        let more = next.is_some() || (has(Defect::ClientPollsPastEnd) && !past_end);
        if !more {
            return 0;
        }
        if next.is_none() {
            past_end = true;
        }
        cursor = next;
        if !has(Defect::ClientIgnoresRemaining) {
            if let Some(pause) = pacing(&headers, a.low_remaining) {
                tokio::time::sleep(pause.min(a.max_wait)).await;
            }
        }
    }
    eprintln!("giving up: the list did not end within {MAX_PAGES} pages");
    1
}
