//! The vocabulary every family uses to declare its kinds: `KindInfo` (what
//! `tminus checks` and `docs/checks.md` print), the common fields of a check
//! entry (`check_spec!`), and `family_kinds!`, which turns a family's list of
//! `"kind.name" => Variant(Spec)` into its nested enum with exhaustive
//! `kind_name`, `common` and by-name deserialization.
//!
//! Which family a kind belongs to, and the seed that deserializes each entry
//! with its positions intact, live in `families` (the registry) and
//! `suite::read`.

use serde_saphyr::Spanned;

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

/// Declares a check spec struct with the common fields first.
macro_rules! check_spec {
    ($(#[$meta:meta])* $name:ident { $($body:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, serde::Deserialize, Clone)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            pub id: serde_saphyr::Spanned<String>,
            #[serde(default)]
            pub kind: Option<String>,
            #[serde(default)]
            pub tags: Vec<String>,
            #[serde(default)]
            pub description: Option<String>,
            $($body)*
        }

        impl $crate::suite::kinds::Common for $name {
            fn id(&self) -> &serde_saphyr::Spanned<String> {
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
            pub fn common(&self) -> &dyn $crate::suite::kinds::Common {
                match self {
                    $( Self::$variant(s) => s, )+
                }
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
