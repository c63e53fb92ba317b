//! A comparison's outcome: the exit code and the one-line verdict.

use super::read::shown_name;
use super::threshold::Verdict;
use super::{render, Comparison, Outcome};
use crate::exit;

/// Exit code and verdict line: a cancelled burst was not measured (3, as a
/// run with an unjudged check); a certain regression fails (1); else any
/// inconclusive verdict is exit 4 ("inconclusive: ..."); else, when at
/// least one threshold could judge, 0 (no change, below the floor or an
/// improvement), naming the measures that could not be compared; with
/// none judged, 4.
pub fn outcome(c: &Comparison) -> Outcome {
    let unmeasured: Vec<String> = c
        .bursts
        .iter()
        .filter_map(|b| {
            b.unjudgeable
                .as_ref()
                .map(|w| format!("{}: {w}", shown_name(&b.id)))
        })
        .collect();
    if !unmeasured.is_empty() {
        return Outcome {
            code: exit::RUN_BROKEN,
            message: format!("not compared: {}", unmeasured.join("; ")),
        };
    }
    let mut failed = Vec::new();
    let mut inconclusive = Vec::new();
    let mut not_compared = Vec::new();
    let mut improved = Vec::new();
    let (mut held, mut floored) = (0usize, 0usize);
    for b in &c.bursts {
        for g in &b.groups {
            for row in &g.rows {
                for (text, v) in &row.verdicts {
                    let at = format!("{} {}: `{text}`", shown_name(&b.id), g.label());
                    match v {
                        Verdict::NoChange => held += 1,
                        Verdict::BelowFloor => floored += 1,
                        Verdict::Improvement => {
                            improved.push(format!("{at} ({})", render::change_text(row)))
                        }
                        Verdict::Regression => {
                            failed.push(format!("{at} broke ({})", render::change_text(row)))
                        }
                        Verdict::Inconclusive(why) => inconclusive.push(format!("{at}: {why}")),
                        Verdict::NotCompared(why) => not_compared.push(format!("{at}: {why}")),
                    }
                }
            }
        }
    }
    let also = |message: &mut String| {
        if !not_compared.is_empty() {
            message.push_str(&format!(
                "; not compared ({}): {}",
                not_compared.len(),
                not_compared.join("; ")
            ));
        }
    };
    if !failed.is_empty() {
        let mut message = format!("regression: {}", failed.join("; "));
        if !inconclusive.is_empty() {
            message.push_str(&format!(
                " (and {} inconclusive: {})",
                inconclusive.len(),
                inconclusive.join("; ")
            ));
        }
        also(&mut message);
        return Outcome {
            code: exit::CHECK_FAILED,
            message,
        };
    }
    if !inconclusive.is_empty() {
        let mut message = format!(
            "inconclusive: the noise of the two runs could explain {}: {}; more requests per burst narrow the intervals",
            if inconclusive.len() == 1 { "one verdict".to_owned() } else { format!("{} verdicts", inconclusive.len()) },
            inconclusive.join("; ")
        );
        also(&mut message);
        return Outcome {
            code: exit::INCONCLUSIVE,
            message,
        };
    }
    let judged = held + floored + improved.len();
    if judged == 0 {
        let mut message = "inconclusive: no threshold could judge any burst".to_owned();
        if not_compared.is_empty() {
            message.push_str(" (none applied; see --threshold)");
        }
        also(&mut message);
        return Outcome {
            code: exit::INCONCLUSIVE,
            message,
        };
    }
    let mut message = format!(
        "no regression: {judged} threshold verdict{} held over {} burst{}, each on its whole 95 % interval",
        if judged == 1 { "" } else { "s" },
        c.bursts.len(),
        if c.bursts.len() == 1 { "" } else { "s" }
    );
    if floored > 0 {
        message.push_str(&format!(" ({floored} of them a change below the floor)"));
    }
    if !improved.is_empty() {
        message.push_str(&format!("; improvement: {}", improved.join("; ")));
    }
    also(&mut message);
    Outcome {
        code: exit::OK,
        message,
    }
}
