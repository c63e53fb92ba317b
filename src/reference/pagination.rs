//! Cursor pagination shared by every list endpoint.
//!
//! A cursor is opaque to clients (base64url) but encodes "after sequence number N"
//! for one list kind. Because sequence numbers only grow and rows are kept in `seq`
//! order, a walk sees every row that existed when it started exactly once, however
//! many rows are inserted concurrently; an offset would not have that property.
//! The `broken-pagination` defect swaps in offset cursors that skip one row.

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
}

fn encode(kind: &str, pos: &Position) -> String {
    let raw = match pos {
        Position::AfterSeq(seq) => format!("{kind}:after:{seq}"),
        Position::Offset(off) => format!("{kind}:offset:{off}"),
    };
    URL_SAFE_NO_PAD.encode(raw)
}

fn decode(kind: &str, cursor: &str, offsets: bool) -> Result<Position, ApiError> {
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
    match (mode, n, offsets) {
        (Some("after"), Some(n), false) => n.parse().map(Position::AfterSeq),
        (Some("offset"), Some(n), true) => n.parse().map(Position::Offset),
        _ => return Err(ApiError::InvalidCursor),
    }
    .map_err(|_| ApiError::InvalidCursor)
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
    let broken = state.has(Defect::BrokenPagination);
    let start = match req.cursor.as_deref().map(|c| decode(kind, c, broken)) {
        None => 0,
        Some(Ok(Position::AfterSeq(seq))) => items.partition_point(|it| seq_of(it) <= seq),
        Some(Ok(Position::Offset(off))) => off.min(items.len()),
        Some(Err(e)) => return Err(e),
    };
    let end = (start + req.limit).min(items.len());
    let page = items[start..end].to_vec();
    let next = if end >= items.len() {
        None
    } else if broken {
        // The defect: an off-by-one offset drops the first row of every next page.
        Some(encode(kind, &Position::Offset(end + 1)))
    } else {
        page.last()
            .map(|last| encode(kind, &Position::AfterSeq(seq_of(last))))
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
