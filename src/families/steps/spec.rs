//! `kind: steps` as written: requests in order with expectations and captures.

use crate::spec::kinds::{check_spec, family_kinds, must, param, DefaultValue as D, Kind};
use crate::spec::request::StepSpec;

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

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the generic family.
pub const KINDS: &[Kind] = &[Kind {
    name: "steps",
    summary: "a generic multi-step case: requests in order, expectations, captures",
    params: &[param(
        "steps",
        D::Required,
        "list of `{name, request, expect, capture}`, run in order",
    )],
    properties: &[must(
        "steps",
        "the suite's own `expect:` blocks (its author states the contract)",
        "every step's expectations and captures hold; an error when no step expects or captures anything",
    )],
}];

#[cfg(test)]
mod tests {
    use super::KINDS;
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;

    /// `steps` has no defaulted parameter; the grammar's defaults (method
    /// GET, ...) are the README's.
    #[test]
    fn table_defaults_are_the_planned_ones() {
        assert_covers(KINDS, &["steps"]);
        let CheckPlan::Steps(p) = plan_check("steps", "    steps: [{ request: { path: /a } }]\n")
        else {
            panic!("not a steps plan");
        };
        assert_eq!(p.steps.len(), 1);
        assert_planned(KINDS, "steps", &[]);
    }
}
