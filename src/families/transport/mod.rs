//! Transport security (the seed's third launch mistake): the certificate, the TLS versions, HSTS, CORS, mutual TLS and plain http redirected.

pub mod exec;
pub mod headers;
pub mod plan;
pub mod redirect;
pub mod spec;
pub mod tls_probe;
