//! Third-party peers (issue 12 §5): tminus judged against small axum apps
//! built on crates from crates.io that implement the properties themselves,
//! so its verdicts are checked against readings of the specs other than our
//! own reference's. Every peer module holds one table of expected verdicts
//! written from its crate's documentation before tminus ran, and a test that
//! asserts tminus agrees.

mod expect;
mod server;

mod governor;
mod request_id;
mod standard_webhooks;
