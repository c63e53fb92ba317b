//! Planning the polling kinds: the list's dialect compiled to JSON paths, the
//! bounds checked (a walk is never endless, a refusal is not a 2xx).

use std::time::Duration;

use super::spec::{defaults as d, CursorWalkSpec, PollingSpec, ReconcileSpec};
use crate::context::{PlanCtx, RequestPlan};
use crate::model::jsonpath::JsonPath;

/// The variable a trigger names the sink's URL with (as the webhook family's
/// sink kinds do).
pub const SINK_URL_VAR: &str = "sink_url";

/// How to walk one cursor-paginated list.
#[derive(Debug, Clone)]
pub struct ListPlan {
    /// The first page.
    pub request: RequestPlan,
    pub items: JsonPath,
    pub item_id: JsonPath,
    pub next_cursor: JsonPath,
    pub cursor_param: String,
    pub max_pages: u64,
}

#[derive(Debug, Clone)]
pub struct CursorWalkPlan {
    pub list: ListPlan,
    pub insert: RequestPlan,
    pub seed: u64,
    pub seed_ids: JsonPath,
    pub inserts: u64,
}

#[derive(Debug, Clone)]
pub struct ReconcilePlan {
    pub trigger: Vec<RequestPlan>,
    pub list: ListPlan,
    pub attempts: u64,
    pub respond: u16,
    pub event_id: JsonPath,
    pub wait: Duration,
    pub give_up_within: Duration,
    pub quiet: Duration,
}

/// A planned `polling.*` check.
#[derive(Debug, Clone)]
pub enum PollingPlan {
    CursorWalk(CursorWalkPlan),
    Reconcile(ReconcilePlan),
}

/// The most `seed` or `inserts` a suite may ask for (each is one request).
const MAX_SENDS: u64 = 1000;
/// The most `attempts` a platform is waited for.
const MAX_ATTEMPTS: u64 = 100;

pub fn plan(ctx: &mut PlanCtx<'_>, spec: &PollingSpec) -> PollingPlan {
    match spec {
        PollingSpec::CursorWalk(s) => PollingPlan::CursorWalk(walk(ctx, s)),
        PollingSpec::Reconcile(s) => PollingPlan::Reconcile(reconcile(ctx, s)),
    }
}

struct ListFields<'a> {
    items: &'a str,
    item_id: &'a str,
    next_cursor: &'a str,
    cursor_param: &'a str,
    max_pages: u64,
}

fn list(
    ctx: &mut PlanCtx<'_>,
    at: serde_saphyr::Location,
    request: RequestPlan,
    f: ListFields<'_>,
) -> ListPlan {
    if f.max_pages == 0 || f.max_pages > d::MAX_PAGES_MAX {
        ctx.error(
            at,
            format!(
                "max_pages must be 1 to {}, got {}",
                d::MAX_PAGES_MAX,
                f.max_pages
            ),
        );
    }
    if f.cursor_param.is_empty() {
        ctx.error(at, "cursor_param must not be empty");
    }
    ListPlan {
        request,
        items: ctx.json_path(f.items, at),
        item_id: ctx.json_path(f.item_id, at),
        next_cursor: ctx.json_path(f.next_cursor, at),
        cursor_param: f.cursor_param.to_owned(),
        max_pages: f.max_pages.clamp(1, d::MAX_PAGES_MAX),
    }
}

fn walk(ctx: &mut PlanCtx<'_>, s: &CursorWalkSpec) -> CursorWalkPlan {
    let at = s.id.referenced;
    let request = ctx.request(&s.request, at);
    let insert = ctx.request(&s.insert, at);
    for (name, n) in [("seed", s.seed), ("inserts", s.inserts)] {
        if n > MAX_SENDS {
            ctx.error(at, format!("{name} may be at most {MAX_SENDS}, got {n}"));
        }
    }
    if s.inserts == 0 {
        ctx.error(
            at,
            "inserts must be at least 1: a walk without inserts does not judge POLL-001",
        );
    }
    CursorWalkPlan {
        list: list(
            ctx,
            at,
            request,
            ListFields {
                items: &s.items,
                item_id: &s.item_id,
                next_cursor: &s.next_cursor,
                cursor_param: &s.cursor_param,
                max_pages: s.max_pages,
            },
        ),
        insert,
        seed: s.seed.min(MAX_SENDS),
        seed_ids: ctx.json_path(&s.seed_ids, at),
        inserts: s.inserts.min(MAX_SENDS),
    }
}

fn reconcile(ctx: &mut PlanCtx<'_>, s: &ReconcileSpec) -> ReconcilePlan {
    let at = s.id.referenced;
    ctx.captures.insert(SINK_URL_VAR.to_owned());
    let trigger: Vec<RequestPlan> = s.trigger.iter().map(|r| ctx.request(r, at)).collect();
    if trigger.is_empty() {
        ctx.error(
            at,
            "trigger needs at least one request (subscribe `${var.sink_url}`, then make the target emit)",
        );
    }
    let request = ctx.request(&s.poll, at);
    if s.attempts == 0 || s.attempts > MAX_ATTEMPTS {
        ctx.error(
            at,
            format!("attempts must be 1 to {MAX_ATTEMPTS}, got {}", s.attempts),
        );
    }
    if !(400..600).contains(&s.respond) {
        ctx.error(
            at,
            format!(
                "respond must be a 4xx or 5xx refusal, got {}: the sink refuses every delivery",
                s.respond
            ),
        );
    }
    ReconcilePlan {
        trigger,
        list: list(
            ctx,
            at,
            request,
            ListFields {
                items: &s.items,
                item_id: &s.item_id,
                next_cursor: &s.next_cursor,
                cursor_param: &s.cursor_param,
                max_pages: s.max_pages,
            },
        ),
        attempts: s.attempts.clamp(1, MAX_ATTEMPTS),
        respond: s.respond,
        event_id: ctx.json_path(&s.event_id, at),
        wait: s.wait.0,
        give_up_within: s.give_up_within.0,
        quiet: s.quiet.0,
    }
}

impl PollingPlan {
    /// Requests of the suite's credential: the sends, and every page a walk
    /// may take (`context::budget`).
    pub fn requests(&self) -> crate::context::budget::Requests {
        use crate::context::budget::Requests;
        match self {
            PollingPlan::CursorWalk(p) => Requests::own(p.seed + 2 * p.list.max_pages + p.inserts),
            PollingPlan::Reconcile(p) => Requests::own(p.trigger.len() as u64 + p.list.max_pages),
        }
    }
}
