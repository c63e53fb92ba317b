//! Side-effect counters and their read-out endpoints (a test hook, no auth).
//!
//! A counter is bumped only when a mutating handler REALLY executes its effect, so
//! checks such as "exactly one execution" (idempotency, retries) can be judged from
//! outside without trusting response bodies. Counts are server-wide, across tenants.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Map, Value};

use super::errors::ApiError;
use super::state::AppState;

/// A kind of side effect. Adding one is a variant, a name and a slot in `Effects`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    MessagesCreate,
    ContactsBulkCreate,
    ScenariosRun,
    WebhooksProcessed,
}

impl Effect {
    const ALL: [Effect; 4] = [
        Effect::MessagesCreate,
        Effect::ContactsBulkCreate,
        Effect::ScenariosRun,
        Effect::WebhooksProcessed,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Effect::MessagesCreate => "messages.create",
            Effect::ContactsBulkCreate => "contacts.bulk_create",
            Effect::ScenariosRun => "scenarios.run",
            Effect::WebhooksProcessed => "webhooks.processed",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Default)]
pub(crate) struct Effects {
    counts: [AtomicU64; Effect::ALL.len()],
}

impl Effects {
    pub(crate) fn record(&self, effect: Effect) {
        self.counts[effect.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn get(&self, effect: Effect) -> u64 {
        self.counts[effect.index()].load(Ordering::Relaxed)
    }
}

/// `GET /__tminus/effects`
pub(crate) async fn all(State(state): State<AppState>) -> Json<Value> {
    let mut map = Map::new();
    for e in Effect::ALL {
        map.insert(e.name().to_owned(), json!(state.effects().get(e)));
    }
    Json(Value::Object(map))
}

/// `GET /__tminus/effects/{name}`
pub(crate) async fn one(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let effect = Effect::ALL
        .into_iter()
        .find(|e| e.name() == name)
        .ok_or_else(|| ApiError::NotFound(format!("no effect counter named `{name}`")))?;
    Ok(Json(
        json!({"name": effect.name(), "count": state.effects().get(effect)}),
    ))
}
