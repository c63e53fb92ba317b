//! The open-arrival pool of a rate-scheduled burst (issue 23): one schedule
//! of slots at the arrival rate, shared by a pool of goose users that grows
//! when the rate needs it.
//!
//! A closed pool paces each user on its own schedule, so a slow but healthy
//! target makes the harness's own users the bottleneck, and the coordinated-
//! omission correction books that queue as the target's latency (wrk2 has the
//! same trap; k6's arrival-rate executors avoid it by starting more VUs up to
//! `maxVUs`). Here every goose user up to `max_users` is started idle up
//! front; `users` of them claim slots at once, and when a slot comes due
//! while all of those are busy, the next idle user is opened and claims it
//! ([`Pool`]). What a slot's wait for a user is charged to is [`measure_slot`]:
//! while the pool could still grow the wait is the harness's (its lateness);
//! once every one of `max_users` is busy it is the target's. Whether such a
//! run can be judged at all is [`PoolRule`].

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::engine::Measured;
use super::plan::Profile;

/// The arrival schedule of a scheduled profile: the rate at time t is the
/// stages' own rate (rate stages) or `per_user × users(t)` (user stages and
/// hold; users ramp linearly within a stage, so the aggregate is what the
/// same users each pacing `max_rate / users` would schedule); slot i is due
/// when the integral of the rate reaches i.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Per stage with time: (start s, slots before it, rate at start, rate
    /// at end, length s).
    stages: Vec<(f64, f64, f64, f64, f64)>,
}

impl Schedule {
    pub fn new(profile: &Profile, per_user: f64) -> Self {
        let mut stages = Vec::new();
        let (mut t, mut slots, mut r0) = (0.0, 0.0, 0.0);
        for (r1, secs) in profile.rate_steps(per_user).unwrap_or_default() {
            let len = secs as f64;
            if len > 0.0 {
                stages.push((t, slots, r0, r1, len));
                slots += (r0 + r1) / 2.0 * len;
                t += len;
            }
            r0 = r1;
        }
        Schedule { stages }
    }

    /// Seconds from the start at which slot `i` is due; None past the profile.
    pub fn due(&self, i: u64) -> Option<f64> {
        let x = i as f64;
        let &(t0, before, r0, r1, len) = self
            .stages
            .iter()
            .rev()
            .find(|(_, before, ..)| *before <= x)?;
        let x = x - before;
        if x > (r0 + r1) / 2.0 * len + 1e-9 {
            return None;
        }
        // r0·τ + a·τ² = x with a = (r1 - r0) / 2len.
        let a = (r1 - r0) / (2.0 * len);
        let tau = if a.abs() < 1e-12 {
            if r0 <= 0.0 {
                return None;
            }
            x / r0
        } else {
            (-r0 + (r0 * r0 + 4.0 * a * x).max(0.0).sqrt()) / (2.0 * a)
        };
        Some(t0 + tau.clamp(0.0, len))
    }
}

/// The timeline of one slot: due by the schedule, claimed by a user (at
/// once, or after waiting for one), sent, answered. `full_at`: when the
/// pool reached `max_users` (None: it could still grow).
///
/// The wait from `due` to `claimed` is charged to the target only for the
/// part after the pool was full: before, another user could have been (and
/// was) opened, so that part is the harness's lateness, like the timer's
/// and the scheduler's delay from `claimed` to `sent`.
pub fn measure_slot(
    due: Instant,
    claimed: Instant,
    sent: Instant,
    done: Instant,
    full_at: Option<Instant>,
) -> Measured {
    let raw = done.saturating_duration_since(sent);
    let late = sent.saturating_duration_since(due);
    let queued = match full_at {
        Some(f) => claimed.min(sent).saturating_duration_since(due.max(f)),
        None => Duration::ZERO,
    };
    Measured {
        raw,
        corrected: raw + queued,
        lateness: late - queued,
    }
}

/// The longest the schedule waits for the pool's users to be set up.
pub const READY_WAIT: Duration = Duration::from_secs(2);

/// The live pool: which users may claim slots, how many are busy, and the
/// next slot of the schedule. Lock-free: a request costs a handful of
/// atomic operations, and idle users sleep on a `Notify` (no polling per
/// slot), so the pool costs no CPU per request.
pub struct Pool {
    pub schedule: Schedule,
    /// Users the pool starts with and the most it opens.
    pub users: usize,
    pub max_users: usize,
    /// The start of the schedule: once the `users` the pool starts with are
    /// ready (have their client), or [`READY_WAIT`] after the first was, so
    /// no slot falls due while they are still being set up. Idle users get
    /// ready meanwhile; one not ready when it would be opened only opens
    /// later (the harness's lateness, never charged).
    start: OnceLock<Instant>,
    ready: AtomicUsize,
    first_ready: OnceLock<Instant>,
    /// The next unclaimed slot.
    next: AtomicU64,
    /// Users allowed to claim (indices below this).
    opened: AtomicUsize,
    /// Nanoseconds after `start` of the last answer.
    last_answer: AtomicU64,
    /// Requests in flight, and the most at once.
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    /// Nanoseconds after `start` when `opened` reached `max_users`
    /// (`u64::MAX`: not yet).
    full_at: AtomicU64,
    /// Woken when every opened user has a request in flight: the standby
    /// (the next idle user) then watches the next slot.
    pub all_busy: tokio::sync::Notify,
    /// Woken when a user was opened: the next idle one becomes the standby.
    pub opened_changed: tokio::sync::Notify,
}

impl Pool {
    pub fn new(schedule: Schedule, users: usize, max_users: usize) -> Self {
        let users = users.max(1);
        Pool {
            schedule,
            users,
            max_users: max_users.max(users),
            start: OnceLock::new(),
            ready: AtomicUsize::new(0),
            first_ready: OnceLock::new(),
            next: AtomicU64::new(0),
            opened: AtomicUsize::new(users),
            last_answer: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            full_at: AtomicU64::new(if max_users <= users { 0 } else { u64::MAX }),
            all_busy: tokio::sync::Notify::new(),
            opened_changed: tokio::sync::Notify::new(),
        }
    }

    /// One more user is ready; the `users`-th starts the schedule.
    pub fn ready(&self) {
        self.first_ready.get_or_init(Instant::now);
        if self.ready.fetch_add(1, Ordering::AcqRel) + 1 >= self.users {
            self.start.get_or_init(Instant::now);
        }
    }

    /// True once the schedule has started (see `start`).
    pub fn started(&self) -> bool {
        if self.start.get().is_some() {
            return true;
        }
        match self.first_ready.get() {
            Some(f) if f.elapsed() >= READY_WAIT => {
                self.start.get_or_init(Instant::now);
                true
            }
            _ => false,
        }
    }

    /// The start of the schedule (only asked once it has started).
    pub fn start(&self) -> Instant {
        *self.start.get_or_init(Instant::now)
    }

    /// When slot `i` is due; None past the profile.
    pub fn due(&self, i: u64) -> Option<Instant> {
        let s = self.schedule.due(i)?;
        Some(self.start() + Duration::from_secs_f64(s))
    }

    pub fn opened(&self) -> usize {
        self.opened.load(Ordering::Acquire)
    }

    /// An opened user claims the next slot (it was free).
    pub fn claim_next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::AcqRel)
    }

    /// The next unclaimed slot, without claiming it.
    pub fn peek(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// The standby claims slot `i` if nobody did; on success it is opened.
    pub fn claim_as_standby(&self, i: u64) -> bool {
        if self
            .next
            .compare_exchange(i, i + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        let now = self.opened.fetch_add(1, Ordering::AcqRel) + 1;
        if now >= self.max_users {
            let at = self.start().elapsed().as_nanos() as u64;
            let _ =
                self.full_at
                    .compare_exchange(u64::MAX, at, Ordering::AcqRel, Ordering::Acquire);
        }
        self.opened_changed.notify_waiters();
        true
    }

    /// When the pool reached `max_users`, if it did.
    pub fn full_at(&self) -> Option<Instant> {
        match self.full_at.load(Ordering::Acquire) {
            u64::MAX => None,
            n => Some(self.start() + Duration::from_nanos(n)),
        }
    }

    /// A request goes out; wakes the standby when it made every opened user
    /// busy. Returns the requests now in flight, this one included.
    pub fn sending(&self) -> usize {
        let n = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(n, Ordering::Relaxed);
        if n >= self.opened() {
            self.all_busy.notify_one();
        }
        n
    }

    pub fn answered(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        let at = self.start().elapsed().as_nanos() as u64;
        self.last_answer.fetch_max(at, Ordering::Relaxed);
    }

    /// From the schedule's start to the last answer: the time the burst
    /// really ran (goose's start-up and stopping of the users are not the
    /// target's, and on a busy machine take seconds). None: nothing sent.
    pub fn span(&self) -> Option<Duration> {
        match self.last_answer.load(Ordering::Relaxed) {
            0 => None,
            n => Some(Duration::from_nanos(n)),
        }
    }

    /// True when every opened user has a request in flight.
    pub fn all_busy_now(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) >= self.opened()
    }

    /// True when, at `now`, a slot is due that nobody could claim although
    /// the pool is full: the request just answered held a user the schedule
    /// was waiting for.
    pub fn bound_at(&self, now: Instant, budget: u64) -> bool {
        let i = self.peek();
        i < budget && self.full_at().is_some() && self.due(i).is_some_and(|d| d <= now)
    }

    /// Users in use at once at most, and users opened.
    pub fn peak_and_opened(&self) -> (usize, usize) {
        (self.peak.load(Ordering::Relaxed), self.opened())
    }
}

/// What the pool recorded, per recorder shard and merged: slots that waited
/// for a user (and of those, the ones charged because the pool was full),
/// and the raw latency of requests answered while a slot waited on a full
/// pool (`raw_bound`) and of requests sent under light load, with no more
/// in flight than the users the pool starts with (`raw_light`: the target's
/// latency before any queue of its own could form).
#[derive(Clone)]
pub struct PoolCounts {
    pub waited: u64,
    pub waited_full: u64,
    pub raw_bound: Histogram<u64>,
    pub raw_light: Histogram<u64>,
}

impl PoolCounts {
    pub fn new() -> Self {
        PoolCounts {
            waited: 0,
            waited_full: 0,
            raw_bound: super::stats::new_hist(),
            raw_light: super::stats::new_hist(),
        }
    }

    pub fn add(&mut self, o: &PoolCounts) {
        self.waited += o.waited;
        self.waited_full += o.waited_full;
        let _ = self.raw_bound.add(&o.raw_bound);
        let _ = self.raw_light.add(&o.raw_light);
    }
}

impl Default for PoolCounts {
    fn default() -> Self {
        Self::new()
    }
}

/// A burst's pool, as judged: how big it got and whether it bound the run.
#[derive(Clone)]
pub struct PoolFigures {
    pub users: usize,
    pub max_users: usize,
    pub peak_in_use: usize,
    pub opened: usize,
    pub counts: PoolCounts,
}

/// The most raw latency of the requests that held a full pool while slots
/// waited may exceed that of the others before the target's own
/// saturation counts as shown (see [`PoolRule::new`]).
pub const SATURATION_FACTOR: f64 = 2.0;
/// Requests sent under light load that the comparison needs.
pub const MIN_LIGHT: u64 = 5;

/// Whether a burst's pool bound it, and if so whose fault the waiting was.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolRule {
    /// Some slot waited for a user with all `max_users` busy.
    pub bound: bool,
    /// The target's own saturation is shown: the requests that held the full
    /// pool took at least [`SATURATION_FACTOR`] times the raw time of those
    /// sent under light load (the target queued them; a healthy slow target
    /// takes the same time however many users it serves).
    pub saturated: bool,
    /// Mean raw ms of the requests answered while the full pool bound the
    /// run, and of those sent under light load.
    pub bound_ms: f64,
    pub light_ms: f64,
    /// Users the rate needed: `rate × raw p99`, rounded up.
    pub needed_users: u64,
}

impl PoolRule {
    /// `rate`: the arrival rate at full load; `raw_p99_us`: the run's raw p99.
    pub fn new(c: &PoolCounts, rate: f64, raw_p99_us: u64) -> Self {
        let mean = |h: &Histogram<u64>| if h.is_empty() { 0.0 } else { h.mean() };
        Self::from_means(
            c.waited_full,
            mean(&c.raw_bound),
            c.raw_light.len(),
            mean(&c.raw_light),
            rate,
            raw_p99_us,
        )
    }

    /// The rule on the figures `new` reads (µs), for the simulation.
    pub fn from_means(
        waited_full: u64,
        bound_us: f64,
        light_n: u64,
        light_us: f64,
        rate: f64,
        raw_p99_us: u64,
    ) -> Self {
        let bound = waited_full > 0;
        PoolRule {
            bound,
            saturated: bound
                && light_n >= MIN_LIGHT
                && bound_us >= SATURATION_FACTOR * light_us.max(1.0),
            bound_ms: bound_us / 1000.0,
            light_ms: light_us / 1000.0,
            needed_users: (rate * raw_p99_us as f64 / 1e6).ceil() as u64,
        }
    }

    /// A verdict the pool's size, not the target, decided: the pool bound
    /// the run and the target's saturation is not shown.
    pub fn inconclusive(&self) -> bool {
        self.bound && !self.saturated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_spreads_the_rate_over_ramp_hold_and_ramp_down() {
        // 4 users over 1 s, 3 s at 4, down over 1 s; 30/s a user (120/s).
        let p = Profile::Stages(vec![(4, 1), (4, 3), (0, 1)]);
        let s = Schedule::new(&p, 30.0);
        // 60 slots in the ramp, 360 in the hold, 60 down: 480 (the plan's count).
        assert_eq!(s.due(0), Some(0.0));
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-9;
        assert!(close(s.due(60), 1.0), "{:?}", s.due(60));
        assert!(close(s.due(180), 2.0));
        assert!(close(s.due(420), 4.0));
        assert!(
            close(s.due(479), 5.0 - (1.0f64 / 60.0).sqrt()),
            "{:?}",
            s.due(479)
        );
        assert!(s.due(481).is_none());
        // Within the ramp the rate grows: the gaps shrink.
        let gap = |i| s.due(i + 1).unwrap() - s.due(i).unwrap();
        assert!(gap(10) > gap(50));
        assert!((gap(200) - 1.0 / 120.0).abs() < 1e-9);
        // All at once (`over: 0s`) then hold: a constant rate from 0.
        let s = Schedule::new(&Profile::Stages(vec![(8, 0), (8, 1), (0, 0)]), 0.5);
        assert!(close(s.due(3), 0.75));
        assert!(s.due(5).is_none());
        // Rate stages are the rate itself: 0 to 60/s over 2 s, 60/s for 1 s.
        let s = Schedule::new(&Profile::Rates(vec![(60.0, 2), (60.0, 1), (0.0, 0)]), 1e9);
        assert!(close(s.due(15), 1.0), "{:?}", s.due(15));
        assert!(close(s.due(60), 2.0));
        assert!(close(s.due(120), 3.0));
        assert!(s.due(121).is_none());
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Waiting for a user while the pool could grow is the harness's; once
    /// it is full, the wait is the target's.
    #[test]
    fn only_the_wait_on_a_full_pool_is_charged() {
        let t0 = Instant::now();
        let m = measure_slot(t0, t0 + ms(3), t0 + ms(3), t0 + ms(53), None);
        assert_eq!((m.raw, m.corrected, m.lateness), (ms(50), ms(50), ms(3)));
        // Full since before the slot: the whole wait for a user is charged;
        // the 1 ms from claim to send stays the generator's.
        let m = measure_slot(t0, t0 + ms(30), t0 + ms(31), t0 + ms(81), Some(t0 - ms(5)));
        assert_eq!((m.raw, m.corrected, m.lateness), (ms(50), ms(80), ms(1)));
        // Full from 10 ms into the wait: 20 of its 30 ms are charged.
        let m = measure_slot(t0, t0 + ms(30), t0 + ms(30), t0 + ms(80), Some(t0 + ms(10)));
        assert_eq!((m.corrected, m.lateness), (ms(70), ms(10)));
        // Claimed early and sent on time: nothing to charge.
        let m = measure_slot(t0, t0 - ms(8), t0, t0 + ms(2), Some(t0 - ms(100)));
        assert_eq!((m.corrected, m.lateness), (ms(2), Duration::ZERO));
    }

    fn counts(bound: &[u64], free: &[u64], waited_full: u64) -> PoolCounts {
        let mut c = PoolCounts::new();
        for v in bound {
            c.raw_bound.record(*v).unwrap();
        }
        for v in free {
            c.raw_light.record(*v).unwrap();
        }
        c.waited_full = waited_full;
        c
    }

    #[test]
    fn a_full_pool_is_the_targets_fault_only_when_its_latency_rose() {
        // Healthy and slow: 200 ms whatever the pool; 120/s needs 24 users.
        let c = counts(&[200_000; 300], &[200_000; 40], 250);
        let r = PoolRule::new(&c, 120.0, 200_000);
        assert!(r.bound && !r.saturated && r.inconclusive(), "{r:?}");
        assert_eq!(r.needed_users, 24);
        // Queueing in the target: 500 ms on the full pool, 100 ms before.
        let c = counts(&[500_000; 300], &[100_000; 40], 250);
        assert!(!PoolRule::new(&c, 120.0, 500_000).inconclusive());
        // Never bound: nothing to say.
        let c = counts(&[], &[1_000; 400], 0);
        let r = PoolRule::new(&c, 120.0, 1_000);
        assert!(!r.bound && !r.inconclusive());
        // Bound from the start, nothing to compare with: not shown.
        let c = counts(&[500_000; 300], &[100_000; 3], 250);
        assert!(PoolRule::new(&c, 120.0, 500_000).inconclusive());
    }
}
