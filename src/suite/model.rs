//! The suite file as written: plain serde structs, unknown keys rejected,
//! positions kept (`Spanned`) wherever the plan may need to point back.
//!
//! Check entries are typed by their `kind`: `SuiteSeed` carries the kinds
//! read in a first pass (`read.rs`) down to each entry, which deserializes
//! straight into its family's spec struct. serde's internally tagged enums
//! would buffer the values and lose serde-saphyr's positions; the seed keeps
//! them, and needs no global state.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::defaults::{Inheritance, WithDefaults};
use crate::families::CheckSpec;
use crate::model::scalar::{DurationValue, Scalar};

/// A whole suite file (deserialized through [`SuiteSeed`]).
///
/// Its JSON Schema is derived (`suite::schema`): the `schemars` attributes
/// say what `SuiteSeed` does by hand (optional fields, unknown keys rejected,
/// check entries typed by `kind`).
#[derive(Debug, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SuiteFile {
    /// The suite's name: the JUnit testsuite and the classname prefix.
    #[schemars(with = "String")]
    pub suite: Spanned<String>,
    pub description: Option<String>,
    /// Free-form version of the suite (certification suites are versioned).
    pub version: Option<Scalar>,
    /// Suite variables, readable as `${var.NAME}`; `--var` overrides them.
    #[schemars(with = "BTreeMap<String, Scalar>", default)]
    pub vars: BTreeMap<String, Spanned<Scalar>>,
    pub target: Option<TargetSpec>,
    /// The checks, run in order; each entry's `kind` (default `steps`) says
    /// which fields it takes.
    #[schemars(schema_with = "super::schema::checks", default)]
    pub checks: Vec<CheckSpec>,
    /// The burst rehearsal, run after the checks (`families::load::spec`).
    #[schemars(schema_with = "super::schema::load", default)]
    pub load: Option<crate::families::load::spec::LoadSpec>,
    /// `strict: true`: a broken SHOULD property fails (as `--strict`).
    pub strict: Option<bool>,
    /// Which reading of the specs the defaults follow: `standard` (the
    /// default: only what RFCs, drafts and Standard Webhooks require) or
    /// `botix` (the seed checklist's contract).
    #[schemars(with = "Option<crate::model::profile::Profile>")]
    pub profile: Option<Spanned<crate::model::profile::Profile>>,
    /// The API's OpenAPI document: every response a check sees is judged
    /// against it (`docs/contract.md`).
    pub contract: Option<ContractSpec>,
    /// Per family (`idempotency`, `rate_limit`, ...), parameter values every
    /// check of that family inherits unless it sets the key itself
    /// (`suite::defaults`). Read in the first pass; kept here for the schema.
    #[schemars(schema_with = "super::schema::defaults", default)]
    pub defaults: (),
    /// The target's own signals, read by the checks that judge them: its
    /// logs (`observe.logs`, the `observability` family).
    pub observe: Option<crate::logs::spec::ObserveSpec>,
}

pub(super) const SUITE_FIELDS: &[&str] = &[
    "suite",
    "description",
    "version",
    "vars",
    "target",
    "checks",
    "load",
    "strict",
    "profile",
    "contract",
    "defaults",
    "observe",
];

/// Deserializes a [`SuiteFile`] whose check entries have the given kinds,
/// in document order (`None`: no `kind:`, a `steps` check).
pub struct SuiteSeed<'k, 'de> {
    pub kinds: &'k [Option<String>],
    /// The `defaults:` block, offered to every entry of its family.
    pub inherit: &'k Inheritance<'de>,
}

impl<'de> DeserializeSeed<'de> for SuiteSeed<'_, 'de> {
    type Value = SuiteFile;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<SuiteFile, D::Error> {
        d.deserialize_struct("SuiteFile", SUITE_FIELDS, self)
    }
}

impl<'de> Visitor<'de> for SuiteSeed<'_, 'de> {
    type Value = SuiteFile;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a suite: a mapping with `suite` and `checks`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SuiteFile, A::Error> {
        fn once<T, E: de::Error>(slot: &Option<T>, name: &'static str) -> Result<(), E> {
            match slot {
                Some(_) => Err(E::duplicate_field(name)),
                None => Ok(()),
            }
        }
        let mut suite = None;
        let mut description = None;
        let mut version = None;
        let mut vars = None;
        let mut target = None;
        let mut checks = None;
        let mut load = None;
        let mut strict = None;
        let mut profile = None;
        let mut contract = None;
        let mut defaults_seen = false;
        let mut observe = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "suite" => {
                    once(&suite, "suite")?;
                    suite = Some(map.next_value()?);
                }
                "description" => {
                    once(&description, "description")?;
                    description = Some(map.next_value()?);
                }
                "version" => {
                    once(&version, "version")?;
                    version = Some(map.next_value()?);
                }
                "vars" => {
                    once(&vars, "vars")?;
                    vars = Some(map.next_value()?);
                }
                "target" => {
                    once(&target, "target")?;
                    target = Some(map.next_value()?);
                }
                "checks" => {
                    once(&checks, "checks")?;
                    checks = Some(map.next_value_seed(ChecksSeed {
                        kinds: self.kinds,
                        inherit: self.inherit,
                    })?);
                }
                "load" => {
                    once(&load, "load")?;
                    load = Some(map.next_value()?);
                }
                "strict" => {
                    once(&strict, "strict")?;
                    strict = Some(map.next_value()?);
                }
                "profile" => {
                    once(&profile, "profile")?;
                    profile = Some(map.next_value()?);
                }
                "contract" => {
                    once(&contract, "contract")?;
                    contract = Some(map.next_value()?);
                }
                "observe" => {
                    once(&observe, "observe")?;
                    observe = Some(map.next_value()?);
                }
                "defaults" => {
                    // Read (and checked) by the first pass; each entry
                    // inherits from it while it is deserialized.
                    if defaults_seen {
                        return Err(de::Error::duplicate_field("defaults"));
                    }
                    defaults_seen = true;
                    map.next_value::<de::IgnoredAny>()?;
                }
                other => return Err(de::Error::unknown_field(other, SUITE_FIELDS)),
            }
        }
        Ok(SuiteFile {
            suite: suite.ok_or_else(|| de::Error::missing_field("suite"))?,
            description: description.flatten(),
            version: version.flatten(),
            vars: vars.unwrap_or_default(),
            target: target.flatten(),
            checks: checks.unwrap_or_default(),
            load: load.flatten(),
            strict: strict.flatten(),
            profile: profile.flatten(),
            contract: contract.flatten(),
            defaults: (),
            observe: observe.flatten(),
        })
    }
}

/// The `checks:` sequence: entry `i` is deserialized as kind `kinds[i]`.
struct ChecksSeed<'k, 'de> {
    kinds: &'k [Option<String>],
    inherit: &'k Inheritance<'de>,
}

impl<'de> DeserializeSeed<'de> for ChecksSeed<'_, 'de> {
    type Value = Vec<CheckSpec>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<CheckSpec>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ChecksSeed<'_, 'de> {
    type Value = Vec<CheckSpec>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of checks")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<CheckSpec>, E> {
        Ok(Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<CheckSpec>, A::Error> {
        let mut out = Vec::new();
        loop {
            let kind = self
                .kinds
                .get(out.len())
                .cloned()
                .flatten()
                .unwrap_or_else(|| "steps".to_owned());
            match seq.next_element_seed(EntrySeed {
                kind: &kind,
                inherit: self.inherit,
            })? {
                Some(c) => out.push(c),
                None => return Ok(out),
            }
        }
    }
}

/// One check entry of a known kind.
struct EntrySeed<'a, 'de> {
    kind: &'a str,
    inherit: &'a Inheritance<'de>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_, 'de> {
    type Value = CheckSpec;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<CheckSpec, D::Error> {
        let family = crate::families::family_of(self.kind);
        CheckSpec::deserialize_kind(
            self.kind,
            WithDefaults {
                inner: d,
                family,
                inherit: self.inherit,
            },
        )
    }
}

/// `contract:`: the OpenAPI document responses are judged against.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContractSpec {
    /// OpenAPI 3.0 or 3.1 document (YAML or JSON), relative to the suite
    /// file; its `$ref`s may name files in its folder.
    #[schemars(with = "String")]
    pub openapi: Spanned<String>,
    /// Paths that are not part of the API and are never judged against the
    /// document (an admin route, a test hook): an exact path, a template
    /// with `{name}` for one segment, or a prefix ending in `/*`
    /// (`/internal/*`). The path is the one requests are sent to, base path
    /// included. The side-effect counters a suite reads (`effects:`) are
    /// never judged, with or without this list.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub ignore: Vec<Spanned<String>>,
}

/// Where requests go and what every request carries.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// Absent or empty after interpolation: the embedded reference is started.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub base_url: Option<Spanned<String>>,
    /// Headers sent with every request of the suite (templates allowed).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub headers: BTreeMap<String, Spanned<Scalar>>,
    /// Headers that make a request come from a second tenant (another API
    /// key). Checks of cross-tenant properties (idempotency key scope,
    /// rate-limit partitioning) run only when this is set.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, Scalar>>")]
    pub second_tenant_headers: Option<BTreeMap<String, Spanned<Scalar>>>,
    /// Default per-request timeout for this suite (CLI `--timeout` overrides).
    #[serde(default)]
    #[schemars(with = "Option<DurationValue>")]
    pub timeout: Option<Spanned<DurationValue>>,
    /// The target's quota per credential, `REQUESTS/WINDOW` (`60/1m`,
    /// `10000/1d`), for a target that sends no rate-limit headers: tminus
    /// paces itself to it (CLI `--quota` overrides).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub rate_limit: Option<Spanned<String>>,
    /// Where sink checks' receiver listens and the URL the platform is
    /// given (CLI `--sink-listen` / `--sink-url` override).
    #[serde(default)]
    pub sink: Option<SinkSpec>,
    /// How the suite's credential is obtained instead of a fixed header:
    /// `{ oauth2: { token_url, client_id, client_secret, scope, audience } }`
    /// (docs/oauth.md). Its token goes to the target's own origin as
    /// `Authorization: Bearer`, so `headers` may not set `Authorization`.
    #[serde(default)]
    pub auth: Option<AuthSpec>,
    /// The second tenant's credential, as `auth` (another client): it
    /// replaces the suite's `auth` for the second tenant's requests, beside
    /// `second_tenant_headers`, which may then not set `Authorization`.
    #[serde(default)]
    pub second_tenant_auth: Option<AuthSpec>,
    /// How tminus's clients speak TLS to the target: a private CA, a
    /// client certificate (CLI `--cacert`, `--cert`, `--key`, `--insecure`
    /// override field by field).
    #[serde(default)]
    pub tls: Option<TlsSpec>,
    /// The forward proxy to reach the target through, `http://[user:pass@]host:port`
    /// (CLI `--proxy` overrides; without either, `HTTPS_PROXY`/`HTTP_PROXY`/
    /// `NO_PROXY` as curl reads them). Load goes through a proxy only with
    /// `--allow-remote-load`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub proxy: Option<Spanned<String>>,
    /// With no `base_url` (and no `--target`): which listener of the
    /// embedded reference the suite runs against: `main` (the default) or
    /// `client_certs`, a second listener that requires a client
    /// certificate (the run presents the one made for it). Ignored when
    /// the suite has a target.
    #[serde(default)]
    pub embedded: EmbeddedListener,
}

/// `target.embedded`: the embedded reference's listeners.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EmbeddedListener {
    /// https with a CA made for the run, no client certificate asked.
    #[default]
    Main,
    /// The same, but a connection without the client certificate made for
    /// the run is refused in the handshake (SEC-005's healthy reference).
    ClientCerts,
}

/// `target.tls`: file paths are relative to the suite file.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsSpec {
    /// PEM file of CA certificates to trust besides the platform's roots.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub ca: Option<Spanned<String>>,
    /// PEM file of the client certificate (chain) to present; may also hold
    /// the key.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub cert: Option<Spanned<String>>,
    /// PEM file of the client certificate's private key (its content is a
    /// secret: never printed).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub key: Option<Spanned<String>>,
    /// The name the server's certificate must be valid for, when the URL's
    /// host is not it (an IP address, a port-forward, a load balancer).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub server_name: Option<Spanned<String>>,
    /// The oldest TLS version tminus offers: `"1.2"` (the default) or
    /// `"1.3"`.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub min_version: Option<Spanned<String>>,
    /// Accept any server certificate (curl's `--insecure`). Every report
    /// says so in a warning; `transport.certificate` still judges the
    /// certificate.
    #[serde(default)]
    #[schemars(with = "Option<bool>")]
    pub insecure: Option<Spanned<bool>>,
}

/// `target.auth`: where the suite's bearer token comes from.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthSpec {
    /// OAuth 2.0 client credentials grant (RFC 6749 §4.4).
    pub oauth2: OAuth2Spec,
}

/// `auth.oauth2`: a client registered with a token endpoint (templates
/// allowed; each must be known when the suite is planned).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuth2Spec {
    /// The token endpoint: https (http only to a loopback address), any
    /// origin; the client secret is sent there and nowhere else.
    #[schemars(with = "String")]
    pub token_url: Spanned<String>,
    #[schemars(with = "String")]
    pub client_id: Spanned<String>,
    /// Give it as `${secret.NAME}`: it is redacted from every output.
    #[schemars(with = "String")]
    pub client_secret: Spanned<String>,
    /// Space-delimited scopes to ask for (RFC 6749 §3.3).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub scope: Option<Spanned<String>>,
    /// The API the token is for (`audience`, the Auth0/Okta parameter).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub audience: Option<Spanned<String>>,
}

/// `target.sink`: `{ listen: ADDR:PORT, url: URL }` (templates allowed).
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct SinkSpec {
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub listen: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub url: Option<Spanned<String>>,
}
