//! YAML specs of the `contract.*` kinds: checks judged against the suite's
//! `contract: { openapi: FILE }` document (which they require).

use crate::spec::kinds::{check_spec, family_kinds, must, param, should, DefaultValue as D, Kind};
use crate::spec::request::RequestSpec;

check_spec!(
    /// `contract.deprecation`: a request to an operation the document marks
    /// `deprecated: true` is answered with `Deprecation` and, when the
    /// document gives `x-sunset`, `Sunset` (CON-005).
    DeprecationSpec {
        /// A request to the deprecated operation (answered 2xx or 3xx).
        pub request: RequestSpec,
    }
);

family_kinds!(
    /// A `contract.*` check as written.
    ContractSpec {
        "contract.deprecation" => Deprecation(DeprecationSpec),
    }
);

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the contract family.
pub const KINDS: &[Kind] = &[Kind {
    name: "contract.deprecation",
    summary: "a deprecated operation of the suite's OpenAPI document answers with a `Deprecation` date and, when the document gives `x-sunset`, that `Sunset` date (CON-005)",
    params: &[param(
        "request",
        D::Required,
        "a request to an operation the document marks `deprecated: true`",
    )],
    properties: &[
        should(
            "deprecation",
            "RFC 9745 §2; seed checklist #4 (a deprecation plan clients can see)",
            "the answer carries a Deprecation header",
        )
        .botix_must(),
        must(
            "deprecation_valid",
            "RFC 9745 §2.1 (Deprecation = sf-date, RFC 9651 §3.3.7)",
            "a Deprecation header sent is a structured-field date (`@1688169599`); skipped when none is sent",
        ),
        should(
            "sunset",
            "RFC 8594 §3; RFC 9745 §4 (Sunset not earlier than Deprecation); seed checklist #4 (a grace period with a date)",
            "when the document gives `x-sunset`, the answer carries Sunset with that date (any time of the day for a date alone), not earlier than its Deprecation date; skipped when neither the document nor the answer gives one",
        )
        .botix_must(),
        must(
            "sunset_valid",
            "RFC 8594 §3 (Sunset = HTTP-date, RFC 9110 §5.6.7)",
            "a Sunset header sent is an HTTP-date; skipped when none is sent",
        ),
    ],
}];

#[cfg(test)]
mod tests {
    use super::KINDS;
    use crate::spec::kinds::testing::*;

    #[test]
    fn the_table_lists_every_kind() {
        assert_covers(KINDS, &["contract.deprecation"]);
    }
}
