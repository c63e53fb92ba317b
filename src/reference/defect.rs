//! The catalogue of deliberate defects the reference integration can be switched into.
//!
//! Every defect is one row in the `defects!` table below: its variant, its kebab-case
//! name (what `--defect NAME` and suites use) and a one-line summary. Adding a defect
//! is one row here plus its behaviour behind `state.has(Defect::X)`; the compiler then
//! points at every exhaustive `match` that needs an arm.

use std::fmt;
use std::str::FromStr;

macro_rules! defects {
    ($( $(#[$meta:meta])* $variant:ident => $name:literal, $summary:literal; )+) => {
        /// A property of the reference integration that can be broken on purpose, so
        /// tests can prove the check meant to catch it really fails.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Defect {
            $( $(#[$meta])* $variant, )+
        }

        impl Defect {
            const ALL: &'static [Defect] = &[ $( Defect::$variant, )+ ];

            /// The kebab-case name used on the command line and in suites.
            pub fn name(&self) -> &'static str {
                match self { $( Defect::$variant => $name, )+ }
            }

            /// One line saying what breaks.
            pub fn summary(&self) -> &'static str {
                match self { $( Defect::$variant => $summary, )+ }
            }
        }
    };
}

defects! {
    /// Auth accepts any non-empty Bearer token; the token itself becomes the tenant.
    AcceptAnyKey => "accept-any-key",
        "any non-empty Bearer token is accepted instead of 401 INVALID_API_KEY";
    /// Error responses (status >= 400) lose their correlation headers.
    NoTraceId => "no-trace-id",
        "Trace-Id and X-Request-Id are missing on error responses (status >= 400)";
    /// List cursors become offsets that skip one item at every page boundary.
    BrokenPagination => "broken-pagination",
        "next_cursor is an offset that skips one item per page boundary, so walking pages loses data";
    // family: idempotency

    // family: rate_limit

    // family: trace

    // family: webhook

    // family: client

    // family: load
    /// Every Nth API request (`ReferenceConfig.stall_every`) stalls for `stall_for`.
    Stall => "stall",
        "every Nth API request stalls (default every 200th, for 1 s), so latency tails and coordinated omission show";

    // family: end
}

impl Defect {
    /// Every defect, in table order.
    pub fn all() -> &'static [Defect] {
        Self::ALL
    }
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Defect {
    type Err = String;

    /// Parses a kebab-case name. The error lists every valid name and, for a near
    /// miss (edit distance under 3), suggests the intended one.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(d) = Self::all().iter().find(|d| d.name() == s) {
            return Ok(*d);
        }
        let valid: Vec<&str> = Self::all().iter().map(|d| d.name()).collect();
        let suggestion = valid
            .iter()
            .map(|v| (strsim::levenshtein(s, v), *v))
            .filter(|(dist, _)| *dist < 3)
            .min()
            .map(|(_, v)| format!(" (did you mean `{v}`?)"))
            .unwrap_or_default();
        Err(format!(
            "unknown defect `{s}`{suggestion}; valid defects: {}",
            valid.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for d in Defect::all() {
            assert!(seen.insert(d.name()), "duplicate name {}", d.name());
            assert_eq!(d.name().parse::<Defect>().unwrap(), *d);
            assert!(!d.summary().is_empty());
        }
    }

    #[test]
    fn unknown_name_lists_valid_ones_and_suggests() {
        let err = "accept-any-kye".parse::<Defect>().unwrap_err();
        assert!(err.contains("did you mean `accept-any-key`"), "{err}");
        assert!(err.contains("broken-pagination"), "{err}");
    }
}
