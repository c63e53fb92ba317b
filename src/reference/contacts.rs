//! `/public/v1/contacts`: bulk create (all-or-nothing) and cursor-paginated list.

use std::collections::HashMap;

use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::Json;
use bytes::Bytes;
use serde_json::{json, Value};

use super::auth::Tenant;
use super::clock::now_rfc3339;
use super::effects::Effect;
use super::errors::ApiError;
use super::pagination::{page_body, paginate, PageRequest};
use super::state::{AppState, Contact};
use super::validate;

pub(crate) const MAX_BULK: usize = 100;
const MAX_NAME_CHARS: usize = 200;
const MAX_PHONE_CHARS: usize = 32;

fn to_json(c: &Contact) -> Value {
    json!({"id": c.id, "name": c.name, "phone": c.phone, "created_at": c.created_at})
}

/// `POST /public/v1/contacts/bulk-create` `{"contacts":[{"name","phone"}, ...]}` -> 201.
///
/// Every item is validated before anything is written, so a 422 never leaves a
/// partial batch behind (and the effect counter is untouched).
pub(crate) async fn bulk_create(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let obj = validate::json_object(&body?, false)?;
    let items = match obj.get("contacts") {
        None | Some(Value::Null) => return Err(ApiError::validation("contacts", "is required")),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(ApiError::validation("contacts", "must be an array")),
    };
    if items.is_empty() || items.len() > MAX_BULK {
        return Err(ApiError::validation(
            "contacts",
            format!("must hold 1 to {MAX_BULK} items, got {}", items.len()),
        ));
    }
    let mut parsed = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(item) = item else {
            return Err(ApiError::validation(
                format!("contacts[{i}]"),
                "must be an object",
            ));
        };
        let name = validate::non_empty_string(
            item,
            "name",
            &format!("contacts[{i}].name"),
            MAX_NAME_CHARS,
        )?;
        let phone = validate::non_empty_string(
            item,
            "phone",
            &format!("contacts[{i}].phone"),
            MAX_PHONE_CHARS,
        )?;
        parsed.push((name, phone));
    }

    let ids = state.with_tenant(&tenant, |t| {
        let created_at = now_rfc3339();
        parsed
            .into_iter()
            .map(|(name, phone)| {
                let c = Contact {
                    seq: state.next_seq(),
                    id: state.next_contact_id(),
                    name,
                    phone,
                    created_at: created_at.clone(),
                };
                let id = c.id;
                t.contacts.push(c);
                id
            })
            .collect::<Vec<_>>()
    });
    // One bulk call is one effect, however many contacts it created.
    state.effects().record(Effect::ContactsBulkCreate);
    Ok((
        StatusCode::CREATED,
        Json(json!({"created": ids.len(), "ids": ids})),
    ))
}

/// `GET /public/v1/contacts?limit=&cursor=`
pub(crate) async fn list(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::validation("query", e.body_text()))?;
    let page_req = PageRequest::from_query(&query)?;
    let (page, next) = state.with_tenant(&tenant, |t| {
        paginate(&state, "contacts", &t.contacts, |c| c.seq, &page_req)
    })?;
    Ok(Json(page_body(&page, next, to_json)))
}
