//! Exit codes, in one place. [`ALL`] is the table every other statement of
//! them is drawn from or checked against: the README's table, docs/ci.md,
//! action.yml's gate, the `--help` of every command that exits by it and
//! `serve`'s verdict words (tests/it/first_hour.rs compares them).

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

/// One exit code: its number, its one-word name and what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    pub code: i32,
    /// One word, as `--help` writes it after the number: `exit 4 (inconclusive)`.
    pub name: &'static str,
    /// One sentence. No backtick, quote or apostrophe, so action.yml can
    /// echo it inside double quotes.
    pub meaning: &'static str,
    /// The verdict word `tminus serve` answers Argo Rollouts with for a run
    /// that exited with this code (`pass`, `fail`, `inconclusive`, `error`).
    pub verdict: &'static str,
}

/// Every code tminus exits with, in order.
pub const ALL: &[Code] = &[
    Code {
        code: OK,
        name: "passed",
        meaning: "every selected check and threshold passed; broken SHOULD properties are warnings (--strict makes them failures)",
        verdict: "pass",
    },
    Code {
        code: CHECK_FAILED,
        name: "failed",
        meaning: "a check or a load threshold failed: the target broke a property",
        verdict: "fail",
    },
    Code {
        code: INVALID,
        name: "invalid",
        meaning: "invalid suite or usage: nothing was sent (errors point to file:line:col)",
        verdict: "error",
    },
    Code {
        code: RUN_BROKEN,
        name: "broken",
        meaning: "the run could not be judged: target unreachable, timeout, a scenario not exercised, a body over the cap, port in use, reports not writable, load refused by the guard, or the run was interrupted",
        verdict: "error",
    },
    Code {
        code: INCONCLUSIVE,
        name: "inconclusive",
        meaning: "nothing failed or broke, but a verdict could go either way: noise on the machine, too few samples or the pool tminus sends from could explain it (the message says what decides: a rerun, more requests, fewer clients)",
        verdict: "inconclusive",
    },
    Code {
        code: INTERRUPTED,
        name: "interrupted",
        meaning: "a second Ctrl-C (or SIGTERM) during the shutdown the first one started: out at once, no reports",
        verdict: "error",
    },
];

/// How codes combine when a run has several outcomes (see [`worst`]).
pub const PRECEDENCE: &str = "2 and 130 win over all, 3 over 1, 1 over 4, 4 over 0";

/// The row of `code`, if tminus exits with it.
pub fn of(code: i32) -> Option<&'static Code> {
    ALL.iter().find(|c| c.code == code)
}

/// The verdict word for a finished run's exit code: `error` for a code not
/// in the table (killed, crashed).
pub fn verdict(code: Option<i32>) -> &'static str {
    code.and_then(of).map_or("error", |c| c.verdict)
}

/// The README's and docs/ci.md's table (Markdown, one row per code).
pub fn markdown_table() -> String {
    let mut out = String::from("| code | name | meaning |\n|---|---|---|\n");
    for c in ALL {
        out.push_str(&format!("| {} | {} | {} |\n", c.code, c.name, c.meaning));
    }
    out
}

/// `serve`'s words for a finished run, from the table: `0 pass, 1 fail, ...`.
pub fn verdict_words() -> String {
    let mut out = Vec::new();
    for c in ALL.iter().filter(|c| c.verdict != "error") {
        out.push(format!("exit {} ({}) is {}", c.code, c.name, c.verdict));
    }
    out.push("any other code is error".to_owned());
    out.join(", ")
}

/// The block at the end of `--help` for every command that exits by the
/// table (clap's `after_help`).
pub fn help_block() -> String {
    let mut out = String::from("Exit codes:\n");
    for c in ALL {
        out.push_str(&format!("  {:>3}  {}: {}\n", c.code, c.name, c.meaning));
    }
    out.push_str(&format!("  ({PRECEDENCE})"));
    out
}

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

    #[test]
    fn the_table_is_ordered_unique_and_quotable() {
        let codes: Vec<i32> = ALL.iter().map(|c| c.code).collect();
        let mut sorted = codes.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(codes, sorted);
        for c in ALL {
            assert!(!c.name.contains(' '), "{c:?}");
            for bad in ['`', '\'', '"', '$', '|'] {
                assert!(!c.meaning.contains(bad), "{bad} in {c:?}");
            }
        }
        // The precedence sentence says what `worst` does.
        assert_eq!(worst(INVALID, CHECK_FAILED), INVALID);
        assert_eq!(worst(INTERRUPTED, RUN_BROKEN), INTERRUPTED);
        assert_eq!(worst(OK, CHECK_FAILED), CHECK_FAILED);
        assert_eq!(verdict(Some(INCONCLUSIVE)), "inconclusive");
        assert_eq!(verdict(Some(101)), "error");
        assert_eq!(verdict(None), "error");
    }
}
