//! Client certification (checklist points 1 and 2, client side): a scripted upstream, the client's command, and a judge of its attempt timeline.

pub mod bounds;
pub mod cpu;
pub mod exec;
pub mod judge;
pub mod plan;
pub mod polling;
pub mod process;
pub mod reap;
pub mod spec;
pub mod timing;
pub mod trace;
