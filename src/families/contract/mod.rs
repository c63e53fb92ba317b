//! Contracts in CI beyond the passive `contract` property (catalogue point
//! 9): checks that send their own requests and judge them against the
//! suite's OpenAPI document. `contract.deprecation` (CON-005): a deprecated
//! operation announces it with `Deprecation` (RFC 9745) and its documented
//! end with `Sunset` (RFC 8594).

pub mod deprecation;
pub mod exec;
pub mod plan;
pub mod spec;
