//! The rules `contract diff` classifies changes by: one row per rule, its
//! level and its oasdiff counterpart. This table is the one source of the
//! rule list in docs/contract.md (a test compares them), of the JUnit
//! testcases (one per rule) and of the corpus's expectations
//! (tests/fixtures/contract-diff/).
//!
//! Levels follow what a client written against OLD meets: a request it
//! sends is refused, or a response it reads changed shape (ERR); only some
//! clients notice (a strict deserialiser, a generated SDK's names) (WARN);
//! nobody does (INFO). Where oasdiff rates a rule otherwise the summary
//! says so.

use super::Level;

/// One rule.
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable id, oasdiff's spelling where the rule means the same.
    pub id: &'static str,
    pub level: Level,
    /// oasdiff's check id for the same change (`""`: none).
    pub oasdiff: &'static str,
    /// What the change is, one line.
    pub summary: &'static str,
}

const fn r(id: &'static str, level: Level, oasdiff: &'static str, summary: &'static str) -> Rule {
    Rule {
        id,
        level,
        oasdiff,
        summary,
    }
}

use Level::{Err, Info, Warn};

/// Every rule, grouped by what it is about (one line each: a table).
#[rustfmt::skip]
pub const RULES: &[Rule] = &[
    // Operations and paths.
    r("api-removed-without-deprecation", Err, "api-removed-without-deprecation", "an operation was removed without being deprecated first"),
    r("api-removed-with-deprecation", Warn, "api-removed-with-deprecation", "a deprecated operation was removed (oasdiff: INFO; a client may still call it)"),
    r("endpoint-added", Info, "endpoint-added", "an operation was added"),
    r("endpoint-deprecated", Info, "endpoint-deprecated", "an operation was marked deprecated"),
    r("api-path-parameter-renamed", Warn, "", "a path parameter was renamed: the URL is the same, generated clients' argument names change"),
    r("api-operation-id-removed", Warn, "api-operation-id-removed", "an operationId was changed or removed: generated clients' method names change (oasdiff: ERR)"),
    // Parameters.
    r("new-required-request-parameter", Err, "new-required-request-parameter", "a required parameter was added"),
    r("new-optional-request-parameter", Info, "new-optional-request-parameter", "an optional parameter was added"),
    r("request-parameter-removed", Warn, "request-parameter-removed", "a parameter was removed: a client that sends it may be refused"),
    r("request-parameter-became-required", Err, "request-parameter-became-required", "an optional parameter became required"),
    r("request-parameter-became-optional", Info, "request-parameter-became-optional", "a required parameter became optional"),
    r("request-parameter-type-changed", Err, "request-parameter-type-changed", "a parameter's type changed to one that refuses values it accepted"),
    r("request-parameter-type-generalized", Info, "request-parameter-type-generalized", "a parameter's type was widened (integer to number, a type added)"),
    r("request-parameter-became-enum", Err, "request-parameter-became-enum", "a parameter was restricted to a list of values"),
    r("request-parameter-enum-value-removed", Err, "request-parameter-enum-value-removed", "a value was removed from a parameter's enum"),
    r("request-parameter-enum-value-added", Info, "request-parameter-enum-value-added", "a value was added to a parameter's enum"),
    r("request-parameter-became-not-nullable", Err, "request-parameter-became-not-nullable", "a parameter no longer accepts null"),
    r("request-parameter-became-nullable", Info, "request-parameter-became-nullable", "a parameter now accepts null"),
    r("request-parameter-max-length-decreased", Err, "request-parameter-max-length-decreased", "a parameter's maxLength was lowered or set"),
    r("request-parameter-min-length-increased", Err, "request-parameter-min-length-increased", "a parameter's minLength was raised or set"),
    r("request-parameter-max-decreased", Err, "request-parameter-max-decreased", "a parameter's maximum (or exclusiveMaximum) was lowered or set"),
    r("request-parameter-min-increased", Err, "request-parameter-min-increased", "a parameter's minimum (or exclusiveMinimum) was raised or set"),
    r("request-parameter-max-items-decreased", Err, "request-parameter-max-items-decreased", "a parameter's maxItems was lowered or set"),
    r("request-parameter-min-items-increased", Err, "request-parameter-min-items-increased", "a parameter's minItems was raised or set"),
    r("request-parameter-pattern-added", Err, "request-parameter-pattern-added", "a pattern was added to a parameter"),
    r("request-parameter-pattern-changed", Warn, "request-parameter-pattern-changed", "a parameter's pattern changed (whether it accepts less cannot be told)"),
    // Request bodies.
    r("request-body-added-required", Err, "request-body-added-required", "a required request body was added"),
    r("request-body-added-optional", Info, "request-body-added-optional", "an optional request body was added"),
    r("request-body-removed", Warn, "", "the request body was removed: a client that sends one may be refused"),
    r("request-body-became-required", Err, "request-body-became-required", "an optional request body became required"),
    r("request-body-became-optional", Info, "request-body-became-optional", "a required request body became optional"),
    r("request-body-media-type-removed", Err, "request-body-media-type-removed", "a request media type is no longer accepted"),
    r("request-body-media-type-added", Info, "request-body-media-type-added", "a request media type was added"),
    // Request properties (the body itself is the property with no name).
    r("new-required-request-property", Err, "new-required-request-property", "a required request property was added"),
    r("new-optional-request-property", Info, "new-optional-request-property", "an optional request property was added"),
    r("request-property-removed", Warn, "request-property-removed", "a request property was removed: a strict server refuses clients that still send it"),
    r("request-property-became-required", Err, "request-property-became-required", "an optional request property became required"),
    r("request-property-became-optional", Info, "request-property-became-optional", "a required request property became optional"),
    r("request-property-type-changed", Err, "request-property-type-changed", "a request property's type changed to one that refuses values it accepted"),
    r("request-property-type-generalized", Info, "request-property-type-generalized", "a request property's type was widened (integer to number, a type added)"),
    r("request-property-became-enum", Err, "request-property-became-enum", "a request property was restricted to a list of values"),
    r("request-property-enum-value-removed", Err, "request-property-enum-value-removed", "a value was removed from a request property's enum (the request enum narrowed)"),
    r("request-property-enum-value-added", Info, "request-property-enum-value-added", "a value was added to a request property's enum"),
    r("request-property-became-not-nullable", Err, "request-property-became-not-nullable", "a request property no longer accepts null"),
    r("request-property-became-nullable", Info, "request-property-became-nullable", "a request property now accepts null"),
    r("request-property-max-length-decreased", Err, "request-property-max-length-decreased", "a request property's maxLength was lowered or set"),
    r("request-property-min-length-increased", Err, "request-property-min-length-increased", "a request property's minLength was raised or set"),
    r("request-property-max-decreased", Err, "request-property-max-decreased", "a request property's maximum (or exclusiveMaximum) was lowered or set"),
    r("request-property-min-increased", Err, "request-property-min-increased", "a request property's minimum (or exclusiveMinimum) was raised or set"),
    r("request-property-max-items-decreased", Err, "request-property-max-items-decreased", "a request property's maxItems was lowered or set"),
    r("request-property-min-items-increased", Err, "request-property-min-items-increased", "a request property's minItems was raised or set"),
    r("request-property-pattern-added", Err, "request-property-pattern-added", "a pattern was added to a request property"),
    r("request-property-pattern-changed", Warn, "request-property-pattern-changed", "a request property's pattern changed (whether it accepts less cannot be told)"),
    r("request-property-one-of-removed", Err, "request-body-one-of-removed", "a oneOf/anyOf alternative a client may send was removed"),
    r("request-property-one-of-added", Info, "request-body-one-of-added", "a oneOf/anyOf alternative was added to a request"),
    // Responses.
    r("response-success-status-removed", Err, "response-success-status-removed", "a success (2xx) status was removed"),
    r("response-non-success-status-removed", Warn, "response-non-success-status-removed", "an error status (or `default`) was removed: clients that handle it see another"),
    r("response-success-status-added", Info, "response-success-status-added", "a success status was added"),
    r("response-non-success-status-added", Info, "response-non-success-status-added", "an error status was added"),
    r("response-media-type-removed", Err, "response-media-type-removed", "a response media type is no longer sent"),
    r("response-media-type-added", Info, "response-media-type-added", "a response media type was added"),
    r("required-response-header-removed", Err, "required-response-header-removed", "a required response header was removed"),
    r("optional-response-header-removed", Info, "optional-response-header-removed", "an optional response header was removed"),
    r("response-header-became-optional", Err, "response-header-became-optional", "a required response header became optional"),
    r("response-header-added", Info, "response-header-added", "a response header was added"),
    r("response-header-type-changed", Err, "response-header-type-changed", "a response header's type changed to one OLD's clients may not read"),
    // Response properties (the body itself is the property with no name).
    r("response-required-property-removed", Err, "response-required-property-removed", "a required response property was removed"),
    r("response-property-renamed", Err, "", "a required response property was renamed (one removed, one with the same schema added)"),
    r("response-optional-property-removed", Warn, "response-optional-property-removed", "an optional response property was removed (oasdiff: INFO; a client reading it gets nothing)"),
    r("response-property-became-optional", Err, "response-property-became-optional", "a required response property became optional"),
    r("response-property-became-required", Info, "response-property-became-required", "an optional response property became required"),
    r("response-required-property-added", Info, "response-required-property-added", "a required response property was added"),
    r("response-optional-property-added", Info, "response-optional-property-added", "an optional response property was added"),
    r("response-property-type-changed", Err, "response-property-type-changed", "a response property's type changed to one OLD's clients may not read"),
    r("response-property-type-specialized", Info, "response-property-type-specialized", "a response property's type was narrowed (number to integer, a type removed)"),
    r("response-property-enum-value-added", Warn, "response-property-enum-value-added", "a value was added to a response property's enum (the response enum widened)"),
    r("response-property-enum-value-removed", Info, "response-property-enum-value-removed", "a value was removed from a response property's enum"),
    r("response-property-became-nullable", Err, "response-property-became-nullable", "a response property may now be null"),
    r("response-property-became-not-nullable", Info, "response-property-became-not-nullable", "a response property is no longer null"),
    r("response-property-max-length-increased", Warn, "response-property-max-length-increased", "a response property's maxLength was raised or removed"),
    r("response-property-min-length-decreased", Warn, "response-property-min-length-decreased", "a response property's minLength was lowered or removed"),
    r("response-property-max-increased", Warn, "response-property-max-increased", "a response property's maximum was raised or removed"),
    r("response-property-min-decreased", Warn, "response-property-min-decreased", "a response property's minimum was lowered or removed"),
    r("response-property-max-items-increased", Warn, "response-property-max-items-increased", "a response array's maxItems was raised or removed"),
    r("response-property-min-items-decreased", Warn, "response-property-min-items-decreased", "a response array's minItems was lowered or removed"),
    r("response-property-one-of-added", Err, "response-body-one-of-added", "a oneOf/anyOf alternative the server may now send was added"),
    r("response-property-one-of-removed", Info, "response-body-one-of-removed", "a oneOf/anyOf alternative of a response was removed"),
    // Security.
    r("api-security-added", Err, "api-security-added", "an operation that needed no credentials now needs them"),
    r("api-security-updated", Err, "api-security-updated", "a security requirement OLD's clients met is no longer accepted (scheme replaced)"),
    r("api-security-scope-added", Err, "api-security-scope-added", "a scope was added to an operation's security requirement"),
    r("api-security-removed", Info, "api-security-removed", "an operation now accepts calls without credentials"),
    r("api-security-alternative-added", Info, "", "another way to authenticate was added, the old ones still accepted"),
    r("api-security-component-type-changed", Err, "api-security-component-type-changed", "a security scheme now sends credentials another way (type, `in`, name or HTTP scheme)"),
    r("api-security-component-added", Info, "api-security-component-added", "a security scheme was added to components"),
];

/// The rule named `id`, if there is one.
pub fn find(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// The rule named `id`. Every id the diff emits is in [`RULES`] (the
/// corpus test meets every emitting branch), so a typo is a bug.
pub fn rule(id: &str) -> &'static Rule {
    RULES
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("contract diff rule `{id}` is not in RULES"))
}

/// The rule table as docs/contract.md shows it (`tminus contract rules`
/// prints it; a test holds the page to it).
pub fn markdown() -> String {
    let mut out = String::from("| rule | level | oasdiff | the change |\n|---|---|---|---|\n");
    for r in RULES {
        let oasdiff = if r.oasdiff.is_empty() {
            "none".to_owned()
        } else if r.oasdiff == r.id {
            "same id".to_owned()
        } else {
            format!("`{}`", r.oasdiff)
        };
        out.push_str(&format!(
            "| `{}` | {} | {oasdiff} | {} |\n",
            r.id, r.level, r.summary
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_kebab_case() {
        let mut seen = std::collections::BTreeSet::new();
        for r in RULES {
            assert!(seen.insert(r.id), "{} twice", r.id);
            assert!(
                r.id.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{}",
                r.id
            );
        }
    }
}
