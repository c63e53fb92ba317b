//! The vocabulary every family uses to declare its kinds: `Kind` and its
//! `Param` rows with typed `DefaultValue`s (what `tminus checks` and
//! `docs/checks.md` print, from the same constants the plan applies), the
//! common fields of a check entry (`check_spec!`), and `family_kinds!`, which
//! turns a family's list of `"kind.name" => Variant(Spec)` into its nested
//! enum with exhaustive `kind_name`, `common` and by-name deserialization.
//!
//! Which family a kind belongs to, and the seed that deserializes each entry
//! with its positions intact, live in `families` (the registry) and
//! `suite::read`.

use std::fmt;
use std::time::Duration;

use serde_saphyr::Spanned;

use crate::model::profile::Profile;
use crate::model::scalar::StatusPattern;
pub use crate::outcome::Severity;

/// A parameter's default, typed, so the value a family's plan applies and the
/// value `tminus checks` prints come from one constant (each family keeps
/// them in `spec::defaults`), and a unit test per family plans every kind
/// with only its required fields and compares the planned values to the
/// table (`testing::assert_planned`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// The suite must give it.
    Required,
    /// Optional without a default: absent means not used (printed `none`).
    Absent,
    /// A default described in words because it is derived from other values
    /// (`the policy's w, else 1h`); the family test does not compare it.
    Text(&'static str),
    Str(&'static str),
    Int(u64),
    Float(f64),
    Bool(bool),
    Duration(Duration),
    /// A list of durations (`[30s, 5m]`).
    Durations(&'static [Duration]),
    /// A share, printed as a percentage (`90%`).
    Share(f64),
    /// A status set as a suite writes it (`2xx`, `[400, 401]`).
    Statuses(&'static [StatusPattern]),
    /// A list of words (`[Trace-Id, traceresponse]`, `[]`).
    List(&'static [&'static str]),
    /// A list of status codes (`[400, 401]`).
    Codes(&'static [u16]),
    /// An empty map (`{}`).
    EmptyMap,
    /// A default that depends on the suite's `profile:` (`model::profile`).
    Profiled {
        standard: &'static DefaultValue,
        botix: &'static DefaultValue,
    },
}

impl DefaultValue {
    /// Whether the family tests compare it with the planned value.
    pub fn is_typed(&self) -> bool {
        match self {
            DefaultValue::Profiled { standard, .. } => standard.is_typed(),
            d => !matches!(d, DefaultValue::Required | DefaultValue::Text(_)),
        }
    }

    /// The value under `profile`.
    pub fn for_profile(&self, profile: crate::model::profile::Profile) -> &DefaultValue {
        match self {
            DefaultValue::Profiled { standard, botix } => profile.pick(*standard, *botix),
            d => d,
        }
    }

    /// The default as a suite would write it, as JSON (the suite schema's
    /// `default`); `None` when there is no single value to show.
    pub fn to_json(&self) -> Option<serde_json::Value> {
        use serde_json::{json, Value};
        let status = |p: &StatusPattern| match p {
            StatusPattern::Exact(code) => json!(code),
            StatusPattern::Class(_) => json!(p.to_string()),
        };
        Some(match self {
            DefaultValue::Required | DefaultValue::Absent | DefaultValue::Text(_) => return None,
            DefaultValue::Str(s) => json!(s),
            DefaultValue::Int(n) => json!(n),
            DefaultValue::Float(x) => json!(x),
            DefaultValue::Bool(b) => json!(b),
            DefaultValue::Duration(d) => json!(show_duration(*d)),
            DefaultValue::Durations(l) => l.iter().map(|d| json!(show_duration(*d))).collect(),
            DefaultValue::Share(x) => json!(show_share(*x)),
            DefaultValue::Statuses([one]) => status(one),
            DefaultValue::Statuses(many) => many.iter().map(status).collect(),
            DefaultValue::List(l) => json!(l),
            DefaultValue::Codes(c) => json!(c),
            DefaultValue::EmptyMap => Value::Object(Default::default()),
            // The schema shows the default of a suite without `profile:`.
            DefaultValue::Profiled { standard, .. } => return standard.to_json(),
        })
    }
}

/// A duration as a suite would write it: `150ms`, `10s`, `2m`, `1h`.
pub fn show_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        format!("{}us", d.as_micros())
    } else if !ms.is_multiple_of(1000) {
        format!("{ms}ms")
    } else {
        let s = d.as_secs();
        match s {
            0 => "0s".into(),
            s if s.is_multiple_of(3600) => format!("{}h", s / 3600),
            s if s.is_multiple_of(60) => format!("{}m", s / 60),
            s => format!("{s}s"),
        }
    }
}

/// A status set as a suite would write it: `2xx`, `[400, 422]`.
pub fn show_statuses(s: &[StatusPattern]) -> String {
    match s {
        [one] => one.to_string(),
        many => show_list(many.iter().map(|p| p.to_string())),
    }
}

/// A list as a suite would write it (flow style): `[a, b]`, `[]`.
pub fn show_list<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// A share as a percentage: `90%`, `0.5%`.
pub fn show_share(x: f64) -> String {
    let p = x * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{}%", p.round() as i64)
    } else {
        format!("{p}%")
    }
}

impl fmt::Display for DefaultValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefaultValue::Required => f.write_str("required"),
            DefaultValue::Absent => f.write_str("none"),
            DefaultValue::Text(t) | DefaultValue::Str(t) => f.write_str(t),
            DefaultValue::Int(n) => write!(f, "{n}"),
            DefaultValue::Float(x) => write!(f, "{x:?}"),
            DefaultValue::Bool(b) => write!(f, "{b}"),
            DefaultValue::Duration(d) => f.write_str(&show_duration(*d)),
            DefaultValue::Durations(l) => {
                f.write_str(&show_list(l.iter().map(|d| show_duration(*d))))
            }
            DefaultValue::Share(x) => f.write_str(&show_share(*x)),
            DefaultValue::Statuses(s) => f.write_str(&show_statuses(s)),
            DefaultValue::List(l) => f.write_str(&show_list(l.iter())),
            DefaultValue::Codes(c) => f.write_str(&show_list(c.iter())),
            DefaultValue::EmptyMap => f.write_str("{}"),
            DefaultValue::Profiled { standard, botix } => {
                write!(f, "standard: {standard}; botix: {botix}")
            }
        }
    }
}

/// One parameter of a kind: its name, its default, what it does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Param {
    pub name: &'static str,
    pub default: DefaultValue,
    pub doc: &'static str,
}

/// A table row: `param("samples", DefaultValue::Int(defaults::SAMPLES), "...")`.
pub const fn param(name: &'static str, default: DefaultValue, doc: &'static str) -> Param {
    Param { name, default, doc }
}

/// One property a kind judges, with its RFC 2119 level and where that level
/// comes from. A kind with one property reports one verdict; a kind with
/// several reports one per property (`outcome::Assertion`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Property {
    /// As written in `severity:` and in JUnit (`<check-id>.<name>`).
    pub name: &'static str,
    /// The level under `profile: standard`: what the RFC, draft or Standard
    /// Webhooks says.
    pub severity: Severity,
    /// The level under `profile: botix`: a property the seed checklist states
    /// is its contract, so a MUST there even where the RFC says SHOULD
    /// (issue 22 case 5: a CI gate without `--strict` must not let the
    /// contract's own test pass with a warning).
    pub botix: Severity,
    /// Why this level: the RFC, draft or catalogue entry that says MUST or SHOULD.
    pub source: &'static str,
    pub doc: &'static str,
}

/// A table row: `must("single_effect", "RFC draft-ietf-httpapi-idempotency-key §2", "...")`.
pub const fn must(name: &'static str, source: &'static str, doc: &'static str) -> Property {
    Property {
        name,
        severity: Severity::Must,
        botix: Severity::Must,
        source,
        doc,
    }
}

/// A SHOULD property: a failure is a warning unless the run is strict.
pub const fn should(name: &'static str, source: &'static str, doc: &'static str) -> Property {
    Property {
        name,
        severity: Severity::Should,
        botix: Severity::Should,
        source,
        doc,
    }
}

impl Property {
    /// The same property, a MUST under `profile: botix`: the seed checklist
    /// states it (its `source` says where), while the RFC level stays for
    /// `standard`.
    pub const fn botix_must(self) -> Property {
        Property {
            botix: Severity::Must,
            ..self
        }
    }

    /// The level this property has under `profile`.
    pub fn severity_in(&self, profile: Profile) -> Severity {
        profile.pick(self.severity, self.botix)
    }
}

/// What `tminus checks` and `docs/checks.md` print for a kind, with typed
/// defaults.
#[derive(Debug)]
pub struct Kind {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [Param],
    /// What it judges (empty: one property, MUST, named after the kind).
    pub properties: &'static [Property],
}

impl Kind {
    /// The properties as judged: the declared ones, or the kind itself as one
    /// MUST property.
    pub fn judged(&self) -> Vec<Property> {
        if self.properties.is_empty() {
            vec![must(
                self.name.rsplit('.').next().unwrap_or(self.name),
                "the kind's catalogue entry",
                self.summary,
            )]
        } else {
            self.properties.to_vec()
        }
    }
}

/// One table of kinds in the registry.
#[derive(Debug, Clone, Copy)]
pub enum KindTable {
    Typed(&'static [Kind]),
}

/// A kind as the reference prints it.
#[derive(Debug, Clone)]
pub struct KindDoc {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [Param],
    pub properties: Vec<Property>,
}

impl KindTable {
    /// The kind names, in table order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        let KindTable::Typed(t) = self;
        t.iter().map(|k| k.name)
    }

    /// The kinds with their parameters.
    pub fn docs(self) -> impl Iterator<Item = KindDoc> {
        let KindTable::Typed(t) = self;
        t.iter().map(KindDoc::from)
    }
}

impl From<&'static Kind> for KindDoc {
    fn from(k: &'static Kind) -> Self {
        KindDoc {
            name: k.name,
            summary: k.summary,
            params: k.params,
            properties: k.judged(),
        }
    }
}

/// Fields every check accepts, whatever its kind.
pub const COMMON_PARAMS: &[Param] = &[
    param(
        "id",
        DefaultValue::Required,
        "stable name, unique in the suite ([A-Za-z0-9._-]): the JUnit testcase and the --only target",
    ),
    param(
        "kind",
        DefaultValue::Str("steps"),
        "which check runs (see the list)",
    ),
    param("tags", DefaultValue::List(&[]), "labels for --tag"),
    param(
        "description",
        DefaultValue::Absent,
        "one line for people reading the report",
    ),
    param(
        "severity",
        DefaultValue::EmptyMap,
        "per-property level overrides (`{ marker: must }`): a broken `should` property is a warning, a failure under --strict",
    ),
    param(
        "after",
        DefaultValue::Absent,
        "a cooldown after the check (`10s`, at most 1h), e.g. for a rate-limit window to refill before the next check",
    ),
];

/// A family's documentation (its `README.md`), split where it says
/// `<!-- kind: NAME -->` (the details printed after that kind's table) and
/// `<!-- end of kinds -->` (what follows the last kind).
#[derive(Debug, PartialEq)]
pub struct FamilyDoc<'a> {
    /// Everything before the first kind section: the family's title and intro.
    pub intro: &'a str,
    /// `(kind, details)` in the order written.
    pub kinds: Vec<(&'a str, &'a str)>,
    /// Everything after `<!-- end of kinds -->`.
    pub outro: &'a str,
}

const KIND_MARK: &str = "<!-- kind: ";
const END_MARK: &str = "<!-- end of kinds -->";

impl<'a> FamilyDoc<'a> {
    pub fn parse(doc: &'a str) -> FamilyDoc<'a> {
        let mut out = FamilyDoc {
            intro: doc,
            kinds: Vec::new(),
            outro: "",
        };
        // Byte offsets of every marker line, with what it opens.
        let mut marks: Vec<(usize, usize, Option<&'a str>)> = Vec::new();
        let mut at = 0;
        for line in doc.split_inclusive('\n') {
            let t = line.trim();
            if let Some(rest) = t.strip_prefix(KIND_MARK) {
                let name = rest.trim_end_matches("-->").trim();
                marks.push((at, at + line.len(), Some(name)));
            } else if t == END_MARK {
                marks.push((at, at + line.len(), None));
            }
            at += line.len();
        }
        let Some(first) = marks.first() else {
            return out;
        };
        out.intro = &doc[..first.0];
        for (i, &(_, body_start, kind)) in marks.iter().enumerate() {
            let body_end = marks.get(i + 1).map_or(doc.len(), |m| m.0);
            let body = &doc[body_start..body_end];
            match kind {
                Some(k) => out.kinds.push((k, body)),
                None => out.outro = body,
            }
        }
        out
    }

    /// The details written for `kind` (empty when none).
    pub fn details(&self, kind: &str) -> &'a str {
        self.kinds
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or("", |(_, d)| d)
    }

    /// The title: the intro's first `## ` heading.
    pub fn title(&self) -> Option<&'a str> {
        self.intro
            .lines()
            .find_map(|l| l.strip_prefix("## "))
            .map(str::trim)
    }
}

/// Declares a check spec struct with the common fields first.
macro_rules! check_spec {
    ($(#[$meta:meta])* $name:ident { $($body:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema, Clone)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            #[schemars(with = "String")]
            pub id: serde_saphyr::Spanned<String>,
            #[serde(default)]
            pub kind: Option<String>,
            #[serde(default)]
            pub tags: Vec<String>,
            #[serde(default)]
            pub description: Option<String>,
            /// Per-property severity overrides (`severity: { marker: must }`).
            #[serde(default)]
            #[schemars(with = "Option<std::collections::BTreeMap<String, crate::outcome::Severity>>")]
            pub severity: Option<serde_saphyr::Spanned<std::collections::BTreeMap<String, $crate::outcome::Severity>>>,
            /// A cooldown after the check (`after: 10s`), so a small rate
            /// limit's window refills before the next check.
            #[serde(default)]
            #[schemars(with = "Option<crate::model::scalar::DurationValue>")]
            pub after: Option<serde_saphyr::Spanned<$crate::model::scalar::DurationValue>>,
            $($body)*
        }

        impl $crate::spec::kinds::Common for $name {
            fn id(&self) -> &serde_saphyr::Spanned<String> {
                &self.id
            }
            fn tags(&self) -> &[String] {
                &self.tags
            }
            fn description(&self) -> Option<&str> {
                self.description.as_deref()
            }
            fn severity(&self) -> Option<&$crate::spec::kinds::SeverityOverrides> {
                self.severity.as_ref()
            }
            fn after(&self) -> Option<&serde_saphyr::Spanned<$crate::model::scalar::DurationValue>> {
                self.after.as_ref()
            }
        }
    };
}
#[allow(unused_imports)] // used by the family modules
pub(crate) use check_spec;

/// A check's `severity:` map, with its position.
pub type SeverityOverrides = Spanned<std::collections::BTreeMap<String, Severity>>;

/// The fields every check spec has (implemented by `check_spec!`).
pub trait Common {
    fn id(&self) -> &Spanned<String>;
    fn tags(&self) -> &[String];
    fn description(&self) -> Option<&str>;
    fn severity(&self) -> Option<&SeverityOverrides>;
    fn after(&self) -> Option<&Spanned<crate::model::scalar::DurationValue>>;
}

impl<T: Common> Common for Box<T> {
    fn id(&self) -> &Spanned<String> {
        (**self).id()
    }
    fn tags(&self) -> &[String] {
        (**self).tags()
    }
    fn description(&self) -> Option<&str> {
        (**self).description()
    }
    fn severity(&self) -> Option<&SeverityOverrides> {
        (**self).severity()
    }
    fn after(&self) -> Option<&Spanned<crate::model::scalar::DurationValue>> {
        (**self).after()
    }
}

/// Declares a family's nested enum of kinds: one variant per kind, each with
/// its own spec struct, and the by-name dispatch used while parsing.
macro_rules! family_kinds {
    ($(#[$meta:meta])* $enum:ident { $( $kind:literal => $variant:ident($spec:ty) ),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        pub enum $enum {
            $( $variant($spec), )+
        }

        impl $enum {
            /// Every kind name of the family, in table order.
            pub const NAMES: &'static [&'static str] = &[$($kind),+];

            /// The kind's name as written in suites.
            pub fn kind_name(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => $kind, )+
                }
            }

            /// The fields every check has.
            pub fn common(&self) -> &dyn $crate::spec::kinds::Common {
                match self {
                    $( Self::$variant(s) => s, )+
                }
            }

            /// Each kind's JSON Schema, derived from its spec struct, in
            /// table order (`suite::schema` adds the table's docs).
            pub fn kind_schemas(
                g: &mut schemars::SchemaGenerator,
            ) -> Vec<(&'static str, schemars::Schema)> {
                vec![$( ($kind, <$spec as schemars::JsonSchema>::json_schema(g)), )+]
            }

            /// Deserializes an entry whose `kind` is `kind` (one of `NAMES`).
            pub fn deserialize_kind<'de, D: serde::Deserializer<'de>>(
                kind: &str,
                d: D,
            ) -> Result<Self, D::Error> {
                match kind {
                    $( $kind => <$spec as serde::Deserialize>::deserialize(d).map(Self::$variant), )+
                    other => Err(<D::Error as serde::de::Error>::custom(format!(
                        "`{other}` is not a kind of this family"
                    ))),
                }
            }
        }
    };
}
pub(crate) use family_kinds;

/// Test helpers shared by the families' "table defaults are the planned
/// ones" tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::plan::{build_with_env, Plan, PlanOptions};
    use crate::suite::SuiteSource;

    /// Plans a suite given as YAML (no environment), panicking on errors.
    pub fn plan_suite(src: &str) -> Plan {
        let path = std::path::Path::new("defaults.yaml");
        let file = crate::suite::read::parse_str(path, src).unwrap_or_else(|d| panic!("{d}"));
        let loaded = vec![SuiteSource {
            path: path.into(),
            source: src.to_owned(),
            file,
        }];
        build_with_env(&loaded, &PlanOptions::default(), &|_| None)
            .unwrap_or_else(|d| panic!("{d}\n{src}"))
    }

    /// Plans one check entry (YAML mapping lines, indented by 4) of `kind`.
    pub fn plan_check(kind: &str, fields: &str) -> crate::families::CheckPlan {
        let src = format!(
            "suite: s\ntarget: {{ base_url: \"http://127.0.0.1:1\" }}\nchecks:\n  - id: c\n    kind: {kind}\n{fields}"
        );
        plan_suite(&src).suites.remove(0).checks.remove(0).body
    }

    pub fn dur(d: Duration) -> Option<String> {
        Some(show_duration(d))
    }
    pub fn int(n: impl Into<u64>) -> Option<String> {
        Some(n.into().to_string())
    }
    pub fn float(x: f64) -> Option<String> {
        Some(DefaultValue::Float(x).to_string())
    }
    pub fn word(s: impl fmt::Display) -> Option<String> {
        Some(s.to_string())
    }
    pub fn statuses(s: &crate::model::scalar::StatusSet) -> Option<String> {
        Some(show_statuses(&s.0))
    }
    pub fn list<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> Option<String> {
        Some(show_list(items))
    }
    pub fn map<T>(items: &[T]) -> Option<String> {
        assert!(items.is_empty(), "only empty maps are defaults");
        Some("{}".into())
    }
    pub fn share(x: f64) -> Option<String> {
        Some(show_share(x))
    }
    /// `None` when absent, else the value as written.
    pub fn opt<T: fmt::Display>(v: &Option<T>) -> Option<String> {
        v.as_ref().map(|v| v.to_string())
    }
    /// Puts `${uuid}` back where a rendered template has a UUID.
    pub fn unrender_uuid(s: &str) -> String {
        let re = regex::Regex::new("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
            .expect("static regex");
        re.replace_all(s, "$${uuid}").into_owned()
    }

    /// Fails unless every typed default of `kind` in `table` equals the
    /// planned value named alike, every planned value has a row, and every
    /// typed row was planned. `planned`: `(parameter, value as the table
    /// prints it, None when not set)`.
    pub fn assert_planned(table: &[Kind], kind: &str, planned: &[(&str, Option<String>)]) {
        let row = table
            .iter()
            .find(|k| k.name == kind)
            .unwrap_or_else(|| panic!("no `{kind}` in the table"));
        let mut wrong = Vec::new();
        for (name, value) in planned {
            let Some(p) = row.params.iter().find(|p| p.name == *name) else {
                wrong.push(format!("`{name}` is planned but has no row"));
                continue;
            };
            // Family tests plan without `profile:`, i.e. `standard`.
            match *p
                .default
                .for_profile(crate::model::profile::Profile::Standard)
            {
                DefaultValue::Required => {
                    wrong.push(format!("`{name}` is required in the table but planned"))
                }
                DefaultValue::Text(_) => {}
                DefaultValue::Absent if value.is_none() => {}
                d => {
                    let table = d.to_string();
                    if value.as_deref() != Some(table.as_str()) {
                        wrong.push(format!(
                            "`{name}`: the table says `{table}`, the plan uses `{}`",
                            value.as_deref().unwrap_or("none")
                        ));
                    }
                }
            }
        }
        for p in row.params {
            if p.default.is_typed() && !planned.iter().any(|(n, _)| *n == p.name) {
                wrong.push(format!(
                    "`{}` (default `{}`) is not compared with the plan",
                    p.name, p.default
                ));
            }
        }
        assert!(
            wrong.is_empty(),
            "{kind}: table and plan disagree:\n  {}",
            wrong.join("\n  ")
        );
    }

    /// Fails unless `covered` names every kind of `table`.
    pub fn assert_covers(table: &[Kind], covered: &[&str]) {
        let missing: Vec<&str> = table
            .iter()
            .map(|k| k.name)
            .filter(|n| !covered.contains(n))
            .collect();
        assert!(
            missing.is_empty(),
            "kinds not compared with their plan: {missing:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_print_as_a_suite_writes_them() {
        let d = |v: DefaultValue| v.to_string();
        assert_eq!(
            d(DefaultValue::Duration(Duration::from_millis(150))),
            "150ms"
        );
        assert_eq!(d(DefaultValue::Duration(Duration::from_secs(30))), "30s");
        assert_eq!(d(DefaultValue::Duration(Duration::from_secs(600))), "10m");
        assert_eq!(d(DefaultValue::Duration(Duration::from_secs(3600))), "1h");
        assert_eq!(d(DefaultValue::Duration(Duration::ZERO)), "0s");
        assert_eq!(d(DefaultValue::Share(0.9)), "90%");
        assert_eq!(d(DefaultValue::Share(0.005)), "0.5%");
        assert_eq!(d(DefaultValue::Float(2.0)), "2.0");
        assert_eq!(d(DefaultValue::Statuses(&[StatusPattern::Class(2)])), "2xx");
        assert_eq!(
            d(DefaultValue::Statuses(&[
                StatusPattern::Exact(400),
                StatusPattern::Exact(422)
            ])),
            "[400, 422]"
        );
        assert_eq!(d(DefaultValue::List(&[])), "[]");
        assert_eq!(d(DefaultValue::Codes(&[400, 401])), "[400, 401]");
        assert_eq!(d(DefaultValue::Absent), "none");
        const SCHEDULE: &[Duration] = &[Duration::from_secs(30), Duration::from_secs(300)];
        assert_eq!(d(DefaultValue::Durations(SCHEDULE)), "[30s, 5m]");
    }

    #[test]
    fn family_docs_split_at_their_markers() {
        let doc = "## T\n\nintro\n<!-- kind: f.a -->\nabout a\n<!-- kind: f.b -->\n\nabout b\n<!-- end of kinds -->\n### More\n";
        let d = FamilyDoc::parse(doc);
        assert_eq!(d.title(), Some("T"));
        assert_eq!(d.intro, "## T\n\nintro\n");
        assert_eq!(d.kinds, vec![("f.a", "about a\n"), ("f.b", "\nabout b\n")]);
        assert_eq!(d.details("f.b").trim(), "about b");
        assert_eq!(d.details("f.c"), "");
        assert_eq!(d.outro, "### More\n");
        let plain = FamilyDoc::parse("## T\nno markers\n");
        assert_eq!(plain.intro, "## T\nno markers\n");
        assert!(plain.kinds.is_empty());
    }
}
