//! The reference's circuit breaker in front of its payment provider
//! (`payments.rs`): closed until `failures` attempts in a row fail, then open
//! for `open_for` (every payment answered 503 + Retry-After without calling
//! the provider), then half-open: one probe at a time is let through (a
//! probe lost for `open_for` is replaced); its success closes the breaker,
//! its failure opens it again. Retries go through a closed breaker only.
//!
//! Defects: `breaker-missing` (it never opens), `breaker-half-open-herd`
//! (half-open lets every request through until one succeeds, the
//! safe-client-gateway outage of PR #3442) and `breaker-flaps` (it closes
//! when its wait ends, without a probe).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the breaker says about one payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Call the provider (retries allowed).
    Call,
    /// Call once as the half-open probe (no retry).
    Probe,
    /// Short-circuit: the breaker is open for this much longer.
    Reject(Duration),
}

#[derive(Debug)]
enum State {
    Closed {
        failures: u32,
    },
    Open {
        until: Instant,
    },
    /// Since when the probe has been out (`None`: no probe yet).
    HalfOpen {
        probe_since: Option<Instant>,
    },
}

#[derive(Debug)]
pub(crate) struct Breaker {
    state: Mutex<State>,
    failures: u32,
    open_for: Duration,
    /// `breaker-missing`.
    off: bool,
    /// `breaker-half-open-herd`.
    herd: bool,
    /// `breaker-flaps`.
    flaps: bool,
}

impl Breaker {
    pub(crate) fn new(
        failures: u32,
        open_for: Duration,
        off: bool,
        herd: bool,
        flaps: bool,
    ) -> Self {
        Breaker {
            state: Mutex::new(State::Closed { failures: 0 }),
            failures: failures.max(1),
            open_for,
            off,
            herd,
            flaps,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn admit(&self) -> Admit {
        if self.off {
            return Admit::Call;
        }
        let mut s = self.lock();
        let now = Instant::now();
        if let State::Open { until } = *s {
            if now < until {
                return Admit::Reject(until - now);
            }
            *s = if self.flaps {
                State::Closed { failures: 0 }
            } else {
                State::HalfOpen { probe_since: None }
            };
        }
        match &mut *s {
            State::Closed { .. } => Admit::Call,
            State::HalfOpen { .. } if self.herd => Admit::Probe,
            // A probe is out: wait for its verdict, unless it was lost (its
            // payment's caller went away before the provider answered).
            State::HalfOpen {
                probe_since: Some(t),
            } if now.duration_since(*t) < self.open_for => {
                Admit::Reject(self.open_for - now.duration_since(*t))
            }
            State::HalfOpen { probe_since } => {
                *probe_since = Some(now);
                Admit::Probe
            }
            State::Open { .. } => unreachable!("handled above"),
        }
    }

    /// Whether it is closed (a retry may go through); `breaker-missing`'s
    /// always is.
    pub(crate) fn closed(&self) -> bool {
        self.off || matches!(*self.lock(), State::Closed { .. })
    }

    /// The outcome of one provider attempt.
    pub(crate) fn record(&self, ok: bool) {
        if self.off {
            return;
        }
        let mut s = self.lock();
        let open = State::Open {
            until: Instant::now() + self.open_for,
        };
        *s = match (&*s, ok) {
            (_, true) => State::Closed { failures: 0 },
            (State::Closed { failures }, false) if failures + 1 < self.failures => State::Closed {
                failures: failures + 1,
            },
            (State::Open { until }, false) => State::Open { until: *until },
            _ => open,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_probes_once_and_closes() {
        let b = Breaker::new(2, Duration::from_millis(50), false, false, false);
        assert_eq!(b.admit(), Admit::Call);
        b.record(false);
        assert_eq!(b.admit(), Admit::Call);
        b.record(false);
        assert!(matches!(b.admit(), Admit::Reject(_)));
        assert!(!b.closed(), "no retry while open");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(b.admit(), Admit::Probe);
        assert!(matches!(b.admit(), Admit::Reject(_)), "one probe at a time");
        b.record(false);
        assert!(matches!(b.admit(), Admit::Reject(_)), "open again");
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(b.admit(), Admit::Probe);
        b.record(true);
        assert_eq!(b.admit(), Admit::Call);
    }

    /// A probe whose payment was dropped before it recorded anything (its
    /// caller went away) does not hold the breaker half-open for ever.
    #[test]
    fn a_lost_probe_is_replaced() {
        let b = Breaker::new(1, Duration::from_millis(40), false, false, false);
        b.record(false);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(b.admit(), Admit::Probe);
        assert!(matches!(b.admit(), Admit::Reject(_)));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(b.admit(), Admit::Probe, "the lost probe is replaced");
        assert!(!b.closed());
        b.record(true);
        assert!(b.closed());
    }

    #[test]
    fn the_defects() {
        let off = Breaker::new(1, Duration::from_secs(9), true, false, false);
        off.record(false);
        assert_eq!(off.admit(), Admit::Call);
        let herd = Breaker::new(1, Duration::from_millis(10), false, true, false);
        herd.record(false);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!((herd.admit(), herd.admit()), (Admit::Probe, Admit::Probe));
        let flaps = Breaker::new(1, Duration::from_millis(10), false, false, true);
        flaps.record(false);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!((flaps.admit(), flaps.admit()), (Admit::Call, Admit::Call));
    }
}
