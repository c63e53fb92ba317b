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
//! while they run (`rate_limit::exec`). Each states what it [`Need`]s of
//! the window, and the runner orders a suite's checks by it (`run::order`):
//! one exhaustion per credential serves every check that needs the limit
//! reached, and the checks that need an unexhausted window run before it.

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
    /// What the check needs of its credential's window (the runner's order).
    pub need: Need,
    /// Of `own`, the requests sent only when something goes wrong (a round
    /// rate limited anyway and sent again) or when the run's other answers
    /// lacked the evidence (`trace.unique`'s ids): in the maximum, not in
    /// what the check must send (`cost::inherent`).
    pub spare: u64,
}

/// What a check needs of its credential's window, for the runner's order
/// (`run::order`): every check that needs an unexhausted window runs
/// before the exhaustion; then the checks that reach the limit, those that
/// judge the block it leaves, those that wait for its reset, and last those
/// that count what all the others' answers carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// Requests served as usual: before any exhaustion (or after a reset).
    #[default]
    Window,
    /// Drives the limit to its end itself (`rate_limit.storm`).
    Exhausts,
    /// Judges the limit reached and leaves it reached
    /// (`rate_limit.partition`): served by a block made before it.
    Blocked,
    /// Judges the limit reached and waits for its reset
    /// (`rate_limit.recovery`): after the others, since the block is over
    /// after it.
    Reset,
    /// Served answers, after every other check of the suite: it counts the
    /// ids their answers carried beside its own (`trace.unique`,
    /// `context::seen`), so it sends only what they lack. The window is
    /// served again by then (the recovery waited for its reset).
    Pool,
}

impl Need {
    /// The check needs served answers (it reaches no limit on purpose).
    pub fn served(self) -> bool {
        matches!(self, Need::Window | Need::Pool)
    }
}

impl Requests {
    /// `n` requests of the suite's credential, all in one window.
    pub const fn own(n: u64) -> Self {
        Requests {
            own: n,
            second: 0,
            window: n,
            exhausts: None,
            need: Need::Window,
            spare: 0,
        }
    }

    /// A check sized from the advertised limit (`extra` limited answers
    /// past it), needing `need` of the window.
    pub const fn exhausting(extra: u64, need: Need) -> Self {
        Requests {
            own: 0,
            second: 0,
            window: 0,
            exhausts: Some(extra),
            need,
            spare: 0,
        }
    }
}

/// Reads of a side-effect counter around one judged send (before, after).
pub const COUNTER_READS: u64 = 2;
