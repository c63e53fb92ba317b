//! Runs one burst with goose embedded: goose owns the users (started all at
//! once, stopped at the profile's end or by the killswitch); tminus owns
//! what each user sends and how it is measured.
//!
//! A stages profile (`hold` or `stages`) is an open-arrival burst: one slot
//! schedule at `max_rate` shared by a pool that grows from `users` to
//! `max_users` (`pool.rs`, `open.rs`). `iterations` keeps a closed pool:
//! each user paces itself to `max_rate / users`, request k of a user is
//! *scheduled* at `start + k * interval`, and a request that waits for the
//! user's previous one is charged that wait (see [`measure`]). Either way a
//! user sleeps (tokio's timer, ~1 ms granular) until [`SPIN`] before its
//! slot and yields the rest, so it sends within a few µs of the slot when it
//! is not busy; the generator's own lateness is measured apart. Latency is
//! measured to the last body byte, not goose's time to first byte. Requests
//! go on each user's own HTTP/1.1 connection (`lean.rs`), or through
//! `GooseUser::client` (the probe's reqwest client) where a proxy applies,
//! so no goose metric or per-failure log line is produced.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use goose::config::GooseConfiguration;
use goose::prelude::*;

use super::progress::{progress_bar, progress_line, progress_message, StdoutToStderr};
use super::sample;

use super::stats::{HlogFile, KindStats, Result_, Shard};
use super::summary::IntervalPoint;
use crate::context::Scope;
use crate::families::load::plan::{LoadPlan, Profile};
use crate::http::{Observer, Rendered, Target};

/// The transport error of a request in flight when the burst was stopped
/// (max_duration, Ctrl-C, SIGTERM): cut, never answered.
pub const CUT: &str = "cut";
/// The transport error of a request whose TLS handshake failed.
pub const TLS: &str = "tls";
/// Shards of recorders: users map onto them, so memory does not grow with
/// users and a lock is rarely contended.
const MAX_SHARDS: usize = 16;
/// How often the interval log and the progress line are updated.
pub const TICK: Duration = Duration::from_secs(1);
/// How often a burst writes a progress line when stderr is not a terminal
/// (CI logs), where the indicatif bar does not draw.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);
/// The last stretch before a slot that a user spends yielding instead of
/// sleeping: tokio's timer wakes up to ~1 ms late, so the sleep ends this much
/// early and `yield_now` covers the rest (bounded: at most this long per
/// request, and only while the user is ahead of its schedule).
pub const SPIN: Duration = Duration::from_micros(1500);

/// What one request's timeline measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    /// Real send to last byte.
    pub raw: Duration,
    /// Raw plus the wait the target caused: the part of [scheduled, sent]
    /// during which this user's previous request was still unanswered.
    pub corrected: Duration,
    /// The generator's own lateness: the rest of [scheduled, sent] (timer
    /// granularity, scheduling, a busy machine), charged to nobody.
    pub lateness: Duration,
}

/// Coordinated-omission correction of one request of a user: scheduled at
/// `scheduled`, sent at `sent`, answered at `done`; `prev_done` is when the
/// user's previous request finished (None for its first).
///
/// wrk2 charges every request from its intended send time, which is right
/// when the timer is precise. Here only the wait the target imposed is
/// charged: if the previous response arrived after this slot, the request
/// queued behind it from `scheduled` to `min(prev_done, sent)`; lateness after
/// that (or when the previous request had long finished) is the generator's.
pub fn measure(
    scheduled: Instant,
    sent: Instant,
    done: Instant,
    prev_done: Option<Instant>,
) -> Measured {
    let raw = done.saturating_duration_since(sent);
    let late = sent.saturating_duration_since(scheduled);
    let queued = match prev_done {
        Some(p) => p.min(sent).saturating_duration_since(scheduled),
        None => Duration::ZERO,
    };
    Measured {
        raw,
        corrected: raw + queued,
        lateness: late - queued,
    }
}

pub struct Shared {
    pub plan: LoadPlan,
    pub target: Target,
    pub interval: Duration,
    pub shards: Vec<Mutex<Shard>>,
    /// Idempotency keys that got a success at least once.
    pub distinct_keys_ok: AtomicU64,
    /// Requests that reused a key (duplicate retries).
    pub duplicates: AtomicU64,
    /// The most requests the profile schedules (stages: its user-seconds at
    /// the per-user pace); None: goose bounds them (iterations).
    pub budget: Option<u64>,
    /// Slots claimed so far against `budget` (closed pool).
    claimed: AtomicU64,
    /// The open-arrival pool of a stages profile (None: `iterations`, a
    /// closed pool of users each pacing itself).
    pub pool: Option<super::pool::Pool>,
    /// The client an open pool's users share.
    client: std::sync::OnceLock<reqwest::Client>,
    cumulative_weights: Vec<u32>,
    /// Per request kind, the origin (`scheme://host:port/`) its requests must
    /// go to: checked against the guard before the burst, and every request
    /// is held to it, so no template can move load elsewhere.
    pub origins: Vec<String>,
    /// Set when the burst must end now (max_duration, Ctrl-C, SIGTERM):
    /// every request in flight is cut at once and counted as `cut`, instead
    /// of waiting out its timeout while goose waits for the users.
    pub cut: tokio::sync::watch::Sender<bool>,
    /// The suite's contract sample (None: the suite has no `contract:`).
    pub(super) sample: Option<sample::Sample>,
    /// The successes whose events the sink follows (LOAD-006).
    pub(super) created: Option<Arc<super::webhooks::Created>>,
    /// Per request kind: its rendering, when it never changes (no
    /// `${uuid}`, no OAuth2 token): cloned instead of rendered per request.
    prerendered: Vec<Option<Arc<Rendered>>>,
    /// Per request kind: how the users' own connections send it (None:
    /// through reqwest).
    pub(super) lean: Vec<Option<super::lean::LeanKind>>,
}

/// `scheme://host[:port]/` of an absolute URL.
pub fn origin_of(url: &str) -> Option<String> {
    let u = reqwest::Url::parse(url).ok()?;
    let host = u.host_str()?;
    Some(match u.port() {
        Some(p) => format!("{}://{host}:{p}/", u.scheme()),
        None => format!("{}://{host}/", u.scheme()),
    })
}

/// Whether `url` is on `origin` (as [`origin_of`] gives it). A URL that
/// starts with the origin's text is on it (the origin ends with the `/`
/// that closes the authority) and costs no parse, the common case on the
/// hot path; any other is compared as a parsed origin: a URL with userinfo
/// (`http://user:pw@host/`) or an explicit default port is on its origin
/// though it does not start with it as text.
pub fn on_origin(url: &str, origin: &str) -> bool {
    !origin.is_empty() && (url.starts_with(origin) || origin_of(url).is_some_and(|o| o == origin))
}

/// The client every load user sends with: the probe's policy (no
/// redirects, no decompression; see `http::client_builder`).
fn load_client() -> Result<reqwest::Client, reqwest::Error> {
    crate::http::client_builder().build()
}

/// What a user remembers between requests: its pace, its last keyed
/// request and its own connection.
pub(super) struct UserState {
    start: Option<Instant>,
    k: u32,
    rng: u64,
    /// The last request with a fresh key (kind, request, key, succeeded once).
    last_keyed: Option<(usize, Arc<Rendered>, bool)>,
    /// When this user's previous request finished.
    prev_done: Option<Instant>,
    /// This user's HTTP/1.1 connection (`lean.rs`), opened at its first
    /// request and again after the target closed it; taken out of the
    /// state for a send ([`UserState::take_conn`]) and put back.
    conn: Option<super::lean::UserConn>,
}

/// goose clones its users' session data (`GooseUserData: Clone`); a clone
/// opens a connection of its own.
impl Clone for UserState {
    fn clone(&self) -> Self {
        UserState {
            start: self.start,
            k: self.k,
            rng: self.rng,
            last_keyed: self.last_keyed.clone(),
            prev_done: self.prev_done,
            conn: None,
        }
    }
}

impl UserState {
    /// The connection, out of the state for one send.
    pub(super) fn take_conn(&mut self) -> Option<super::lean::UserConn> {
        self.conn.take()
    }
    pub(super) fn put_conn(&mut self, c: Option<super::lean::UserConn>) {
        self.conn = c;
    }

    fn next_rand(&mut self) -> u64 {
        // xorshift64*: cheap, Send, enough to pick a kind.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// What a finished run reports.
pub struct RunOutcome {
    pub kinds: Vec<KindStats>,
    pub elapsed: Duration,
    /// goose refused the configuration or failed.
    pub engine_error: Option<String>,
    /// Stopped by the max-duration bound.
    pub hit_max_duration: bool,
    /// The interval log's intervals, for the report's plots.
    pub intervals: Vec<IntervalPoint>,
}

impl Shared {
    pub fn new(plan: LoadPlan, target: Target) -> Self {
        let per_user_rate = plan.max_rate / plan.peak_users.max(1) as f64;
        let interval = Duration::from_secs_f64(1.0 / per_user_rate.max(1e-6));
        let shards = (0..plan.max_users.clamp(1, MAX_SHARDS))
            .map(|_| Mutex::new(Shard::new(plan.mix.len())))
            .collect();
        let mut acc = 0;
        let cumulative_weights = plan
            .mix
            .iter()
            .map(|m| {
                acc += m.weight;
                acc
            })
            .collect();
        let origins = plan
            .mix
            .iter()
            .map(|m| {
                let r = target.render(&m.request, &Scope::new());
                origin_of(&r.url).unwrap_or_default()
            })
            .collect();
        // Rendered twice: a kind whose two renderings differ has parts made
        // per request (`${uuid}`). A token of the suite's is renewed while
        // the burst runs, so such a target renders per request too.
        let fixed_ok = target.auth.is_none();
        let (prerendered, lean) = plan
            .mix
            .iter()
            .map(|m| {
                let a = target.render(&m.request, &Scope::new());
                let b = target.render(&m.request, &Scope::new());
                let lean = super::lean::LeanKind::new(&a, &b, fixed_ok);
                let fixed = fixed_ok && super::lean::same_rendering(&a, &b);
                (fixed.then(|| Arc::new(a)), lean)
            })
            .unzip();
        let budget = match plan.profile {
            Profile::Stages(_) | Profile::Rates(_) => Some(plan.scheduled_requests() as u64),
            Profile::Iterations { .. } => None,
        };
        let pool = match plan.profile {
            Profile::Stages(_) | Profile::Rates(_) => Some(super::pool::Pool::new(
                super::pool::Schedule::new(&plan.profile, per_user_rate),
                plan.peak_users,
                plan.max_users,
            )),
            Profile::Iterations { .. } => None,
        };
        Shared {
            budget,
            pool,
            client: std::sync::OnceLock::new(),
            claimed: AtomicU64::new(0),
            origins,
            plan,
            target,
            interval,
            shards,
            cut: tokio::sync::watch::Sender::new(false),
            distinct_keys_ok: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            cumulative_weights,
            sample: None,
            created: None,
            prerendered,
            lean,
        }
    }

    /// The same, handing a sample of the burst's responses to `observer`
    /// (the suite's contract watch).
    pub fn with_sample(mut self, observer: Option<std::sync::Arc<dyn Observer>>) -> Self {
        self.sample = observer.map(|o| sample::Sample::new(o, self.plan.mix.len()));
        self
    }

    /// Follows the events of `created`'s request kind (LOAD-006).
    pub fn with_created(mut self, created: Option<Arc<super::webhooks::Created>>) -> Self {
        self.created = created;
        self
    }

    /// Claims one slot of the budget; false once the profile's scheduled
    /// count was sent (a user's first request at its start would otherwise
    /// add one request per user beyond the profile's user-seconds).
    fn claim(&self) -> bool {
        match self.budget {
            None => true,
            Some(b) => self.claimed.fetch_add(1, Ordering::Relaxed) < b,
        }
    }

    fn pick(&self, r: u64) -> usize {
        let total = *self.cumulative_weights.last().unwrap_or(&1) as u64;
        let x = (r % total) as u32;
        self.cumulative_weights
            .iter()
            .position(|c| x < *c)
            .unwrap_or(0)
    }

    /// Takes every shard's interval histograms (and resets them).
    pub fn take_interval(
        &self,
    ) -> (
        hdrhistogram::Histogram<u64>,
        hdrhistogram::Histogram<u64>,
        u64,
    ) {
        let mut raw = super::stats::new_hist();
        let mut cor = super::stats::new_hist();
        let mut errors = 0;
        for s in &self.shards {
            let mut s = s.lock().unwrap_or_else(|p| p.into_inner());
            let _ = raw.add(&s.interval_raw);
            let _ = cor.add(&s.interval_corrected);
            errors += s.interval_errors;
            s.interval_raw.reset();
            s.interval_corrected.reset();
            s.interval_errors = 0;
        }
        (raw, cor, errors)
    }

    /// Every shard's pool counts, added.
    pub fn merged_pool(&self) -> super::pool::PoolCounts {
        let mut out = super::pool::PoolCounts::new();
        for s in &self.shards {
            out.add(&s.lock().unwrap_or_else(|p| p.into_inner()).pool);
        }
        out
    }

    pub fn merged_kinds(&self) -> Vec<KindStats> {
        let mut out: Vec<KindStats> = (0..self.plan.mix.len()).map(|_| KindStats::new()).collect();
        for s in &self.shards {
            let s = s.lock().unwrap_or_else(|p| p.into_inner());
            for (o, k) in out.iter_mut().zip(&s.kinds) {
                o.add(k);
            }
        }
        out
    }
}

/// Sets a user up on its first call: the probe's client (goose's own follows
/// redirects and inflates gzip) and its state. False: not ready this call.
pub(super) async fn init_user(shared: &Shared, user: &mut GooseUser) -> bool {
    if user.get_session_data::<UserState>().is_some() {
        return true;
    }
    // The reqwest client (for kinds `lean.rs` does not send): an open
    // pool's users share one client (one connection pool): a user
    // opened mid-burst then costs nothing to set up, and idle ones hold no
    // connection of their own.
    let client = match &shared.pool {
        Some(_) => match shared.client.get() {
            Some(c) => Ok(c.clone()),
            None => load_client().map(|c| shared.client.get_or_init(|| c).clone()),
        },
        None => load_client(),
    };
    match client {
        Ok(c) => user.client = c,
        Err(_) => {
            tokio::time::sleep(Duration::from_millis(10)).await;
            return false;
        }
    }
    let seed = 0x9E37_79B9_7F4A_7C15u64
        ^ (user.weighted_users_index as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9)
        ^ SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
    user.set_session_data(UserState {
        start: None,
        k: 0,
        rng: seed | 1,
        last_keyed: None,
        prev_done: None,
        conn: None,
    });
    true
}

/// What a user sends next.
pub(super) struct Pick {
    pub kind: usize,
    /// Shared with the kind's fixed rendering when nothing was added.
    pub rendered: Arc<Rendered>,
    pub keyed: bool,
}

impl Shared {
    /// A duplicate resends the last keyed request with the same key, as a
    /// client retry would; otherwise a kind is drawn by weight.
    pub(super) fn pick_request(&self, st: &mut UserState) -> Pick {
        let plan = &self.plan;
        let dup = plan.duplicate_share > 0.0
            && st.last_keyed.is_some()
            && (st.next_rand() % 1_000_000) as f64 / 1_000_000.0 < plan.duplicate_share;
        if dup {
            let (kind, r, _) = st.last_keyed.as_ref().expect("checked above");
            self.duplicates.fetch_add(1, Ordering::Relaxed);
            return Pick {
                kind: *kind,
                rendered: r.clone(),
                keyed: true,
            };
        }
        let kind = self.pick(st.next_rand());
        let m = &plan.mix[kind];
        let mut r = match &self.prerendered[kind] {
            Some(r) => r.clone(),
            None => Arc::new(self.target.render(&m.request, &Scope::new())),
        };
        if m.idempotency {
            Arc::make_mut(&mut r)
                .set_header(&plan.idempotency_header, uuid::Uuid::new_v4().to_string());
            st.last_keyed = Some((kind, r.clone(), false));
        }
        Pick {
            kind,
            rendered: r,
            keyed: m.idempotency,
        }
    }

    /// Counts a keyed request's first success (LOAD-005's distinct keys).
    pub(super) fn after_keyed(&self, st: &mut UserState, p: &Pick, result: &Result_) {
        if !p.keyed || !matches!(result, Result_::Status { success: true, .. }) {
            return;
        }
        let header = &self.plan.idempotency_header;
        if let Some(last) = st.last_keyed.as_mut() {
            if last.1.header(header) == p.rendered.header(header) && !last.2 {
                last.2 = true;
                self.distinct_keys_ok.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The recorder shard of user `index`.
    pub(super) fn shard(&self, index: usize) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[index % self.shards.len()]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// Waits for `at` in short naps, so a slow pace never delays the killswitch
/// by more than one nap; the last SPIN is yielded, not slept, because
/// tokio's timer would wake up to ~1 ms late. False: the killswitch fired.
pub(super) async fn wait_until(at: Instant) -> bool {
    loop {
        if goose::is_killswitch_triggered() {
            // Yield before giving up the slot: a transaction that returns
            // without awaiting would spin goose's user loop and starve the
            // task that is stopping the users.
            tokio::time::sleep(Duration::from_millis(10)).await;
            return false;
        }
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        if left > SPIN {
            tokio::time::sleep((left - SPIN).min(Duration::from_millis(100))).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
}

/// One request of a closed pool (`iterations`): the user paces itself at
/// `max_rate / users` and a request waits for the user's previous one.
async fn one_request(shared: &Shared, user: &mut GooseUser) {
    let index = user.weighted_users_index;
    if !init_user(shared, user).await {
        return;
    }
    let Some(st) = user.get_session_data_mut::<UserState>() else {
        return;
    };
    let now = Instant::now();
    let start = *st.start.get_or_insert(now);
    let scheduled = start + shared.interval * st.k;
    let prev_done = st.prev_done;
    st.k = st.k.saturating_add(1);
    let pick = shared.pick_request(st);
    if !wait_until(scheduled).await {
        return;
    }
    if !shared.claim() {
        // The profile's scheduled requests were all sent: idle until goose
        // stops this user (one nap per call, so the killswitch is seen).
        tokio::time::sleep(shared.interval.min(Duration::from_millis(100))).await;
        return;
    }
    let mut conn = st.take_conn();
    let client = user.client.clone();
    let (sent, done, result) = shared.send(&client, &mut conn, &pick).await;
    let Some(st) = user.get_session_data_mut::<UserState>() else {
        return;
    };
    st.put_conn(conn);
    st.prev_done = Some(done);
    shared.after_keyed(st, &pick, &result);
    let m = measure(scheduled, sent, done, prev_done);
    shared.shard(index).record(pick.kind, &m, &result);
}

/// Live state the ticker shows.
pub struct Progress {
    pub bar: indicatif::ProgressBar,
}

/// Runs the burst to its end (or the killswitch). Never returns before every
/// user stopped; bounded by `max_duration` through the killswitch.
pub async fn run(shared: Arc<Shared>, hlog: Option<HlogFile>, base: SystemTime) -> RunOutcome {
    let plan = &shared.plan;
    let started = Instant::now();
    let level = super::logging::level();

    let mut cfg = GooseConfiguration::default();
    cfg.host = Some(shared.target.base_url.clone());
    cfg.no_telnet = true;
    // The WebSocket controller is off unless asked for in goose 0.19
    // (setting `no_websocket` only logs a deprecation warning).
    cfg.no_print_metrics = true;
    cfg.no_error_summary = true;
    cfg.quiet = 1;
    cfg.running_metrics = None;
    cfg.report_file = Vec::new();
    cfg.co_mitigation = None;
    // goose's own metrics are not used (tminus measures); off, they also do
    // not grow goose's per-second time series over a long run.
    cfg.no_metrics = true;
    let total_secs = plan.profile.planned_duration();

    let sh = shared.clone();
    let tx: TransactionFunction = Arc::new(move |user| {
        let sh = sh.clone();
        Box::pin(async move {
            match &sh.pool {
                Some(pool) => super::open::open_request(&sh, pool, user).await,
                None => one_request(&sh, user).await,
            }
            Ok(())
        })
    });
    let scenario =
        Scenario::new("tminus_load").register_transaction(Transaction::new(tx).set_name("mix"));

    let attack = match GooseAttack::initialize_with_config(cfg) {
        Ok(a) => a,
        Err(e) => {
            return RunOutcome {
                kinds: shared.merged_kinds(),
                elapsed: started.elapsed(),
                engine_error: Some(format!("goose refused the configuration: {e}")),
                hit_max_duration: false,
                intervals: Vec::new(),
            }
        }
    };
    let attack = match &plan.profile {
        // Every user of the pool starts at once and idles until it is
        // opened; the schedule, not goose, shapes the rate (see pool.rs).
        Profile::Stages(_) | Profile::Rates(_) => attack.set_default(
            GooseDefault::TestPlan,
            format!(
                "{n},0s;{n},{}s;0,0s",
                total_secs.unwrap_or_default().as_secs(),
                n = plan.max_users.max(1)
            )
            .as_str(),
        ),
        Profile::Iterations {
            users,
            hatch_rate,
            iterations,
        } => attack
            .set_default(GooseDefault::Users, *users)
            .and_then(|a| {
                a.set_default(GooseDefault::IncreaseRate, format!("{hatch_rate}").as_str())
            })
            .and_then(|a| a.set_default(GooseDefault::Iterations, *iterations as usize)),
    };
    let attack = match attack {
        Ok(a) => a.register_scenario(scenario),
        Err(e) => {
            return RunOutcome {
                kinds: shared.merged_kinds(),
                elapsed: started.elapsed(),
                engine_error: Some(format!("goose refused the load profile: {e}")),
                hit_max_duration: false,
                intervals: Vec::new(),
            }
        }
    };

    // Progress, the interval log, the duration bound and the re-armed
    // killswitch all live in one ticker.
    let bar = progress_bar(total_secs);
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    let tsh = shared.clone();
    let max_duration = plan.max_duration;
    let tbar = bar.clone();
    let plain_progress = !std::io::stderr().is_terminal();
    let ticker = tokio::spawn(async move {
        let mut hlog = hlog;
        let mut hit_max = false;
        let mut intervals = Vec::new();
        let mut since_line = Instant::now();
        let mut line_requests = 0u64;
        let mut overall = super::stats::new_hist();
        let mut total = 0u64;
        let mut errors = 0u64;
        let mut last = SystemTime::now().max(base);
        let mut iv = tokio::time::interval(Duration::from_millis(100));
        let mut since_flush = Instant::now();
        loop {
            let stopping = tokio::select! {
                _ = iv.tick() => false,
                _ = &mut stop_rx => true,
            };
            // goose resets the killswitch when execute() starts (see
            // signal.rs): re-arm it for a Ctrl-C that came before.
            if super::signal::cancelled() && !goose::is_killswitch_triggered() {
                goose::trigger_killswitch("SIGINT received");
            }
            if started.elapsed() > max_duration && !goose::is_killswitch_triggered() {
                hit_max = true;
                goose::trigger_killswitch("max_duration reached");
            }
            // A hard stop cuts what is in flight (issue 24 items 5 and 6);
            // the profile's own end lets the last requests finish.
            if (hit_max || super::signal::cancelled()) && !*tsh.cut.borrow() {
                tsh.cut.send_replace(true);
            }
            if since_flush.elapsed() >= TICK || stopping {
                let now = SystemTime::now();
                let len = now.duration_since(last).unwrap_or_default();
                let (raw, cor, errs) = tsh.take_interval();
                since_flush = Instant::now();
                let at = last.duration_since(base).unwrap_or_default();
                intervals.push(IntervalPoint::new(at, len, &raw, &cor, errs));
                let n = cor.len();
                total += n;
                errors += errs;
                let _ = overall.add(&cor);
                if let Some(h) = hlog.as_mut() {
                    if let Err(e) = h.write(last, len, &raw, &cor) {
                        log::error!("cannot write the interval log: {e}");
                        hlog = None;
                    }
                }
                last = now;
                let rate = n as f64 / len.as_secs_f64().max(1e-3);
                let p95 = if overall.is_empty() {
                    0
                } else {
                    overall.value_at_quantile(0.95)
                };
                tbar.set_position(started.elapsed().as_secs());
                tbar.set_message(progress_message(rate, p95, total, errors));
                line_requests += n;
                if plain_progress && !stopping && since_line.elapsed() >= PROGRESS_EVERY {
                    let window_rate =
                        line_requests as f64 / since_line.elapsed().as_secs_f64().max(1e-3);
                    eprintln!(
                        "{}",
                        progress_line(
                            started.elapsed(),
                            total_secs,
                            progress_message(window_rate, p95, total, errors)
                        )
                    );
                    since_line = Instant::now();
                    line_requests = 0;
                }
            }
            if stopping {
                break (hit_max, intervals);
            }
        }
    });

    // goose 0.19 prints "N users launched." to stdout unconditionally for
    // test plans and iterations (metrics.rs `reset_metrics`); stdout belongs
    // to machine-readable output, so it points at stderr while goose runs.
    let guard = StdoutToStderr::new();
    let result = attack.execute().await;
    drop(guard);
    let _ = stop_tx.send(());
    let (hit_max_duration, intervals) = ticker.await.unwrap_or_default();
    bar.finish_and_clear();
    // goose lowers the global level while it runs; put ours back.
    log::set_max_level(level);
    goose::reset_killswitch();
    // An open pool's throughput is over the schedule's span, not goose's
    // set-up and tear-down of its users.
    let elapsed = match shared.pool.as_ref().and_then(|p| p.span()) {
        Some(span) => span,
        None => started.elapsed(),
    };
    RunOutcome {
        kinds: shared.merged_kinds(),
        elapsed,
        engine_error: result.err().map(|e| format!("goose failed: {e}")),
        hit_max_duration,
        intervals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The text fast path never admits what the parsed comparison refuses.
    #[test]
    fn a_url_is_on_its_origin_by_text_or_by_parse() {
        let o = origin_of("http://127.0.0.1:8080/").unwrap();
        for (url, on) in [
            ("http://127.0.0.1:8080/a?b=1", true),
            ("http://user:pw@127.0.0.1:8080/a", true),
            ("HTTP://127.0.0.1:8080/a", true),
            ("http://127.0.0.1:8081/a", false),
            ("http://127.0.0.1:8080.evil.test/a", false),
            ("http://127.0.0.1:8080@evil.test/a", false),
            ("https://127.0.0.1:8080/a", false),
        ] {
            assert_eq!(on_origin(url, &o), on, "{url}");
            assert_eq!(origin_of(url).as_deref() == Some(o.as_str()), on, "{url}");
        }
        let d = origin_of("https://api.example.com/").unwrap();
        assert!(on_origin("https://api.example.com:443/x", &d));
        assert!(!on_origin("https://api.example.com/x", ""));
    }

    /// Issue 15: a target that answers at once, a generator that sends late
    /// (timer granularity): nothing of the lateness is charged to the target.
    #[test]
    fn a_late_generator_is_not_charged_to_the_target() {
        let t0 = Instant::now();
        let interval = ms(10);
        let mut prev = None;
        for k in 0..5u32 {
            let scheduled = t0 + interval * k;
            let sent = scheduled + Duration::from_micros(1200);
            let done = sent + Duration::from_micros(300);
            let m = measure(scheduled, sent, done, prev);
            assert_eq!(m.corrected, m.raw, "request {k}: {m:?}");
            assert_eq!(m.raw, Duration::from_micros(300));
            assert_eq!(m.lateness, Duration::from_micros(1200));
            prev = Some(done);
        }
    }

    /// A stalled response: the requests scheduled while it was outstanding
    /// are charged the wait from their slot; once caught up, nothing more.
    #[test]
    fn a_stall_charges_the_queued_requests_their_wait() {
        let t0 = Instant::now();
        let interval = ms(10);
        let slot = |k: u32| t0 + interval * k;
        // Request 0 stalls 35 ms; 1..3 were due meanwhile and go back to back.
        let m0 = measure(slot(0), slot(0), slot(0) + ms(35), None);
        assert_eq!((m0.raw, m0.corrected), (ms(35), ms(35)));
        let mut prev = slot(0) + ms(35);
        let mut charged = Vec::new();
        for k in 1..=3 {
            let sent = prev + Duration::from_micros(50);
            let done = sent + ms(1);
            let m = measure(slot(k), sent, done, Some(prev));
            assert_eq!(m.raw, ms(1));
            // The wait behind request 0 (prev - slot) is the target's; the
            // 50 µs after its answer are the generator's.
            assert_eq!(m.corrected, done - slot(k) - Duration::from_micros(50));
            assert_eq!(m.lateness, Duration::from_micros(50));
            charged.push(m.corrected);
            prev = done;
        }
        assert_eq!(charged[0], ms(26), "{charged:?}");
        assert!(charged[0] > charged[1] && charged[1] > charged[2]);
        // Request 4's slot (40 ms) comes after request 3 finished (~38 ms):
        // caught up, so corrected is raw again.
        assert!(prev < slot(4));
        let m4 = measure(slot(4), slot(4), slot(4) + ms(1), Some(prev));
        assert_eq!(m4.corrected, m4.raw);
    }

    /// wrk2's case: a precise generator (sent == scheduled) is charged
    /// exactly from the scheduled send.
    #[test]
    fn on_time_sends_charge_from_the_slot() {
        let t0 = Instant::now();
        let m = measure(t0, t0, t0 + ms(2), Some(t0 - ms(5)));
        assert_eq!(
            m,
            Measured {
                raw: ms(2),
                corrected: ms(2),
                lateness: Duration::ZERO
            }
        );
        // Sent before its slot (cannot happen, but never underflows).
        let m = measure(t0 + ms(1), t0, t0 + ms(2), None);
        assert_eq!(
            (m.raw, m.corrected, m.lateness),
            (ms(2), ms(2), Duration::ZERO)
        );
    }
}
