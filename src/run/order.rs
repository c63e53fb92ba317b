//! The order a suite's checks run in, from what each needs of its
//! credential's window (`context::budget::Need`), never from where the
//! author wrote it or an `after:` pause.
//!
//! Reaching the limit on purpose costs a window: the requests it takes and
//! the block it leaves. Run in the author's order, the storm, the recovery
//! and the partition checks each reached it and waited it out in turn, and a
//! check that needs served answers could fall right after a block. So every
//! check that needs an unexhausted window runs first (in the author's
//! order), then the checks that reach the limit, the checks that judge the
//! block they leave (handed on: `context::block`), then the checks that
//! wait for its reset, and last the checks that count what every other
//! check's answers carried (`Need::Pool`: `trace.unique`). One exhaustion
//! then serves the storm, the partition and the recovery, the recovery's
//! reset ends the suite's use of it, and the storm's answers are evidence
//! for the uniqueness of ids.
//! When a served check would wait for the window anyway, the group runs
//! there instead ([`next`]): its reset is then the wait already paid.

use std::collections::VecDeque;

use crate::context::budget::Need;

/// One check in the order the runner runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Its index in the suite.
    pub index: usize,
    /// The check after it needs the limit it leaves reached: it hands its
    /// block on instead of cooling down.
    pub hand_on: bool,
}

/// The run order of checks with these needs (stable: checks of one need
/// keep the author's order).
pub fn order(needs: &[Need]) -> Vec<Slot> {
    let mut idx: Vec<usize> = (0..needs.len()).collect();
    idx.sort_by_key(|&i| needs[i]);
    idx.iter()
        .enumerate()
        .map(|(k, &i)| Slot {
            index: i,
            hand_on: matches!(needs[i], Need::Exhausts | Need::Blocked)
                && idx
                    .get(k + 1)
                    .is_some_and(|&j| matches!(needs[j], Need::Blocked | Need::Reset)),
        })
        .collect()
}

/// The next check to run: the head of `queue`, unless it needs served
/// answers that would wait for the window (`waits`, asked of the run's
/// book) while the checks that reach the limit are still to come: they go
/// first then. The block they leave ends with the window that was to be
/// waited for anyway, so the recovery's reset costs no window of its own
/// (a quota the served checks fit in never waits: the group stays last).
pub fn next(
    queue: &mut VecDeque<Slot>,
    needs: &[Need],
    waits: impl FnOnce(usize) -> bool,
) -> Option<Slot> {
    let head = *queue.front()?;
    if needs[head.index] == Need::Window {
        if let Some(k) = queue.iter().position(|s| !needs[s.index].served()) {
            if waits(head.index) {
                // The group is contiguous (`order`: only the checks that
                // count every other's answers come after it): moved whole,
                // in its order, so what it hands on still reaches its own.
                let end = (k..queue.len())
                    .find(|&j| needs[queue[j].index].served())
                    .unwrap_or(queue.len());
                let group: Vec<Slot> = queue.drain(k..end).collect();
                for s in group.into_iter().rev() {
                    queue.push_front(s);
                }
            }
        }
    }
    queue.pop_front()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Need::*;

    fn run(needs: &[Need]) -> Vec<(usize, bool)> {
        order(needs)
            .into_iter()
            .map(|s| (s.index, s.hand_on))
            .collect()
    }

    #[test]
    fn the_gate_runs_its_served_checks_first_and_one_exhaustion_last() {
        // The launch checklist's shape: steps, headers, storm, recovery,
        // partition, then webhooks and trace checks.
        let needs = [Window, Window, Exhausts, Reset, Blocked, Window, Window];
        assert_eq!(
            run(&needs),
            [
                (0, false),
                (1, false),
                (5, false),
                (6, false),
                (2, true),
                (4, true),
                (3, false),
            ]
        );
    }

    #[test]
    fn a_block_is_handed_on_only_to_a_check_that_needs_it() {
        // Two storms: the first cools down (a storm reaches the limit
        // itself), the second hands on to the partition, which is last
        // and cools down.
        assert_eq!(
            run(&[Exhausts, Blocked, Exhausts]),
            [(0, false), (2, true), (1, false)]
        );
        // No storm: the partition reaches the limit and hands it on.
        assert_eq!(
            run(&[Reset, Window, Blocked]),
            [(1, false), (2, true), (0, false)]
        );
        assert_eq!(run(&[Window, Window]), [(0, false), (1, false)]);
        assert!(run(&[]).is_empty());
    }

    /// Runs the queue, `waits` saying which served checks would wait.
    fn drive(needs: &[Need], waits: &[usize]) -> Vec<usize> {
        let mut queue: VecDeque<Slot> = order(needs).into();
        let mut ran = Vec::new();
        while let Some(s) = next(&mut queue, needs, |i| waits.contains(&i)) {
            ran.push(s.index);
        }
        ran
    }

    #[test]
    fn the_exhaustion_takes_the_first_wait_the_served_checks_meet() {
        let needs = [Window, Exhausts, Reset, Window, Blocked, Window];
        // No served check waits: the group is last.
        assert_eq!(drive(&needs, &[]), [0, 3, 5, 1, 4, 2]);
        // Check 3 would wait for the window: the group goes before it, in
        // its order, and once only.
        assert_eq!(drive(&needs, &[3, 5]), [0, 1, 4, 2, 3, 5]);
        // Without a group there is nothing to move.
        assert_eq!(drive(&[Window, Window], &[0, 1]), [0, 1]);
    }

    #[test]
    fn the_checks_that_count_every_answer_run_last_even_when_the_group_moves() {
        let needs = [Pool, Window, Exhausts, Reset, Window, Blocked];
        assert_eq!(
            run(&needs),
            [
                (1, false),
                (4, false),
                (2, true),
                (5, true),
                (3, false),
                (0, false),
            ]
        );
        assert_eq!(drive(&needs, &[]), [1, 4, 2, 5, 3, 0]);
        // Check 4 would wait: the group goes before it, the pool stays last.
        assert_eq!(drive(&needs, &[4]), [1, 2, 5, 3, 4, 0]);
        assert_eq!(drive(&[Pool, Window], &[1]), [1, 0]);
    }
}
