//! YAML spec of the auth kind (`auth.sandbox_isolated`, catalogue OBS-004).
//! The suite's target is the sandbox (its base URL and headers are the
//! sandbox credential); `production:` names the other environment, its
//! credential (optional, from the suite's secrets) and a side-effect counter
//! there (optional).

use std::collections::BTreeMap;

use serde_saphyr::Spanned;

use crate::model::scalar::Scalar;
use crate::spec::kinds::{check_spec, family_kinds, must, param, DefaultValue as D, Kind};
use crate::spec::request::{CounterSpec, RequestSpec};

/// Every default of the family: serde applies these, `KINDS` prints them.
pub mod defaults {
    /// Production is read, never written, unless the suite says so.
    pub const ALLOW_PRODUCTION_WRITES: bool = false;
}

use defaults as d;

fn allow_production_writes() -> bool {
    d::ALLOW_PRODUCTION_WRITES
}

/// The other environment: where it is, its own credential and what counts
/// its side effects.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct ProductionSpec {
    /// Production's base URL; empty or absent: the embedded production twin
    /// (a run against the embedded reference only).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub base_url: Option<Spanned<String>>,
    /// Production's own credential (e.g. `Authorization: "Bearer
    /// ${secret.PROD_KEY}"`): when given, it must be refused by the sandbox.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, Scalar>>")]
    pub headers: Option<BTreeMap<String, Spanned<Scalar>>>,
    /// A counter of production's side effects, read before and after the
    /// sandbox credential is sent there (a GET; relative to production).
    #[serde(default)]
    pub effects: Option<CounterSpec>,
}

check_spec!(
    /// `auth.sandbox_isolated`: the sandbox credential refused by production,
    /// nothing created there, the production credential refused by the
    /// sandbox (OBS-004).
    SandboxIsolatedSpec {
        /// Requests sent to both environments (paths, joined to each base
        /// URL); GET or HEAD unless `allow_production_writes`.
        pub probes: Vec<RequestSpec>,
        pub production: ProductionSpec,
        /// Lets a probe with a mutating method (POST, PUT, PATCH, DELETE)
        /// go to production.
        #[serde(default = "allow_production_writes")]
        #[schemars(with = "bool")]
        pub allow_production_writes: bool,
    }
);

family_kinds!(
    /// An `auth.*` check as written.
    AuthSpec {
        "auth.sandbox_isolated" => SandboxIsolated(Box<SandboxIsolatedSpec>),
    }
);

/// The family's documentation (title, intro, per-kind details).
pub const DOC: &str = include_str!("README.md");

/// Kinds of the auth family.
pub const KINDS: &[Kind] = &[Kind {
    name: "auth.sandbox_isolated",
    summary: "the sandbox credential is refused by production (401/403) and creates nothing there; the production credential is refused by the sandbox; production gets read-only probes unless writes are allowed (OBS-004)",
    params: &[
        param(
            "probes",
            D::Required,
            "requests (paths) sent to both environments; GET or HEAD unless `allow_production_writes`",
        ),
        param(
            "production.base_url",
            D::Text("the embedded production twin"),
            "production's base URL; empty or absent: the embedded reference's production twin (a run against the embedded reference only)",
        ),
        param(
            "production.headers",
            D::Absent,
            "production's own credential (from `${secret.NAME}`); when given, the sandbox must refuse it",
        ),
        param(
            "production.effects",
            D::Absent,
            "a side-effect counter on production (`{ request, value }`, a GET), read around the sandbox credential's probes",
        ),
        param(
            "allow_production_writes",
            D::Bool(d::ALLOW_PRODUCTION_WRITES),
            "let probes with POST, PUT, PATCH or DELETE go to production",
        ),
    ],
    properties: &[
        must(
            "sandbox_refused_by_production",
            "OBS-004 (seed #5: a sandbox with fully isolated keys and domains)",
            "every probe with the sandbox credential gets 401 or 403 from production; a 2xx fails; a 5xx, a timeout or any other answer is inconclusive; not exercised when the sandbox refuses its own credential or production serves the probe without any credential",
        ),
        must(
            "nothing_created",
            "OBS-004 (seed #5)",
            "production's side-effect counter did not move while the sandbox credential was sent there; not judged (said so) without `production.effects`",
        ),
        must(
            "production_refused_by_sandbox",
            "OBS-004 (seed #5)",
            "every probe with the production credential gets 401 or 403 from the sandbox; not judged without `production.headers`; not exercised when production refuses its own credential or the sandbox serves the probe without any credential",
        ),
    ],
}];

#[cfg(test)]
mod tests {
    use super::KINDS;
    use crate::families::CheckPlan;
    use crate::spec::kinds::testing::*;

    /// The table's defaults are the planned ones.
    #[test]
    fn table_defaults_are_the_planned_ones() {
        assert_covers(KINDS, &["auth.sandbox_isolated"]);
        let CheckPlan::Auth(p) = plan_check(
            "auth.sandbox_isolated",
            "    probes: [{ path: /x }]\n    production: {}\n",
        ) else {
            panic!("not an auth plan");
        };
        let crate::families::auth::plan::AuthPlan::SandboxIsolated(s) = p.as_ref();
        assert_planned(
            KINDS,
            "auth.sandbox_isolated",
            &[
                ("production.base_url", opt(&s.production.base_url)),
                ("production.headers", None),
                ("production.effects", None),
                ("allow_production_writes", word(s.allow_production_writes)),
            ],
        );
    }
}
