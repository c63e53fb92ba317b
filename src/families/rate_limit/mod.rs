//! Rate limits (checklist point 2, catalogue §2): limit headers in every dialect, the 429 storm, Retry-After honesty and per-tenant partitioning.

pub mod exec;
pub mod fields;
mod handover;
pub mod partition;
pub mod phase;
pub mod plan;
pub mod recovery;
pub mod sf;
pub mod spec;
pub mod timing;
