//! The spec vocabulary: the words every family declares its kinds with and
//! the diagnostics that point back into suite files. It sits below the
//! families, so the reader (`suite`) and the families both use it without
//! importing each other.
//!
//! `kinds`: the `Kind` and `Param` tables with typed defaults, the common
//! fields of a check entry (`check_spec!`) and `family_kinds!`;
//! `request`: the request / expect / capture grammar shared by every family;
//! `diagnostic`: rustc-style `file:line:col` messages.

pub mod diagnostic;
pub mod kinds;
pub mod request;

pub use diagnostic::{Diagnostic, Diagnostics};
