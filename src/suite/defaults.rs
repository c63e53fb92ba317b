//! A suite's `defaults:` block: per family, parameter values every check of
//! that family inherits unless it sets the key itself.
//!
//! ```yaml
//! defaults:
//!   idempotency: { marker: { values: ["true"] }, reject_status: [409, 417, 422] }
//!   rate_limit: { error_code: none, after: 10s }
//! ```
//!
//! Inheritance happens while a check entry is deserialized: once the entry's
//! own keys are read, [`WithDefaults`] offers the family's remaining default
//! keys that the kind accepts, and each value is deserialized from its own
//! place in the file, so its positions (and any error in it) point at the
//! defaults block, not at the check. A check's key replaces the default's
//! whole value (no deep merge): what a check says is what it gets.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, IntoDeserializer, MapAccess, Visitor};
use serde_saphyr::Spanned;

use crate::spec::diagnostic::{suggest, Diagnostic};

/// Common fields a family's checks may inherit too (`after: 10s` for every
/// rate-limit check); `id`, `kind`, `description` and `severity` are each
/// check's own.
pub const INHERITABLE_COMMON: [&str; 2] = ["tags", "after"];

/// Checks the block: each family exists, each key is a parameter of one of
/// its kinds or an inheritable common field. Errors point at the value; all
/// of them are returned.
pub fn check_block(
    path: &std::path::Path,
    source: &str,
    block: &DefaultsBlock,
) -> Result<(), Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let families: Vec<&str> = crate::families::FAMILIES.iter().map(|f| f.name).collect();
    for (family, keys) in block {
        if !families.contains(&family.as_str()) {
            let hint = suggest(family, families.iter().copied())
                .map(|s| format!(", did you mean `{s}`?"))
                .unwrap_or_else(|| format!(" (families: {})", families.join(", ")));
            errors.push(Diagnostic::new(
                path,
                source,
                keys.referenced,
                format!("`defaults:` names `{family}`, which is not a check family{hint}"),
            ));
            continue;
        }
        let mut params = crate::families::family_params(family);
        params.extend(INHERITABLE_COMMON);
        for (key, value) in &keys.value {
            let allowed = params.contains(&key.as_str());
            if !allowed {
                let hint = suggest(key, params.iter().copied())
                    .map(|s| format!(", did you mean `{s}`?"))
                    .unwrap_or_default();
                errors.push(Diagnostic::new(
                    path,
                    source,
                    value.referenced,
                    format!("`defaults.{family}.{key}`: no `{family}` kind takes `{key}`{hint}"),
                ));
            }
        }
    }
    match errors.is_empty() {
        true => Ok(()),
        false => Err(errors),
    }
}

/// The `defaults:` block as the first pass reads it: family -> keys (with
/// the position of each value), for validation and for the offer.
pub type DefaultsBlock = BTreeMap<String, Spanned<BTreeMap<String, Spanned<IgnoredAny>>>>;

/// What entries need to inherit: the text (values are read from it again)
/// and each family's default keys.
pub struct Inheritance<'de> {
    source: &'de str,
    keys: BTreeMap<String, Vec<String>>,
    /// An error in a default value, with its own position (the entry that
    /// inherited it only sees a placeholder).
    failure: RefCell<Option<serde_saphyr::Error>>,
}

impl<'de> Inheritance<'de> {
    pub fn new(source: &'de str, block: Option<&DefaultsBlock>) -> Self {
        let keys = block
            .map(|b| {
                b.iter()
                    .map(|(f, m)| (f.clone(), m.value.keys().cloned().collect()))
                    .collect()
            })
            .unwrap_or_default();
        Inheritance {
            source,
            keys,
            failure: RefCell::new(None),
        }
    }

    /// The error inside a default value, if inheriting one failed.
    pub fn take_failure(&self) -> Option<serde_saphyr::Error> {
        self.failure.borrow_mut().take()
    }

    /// The default keys of `family` (empty when it has none).
    pub fn keys(&self, family: &str) -> &[String] {
        self.keys.get(family).map_or(&[], Vec::as_slice)
    }

    /// Deserializes `defaults.<family>.<key>` with `seed`, from the file.
    fn value<V: DeserializeSeed<'de>>(
        &self,
        family: &str,
        key: &str,
        seed: V,
    ) -> Result<V::Value, serde_saphyr::Error> {
        serde_saphyr::with_deserializer_from_str_with_options(
            self.source,
            crate::files::yaml_options(),
            |d| {
                Pick {
                    path: &["defaults", family, key],
                    seed,
                }
                .deserialize(d)
            },
        )
    }
}

/// A check entry's deserializer that offers `family`'s default keys after
/// the entry's own.
pub struct WithDefaults<'a, 'de, D> {
    pub inner: D,
    pub family: &'a str,
    pub inherit: &'a Inheritance<'de>,
}

macro_rules! forward {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, D: de::Deserializer<'de>> de::Deserializer<'de> for WithDefaults<'_, 'de, D> {
    type Error = D::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let offer: Vec<&str> = self
            .inherit
            .keys(self.family)
            .iter()
            .map(String::as_str)
            .filter(|k| fields.contains(k))
            .collect();
        if offer.is_empty() {
            return self.inner.deserialize_struct(name, fields, visitor);
        }
        self.inner.deserialize_struct(
            name,
            fields,
            EntryVisitor {
                visitor,
                family: self.family,
                offer,
                inherit: self.inherit,
            },
        )
    }

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_unit_struct(name, v)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_newtype_struct(name, v)
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_tuple(len, v)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_tuple_struct(name, len, v)
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_enum(name, variants, v)
    }
}

/// Hands the entry's map to the kind's visitor, with the defaults after it.
struct EntryVisitor<'a, 'de, V> {
    visitor: V,
    family: &'a str,
    offer: Vec<&'a str>,
    inherit: &'a Inheritance<'de>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for EntryVisitor<'_, 'de, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(InheritingMap {
            inner: map,
            own_done: false,
            seen: Vec::new(),
            offer: self.offer.into_iter(),
            current: None,
            family: self.family,
            inherit: self.inherit,
        })
    }
}

/// The entry's own keys, then each offered default the entry did not set.
struct InheritingMap<'a, 'de, A> {
    inner: A,
    own_done: bool,
    seen: Vec<String>,
    offer: std::vec::IntoIter<&'a str>,
    /// The default key whose value comes next.
    current: Option<&'a str>,
    family: &'a str,
    inherit: &'a Inheritance<'de>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for InheritingMap<'_, 'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if !self.own_done {
            // The key's text first (a seed spent on the end of the map
            // could not be used for the defaults after it).
            match self.inner.next_key::<String>()? {
                Some(name) => {
                    self.seen.push(name.clone());
                    return seed
                        .deserialize(name.into_deserializer())
                        .map(Some)
                        .map_err(|e: de::value::Error| de::Error::custom(e));
                }
                None => self.own_done = true,
            }
        }
        self.next_default_key(seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.current.take() {
            None => self.inner.next_value_seed(seed),
            Some(key) => self.inherit.value(self.family, key, seed).map_err(|e| {
                let msg = format!("in `defaults.{}.{key}`: {e}", self.family);
                *self.inherit.failure.borrow_mut() = Some(e);
                de::Error::custom(msg)
            }),
        }
    }
}

impl<'de, A: MapAccess<'de>> InheritingMap<'_, 'de, A> {
    /// The next offered default the entry did not set.
    fn next_default_key<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        for key in self.offer.by_ref() {
            if self.seen.iter().any(|s| s == key) {
                continue;
            }
            self.current = Some(key);
            return seed
                .deserialize(key.into_deserializer())
                .map(Some)
                .map_err(|e: de::value::Error| de::Error::custom(e));
        }
        Ok(None)
    }
}

/// Walks a document along `path` (mapping keys) and deserializes the value
/// there with `seed`, skipping the rest.
struct Pick<'p, S> {
    path: &'p [&'p str],
    seed: S,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Pick<'_, S> {
    type Value = S::Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        d.deserialize_map(PickVisitor {
            path: self.path,
            seed: Some(self.seed),
        })
    }
}

struct PickVisitor<'p, S> {
    path: &'p [&'p str],
    seed: Option<S>,
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for PickVisitor<'_, S> {
    type Value = S::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a mapping with `{}`", self.path[0])
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<S::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            match (key == self.path[0], self.seed.take()) {
                (true, Some(seed)) if self.path.len() == 1 => {
                    found = Some(map.next_value_seed(seed)?);
                }
                (true, Some(seed)) => {
                    found = Some(map.next_value_seed(Pick {
                        path: &self.path[1..],
                        seed,
                    })?);
                }
                (_, seed) => {
                    self.seed = seed;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        found.ok_or_else(|| de::Error::missing_field("defaults"))
    }
}

#[cfg(test)]
mod tests {
    use crate::families::idempotency::spec::IdempotencySpec;
    use crate::families::CheckSpec;
    use crate::suite::read::parse_str;
    use std::path::Path;

    const HEAD: &str = "suite: s\ndefaults:\n  idempotency:\n    effects: { request: { path: /count }, value: $.count }\n    marker: { values: [\"true\"] }\n    key_header: X-Key\nchecks:\n";

    fn replay(src: &str, i: usize) -> crate::families::idempotency::spec::ReplaySpec {
        let f = parse_str(Path::new("d.yaml"), src).unwrap_or_else(|d| panic!("{d}"));
        match &f.checks[i] {
            CheckSpec::Idempotency(b) => match &**b {
                IdempotencySpec::Replay(r) => r.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn checks_inherit_what_they_do_not_set() {
        let src = format!(
            "{HEAD}  - id: a\n    kind: idempotency.replay\n    request: {{ method: POST, path: /p }}\n  - id: b\n    kind: idempotency.replay\n    request: {{ method: POST, path: /p }}\n    key_header: Own-Key\n    marker: {{ policy: optional }}\n"
        );
        let a = replay(&src, 0);
        assert_eq!(a.key_header.as_deref(), Some("X-Key"));
        let values = a.marker.unwrap().values.unwrap();
        assert_eq!(values.len(), 1);
        assert_eq!(a.effects.value.value, "$.count");
        // Inherited values keep their own position (the defaults block).
        assert_eq!(
            a.effects.value.referenced.line(),
            4,
            "{:?}",
            a.effects.value
        );
        let b = replay(&src, 1);
        assert_eq!(b.key_header.as_deref(), Some("Own-Key"));
        // The check's key replaces the default's whole value.
        assert!(b.marker.unwrap().values.is_none());
    }

    #[test]
    fn a_key_for_other_kinds_of_the_family_is_not_offered() {
        // `concurrency` belongs to idempotency.concurrent, not to replay.
        let src = "suite: s\ndefaults:\n  idempotency:\n    effects: { request: { path: /count }, value: $.count }\n    concurrency: 4\nchecks:\n  - id: a\n    kind: idempotency.replay\n    request: { method: POST, path: /p }\n";
        let a = replay(src, 0);
        assert_eq!(a.effects.value.value, "$.count");
    }

    #[test]
    fn a_cooldown_for_the_whole_family_is_inherited() {
        let src = "suite: s\ndefaults:\n  idempotency:\n    effects: { request: { path: /count }, value: $.count }\n    after: 2s\nchecks:\n  - id: a\n    kind: idempotency.replay\n    request: { method: POST, path: /p }\n";
        let a = replay(src, 0);
        assert_eq!(a.after.unwrap().value.0, std::time::Duration::from_secs(2));
    }

    #[test]
    fn unknown_families_and_keys_are_errors_with_positions() {
        let src = "suite: s\ndefaults:\n  idempotence:\n    marker: {}\nchecks: []\n";
        let d = parse_str(Path::new("d.yaml"), src).unwrap_err();
        assert_eq!(d.line, 4, "{d}");
        assert!(d.message.contains("did you mean `idempotency`"), "{d}");

        let src = "suite: s\ndefaults:\n  idempotency:\n    markr: {}\nchecks: []\n";
        let d = parse_str(Path::new("d.yaml"), src).unwrap_err();
        assert_eq!(d.line, 4, "{d}");
        assert!(
            d.message.contains("`defaults.idempotency.markr`")
                && d.message.contains("did you mean `marker`"),
            "{d}"
        );
    }

    #[test]
    fn an_error_in_an_inherited_value_points_at_the_default() {
        let src = "suite: s\ndefaults:\n  idempotency:\n    effects: { request: { path: /count }, value: $.count }\n    marker: { values: { a: 1 } }\nchecks:\n  - id: a\n    kind: idempotency.replay\n    request: { method: POST, path: /p }\n";
        let d = parse_str(Path::new("d.yaml"), src).unwrap_err();
        assert_eq!(d.line, 5, "{d}");
    }
}
