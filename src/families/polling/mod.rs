//! The polling fallback (checklist point 6, catalogue §6): a cursor walk that
//! neither repeats nor loses items while the list grows (POLL-001), and events
//! whose webhooks were lost after every retry still found by polling (POLL-002).

pub mod exec;
pub mod plan;
pub mod reconcile;
pub mod spec;
pub mod walk;
