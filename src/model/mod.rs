//! Shared value types: what suites, plans, families, the runner, the HTTP
//! client and the reference all speak. Nothing here imports a layer above it
//! (`plan`, `families`, `suite`, `run`, `report`).

pub mod contract;
pub mod expo;
pub mod json_schema;
pub mod jsonpath;
pub mod keyword;
pub mod profile;
pub mod request;
pub mod retry_after;
pub mod scalar;
pub mod template;
pub mod text;
pub mod time;
pub mod waiver;
