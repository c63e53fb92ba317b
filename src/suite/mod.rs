//! The suite layer: YAML files read into plain serde structs that keep their
//! source positions, and the diagnostics that point back into those files.
//!
//! Nothing here interprets a suite; `plan` does that. This layer only answers
//! "what did the file say, and where".

pub mod diagnostic;
pub mod kinds;
pub mod load;
pub mod load_spec;
pub mod model;
pub mod scalar;
pub mod steps;

// family: idempotency
pub mod idempotency;

// family: rate_limit
pub mod rate_limit;

// family: trace
pub mod trace;

// family: webhook
pub mod webhook;

// family: client
pub mod client;

// family: end

pub use diagnostic::{Diagnostic, Diagnostics};
pub use load::{discover, load_file, LoadedSuite};
pub use model::{CheckEntry, SuiteFile, TargetSpec};
