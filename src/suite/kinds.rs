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

        // family: rate_limit

        // family: trace

        // family: webhook
        super::webhook::SENDER_INFO,
        super::webhook::SINK_INFO,
        // family: client

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

    // family: rate_limit

    // family: trace

    // family: webhook
    WebhookSender(&'static str, Box<super::webhook::WebhookSenderSpec>),
    WebhookSink(&'static str, Box<super::webhook::WebhookSinkSpec>),
    // family: client

    // family: end
}

impl CheckEntry {
    /// The kind's name as written in suites (`steps`, `idempotency.replay`, ...).
    pub fn kind_name(&self) -> &'static str {
        match self {
            CheckEntry::Steps(_) => "steps",
            // family: idempotency

            // family: rate_limit

            // family: trace

            // family: webhook
            CheckEntry::WebhookSender(k, _) | CheckEntry::WebhookSink(k, _) => k,
            // family: client

            // family: end
        }
    }

    pub fn common(&self) -> &dyn Common {
        match self {
            CheckEntry::Steps(s) => s,
            // family: idempotency

            // family: rate_limit

            // family: trace

            // family: webhook
            CheckEntry::WebhookSender(_, s) => s.as_ref(),
            CheckEntry::WebhookSink(_, s) => s.as_ref(),
            // family: client

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

            // family: rate_limit

            // family: trace

            // family: webhook
            k if super::webhook::static_kind(k).is_some() => {
                super::webhook::deserialize_entry(k, d)
            }

            // family: client

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
