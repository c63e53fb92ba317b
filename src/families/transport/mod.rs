//! Transport security (the seed's third launch mistake): the certificate, the TLS versions, HSTS, CORS and mutual TLS.

pub mod exec;
pub mod headers;
pub mod plan;
pub mod spec;
pub mod tls_probe;
