//! The reference *client*: `tminus reference client`, a well-behaved
//! integration client for the client-certification checks (`checks::client`)
//! to judge, with `--defect` switches that each break one property.
//!
//! It performs `--operations` logical operations, each a
//! `POST /public/v1/messages` with its own `Idempotency-Key` (UUIDv4) and a
//! JSON body serialized once, so every retry is byte-identical. Per attempt:
//! 2xx ends the operation; 400/401/403/404/422 (any 4xx but 409 and 429) give
//! up at once; a replayed 2xx (`Idempotent-Replayed`) is a success like any
//! other; 429 and 409 are retried; 503 only with `Retry-After`; 500, 502,
//! 504 and transport failures with backoff. The wait is `Retry-After` (delay
//! seconds or HTTP-date, `model::retry_after`; anything else counts as no
//! Retry-After) plus full jitter, or full jitter alone
//! (`random(0, min(max_delay, base * 2^n))`). Attempts, the longest single
//! wait and the time per operation are bounded; giving up exits 1. After a
//! success, a low `X-RateLimit-Remaining` spreads the next requests over the
//! reset window.

use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use rand::Rng;

use super::Defect;
use crate::model::retry_after::parse_retry_after;
use crate::model::scalar::parse_duration;

/// `tminus reference client` flags.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// Base URL of the platform (tminus sets TMINUS_UPSTREAM_URL)
    #[arg(long, env = "TMINUS_UPSTREAM_URL", value_name = "URL")]
    pub url: String,
    /// Break one client property (repeatable; also TMINUS_CLIENT_DEFECTS=a,b); see `tminus reference --list-defects`
    #[arg(
        long = "defect",
        value_name = "NAME",
        env = "TMINUS_CLIENT_DEFECTS",
        value_delimiter = ','
    )]
    pub defects: Vec<String>,
    /// Logical operations to perform, one after the other
    #[arg(long, default_value_t = 1)]
    pub operations: u32,
    /// Attempts per operation before giving up
    #[arg(long, default_value_t = 5)]
    pub max_attempts: u32,
    /// Longest single wait accepted; a larger Retry-After makes it give up
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub max_wait: Duration,
    /// Time budget per operation
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub deadline: Duration,
    /// Backoff base: the n-th retry waits random(0, min(max-delay, base*2^n))
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    pub base_delay: Duration,
    /// Backoff cap
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub max_delay: Duration,
    /// Below this X-RateLimit-Remaining, spread requests over the reset window
    #[arg(long, default_value_t = 5)]
    pub low_remaining: u64,
    /// Path of the operation
    #[arg(long, default_value = "/public/v1/messages")]
    pub path: String,
    /// Per-request timeout
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Poll this list instead of performing operations: GET it, then again
    /// with `?cursor=` each page's `meta.next_cursor`, until that is null
    /// (the polling fallback, `client.polling`)
    #[arg(long, value_name = "PATH")]
    pub poll: Option<String>,
    /// CPU time to spend before each request, as an interpreted SDK does
    /// (a heavy herd for the noise measurement of `client.jitter`)
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub cpu_per_request: Duration,
}

/// True for the defects that apply to `tminus reference client`.
pub fn is_client_defect(d: Defect) -> bool {
    matches!(
        d,
        Defect::ClientIgnoresRetryAfter
            | Defect::ClientNoJitter
            | Defect::ClientUnbounded
            | Defect::ClientRetries4xx
            | Defect::ClientNewKeyPerAttempt
            | Defect::ClientNoKey
            | Defect::ClientOneKeyForAll
            | Defect::ClientFixedBackoff
            | Defect::ClientRetries503Blindly
            | Defect::ClientIgnoresRemaining
            | Defect::ClientRetryStorm
            | Defect::ClientRejectsReplay
            | Defect::ClientCrashesOnHttpDate
            | Defect::ClientNewTracePerRetry
            | Defect::ClientNoTraceparent
            | Defect::ClientPollsPastEnd
    )
}

/// `bytes` random bytes as lowercase hex, never all zeros (an invalid W3C id).
fn random_hex(bytes: usize) -> String {
    loop {
        let s: String = (0..bytes)
            .map(|_| format!("{:02x}", rand::random::<u8>()))
            .collect();
        if s.bytes().any(|b| b != b'0') {
            return s;
        }
    }
}

pub(super) enum Next {
    Done(reqwest::header::HeaderMap),
    Retry {
        retry_after: Option<Duration>,
        why: String,
    },
    GiveUp(String),
    /// Only with `client-rejects-replay`: a replayed 2xx, taken as a failure.
    Replayed,
}

/// How many times the `client-retry-storm` inner layer re-sends a 503 at once.
const STORM_RESENDS: u32 = 3;

/// Runs the client; returns the process exit code (0 done, 1 gave up, 2 usage).
pub fn main(a: ClientArgs) -> i32 {
    let mut defects = Vec::new();
    for n in a.defects.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        match n.parse::<Defect>() {
            Ok(d) if is_client_defect(d) => defects.push(d),
            Ok(d) => {
                eprintln!("error: --defect {d} applies to the reference API (`tminus reference --defect`), not the client");
                return 2;
            }
            Err(e) => {
                eprintln!("error: --defect: {e}");
                return 2;
            }
        }
    }
    if !(a.url.starts_with("http://") || a.url.starts_with("https://")) {
        eprintln!(
            "error: --url `{}` must start with http:// or https://",
            a.url
        );
        return 2;
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return 3;
        }
    };
    rt.block_on(run(a, defects))
}

async fn run(a: ClientArgs, defects: Vec<Defect>) -> i32 {
    let has = |d: Defect| defects.contains(&d);
    let http = match reqwest::Client::builder()
        .timeout(a.request_timeout)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return 3;
        }
    };
    if let Some(list) = &a.poll {
        let url = format!("{}{list}", a.url.trim_end_matches('/'));
        return super::client_poll::walk(&a, &http, &url, &has).await;
    }
    let url = format!("{}{}", a.url.trim_end_matches('/'), a.path);
    // The defect `client-one-key-for-all`: the first operation's key, kept.
    let first_key = uuid::Uuid::new_v4().to_string();
    for op in 0..a.operations {
        let body = serde_json::to_vec(&serde_json::json!({
            "contact_id": 1,
            "text": format!("tminus reference client, operation {}", op + 1),
        }))
        .unwrap_or_default();
        let mut key = if has(Defect::ClientOneKeyForAll) {
            first_key.clone()
        } else {
            uuid::Uuid::new_v4().to_string()
        };
        let started = Instant::now();
        let mut attempt: u32 = 0;
        // One trace per operation (W3C Trace Context): every attempt is a
        // new span of it, with a parent-id of its own.
        let mut trace = random_hex(16);
        let headers = loop {
            attempt += 1;
            if attempt > 1 && has(Defect::ClientNewKeyPerAttempt) {
                key = uuid::Uuid::new_v4().to_string();
            }
            // The defect: every attempt starts a trace of its own.
            if attempt > 1 && has(Defect::ClientNewTracePerRetry) {
                trace = random_hex(16);
            }
            let send = || {
                let mut req = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.clone());
                if !has(Defect::ClientNoKey) {
                    req = req.header("Idempotency-Key", &key);
                }
                if !has(Defect::ClientNoTraceparent) {
                    req = req.header("traceparent", format!("00-{trace}-{}-01", random_hex(8)));
                }
                async {
                    match req.send().await {
                        Ok(resp) => classify(resp.status().as_u16(), resp.headers(), &has),
                        Err(e) => Next::Retry {
                            retry_after: None,
                            why: format!("transport error: {e}"),
                        },
                    }
                }
            };
            spend_cpu(a.cpu_per_request);
            let mut next = send().await;
            if has(Defect::ClientRetryStorm) {
                // The defect: an inner (SDK) layer re-sends a retryable 503 at
                // once, and the outer layer still retries on top of it.
                let mut resends = 0;
                while resends < STORM_RESENDS
                    && matches!(&next, Next::Retry { why, .. } if why == "status 503")
                {
                    next = send().await;
                    resends += 1;
                }
            }
            let (retry_after, why) = match next {
                Next::Done(h) => break h,
                Next::Replayed => {
                    // The defect: "replayed" read as "not done by this request",
                    // so the operation is sent again under a fresh key.
                    key = uuid::Uuid::new_v4().to_string();
                    (None, "a replayed answer, taken as not executed".to_owned())
                }
                Next::GiveUp(why) => {
                    eprintln!(
                        "operation {}: giving up after attempt {attempt}: {why}",
                        op + 1
                    );
                    return 1;
                }
                Next::Retry { retry_after, why } => (retry_after, why),
            };
            let unbounded = has(Defect::ClientUnbounded);
            if attempt >= a.max_attempts && !unbounded {
                eprintln!(
                    "operation {}: giving up after {attempt} attempts (last: {why})",
                    op + 1
                );
                return 1;
            }
            let honours_ra = retry_after.is_some() && !has(Defect::ClientIgnoresRetryAfter);
            let backoff = backoff(&a, attempt - 1, honours_ra, &has);
            let wait = match retry_after {
                Some(ra) if !has(Defect::ClientIgnoresRetryAfter) => {
                    if ra > a.max_wait && !unbounded {
                        eprintln!(
                            "operation {}: giving up: Retry-After {} s exceeds the longest wait accepted ({} s)",
                            op + 1,
                            ra.as_secs_f64(),
                            a.max_wait.as_secs_f64()
                        );
                        return 1;
                    }
                    if has(Defect::ClientNoJitter) {
                        ra
                    } else {
                        ra + backoff
                    }
                }
                _ => backoff,
            };
            if started.elapsed() + wait > a.deadline && !unbounded {
                eprintln!(
                    "operation {}: giving up: the next wait would pass the {} s budget",
                    op + 1,
                    a.deadline.as_secs_f64()
                );
                return 1;
            }
            eprintln!(
                "operation {} attempt {attempt}: {why}; retrying in {} ms",
                op + 1,
                wait.as_millis()
            );
            tokio::time::sleep(wait).await;
        };
        eprintln!("operation {}: done after {attempt} attempt(s)", op + 1);
        if op + 1 < a.operations && !has(Defect::ClientIgnoresRemaining) {
            if let Some(pause) = pacing(&headers, a.low_remaining) {
                tokio::time::sleep(pause.min(a.max_wait)).await;
            }
        }
    }
    0
}

pub(super) fn classify(
    status: u16,
    h: &reqwest::header::HeaderMap,
    has: &dyn Fn(Defect) -> bool,
) -> Next {
    let raw = h.get("retry-after").and_then(|v| v.to_str().ok());
    if let Some(v) =
        raw.filter(|v| has(Defect::ClientCrashesOnHttpDate) && v.trim().parse::<u64>().is_err())
    {
        // The defect: an integer-only parser, unwrapped, as a crash looks.
        eprintln!("thread 'main' panicked: Retry-After {v:?}: invalid digit found in string");
        std::process::exit(101);
    }
    let ra = raw.and_then(parse_retry_after);
    let why = format!("status {status}");
    let replayed = h
        .get("idempotent-replayed")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| matches!(v.trim(), "1" | "true" | "?1"));
    match status {
        200..=299 if replayed && has(Defect::ClientRejectsReplay) => Next::Replayed,
        200..=299 => Next::Done(h.clone()),
        429 | 409 => Next::Retry {
            retry_after: ra,
            why,
        },
        503 if ra.is_some() || has(Defect::ClientRetries503Blindly) => Next::Retry {
            retry_after: ra,
            why,
        },
        503 => Next::GiveUp("503 without Retry-After".into()),
        500 | 502 | 504 => Next::Retry {
            retry_after: ra,
            why,
        },
        400..=499 if has(Defect::ClientRetries4xx) => Next::Retry {
            retry_after: ra,
            why,
        },
        _ => Next::GiveUp(format!("{why} is not retryable")),
    }
}

/// Spins until this thread has used `d` of CPU time (not wall time: on a
/// busy machine the work takes longer, as an interpreter's would).
fn spend_cpu(d: Duration) {
    if d.is_zero() {
        return;
    }
    let cpu = || {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes into the timespec it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    };
    let start = cpu();
    let deadline = Instant::now() + d * 100;
    let mut x = 0u64;
    while cpu() - start < d && Instant::now() < deadline {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// The n-th retry's backoff: full jitter, random(0, min(max_delay, base*2^n)).
/// `after_ra`: it is added on top of a Retry-After (spreading a herd).
pub(super) fn backoff(
    a: &ClientArgs,
    n: u32,
    after_ra: bool,
    has: &dyn Fn(Defect) -> bool,
) -> Duration {
    let fixed = has(Defect::ClientFixedBackoff);
    if fixed && !after_ra {
        // The defect: a constant interval, never growing.
        return a.base_delay;
    }
    let growth = if fixed {
        1
    } else {
        2u32.saturating_pow(n.min(20))
    };
    let ceiling = a.base_delay.saturating_mul(growth).min(a.max_delay);
    if has(Defect::ClientNoJitter) {
        return ceiling;
    }
    ceiling.mul_f64(rand::rng().random_range(0.0..=1.0))
}

/// With a low Remaining: the reset window spread over the requests left
/// (the whole window when none are left). Reset may be delta seconds or an
/// epoch timestamp.
pub(super) fn pacing(h: &reqwest::header::HeaderMap, low: u64) -> Option<Duration> {
    let num = |k: &str| h.get(k)?.to_str().ok()?.trim().parse::<f64>().ok();
    let remaining = num("x-ratelimit-remaining")?;
    if remaining >= low as f64 {
        return None;
    }
    let mut reset = num("x-ratelimit-reset")?;
    if reset > 1e9 {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .ok()?
            .as_secs_f64();
        reset -= now;
    }
    let reset = reset.clamp(0.0, 3600.0);
    Some(Duration::from_secs_f64(reset / (remaining.max(0.0) + 1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, retry_after: Option<&str>) -> Next {
        let mut h = reqwest::header::HeaderMap::new();
        if let Some(v) = retry_after {
            h.insert("retry-after", v.parse().unwrap());
        }
        classify(status, &h, &|_| false)
    }

    #[test]
    fn retry_after_forms() {
        let wait = |n: Next| match n {
            Next::Retry { retry_after, .. } => retry_after,
            _ => panic!("not a retry"),
        };
        assert_eq!(wait(answer(429, Some("3"))), Some(Duration::from_secs(3)));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(5));
        let d = wait(answer(429, Some(&later))).unwrap();
        assert!(
            d > Duration::from_millis(3500) && d <= Duration::from_secs(5),
            "{d:?}"
        );
        assert_eq!(
            wait(answer(429, Some("Wed, 21 Oct 2015 07:28:00 GMT"))),
            Some(Duration::ZERO)
        );
        assert_eq!(wait(answer(429, Some("soon"))), None);
        // RFC 9110: delay-seconds has no sign or fraction, so a 503 with
        // `-1` or `1.5` is a 503 without Retry-After.
        for bad in ["-1", "1.5"] {
            assert!(matches!(answer(503, Some(bad)), Next::GiveUp(_)), "{bad}");
        }
        assert!(matches!(answer(503, Some("2")), Next::Retry { .. }));
    }

    #[test]
    fn pacing_spreads_the_window() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("x-ratelimit-remaining", "3".parse().unwrap());
        h.insert("x-ratelimit-reset", "2".parse().unwrap());
        assert_eq!(pacing(&h, 5), Some(Duration::from_millis(500)));
        assert_eq!(pacing(&h, 3), None);
        h.insert("x-ratelimit-remaining", "0".parse().unwrap());
        assert_eq!(pacing(&h, 5), Some(Duration::from_secs(2)));
    }
}
