//! `load.capacity` (catalogue DEP-005): the T-3 rehearsal's "how much can it take?", a capacity search over open-arrival rates with the burst engine, judged with chance bands over agreeing windows.

pub mod exec;
pub mod plan;
pub mod search;
pub mod spec;
