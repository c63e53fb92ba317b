//! Request-body parsing and field validation helpers.
//!
//! Bodies are parsed as raw JSON and checked field by field (instead of a serde
//! derive) so that every 422 names the exact field at fault, e.g. `contacts[2].phone`.

use bytes::Bytes;
use serde_json::{Map, Value};

use super::errors::ApiError;

/// Parses `body` as a JSON object. An empty body counts as `{}` when `allow_empty`.
pub(crate) fn json_object(body: &Bytes, allow_empty: bool) -> Result<Map<String, Value>, ApiError> {
    if allow_empty && body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::validation("body", "must be a JSON object")),
        Err(e) => Err(ApiError::validation("body", format!("invalid JSON: {e}"))),
    }
}

/// A required positive integer.
pub(crate) fn positive_int(
    obj: &Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<u64, ApiError> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(ApiError::validation(field, "is required")),
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= 1)
            .ok_or_else(|| ApiError::validation(field, "must be a positive integer")),
    }
}

/// A required string, non-empty after trimming, at most `max_chars` characters.
pub(crate) fn non_empty_string(
    obj: &Map<String, Value>,
    key: &str,
    field: &str,
    max_chars: usize,
) -> Result<String, ApiError> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(ApiError::validation(field, "is required")),
        Some(Value::String(s)) if s.trim().is_empty() => {
            Err(ApiError::validation(field, "must not be empty"))
        }
        Some(Value::String(s)) if s.chars().count() > max_chars => Err(ApiError::validation(
            field,
            format!("must be at most {max_chars} characters"),
        )),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ApiError::validation(field, "must be a string")),
    }
}
