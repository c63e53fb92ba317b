//! Rate limiting of `/public/v1/*`, per API key: a fixed window aligned to
//! epoch multiples of the window (or a sliding log), with limit fields on
//! every response, 4xx included, and `429` + `Retry-After` (seconds) +
//! `RATE_LIMIT_EXCEEDED` when over. The fields are those of the dialects in
//! [`RateLimitConfig::dialects`] (`--rate-limit-dialect`); by default
//! `X-RateLimit-Limit/Remaining/Reset` (Reset = epoch seconds) and the IETF
//! draft-8+ `RateLimit-Policy` / `RateLimit`.
//!
//! The API key `ref_load_key` ([`LOAD_API_KEY`]) is exempt: the burst
//! rehearsal uses it, and a load test against a rate-limited key would only
//! measure 429s. Defaults (100 requests per 1 s window) are far above what a
//! functional suite sends, and the window resets within a second after a
//! storm. Windows are aligned to whole seconds so that `Reset - Date` is an
//! exact integer: the checks read Reset against the `Date` header, and both
//! are computed from the same instant here.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::defect::Defect;
use super::state::AppState;

/// The API key exempt from rate limiting (used by the burst rehearsal).
pub const LOAD_API_KEY: &str = "ref_load_key";

/// How long `slow-429` holds a rejection.
const SLOW_429: Duration = Duration::from_millis(300);
/// Under `storm-5xx`, rejections in one window beyond this many become 503.
const STORM_5XX_AFTER: u64 = 10;
/// Buckets kept before stale ones are swept (random bad keys must not grow memory).
const MAX_BUCKETS: usize = 10_000;

/// A family of limit fields the reference can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateLimitDialect {
    /// `X-RateLimit-Limit/Remaining/Reset`, Reset in epoch seconds.
    Legacy,
    /// The IETF draft's early revisions (-00 to -06) as express-rate-limit's
    /// `draft-6` sends them: `RateLimit-Limit`, `RateLimit-Remaining`,
    /// `RateLimit-Reset` (delta seconds) and `RateLimit-Policy: 100;w=60`.
    Draft6,
    /// Draft-7: `RateLimit: limit=100, remaining=50, reset=30` and
    /// `RateLimit-Policy: 100;w=60`.
    Draft7,
    /// Draft-8 and later: `RateLimit-Policy: "default";q=100;w=1` and
    /// `RateLimit: "default";r=50;t=1`.
    Ietf,
}

impl RateLimitDialect {
    /// `all`: every dialect that can share a response (draft-7 and the
    /// structured form both need `RateLimit`).
    pub const ALL: [RateLimitDialect; 3] = [
        RateLimitDialect::Legacy,
        RateLimitDialect::Draft6,
        RateLimitDialect::Draft7,
    ];

    /// `legacy,draft6`, `all`, …: the dialects, checked to fit one response.
    pub fn parse_list(s: &str) -> Result<Vec<RateLimitDialect>, String> {
        let mut out = Vec::new();
        for word in s.split(',').map(str::trim) {
            let add: &[RateLimitDialect] = match word {
                "legacy" => &[RateLimitDialect::Legacy],
                "draft6" => &[RateLimitDialect::Draft6],
                "draft7" => &[RateLimitDialect::Draft7],
                "ietf" => &[RateLimitDialect::Ietf],
                "all" => &Self::ALL,
                other => {
                    return Err(format!(
                        "`{other}` is not legacy, draft6, draft7, ietf or all"
                    ))
                }
            };
            for d in add {
                if !out.contains(d) {
                    out.push(*d);
                }
            }
        }
        if out.contains(&RateLimitDialect::Draft7) && out.contains(&RateLimitDialect::Ietf) {
            return Err(
                "draft7 and ietf cannot share a response (both are the `RateLimit` field)".into(),
            );
        }
        Ok(out)
    }
}

/// The reference's limit.
#[derive(Debug, Clone)]
pub struct RateLimitConfig {
    /// Requests per window per API key.
    pub limit: u64,
    /// Window length; whole seconds, at least 1 s.
    pub window: Duration,
    /// Sliding log instead of fixed, epoch-aligned windows.
    pub sliding: bool,
    /// Keys never limited (and given no limit headers).
    pub exempt_keys: Vec<String>,
    /// Send the limit fields (and Retry-After); `false` is the limiter
    /// that says nothing but 429, which a declared quota paces against.
    pub headers: bool,
    /// The limit fields sent (with `headers`).
    pub dialects: Vec<RateLimitDialect>,
    /// A second, per-day limit per key (the seed's platform answers 429
    /// for either): epoch-aligned days.
    pub daily: Option<u64>,
}

/// The window of the per-day limit.
const DAY: u64 = 86_400;

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            limit: 100,
            window: Duration::from_secs(1),
            sliding: false,
            exempt_keys: vec![LOAD_API_KEY.into()],
            headers: true,
            dialects: vec![RateLimitDialect::Legacy, RateLimitDialect::Ietf],
            daily: None,
        }
    }
}

#[derive(Default)]
struct Bucket {
    /// Fixed window: index of the current window.
    idx: u64,
    count: u64,
    rejected: u64,
    /// `short-retry-after`: the window was started full because the previous one overflowed.
    carried: bool,
    /// Sliding log: admission times in epoch seconds.
    log: VecDeque<f64>,
    /// The per-day limit: index of the day and requests admitted in it.
    day_idx: u64,
    day_count: u64,
}

/// One admission decision and the header values that go with it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Decision {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    /// Epoch second at which the window resets.
    pub reset: u64,
    /// Whole seconds from `now` to `reset`, at least 1.
    pub retry_after: u64,
    pub window: u64,
    pub rejected: u64,
}

/// Middleware state: the config and the buckets.
#[derive(Clone)]
pub(crate) struct Limiter {
    app: AppState,
    buckets: Arc<Mutex<HashMap<String, Bucket>>>,
}

impl Limiter {
    pub(crate) fn new(app: &AppState) -> Self {
        Limiter {
            app: app.clone(),
            buckets: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

/// The pure admission rule, so it can be unit-tested with a chosen clock.
fn admit(b: &mut Bucket, now: f64, cfg: &RateLimitConfig, carry: bool) -> Decision {
    let w = cfg.window.as_secs().max(1);
    let limit = cfg.limit;
    if cfg.sliding {
        while b.log.front().is_some_and(|t| *t <= now - w as f64) {
            b.log.pop_front();
        }
        let allowed = (b.log.len() as u64) < limit;
        if allowed {
            b.log.push_back(now);
        } else {
            b.rejected += 1;
        }
        let oldest = b.log.front().copied().unwrap_or(now);
        let reset = (oldest + w as f64).ceil() as u64;
        let remaining = limit.saturating_sub(b.log.len() as u64);
        return decision(allowed, limit, remaining, reset, now, w, b.rejected);
    }
    let idx = now as u64 / w;
    if idx != b.idx {
        // `short-retry-after`: a window that overflowed leaves the next one
        // full too (once), while Retry-After only names the window end.
        let overflowed = b.rejected > 0 && !b.carried && idx == b.idx + 1;
        b.idx = idx;
        b.rejected = 0;
        b.carried = carry && overflowed;
        b.count = if b.carried { limit } else { 0 };
    }
    let allowed = b.count < limit;
    if allowed {
        b.count += 1;
    } else {
        b.rejected += 1;
    }
    let reset = (idx + 1) * w;
    decision(
        allowed,
        limit,
        limit - b.count.min(limit),
        reset,
        now,
        w,
        b.rejected,
    )
}

fn decision(
    allowed: bool,
    limit: u64,
    remaining: u64,
    reset: u64,
    now: f64,
    w: u64,
    rejected: u64,
) -> Decision {
    Decision {
        allowed,
        limit,
        remaining,
        reset,
        retry_after: (reset.saturating_sub(now.floor() as u64)).max(1),
        window: w,
        rejected,
    }
}

fn bearer(req: &Request) -> String {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .map(|(_, t)| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "anonymous".into())
}

fn set(resp: &mut Response, name: &'static str, value: String) {
    if let Ok(v) = HeaderValue::from_str(&value) {
        resp.headers_mut().insert(HeaderName::from_static(name), v);
    }
}

fn stamp(
    resp: &mut Response,
    d: &Decision,
    day: Option<&Decision>,
    date: SystemTime,
    app: &AppState,
) {
    // One instant for Date and Reset, so Reset - Date is exact.
    set(resp, "date", httpdate::fmt_http_date(date));
    if app.has(Defect::NoRateLimitHeaders) || !app.config().rate_limit.headers {
        return;
    }
    let date_secs = date
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let dialects = &app.config().rate_limit.dialects;
    let has = |x: RateLimitDialect| dialects.contains(&x);
    let delta = |d: &Decision| d.reset.saturating_sub(date_secs);
    if has(RateLimitDialect::Legacy) {
        set(resp, "x-ratelimit-limit", d.limit.to_string());
        set(resp, "x-ratelimit-remaining", d.remaining.to_string());
        set(resp, "x-ratelimit-reset", d.reset.to_string());
    }
    if has(RateLimitDialect::Draft6) {
        set(resp, "ratelimit-limit", d.limit.to_string());
        set(resp, "ratelimit-remaining", d.remaining.to_string());
        set(resp, "ratelimit-reset", delta(d).to_string());
    }
    if has(RateLimitDialect::Draft7) {
        set(
            resp,
            "ratelimit",
            format!(
                "limit={}, remaining={}, reset={}",
                d.limit,
                d.remaining,
                delta(d)
            ),
        );
    }
    let early_policy = has(RateLimitDialect::Draft6) || has(RateLimitDialect::Draft7);
    // The early form, shared by draft-6 and draft-7 (the structured form's
    // own policy takes the field when it is sent too): one quota per window,
    // the deciding one first.
    if early_policy && !has(RateLimitDialect::Ietf) {
        let mut policy = format!("{};w={}", d.limit, d.window);
        if let Some(day) = day.filter(|day| day.window != d.window) {
            policy.push_str(&format!(", {};w={}", day.limit, day.window));
        }
        set(resp, "ratelimit-policy", policy);
    }
    if has(RateLimitDialect::Ietf) {
        let mut policy = format!("\"default\";q={};w={}", d.limit, d.window);
        let mut limit = format!("\"default\";r={};t={}", d.remaining, delta(d));
        if let Some(day) = day {
            policy.push_str(&format!(", \"day\";q={};w={}", day.limit, day.window));
            limit.push_str(&format!(", \"day\";r={};t={}", day.remaining, delta(day)));
        }
        set(resp, "ratelimit-policy", policy);
        set(resp, "ratelimit", limit);
    }
}

/// The window decision, and the day's when a per-day limit is set: a
/// request is admitted only when both allow it, and a day that is used up
/// decides the answer (its reset is the one to wait for).
fn admit_with_daily(
    b: &mut Bucket,
    now: f64,
    cfg: &RateLimitConfig,
    carry: bool,
) -> (Decision, Option<Decision>) {
    let Some(daily) = cfg.daily else {
        return (admit(b, now, cfg, carry), None);
    };
    let idx = now as u64 / DAY;
    if idx != b.day_idx {
        b.day_idx = idx;
        b.day_count = 0;
    }
    let day = |count: u64, allowed: bool, rejected: u64| {
        decision(
            allowed,
            daily,
            daily.saturating_sub(count),
            (idx + 1) * DAY,
            now,
            DAY,
            rejected,
        )
    };
    if b.day_count >= daily {
        b.rejected += 1;
        let d = day(b.day_count, false, b.rejected);
        return (d, Some(d));
    }
    let d = admit(b, now, cfg, carry);
    if d.allowed {
        b.day_count += 1;
    }
    (d, Some(day(b.day_count, true, 0)))
}

/// Route layer on `/public/v1/*`, outside auth so 401s are limited and stamped too.
pub(crate) async fn limit(State(l): State<Limiter>, req: Request, next: Next) -> Response {
    let app = &l.app;
    let cfg = &app.config().rate_limit;
    let token = bearer(&req);
    if cfg.exempt_keys.contains(&token) {
        return next.run(req).await;
    }
    let key = if app.has(Defect::GlobalBucket) {
        "*".to_owned()
    } else {
        token
    };
    let decide = |date: SystemTime| {
        let now = date
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let mut buckets = l.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() > MAX_BUCKETS {
            let w = cfg.window.as_secs().max(1);
            buckets.retain(|_, b| b.idx + 1 >= now as u64 / w || !b.log.is_empty());
        }
        let b = buckets.entry(key.clone()).or_default();
        (
            now,
            admit_with_daily(b, now, cfg, app.has(Defect::ShortRetryAfter)),
        )
    };
    let mut date = SystemTime::now();
    let (mut now, mut d) = decide(date);
    if !d.0.allowed && app.has(Defect::Slow429) {
        // The rejection is slow and decided at its end, so the Retry-After it
        // carries is true when it is sent: only its latency is the defect.
        // (Decided before the pause, a 429 could arrive after its own window
        // had reset, and `rl-recovery` saw "the limit is not real".)
        tokio::time::sleep(SLOW_429).await;
        date = SystemTime::now();
        (now, d) = decide(date);
    }
    let (d, day) = d;
    if d.allowed {
        let mut resp = next.run(req).await;
        stamp(&mut resp, &d, day.as_ref(), date, app);
        return resp;
    }
    if app.has(Defect::Storm5xx) && d.rejected > STORM_5XX_AFTER {
        let body = json!({"error": {"code": "SERVICE_UNAVAILABLE", "message": "overloaded"}});
        return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    }
    let body = json!({"error": {
        "code": "RATE_LIMIT_EXCEEDED",
        "message": format!("rate limit of {} requests per {} s exceeded", d.limit, d.window),
    }});
    let mut resp = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
    stamp(&mut resp, &d, day.as_ref(), date, app);
    if !app.has(Defect::NoRetryAfter) && cfg.headers {
        let retry_after = if app.has(Defect::RetryAfterTruncated) {
            // `int(reset - now)`: the rest of the wait rounded down.
            (d.reset as f64 - now).max(0.0).floor() as u64
        } else {
            d.retry_after
        };
        set(&mut resp, "retry-after", retry_after.to_string());
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(limit: u64) -> RateLimitConfig {
        RateLimitConfig {
            limit,
            ..RateLimitConfig::default()
        }
    }

    #[test]
    fn fixed_window_counts_and_resets_on_the_second() {
        let c = cfg(2);
        let mut b = Bucket::default();
        let t = 1_700_000_000.2;
        let d1 = admit(&mut b, t, &c, false);
        assert!(d1.allowed && d1.remaining == 1 && d1.reset == 1_700_000_001);
        assert!(admit(&mut b, t + 0.1, &c, false).allowed);
        let d3 = admit(&mut b, t + 0.2, &c, false);
        assert!(!d3.allowed && d3.remaining == 0 && d3.retry_after == 1);
        assert!(admit(&mut b, t + 0.9, &c, false).allowed);
    }

    #[test]
    fn short_retry_after_carries_one_window_only() {
        let c = cfg(1);
        let mut b = Bucket::default();
        let t = 1_700_000_000.2;
        admit(&mut b, t, &c, true);
        assert!(!admit(&mut b, t + 0.1, &c, true).allowed);
        // Next window: still blocked (the defect), though Retry-After said 1 s.
        assert!(!admit(&mut b, t + 1.0, &c, true).allowed);
        // The window after: served again.
        assert!(admit(&mut b, t + 2.0, &c, true).allowed);
    }

    #[test]
    fn a_used_up_day_decides_until_midnight() {
        let c = RateLimitConfig {
            daily: Some(3),
            ..cfg(2)
        };
        let mut b = Bucket::default();
        let t = 1_700_000_000.2; // 22:13:20 UTC
        assert!(admit_with_daily(&mut b, t, &c, false).0.allowed);
        assert!(admit_with_daily(&mut b, t, &c, false).0.allowed);
        assert!(
            !admit_with_daily(&mut b, t, &c, false).0.allowed,
            "the window"
        );
        let (d, day) = admit_with_daily(&mut b, t + 1.0, &c, false);
        assert!(d.allowed && day.unwrap().remaining == 0);
        let (d, _) = admit_with_daily(&mut b, t + 2.0, &c, false);
        assert!(!d.allowed && d.window == DAY);
        assert_eq!(d.retry_after, 1_700_006_400 - 1_700_000_002);
    }

    #[test]
    fn dialect_lists() {
        use RateLimitDialect::*;
        let p = RateLimitDialect::parse_list;
        assert_eq!(
            p("legacy,ietf").unwrap(),
            RateLimitConfig::default().dialects
        );
        assert_eq!(p("draft6").unwrap(), vec![Draft6]);
        assert_eq!(p("all, legacy").unwrap(), vec![Legacy, Draft6, Draft7]);
        assert!(p("draft7,ietf").unwrap_err().contains("cannot share"));
        assert!(p("draft9").unwrap_err().contains("`draft9`"));
    }

    #[test]
    fn sliding_log() {
        let c = RateLimitConfig {
            sliding: true,
            ..cfg(2)
        };
        let mut b = Bucket::default();
        assert!(admit(&mut b, 100.0, &c, false).allowed);
        assert!(admit(&mut b, 100.5, &c, false).allowed);
        let d = admit(&mut b, 100.7, &c, false);
        assert!(!d.allowed && d.reset == 101);
        assert!(admit(&mut b, 101.1, &c, false).allowed);
    }
}
