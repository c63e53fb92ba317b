//! Exit codes, in one place (documented in README.md).

/// Every selected check passed.
pub const OK: i32 = 0;
/// A check or threshold failed.
pub const CHECK_FAILED: i32 = 1;
/// The suite or the command line is invalid; nothing was sent.
pub const INVALID: i32 = 2;
/// The run could not be judged: target unreachable, port in use, I/O error.
pub const RUN_BROKEN: i32 = 3;
/// Nothing failed and nothing broke, but a verdict could go either way:
/// the machine's noise, too few samples or tminus's own pool could explain
/// what was measured (a rerun, more requests or fewer clients decide).
pub const INCONCLUSIVE: i32 = 4;
/// A second Ctrl-C (or SIGTERM) while the first was being handled: out at
/// once, no reports, as a shell reports SIGINT (128 + 2).
pub const INTERRUPTED: i32 = 130;

/// Every code tminus exits with (the README's table lists exactly these).
pub const ALL: &[i32] = &[
    OK,
    CHECK_FAILED,
    INVALID,
    RUN_BROKEN,
    INCONCLUSIVE,
    INTERRUPTED,
];

/// The more serious of two codes: 3 over 1 over 4 over 0 (a run with an
/// unjudged check is not a verdict; a failure is one, noise or not). Codes
/// that end a run before any verdict (2, 130) win over all.
pub fn worst(a: i32, b: i32) -> i32 {
    let rank = |c: i32| match c {
        OK => 0,
        INCONCLUSIVE => 1,
        CHECK_FAILED => 2,
        RUN_BROKEN => 3,
        _ => 4,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_wins_over_failed_over_inconclusive() {
        assert_eq!(worst(INCONCLUSIVE, RUN_BROKEN), RUN_BROKEN);
        assert_eq!(worst(CHECK_FAILED, INCONCLUSIVE), CHECK_FAILED);
        assert_eq!(worst(OK, INCONCLUSIVE), INCONCLUSIVE);
        assert_eq!(worst(INVALID, RUN_BROKEN), INVALID);
    }
}
