//! Shared value types: what suites, plans, families, the runner and the
//! reporters all speak. Nothing here imports a layer above it.

pub mod jsonpath;
pub mod scalar;
pub mod template;
