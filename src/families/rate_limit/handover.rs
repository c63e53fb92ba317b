//! The block a check leaves reached for the checks the runner orders after
//! it (`context::block`, `run::order`): what is handed on, and how a check
//! takes it (its own request limited now, or nothing was handed on).

use std::time::Instant;

use super::exec::Limited;
use crate::context::CheckContext;
use crate::families::common::describe;
use crate::http::{Exchange, Rendered};
use crate::outcome::Outcome;

/// The block `r` reached, for the checks after this one (`context::block`).
pub(super) fn block_of(
    ctx: &CheckContext,
    r: &Rendered,
    first: Exchange,
    sent: u32,
    served: Option<u16>,
) -> crate::context::block::Block {
    crate::context::block::Block {
        credential: r.credential(),
        method: r.method.clone(),
        url: r.url.clone(),
        by: ctx.exhaustion.check().to_owned(),
        sent,
        served,
        first,
    }
}

/// A block an earlier check handed on for `r`, confirmed by `r` answered
/// limited now: the limited answer, as if this check had reached the
/// limit (its count and served status are the earlier check's), and who
/// reached it. `None`: nothing was handed on, or the block is over.
pub(super) async fn handed_block(
    ctx: &CheckContext,
    r: &Rendered,
    limited_status: u16,
) -> Result<Option<(Limited, String)>, Outcome> {
    let Some(b) = ctx.exhaustion.block_for(&r.credential(), &r.method, &r.url) else {
        return Ok(None);
    };
    let ex = ctx
        .client
        .send(r)
        .await
        .map_err(|e| Outcome::transport("probing the block handed on", &e))?;
    if ex.status() != limited_status {
        ctx.note(format!(
            "the limit {} reached is over ({}): reaching it again",
            b.by,
            describe(&ex)
        ));
        ctx.exhaustion.clear();
        return Ok(None);
    }
    ctx.note(format!(
        "using the limit {} reached ({} requests; now {})",
        b.by,
        b.sent,
        describe(&ex)
    ));
    Ok(Some((
        Limited {
            ex,
            at: Instant::now(),
            sent: b.sent,
            served: b.served,
        },
        b.by,
    )))
}
