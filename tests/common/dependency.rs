//! The dependency family's defect table (issue 40): each defect of the
//! reference's payment route fails only the checks of `suites/dependency.yaml`
//! that judge its property, and the caching defect (the provider never
//! called) is an error on every check, never a pass. Listed in
//! `tests/serial/defects.rs`'s tables (every defect has one home there) and run by
//! `tests/serial/dependency.rs`.

use tminus::reference::{Defect::*, DefectFamily};

use super::harness::{row, Runner, Table};

pub static DEPENDENCY: Table = Table {
    family: DefectFamily::Dependency,
    suite: "suites/dependency.yaml",
    runner: Runner::Reference,
    // Three runs at a time (about 70 s for the table): the suite mostly
    // waits on its schedule; its tightest timing, the shed check's 50 ms
    // rejection p99 at 120/s, held with three at once on a shared 2-core
    // machine.
    width: 3,
    rows: &[
        // 2 s per try, 3 tries, no deadline: the slow and hanging provider
        // holds payments for seconds (DEP-001).
        row(
            &[DependencySlowTimeout],
            &[("dep-timeout-budget", "were held past 400 ms")],
            &[],
        ),
        // Six tries back to back, Retry-After ignored (DEP-002).
        row(
            &[DependencyRetryStorm],
            &[("dep-retry-bound", "more than 3 x the healthy fan-out of 1")],
            &[],
        ),
        // No breaker: it never opens, and nothing holds the retries back
        // under a steady failure (DEP-003, DEP-002's amplification).
        row(
            &[BreakerMissing],
            &[
                ("dep-retry-bound", "amplification: "),
                ("dep-breaker", "the breaker never opened"),
            ],
            &[],
        ),
        // Half-open lets every payment through (DEP-003).
        row(
            &[BreakerHalfOpenHerd],
            &[("dep-breaker", "a half-open herd")],
            &[],
        ),
        // The breaker closes when its wait ends, without a probe: a steady
        // fault opens and closes it over and over (DEP-003).
        row(
            &[BreakerFlaps],
            &[(
                "dep-breaker",
                "the breaker closed again while the dependency still failed",
            )],
            &[],
        ),
        // A full pool queues instead of answering 503 at once (DEP-004).
        row(
            &[QueuesInsteadOfShedding],
            &[("dep-shed", "the API took them all and queued")],
            &[],
        ),
        // A cache in front of the provider: nothing reaches tminus's double,
        // so nothing can be judged (an error, not a pass).
        row(&[DependencyCached], &[], &[]).erring(&[
            ("dep-timeout-budget", "not exercised: 0 of"),
            ("dep-retry-bound", "not exercised: 0 of"),
            ("dep-breaker", "not exercised: 0 of"),
            ("dep-shed", "not exercised: 0 of"),
        ]),
    ],
};
