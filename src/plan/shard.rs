//! `tminus run --shard I/N` applied to a planned run: the driver keeps the
//! one suite with a `load:` and hands its burst to the load family's
//! deterministic split (`families::load::shard::slice`).

use std::time::SystemTime;

use crate::families::load::shard::{self, ShardSpec};

/// Turns a planned run into shard `spec` of its burst: exactly one suite of
/// the selection may have a `load:`; suites without one and the suite's
/// checks are dropped (a shard runs only its slice of the burst; run the
/// checks once, without --shard).
pub fn apply(
    plan: &mut super::Plan,
    spec: ShardSpec,
    start_at: Option<SystemTime>,
) -> Result<(), String> {
    let with_load: Vec<String> = plan
        .suites
        .iter()
        .filter(|s| s.load.is_some())
        .map(|s| format!("{} ({})", s.name, s.file.display()))
        .collect();
    if with_load.len() != 1 {
        return Err(format!(
            "--shard runs the burst of one suite, but {} selected suites have a `load:` section{}{}: pass that one suite file",
            with_load.len(),
            if with_load.is_empty() { "" } else { ": " },
            with_load.join(", ")
        ));
    }
    plan.suites.retain(|s| s.load.is_some());
    let s = &mut plan.suites[0];
    // Every shard would read the same signals and `tminus merge` has no
    // shard's reading to judge: refused, not silently dropped.
    if s.load.as_ref().is_some_and(|l| l.observe.is_some()) {
        return Err(format!(
            "--shard: the burst of {} has `observe:`, which a sharded burst does not read yet (every shard would read the same signals, and `tminus merge` judges none): run it unsharded, or without `observe:`",
            s.file.display()
        ));
    }
    s.checks.clear();
    if let Some(load) = s.load.take() {
        s.load = Some(shard::slice(
            &load,
            spec,
            start_at,
            s.file.clone(),
            s.digest.clone(),
        ));
    }
    Ok(())
}
