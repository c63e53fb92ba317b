//! The request budget: tminus as a polite client of the quota it certifies.
//!
//! Every response teaches the book what the target said about the quota of
//! the credential that sent it: legacy `X-RateLimit-*` (and the early IETF
//! draft's separate `RateLimit-Limit/-Remaining/-Reset`), IETF `RateLimit` /
//! `RateLimit-Policy` (draft-7 dictionary and draft-8+ structured form, one
//! or several policies), and `Retry-After` (seconds or an HTTP-date). A
//! declared quota (`target.rate_limit: 60/1m`, `--quota`) stands in for a
//! target that sends none: the book then counts its own sends.
//!
//! The book is read leniently: judging a limiter's headers is the
//! rate_limit family's job (`families::rate_limit::fields`, strict); here a
//! field that does not parse is simply not learned from.
//!
//! A polite [`super::Client`] consults the book before each send (a
//! credential that is blocked, or out of requests until a known reset, waits)
//! and answers a 429 (or a 503 with `Retry-After`) by waiting as asked and
//! sending the same request again. Every wait is announced as a note, counted,
//! and bounded by one run-wide budget (`--max-quota-wait`): a wait that would
//! pass it is an error naming the credential and the block, never a 24-hour
//! sleep. Cancellation drops the waiting future, so Ctrl-C ends a wait.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc::UnboundedSender;

use super::RecordedResponse;
use crate::model::retry_after::RetryAfter;

/// `24 h` for long blocks, [`crate::fmt_duration`] below an hour.
pub fn fmt_wait(d: Duration) -> String {
    if d >= Duration::from_secs(3600) {
        let h = (d.as_secs_f64() / 360.0).round() / 10.0;
        format!("{h} h")
    } else {
        crate::fmt_duration(d)
    }
}

/// The run-wide wait budget when none is given (`--max-quota-wait`).
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(15 * 60);
/// Added to every computed wait: a reset computed from whole seconds lands
/// on the boundary, and a request a hair early meets the old window.
pub const WAIT_MARGIN: Duration = Duration::from_millis(50);
/// A 429 with no hint at all: backoff from this, doubling, with full jitter
/// above half the step...
pub const HINTLESS_FIRST: Duration = Duration::from_secs(1);
/// ...capped at this...
pub const HINTLESS_CAP: Duration = Duration::from_secs(30);
/// ...for at most this many waits in a row, then the request is an error.
pub const HINTLESS_TRIES: u32 = 6;
/// How many times one request is sent again after being asked to wait (a
/// target that says `Retry-After: 0` forever must not hold tminus).
pub const MAX_RESENDS: u32 = 20;
/// Credentials the book keeps state for (a suite with random keys per
/// request must not grow memory).
const MAX_CREDENTIALS: usize = 1024;

/// A quota declared for a target that sends no rate-limit fields:
/// `limit` requests per `window`, per credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclaredQuota {
    pub limit: u64,
    pub window: Duration,
}

impl DeclaredQuota {
    /// `60/1m`, `100/1s`, `2000/60s`, `10000/1d`.
    pub fn parse(s: &str) -> Result<DeclaredQuota, String> {
        let bad = || format!("`{s}` is not a quota: expected REQUESTS/WINDOW, e.g. 60/1m");
        let (n, w) = s.trim().split_once('/').ok_or_else(bad)?;
        let limit: u64 = n.trim().parse().map_err(|_| bad())?;
        let w = w.trim();
        let window = match w.strip_suffix('d') {
            Some(days) if !days.is_empty() => {
                Duration::from_secs(days.parse::<u64>().map_err(|_| bad())? * 86_400)
            }
            _ => crate::model::scalar::parse_duration(w).map_err(|_| bad())?,
        };
        if limit == 0 || window.is_zero() {
            return Err(format!(
                "`{s}`: a quota needs at least one request per non-zero window"
            ));
        }
        Ok(DeclaredQuota { limit, window })
    }
}

impl std::fmt::Display for DeclaredQuota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.window.as_secs();
        let (n, unit) = match s {
            _ if self.window.subsec_nanos() != 0 => {
                return write!(f, "{}/{}", self.limit, fmt_wait(self.window))
            }
            _ if s.is_multiple_of(86_400) => (s / 86_400, "d"),
            _ if s.is_multiple_of(3600) => (s / 3600, "h"),
            _ if s.is_multiple_of(60) => (s / 60, "m"),
            _ => (s, "s"),
        };
        write!(f, "{}/{n}{unit}", self.limit)
    }
}

/// Whose quota a request spends: the origin and the values of the suite's
/// credential headers it carries (hashed: the book never holds a secret),
/// and a name for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    key: u64,
    pub label: String,
}

impl Credential {
    /// `headers` are the (name, value) pairs that identify the caller.
    pub fn new(origin: &str, headers: &[(&str, &str)], label: impl Into<String>) -> Self {
        let owned: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Credential::from_key(Credential::key_of(origin, &owned), label)
    }

    /// The book's key of an origin and its caller's header values.
    pub fn key_of(origin: &str, headers: &[(String, String)]) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        origin.to_ascii_lowercase().hash(&mut h);
        let mut pairs: Vec<(String, &str)> = headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.as_str()))
            .collect();
        pairs.sort();
        pairs.hash(&mut h);
        h.finish()
    }

    pub fn from_key(key: u64, label: impl Into<String>) -> Self {
        Credential {
            key,
            label: label.into(),
        }
    }
}

/// What one response said about its credential's quota, relative to when it
/// arrived. `None` fields were not stated (or did not parse).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hint {
    pub limit: Option<u64>,
    pub remaining: Option<u64>,
    /// Until the window (of the most constrained policy) resets.
    pub reset_in: Option<Duration>,
    pub window: Option<Duration>,
    /// `Retry-After`, resolved against the response's `Date`.
    pub retry_after: Option<Duration>,
}

impl Hint {
    /// Reads every dialect the book knows from one response.
    pub fn read(resp: &RecordedResponse, now: SystemTime) -> Hint {
        let date = resp.date();
        let mut h = Hint {
            retry_after: resp
                .header("retry-after")
                .and_then(|v| RetryAfter::parse(v).ok())
                .map(|ra| ra.resolve(date, now)),
            ..Hint::default()
        };
        // IETF structured or draft-7 `RateLimit` first: it can state several
        // policies, and the tightest one decides.
        let rl: Vec<&str> = resp.headers_all("ratelimit").collect();
        if !rl.is_empty() {
            read_ietf(&rl.join(", "), &mut h);
        }
        let policy: Vec<&str> = resp.headers_all("ratelimit-policy").collect();
        if !policy.is_empty() {
            read_policy(&policy.join(", "), &mut h);
        }
        for prefix in ["x-ratelimit-", "ratelimit-", "x-rate-limit-"] {
            let get = |n: &str| resp.header(&format!("{prefix}{n}")).map(str::trim);
            if h.limit.is_none() {
                h.limit = get("limit").and_then(first_uint);
            }
            if h.remaining.is_none() {
                h.remaining = get("remaining").and_then(first_uint);
            }
            if h.reset_in.is_none() {
                h.reset_in = get("reset").and_then(|v| reset_value(v, date, now));
            }
        }
        h
    }

    /// True when the response says nothing about the quota.
    pub fn is_empty(&self) -> bool {
        *self == Hint::default()
    }
}

/// `100` or `100, 100;w=60` (a limit may carry a policy after it).
fn first_uint(v: &str) -> Option<u64> {
    let t = v.split([',', ';']).next()?.trim();
    (!t.is_empty() && t.len() <= 18 && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
}

fn seconds(v: &str) -> Option<f64> {
    let t = v.trim().trim_matches('"');
    let ok = t.len() <= 24
        && !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && t.bytes().filter(|b| *b == b'.').count() <= 1;
    ok.then(|| t.parse::<f64>().ok()).flatten()
}

/// A Reset value: epoch seconds (from 1e9 on, read against the response's
/// Date, or the local clock without one) or delta seconds.
fn reset_value(v: &str, date: Option<SystemTime>, now: SystemTime) -> Option<Duration> {
    let s = seconds(v)?;
    if s >= 1e9 {
        let base = date.unwrap_or(now);
        let base = base.duration_since(UNIX_EPOCH).ok()?.as_secs_f64();
        Some(Duration::from_secs_f64((s - base).max(0.0)))
    } else {
        Some(Duration::from_secs_f64(s))
    }
}

/// `"default";r=50;t=30, "day";r=900;t=4000` or `limit=100, remaining=50,
/// reset=30`: the item with the fewest remaining requests decides.
fn read_ietf(v: &str, h: &mut Hint) {
    let mut best: Option<(u64, Option<Duration>)> = None;
    let mut dict = (None, None, None);
    for item in v.split(',') {
        let item = item.trim();
        if let Some((k, val)) = item.split_once('=') {
            if !item.starts_with('"') && !k.contains(';') {
                // draft-7 dictionary member
                match k.trim() {
                    "limit" => dict.0 = first_uint(val),
                    "remaining" => dict.1 = first_uint(val),
                    "reset" => dict.2 = seconds(val).map(Duration::from_secs_f64),
                    _ => {}
                }
                continue;
            }
        }
        let mut r = None;
        let mut t = None;
        for param in item.split(';').skip(1) {
            match param.trim().split_once('=') {
                Some(("r", x)) => r = first_uint(x),
                Some(("t", x)) => t = seconds(x).map(Duration::from_secs_f64),
                _ => {}
            }
        }
        if let Some(r) = r {
            if best.is_none_or(|(b, _)| r < b) {
                best = Some((r, t));
            }
        }
    }
    if let Some((r, t)) = best {
        h.remaining = Some(r);
        h.reset_in = t;
    } else {
        h.limit = h.limit.or(dict.0);
        h.remaining = dict.1;
        h.reset_in = dict.2;
    }
}

/// `"default";q=100;w=60` or `100;w=60`: the smallest quota is the limit.
fn read_policy(v: &str, h: &mut Hint) {
    let mut best: Option<(u64, Option<Duration>)> = None;
    for item in v.split(',') {
        let mut parts = item.trim().split(';');
        let head = parts.next().unwrap_or("").trim();
        let mut q = first_uint(head);
        let mut w = None;
        for p in parts {
            match p.trim().split_once('=') {
                Some(("q", x)) => q = first_uint(x),
                Some(("w", x)) => w = first_uint(x).map(Duration::from_secs),
                _ => {}
            }
        }
        if let Some(q) = q {
            if best.is_none_or(|(b, _)| q < b) {
                best = Some((q, w));
            }
        }
    }
    if let Some((q, w)) = best {
        h.limit = Some(q);
        h.window = w;
    }
}

/// What the book knows about one credential.
#[derive(Debug, Default)]
struct Ledger {
    label: String,
    limit: Option<u64>,
    window: Option<Duration>,
    /// Requests left until `reset_at` (decremented as tminus sends).
    remaining: Option<u64>,
    reset_at: Option<Instant>,
    /// The target asked tminus to wait until then (429 / 503 + Retry-After).
    blocked_until: Option<Instant>,
    /// Why it is blocked, for the note.
    blocked_why: String,
    /// The quota declared for this credential's target (`target.rate_limit`).
    declared: Option<DeclaredQuota>,
    /// Declared quota: when each request in the current window was sent.
    sent: VecDeque<Instant>,
    last_used: Option<Instant>,
    /// Requests sent in the run, for the run's per-check counts.
    total: u64,
    /// Answers the limiter counted: served (not 429) with quota fields, or
    /// any answer under a declared quota (no fields say otherwise).
    counted: u64,
    /// The first reset an answer advertised: where the window the run
    /// began in ends (the run's inherent bound counts from it).
    first_reset: Option<Instant>,
    /// Paths whose answers carry no quota fields while the credential's
    /// others do: outside the limiter (a health check, a test hook), never
    /// held back by a block or an empty window. Bounded.
    unlimited: HashSet<String>,
}

/// Paths the book remembers as outside the limiter, per credential.
const MAX_UNLIMITED_PATHS: usize = 256;

/// The part of a URL the book tells limited from unlimited paths by: the
/// path's folder (without its last segment, query or fragment), so that
/// `/__tminus/effects/a` teaches about `/__tminus/effects/b` and
/// `/public/v1/messages` about `/public/v1/contacts`.
pub fn path_key(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("/", |i| &rest[i..]);
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(0) | None => "/".to_owned(),
        Some(i) => trimmed[..i].to_owned(),
    }
}

impl Ledger {
    /// How long to wait before `n` more requests may go, and why; `None`
    /// when they may go now (or when nothing is known).
    fn wait_for(
        &mut self,
        n: u64,
        now: Instant,
        declared: Option<DeclaredQuota>,
    ) -> Option<(Instant, String)> {
        if let Some(until) = self.blocked_until.filter(|u| *u > now) {
            return Some((until, self.blocked_why.clone()));
        }
        if self.reset_at.is_some_and(|r| r <= now) {
            // The window turned: assume a full one until a response says more.
            self.remaining = self.limit;
            self.reset_at = None;
        }
        if let (Some(rem), Some(reset)) = (self.remaining, self.reset_at) {
            // A check that needs more than a whole window cannot fit in one:
            // it goes now and meets the reset on the way.
            let fits = self.limit.is_none_or(|l| n <= l);
            if rem < n && fits {
                let why = if rem == 0 {
                    "out of requests until the window resets".to_owned()
                } else {
                    format!("{rem} request(s) left in the window, {n} needed in one")
                };
                return Some((reset, why));
            }
        }
        if let Some(d) = declared.filter(|_| self.limit.is_none()) {
            while self.sent.front().is_some_and(|t| *t + d.window <= now) {
                self.sent.pop_front();
            }
            let n = n.min(d.limit);
            let used = self.sent.len() as u64;
            if used + n > d.limit {
                // The oldest sends that must leave the window first.
                let leave = (used + n - d.limit) as usize;
                let t = self.sent[leave - 1] + d.window;
                return Some((
                    t,
                    format!("the declared quota {d} is used up ({used} sent in the window)"),
                ));
            }
        }
        None
    }

    fn on_send(&mut self, now: Instant, declared: Option<DeclaredQuota>) {
        self.last_used = Some(now);
        self.total += 1;
        if let Some(r) = &mut self.remaining {
            *r = r.saturating_sub(1);
        }
        if let Some(d) = declared {
            self.sent.push_back(now);
            while self.sent.len() as u64 > d.limit {
                self.sent.pop_front();
            }
        }
    }

    /// Remembers whether `path` is inside the limiter: an answer with no
    /// quota field (and no 429) on a credential whose other answers carry
    /// them is outside. A declared quota (no fields anywhere) counts every
    /// path, since nothing says which do.
    fn learn_path(&mut self, path: &str, h: &Hint, status: u16) {
        let silent = h.remaining.is_none() && h.limit.is_none() && h.retry_after.is_none();
        if silent && status != 429 && self.limit.is_some() {
            if self.unlimited.len() < MAX_UNLIMITED_PATHS {
                self.unlimited.insert(path.to_owned());
            }
        } else {
            self.unlimited.remove(path);
        }
    }

    fn learn(&mut self, h: &Hint, at: Instant) {
        if h.remaining.is_none() && h.limit.is_none() {
            // An answer that says nothing about the quota (a health check, a
            // path outside the limiter): its request apparently did not
            // count, so the send it was charged is given back.
            if let (Some(r), Some(l)) = (&mut self.remaining, self.limit) {
                *r = (*r + 1).min(l);
            }
        }
        if let Some(l) = h.limit {
            self.limit = Some(l);
        }
        if let Some(w) = h.window {
            self.window = Some(w);
        }
        if self.first_reset.is_none() {
            self.first_reset = h.reset_in.map(|d| at + d);
        }
        if let Some(r) = h.remaining {
            self.remaining = Some(r);
            self.reset_at = h.reset_in.map(|d| at + d);
        } else if let Some(d) = h.reset_in {
            self.reset_at = Some(at + d);
        }
    }

    fn block(&mut self, until: Instant, why: String) {
        if self.blocked_until.is_none_or(|b| b < until) {
            self.blocked_until = Some(until);
            self.blocked_why = why;
        }
    }
}

/// Why a request could not be sent within the quota.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaError(pub String);

impl std::fmt::Display for QuotaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The run's quota options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaOptions {
    /// The run-wide wait budget.
    pub max_wait: Duration,
    /// For targets that send no rate-limit fields.
    pub declared: Option<DeclaredQuota>,
}

impl Default for QuotaOptions {
    fn default() -> Self {
        QuotaOptions {
            max_wait: DEFAULT_MAX_WAIT,
            declared: None,
        }
    }
}

struct Book {
    ledgers: HashMap<u64, Ledger>,
    waited: Duration,
    notes: Option<UnboundedSender<String>>,
    /// The current check's reservation per credential, taken by its first
    /// request to a limited path (see [`Quota::expect`]).
    pending: HashMap<u64, u64>,
}

/// The run's request budget, shared by every client of the run.
#[derive(Clone)]
pub struct Quota {
    opts: QuotaOptions,
    book: Arc<Mutex<Book>>,
}

impl std::fmt::Debug for Quota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quota").field("opts", &self.opts).finish()
    }
}

impl Quota {
    pub fn new(opts: QuotaOptions) -> Self {
        Quota {
            opts,
            book: Arc::new(Mutex::new(Book {
                ledgers: HashMap::new(),
                waited: Duration::ZERO,
                notes: None,
                pending: HashMap::new(),
            })),
        }
    }

    pub fn options(&self) -> QuotaOptions {
        self.opts
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where wait notes go (the current check's note channel; `None`
    /// between checks).
    pub fn set_notes(&self, notes: Option<UnboundedSender<String>>) {
        self.lock().notes = notes;
    }

    /// Requests of a credential sent so far in the run.
    pub fn sent(&self, c: &Credential) -> u64 {
        self.lock().ledgers.get(&c.key).map_or(0, |l| l.total)
    }

    /// Time spent waiting for quota so far in the run.
    pub fn waited(&self) -> Duration {
        self.lock().waited
    }

    /// The limit the book has learned for a credential (or the declared one).
    pub fn limit_of(&self, c: &Credential) -> Option<u64> {
        let b = self.lock();
        match b.ledgers.get(&c.key) {
            Some(l) => l.limit.or(self.declared_of(l).map(|d| d.limit)),
            None => self.opts.declared.map(|d| d.limit),
        }
    }

    /// The quota the book knows for a credential: the limit and window the
    /// target advertised, else the declared one.
    pub fn quota_of(&self, c: &Credential) -> Option<DeclaredQuota> {
        let b = self.lock();
        let l = b.ledgers.get(&c.key);
        let declared = l.and_then(|l| self.declared_of(l)).or(self.opts.declared);
        match l.map(|l| (l.limit, l.window)) {
            Some((Some(limit), Some(window))) if limit > 0 && !window.is_zero() => {
                Some(DeclaredQuota { limit, window })
            }
            _ => declared,
        }
    }

    /// Whether `n` requests of `c` in one window would wait now.
    pub fn would_wait(&self, c: &Credential, n: u64) -> bool {
        let mut b = self.lock();
        let l = self.ledger(&mut b, c);
        let declared = self.declared_of(l);
        l.wait_for(n, Instant::now(), declared).is_some()
    }

    /// Answers of a credential the limiter counted so far in the run.
    pub fn counted(&self, c: &Credential) -> u64 {
        self.lock().ledgers.get(&c.key).map_or(0, |l| l.counted)
    }

    /// Where the first window the book saw for a credential ends.
    pub fn first_reset_of(&self, c: &Credential) -> Option<Instant> {
        self.lock().ledgers.get(&c.key).and_then(|l| l.first_reset)
    }

    /// Declares the quota of a credential's target (`target.rate_limit`);
    /// `--quota` ([`QuotaOptions::declared`]) wins.
    pub fn declare(&self, c: &Credential, q: Option<DeclaredQuota>) {
        let mut b = self.lock();
        let l = self.ledger(&mut b, c);
        l.declared = self.opts.declared.or(q);
    }

    /// The quota declared for a credential, if any.
    fn declared_of(&self, l: &Ledger) -> Option<DeclaredQuota> {
        l.declared.or(self.opts.declared)
    }

    fn ledger<'a>(&self, b: &'a mut Book, c: &Credential) -> &'a mut Ledger {
        if b.ledgers.len() >= MAX_CREDENTIALS && !b.ledgers.contains_key(&c.key) {
            // Forget the least recently used credential.
            if let Some(old) = b
                .ledgers
                .iter()
                .min_by_key(|(_, l)| l.last_used)
                .map(|(k, _)| *k)
            {
                b.ledgers.remove(&old);
            }
        }
        let l = b.ledgers.entry(c.key).or_default();
        if l.label.is_empty() {
            l.label = c.label.clone();
        }
        l
    }

    /// Waits (announced, budgeted) until `n` requests of `c` may go.
    pub async fn reserve(&self, c: &Credential, n: u64) -> Result<(), QuotaError> {
        // Bounded: each turn either returns or sleeps until a deadline the
        // ledger named, and the budget bounds the sum of the sleeps.
        loop {
            let wait = {
                let mut b = self.lock();
                let now = Instant::now();
                let l = self.ledger(&mut b, c);
                let declared = self.declared_of(l);
                let Some((until, why)) = l.wait_for(n, now, declared) else {
                    return Ok(());
                };
                let d = until.saturating_duration_since(now) + WAIT_MARGIN;
                self.book_wait(&mut b, c, d, &why)?;
                d
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// The next check needs `n` requests of `c` inside one window: its first
    /// request to a limited path reserves them (waiting for the window when
    /// fewer are left), so requests to paths outside the limiter never wait
    /// for it. `n = 0` clears the reservation.
    pub fn expect(&self, c: &Credential, n: u64) {
        let mut b = self.lock();
        if n == 0 {
            b.pending.remove(&c.key);
        } else {
            b.pending.insert(c.key, n);
        }
    }

    /// Clears every pending reservation (the check is over).
    pub fn clear_expected(&self) {
        self.lock().pending.clear();
    }

    /// What a polite send waits for: nothing on a path outside the limiter;
    /// else the check's pending reservation (once), or one request.
    pub async fn before_send(&self, c: &Credential, url: &str) -> Result<(), QuotaError> {
        let n = {
            let mut b = self.lock();
            let path = path_key(url);
            if b.ledgers
                .get(&c.key)
                .is_some_and(|l| l.unlimited.contains(&path))
            {
                return Ok(());
            }
            b.pending.remove(&c.key).unwrap_or(1)
        };
        self.reserve(c, n).await
    }

    /// Books a wait a family makes itself for `c`'s window (a recovery
    /// check waiting out Retry-After), within the run's budget: an error
    /// when it does not fit (nothing is booked then). Announced as a note.
    pub fn charge(&self, c: &Credential, wait: Duration) -> Result<(), QuotaError> {
        let mut b = self.lock();
        self.book_wait(&mut b, c, wait, "the check's own wait")
    }

    /// Counts `d` against the run's wait budget and announces it, or says
    /// why it does not fit (then nothing is counted).
    fn book_wait(
        &self,
        b: &mut Book,
        c: &Credential,
        d: Duration,
        why: &str,
    ) -> Result<(), QuotaError> {
        let left = self.opts.max_wait.saturating_sub(b.waited);
        if d > left {
            return Err(QuotaError(format!(
                "quota: {} is blocked for {} ({why}); --max-quota-wait is {} and {} of it is left",
                c.label,
                fmt_wait(d),
                fmt_wait(self.opts.max_wait),
                fmt_wait(left)
            )));
        }
        b.waited += d;
        if let Some(n) = &b.notes {
            let _ = n.send(format!(
                "quota: waiting {} for {}'s window ({why})",
                fmt_wait(d),
                c.label
            ));
        }
        Ok(())
    }

    /// Counts one request of `c` as sent.
    pub fn on_send(&self, c: &Credential) {
        let mut b = self.lock();
        let l = self.ledger(&mut b, c);
        let declared = self.declared_of(l);
        l.on_send(Instant::now(), declared);
    }

    /// Learns from a response of `c`; a 429 (or a 503 with Retry-After)
    /// blocks the credential for as long as the target asked, and the
    /// answer says so: `Some(asked)` (`None` inside: no hint at all).
    pub fn learn(
        &self,
        c: &Credential,
        url: &str,
        resp: &RecordedResponse,
    ) -> Option<Option<Duration>> {
        let now = Instant::now();
        let h = Hint::read(resp, SystemTime::now());
        let mut b = self.lock();
        let l = self.ledger(&mut b, c);
        let spoke = h.remaining.is_some() || h.limit.is_some();
        let declared = self.declared_of(l).is_some() && l.limit.is_none();
        if resp.status != 429 && (spoke || declared) {
            l.counted += 1;
        }
        l.learn(&h, now);
        l.learn_path(&path_key(url), &h, resp.status);
        let asked_to_wait = resp.status == 429 || (resp.status == 503 && h.retry_after.is_some());
        if !asked_to_wait {
            return None;
        }
        let (wait, why) = match (h.retry_after, h.reset_in) {
            (Some(ra), _) => (
                ra,
                format!("{} with Retry-After: {}", resp.status, fmt_wait(ra)),
            ),
            (None, Some(reset)) if h.remaining == Some(0) => {
                (reset, format!("{} until the advertised reset", resp.status))
            }
            _ => return Some(None),
        };
        l.block(now + wait, why);
        Some(Some(wait))
    }

    /// Blocks `c` for a backoff the book chose itself (a 429 with no hint).
    pub fn block_for(&self, c: &Credential, wait: Duration, why: String) {
        let mut b = self.lock();
        self.ledger(&mut b, c).block(Instant::now() + wait, why);
    }
}

/// The backoff before hintless retry `attempt` (1-based): exponential from
/// [`HINTLESS_FIRST`], capped at [`HINTLESS_CAP`], the upper half jittered so
/// that many callers do not come back together.
pub fn hintless_backoff(attempt: u32) -> Duration {
    let step = HINTLESS_FIRST
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(HINTLESS_CAP);
    step / 2 + step.mul_f64(rand::random::<f64>() / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(status: u16, headers: &[(&str, &str)]) -> RecordedResponse {
        RecordedResponse {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
        }
    }

    const DATE: &str = "Tue, 14 Nov 2023 22:13:20 GMT"; // 1700000000

    #[test]
    fn reads_every_dialect() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let legacy = Hint::read(
            &resp(
                200,
                &[
                    ("Date", DATE),
                    ("X-RateLimit-Limit", "60"),
                    ("X-RateLimit-Remaining", "7"),
                    ("X-RateLimit-Reset", "1700000030"),
                ],
            ),
            now,
        );
        assert_eq!(
            (legacy.limit, legacy.remaining, legacy.reset_in),
            (Some(60), Some(7), Some(Duration::from_secs(30)))
        );
        let early = Hint::read(
            &resp(
                200,
                &[
                    ("RateLimit-Limit", "20"),
                    ("RateLimit-Remaining", "3"),
                    ("RateLimit-Reset", "9"),
                ],
            ),
            now,
        );
        assert_eq!(
            (early.limit, early.remaining, early.reset_in),
            (Some(20), Some(3), Some(Duration::from_secs(9)))
        );
        // express-rate-limit's `draft-6`: the policy gives the window, and a
        // Reset that is delta seconds is never taken for an epoch time.
        let express = Hint::read(
            &resp(
                200,
                &[
                    ("Date", DATE),
                    ("RateLimit-Policy", "100;w=60"),
                    ("RateLimit-Limit", "100"),
                    ("RateLimit-Remaining", "99"),
                    ("RateLimit-Reset", "59"),
                ],
            ),
            now,
        );
        assert_eq!(
            (
                express.limit,
                express.remaining,
                express.reset_in,
                express.window
            ),
            (
                Some(100),
                Some(99),
                Some(Duration::from_secs(59)),
                Some(Duration::from_secs(60))
            )
        );
        // Revisions -00 to -04: the limit field carries its policies.
        let inline = Hint::read(
            &resp(
                200,
                &[
                    ("RateLimit-Limit", "10, 10;w=1, 50;w=60"),
                    ("RateLimit-Remaining", "4"),
                    ("RateLimit-Reset", "1"),
                ],
            ),
            now,
        );
        assert_eq!(
            (inline.limit, inline.remaining, inline.reset_in),
            (Some(10), Some(4), Some(Duration::from_secs(1)))
        );
        let sf = Hint::read(
            &resp(
                200,
                &[
                    ("RateLimit", "\"minute\";r=5;t=30, \"day\";r=900;t=4000"),
                    (
                        "RateLimit-Policy",
                        "\"minute\";q=60;w=60, \"day\";q=10000;w=86400",
                    ),
                ],
            ),
            now,
        );
        assert_eq!(
            (sf.limit, sf.remaining, sf.reset_in, sf.window),
            (
                Some(60),
                Some(5),
                Some(Duration::from_secs(30)),
                Some(Duration::from_secs(60))
            )
        );
        let d7 = Hint::read(
            &resp(
                200,
                &[
                    ("RateLimit", "limit=100, remaining=0, reset=12"),
                    ("RateLimit-Policy", "100;w=60"),
                ],
            ),
            now,
        );
        assert_eq!(
            (d7.limit, d7.remaining, d7.reset_in),
            (Some(100), Some(0), Some(Duration::from_secs(12)))
        );
        let ra = Hint::read(
            &resp(
                429,
                &[
                    ("Date", DATE),
                    ("Retry-After", "Tue, 14 Nov 2023 22:13:50 GMT"),
                ],
            ),
            now,
        );
        assert_eq!(ra.retry_after, Some(Duration::from_secs(30)));
        assert!(Hint::read(&resp(200, &[("X-RateLimit-Limit", "lots")]), now).is_empty());
    }

    #[test]
    fn declared_quota_parses() {
        assert_eq!(
            DeclaredQuota::parse("60/1m").unwrap(),
            DeclaredQuota {
                limit: 60,
                window: Duration::from_secs(60)
            }
        );
        assert_eq!(
            DeclaredQuota::parse("10000/1d").unwrap().window,
            Duration::from_secs(86_400)
        );
        assert!(DeclaredQuota::parse("0/1m").is_err());
        assert!(DeclaredQuota::parse("60").is_err());
        assert!(DeclaredQuota::parse("x/1m").is_err());
    }

    fn cred() -> Credential {
        Credential::new(
            "http://127.0.0.1:1",
            &[("authorization", "Bearer k")],
            "the suite's credential",
        )
    }

    #[test]
    fn the_ledger_waits_for_the_reset_when_a_check_does_not_fit() {
        let mut l = Ledger::default();
        let t0 = Instant::now();
        l.learn(
            &Hint {
                limit: Some(10),
                remaining: Some(3),
                reset_in: Some(Duration::from_secs(20)),
                ..Hint::default()
            },
            t0,
        );
        assert!(l.wait_for(3, t0, None).is_none());
        let (until, why) = l.wait_for(4, t0, None).unwrap();
        assert_eq!(until, t0 + Duration::from_secs(20));
        assert!(why.contains("3 request(s) left"), "{why}");
        // More than a whole window cannot fit: it goes now.
        assert!(l.wait_for(11, t0, None).is_none());
        // After the reset the window is assumed full.
        assert!(l.wait_for(10, t0 + Duration::from_secs(21), None).is_none());
    }

    #[test]
    fn the_declared_quota_counts_own_sends() {
        let d = DeclaredQuota {
            limit: 3,
            window: Duration::from_secs(10),
        };
        let mut l = Ledger::default();
        let t0 = Instant::now();
        for i in 0..3 {
            assert!(l
                .wait_for(1, t0 + Duration::from_secs(i), Some(d))
                .is_none());
            l.on_send(t0 + Duration::from_secs(i), Some(d));
        }
        let (until, _) = l.wait_for(1, t0 + Duration::from_secs(3), Some(d)).unwrap();
        assert_eq!(until, t0 + Duration::from_secs(10));
        let (until, _) = l.wait_for(2, t0 + Duration::from_secs(3), Some(d)).unwrap();
        assert_eq!(until, t0 + Duration::from_secs(11));
    }

    #[tokio::test]
    async fn a_block_past_the_budget_is_an_error_naming_the_credential() {
        let q = Quota::new(QuotaOptions {
            max_wait: Duration::from_secs(300),
            declared: None,
        });
        let c = cred();
        let asked = q.learn(
            &c,
            "http://127.0.0.1:1/x",
            &resp(429, &[("Retry-After", "86400")]),
        );
        assert_eq!(asked, Some(Some(Duration::from_secs(86_400))));
        let e = q.reserve(&c, 1).await.unwrap_err();
        assert!(
            e.0.contains("the suite's credential is blocked for 24 h"),
            "{e}"
        );
        assert!(e.0.contains("--max-quota-wait is 5 m 00 s"), "{e}");
        assert_eq!(q.waited(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_short_block_is_waited_and_counted() {
        let q = Quota::new(QuotaOptions::default());
        let c = cred();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        q.set_notes(Some(tx));
        q.block_for(&c, Duration::from_millis(30), "429 with no hint".into());
        let t = Instant::now();
        q.reserve(&c, 1).await.unwrap();
        assert!(t.elapsed() >= Duration::from_millis(30));
        assert!(q.waited() >= Duration::from_millis(30));
        let note = rx.try_recv().unwrap();
        assert!(
            note.starts_with("quota: waiting") && note.contains("429 with no hint"),
            "{note}"
        );
        // Another credential is not blocked.
        let other = Credential::new("http://127.0.0.1:1", &[("authorization", "Bearer b")], "b");
        assert_ne!(other, c);
    }

    #[tokio::test]
    async fn paths_outside_the_limiter_do_not_wait_for_its_block() {
        let q = Quota::new(QuotaOptions::default());
        let c = cred();
        let limited = resp(
            200,
            &[("X-RateLimit-Limit", "10"), ("X-RateLimit-Remaining", "3")],
        );
        q.learn(&c, "http://h/public/v1/x?a=1", &limited);
        q.learn(&c, "http://h/healthz", &resp(200, &[]));
        q.block_for(&c, Duration::from_secs(3600), "429".into());
        let t = Instant::now();
        q.before_send(&c, "http://h/healthz?probe=1").await.unwrap();
        assert!(t.elapsed() < Duration::from_millis(100));
        // A limited path waits (here: past the budget, so an error at once).
        let q2 = Quota::new(QuotaOptions {
            max_wait: Duration::from_secs(1),
            declared: None,
        });
        q2.learn(&c, "http://h/public/v1/x", &limited);
        q2.block_for(&c, Duration::from_secs(3600), "429".into());
        assert!(q2.before_send(&c, "http://h/public/v1/x").await.is_err());
        assert_eq!(path_key("https://h:1/a/b?c#d"), "/a");
        assert_eq!(path_key("http://h/__tminus/effects/x"), "/__tminus/effects");
        assert_eq!(path_key("http://h/healthz"), "/");
        assert_eq!(path_key("http://h"), "/");
    }

    #[test]
    fn hintless_backoff_grows_and_is_capped() {
        for a in 1..=HINTLESS_TRIES + 4 {
            let b = hintless_backoff(a);
            let step = HINTLESS_FIRST
                .saturating_mul(1 << (a - 1).min(16))
                .min(HINTLESS_CAP);
            assert!(b >= step / 2 && b <= step, "{a}: {b:?}");
        }
    }
}
