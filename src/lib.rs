//! tminus: certifies HTTP integrations before launch.
//!
//! Layering (no arrows back): `suite` (YAML model with positions) -> `plan`
//! (validated, interpolated, defaults applied) -> `run` (executes, emits
//! events) -> `report` (consumes events). `families` holds one module per
//! check family (spec, plan, exec), `http` the client and captured exchanges,
//! and `reference` the embedded reference integration: the default target and
//! every test's fixture. Below them all, `model` holds the value types they
//! share (planned requests, templates, scalars, `Retry-After`, keywords, the
//! clock) and imports none of them: `http` and `reference` depend on `model`,
//! never on `plan` or `families`. `contract` (an OpenAPI document and the
//! judge of responses against it) sits above `http`, `model` and `outcome`
//! and below the families; `plan` loads it and `run` hooks it into the
//! probe's client.

pub mod contract;
pub mod files;
pub mod http;
pub mod model;
pub mod plan;
pub mod redact;
pub mod reference;
pub mod suite;
pub mod upstream;

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
pub mod cli;
pub mod cost;
pub mod events;
pub mod exit;
pub mod families;
pub mod init;
pub mod outcome;
pub mod report;
pub mod run;
pub mod signing;
pub mod sink;
