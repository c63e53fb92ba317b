//! Runs one burst with goose embedded: goose owns the users (test plan or
//! iterations, hatch rate, killswitch); tminus owns what each user sends and
//! how it is measured.
//!
//! Each user paces itself to `max_rate / max_users` requests per second (the
//! aggregate never exceeds `max_rate`). Request k of a user is *scheduled* at
//! `start + k * interval`; when the target stalls, the user falls behind and
//! sends the queued requests back to back. Raw latency runs from the real
//! send; corrected latency runs from the scheduled send, so the queueing the
//! stall caused is counted (coordinated omission corrected, as wrk2 does).
//! Latency is measured to the last body byte, not goose's time to first byte.
//! Requests go through `GooseUser::client` (goose's reqwest client) so no
//! goose metric or per-failure log line is produced.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use goose::config::GooseConfiguration;
use goose::prelude::*;

use super::stats::{HlogFile, KindStats, Result_, Shard};
use crate::families::load::plan::{LoadPlan, Profile};
use crate::http::{Rendered, Target};
use crate::plan::Scope;

/// Shards of recorders: users map onto them, so memory does not grow with
/// users and a lock is rarely contended.
const MAX_SHARDS: usize = 16;
/// How often the interval log and the progress line are updated.
pub const TICK: Duration = Duration::from_secs(1);

pub struct Shared {
    pub plan: LoadPlan,
    pub target: Target,
    pub interval: Duration,
    pub shards: Vec<Mutex<Shard>>,
    /// Idempotency keys that got a success at least once.
    pub distinct_keys_ok: AtomicU64,
    /// Requests that reused a key (duplicate retries).
    pub duplicates: AtomicU64,
    cumulative_weights: Vec<u32>,
    /// Per request kind, the origin (`scheme://host:port/`) its requests must
    /// go to: checked against the guard before the burst, and every request
    /// is held to it, so no template can move load elsewhere.
    pub origins: Vec<String>,
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

/// The client every load user sends with: redirects are never followed (a
/// 302 must not carry the burst and its credentials to another host) and
/// nothing is decompressed or asked compressed behind the suite's back.
fn load_client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .user_agent(concat!("tminus/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .no_gzip()
        .no_brotli()
        .no_deflate()
        .no_zstd()
        .no_proxy()
        .build()
}

/// What a user remembers between requests: its pace and its last keyed request.
#[derive(Clone)]
struct UserState {
    start: Option<Instant>,
    k: u32,
    rng: u64,
    /// The last request with a fresh key (kind, request, key, succeeded once).
    last_keyed: Option<(usize, Rendered, bool)>,
}

impl UserState {
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
}

impl Shared {
    pub fn new(plan: LoadPlan, target: Target) -> Self {
        let per_user_rate = plan.max_rate / plan.max_users.max(1) as f64;
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
        Shared {
            origins,
            plan,
            target,
            interval,
            shards,
            distinct_keys_ok: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            cumulative_weights,
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

async fn one_request(shared: &Shared, user: &mut GooseUser) {
    let index = user.weighted_users_index;
    if user.get_session_data::<UserState>().is_none() {
        // goose's own client follows redirects and inflates gzip: replace it.
        match load_client() {
            Ok(c) => user.client = c,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                return;
            }
        }
        let seed = 0x9E37_79B9_7F4A_7C15u64
            ^ (index as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9)
            ^ SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1);
        user.set_session_data(UserState {
            start: None,
            k: 0,
            rng: seed | 1,
            last_keyed: None,
        });
    }
    let Some(st) = user.get_session_data_mut::<UserState>() else {
        return;
    };
    let now = Instant::now();
    let start = *st.start.get_or_insert(now);
    let scheduled = start + shared.interval * st.k;
    st.k = st.k.saturating_add(1);
    let plan = &shared.plan;
    // A duplicate resends the last keyed request with the same key, as a
    // client retry would; otherwise a kind is drawn by weight.
    let dup = plan.duplicate_share > 0.0
        && st.last_keyed.is_some()
        && (st.next_rand() % 1_000_000) as f64 / 1_000_000.0 < plan.duplicate_share;
    let (kind, rendered, keyed) = if dup {
        let (kind, r, _) = st.last_keyed.as_ref().expect("checked above");
        shared.duplicates.fetch_add(1, Ordering::Relaxed);
        (*kind, r.clone(), true)
    } else {
        let kind = shared.pick(st.next_rand());
        let m = &plan.mix[kind];
        let mut r = shared.target.render(&m.request, &Scope::new());
        if m.idempotency {
            r.set_header(&plan.idempotency_header, uuid::Uuid::new_v4().to_string());
            st.last_keyed = Some((kind, r.clone(), false));
        }
        (kind, r, m.idempotency)
    };
    // Wait for the scheduled slot in short naps, so a slow pace never
    // delays the killswitch by more than one nap.
    while Instant::now() < scheduled {
        if goose::is_killswitch_triggered() {
            // Yield before giving up the slot: a transaction that returns
            // without awaiting would spin goose's user loop and starve the
            // task that is stopping the users.
            tokio::time::sleep(Duration::from_millis(10)).await;
            return;
        }
        let left = scheduled.saturating_duration_since(Instant::now());
        tokio::time::sleep(left.min(Duration::from_millis(100))).await;
    }
    let client = user.client.clone();
    let sent = Instant::now();
    if shared.origins[kind].is_empty() || !rendered.url.starts_with(&shared.origins[kind]) {
        // Not where the guard allowed this kind to go: nothing is sent.
        let shard = &shared.shards[index % shared.shards.len()];
        shard.lock().unwrap_or_else(|p| p.into_inner()).record(
            kind,
            Duration::ZERO,
            sent.saturating_duration_since(scheduled.min(sent)),
            &Result_::Transport("destination"),
        );
        return;
    }
    let mut b = client.request(rendered.method.clone(), &rendered.url);
    for (k, v) in &rendered.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    if !rendered.body.is_empty() {
        b = b.body(rendered.body.clone());
    }
    let sent = Instant::now();
    let res = tokio::time::timeout(rendered.timeout, async {
        let mut resp = b.send().await?;
        let status = resp.status().as_u16();
        // To the last byte (goose's own clock would stop at the first),
        // dropping each chunk: a huge body costs no memory.
        while resp.chunk().await?.is_some() {}
        Ok::<u16, reqwest::Error>(status)
    })
    .await;
    let done = Instant::now();
    let result = match res {
        Err(_) => Result_::Transport("timeout"),
        Ok(Err(e)) => Result_::Transport(if e.is_connect() {
            "connect"
        } else if e.is_timeout() {
            "timeout"
        } else if e.is_body() || e.is_decode() {
            "body"
        } else {
            "transport"
        }),
        Ok(Ok(status)) => Result_::Status {
            status,
            success: plan.mix[kind].success.matches(status),
        },
    };
    if keyed {
        if let (Result_::Status { success: true, .. }, Some(st)) =
            (&result, user.get_session_data_mut::<UserState>())
        {
            if let Some(last) = st.last_keyed.as_mut() {
                if last.1.header(&plan.idempotency_header)
                    == rendered.header(&plan.idempotency_header)
                    && !last.2
                {
                    last.2 = true;
                    shared.distinct_keys_ok.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
    let raw = done - sent;
    let corrected = done.saturating_duration_since(scheduled.min(sent));
    let shard = &shared.shards[index % shared.shards.len()];
    shard
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .record(kind, raw, corrected, &result);
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
            one_request(&sh, user).await;
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
            }
        }
    };
    let attack = match &plan.profile {
        Profile::Stages(_) => attack.set_default(
            GooseDefault::TestPlan,
            plan.profile.test_plan().unwrap_or_default().as_str(),
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
    let ticker = tokio::spawn(async move {
        let mut hlog = hlog;
        let mut hit_max = false;
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
            if since_flush.elapsed() >= TICK || stopping {
                let now = SystemTime::now();
                let len = now.duration_since(last).unwrap_or_default();
                let (raw, cor, errs) = tsh.take_interval();
                since_flush = Instant::now();
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
                tbar.set_message(format!(
                    "{rate:.0} req/s · p95 {:.1} ms (corrected) · {total} sent · {errors} errors",
                    p95 as f64 / 1000.0
                ));
            }
            if stopping {
                break hit_max;
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
    let hit_max_duration = ticker.await.unwrap_or(false);
    bar.finish_and_clear();
    // goose lowers the global level while it runs; put ours back.
    log::set_max_level(level);
    goose::reset_killswitch();
    RunOutcome {
        kinds: shared.merged_kinds(),
        elapsed: started.elapsed(),
        engine_error: result.err().map(|e| format!("goose failed: {e}")),
        hit_max_duration,
    }
}

/// Points fd 1 at stderr until dropped (unix); a no-op elsewhere.
struct StdoutToStderr {
    #[cfg(unix)]
    saved: Option<i32>,
}

impl StdoutToStderr {
    fn new() -> Self {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        #[cfg(unix)]
        {
            // SAFETY: plain fd calls; on failure the original fd 1 is kept.
            let saved = unsafe { libc::dup(1) };
            if saved >= 0 && unsafe { libc::dup2(2, 1) } >= 0 {
                return StdoutToStderr { saved: Some(saved) };
            }
            if saved >= 0 {
                unsafe { libc::close(saved) };
            }
            StdoutToStderr { saved: None }
        }
        #[cfg(not(unix))]
        StdoutToStderr {}
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        #[cfg(unix)]
        if let Some(saved) = self.saved.take() {
            // SAFETY: `saved` is the fd dup'ed in `new`, still open.
            unsafe {
                libc::dup2(saved, 1);
                libc::close(saved);
            }
        }
    }
}

fn progress_bar(total: Option<Duration>) -> indicatif::ProgressBar {
    let bar = match total {
        Some(t) => indicatif::ProgressBar::new(t.as_secs().max(1)),
        None => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
    let style = match total {
        Some(_) => "load {elapsed_precise}/{len}s [{bar:25}] {msg}",
        None => "load {elapsed_precise} {spinner} {msg}",
    };
    if let Ok(s) = indicatif::ProgressStyle::with_template(style) {
        bar.set_style(s.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}
