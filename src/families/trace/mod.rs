//! Trace correlation (checklist point 4, catalogue §4): ids on every response, W3C traceparent and tracestate, X-Request-Id hygiene, async status.

pub mod exec;
pub mod plan;
pub mod probes;
pub mod spec;
pub mod traceparent;
pub mod tracestate;
pub mod unique;
