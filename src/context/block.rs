//! One exhaustion of the limit, handed from the check that reached it to the
//! checks the runner orders right after it (`run::order`): the storm's block
//! is where `rate_limit.partition` asks the second tenant and where
//! `rate_limit.recovery` takes its samples, instead of each reaching the
//! limit again and waiting a whole window out in turn.
//!
//! What is handed on is only a claim: a check that takes it sends its own
//! request first and uses the block only when that request is limited (a
//! block that ended, another path or another credential is reached again,
//! as before), so no verdict rests on what an earlier check saw alone.

use std::sync::{Arc, Mutex};

use crate::http::{Credential, Exchange};

/// The limit a check reached and left reached.
#[derive(Debug, Clone)]
pub struct Block {
    /// Whose quota: the credential of the request that was limited.
    pub credential: Credential,
    /// The limited request: method and URL.
    pub method: reqwest::Method,
    pub url: String,
    /// The check that reached it.
    pub by: String,
    /// Requests it took to reach the limit.
    pub sent: u32,
    /// The status the request was served before the limit, if one was seen.
    pub served: Option<u16>,
    /// The first limited answer.
    pub first: Exchange,
}

/// The run's slot for a suite's block, and whether this check hands its own
/// on (the next check in the runner's order needs the limit reached).
#[derive(Debug, Clone, Default)]
pub struct Exhaustion {
    slot: Arc<Mutex<Option<Block>>>,
    hand_on: bool,
    /// The check this handle was given to.
    check: String,
}

impl Exhaustion {
    /// An empty slot, shared by the suite's checks.
    pub fn new() -> Self {
        Exhaustion::default()
    }

    /// The same slot, for the check `id` that hands on (`true`) or not.
    pub fn for_check(&self, id: &str, hand_on: bool) -> Self {
        Exhaustion {
            slot: self.slot.clone(),
            hand_on,
            check: id.to_owned(),
        }
    }

    /// The check this handle was given to (a block it leaves names it).
    pub fn check(&self) -> &str {
        &self.check
    }

    /// The next check needs the limit reached: leave it reached (no
    /// cool-down) and [`Exhaustion::leave`] it.
    pub fn hand_on(&self) -> bool {
        self.hand_on
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Block>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Leaves `b` for the next check.
    pub fn leave(&self, b: Block) {
        *self.lock() = Some(b);
    }

    /// The block left for `credential`'s `method` `url`, if any (it stays
    /// in the slot for the checks after).
    pub fn block_for(
        &self,
        credential: &Credential,
        method: &reqwest::Method,
        url: &str,
    ) -> Option<Block> {
        self.lock()
            .as_ref()
            .filter(|b| &b.credential == credential && b.method == *method && b.url == url)
            .cloned()
    }

    /// Forgets the block (the check that had it cooled down, or the runner
    /// moved past the checks that needed it).
    pub fn clear(&self) {
        *self.lock() = None;
    }
}
