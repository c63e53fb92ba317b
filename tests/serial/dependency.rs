//! Issue 40: the `dependency` family against the embedded reference. Each
//! kind passes against the healthy reference and fails against the defect
//! that breaks its property, only there; the caching defect is an error
//! (the table: `tests/common/dependency.rs`, run by the shared harness).
//! And the second way to point an API at the double: its provider URL fixed
//! in its configuration, tminus's double on `--dependency-listen`.

use crate::common;

use std::sync::Mutex;

use tminus::reference::ReferenceConfig;

/// One test at a time: the table judges timing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn dependency_defects() {
    let _alone = common::alone();
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    common::harness::run_table(&common::dependency::DEPENDENCY);
}

/// The reference started with `--dependency-url` (no `setup:` in the
/// suite): judged when tminus's double listens there, and "not exercised"
/// (an error, never a pass) when it listens elsewhere.
#[test]
fn a_fixed_dependency_address() {
    let _alone = common::alone();
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = ReferenceConfig::default();
    config.dependency.url = Some(format!("http://127.0.0.1:{port}"));
    let reference = common::RefHandle::start_with(config);
    let listen = format!("127.0.0.1:{port}");
    let (v, out) = common::run_suite_against(
        "tests/suites/dependency-fixed.yaml",
        &reference.url,
        &["--dependency-listen", &listen],
    );
    assert_eq!(
        v,
        [("dependency-fixed/fixed-timeouts".into(), "pass".into())],
        "{}",
        common::stdout(&out)
    );
    // The double on another port: the API's calls reach nobody.
    let (v, out) =
        common::run_suite_against("tests/suites/dependency-fixed.yaml", &reference.url, &[]);
    assert_eq!(
        v,
        [("dependency-fixed/fixed-timeouts".into(), "error".into())],
        "{}",
        common::stdout(&out)
    );
    let said = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert!(
        said.contains("not exercised: 0 of 12 requests reached the dependency"),
        "{said}"
    );
}
