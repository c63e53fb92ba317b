//! The generic family: `kind: steps`, requests in order with expectations and
//! captures, for anything no dedicated kind covers.

pub mod exec;
pub mod expect;
pub mod plan;
pub mod spec;
