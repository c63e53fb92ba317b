//! `tminus init`: suites to start from. A commented starter for one role and
//! profile (`starter.rs`), or a suite written from the API's own OpenAPI
//! document (`openapi.rs`, with request values made by `body.rs`); both
//! validate as written.
//!
//! Layer: a face of the command line, above `contract` and `model`.

mod body;
mod openapi;
mod starter;

pub use openapi::{from_openapi, Scaffold};
pub use starter::{starter, Role};
