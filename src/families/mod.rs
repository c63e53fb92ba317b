//! The check families and their registry: the one place the parser, the
//! planner and the runner learn which families exist.
//!
//! Each family is a folder (`spec.rs`: what a suite may write, its `KINDS`
//! table; `plan.rs`: validation and defaults; `exec.rs` and friends: sending
//! and judging). Here a check is a nested enum, family then kind, so every
//! dispatch is an exhaustive `match` the compiler checks. A family reads its
//! plan and a `CheckContext` and returns an `Outcome`; it never prints and
//! never knows about reporters.

pub mod common;

pub mod auth;
pub mod client;
pub mod contract;
pub mod dependency;
pub mod idempotency;
pub mod load;
pub mod observability;
pub mod polling;
pub mod rate_limit;
pub mod steps;
pub mod trace;
pub mod transport;
pub mod webhook;

pub use crate::outcome::{Evidence, Outcome, Verdict};

use crate::context::budget::Requests;
use crate::context::{remote_because, CheckContext, PlanCtx, Volume};
use crate::spec::kinds::{Common, KindDoc, KindTable};

/// A family as `tminus checks` and the parser see it.
pub struct Family {
    /// The prefix of its kinds (`idempotency` in `idempotency.replay`).
    pub name: &'static str,
    /// Its documentation, a markdown fragment (`<f>/README.md`): title and
    /// intro, `<!-- kind: NAME -->` sections, `<!-- end of kinds -->` and what
    /// follows (see `spec::kinds::FamilyDoc`). `docs/checks.md` is made of it.
    pub doc: &'static str,
    /// Its kinds, with parameters and defaults.
    pub kinds: &'static [KindTable],
}

/// Every family, in the order the check reference lists them.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "steps",
        doc: steps::spec::DOC,
        kinds: &[KindTable::Typed(steps::spec::KINDS)],
    },
    Family {
        name: "idempotency",
        doc: idempotency::spec::DOC,
        kinds: &[KindTable::Typed(idempotency::spec::KINDS)],
    },
    Family {
        name: "rate_limit",
        doc: rate_limit::spec::DOC,
        kinds: &[KindTable::Typed(rate_limit::spec::KINDS)],
    },
    Family {
        name: "trace",
        doc: trace::spec::DOC,
        kinds: &[KindTable::Typed(trace::spec::KINDS)],
    },
    Family {
        name: "webhook",
        doc: webhook::spec::DOC,
        kinds: &[KindTable::Typed(webhook::spec::KINDS)],
    },
    Family {
        name: "client",
        doc: client::spec::DOC,
        kinds: &[KindTable::Typed(client::spec::KINDS)],
    },
    Family {
        name: "transport",
        doc: transport::spec::DOC,
        kinds: &[KindTable::Typed(transport::spec::KINDS)],
    },
    Family {
        name: "polling",
        doc: polling::spec::DOC,
        kinds: &[KindTable::Typed(polling::spec::KINDS)],
    },
    Family {
        name: "dependency",
        doc: dependency::spec::DOC,
        kinds: &[KindTable::Typed(dependency::spec::KINDS)],
    },
    Family {
        name: "auth",
        doc: auth::spec::DOC,
        kinds: &[KindTable::Typed(auth::spec::KINDS)],
    },
    Family {
        name: "contract",
        doc: contract::spec::DOC,
        kinds: &[KindTable::Typed(contract::spec::KINDS)],
    },
    Family {
        name: "observability",
        doc: observability::spec::DOC,
        kinds: &[KindTable::Typed(observability::spec::KINDS)],
    },
    // The load family's checks (`load.capacity`); its doc is the burst's
    // (`load:` is documented there too, see `app::checks_markdown`).
    Family {
        name: "load",
        doc: load::spec::DOC,
        kinds: &[KindTable::Typed(load::capacity::spec::KINDS)],
    },
];

/// Every kind of every family.
pub fn all_kinds() -> impl Iterator<Item = KindDoc> {
    FAMILIES
        .iter()
        .flat_map(|f| f.kinds.iter().flat_map(|t| t.docs()))
}

/// The table row of kind `name` (without building every kind's doc).
pub fn kind(name: &str) -> Option<&'static crate::spec::kinds::Kind> {
    FAMILIES
        .iter()
        .flat_map(|f| f.kinds.iter())
        .find_map(|KindTable::Typed(t)| t.iter().find(|k| k.name == name))
}

/// The family of a kind: the prefix before the dot (`steps` has none).
pub fn family_of(kind: &str) -> &str {
    kind.split_once('.').map_or(kind, |(f, _)| f)
}

/// The names of the top-level parameters a family's kinds take (what its
/// `defaults:` entry may set), in table order without repeats.
pub fn family_params(family: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for k in all_kinds().filter(|k| family_of(k.name) == family) {
        for p in k.params {
            let top = p.name.split('.').next().unwrap_or(p.name);
            if !out.contains(&top) {
                out.push(top);
            }
        }
    }
    out
}

/// Every kind name, for "did you mean".
pub fn kind_names() -> impl Iterator<Item = &'static str> {
    FAMILIES
        .iter()
        .flat_map(|f| f.kinds.iter().flat_map(|t| t.names()))
}

/// Every kind's JSON Schema, derived from its spec struct, in the order of
/// [`kind_names`] (the suite schema, `suite::schema`).
pub fn kind_schemas(g: &mut schemars::SchemaGenerator) -> Vec<(&'static str, schemars::Schema)> {
    let mut out = steps::spec::StepsSpec::kind_schemas(g);
    out.extend(idempotency::spec::IdempotencySpec::kind_schemas(g));
    out.extend(rate_limit::spec::RateLimitSpec::kind_schemas(g));
    out.extend(trace::spec::TraceSpec::kind_schemas(g));
    out.extend(webhook::spec::WebhookSpec::kind_schemas(g));
    out.extend(client::spec::ClientSpec::kind_schemas(g));
    out.extend(transport::spec::TransportSpec::kind_schemas(g));
    out.extend(polling::spec::PollingSpec::kind_schemas(g));
    out.extend(dependency::spec::DependencySpec::kind_schemas(g));
    out.extend(auth::spec::AuthSpec::kind_schemas(g));
    out.extend(contract::spec::ContractSpec::kind_schemas(g));
    out.extend(observability::spec::ObservabilitySpec::kind_schemas(g));
    out.extend(load::capacity::spec::LoadCheckSpec::kind_schemas(g));
    out
}

/// One entry of `checks:`, typed by family, then by kind.
#[derive(Debug, Clone)]
pub enum CheckSpec {
    Steps(Box<steps::spec::StepsSpec>),
    Idempotency(Box<idempotency::spec::IdempotencySpec>),
    RateLimit(Box<rate_limit::spec::RateLimitSpec>),
    Trace(Box<trace::spec::TraceSpec>),
    Webhook(Box<webhook::spec::WebhookSpec>),
    Client(Box<client::spec::ClientSpec>),
    Transport(Box<transport::spec::TransportSpec>),
    Polling(Box<polling::spec::PollingSpec>),
    Dependency(Box<dependency::spec::DependencySpec>),
    Auth(Box<auth::spec::AuthSpec>),
    Contract(Box<contract::spec::ContractSpec>),
    Observability(Box<observability::spec::ObservabilitySpec>),
    Load(Box<load::capacity::spec::LoadCheckSpec>),
}

impl CheckSpec {
    /// Deserializes an entry of kind `kind` (already checked against
    /// [`kind_names`] with its position by the parser).
    pub fn deserialize_kind<'de, D: serde::Deserializer<'de>>(
        kind: &str,
        d: D,
    ) -> Result<Self, D::Error> {
        let family = kind.split_once('.').map_or(kind, |(f, _)| f);
        match family {
            "steps" => {
                steps::spec::StepsSpec::deserialize_kind(kind, d).map(|s| Self::Steps(Box::new(s)))
            }
            "idempotency" => idempotency::spec::IdempotencySpec::deserialize_kind(kind, d)
                .map(|s| Self::Idempotency(Box::new(s))),
            "rate_limit" => rate_limit::spec::RateLimitSpec::deserialize_kind(kind, d)
                .map(|s| Self::RateLimit(Box::new(s))),
            "trace" => {
                trace::spec::TraceSpec::deserialize_kind(kind, d).map(|s| Self::Trace(Box::new(s)))
            }
            "webhook" => webhook::spec::WebhookSpec::deserialize_kind(kind, d)
                .map(|s| Self::Webhook(Box::new(s))),
            "client" => client::spec::ClientSpec::deserialize_kind(kind, d)
                .map(|s| Self::Client(Box::new(s))),
            "transport" => transport::spec::TransportSpec::deserialize_kind(kind, d)
                .map(|s| Self::Transport(Box::new(s))),
            "polling" => polling::spec::PollingSpec::deserialize_kind(kind, d)
                .map(|s| Self::Polling(Box::new(s))),
            "dependency" => dependency::spec::DependencySpec::deserialize_kind(kind, d)
                .map(|s| Self::Dependency(Box::new(s))),
            "auth" => {
                auth::spec::AuthSpec::deserialize_kind(kind, d).map(|s| Self::Auth(Box::new(s)))
            }
            "contract" => contract::spec::ContractSpec::deserialize_kind(kind, d)
                .map(|s| Self::Contract(Box::new(s))),
            "observability" => observability::spec::ObservabilitySpec::deserialize_kind(kind, d)
                .map(|s| Self::Observability(Box::new(s))),
            "load" => load::capacity::spec::LoadCheckSpec::deserialize_kind(kind, d)
                .map(|s| Self::Load(Box::new(s))),
            other => Err(<D::Error as serde::de::Error>::custom(format!(
                "unknown check family `{other}`"
            ))),
        }
    }

    /// The kind's name as written in suites (`steps`, `idempotency.replay`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::Steps(s) => s.kind_name(),
            Self::Idempotency(s) => s.kind_name(),
            Self::RateLimit(s) => s.kind_name(),
            Self::Trace(s) => s.kind_name(),
            Self::Webhook(s) => s.kind_name(),
            Self::Client(s) => s.kind_name(),
            Self::Transport(s) => s.kind_name(),
            Self::Polling(s) => s.kind_name(),
            Self::Dependency(s) => s.kind_name(),
            Self::Auth(s) => s.kind_name(),
            Self::Contract(s) => s.kind_name(),
            Self::Observability(s) => s.kind_name(),
            Self::Load(s) => s.kind_name(),
        }
    }

    pub fn common(&self) -> &dyn Common {
        match self {
            Self::Steps(s) => s.common(),
            Self::Idempotency(s) => s.common(),
            Self::RateLimit(s) => s.common(),
            Self::Trace(s) => s.common(),
            Self::Webhook(s) => s.common(),
            Self::Client(s) => s.common(),
            Self::Transport(s) => s.common(),
            Self::Polling(s) => s.common(),
            Self::Dependency(s) => s.common(),
            Self::Auth(s) => s.common(),
            Self::Contract(s) => s.common(),
            Self::Observability(s) => s.common(),
            Self::Load(s) => s.common(),
        }
    }
    pub fn id(&self) -> &serde_saphyr::Spanned<String> {
        self.common().id()
    }
    pub fn tags(&self) -> &[String] {
        self.common().tags()
    }
    pub fn description(&self) -> Option<&str> {
        self.common().description()
    }
    pub fn severity(&self) -> Option<&crate::spec::kinds::SeverityOverrides> {
        self.common().severity()
    }
    pub fn after(&self) -> Option<&serde_saphyr::Spanned<crate::model::scalar::DurationValue>> {
        self.common().after()
    }
    pub fn waive(&self) -> Option<&serde_saphyr::Spanned<crate::waiver::Waivers>> {
        self.common().waive()
    }
}

/// The executable form of a check, typed by family.
#[derive(Debug)]
pub enum CheckPlan {
    Steps(Box<steps::plan::StepsPlan>),
    Idempotency(Box<idempotency::plan::IdemPlan>),
    RateLimit(Box<rate_limit::plan::RateLimitPlan>),
    Trace(Box<trace::plan::TracePlan>),
    Webhook(Box<webhook::plan::WebhookPlan>),
    Client(Box<client::plan::ClientPlan>),
    Transport(Box<transport::plan::TransportPlan>),
    Polling(Box<polling::plan::PollingPlan>),
    Dependency(Box<dependency::plan::DependencyPlan>),
    Auth(Box<auth::plan::AuthPlan>),
    Contract(Box<contract::plan::ContractPlan>),
    Observability(Box<observability::plan::ObservabilityPlan>),
    Load(Box<load::capacity::plan::LoadCheckPlan>),
}

/// Plans one check; problems go to `ctx`'s diagnostics.
pub fn plan_check(ctx: &mut PlanCtx<'_>, spec: &CheckSpec) -> CheckPlan {
    match spec {
        CheckSpec::Steps(s) => CheckPlan::Steps(Box::new(steps::plan::plan(ctx, s))),
        CheckSpec::Idempotency(s) => {
            CheckPlan::Idempotency(Box::new(idempotency::plan::plan(ctx, s)))
        }
        CheckSpec::RateLimit(s) => CheckPlan::RateLimit(Box::new(rate_limit::plan::plan(ctx, s))),
        CheckSpec::Trace(s) => CheckPlan::Trace(Box::new(trace::plan::plan(ctx, s))),
        CheckSpec::Webhook(s) => CheckPlan::Webhook(Box::new(webhook::plan::plan(ctx, s))),
        CheckSpec::Client(s) => CheckPlan::Client(Box::new(client::plan::plan(ctx, s))),
        CheckSpec::Transport(s) => CheckPlan::Transport(Box::new(transport::plan::plan(ctx, s))),
        CheckSpec::Polling(s) => CheckPlan::Polling(Box::new(polling::plan::plan(ctx, s))),
        CheckSpec::Dependency(s) => CheckPlan::Dependency(Box::new(dependency::plan::plan(ctx, s))),
        CheckSpec::Auth(s) => CheckPlan::Auth(Box::new(auth::plan::plan(ctx, s))),
        CheckSpec::Contract(s) => CheckPlan::Contract(Box::new(contract::plan::plan(ctx, s))),
        CheckSpec::Observability(s) => {
            CheckPlan::Observability(Box::new(observability::plan::plan(ctx, s)))
        }
        CheckSpec::Load(s) => CheckPlan::Load(Box::new(load::capacity::plan::plan(ctx, s))),
    }
}

impl CheckPlan {
    /// The request budget of the kinds that can send many requests.
    pub fn volume(&self) -> Option<Volume> {
        use rate_limit::plan::RateLimitPlan as R;
        let exhaust = |e: &rate_limit::plan::Exhaust| Volume {
            requests: u64::from(e.max_requests),
            concurrency: u64::from(e.concurrency),
        };
        match self {
            CheckPlan::RateLimit(p) => match p.as_ref() {
                R::Storm(s) => Some(exhaust(&s.exhaust)),
                R::Recovery(s) => Some(exhaust(&s.exhaust)),
                R::Partition(s) => Some(exhaust(&s.exhaust)),
                R::Headers(_) => None,
            },
            CheckPlan::Trace(p) => match p.as_ref() {
                trace::plan::TracePlan::Unique(u) => Some(Volume {
                    requests: u.count,
                    concurrency: u.concurrency,
                }),
                _ => None,
            },
            CheckPlan::Webhook(p) => match p.as_ref() {
                webhook::plan::WebhookPlan::Sender(s)
                    if s.case == webhook::plan::SenderCase::Burst =>
                {
                    // Paced: spread evenly over `over`, not sent at once.
                    Some(Volume {
                        requests: u64::from(s.count),
                        concurrency: 1,
                    })
                }
                webhook::plan::WebhookPlan::Sender(s)
                    if s.case == webhook::plan::SenderCase::ConstantTimeCompare =>
                {
                    // One at a time, so queueing never mixes the groups.
                    Some(Volume {
                        requests: u64::from(s.samples),
                        concurrency: 1,
                    })
                }
                _ => None,
            },
            CheckPlan::Dependency(p) => {
                let d = p.drive();
                Some(Volume {
                    requests: d.setup.len() as u64 + d.count(),
                    // Open arrival: as many in flight as answers are slow.
                    concurrency: d
                        .phases
                        .iter()
                        .map(|s| (s.rate * d.answer_cap.as_secs_f64()).ceil() as u64)
                        .max()
                        .unwrap_or(1),
                })
            }
            CheckPlan::Load(p) => Some(p.volume()),
            CheckPlan::Steps(_)
            | CheckPlan::Idempotency(_)
            | CheckPlan::Client(_)
            | CheckPlan::Transport(_)
            | CheckPlan::Polling(_)
            | CheckPlan::Auth(_) => None,
            CheckPlan::Contract(_) => None,
            CheckPlan::Observability(_) => None,
        }
    }
}

impl CheckPlan {
    /// Every literal path a check sends to, for the kinds whose requests
    /// all go to paths the plan knows (`trace.unique`'s request, a webhook
    /// sender's receiver and its counter): `cost::inherent` leaves out a
    /// check whose paths are all outside the limiter.
    pub fn paths(&self) -> Option<Vec<String>> {
        match self {
            CheckPlan::Trace(p) => match p.as_ref() {
                trace::plan::TracePlan::Unique(u) => Some(vec![literal_path(&u.request)?]),
                _ => None,
            },
            CheckPlan::Webhook(p) => match p.as_ref() {
                webhook::plan::WebhookPlan::Sender(s) => {
                    let mut paths = vec![url_path(&s.url)?];
                    if let Some(c) = &s.effects {
                        paths.push(literal_path(&c.request)?);
                    }
                    Some(paths)
                }
                webhook::plan::WebhookPlan::Sink(_) => None,
            },
            _ => None,
        }
    }

    /// The response header whose ids this check judges unique across the
    /// run (`trace.unique`'s `trace_header`): the runner keeps every fresh
    /// answer's value of it (`context::seen`) for the check to count.
    pub fn pooled_id_header(&self) -> Option<String> {
        match self {
            CheckPlan::Trace(p) => match p.as_ref() {
                trace::plan::TracePlan::Unique(u) => Some(u.trace_header.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// The literal path a check drives to the limit (`rate_limit.storm`,
    /// `recovery`, `partition`): where the suite says its limiter is.
    pub fn limit_path(&self) -> Option<String> {
        use rate_limit::plan::RateLimitPlan as R;
        match self {
            CheckPlan::RateLimit(p) => match p.as_ref() {
                R::Storm(s) => literal_path(&s.exhaust.request),
                R::Recovery(s) => literal_path(&s.exhaust.request),
                R::Partition(s) => literal_path(&s.exhaust.request),
                R::Headers(_) => None,
            },
            _ => None,
        }
    }
}

impl CheckPlan {
    /// True when the check goes to the embedded reference's production twin
    /// (`auth.sandbox_isolated` without `production.base_url`): a run
    /// against the embedded reference starts one.
    pub fn needs_production_twin(&self) -> bool {
        match self {
            CheckPlan::Auth(p) => p.needs_production_twin(),
            _ => false,
        }
    }
}

fn literal_path(r: &crate::context::RequestPlan) -> Option<String> {
    url_path(&r.url)
}

fn url_path(u: &crate::context::UrlPlan) -> Option<String> {
    match u {
        crate::context::UrlPlan::Path(t) => t.as_literal(),
        crate::context::UrlPlan::Absolute(_) => None,
    }
}

impl CheckPlan {
    /// The most requests this check sends per credential.
    pub fn requests(&self) -> Requests {
        match self {
            CheckPlan::Steps(p) => p.requests(),
            CheckPlan::Idempotency(p) => p.requests(),
            CheckPlan::RateLimit(p) => p.requests(),
            CheckPlan::Trace(p) => p.requests(),
            CheckPlan::Webhook(p) => p.requests(),
            // The client under certification talks to tminus's own mock
            // platform, never to the target.
            CheckPlan::Client(_) => Requests::default(),
            CheckPlan::Transport(p) => p.requests(),
            CheckPlan::Polling(p) => p.requests(),
            CheckPlan::Dependency(p) => p.requests(),
            CheckPlan::Auth(p) => p.requests(),
            CheckPlan::Contract(p) => p.requests(),
            CheckPlan::Observability(p) => p.requests(),
            CheckPlan::Load(p) => p.requests(),
        }
    }
}

/// Runs one planned check.
pub async fn execute(plan: &CheckPlan, ctx: &CheckContext) -> Outcome {
    if let Some(v) = plan.volume().filter(|v| v.is_high()) {
        if let Some(why) = remote_because(&ctx.target.base_url).filter(|_| !ctx.allow_remote_load) {
            return Outcome::error(format!(
                "refusing to send up to {} requests ({} at once) to {}: {why}; this is load, pass --allow-remote-load to send it",
                v.requests,
                v.concurrency,
                crate::redact::mask_userinfo(&ctx.target.base_url)
            ));
        }
    }
    match plan {
        CheckPlan::Steps(p) => steps::exec::run(p, ctx).await,
        CheckPlan::Idempotency(p) => idempotency::exec::run(p, ctx).await,
        CheckPlan::RateLimit(p) => rate_limit::exec::run(p, ctx).await,
        CheckPlan::Trace(p) => trace::exec::run(p, ctx).await,
        CheckPlan::Webhook(p) => webhook::exec::run(p, ctx).await,
        CheckPlan::Client(p) => client::exec::run(p, ctx).await,
        CheckPlan::Transport(p) => transport::exec::run(p, ctx).await,
        CheckPlan::Polling(p) => polling::exec::run(p, ctx).await,
        CheckPlan::Dependency(p) => dependency::exec::run(p, ctx).await,
        CheckPlan::Auth(p) => auth::exec::run(p, ctx).await,
        CheckPlan::Contract(p) => contract::exec::run(p, ctx).await,
        CheckPlan::Observability(p) => observability::exec::run(p, ctx).await,
        CheckPlan::Load(p) => load::capacity::exec::run(p, ctx).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which planned checks count as load (`--allow-remote-load` needed for
    /// a remote target): the defaults do not, large budgets do.
    #[test]
    fn high_volume_is_what_the_budget_says() {
        let src = "suite: s\nchecks:\n  - id: storm-default\n    kind: rate_limit.storm\n    request: { path: /x }\n  - id: storm-big\n    kind: rate_limit.storm\n    request: { path: /x }\n    max_requests: 5000\n  - id: unique-default\n    kind: trace.unique\n    request: { path: /x }\n  - id: steps\n    steps: [{ request: { path: /x } }]\n";
        let path = std::path::Path::new("s.yaml");
        let file = crate::suite::read::parse_str(path, src).unwrap();
        let loaded = vec![crate::suite::SuiteSource {
            path: path.into(),
            source: src.into(),
            file,
        }];
        let plan = crate::plan::build_with_env(&loaded, &Default::default(), &|_| None).unwrap();
        let high: Vec<(&str, Option<bool>)> = plan.suites[0]
            .checks
            .iter()
            .map(|c| (c.id.as_str(), c.body.volume().map(Volume::is_high)))
            .collect();
        assert_eq!(
            high,
            [
                ("storm-default", Some(false)),
                ("storm-big", Some(true)),
                ("unique-default", Some(false)),
                ("steps", None),
            ]
        );
    }

    /// The tables `tminus checks` prints and the enums the parser fills name
    /// the same kinds, in the same order.
    #[test]
    fn kinds_tables_match_the_enums() {
        let enums: Vec<&str> = [
            steps::spec::StepsSpec::NAMES,
            idempotency::spec::IdempotencySpec::NAMES,
            rate_limit::spec::RateLimitSpec::NAMES,
            trace::spec::TraceSpec::NAMES,
            webhook::spec::WebhookSpec::NAMES,
            client::spec::ClientSpec::NAMES,
            transport::spec::TransportSpec::NAMES,
            polling::spec::PollingSpec::NAMES,
            dependency::spec::DependencySpec::NAMES,
            auth::spec::AuthSpec::NAMES,
            contract::spec::ContractSpec::NAMES,
            observability::spec::ObservabilitySpec::NAMES,
            load::capacity::spec::LoadCheckSpec::NAMES,
        ]
        .concat();
        let tables: Vec<&str> = kind_names().collect();
        assert_eq!(enums, tables);
    }

    /// Issue 22 case 5: a property whose level rests on the seed checklist
    /// (its source names BOTIX) is a MUST under `profile: botix`, and
    /// `standard` never asks more than the RFCs (no property is a MUST there
    /// and a SHOULD under botix). The properties the issue names are in the
    /// list below by name, so dropping one's `botix_must()` fails here.
    #[test]
    fn the_botix_profile_makes_the_seed_contract_a_must() {
        use crate::model::profile::Profile;
        use crate::spec::kinds::Severity;
        let mut problems = Vec::new();
        for k in all_kinds() {
            for p in &k.properties {
                let (std, botix) = (
                    p.severity_in(Profile::Standard),
                    p.severity_in(Profile::Botix),
                );
                if p.source.contains("BOTIX") && botix != Severity::Must {
                    problems.push(format!("{}.{} names BOTIX but is {botix}", k.name, p.name));
                }
                if std == Severity::Must && botix == Severity::Should {
                    problems.push(format!("{}.{}: MUST only under standard", k.name, p.name));
                }
            }
        }
        let named = [
            ("idempotency.replay", "marker"),
            ("idempotency.errors_not_cached", "retry_answer"),
            ("idempotency.key_syntax", "malformed_rejected"),
            ("idempotency.expiry", "fresh_after_ttl"),
            ("rate_limit.headers", "present"),
            ("rate_limit.storm", "retry_after_present"),
            ("rate_limit.storm", "error_code"),
            ("rate_limit.storm", "fast_rejections"),
            ("trace.present", "present"),
            ("trace.async_status", "trace_id_joined"),
            ("webhook.accepts_valid", "ack_time"),
            ("webhook.sink_retries", "schedule"),
            ("webhook.sink_stops_on_gone", "stops_after_gone"),
            ("webhook.sink_respects_retry_after", "honours_retry_after"),
        ];
        for (kind, prop) in named {
            let found = all_kinds()
                .find(|k| k.name == kind)
                .and_then(|k| k.properties.iter().find(|p| p.name == prop).copied());
            match found {
                Some(p) if p.severity_in(Profile::Botix) == Severity::Must => {}
                Some(p) => problems.push(format!("{kind}.{prop} is {} under botix", p.botix)),
                None => problems.push(format!("{kind}.{prop} is not declared")),
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
