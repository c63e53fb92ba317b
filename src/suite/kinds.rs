//! Check kinds: the table of every kind a suite may name, and the dispatch
//! from a check entry's `kind` to its typed spec.
//!
//! Why a pre-pass: serde's internally tagged enums buffer the whole map and
//! lose serde-saphyr's positions, so errors inside a check could not point at
//! a line. Instead `load.rs` first reads only the `kind` of every check, puts
//! the list in `PENDING_KINDS`, and `CheckEntry::deserialize` takes the next
//! one and deserializes the entry straight into the right struct, positions
//! and `deny_unknown_fields` intact. Adding a kind is one row in `KINDS`, one
//! variant and one match arm; the compiler finds the rest.

use std::cell::RefCell;
use std::collections::VecDeque;

use serde::de::{self, Deserializer};
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::diagnostic::suggest;
use super::steps::StepSpec;

/// What `tminus checks` prints for a kind.
pub struct KindInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// `(parameter, default or "required", what it does)`.
    pub params: &'static [(&'static str, &'static str, &'static str)],
}

/// Fields every check accepts, whatever its kind.
pub const COMMON_PARAMS: &[(&str, &str, &str)] = &[
    (
        "id",
        "required",
        "stable name: the JUnit testcase and the --only target",
    ),
    ("kind", "steps", "which check runs (see the list)"),
    ("tags", "[]", "labels for --tag"),
    (
        "description",
        "none",
        "one line for people reading the report",
    ),
];

/// Kinds of the generic family.
pub const STEPS_KINDS: &[KindInfo] = &[KindInfo {
    name: "steps",
    summary: "a generic multi-step case: requests in order, expectations, captures",
    params: &[(
        "steps",
        "required",
        "list of {name, request, expect, capture}; see README \"Suite grammar\"",
    )],
}];

/// Every kind, family by family. A family adds its table here.
pub fn all_kinds() -> impl Iterator<Item = &'static KindInfo> {
    let families: &[&[KindInfo]] = &[
        STEPS_KINDS,
        // family: idempotency
        super::idempotency::KINDS,
        // family: rate_limit
        super::rate_limit::RATE_LIMIT_KINDS,
        // family: trace
        crate::suite::trace::TRACE_KINDS,
        // family: webhook
        super::webhook::SENDER_INFO,
        super::webhook::SINK_INFO,
        // family: client
        super::client::CLIENT_KINDS,
        // family: end
    ];
    families.iter().flat_map(|f| f.iter())
}

pub fn kind_names() -> impl Iterator<Item = &'static str> {
    all_kinds().map(|k| k.name)
}

thread_local! {
    /// The kinds of the checks of the file being deserialized, in document order.
    pub(crate) static PENDING_KINDS: RefCell<VecDeque<Option<String>>> = const { RefCell::new(VecDeque::new()) };
}

/// Declares a check spec struct with the common fields first.
macro_rules! check_spec {
    ($(#[$meta:meta])* $name:ident { $($body:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, Deserialize, Clone)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            pub id: Spanned<String>,
            #[serde(default)]
            pub kind: Option<String>,
            #[serde(default)]
            pub tags: Vec<String>,
            #[serde(default)]
            pub description: Option<String>,
            $($body)*
        }

        impl $crate::suite::kinds::Common for $name {
            fn id(&self) -> &Spanned<String> {
                &self.id
            }
            fn tags(&self) -> &[String] {
                &self.tags
            }
            fn description(&self) -> Option<&str> {
                self.description.as_deref()
            }
        }
    };
}
#[allow(unused_imports)] // used by the family modules
pub(crate) use check_spec;

/// The fields every check spec has (implemented by `check_spec!`).
pub trait Common {
    fn id(&self) -> &Spanned<String>;
    fn tags(&self) -> &[String];
    fn description(&self) -> Option<&str>;
}

check_spec!(
    /// `kind: steps` (the default): requests in order with expectations.
    StepsCheckSpec {
        pub steps: Vec<StepSpec>,
    }
);

/// One entry of `checks:`, typed by its kind.
#[derive(Debug, Clone)]
pub enum CheckEntry {
    Steps(StepsCheckSpec),
    // family: idempotency
    IdemReplay(super::idempotency::ReplaySpec),
    IdemDistinctKeys(super::idempotency::DistinctKeysSpec),
    IdemMismatch(super::idempotency::MismatchSpec),
    IdemConcurrent(super::idempotency::ConcurrentSpec),
    IdemLostResponse(super::idempotency::LostResponseSpec),
    IdemErrorsNotCached(super::idempotency::ErrorsSpec),
    IdemInFlight(super::idempotency::InFlightSpec),
    IdemMissingKey(super::idempotency::MissingKeySpec),
    IdemKeyScope(super::idempotency::KeyScopeSpec),
    IdemKeySyntax(super::idempotency::KeySyntaxSpec),
    IdemEndpointScope(Box<super::idempotency::EndpointScopeSpec>),
    IdemExpiry(super::idempotency::ExpirySpec),

    // family: rate_limit
    RateLimitHeaders(super::rate_limit::RateLimitHeadersSpec),
    RateLimitStorm(super::rate_limit::RateLimitStormSpec),
    RateLimitRecovery(super::rate_limit::RateLimitRecoverySpec),
    RateLimitPartition(super::rate_limit::RateLimitPartitionSpec),

    // family: trace
    Trace(Box<crate::suite::trace::TraceSpec>),
    // family: webhook
    WebhookSender(&'static str, Box<super::webhook::WebhookSenderSpec>),
    WebhookSink(&'static str, Box<super::webhook::WebhookSinkSpec>),
    // family: client
    ClientRespectsRetryAfter(super::client::RespectsRetryAfterSpec),
    ClientExponentialBackoff(super::client::ExponentialBackoffSpec),
    ClientJitter(super::client::JitterSpec),
    ClientBounded(super::client::BoundedSpec),
    ClientNoRetryOn4xx(super::client::NoRetryOn4xxSpec),
    ClientRetry503Policy(super::client::Retry503PolicySpec),
    ClientIdempotencyKeys(super::client::IdempotencyKeysSpec),
    ClientSlowsBeforeLimit(super::client::SlowsBeforeLimitSpec),
    ClientRetryAmplification(super::client::RetryAmplificationSpec),
    ClientReplayIsSuccess(super::client::ReplayIsSuccessSpec),
    // family: end
}

impl CheckEntry {
    /// The kind's name as written in suites (`steps`, `idempotency.replay`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            CheckEntry::Steps(_) => "steps",
            // family: idempotency
            CheckEntry::IdemReplay(_) => "idempotency.replay",
            CheckEntry::IdemDistinctKeys(_) => "idempotency.distinct_keys",
            CheckEntry::IdemMismatch(_) => "idempotency.mismatch",
            CheckEntry::IdemConcurrent(_) => "idempotency.concurrent",
            CheckEntry::IdemLostResponse(_) => "idempotency.lost_response",
            CheckEntry::IdemErrorsNotCached(_) => "idempotency.errors_not_cached",
            CheckEntry::IdemInFlight(_) => "idempotency.in_flight",
            CheckEntry::IdemMissingKey(_) => "idempotency.missing_key",
            CheckEntry::IdemKeyScope(_) => "idempotency.key_scope",
            CheckEntry::IdemKeySyntax(_) => "idempotency.key_syntax",
            CheckEntry::IdemEndpointScope(_) => "idempotency.endpoint_scope",
            CheckEntry::IdemExpiry(_) => "idempotency.expiry",

            // family: rate_limit
            CheckEntry::RateLimitHeaders(_) => "rate_limit.headers",
            CheckEntry::RateLimitStorm(_) => "rate_limit.storm",
            CheckEntry::RateLimitRecovery(_) => "rate_limit.recovery",
            CheckEntry::RateLimitPartition(_) => "rate_limit.partition",

            // family: trace
            CheckEntry::Trace(t) => t.kind_name(),
            // family: webhook
            CheckEntry::WebhookSender(k, _) | CheckEntry::WebhookSink(k, _) => k,
            // family: client
            CheckEntry::ClientRespectsRetryAfter(_) => "client.respects_retry_after",
            CheckEntry::ClientExponentialBackoff(_) => "client.exponential_backoff",
            CheckEntry::ClientJitter(_) => "client.jitter",
            CheckEntry::ClientBounded(_) => "client.bounded",
            CheckEntry::ClientNoRetryOn4xx(_) => "client.no_retry_on_4xx",
            CheckEntry::ClientRetry503Policy(_) => "client.retry_503_policy",
            CheckEntry::ClientIdempotencyKeys(_) => "client.idempotency_keys",
            CheckEntry::ClientSlowsBeforeLimit(_) => "client.slows_before_limit",
            CheckEntry::ClientRetryAmplification(_) => "client.retry_amplification",
            CheckEntry::ClientReplayIsSuccess(_) => "client.replay_is_success",
            // family: end
        }
    }

    pub fn common(&self) -> &dyn Common {
        match self {
            CheckEntry::Steps(s) => s,
            // family: idempotency
            CheckEntry::IdemReplay(s) => s,
            CheckEntry::IdemDistinctKeys(s) => s,
            CheckEntry::IdemMismatch(s) => s,
            CheckEntry::IdemConcurrent(s) => s,
            CheckEntry::IdemLostResponse(s) => s,
            CheckEntry::IdemErrorsNotCached(s) => s,
            CheckEntry::IdemInFlight(s) => s,
            CheckEntry::IdemMissingKey(s) => s,
            CheckEntry::IdemKeyScope(s) => s,
            CheckEntry::IdemKeySyntax(s) => s,
            CheckEntry::IdemEndpointScope(s) => s.as_ref(),
            CheckEntry::IdemExpiry(s) => s,

            // family: rate_limit
            CheckEntry::RateLimitHeaders(s) => s,
            CheckEntry::RateLimitStorm(s) => s,
            CheckEntry::RateLimitRecovery(s) => s,
            CheckEntry::RateLimitPartition(s) => s,

            // family: trace
            CheckEntry::Trace(t) => t.common(),
            // family: webhook
            CheckEntry::WebhookSender(_, s) => s.as_ref(),
            CheckEntry::WebhookSink(_, s) => s.as_ref(),
            // family: client
            CheckEntry::ClientRespectsRetryAfter(s) => s,
            CheckEntry::ClientExponentialBackoff(s) => s,
            CheckEntry::ClientJitter(s) => s,
            CheckEntry::ClientBounded(s) => s,
            CheckEntry::ClientNoRetryOn4xx(s) => s,
            CheckEntry::ClientRetry503Policy(s) => s,
            CheckEntry::ClientIdempotencyKeys(s) => s,
            CheckEntry::ClientSlowsBeforeLimit(s) => s,
            CheckEntry::ClientRetryAmplification(s) => s,
            CheckEntry::ClientReplayIsSuccess(s) => s,
            // family: end
        }
    }
    pub fn id(&self) -> &Spanned<String> {
        self.common().id()
    }
    pub fn tags(&self) -> &[String] {
        self.common().tags()
    }
    pub fn description(&self) -> Option<&str> {
        self.common().description()
    }
}

impl<'de> Deserialize<'de> for CheckEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let kind = PENDING_KINDS
            .with(|k| k.borrow_mut().pop_front())
            .flatten()
            .unwrap_or_else(|| "steps".to_owned());
        match kind.as_str() {
            "steps" => StepsCheckSpec::deserialize(d).map(CheckEntry::Steps),
            // family: idempotency
            "idempotency.replay" => {
                super::idempotency::ReplaySpec::deserialize(d).map(CheckEntry::IdemReplay)
            }
            "idempotency.distinct_keys" => super::idempotency::DistinctKeysSpec::deserialize(d)
                .map(CheckEntry::IdemDistinctKeys),
            "idempotency.mismatch" => {
                super::idempotency::MismatchSpec::deserialize(d).map(CheckEntry::IdemMismatch)
            }
            "idempotency.concurrent" => {
                super::idempotency::ConcurrentSpec::deserialize(d).map(CheckEntry::IdemConcurrent)
            }
            "idempotency.lost_response" => super::idempotency::LostResponseSpec::deserialize(d)
                .map(CheckEntry::IdemLostResponse),
            "idempotency.errors_not_cached" => {
                super::idempotency::ErrorsSpec::deserialize(d).map(CheckEntry::IdemErrorsNotCached)
            }
            "idempotency.in_flight" => {
                super::idempotency::InFlightSpec::deserialize(d).map(CheckEntry::IdemInFlight)
            }
            "idempotency.missing_key" => {
                super::idempotency::MissingKeySpec::deserialize(d).map(CheckEntry::IdemMissingKey)
            }
            "idempotency.key_scope" => {
                super::idempotency::KeyScopeSpec::deserialize(d).map(CheckEntry::IdemKeyScope)
            }
            "idempotency.key_syntax" => {
                super::idempotency::KeySyntaxSpec::deserialize(d).map(CheckEntry::IdemKeySyntax)
            }
            "idempotency.endpoint_scope" => super::idempotency::EndpointScopeSpec::deserialize(d)
                .map(|s| CheckEntry::IdemEndpointScope(Box::new(s))),
            "idempotency.expiry" => {
                super::idempotency::ExpirySpec::deserialize(d).map(CheckEntry::IdemExpiry)
            }

            // family: rate_limit
            "rate_limit.headers" => super::rate_limit::RateLimitHeadersSpec::deserialize(d)
                .map(CheckEntry::RateLimitHeaders),
            "rate_limit.storm" => super::rate_limit::RateLimitStormSpec::deserialize(d)
                .map(CheckEntry::RateLimitStorm),
            "rate_limit.recovery" => super::rate_limit::RateLimitRecoverySpec::deserialize(d)
                .map(CheckEntry::RateLimitRecovery),
            "rate_limit.partition" => super::rate_limit::RateLimitPartitionSpec::deserialize(d)
                .map(CheckEntry::RateLimitPartition),

            // family: trace
            k if crate::suite::trace::is_trace_kind(k) => {
                crate::suite::trace::TraceSpec::deserialize_kind(k, d)
                    .map(|t| CheckEntry::Trace(Box::new(t)))
            }

            // family: webhook
            k if super::webhook::static_kind(k).is_some() => {
                super::webhook::deserialize_entry(k, d)
            }

            // family: client
            "client.respects_retry_after" => super::client::RespectsRetryAfterSpec::deserialize(d)
                .map(CheckEntry::ClientRespectsRetryAfter),
            "client.exponential_backoff" => super::client::ExponentialBackoffSpec::deserialize(d)
                .map(CheckEntry::ClientExponentialBackoff),
            "client.jitter" => {
                super::client::JitterSpec::deserialize(d).map(CheckEntry::ClientJitter)
            }
            "client.bounded" => {
                super::client::BoundedSpec::deserialize(d).map(CheckEntry::ClientBounded)
            }
            "client.no_retry_on_4xx" => {
                super::client::NoRetryOn4xxSpec::deserialize(d).map(CheckEntry::ClientNoRetryOn4xx)
            }
            "client.retry_503_policy" => super::client::Retry503PolicySpec::deserialize(d)
                .map(CheckEntry::ClientRetry503Policy),
            "client.idempotency_keys" => super::client::IdempotencyKeysSpec::deserialize(d)
                .map(CheckEntry::ClientIdempotencyKeys),
            "client.slows_before_limit" => super::client::SlowsBeforeLimitSpec::deserialize(d)
                .map(CheckEntry::ClientSlowsBeforeLimit),
            "client.retry_amplification" => super::client::RetryAmplificationSpec::deserialize(d)
                .map(CheckEntry::ClientRetryAmplification),
            "client.replay_is_success" => super::client::ReplayIsSuccessSpec::deserialize(d)
                .map(CheckEntry::ClientReplayIsSuccess),

            // family: end
            other => {
                let mut msg = format!("unknown check kind `{other}`");
                if let Some(s) = suggest(other, kind_names()) {
                    msg.push_str(&format!(", did you mean `{s}`?"));
                } else {
                    msg.push_str(" (`tminus checks` lists the kinds)");
                }
                Err(de::Error::custom(msg))
            }
        }
    }
}
