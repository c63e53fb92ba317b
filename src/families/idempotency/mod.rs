//! Idempotency (checklist point 1, catalogue §1): the probe side of Idempotency-Key: replay, mismatch, races, lost responses, key scope, syntax and expiry.

pub mod exec;
pub mod plan;
pub mod race;
pub mod replay;
pub mod spec;
pub mod together;
