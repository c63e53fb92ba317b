//! What a run saw of a suite's OpenAPI contract, per operation: the figures
//! the JSON and HTML reports show (made by `contract::Watch`, carried by
//! `Event::ContractSummary`).

use serde::Serialize;

/// One suite's contract summary.
#[derive(Debug, Clone, Serialize)]
pub struct ContractSummary {
    pub suite: String,
    /// The document, as the suite names it.
    pub document: String,
    /// Its `openapi:` version.
    pub openapi: String,
    /// Every operation of the document, in document order, seen or not.
    pub operations: Vec<OperationTally>,
    /// Paths answered although no operation describes them.
    pub undocumented_paths: Vec<String>,
}

/// Responses seen for one operation and how many conformed.
#[derive(Debug, Clone, Serialize)]
pub struct OperationTally {
    pub operation: String,
    pub method: String,
    pub path: String,
    pub seen: u64,
    pub conforming: u64,
}
