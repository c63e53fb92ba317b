//! The integration tests that mostly wait (on a reference, a real nginx, a
//! quota window, a child process), in one binary so the library and its
//! dependencies are linked once and cargo's runner keeps both cores busy
//! while they wait. `.cargo/config.toml` sets how many run at once
//! (`RUST_TEST_THREADS`; `--test-threads` overrides it). Tests that load the
//! machine on purpose or judge timing against a tight bound live in
//! `tests/serial/`, which cargo runs after this binary, one test at a time.

#[path = "../common/mod.rs"]
mod common;

mod auth;
mod bounds;
mod budget;
mod bundle;
mod ci_files;
mod cli_conventions;
mod client_cert_shapes;
mod client_no_evidence;
mod contract;
mod contract_deprecation;
mod contract_diff;
mod contract_run;
mod counter_garbage;
mod coverage;
mod deploy_files;
mod dist;
mod docs;
mod first_hour;
mod foundation;
mod fuzz;
mod hostile;
mod hostile_archives;
mod hostile_documents;
mod hostile_round3;
mod hostile_serve;
mod html_browser;
mod idem_mismatch_payments;
mod idempotency;
mod init;
mod init_openapi;
mod init_real_documents;
mod layering;
mod missing_feature;
mod no_evidence;
mod no_evidence_idem_rl;
mod oauth;
mod observability;
mod peers;
mod profile_standard;
mod proxy;
mod quota;
mod rate_limit;
mod rate_limit_dialects;
mod reap;
mod reference_api;
mod reference_openapi;
mod request_ids;
mod serve;
mod serve_examples;
mod severity;
mod shard_files;
mod shard_inputs;
mod shared_block;
mod shipped_suites;
mod suite_schema;
mod summary_md;
mod tls;
mod tls_reference;
mod tls_servers;
mod trace;
mod transport_real_servers;
mod waivers;
mod webhook;
