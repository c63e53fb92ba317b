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
use super::request::StepSpec;

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
        crate::families::idempotency::spec::KINDS,
        // family: rate_limit
        crate::families::rate_limit::spec::RATE_LIMIT_KINDS,
        // family: trace
        crate::families::trace::spec::TRACE_KINDS,
        // family: webhook
        crate::families::webhook::spec::SENDER_INFO,
        crate::families::webhook::spec::SINK_INFO,
        // family: client
        crate::families::client::spec::CLIENT_KINDS,
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
    IdemReplay(crate::families::idempotency::spec::ReplaySpec),
    IdemDistinctKeys(crate::families::idempotency::spec::DistinctKeysSpec),
    IdemMismatch(crate::families::idempotency::spec::MismatchSpec),
    IdemConcurrent(crate::families::idempotency::spec::ConcurrentSpec),
    IdemLostResponse(crate::families::idempotency::spec::LostResponseSpec),
    IdemErrorsNotCached(crate::families::idempotency::spec::ErrorsSpec),
    IdemInFlight(crate::families::idempotency::spec::InFlightSpec),
    IdemMissingKey(crate::families::idempotency::spec::MissingKeySpec),
    IdemKeyScope(crate::families::idempotency::spec::KeyScopeSpec),
    IdemKeySyntax(crate::families::idempotency::spec::KeySyntaxSpec),
    IdemEndpointScope(Box<crate::families::idempotency::spec::EndpointScopeSpec>),
    IdemExpiry(crate::families::idempotency::spec::ExpirySpec),

    // family: rate_limit
    RateLimitHeaders(crate::families::rate_limit::spec::RateLimitHeadersSpec),
    RateLimitStorm(crate::families::rate_limit::spec::RateLimitStormSpec),
    RateLimitRecovery(crate::families::rate_limit::spec::RateLimitRecoverySpec),
    RateLimitPartition(crate::families::rate_limit::spec::RateLimitPartitionSpec),

    // family: trace
    Trace(Box<crate::families::trace::spec::TraceSpec>),
    // family: webhook
    WebhookSender(
        &'static str,
        Box<crate::families::webhook::spec::WebhookSenderSpec>,
    ),
    WebhookSink(
        &'static str,
        Box<crate::families::webhook::spec::WebhookSinkSpec>,
    ),
    // family: client
    ClientRespectsRetryAfter(crate::families::client::spec::RespectsRetryAfterSpec),
    ClientExponentialBackoff(crate::families::client::spec::ExponentialBackoffSpec),
    ClientJitter(crate::families::client::spec::JitterSpec),
    ClientBounded(crate::families::client::spec::BoundedSpec),
    ClientNoRetryOn4xx(crate::families::client::spec::NoRetryOn4xxSpec),
    ClientRetry503Policy(crate::families::client::spec::Retry503PolicySpec),
    ClientIdempotencyKeys(crate::families::client::spec::IdempotencyKeysSpec),
    ClientSlowsBeforeLimit(crate::families::client::spec::SlowsBeforeLimitSpec),
    ClientRetryAmplification(crate::families::client::spec::RetryAmplificationSpec),
    ClientReplayIsSuccess(crate::families::client::spec::ReplayIsSuccessSpec),
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
            "idempotency.replay" => crate::families::idempotency::spec::ReplaySpec::deserialize(d)
                .map(CheckEntry::IdemReplay),
            "idempotency.distinct_keys" => {
                crate::families::idempotency::spec::DistinctKeysSpec::deserialize(d)
                    .map(CheckEntry::IdemDistinctKeys)
            }
            "idempotency.mismatch" => {
                crate::families::idempotency::spec::MismatchSpec::deserialize(d)
                    .map(CheckEntry::IdemMismatch)
            }
            "idempotency.concurrent" => {
                crate::families::idempotency::spec::ConcurrentSpec::deserialize(d)
                    .map(CheckEntry::IdemConcurrent)
            }
            "idempotency.lost_response" => {
                crate::families::idempotency::spec::LostResponseSpec::deserialize(d)
                    .map(CheckEntry::IdemLostResponse)
            }
            "idempotency.errors_not_cached" => {
                crate::families::idempotency::spec::ErrorsSpec::deserialize(d)
                    .map(CheckEntry::IdemErrorsNotCached)
            }
            "idempotency.in_flight" => {
                crate::families::idempotency::spec::InFlightSpec::deserialize(d)
                    .map(CheckEntry::IdemInFlight)
            }
            "idempotency.missing_key" => {
                crate::families::idempotency::spec::MissingKeySpec::deserialize(d)
                    .map(CheckEntry::IdemMissingKey)
            }
            "idempotency.key_scope" => {
                crate::families::idempotency::spec::KeyScopeSpec::deserialize(d)
                    .map(CheckEntry::IdemKeyScope)
            }
            "idempotency.key_syntax" => {
                crate::families::idempotency::spec::KeySyntaxSpec::deserialize(d)
                    .map(CheckEntry::IdemKeySyntax)
            }
            "idempotency.endpoint_scope" => {
                crate::families::idempotency::spec::EndpointScopeSpec::deserialize(d)
                    .map(|s| CheckEntry::IdemEndpointScope(Box::new(s)))
            }
            "idempotency.expiry" => crate::families::idempotency::spec::ExpirySpec::deserialize(d)
                .map(CheckEntry::IdemExpiry),

            // family: rate_limit
            "rate_limit.headers" => {
                crate::families::rate_limit::spec::RateLimitHeadersSpec::deserialize(d)
                    .map(CheckEntry::RateLimitHeaders)
            }
            "rate_limit.storm" => {
                crate::families::rate_limit::spec::RateLimitStormSpec::deserialize(d)
                    .map(CheckEntry::RateLimitStorm)
            }
            "rate_limit.recovery" => {
                crate::families::rate_limit::spec::RateLimitRecoverySpec::deserialize(d)
                    .map(CheckEntry::RateLimitRecovery)
            }
            "rate_limit.partition" => {
                crate::families::rate_limit::spec::RateLimitPartitionSpec::deserialize(d)
                    .map(CheckEntry::RateLimitPartition)
            }

            // family: trace
            k if crate::families::trace::spec::is_trace_kind(k) => {
                crate::families::trace::spec::TraceSpec::deserialize_kind(k, d)
                    .map(|t| CheckEntry::Trace(Box::new(t)))
            }

            // family: webhook
            k if crate::families::webhook::spec::static_kind(k).is_some() => {
                crate::families::webhook::spec::deserialize_entry(k, d)
            }

            // family: client
            "client.respects_retry_after" => {
                crate::families::client::spec::RespectsRetryAfterSpec::deserialize(d)
                    .map(CheckEntry::ClientRespectsRetryAfter)
            }
            "client.exponential_backoff" => {
                crate::families::client::spec::ExponentialBackoffSpec::deserialize(d)
                    .map(CheckEntry::ClientExponentialBackoff)
            }
            "client.jitter" => crate::families::client::spec::JitterSpec::deserialize(d)
                .map(CheckEntry::ClientJitter),
            "client.bounded" => crate::families::client::spec::BoundedSpec::deserialize(d)
                .map(CheckEntry::ClientBounded),
            "client.no_retry_on_4xx" => {
                crate::families::client::spec::NoRetryOn4xxSpec::deserialize(d)
                    .map(CheckEntry::ClientNoRetryOn4xx)
            }
            "client.retry_503_policy" => {
                crate::families::client::spec::Retry503PolicySpec::deserialize(d)
                    .map(CheckEntry::ClientRetry503Policy)
            }
            "client.idempotency_keys" => {
                crate::families::client::spec::IdempotencyKeysSpec::deserialize(d)
                    .map(CheckEntry::ClientIdempotencyKeys)
            }
            "client.slows_before_limit" => {
                crate::families::client::spec::SlowsBeforeLimitSpec::deserialize(d)
                    .map(CheckEntry::ClientSlowsBeforeLimit)
            }
            "client.retry_amplification" => {
                crate::families::client::spec::RetryAmplificationSpec::deserialize(d)
                    .map(CheckEntry::ClientRetryAmplification)
            }
            "client.replay_is_success" => {
                crate::families::client::spec::ReplayIsSuccessSpec::deserialize(d)
                    .map(CheckEntry::ClientReplayIsSuccess)
            }

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
