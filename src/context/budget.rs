//! What each kind sends per credential: the most requests one check spends
//! of the suite's credential (`own`) and of the second tenant's (`second`),
//! and how many of them must fall inside one window.
//!
//! Each family's plan states its own figure (`<f>/plan.rs`, a `requests`
//! method); this module holds the type, and the registry
//! (`families::CheckPlan::requests`) the dispatch. The runner hands
//! `window` to the run's request budget, which reserves it on the check's
//! first request to a limited path; `tminus validate` adds the figures up
//! (`cost.rs`). The figures are maxima from the plan (steps, samples,
//! probes and rounds counted from the suite; side-effect counter reads
//! included), and every shipped check of the gate is held to its figure by
//! `tests/it/quota.rs`, which compares it with what the run's book counted.
//!
//! Checks that exhaust the quota on purpose (`rate_limit.storm`, `recovery`,
//! `partition`) reserve nothing: they are sized from the advertised limit
//! while they run (`rate_limit::exec`), and the block they leave is waited
//! out by the next check's reservation.

/// Requests one check sends at most, per credential.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests {
    /// Of the suite's credential, in the whole check.
    pub own: u64,
    /// Of the second tenant's.
    pub second: u64,
    /// Of the suite's credential, the most that must fall inside one window
    /// (what the runner reserves; a check of rounds reserves each round).
    pub window: u64,
    /// `Some(extra)`: the check exhausts the quota on purpose, sending up to
    /// the advertised limit and then `extra` limited answers.
    pub exhausts: Option<u64>,
}

impl Requests {
    /// `n` requests of the suite's credential, all in one window.
    pub const fn own(n: u64) -> Self {
        Requests {
            own: n,
            second: 0,
            window: n,
            exhausts: None,
        }
    }

    /// A check sized from the advertised limit (`extra` limited answers past it).
    pub const fn exhausting(extra: u64) -> Self {
        Requests {
            own: 0,
            second: 0,
            window: 0,
            exhausts: Some(extra),
        }
    }
}

/// Reads of a side-effect counter around one judged send (before, after).
pub const COUNTER_READS: u64 = 2;
