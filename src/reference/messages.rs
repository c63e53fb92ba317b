//! `/public/v1/messages`: create, list (cursor-paginated) and count, per tenant.

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
use super::state::{AppState, Message};
use super::validate;

/// Longest accepted `text`, in characters.
const MAX_TEXT_CHARS: usize = 4096;

fn to_json(m: &Message) -> Value {
    json!({
        "id": m.id,
        "contact_id": m.contact_id,
        "text": m.text,
        "created_at": m.created_at,
    })
}

/// `POST /public/v1/messages` `{"contact_id": int, "text": string}` -> 201.
pub(crate) async fn create(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    req_ctx: Option<axum::Extension<super::trace::RequestContext>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let obj = validate::json_object(&body?, false)?;
    let contact_id = validate::positive_int(&obj, "contact_id", "contact_id")?;
    let text = validate::non_empty_string(&obj, "text", "text", MAX_TEXT_CHARS)?;

    let message = state.with_tenant(&tenant, |t| {
        let m = Message {
            seq: state.next_seq(),
            id: format!("msg_{}", ulid::Ulid::new()),
            contact_id,
            text,
            created_at: now_rfc3339(),
        };
        t.messages.push(m.clone());
        m
    });
    // Counted after the write, so the counter means "a row really exists".
    state.effects().record(Effect::MessagesCreate);
    // Spawned deliveries: the response never waits for a subscriber.
    super::webhook::emit(
        &state,
        &tenant,
        "message.created",
        to_json(&message),
        req_ctx.map(|c| c.0.trace_id.clone()),
    );
    let mut body = to_json(&message);
    // The drift defect: the field is renamed in the answer (the stored
    // message and the webhook keep `contact_id`).
    if state.has(super::defect::Defect::FieldRenamed) {
        if let Some(obj) = body.as_object_mut() {
            if let Some(v) = obj.remove("contact_id") {
                obj.insert("contactId".into(), v);
            }
        }
    }
    Ok((StatusCode::CREATED, Json(body)))
}

/// `GET /public/v1/messages?limit=&cursor=`
pub(crate) async fn list(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::validation("query", e.body_text()))?;
    let page_req = PageRequest::from_query(&query)?;
    let (page, next) = state.with_tenant(&tenant, |t| {
        paginate(&state, "messages", &t.messages, |m| m.seq, &page_req)
    })?;
    Ok(Json(page_body(&page, next, to_json)))
}

/// `GET /public/v1/messages/count`
pub(crate) async fn count(
    State(state): State<AppState>,
    Tenant(tenant): Tenant,
) -> Result<Json<Value>, ApiError> {
    // The drift defect: a status the document does not list.
    if state.has(super::defect::Defect::Undocumented500) {
        return Err(ApiError::Internal(
            "the message count is unavailable".into(),
        ));
    }
    let n = state.with_tenant(&tenant, |t| t.messages.len());
    Ok(Json(json!({"count": n})))
}
