//! The suite file as written: plain serde structs, unknown keys rejected,
//! positions kept (`Spanned`) wherever the plan may need to point back.
//!
//! Check entries are dispatched on their `kind` by `kinds.rs`, which keeps
//! serde-saphyr's positions intact (an internally tagged enum would buffer the
//! values and lose them).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::kinds::CheckEntry as KindEntry;
use crate::model::scalar::{DurationValue, Scalar};

pub use super::kinds::CheckEntry;

/// A whole suite file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    /// The suite's name: the JUnit testsuite and the classname prefix.
    pub suite: Spanned<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Free-form version of the suite (certification suites are versioned).
    #[serde(default)]
    pub version: Option<Scalar>,
    /// Suite variables, readable as `${var.NAME}`; `--var` overrides them.
    #[serde(default)]
    pub vars: BTreeMap<String, Spanned<Scalar>>,
    #[serde(default)]
    pub target: Option<TargetSpec>,
    #[serde(default)]
    pub checks: Vec<Spanned<KindEntry>>,
    /// The burst rehearsal, run after the checks (see `load_spec.rs`).
    #[serde(default)]
    pub load: Option<crate::families::load::spec::LoadSpec>,
}

/// Where requests go and what every request carries.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// Absent or empty after interpolation: the embedded reference is started.
    #[serde(default)]
    pub base_url: Option<Spanned<String>>,
    /// Headers sent with every request of the suite (templates allowed).
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<Scalar>>,
    /// Headers that make a request come from a second tenant (another API
    /// key). Checks of cross-tenant properties (idempotency key scope,
    /// rate-limit partitioning) run only when this is set.
    #[serde(default)]
    pub second_tenant_headers: Option<BTreeMap<String, Spanned<Scalar>>>,
    /// Default per-request timeout for this suite (CLI `--timeout` overrides).
    #[serde(default)]
    pub timeout: Option<Spanned<DurationValue>>,
}
