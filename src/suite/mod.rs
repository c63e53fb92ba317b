//! The suite layer: YAML files read into plain serde structs that keep their
//! source positions, and the diagnostics that point back into those files.
//!
//! Nothing here interprets a suite; `plan` does that. This layer only answers
//! "what did the file say, and where".

pub mod defaults;
pub mod model;
pub mod read;
mod recover;
pub mod schema;

pub use crate::spec::diagnostic::{Diagnostic, Diagnostics};
pub use model::{SuiteFile, TargetSpec};
pub use read::{discover, read_suite, SuiteSource};
