//! The integration tests that load the machine on purpose or judge timing
//! (bursts, the noise tests, the defect harness's tables, retry schedules,
//! the dependency double's timing): one test at a time (`common::alone`),
//! after the `it` binary, so no other test's work becomes their noise by
//! accident; the noise they must survive is made on purpose (noise.rs's CPU
//! hogs) or comes from the machine itself.

#[path = "../common/mod.rs"]
mod common;

mod burst_cut;
mod capacity;
mod client;
mod compare;
mod defects;
mod dependency;
mod load;
mod load_no_evidence;
mod noise;
mod observe;
mod plots;
mod shard;
mod thresholds;
