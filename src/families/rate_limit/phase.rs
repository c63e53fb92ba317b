//! Where in its second the target's clock is, so `rate_limit.recovery` can
//! send its limited requests at sub-second phases it chooses (issue 22,
//! case 1) instead of whatever phase the run happens to have.
//!
//! `Date` has 1 s resolution, but each answer pins the target's clock to a
//! one-second interval at the instant it was stamped (between the request's
//! send and the response head's arrival). Requests timed to land where the
//! current estimate puts a tick of `Date` halve what is unknown each time
//! (bisection), so a handful of requests find the tick within a few ms plus
//! the round trip. When the target sends no usable `Date`, tminus's own
//! clock stands in: phases are still spread against any limiter whose
//! windows keep a fixed alignment, and the verdict says which clock was read.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Requests spent at most on finding the tick of `Date` (the first included).
pub const CLOCK_PROBES: u32 = 8;
/// The bisection stops once the tick is known this well (seconds).
pub const PRECISION: f64 = 0.02;
/// A tick known less well than this (seconds) is not used: phases fall back
/// to tminus's own clock, and the verdict says so.
pub const MAX_UNCERTAINTY: f64 = 0.1;

/// Which clock the phases were read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The target's `Date`, its tick found by bisection.
    Date,
    /// tminus's own clock, and why the target's could not be read.
    Local(String),
}

/// What is known of the target's clock: target time (epoch seconds) =
/// local seconds since `base` + an offset within `[lo, hi]`.
#[derive(Debug, Clone)]
pub struct TargetClock {
    base: Instant,
    lo: f64,
    hi: f64,
    pub source: Source,
}

/// The fractional part, in `[0, 1)`.
fn frac(x: f64) -> f64 {
    x - x.floor()
}

/// The distance of two phases on the circle of one second.
pub fn circular_distance(a: f64, b: f64) -> f64 {
    let d = frac(a - b);
    d.min(1.0 - d)
}

/// The widest circular distance between two of `phases` (0 for fewer than two).
pub fn spread(phases: &[f64]) -> f64 {
    let mut best: f64 = 0.0;
    for (i, a) in phases.iter().enumerate() {
        for b in &phases[i + 1..] {
            best = best.max(circular_distance(*a, *b));
        }
    }
    best
}

impl TargetClock {
    /// Nothing known yet: the first observation of `Date` pins it to 1 s.
    pub fn unknown(base: Instant) -> Self {
        TargetClock {
            base,
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
            source: Source::Date,
        }
    }

    /// tminus's own clock, for `why` the target's could not be read.
    pub fn local(base: Instant, why: impl Into<String>) -> Self {
        let epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let offset = epoch - base.elapsed().as_secs_f64();
        TargetClock {
            base,
            lo: offset,
            hi: offset,
            source: Source::Local(why.into()),
        }
    }

    fn x(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.base).as_secs_f64()
    }

    fn mid(&self) -> f64 {
        (self.lo + self.hi) / 2.0
    }

    /// How well the tick is known: half the width of the offset's interval.
    pub fn uncertainty(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }

    /// An answer sent at `sent` whose head arrived `ttfb` later said `date`
    /// (whole epoch seconds): the target's clock read `[date, date + 1)` at
    /// some instant in between. `Err` when that contradicts what was known
    /// (a `Date` not taken from a clock ticking once a second), which leaves
    /// the estimate as it was.
    pub fn observe(
        &mut self,
        sent: Instant,
        ttfb: Duration,
        date: SystemTime,
    ) -> Result<(), String> {
        if self.source != Source::Date {
            return Ok(());
        }
        let d = date
            .duration_since(UNIX_EPOCH)
            .map_err(|_| "a Date before 1970".to_owned())?
            .as_secs_f64()
            .floor();
        let xs = self.x(sent);
        let xr = xs + ttfb.as_secs_f64();
        let (lo, hi) = (self.lo.max(d - xr), self.hi.min(d + 1.0 - xs));
        if lo > hi {
            return Err(format!(
                "the target's Date contradicts an earlier one by {:.0} ms (not a clock ticking once a second)",
                (lo - hi) * 1000.0
            ));
        }
        self.lo = lo;
        self.hi = hi;
        Ok(())
    }

    /// The observation of an exchange (sent at `sent`), when it has a `Date`.
    pub fn observe_response(
        &mut self,
        sent: Instant,
        ex: &crate::http::Exchange,
    ) -> Result<(), String> {
        match ex.response.date() {
            Some(d) => self.observe(sent, ex.ttfb, d),
            None => Err("the target sends no Date".into()),
        }
    }

    /// The phase (seconds past a tick, `[0, 1)`) of the target's clock at `at`.
    pub fn phase_at(&self, at: Instant) -> f64 {
        frac(self.x(at) + self.mid())
    }

    /// The first instant at or after `after` when the target's clock is
    /// `phase` past a tick.
    pub fn next_at(&self, after: Instant, phase: f64) -> Instant {
        let t = self.x(after) + self.mid();
        let mut target = t.floor() + phase;
        if target < t {
            target += 1.0;
        }
        self.base + Duration::from_secs_f64((target - self.mid()).max(0.0))
    }

    /// When to send the next bisection request (its round trip `rtt`) so it
    /// is stamped where the estimate puts a tick, no sooner than 5 ms after `now`.
    pub fn bisect_at(&self, now: Instant, rtt: Duration) -> Instant {
        let half = rtt / 2;
        let tick = self.next_at(now + Duration::from_millis(5) + half, 0.0);
        tick.checked_sub(half).unwrap_or(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(s: f64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs_f64(s)
    }

    /// A simulated target whose clock reads `offset` + local seconds, each
    /// answer stamped `delay` after its send.
    fn bisect(offset: f64, delay: f64) -> TargetClock {
        let base = Instant::now();
        let mut c = TargetClock::unknown(base);
        let mut now = base;
        let rtt = Duration::from_secs_f64(2.0 * delay);
        for i in 0..CLOCK_PROBES {
            if i > 0 {
                if c.uncertainty() <= PRECISION / 2.0 {
                    break;
                }
                now = c.bisect_at(now, rtt);
            }
            let stamped = (now - base).as_secs_f64() + delay + offset;
            c.observe(now, rtt, epoch(stamped.floor())).unwrap();
            now += rtt;
        }
        c
    }

    #[test]
    fn bisection_finds_the_tick_of_date() {
        for offset in [1_700_000_000.0, 1_700_000_000.37, 1_700_000_000.999] {
            for delay in [0.0005, 0.005] {
                let c = bisect(offset, delay);
                assert!(c.uncertainty() <= PRECISION, "{offset} {delay}: {c:?}");
                // The estimate's phase at base is the target's.
                let seen = c.phase_at(c.base);
                assert!(
                    circular_distance(seen, frac(offset)) <= PRECISION + delay,
                    "{offset} {delay}: {seen}"
                );
            }
        }
    }

    #[test]
    fn next_at_lands_on_the_phase() {
        let base = Instant::now();
        let mut c = TargetClock::unknown(base);
        // Stamped exactly at base, the target reads 100.25.
        c.observe(base, Duration::ZERO, epoch(100.0)).unwrap();
        c.observe(
            base + Duration::from_millis(750),
            Duration::ZERO,
            epoch(101.0),
        )
        .unwrap();
        c.observe(
            base + Duration::from_millis(749),
            Duration::ZERO,
            epoch(100.0),
        )
        .unwrap();
        assert!(c.uncertainty() < 0.001, "{c:?}");
        let at = c.next_at(base, 0.5);
        assert!((c.x(at) - 0.25).abs() < 0.002, "{:?}", c.x(at));
        assert!((c.phase_at(at) - 0.5).abs() < 0.002);
        let at = c.next_at(base + Duration::from_millis(300), 0.5);
        assert!((c.x(at) - 1.25).abs() < 0.002, "{:?}", c.x(at));
    }

    #[test]
    fn a_date_that_contradicts_itself_is_refused() {
        let base = Instant::now();
        let mut c = TargetClock::unknown(base);
        c.observe(base, Duration::ZERO, epoch(100.0)).unwrap();
        let e = c
            .observe(
                base + Duration::from_millis(100),
                Duration::ZERO,
                epoch(102.0),
            )
            .unwrap_err();
        assert!(e.contains("contradicts"), "{e}");
    }

    #[test]
    fn without_date_the_local_clock_stands_in_and_says_why() {
        let base = Instant::now();
        let mut c = TargetClock::unknown(base);
        let ex = crate::http::Exchange {
            request: crate::http::RecordedRequest {
                method: "GET".into(),
                url: "http://127.0.0.1/".into(),
                headers: vec![],
                body: vec![],
            },
            response: crate::http::RecordedResponse {
                status: 200,
                headers: vec![],
                body: vec![],
            },
            elapsed: Duration::ZERO,
            ttfb: Duration::ZERO,
        };
        let why = c.observe_response(base, &ex).unwrap_err();
        assert!(why.contains("no Date"), "{why}");
        let local = TargetClock::local(base, why);
        assert!(matches!(&local.source, Source::Local(w) if w.contains("no Date")));
        assert_eq!(local.uncertainty(), 0.0);
        // Its phase is the phase of tminus's own epoch clock.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(circular_distance(local.phase_at(Instant::now()), frac(now)) < 0.01);
    }

    #[test]
    fn spread_is_circular() {
        assert!((spread(&[0.1, 0.5, 0.95]) - 0.45).abs() < 1e-9);
        assert!((spread(&[0.97, 0.02]) - 0.05).abs() < 1e-9);
        assert_eq!(spread(&[0.3]), 0.0);
    }
}
