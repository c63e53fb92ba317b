//! The `load:` section of a suite (the T-3 burst rehearsal) as written: the
//! profile (users, hatch rate, hold, ramp-down, stages or iterations), the
//! weighted request mix in the shared request grammar, the side-effect
//! counter for LOAD-005 and the k6-like thresholds. `plan/load.rs` turns it
//! into a `LoadPlan`; nothing here interprets values.
//!
//! (`suite/load.rs` already holds the suite-file loader, hence this name.)

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::scalar::{DurationValue, Scalar, StatusSet};
use crate::spec::kinds::{param, DefaultValue as D, Kind};
use crate::spec::request::{CounterSpec, RequestSpec};

/// Every default of `load:`: the plan applies these, `LOAD` prints them.
pub mod defaults {
    use std::time::Duration;

    use crate::model::scalar::StatusPattern::{self, Class};

    pub const ID: &str = "load";
    pub const RAMP: Duration = Duration::ZERO;
    pub const RAMP_DOWN: Duration = Duration::ZERO;
    /// Hard cap on any burst unless the suite sets `max_duration`.
    pub const MAX_DURATION: Duration = Duration::from_secs(600);
    pub const ALLOW_REMOTE: bool = false;
    pub const WEIGHT: u32 = 1;
    pub const SUCCESS: &[StatusPattern] = &[Class(2)];
    pub const DUPLICATE_SHARE: f64 = 0.0;
    pub const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";
    /// Share of the scheduled requests that must be sent for the load to count as delivered.
    pub const MIN_DELIVERED: f64 = 0.9;
    /// `max_users` when the suite gives none: this many times the profile's users...
    pub const POOL_FACTOR: usize = 10;
    /// ...and never more than this (also the most a suite may ask for): each
    /// user is a goose user with its own connection, started idle up front.
    pub const MAX_POOL: usize = 1000;
    /// Rate stages without `users`: the pool starts with one user per this
    /// many slots a second of the peak rate (the shipped burst's 4 users
    /// for 120/s), and may grow `POOL_FACTOR` times.
    pub const RATE_PER_USER: f64 = 30.0;
}

use super::observe::defaults as od;
use defaults as d;

/// The documentation of `load:` (title, intro, details).
pub const DOC: &str = include_str!("README.md");

/// What `tminus checks` and `docs/checks.md` print for a suite's `load:`
/// section (not a check kind: one per suite, run after the checks).
pub const LOAD: Kind = Kind {
    properties: &[],
    name: "load",
    summary: "the T-3 burst rehearsal: a paced, weighted request mix driven by goose, judged by thresholds (LOAD-*)",
    params: &[
        param(
            "id",
            D::Str(d::ID),
            "prefix of every result id (`burst.p95`, `burst.create.p95`, `burst.delivered`)",
        ),
        param("description", D::Absent, "one line for the report"),
        param("tags", D::List(&[]), "labels for --tag (`--only` matches `id`)"),
        param(
            "users",
            D::Text("required (or `stages`)"),
            "users tminus starts with (the pool; more are opened when the rate needs them, up to `max_users`)",
        ),
        param(
            "max_users",
            D::Text("10 × users, at most 1000"),
            "the most users the pool opens to hold `max_rate` (not with `iterations`); a slot that waits once all are busy is charged to the target",
        ),
        param(
            "hatch_rate",
            D::Text("all at once"),
            "the rate ramps up as users started this many a second would (or give `ramp`)",
        ),
        param("ramp", D::Duration(d::RAMP), "time for the rate to ramp up to `max_rate` (whole seconds)"),
        param(
            "hold",
            D::Text("required (or `iterations`)"),
            "time at full load (whole seconds)",
        ),
        param(
            "ramp_down",
            D::Duration(d::RAMP_DOWN),
            "time for the rate to ramp down to 0 at the end (whole seconds)",
        ),
        param(
            "stages",
            D::Absent,
            "instead of ramp/hold: the arrival rate itself, `[{rate: 60/s, over: 10s}, ...]` (linear within a stage from the previous rate, 0 at the start, like k6's ramping-arrival-rate; `max_rate` is their peak, `users` the pool to start, default one per 30/s of the peak), or `[{users, over}, ...]` (the rate follows users / their peak, the pool starts with the peak)",
        ),
        param(
            "iterations",
            D::Absent,
            "each user sends this many requests, then stops (instead of `hold`)",
        ),
        param(
            "max_rate",
            D::Text("required (or rate stages)"),
            "the arrival rate at full load (`120/s`): the schedule of slots, whatever the users; user stages scale it by their users",
        ),
        param(
            "max_duration",
            D::Duration(d::MAX_DURATION),
            "hard bound on the whole burst (the killswitch fires)",
        ),
        param(
            "allow_remote",
            D::Bool(d::ALLOW_REMOTE),
            "needed (or `--allow-remote-load`) before load goes to a non-loopback host",
        ),
        param(
            "requests",
            D::Required,
            "the weighted mix: `[{name, weight, idempotency_key, request, success}]`",
        ),
        param("requests[].weight", D::Int(d::WEIGHT as u64), "relative share of the mix"),
        param(
            "requests[].idempotency_key",
            D::Absent,
            "`auto`: a fresh key per logical request",
        ),
        param(
            "requests[].success",
            D::Statuses(d::SUCCESS),
            "statuses that count as success",
        ),
        param(
            "duplicate_share",
            D::Share(d::DUPLICATE_SHARE),
            "share of requests that retry the previous key (client retries; LOAD-005)",
        ),
        param(
            "idempotency_header",
            D::Str(d::IDEMPOTENCY_HEADER),
            "header carrying the key of `idempotency_key: auto`",
        ),
        param(
            "effects",
            D::Absent,
            "`{request, value}`: counter whose delta must equal the distinct keys that succeeded (LOAD-005)",
        ),
        param(
            "thresholds",
            D::List(&[]),
            "`[KIND:] METRIC OP VALUE`, e.g. `p95 < 400ms`, `create: p99 < 1s`, `error_rate < 1%`, `dropped < 1%`",
        ),
        param(
            "min_delivered",
            D::Share(d::MIN_DELIVERED),
            "share of the scheduled requests that must really be sent",
        ),
    param(
        "observe",
        D::Absent,
        "the target's own signals around the burst: `{prometheus | metrics, series, thresholds}` (below); pools and queues in the green, LOAD-003",
    ),
    param(
        "observe.prometheus",
        D::Text("this or `observe.metrics`"),
        "a Prometheus HTTP API's base URL (`http://127.0.0.1:9090`): series are PromQL, read back with range queries after the burst",
    ),
    param(
        "observe.metrics",
        D::Text("this or `observe.prometheus`"),
        "or a `/metrics` page (a target path or a URL), read every `interval`: series are selectors, `name{label=\"v\"}`, summed",
    ),
    param(
        "observe.series",
        D::Required,
        "`{NAME: QUERY}`: what each threshold's series reads",
    ),
    param(
        "observe.thresholds",
        D::List(&[]),
        "`AGG(NAME) OP NUMBER`: AGG is max, min, avg, last (during the burst), before, after, increase",
    ),
    param(
        "observe.interval",
        D::Duration(od::INTERVAL),
        "how often `/metrics` is read, the range queries' step; give Prometheus' scrape interval",
    ),
    param(
        "observe.before",
        D::Duration(od::BEFORE),
        "the window read before the burst (with `metrics:`, the burst waits for it)",
    ),
    param(
        "observe.after",
        D::Duration(od::AFTER),
        "the window read after the burst (a queue should drain)",
    ),
    param("observe.timeout", D::Duration(od::TIMEOUT), "time limit of one read"),
    param(
        "observe.job",
        D::Absent,
        "Prometheus: the scrape job whose `up` shows when an aggregated query's target was scraped",
    ),
    param(
        "observe.headers",
        D::Absent,
        "sent with every read, to that host only (a managed Prometheus' `Authorization`)",
    ),
    param(
        "webhooks",
        D::Absent,
        "LOAD-006, the burst's own events at tminus's sink: `{subscribe, request, id, event_id, wait, thresholds, max_lost}` (below)",
    ),
    param(
        "webhooks.subscribe",
        D::Required,
        "requests sent before the burst that subscribe `${var.sink_url}` to the events",
    ),
    param(
        "webhooks.request",
        D::Required,
        "the mix entry whose successes each cause one event",
    ),
    param(
        "webhooks.id",
        D::Required,
        "JSON path of the object's id in that request's response (`$.id`)",
    ),
    param(
        "webhooks.event_id",
        D::Required,
        "JSON path of the same id in a delivery's body (`$.data.id`)",
    ),
    param(
        "webhooks.wait",
        D::Duration(super::webhooks::DEFAULT_WAIT),
        "time after the burst for deliveries still on their way; later ones are lost",
    ),
    param(
        "webhooks.thresholds",
        D::List(&[]),
        "`pQ < DURATION` on event-to-sink latency (`p95 < 2s`): passes on the latency counted from the send, fails on the one counted from the answer",
    ),
    param(
        "webhooks.max_lost",
        D::Int(0),
        "events that may go undelivered within `wait`",
    ),
    ],
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// Prefix of every result id (`burst.p95`); default `load`.
    #[serde(default)]
    pub id: Option<Spanned<String>>,
    #[serde(default)]
    pub description: Option<String>,
    /// Users the pool starts with at full load; the rate's slots are shared
    /// among them and more are opened, up to `max_users`, when all are busy.
    #[serde(default)]
    pub users: Option<Spanned<u64>>,
    /// The most users the pool may open; default 10 × users (at most 1000).
    #[serde(default)]
    pub max_users: Option<Spanned<u64>>,
    /// Users started per second; or give `ramp` (time to start all users).
    #[serde(default)]
    pub hatch_rate: Option<Spanned<f64>>,
    #[serde(default)]
    pub ramp: Option<Spanned<DurationValue>>,
    /// Time at full load.
    #[serde(default)]
    pub hold: Option<Spanned<DurationValue>>,
    /// Time to stop all users at the end (0: all at once).
    #[serde(default)]
    pub ramp_down: Option<Spanned<DurationValue>>,
    /// A goose test plan instead of users/ramp/hold/ramp_down.
    #[serde(default)]
    pub stages: Vec<StageSpec>,
    /// Each user sends this many requests, then stops (instead of `hold`).
    #[serde(default)]
    pub iterations: Option<Spanned<u64>>,
    /// Requests per second all users together may send (`400/s` or `400`);
    /// also the pace the coordinated-omission correction measures against.
    #[serde(default)]
    pub max_rate: Option<Spanned<Scalar>>,
    /// Hard bound on the whole burst; default 10m.
    #[serde(default)]
    pub max_duration: Option<Spanned<DurationValue>>,
    /// Needed before load goes to a non-loopback host.
    #[serde(default = "allow_remote")]
    pub allow_remote: bool,
    /// The weighted request mix.
    pub requests: Vec<MixSpec>,
    /// Share of requests that retry the previous idempotency key (`5%` or 0.05).
    #[serde(default)]
    pub duplicate_share: Option<Spanned<Scalar>>,
    /// Header carrying the key for `idempotency_key: auto`.
    #[serde(default)]
    pub idempotency_header: Option<String>,
    /// Side-effect counter read before and after the burst (LOAD-005).
    #[serde(default)]
    pub effects: Option<CounterSpec>,
    /// `p95 < 400ms`, `create: p99 < 1s`, `error_rate < 1%`, `rate_429 < 5%`,
    /// `throughput > 100/s`.
    #[serde(default)]
    pub thresholds: Vec<Spanned<String>>,
    /// Share of the scheduled requests that must really be sent; default 90%.
    #[serde(default)]
    pub min_delivered: Option<Spanned<Scalar>>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// The target's own signals around the burst (`observe/`).
    #[serde(default)]
    pub observe: Option<Spanned<super::observe::spec::ObserveSpec>>,
    /// The burst's own events at a sink: latency and losses (LOAD-006).
    #[serde(default)]
    pub webhooks: Option<Spanned<super::webhooks::WebhooksSpec>>,
}

fn allow_remote() -> bool {
    d::ALLOW_REMOTE
}

/// One step of the profile: reach `users` (the rate follows users / their
/// peak) or the arrival `rate` itself (`60/s`, `0/s`) over `over`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    #[serde(default)]
    pub users: Option<Spanned<u64>>,
    #[serde(default)]
    pub rate: Option<Spanned<Scalar>>,
    pub over: Spanned<DurationValue>,
}

/// One request kind of the mix.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixSpec {
    /// The kind's name in figures and thresholds (`create: p95 < 400ms`).
    pub name: Spanned<String>,
    #[serde(default)]
    pub weight: Option<Spanned<u32>>,
    /// `auto`: a fresh key per logical request.
    #[serde(default)]
    pub idempotency_key: Option<Spanned<String>>,
    pub request: RequestSpec,
    /// Statuses that count as success; default 2xx.
    #[serde(default)]
    pub success: Option<Spanned<StatusSet>>,
}

#[cfg(test)]
mod tests {
    use super::LOAD;
    use crate::families::load::plan::Profile;
    use crate::spec::kinds::testing::*;
    use crate::spec::kinds::Kind;

    fn plan_errors(src: &str) -> String {
        let path = std::path::Path::new("rates.yaml");
        let file = crate::suite::read::parse_str(path, src).unwrap_or_else(|d| panic!("{d}"));
        let loaded = vec![crate::suite::SuiteSource {
            path: path.into(),
            source: src.to_owned(),
            file,
        }];
        match crate::plan::build_with_env(&loaded, &Default::default(), &|_| None) {
            Ok(_) => panic!("planned without an error:\n{src}"),
            Err(d) => d.to_string(),
        }
    }

    const HEAD: &str = "suite: s\ntarget: { base_url: \"http://127.0.0.1:1\" }\nload:\n";
    const MIX: &str = "  requests:\n    - { name: a, request: { path: /a } }\n";

    /// Rate stages are the arrival schedule itself (issue 23): `max_rate` is
    /// their peak, the pool starts with one user per 30/s of it, and the
    /// count scheduled is the area under the rate.
    #[test]
    fn rate_stages_are_the_schedule() {
        let mut plan = plan_suite(&format!(
            "{HEAD}  stages:\n    - {{ rate: 60/s, over: 2s }}\n    - {{ rate: 90/s, over: 4s }}\n    - {{ rate: 0/s, over: 2s }}\n{MIX}"
        ));
        let l = plan.suites.remove(0).load.expect("a load plan");
        assert_eq!(
            l.profile,
            Profile::Rates(vec![(60.0, 2), (90.0, 4), (0.0, 2)])
        );
        assert_eq!(l.max_rate, 90.0);
        assert_eq!((l.peak_users, l.max_users), (3, 30));
        // 60 + 300 + 90 slots.
        assert_eq!(l.scheduled_requests(), 450.0);
        // A last stage above 0 ends at once; `users` sets the pool.
        let mut plan = plan_suite(&format!(
            "{HEAD}  users: 8\n  stages: [{{ rate: 50/s, over: 3s }}]\n{MIX}"
        ));
        let l = plan.suites.remove(0).load.unwrap();
        assert_eq!(l.profile, Profile::Rates(vec![(50.0, 3), (0.0, 0)]));
        assert_eq!((l.peak_users, l.max_users), (8, 80));
        assert_eq!(l.scheduled_requests(), 75.0);
    }

    #[test]
    fn rate_stages_refuse_what_does_not_go_with_them() {
        let both = plan_errors(&format!(
            "{HEAD}  max_rate: 10/s\n  stages: [{{ rate: 50/s, over: 3s }}]\n{MIX}"
        ));
        assert!(both.contains("rates.yaml:4:"), "{both}");
        assert!(both.contains("not both"), "{both}");
        let mixed = plan_errors(&format!(
            "{HEAD}  stages: [{{ rate: 50/s, over: 3s }}, {{ users: 2, over: 1s }}]\n{MIX}"
        ));
        assert!(mixed.contains("every stage the same one"), "{mixed}");
        let hold = plan_errors(&format!(
            "{HEAD}  hold: 3s\n  stages: [{{ rate: 50/s, over: 3s }}]\n{MIX}"
        ));
        assert!(
            hold.contains("`hold` does not go with rate stages"),
            "{hold}"
        );
        let bad = plan_errors(&format!(
            "{HEAD}  stages: [{{ rate: fast, over: 3s }}]\n{MIX}"
        ));
        assert!(bad.contains("`fast` is not a rate"), "{bad}");
        let none = plan_errors(&format!("{HEAD}  users: 2\n  hold: 1s\n{MIX}"));
        assert!(none.contains("needs `max_rate`"), "{none}");
    }

    #[test]
    fn table_defaults_are_the_planned_ones() {
        let mut plan = plan_suite(
            "suite: s\ntarget: { base_url: \"http://127.0.0.1:1\" }\nload:\n  users: 2\n  hold: 1s\n  max_rate: 10/s\n  requests:\n    - { name: a, request: { path: /a } }\n  observe: { metrics: /metrics, series: { q: q } }\n  webhooks: { subscribe: [{ method: POST, path: /w, json: { url: \"${var.sink_url}\" } }], request: a, id: $.id, event_id: $.data.id }\n",
        );
        let l = plan.suites.remove(0).load.expect("a load plan");
        let o = l.observe.as_ref().expect("an observe plan");
        let w = l.webhooks.as_ref().expect("a webhooks plan");
        let unobserved = plan_suite(
            "suite: s\ntarget: { base_url: \"http://127.0.0.1:1\" }\nload:\n  users: 2\n  hold: 1s\n  max_rate: 10/s\n  requests:\n    - { name: a, request: { path: /a } }\n",
        )
        .suites
        .remove(0)
        .load
        .expect("a load plan");
        let Profile::Stages(stages) = &l.profile else {
            panic!("{:?}", l.profile)
        };
        let [(2, ramp), (2, 1), (0, down)] = stages[..] else {
            panic!("{stages:?}")
        };
        let secs = |s: u64| dur(std::time::Duration::from_secs(s));
        let planned = [
            ("id", word(&l.id)),
            ("description", opt(&l.description)),
            ("tags", list(&l.tags)),
            ("ramp", secs(ramp)),
            ("ramp_down", secs(down)),
            ("stages", None),
            ("iterations", None),
            ("max_duration", dur(l.max_duration)),
            ("allow_remote", word(l.allow_remote)),
            ("requests[].weight", int(l.mix[0].weight)),
            (
                "requests[].idempotency_key",
                l.mix[0].idempotency.then(|| "auto".into()),
            ),
            ("requests[].success", statuses(&l.mix[0].success)),
            ("duplicate_share", share(l.duplicate_share)),
            ("idempotency_header", word(&l.idempotency_header)),
            ("effects", l.effects.as_ref().map(|_| "set".into())),
            ("thresholds", list(l.thresholds.iter().map(|t| &t.text))),
            ("min_delivered", share(l.min_delivered)),
            ("observe.interval", dur(o.interval)),
            ("observe.before", dur(o.before)),
            ("observe.after", dur(o.after)),
            ("observe.timeout", dur(o.timeout)),
            (
                "observe.thresholds",
                list(o.thresholds.iter().map(|t| &t.text)),
            ),
            ("observe.job", o.job.clone()),
            (
                "observe.headers",
                (!o.headers.is_empty()).then(|| "set".into()),
            ),
            ("observe", unobserved.observe.as_ref().map(|_| "set".into())),
            (
                "webhooks",
                unobserved.webhooks.as_ref().map(|_| "set".into()),
            ),
            ("webhooks.wait", dur(w.wait)),
            (
                "webhooks.thresholds",
                list(w.thresholds.iter().map(|t| &t.text)),
            ),
            ("webhooks.max_lost", int(w.max_lost)),
        ];
        let table: &[Kind] = std::slice::from_ref(&LOAD);
        assert_planned(table, "load", &planned);
    }
}
