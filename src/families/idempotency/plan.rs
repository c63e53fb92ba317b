//! Planning the idempotency family: one `IdemPlan` with the shared pieces
//! (request, counter, key, marker dialect) and a `Mode` per kind holding what
//! only that kind needs. Defaults follow the checklist and the IETF draft.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_saphyr::Spanned;

use crate::context::{CounterPlan, PlanCtx, RequestPlan, Template};
use crate::families::idempotency::spec::{
    defaults, ErrorsPolicy, IdempotencySpec, KeyPolicy, MarkerSpec,
};
pub use crate::families::idempotency::spec::{EndpointPolicy, MarkerPolicy};
use crate::model::jsonpath::JsonPath;
use crate::model::scalar::{DurationValue, Scalar, StatusPattern, StatusSet};
use crate::spec::request::{CounterSpec, RequestSpec};

#[derive(Debug, Clone)]
pub struct MarkerPlan {
    pub header: String,
    /// Lower-cased accepted values.
    pub values: Vec<String>,
    pub policy: MarkerPolicy,
}

impl MarkerPlan {
    /// Is a response with this header value marked as a replay?
    pub fn is_marked(&self, value: Option<&str>) -> bool {
        value.is_some_and(|v| self.values.contains(&v.trim().to_ascii_lowercase()))
    }
}

#[derive(Debug, Clone)]
pub enum Mode {
    Replay {
        ignore: Vec<JsonPath>,
        id_path: Option<JsonPath>,
    },
    DistinctKeys {
        id_path: Option<JsonPath>,
    },
    Mismatch {
        changed: Option<RequestPlan>,
        reject: StatusSet,
    },
    Concurrent {
        n: usize,
        /// Rounds of `n`, a new key each, until one fails.
        rounds: usize,
        conflict: StatusSet,
        allow_replay: bool,
        slow: Vec<(String, Template)>,
    },
    LostResponse {
        slow: Vec<(String, Template)>,
        in_progress: StatusSet,
        retry_within: Duration,
        settle: Duration,
    },
    Errors {
        invalid: RequestPlan,
        cached: bool,
    },
    InFlight {
        slow: Vec<(String, Template)>,
        conflict: StatusSet,
        retry_after: Duration,
        retry_within: Duration,
    },
    MissingKey {
        required: bool,
        reject: StatusSet,
    },
    KeyScope {
        id_path: Option<JsonPath>,
    },
    KeySyntax {
        reject: StatusSet,
    },
    EndpointScope {
        other: Box<RequestPlan>,
        other_effects: Option<CounterPlan>,
        policy: EndpointPolicy,
        reject: StatusSet,
    },
    Expiry {
        ttl: Duration,
        margin: Duration,
    },
}

#[derive(Debug, Clone)]
pub struct IdemPlan {
    pub mode: Mode,
    pub request: RequestPlan,
    pub effects: CounterPlan,
    pub key_header: String,
    pub key: Template,
    pub success: StatusSet,
    pub marker: MarkerPlan,
}

pub const MAX_CONCURRENCY: u32 = 100;
/// Most rounds of `idempotency.concurrent`: with `MAX_CONCURRENCY` bounds a
/// check to 5,000 requests.
pub const MAX_ROUNDS: u32 = 50;

/// The shared fields, borrowed from whichever spec is planned.
struct Common<'s> {
    id: &'s Spanned<String>,
    request: &'s RequestSpec,
    effects: &'s CounterSpec,
    key_header: &'s Option<String>,
    key: Option<&'s Spanned<String>>,
    success: &'s Option<StatusSet>,
    marker: Option<&'s MarkerSpec>,
}

/// Plans a check of the idempotency family.
pub fn plan(ctx: &mut PlanCtx<'_>, spec: &IdempotencySpec) -> IdemPlan {
    ctx.idempotency(spec)
}

impl PlanCtx<'_> {
    /// Plans any idempotency check entry.
    pub fn idempotency(&mut self, c: &IdempotencySpec) -> IdemPlan {
        use IdempotencySpec as E;
        macro_rules! common {
            ($s:expr, $key:expr, $marker:expr) => {
                Common {
                    id: &$s.id,
                    request: &$s.request,
                    effects: &$s.effects,
                    key_header: &$s.key_header,
                    key: $key,
                    success: &$s.success,
                    marker: $marker,
                }
            };
        }
        let (common, mode) = match c {
            E::Replay(s) => {
                let ignore = s
                    .ignore
                    .iter()
                    .map(|p| self.json_path(&p.value, p.referenced))
                    .collect();
                let id_path = self.opt_path(&s.id_path);
                (
                    common!(s, s.key.as_ref(), s.marker.as_ref()),
                    Mode::Replay { ignore, id_path },
                )
            }
            E::DistinctKeys(s) => {
                let id_path = self.opt_path(&s.id_path);
                (
                    common!(s, s.key.as_ref(), s.marker.as_ref()),
                    Mode::DistinctKeys { id_path },
                )
            }
            E::Mismatch(s) => {
                let changed = s.changed.as_ref().map(|r| self.request(r, s.id.referenced));
                (
                    common!(s, s.key.as_ref(), s.marker.as_ref()),
                    Mode::Mismatch {
                        changed,
                        reject: statuses(&s.reject_status, defaults::MISMATCH_REJECT),
                    },
                )
            }
            E::Concurrent(s) => {
                let n = self.bounded(
                    s.concurrency.as_ref(),
                    "concurrency",
                    2..=MAX_CONCURRENCY,
                    defaults::CONCURRENCY,
                );
                let rounds = self.bounded(
                    s.rounds.as_ref(),
                    "rounds",
                    1..=MAX_ROUNDS,
                    defaults::ROUNDS,
                );
                let slow = self.headers(&s.slow_headers);
                (
                    common!(s, s.key.as_ref(), s.marker.as_ref()),
                    Mode::Concurrent {
                        n,
                        rounds,
                        conflict: statuses(&s.conflict_status, defaults::CONFLICT),
                        allow_replay: s.allow_replay.unwrap_or(defaults::ALLOW_REPLAY),
                        slow,
                    },
                )
            }
            E::LostResponse(s) => {
                let slow = self.headers(&s.slow_headers);
                (
                    common!(s, s.key.as_ref(), s.marker.as_ref()),
                    Mode::LostResponse {
                        slow,
                        in_progress: statuses(&s.in_progress_status, defaults::IN_PROGRESS),
                        retry_within: dur(&s.retry_within, defaults::LOST_RETRY_WITHIN),
                        settle: dur(&s.settle, defaults::SETTLE),
                    },
                )
            }
            E::ErrorsNotCached(s) => {
                let invalid = self.request(&s.invalid, s.id.referenced);
                let cached = self.keyword_or(s.policy.as_ref(), "policy", defaults::ERRORS_POLICY)
                    == ErrorsPolicy::Cached;
                (
                    common!(s, s.key.as_ref(), None),
                    Mode::Errors { invalid, cached },
                )
            }
            E::InFlight(s) => {
                let slow = self.headers(&s.slow_headers);
                (
                    common!(s, s.key.as_ref(), s.marker.as_ref()),
                    Mode::InFlight {
                        slow,
                        conflict: statuses(&s.conflict_status, defaults::CONFLICT),
                        retry_after: dur(&s.retry_after, defaults::IN_FLIGHT_RETRY_AFTER),
                        retry_within: dur(&s.retry_within, defaults::IN_FLIGHT_RETRY_WITHIN),
                    },
                )
            }
            E::MissingKey(s) => {
                let required =
                    self.keyword_or(s.policy.as_ref(), "policy", defaults::MISSING_KEY_POLICY)
                        == KeyPolicy::Required;
                (
                    common!(s, None, None),
                    Mode::MissingKey {
                        required,
                        reject: statuses(&s.reject_status, defaults::MISSING_KEY_REJECT),
                    },
                )
            }
            E::KeyScope(s) => {
                let id_path = self.opt_path(&s.id_path);
                (
                    common!(s, s.key.as_ref(), s.marker.as_ref()),
                    Mode::KeyScope { id_path },
                )
            }
            E::KeySyntax(s) => (
                common!(s, s.key.as_ref(), None),
                Mode::KeySyntax {
                    reject: statuses(&s.reject_status, defaults::KEY_SYNTAX_REJECT),
                },
            ),
            E::EndpointScope(s) => {
                let other = Box::new(self.request(&s.other_request, s.id.referenced));
                let other_effects = s.other_effects.as_ref().map(|c| self.counter(c));
                let policy =
                    self.keyword_or(s.policy.as_ref(), "policy", defaults::ENDPOINT_POLICY);
                (
                    common!(s, s.key.as_ref(), s.marker.as_ref()),
                    Mode::EndpointScope {
                        other,
                        other_effects,
                        policy,
                        reject: statuses(&s.reject_status, defaults::ENDPOINT_REJECT),
                    },
                )
            }
            E::Expiry(s) => {
                let ttl = s.ttl.value.0;
                let margin = dur(&s.margin, defaults::EXPIRY_MARGIN);
                let max_wait = dur(&s.max_wait, defaults::EXPIRY_MAX_WAIT);
                if ttl.is_zero() {
                    self.error(s.ttl.referenced, "ttl must be longer than zero");
                } else if ttl + margin > max_wait {
                    // A bound, not a hang: a 24 h TTL is not waited for; the
                    // target needs a test override of its TTL.
                    self.error(
                        s.ttl.referenced,
                        format!(
                            "ttl {ttl:?} + margin {margin:?} exceeds max_wait {max_wait:?}: give the target a short test TTL, or raise max_wait"
                        ),
                    );
                }
                (
                    common!(s, s.key.as_ref(), s.marker.as_ref()),
                    Mode::Expiry { ttl, margin },
                )
            }
        };
        self.idem_common(common, mode)
    }

    fn idem_common(&mut self, c: Common<'_>, mode: Mode) -> IdemPlan {
        let request = self.request(c.request, c.id.referenced);
        let effects = self.counter(c.effects);
        let key = match c.key {
            Some(k) => self.template(k),
            None => Template::compile(defaults::KEY, &self.resolver()).unwrap_or_default(),
        };
        let marker = self.marker(c.marker);
        IdemPlan {
            mode,
            request,
            effects,
            key_header: c
                .key_header
                .clone()
                .unwrap_or_else(|| defaults::KEY_HEADER.into()),
            key,
            success: statuses(c.success, defaults::SUCCESS),
            marker,
        }
    }

    fn marker(&mut self, m: Option<&MarkerSpec>) -> MarkerPlan {
        let default = MarkerSpec::default();
        let m = m.unwrap_or(&default);
        let default_policy = self
            .profile
            .pick(defaults::MARKER_POLICY_STANDARD, defaults::MARKER_POLICY);
        let policy = self.keyword_or(m.policy.as_ref(), "policy", default_policy);
        MarkerPlan {
            header: m
                .header
                .clone()
                .unwrap_or_else(|| defaults::MARKER_HEADER.into()),
            values: m
                .values
                .as_ref()
                .map(|v| v.iter().map(|s| s.0.trim().to_ascii_lowercase()).collect())
                .unwrap_or_else(|| {
                    defaults::MARKER_VALUES
                        .iter()
                        .map(|v| v.to_string())
                        .collect()
                }),
            policy,
        }
    }

    fn opt_path(&mut self, p: &Option<Spanned<String>>) -> Option<JsonPath> {
        p.as_ref().map(|p| self.json_path(&p.value, p.referenced))
    }

    /// A count that must lie in `range`: out of it, a positioned error
    /// and the default.
    fn bounded(
        &mut self,
        value: Option<&Spanned<u32>>,
        name: &str,
        range: std::ops::RangeInclusive<u32>,
        default: u32,
    ) -> usize {
        match value {
            None => default as usize,
            Some(v) if range.contains(&v.value) => v.value as usize,
            Some(v) => {
                self.error(
                    v.referenced,
                    format!(
                        "{name} {} is out of range: use {} to {}",
                        v.value,
                        range.start(),
                        range.end()
                    ),
                );
                default as usize
            }
        }
    }

    fn headers(&mut self, h: &BTreeMap<String, Spanned<Scalar>>) -> Vec<(String, Template)> {
        h.iter().map(|(k, v)| self.header(k, v)).collect()
    }
}

fn dur(d: &Option<Spanned<DurationValue>>, default: Duration) -> Duration {
    d.as_ref().map(|d| d.value.0).unwrap_or(default)
}

fn statuses(s: &Option<StatusSet>, default: &[StatusPattern]) -> StatusSet {
    s.clone().unwrap_or_else(|| StatusSet(default.to_vec()))
}

impl IdemPlan {
    /// The most requests this check sends (`context::budget`), side-effect
    /// counter reads included.
    pub fn requests(&self) -> crate::context::budget::Requests {
        use crate::context::budget::{Requests, COUNTER_READS as C};
        match &self.mode {
            // first, replay and the control (the same body under a new key),
            // the counter read before and after each
            Mode::Replay { .. } => Requests::own(3 + 4),
            Mode::DistinctKeys { .. } => Requests::own(2 + C),
            // first, changed body, and the changed body alone under a new key;
            // the counter read before, after the first and after the changed body
            Mode::Mismatch { .. } => Requests::own(3 + 3),
            // Each round (its n requests and the counter read after it) is
            // reserved on its own (`idempotency::exec`), so every round falls
            // inside one window; a round rate limited anyway is redone.
            Mode::Concurrent { n, rounds, .. } => {
                let round = *n as u64 + 1;
                let redone = u64::from(crate::families::idempotency::exec::RATE_LIMIT_WAITS);
                Requests {
                    own: 1 + round * (*rounds as u64 + redone),
                    window: round + 1,
                    spare: round * redone,
                    ..Requests::own(0)
                }
            }
            // the slow first, up to a retry every 100 ms within `retry_within`
            Mode::LostResponse { retry_within, .. } => {
                Requests::own(1 + (retry_within.as_millis() as u64 / 100).clamp(1, 50) + C)
            }
            Mode::Errors { .. } | Mode::InFlight { .. } => Requests::own(3 + C),
            // no key, the keyed twin, and a probe of the rejection alone
            Mode::MissingKey { .. } => Requests::own(3 + C),
            Mode::KeyScope { .. } => Requests {
                second: 1,
                ..Requests::own(1 + C)
            },
            Mode::KeySyntax { .. } => Requests::own(16 + C),
            Mode::EndpointScope { .. } => Requests::own(3 + 2 * C),
            Mode::Expiry { .. } => Requests::own(3 + C),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{build_with_env, CheckPlan, PlanOptions};
    use crate::suite::SuiteSource;

    fn plan_one(check: &str) -> IdemPlan {
        plan_in("", check)
    }

    /// Plans `check` in a suite whose top starts with `top` (`profile: botix\n`).
    fn plan_in(top: &str, check: &str) -> IdemPlan {
        let src = format!(
            "suite: s\n{top}target: {{ base_url: \"http://127.0.0.1:1\" }}\nchecks:\n{check}"
        );
        let path = std::path::Path::new("s.yaml");
        let file = crate::suite::read::parse_str(path, &src).expect("parses");
        let loaded = vec![SuiteSource {
            path: path.into(),
            source: src.clone(),
            file,
        }];
        let mut plan = build_with_env(&loaded, &PlanOptions::default(), &|_| None)
            .unwrap_or_else(|d| panic!("{d}"));
        match plan.suites.remove(0).checks.remove(0).body {
            CheckPlan::Idempotency(p) => *p,
            other => panic!("not an idempotency plan: {other:?}"),
        }
    }

    #[test]
    fn the_botix_profile_requires_the_marker() {
        let check = "  - id: r\n    kind: idempotency.replay\n    request: { method: POST, path: /m }\n    effects: { request: { path: /c }, value: $.count }\n";
        assert_eq!(
            plan_in("profile: botix\n", check).marker.policy,
            MarkerPolicy::Required
        );
        assert_eq!(
            plan_in("profile: standard\n", check).marker.policy,
            MarkerPolicy::Optional
        );
    }

    #[test]
    fn replay_defaults_follow_the_checklist() {
        let p = plan_one(
            "  - id: r\n    kind: idempotency.replay\n    request: { method: POST, path: /m }\n    effects: { request: { path: /c }, value: $.count }\n",
        );
        assert_eq!(p.key_header, "Idempotency-Key");
        assert_eq!(p.marker.header, "Idempotent-Replayed");
        assert_eq!(p.marker.values, vec!["1"]);
        // `standard` (no `profile:`): the draft defines no marker.
        assert_eq!(p.marker.policy, MarkerPolicy::Optional);
        assert!(p.success.matches(201) && !p.success.matches(409));
        let (a, b) = (
            p.key.render(&Default::default()),
            p.key.render(&Default::default()),
        );
        assert_ne!(a, b, "a fresh key per render");
        assert!(
            uuid::Uuid::parse_str(&a).is_ok_and(|u| u.get_version_num() == 4),
            "{a}"
        );
    }

    #[test]
    fn dialect_parameters_are_taken_as_written() {
        let p = plan_one(
            "  - id: c\n    kind: idempotency.concurrent\n    request: { method: POST, path: /m }\n    effects: { request: { path: /c }, value: $.items }\n    key_header: X-Idem\n    key: \"order-${uuid}\"\n    marker: { header: X-Replayed, values: [true, 1], policy: forbidden }\n    concurrency: 4\n    rounds: 3\n    conflict_status: [409, 425]\n    allow_replay: false\n",
        );
        assert_eq!(p.key_header, "X-Idem");
        assert!(p.key.render(&Default::default()).starts_with("order-"));
        assert_eq!(p.marker.values, vec!["true", "1"]);
        assert_eq!(p.marker.policy, MarkerPolicy::Forbidden);
        match p.mode {
            Mode::Concurrent {
                n,
                rounds,
                conflict,
                allow_replay,
                ..
            } => {
                assert_eq!(n, 4);
                assert_eq!(rounds, 3);
                assert!(conflict.matches(425));
                assert!(!allow_replay);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn new_kinds_plan_with_defaults() {
        let p = plan_one(
            "  - id: k\n    kind: idempotency.key_syntax\n    request: { method: POST, path: /m }\n    effects: { request: { path: /c }, value: $.count }\n",
        );
        assert!(
            matches!(p.mode, Mode::KeySyntax { ref reject } if reject.matches(400) && !reject.matches(422))
        );
        let p = plan_one(
            "  - id: e\n    kind: idempotency.endpoint_scope\n    request: { method: POST, path: /a }\n    other_request: { method: POST, path: /b }\n    effects: { request: { path: /c }, value: $.count }\n",
        );
        match p.mode {
            Mode::EndpointScope {
                policy,
                reject,
                other_effects,
                ..
            } => {
                assert_eq!(policy, EndpointPolicy::Either);
                assert!(reject.matches(409) && !reject.matches(500));
                assert!(other_effects.is_none());
            }
            other => panic!("{other:?}"),
        }
        let p = plan_one(
            "  - id: x\n    kind: idempotency.expiry\n    request: { method: POST, path: /a }\n    effects: { request: { path: /c }, value: $.count }\n    ttl: 1s\n",
        );
        match p.mode {
            Mode::Expiry { ttl, margin } => {
                assert_eq!(ttl, Duration::from_secs(1));
                assert_eq!(margin, defaults::EXPIRY_MARGIN);
            }
            other => panic!("{other:?}"),
        }
    }

    const EFFECTS: &str = "    request: { method: POST, path: /m }\n    effects: { request: { path: /c }, value: $.count }\n";

    #[test]
    fn policies_parse_with_spelling_variants() {
        let p = plan_one(&format!(
            "  - id: e\n    kind: idempotency.errors_not_cached\n{EFFECTS}    invalid: {{ method: POST, path: /m }}\n    policy: Not-Cached\n"
        ));
        assert!(matches!(p.mode, Mode::Errors { cached: false, .. }));
        let p = plan_one(&format!(
            "  - id: e\n    kind: idempotency.errors_not_cached\n{EFFECTS}    invalid: {{ method: POST, path: /m }}\n    policy: CACHED\n"
        ));
        assert!(matches!(p.mode, Mode::Errors { cached: true, .. }));
        let p = plan_one(&format!(
            "  - id: m\n    kind: idempotency.missing_key\n{EFFECTS}    policy: \" optional \"\n"
        ));
        assert!(matches!(
            p.mode,
            Mode::MissingKey {
                required: false,
                ..
            }
        ));
        let p = plan_one(&format!(
            "  - id: s\n    kind: idempotency.endpoint_scope\n{EFFECTS}    other_request: {{ method: POST, path: /b }}\n    policy: Execute\n"
        ));
        assert!(matches!(
            p.mode,
            Mode::EndpointScope {
                policy: EndpointPolicy::Execute,
                ..
            }
        ));
        let p = plan_one(&format!(
            "  - id: r\n    kind: idempotency.replay\n{EFFECTS}    marker: {{ policy: OPTIONAL }}\n"
        ));
        assert_eq!(p.marker.policy, MarkerPolicy::Optional);
    }

    #[test]
    fn unknown_policies_are_positioned_and_list_the_choices() {
        let src = format!(
            "suite: s\ntarget: {{ base_url: \"http://127.0.0.1:1\" }}\nchecks:\n  - id: m\n    kind: idempotency.missing_key\n{EFFECTS}    policy: sometimes\n  - id: r\n    kind: idempotency.replay\n{EFFECTS}    marker: {{ policy: never }}\n"
        );
        let path = std::path::Path::new("s.yaml");
        let file = crate::suite::read::parse_str(path, &src).expect("parses");
        let loaded = vec![SuiteSource {
            path: path.into(),
            source: src.clone(),
            file,
        }];
        let d = build_with_env(&loaded, &PlanOptions::default(), &|_| None).unwrap_err();
        assert_eq!(d.len(), 2, "{d}");
        assert_eq!(
            d.0[0].message,
            "unknown policy `sometimes`: use one of `required`, `optional`"
        );
        assert_eq!((d.0[0].line, d.0[0].column), (8, 13), "{d}");
        assert_eq!(
            d.0[1].message,
            "unknown policy `never`: use one of `required`, `optional`, `forbidden`"
        );
        assert_eq!((d.0[1].line, d.0[1].column), (13, 23), "{d}");
    }

    #[test]
    fn marker_values_match_case_insensitively() {
        let m = MarkerPlan {
            header: defaults::MARKER_HEADER.into(),
            values: vec!["1".into(), "true".into()],
            policy: MarkerPolicy::Required,
        };
        assert!(m.is_marked(Some("TRUE")));
        assert!(m.is_marked(Some(" 1")));
        assert!(!m.is_marked(Some("0")));
        assert!(!m.is_marked(None));
    }
}
