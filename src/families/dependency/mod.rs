//! The dependency family (`dependency.*`, catalogue §8): tminus plays the API's own dependency (a payment provider, a CRM) and judges how the API behaves when it is slow, failing or overloaded, from both sides.

pub mod breaker;
pub mod drive;
pub mod exec;
pub mod plan;
pub mod retry;
pub mod shed;
pub mod spec;
pub mod timeout;

use drive::Run;

/// The error when the healthy stage already failed: with a working
/// dependency the API did not answer 2xx, so its faults cannot be told
/// apart from its own breakage.
pub fn baseline_error(run: &Run, stage: usize) -> Option<String> {
    let all: Vec<(usize, &drive::Sent)> = run.in_stage(stage).collect();
    let bad: Vec<&(usize, &drive::Sent)> = all.iter().filter(|(_, s)| !s.ok()).collect();
    // A few failures (a breaker still closing, a cold start) leave the stage judged.
    if all.is_empty() || bad.len() * 2 <= all.len() {
        return None;
    }
    let (i, s) = bad[0];
    Some(format!(
        "while the dependency was healthy, {} of {} requests failed (first: {}): the API does not work even with a healthy dependency, so its behaviour under faults cannot be judged",
        bad.len(),
        all.len(),
        s.line(*i)
    ))
}
