//! Webhooks (checklist point 3, catalogue §3): hostile deliveries to the target's receiver (sender role) and the target's own deliveries (sink role).

pub mod compare_timing;
mod constant_time;
pub mod exec;
mod header_case;
mod payload;
pub mod plan;
pub mod sender;
pub mod sink;
pub mod spec;
pub mod timing;
