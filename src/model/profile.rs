//! Which reading of the specs a suite's defaults follow (`profile:`).
//!
//! `standard` (the default) expects only what the RFCs, IETF drafts and
//! Standard Webhooks require: vendor habits are off or SHOULD. `botix` is the
//! seed checklist's contract (a BOTIX-like API: error codes in 429 bodies,
//! `Idempotent-Replayed: 1`, 401 for an unauthenticated probe). A family reads
//! its profile-dependent defaults through [`Profile`]; `docs/checks.md` shows
//! both values.

use std::fmt;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Only what the RFCs, drafts and Standard Webhooks require.
    #[default]
    Standard,
    /// The seed checklist's contract (BOTIX).
    Botix,
}

impl Profile {
    pub const ALL: [Profile; 2] = [Profile::Standard, Profile::Botix];

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Standard => "standard",
            Profile::Botix => "botix",
        }
    }

    /// `standard` or `botix` value of a profile-dependent default.
    pub fn pick<T>(self, standard: T, botix: T) -> T {
        match self {
            Profile::Standard => standard,
            Profile::Botix => botix,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
