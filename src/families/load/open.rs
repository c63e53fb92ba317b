//! One goose user of an open-arrival burst (issue 23): an opened user claims
//! the next slot of the shared schedule as soon as it is free and sends it
//! when it comes due; an idle user waits to be opened, and the one next in
//! line (the standby) claims a slot that came due while every opened user
//! was busy, which opens it. See `pool.rs` for the model and its charges.

use std::time::{Duration, Instant};

use goose::prelude::GooseUser;

use super::engine::{init_user, wait_until, Shared, UserState, SPIN};
use super::pool::{measure_slot, Pool};
use super::stats::SlotFacts;

/// The longest one call of the transaction waits before returning to
/// goose, so a user that is told to stop stops within about this long.
const CALL_BOUND: Duration = Duration::from_millis(250);

/// One call of an open-arrival user: at most one slot sent.
pub(super) async fn open_request(shared: &Shared, pool: &Pool, user: &mut GooseUser) {
    if user.get_session_data::<UserState>().is_none() {
        if init_user(shared, user).await {
            pool.ready();
        }
        return;
    }
    let index = user.weighted_users_index;
    let budget = shared.budget.unwrap_or(0);
    if !pool.started() {
        tokio::time::sleep(Duration::from_millis(5)).await;
        return;
    }
    if goose::is_killswitch_triggered() {
        // Yield: a transaction that returns at once would spin goose's loop.
        tokio::time::sleep(Duration::from_millis(10)).await;
        return;
    }
    let slot = if index < pool.opened() {
        pool.claim_next()
    } else {
        match standby(pool, index, budget).await {
            Some(i) => i,
            None => return,
        }
    };
    let claimed = Instant::now();
    let due = match pool.due(slot) {
        Some(d) if slot < budget => d,
        // The profile's slots were all claimed: idle until goose stops us.
        _ => {
            tokio::time::sleep(CALL_BOUND).await;
            return;
        }
    };
    let Some(st) = user.get_session_data_mut::<UserState>() else {
        return;
    };
    let pick = shared.pick_request(st);
    let mut conn = st.take_conn();
    // Killswitch while waiting: the slot is dropped (never sent).
    if !wait_until(due).await {
        return;
    }
    let client = user.client.clone();
    let in_flight = pool.sending();
    let (sent, done, result) = shared.send(&client, &mut conn, &pick).await;
    pool.answered();
    let m = measure_slot(due, claimed, sent, done, pool.full_at());
    let facts = SlotFacts {
        waited: claimed > due,
        charged: m.corrected > m.raw,
        bound: pool.bound_at(done, budget),
        light: in_flight <= pool.users,
    };
    if let Some(st) = user.get_session_data_mut::<UserState>() {
        st.put_conn(conn);
        shared.after_keyed(st, &pick, &result);
    }
    shared
        .shard(index)
        .record_slot(pick.kind, &m, &result, facts);
}

/// An idle user: waits to become the standby (the next to be opened), and
/// as the standby claims a slot that comes due while every opened user is
/// busy. Some(slot): claimed, and this user is now opened. None: nothing
/// this call (returns within [`CALL_BOUND`]).
async fn standby(pool: &Pool, index: usize, budget: u64) -> Option<u64> {
    let until = Instant::now() + CALL_BOUND;
    loop {
        if goose::is_killswitch_triggered() || Instant::now() >= until {
            return None;
        }
        if index != pool.opened() {
            // Not next in line: sleep until a user is opened.
            let woken = pool.opened_changed.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if index != pool.opened() {
                let _ = tokio::time::timeout(CALL_BOUND, woken).await;
            }
            return None;
        }
        if !pool.all_busy_now() {
            // A user is free and will claim the next slot itself: sleep until
            // a send makes every opened user busy (a stored permit wakes at once).
            let left = until.saturating_duration_since(Instant::now());
            let _ = tokio::time::timeout(left, pool.all_busy.notified()).await;
            continue;
        }
        let i = pool.peek();
        if i >= budget {
            tokio::time::sleep(until.saturating_duration_since(Instant::now())).await;
            return None;
        }
        let due = pool.due(i)?;
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() {
            if pool.claim_as_standby(i) {
                return Some(i);
            }
            // Somebody freed up and took it: look again.
            continue;
        }
        // Due soon: nap (a busy user may free up and claim it meanwhile),
        // yielding the last SPIN as `wait_until` does.
        if left > SPIN {
            tokio::time::sleep((left - SPIN).min(Duration::from_millis(20))).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
}
