//! Cursor pagination shared by every list endpoint.
//!
//! A cursor is opaque to clients (base64url) but encodes "after sequence number N"
//! for one list kind. Because sequence numbers only grow and rows are kept in `seq`
//! order, a walk sees every row that existed when it started exactly once, however
//! many rows are inserted concurrently; an offset would not have that property.
//! The `broken-pagination` defect swaps in offset cursors that skip one row;
//! `offset-cursor` counts the position from the newest end (right until a row is
//! inserted mid-walk, which then skips as many old rows); `repeating-cursor`
//! hands out a first-page cursor that serves the second page twice;
//! `endless-cursor` never hands out a null cursor.

use std::collections::HashMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::defect::Defect;
use super::errors::ApiError;
use super::state::AppState;

pub(crate) const DEFAULT_LIMIT: usize = 20;
pub(crate) const MAX_LIMIT: usize = 100;

/// Validated `limit` and `cursor` query parameters.
pub(crate) struct PageRequest {
    limit: usize,
    cursor: Option<String>,
}

impl PageRequest {
    /// Parses `limit` (1..=100, default 20) and `cursor` from the query string;
    /// unknown parameters are ignored.
    pub(crate) fn from_query(query: &HashMap<String, String>) -> Result<Self, ApiError> {
        let limit = match query.get("limit") {
            None => DEFAULT_LIMIT,
            Some(raw) => raw
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    ApiError::validation(
                        "limit",
                        format!("must be an integer between 1 and {MAX_LIMIT}, got `{raw}`"),
                    )
                })?,
        };
        let cursor = query.get("cursor").filter(|c| !c.is_empty()).cloned();
        Ok(PageRequest { limit, cursor })
    }
}

/// Where a page starts, decoded from a cursor.
enum Position {
    AfterSeq(u64),
    /// Only produced and accepted under `broken-pagination`.
    Offset(usize),
    /// Rows left after the page, counted from the newest end: only under
    /// `offset-cursor`.
    FromEnd(usize),
    /// "After `seq`, and hand out the cursor to the same place again": only
    /// under `repeating-cursor`.
    Again(u64),
}

fn encode(kind: &str, pos: &Position) -> String {
    let raw = match pos {
        Position::AfterSeq(seq) => format!("{kind}:after:{seq}"),
        Position::Offset(off) => format!("{kind}:offset:{off}"),
        Position::FromEnd(n) => format!("{kind}:from-end:{n}"),
        Position::Again(seq) => format!("{kind}:again:{seq}"),
    };
    URL_SAFE_NO_PAD.encode(raw)
}

/// Which cursor form the reference hands out (one per defect, keyset when healthy).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Keyset,
    Offset,
    FromEnd,
    Repeating,
    Endless,
}

fn decode(kind: &str, cursor: &str, mode_now: Mode) -> Result<Position, ApiError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| ApiError::InvalidCursor)?;
    let raw = String::from_utf8(bytes).map_err(|_| ApiError::InvalidCursor)?;
    let mut parts = raw.splitn(3, ':');
    let (k, mode, n) = (parts.next(), parts.next(), parts.next());
    // A cursor from another list (or another pagination mode) is rejected rather
    // than silently reinterpreted.
    if k != Some(kind) {
        return Err(ApiError::InvalidCursor);
    }
    let n = n.ok_or(ApiError::InvalidCursor)?;
    let bad = |_| ApiError::InvalidCursor;
    match (mode, mode_now) {
        (Some("after"), Mode::Keyset | Mode::FromEnd | Mode::Repeating | Mode::Endless) => {
            n.parse().map(Position::AfterSeq).map_err(bad)
        }
        (Some("offset"), Mode::Offset) => n.parse().map(Position::Offset).map_err(bad),
        (Some("from-end"), Mode::FromEnd) => n.parse().map(Position::FromEnd).map_err(bad),
        (Some("again"), Mode::Repeating) => n.parse().map(Position::Again).map_err(bad),
        _ => Err(ApiError::InvalidCursor),
    }
}

/// One page of `items` (ascending by `seq_of`) and the cursor of the next page, or
/// `None` on the last page.
pub(crate) fn paginate<T: Clone>(
    state: &AppState,
    kind: &str,
    items: &[T],
    seq_of: impl Fn(&T) -> u64,
    req: &PageRequest,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let mode = if state.has(Defect::BrokenPagination) {
        Mode::Offset
    } else if state.has(Defect::OffsetCursor) {
        Mode::FromEnd
    } else if state.has(Defect::RepeatingCursor) {
        Mode::Repeating
    } else if state.has(Defect::EndlessCursor) {
        Mode::Endless
    } else {
        Mode::Keyset
    };
    let after = |seq: u64| items.partition_point(|it| seq_of(it) <= seq);
    let (start, again) = match req.cursor.as_deref().map(|c| decode(kind, c, mode)) {
        None => (0, None),
        Some(Ok(Position::AfterSeq(seq))) => (after(seq), None),
        Some(Ok(Position::Offset(off))) => (off.min(items.len()), None),
        Some(Ok(Position::FromEnd(n))) => (items.len().saturating_sub(n), None),
        Some(Ok(Position::Again(seq))) => (after(seq), Some(seq)),
        Some(Err(e)) => return Err(e),
    };
    let end = (start + req.limit).min(items.len());
    let page = items[start..end].to_vec();
    let next = if end >= items.len() && mode == Mode::Endless {
        // The defect: past the end, a cursor to where this page ended (an
        // empty page hands out the one it was asked with).
        let seq = match (page.last(), start.checked_sub(1)) {
            (Some(last), _) => seq_of(last),
            (None, Some(before)) => seq_of(&items[before]),
            (None, None) => 0,
        };
        Some(encode(kind, &Position::AfterSeq(seq)))
    } else if end >= items.len() {
        None
    } else {
        match (mode, again) {
            // The defect: an off-by-one offset drops the first row of every next page.
            (Mode::Offset, _) => Some(encode(kind, &Position::Offset(end + 1))),
            // The defect: the rows left, counted when the page was served; a
            // row inserted before the next request moves the start past an
            // old row.
            (Mode::FromEnd, _) => Some(encode(kind, &Position::FromEnd(items.len() - end))),
            // The defect: the page served from an `again` cursor points back
            // at its own start, so it is served a second time.
            (Mode::Repeating, Some(seq)) => Some(encode(kind, &Position::AfterSeq(seq))),
            (Mode::Repeating, None) if req.cursor.is_none() => page
                .last()
                .map(|last| encode(kind, &Position::Again(seq_of(last)))),
            _ => page
                .last()
                .map(|last| encode(kind, &Position::AfterSeq(seq_of(last)))),
        }
    };
    Ok((page, next))
}

/// The list body every paginated route answers: `{data, meta: {next_cursor}}`.
pub(crate) fn page_body<T>(
    page: &[T],
    next: Option<String>,
    to_json: impl Fn(&T) -> serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "data": page.iter().map(to_json).collect::<Vec<_>>(),
        "meta": {"next_cursor": next},
    })
}
