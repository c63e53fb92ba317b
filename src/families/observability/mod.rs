//! No blind launch (catalogue §10, the seed's fifth launch mistake): the
//! target's own logs judged against what tminus sent. OBS-001: each
//! request's trace id is in the logs (`correlated.rs`); OBS-002: no secret
//! and no personal data tminus sent is (`clean.rs`, `pii.rs`); OBS-003:
//! every route it called has RED series on the target's `/metrics`
//! (`red.rs`). The log source is the suite's `observe.logs` (`crate::logs`).

pub mod clean;
pub mod correlated;
pub mod exec;
pub mod pii;
pub mod plan;
pub mod red;
pub mod spec;
