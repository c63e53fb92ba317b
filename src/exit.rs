//! Exit codes, in one place (documented in README.md).

/// Every selected check passed.
pub const OK: i32 = 0;
/// A check or threshold failed.
pub const CHECK_FAILED: i32 = 1;
/// The suite or the command line is invalid; nothing was sent.
pub const INVALID: i32 = 2;
/// The run could not be judged: target unreachable, port in use, I/O error.
pub const RUN_BROKEN: i32 = 3;
/// A second Ctrl-C (or SIGTERM) while the first was being handled: out at
/// once, no reports, as a shell reports SIGINT (128 + 2).
pub const INTERRUPTED: i32 = 130;

/// Every code tminus exits with (the README's table lists exactly these).
pub const ALL: &[i32] = &[OK, CHECK_FAILED, INVALID, RUN_BROKEN, INTERRUPTED];
