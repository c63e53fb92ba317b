//! Credentials and environments (catalogue §10, OBS-004: "a sandbox with
//! fully isolated keys and domains"): the sandbox credential refused by
//! production, nothing created there, and the production credential refused
//! by the sandbox. Production is touched only with read-only probes unless
//! a suite says `allow_production_writes: true`.

pub mod exec;
pub mod judge;
pub mod plan;
pub mod spec;
