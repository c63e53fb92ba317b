//! tminus: certifies HTTP integrations before launch.
//!
//! Layering (no arrows back; the table and its test: docs/architecture.md,
//! tests/layering.rs): the face (`cli`, `app`) over the reporters, the
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

pub mod context;
pub mod contract;
pub mod coverage;
pub mod files;
pub mod http;
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
