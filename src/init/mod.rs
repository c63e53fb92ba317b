//! `tminus init`: suites to start from. A commented starter for one role and
//! profile (`starter.rs`), or a suite written from the API's own OpenAPI
//! document (`openapi.rs`: a file, or a URL read by `fetch.rs`), its
//! requests made by `request.rs` and `body.rs` with the credentials
//! `security.rs` finds, its text by `write.rs`; both validate as written.
//!
//! Layer: a face of the command line, above `contract` and `model`.

mod body;
mod fetch;
mod openapi;
mod request;
mod security;
mod starter;
mod write;

pub use fetch::{fetch_document, is_url, Fetched};
pub use openapi::{from_openapi, Scaffold};
pub use starter::{starter, Role};
