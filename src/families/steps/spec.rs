//! `kind: steps` as written: requests in order with expectations and captures.

use crate::suite::kinds::{check_spec, family_kinds, KindInfo};
use crate::suite::request::StepSpec;

check_spec!(
    /// `kind: steps` (the default): requests in order with expectations.
    StepsCheckSpec {
        pub steps: Vec<StepSpec>,
    }
);

family_kinds!(
    /// The generic family has one kind.
    StepsSpec {
        "steps" => Steps(StepsCheckSpec),
    }
);

/// Kinds of the generic family.
pub const KINDS: &[KindInfo] = &[KindInfo {
    name: "steps",
    summary: "a generic multi-step case: requests in order, expectations, captures",
    params: &[(
        "steps",
        "required",
        "list of {name, request, expect, capture}; see README \"Suite grammar\"",
    )],
}];
