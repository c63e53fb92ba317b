//! Shared server state: configuration, the defect switches, per-tenant data and the
//! side-effect counters.
//!
//! `AppState::has` is the ONE place behaviour switches are read, so grepping for
//! `has(Defect::` finds every deliberate break.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use super::defect::Defect;
use super::effects::Effects;
use super::ReferenceConfig;

/// Cheap to clone: everything lives behind one `Arc`.
#[derive(Clone)]
pub(crate) struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    config: ReferenceConfig,
    defects: HashSet<Defect>,
    tenants: Mutex<HashMap<String, TenantData>>,
    /// Server-wide sequence: list ordering and cursors are built on it, and because it
    /// only grows, a cursor stays valid however many rows are inserted meanwhile.
    next_seq: AtomicU64,
    /// Server-wide contact ids, so ids never collide across tenants.
    next_contact_id: AtomicU64,
    effects: Effects,
    webhooks: super::webhook::WebhookState,
    /// API requests seen, for the `stall` defect (every Nth stalls).
    requests_seen: AtomicU64,
    /// Held for writing while the `stall` defect pauses the API.
    pause: tokio::sync::RwLock<()>,
    /// `max_concurrency`: one permit per request being served.
    workers: Option<tokio::sync::Semaphore>,
    /// What `/metrics` exposes (`metrics.rs`).
    metrics: super::metrics::Metrics,
    /// Per-route RED series (`red.rs`).
    red: super::red::Red,
}

/// Everything one API key (tenant) owns. Vectors are kept in ascending `seq` order:
/// rows are pushed while the tenant lock is held, right after taking their `seq`.
#[derive(Default)]
pub(crate) struct TenantData {
    pub messages: Vec<Message>,
    pub contacts: Vec<Contact>,
    pub runs: HashMap<String, ScenarioRun>,
}

#[derive(Clone, Debug)]
pub(crate) struct Message {
    pub seq: u64,
    pub id: String,
    pub contact_id: u64,
    pub text: String,
    pub created_at: String,
}

#[derive(Clone, Debug)]
pub(crate) struct Contact {
    pub seq: u64,
    pub id: u64,
    pub name: String,
    pub phone: String,
    pub created_at: String,
}

#[derive(Clone, Debug)]
pub(crate) struct ScenarioRun {
    pub run_id: String,
    pub scenario_id: String,
    pub params: Value,
    /// Trace id of the request that started the run, so the status resource can be
    /// joined back to it (catalogue TRC-008).
    pub trace_id: String,
    pub created_at: String,
}

impl AppState {
    pub(crate) fn new(config: ReferenceConfig) -> Self {
        let defects = config.defects.iter().copied().collect();
        let config_workers = config.max_concurrency.map(tokio::sync::Semaphore::new);
        AppState {
            inner: Arc::new(Inner {
                config,
                defects,
                tenants: Mutex::new(HashMap::new()),
                next_seq: AtomicU64::new(1),
                next_contact_id: AtomicU64::new(1),
                effects: Effects::default(),
                webhooks: Default::default(),
                requests_seen: AtomicU64::new(0),
                pause: tokio::sync::RwLock::new(()),
                workers: config_workers,
                metrics: Default::default(),
                red: Default::default(),
            }),
        }
    }

    /// Is this defect switched on?
    pub(crate) fn has(&self, defect: Defect) -> bool {
        self.inner.defects.contains(&defect)
    }

    pub(crate) fn config(&self) -> &ReferenceConfig {
        &self.inner.config
    }

    /// The `stall` defect's API-wide pause.
    pub(crate) fn pause(&self) -> &tokio::sync::RwLock<()> {
        &self.inner.pause
    }

    /// `max_concurrency`'s permits (tokio's semaphore is fair: FIFO).
    pub(crate) fn workers(&self) -> Option<&tokio::sync::Semaphore> {
        self.inner.workers.as_ref()
    }

    /// The gauges and counters of `/metrics`.
    pub(crate) fn red(&self) -> &super::red::Red {
        &self.inner.red
    }

    pub(crate) fn metrics(&self) -> &super::metrics::Metrics {
        &self.inner.metrics
    }

    pub(crate) fn effects(&self) -> &Effects {
        &self.inner.effects
    }

    pub(crate) fn webhooks(&self) -> &super::webhook::WebhookState {
        &self.inner.webhooks
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.inner.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// 1, 2, 3, ... for each API request (the `stall` defect counts them).
    pub(crate) fn next_request_number(&self) -> u64 {
        self.inner.requests_seen.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(crate) fn next_contact_id(&self) -> u64 {
        self.inner.next_contact_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Runs `f` with the tenant's data locked (created empty on first use). The lock
    /// is a plain std mutex: critical sections are short and never await.
    pub(crate) fn with_tenant<R>(&self, tenant: &str, f: impl FnOnce(&mut TenantData) -> R) -> R {
        let mut tenants = self.lock_tenants();
        f(tenants.entry(tenant.to_owned()).or_default())
    }

    fn lock_tenants(&self) -> MutexGuard<'_, HashMap<String, TenantData>> {
        // A panic inside a handler must not wedge every later request: the data is
        // still consistent because each critical section is a single push or read.
        self.inner
            .tenants
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
