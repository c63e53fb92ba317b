//! Issue 40: the `dependency` family against the embedded reference. Each
//! kind passes against the healthy reference and fails against the defect
//! that breaks its property, only there; the caching defect is an error
//! (the table: `tests/common/dependency.rs`, run by the shared harness).

mod common;

#[test]
fn dependency_defects() {
    common::harness::run_table(&common::dependency::DEPENDENCY);
}
