//! YAML specs of the polling kinds (`polling.*`, catalogue POLL-001 and
//! POLL-002). The list's dialect (where the items, their ids and the next
//! cursor are, which query parameter carries the cursor) is a parameter whose
//! default is the BOTIX list shape: `{data: [...], meta: {next_cursor}}`.

use crate::model::scalar::DurationValue;
use crate::spec::kinds::{check_spec, family_kinds, must, param, DefaultValue as D, Kind, Param};
use crate::spec::request::RequestSpec;

/// Every default of the family: serde applies these, `KINDS` prints them.
pub mod defaults {
    use std::time::Duration;

    pub const ITEMS: &str = "$.data";
    pub const ITEM_ID: &str = "$.id";
    pub const NEXT_CURSOR: &str = "$.meta.next_cursor";
    pub const CURSOR_PARAM: &str = "cursor";
    pub const MAX_PAGES: u64 = 200;
    /// The most pages a suite may allow (each walk), so a loop stays bounded.
    pub const MAX_PAGES_MAX: u64 = 10_000;
    pub const SEED: u64 = 0;
    pub const SEED_IDS: &str = "$.id";
    pub const INSERTS: u64 = 3;
    pub const EVENT_ID: &str = "$.id";
    pub const RESPOND: u16 = 500;
    pub const WAIT: Duration = Duration::from_secs(10);
    pub const GIVE_UP_WITHIN: Duration = Duration::from_secs(60);
    pub const QUIET: Duration = Duration::from_secs(1);
}

use defaults as d;

fn items() -> String {
    d::ITEMS.into()
}
fn item_id() -> String {
    d::ITEM_ID.into()
}
fn next_cursor() -> String {
    d::NEXT_CURSOR.into()
}
fn cursor_param() -> String {
    d::CURSOR_PARAM.into()
}
fn max_pages() -> u64 {
    d::MAX_PAGES
}
fn seed() -> u64 {
    d::SEED
}
fn seed_ids() -> String {
    d::SEED_IDS.into()
}
fn inserts() -> u64 {
    d::INSERTS
}
fn event_id() -> String {
    d::EVENT_ID.into()
}
fn respond() -> u16 {
    d::RESPOND
}
fn wait() -> DurationValue {
    DurationValue(d::WAIT)
}
fn give_up_within() -> DurationValue {
    DurationValue(d::GIVE_UP_WITHIN)
}
fn quiet() -> DurationValue {
    DurationValue(d::QUIET)
}

check_spec!(
    /// `polling.cursor_walk`: walk the cursor to its end twice, the second
    /// time while tminus inserts items (POLL-001).
    CursorWalkSpec {
        /// The first page (`limit` in `query` sets the page size).
        pub request: RequestSpec,
        /// A request that adds one or more items to the list.
        pub insert: RequestSpec,
        #[serde(default = "items")]
        pub items: String,
        #[serde(default = "item_id")]
        pub item_id: String,
        #[serde(default = "next_cursor")]
        pub next_cursor: String,
        #[serde(default = "cursor_param")]
        pub cursor_param: String,
        #[serde(default = "max_pages")]
        pub max_pages: u64,
        /// `insert` sent this many times before the walks, so the list has pages.
        #[serde(default = "seed")]
        pub seed: u64,
        /// Where a seeding answer names the ids it created (one id or a list).
        #[serde(default = "seed_ids")]
        pub seed_ids: String,
        /// `insert` sent after each of the first N pages of the second walk.
        #[serde(default = "inserts")]
        pub inserts: u64,
    }
);

check_spec!(
    /// `polling.reconciles_lost_webhooks`: events whose every delivery the
    /// sink refused are found by polling, by the same id (POLL-002).
    ReconcileSpec {
        /// Requests that subscribe the sink (`${var.sink_url}`) and make the
        /// target emit events.
        pub trigger: Vec<RequestSpec>,
        /// The first page of the event list.
        pub poll: RequestSpec,
        /// Deliveries of one event the platform makes before it gives up
        /// (its retry schedule's length plus one).
        pub attempts: u64,
        #[serde(default = "respond")]
        pub respond: u16,
        #[serde(default = "event_id")]
        pub event_id: String,
        #[serde(default = "items")]
        pub items: String,
        #[serde(default = "item_id")]
        pub item_id: String,
        #[serde(default = "next_cursor")]
        pub next_cursor: String,
        #[serde(default = "cursor_param")]
        pub cursor_param: String,
        #[serde(default = "max_pages")]
        pub max_pages: u64,
        #[serde(default = "wait")]
        pub wait: DurationValue,
        #[serde(default = "give_up_within")]
        pub give_up_within: DurationValue,
        #[serde(default = "quiet")]
        pub quiet: DurationValue,
    }
);

family_kinds!(
    /// A `polling.*` check as written.
    PollingSpec {
        "polling.cursor_walk" => CursorWalk(Box<CursorWalkSpec>),
        "polling.reconciles_lost_webhooks" => Reconcile(Box<ReconcileSpec>),
    }
);

const ITEMS: Param = param(
    "items",
    D::Str(d::ITEMS),
    "JSON path of the page's list of items",
);
const ITEM_ID: Param = param(
    "item_id",
    D::Str(d::ITEM_ID),
    "JSON path of an item's id, inside the item",
);
const NEXT_CURSOR: Param = param(
    "next_cursor",
    D::Str(d::NEXT_CURSOR),
    "JSON path of the next page's cursor; null, absent or empty on the last page",
);
const CURSOR_PARAM: Param = param(
    "cursor_param",
    D::Str(d::CURSOR_PARAM),
    "query parameter the cursor is sent in (added to the first page's request)",
);
const MAX_PAGES: Param = param(
    "max_pages",
    D::Int(d::MAX_PAGES),
    "pages one walk may take before it counts as endless (at most 10000)",
);

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the polling family.
pub const KINDS: &[Kind] = &[
    Kind {
        name: "polling.cursor_walk",
        summary: "walk the cursor to its end while items are inserted: no duplicate, no gap among the items that existed at the start, a null cursor on the last page (POLL-001)",
        params: &[
            param("request", D::Required, "the first page"),
            param("insert", D::Required, "a request that adds items to the list"),
            ITEMS,
            ITEM_ID,
            NEXT_CURSOR,
            CURSOR_PARAM,
            MAX_PAGES,
            param(
                "seed",
                D::Int(d::SEED),
                "`insert` sent this many times before the walks, so the list has pages",
            ),
            param(
                "seed_ids",
                D::Str(d::SEED_IDS),
                "JSON path of the ids a seeding answer created (one id or a list); they must be in both walks",
            ),
            param(
                "inserts",
                D::Int(d::INSERTS),
                "`insert` sent after each of the first N pages of the second walk",
            ),
        ],
        properties: &[
            must(
                "terminates",
                "POLL-001 (BOTIX: walk `meta.next_cursor` to an empty cursor)",
                "both walks reach a page whose cursor is null, absent or empty within max_pages, and no cursor comes back",
            ),
            must(
                "no_duplicates",
                "POLL-001 (BOTIX)",
                "no item id is seen twice in one walk; not judged for a walk that did not end",
            ),
            must(
                "no_gaps",
                "POLL-001 (BOTIX)",
                "every item of the first walk and every seeded id is seen by the walk under inserts; not judged when a walk did not end",
            ),
        ],
    },
    Kind {
        name: "polling.reconciles_lost_webhooks",
        summary: "events whose every webhook delivery the sink refused are all retrievable by polling, with the same event id (POLL-002)",
        params: &[
            param(
                "trigger",
                D::Required,
                "requests that subscribe `${var.sink_url}` and make the target emit events",
            ),
            param("poll", D::Required, "the first page of the event list"),
            param(
                "attempts",
                D::Required,
                "deliveries of one event before the platform gives up (its schedule's length + 1)",
            ),
            param(
                "respond",
                D::Int(d::RESPOND as u64),
                "the status tminus answers to every delivery",
            ),
            param(
                "event_id",
                D::Str(d::EVENT_ID),
                "JSON path of the event id in a delivery's body",
            ),
            ITEMS,
            ITEM_ID,
            NEXT_CURSOR,
            CURSOR_PARAM,
            MAX_PAGES,
            param(
                "wait",
                D::Duration(d::WAIT),
                "how long to wait for the first delivery",
            ),
            param(
                "give_up_within",
                D::Duration(d::GIVE_UP_WITHIN),
                "how long every event may take to get its `attempts` deliveries",
            ),
            param(
                "quiet",
                D::Duration(d::QUIET),
                "silence after the last attempt before polling (a further attempt is a finding of its own: the event was not given up)",
            ),
        ],
        properties: &[must(
            "retrievable",
            "POLL-002 (BOTIX: reconciliation over the cursor for the events whose webhook was lost)",
            "every event refused on all `attempts` deliveries is in the polled list under the id its deliveries carried; not exercised when no event was given up",
        )],
    },
];

#[cfg(test)]
mod tests {
    use super::KINDS;
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;

    /// The table's defaults are the planned ones.
    #[test]
    fn table_defaults_are_the_planned_ones() {
        assert_covers(
            KINDS,
            &["polling.cursor_walk", "polling.reconciles_lost_webhooks"],
        );
        let CheckPlan::Polling(p) = plan_check(
            "polling.cursor_walk",
            "    request: { path: /l }\n    insert: { method: POST, path: /i }\n",
        ) else {
            panic!("not a polling plan");
        };
        let crate::families::polling::plan::PollingPlan::CursorWalk(w) = p.as_ref() else {
            panic!("not a walk");
        };
        assert_planned(
            KINDS,
            "polling.cursor_walk",
            &[
                ("items", word(&w.list.items)),
                ("item_id", word(&w.list.item_id)),
                ("next_cursor", word(&w.list.next_cursor)),
                ("cursor_param", word(&w.list.cursor_param)),
                ("max_pages", int(w.list.max_pages)),
                ("seed", int(w.seed)),
                ("seed_ids", word(&w.seed_ids)),
                ("inserts", int(w.inserts)),
            ],
        );
        let CheckPlan::Polling(p) = plan_check(
            "polling.reconciles_lost_webhooks",
            "    trigger: [{ method: POST, path: /t }]\n    poll: { path: /e }\n    attempts: 4\n",
        ) else {
            panic!("not a polling plan");
        };
        let crate::families::polling::plan::PollingPlan::Reconcile(r) = p.as_ref() else {
            panic!("not a reconcile plan");
        };
        assert_planned(
            KINDS,
            "polling.reconciles_lost_webhooks",
            &[
                ("respond", int(r.respond)),
                ("event_id", word(&r.event_id)),
                ("items", word(&r.list.items)),
                ("item_id", word(&r.list.item_id)),
                ("next_cursor", word(&r.list.next_cursor)),
                ("cursor_param", word(&r.list.cursor_param)),
                ("max_pages", int(r.list.max_pages)),
                ("wait", dur(r.wait)),
                ("give_up_within", dur(r.give_up_within)),
                ("quiet", dur(r.quiet)),
            ],
        );
    }
}
