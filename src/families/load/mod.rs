//! The burst rehearsal (catalogue LOAD-*): goose-driven load, HDR histograms with coordinated omission corrected, thresholds.

pub mod capacity;
pub mod engine;
pub mod exec;
pub mod judge;
pub mod lean;
pub mod logging;
pub mod merge;
pub mod observe;
pub mod open;
pub mod plan;
pub mod pool;
mod pool_sim;
pub mod progress;
pub mod sample;
mod send;
pub mod shard;
pub mod signal;
pub mod spec;
pub mod stats;
pub mod summary;
pub mod validity;
pub mod webhooks;
