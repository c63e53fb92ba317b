//! tminus: certifies HTTP integrations before launch.
//!
//! Layering (no arrows back; the table and its test: docs/architecture.md,
//! tests/it/layering.rs): the face (`cli`, `app`) over the reporters, the
//! runner (`run`, `events`), the reader (`suite`, YAML with positions) and
//! the planning driver (`plan`), then the registry (`families`), one folder
//! per check family (`families::<f>`, never importing each other), the
//! context every family plans and runs with (`context`), the spec vocabulary
//! (`spec`: kind tables, the request grammar, diagnostics), the roles
//! (`upstream`, `sink`, `signing`), and below them all `outcome`, `http`,
//! `model` and `redact`. `reference`, the embedded reference integration,
//! stands beside: the default target and every test's fixture, it uses no
//! family. `contract` (an OpenAPI document and the judge of responses
//! against it) sits between the roles and `outcome`: `plan` loads it and
//! `run` hooks it into the probe's client. `compare` (two report folders'
//! bursts judged against each other) sits under the face, over the
//! reporters whose escapers and plots it uses.

// A closed stdout or stderr is not a panic (issue 37). `tminus run ... 2>&1 |
// head -1` closes the pipe after one line; std's `println!`/`eprintln!` panic
// on the write error that follows (Rust ignores SIGPIPE, so a write to a
// closed pipe returns EPIPE) and the run died with exit 101, before its
// reports were written. Two ways out: restore SIGPIPE's default action (the
// process is killed at the first write: no reports, exit 141, not in the
// table) or ignore the error. tminus ignores it: these macros shadow std's
// for the whole crate (a `macro_rules!` defined before the modules wins over
// the prelude's), so every line printed anywhere, in any module, is written
// with its error dropped, and the run goes on to write its reports and exit
// by the table. Unit tests keep std's macros, which libtest captures.
#[cfg(not(test))]
macro_rules! println {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stdout().lock(), $($arg)*);
    }};
}
#[cfg(not(test))]
macro_rules! print {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stdout().lock(), $($arg)*);
    }};
}
#[cfg(not(test))]
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr().lock(), $($arg)*);
    }};
}
#[cfg(not(test))]
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod catalogue;
pub mod chance;
pub mod context;
pub mod contract;
pub mod coverage;
pub mod files;
pub mod fit;
pub mod http;
pub mod logs;
pub mod model;
pub mod plan;
pub mod redact;
pub mod reference;
pub mod suite;
pub mod upstream;
pub mod waiver;

/// Durations for people: `850 ms`, `2.4 s`, `3 m 05 s`.
pub fn fmt_duration(d: std::time::Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1.0 {
        format!("{:.0} µs", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else if ms < 60_000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        let s = d.as_secs();
        format!("{} m {:02} s", s / 60, s % 60)
    }
}
pub mod app;
pub mod bundle;
pub mod certify;
pub mod cli;
pub mod compare;
pub mod cost;
pub mod double;
pub mod events;
pub mod exit;
pub mod families;
pub mod init;
pub mod outcome;
pub mod report;
pub mod run;
pub mod serve;
pub mod signing;
pub mod sink;
pub mod spec;
