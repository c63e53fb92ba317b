//! Words from a fixed list (`policy: required`, `form: http-date`) read into
//! a typed enum.
//!
//! The enum is an ordinary serde enum (`#[derive(Deserialize)]` with
//! `rename_all`); its serde names are the documented spellings. A suite may
//! write them in any ASCII case, with `-` and `_` interchangeable and
//! surrounding spaces ignored (`Not-Cached` is `not_cached`).
//!
//! A word that names no variant does not stop the parse: [`Keyword`] keeps the
//! text, and the planner reports it at its position together with every other
//! problem of the suite (`PlanCtx::keyword`), so one `tminus validate` lists
//! them all.

use serde::de::value::{Error as ValueError, StrDeserializer};
use serde::de::{self, DeserializeOwned, Deserializer, IntoDeserializer, Visitor};
use serde::Deserialize;

use super::scalar::Scalar;

/// A keyword as written: one of `T`'s variants, or the unknown text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keyword<T> {
    Known(T),
    Unknown(String),
}

impl<T: DeserializeOwned> Keyword<T> {
    /// Reads a word leniently (case, `-`/`_`, surrounding spaces).
    pub fn read(text: &str) -> Keyword<T> {
        let want = normalize(text);
        names::<T>()
            .iter()
            .find(|n| normalize(n) == want)
            .and_then(|n| {
                let d: StrDeserializer<'_, ValueError> = n.into_deserializer();
                T::deserialize(d).ok()
            })
            .map(Keyword::Known)
            .unwrap_or_else(|| Keyword::Unknown(text.to_owned()))
    }

    /// The value, or why not: "unknown {what} `x`: use one of `a`, `b`".
    pub fn value(self, what: &str) -> Result<T, String> {
        match self {
            Keyword::Known(t) => Ok(t),
            Keyword::Unknown(text) => Err(unknown::<T>(what, &text)),
        }
    }
}

/// "unknown {what} `text`: use one of `a`, `b`[, did you mean `a`?]".
pub fn unknown<T: DeserializeOwned>(what: &str, text: &str) -> String {
    let names = names::<T>();
    let list = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let hint = super::text::suggest(&normalize(text), names.iter().copied())
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    format!("unknown {what} `{text}`: use one of {list}{hint}")
}

fn normalize(s: &str) -> String {
    s.trim().to_ascii_lowercase().replace('-', "_")
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Keyword<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let Scalar(text) = Scalar::deserialize(d)?;
        Ok(Keyword::read(&text))
    }
}

/// The serde names of an enum's variants (empty for anything else), read
/// from its derived `Deserialize` without a value.
pub fn names<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut probe = NamesProbe(None);
    let _ = T::deserialize(&mut probe);
    probe.0.unwrap_or(&[])
}

/// A deserializer that only records the variant list it is asked for.
struct NamesProbe(Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for &mut NamesProbe {
    type Error = ValueError;

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ValueError> {
        self.0 = Some(variants);
        Err(de::Error::custom("names only"))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ValueError> {
        Err(de::Error::custom("not an enum"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
    #[serde(rename_all = "snake_case")]
    enum Policy {
        NotCached,
        Cached,
    }

    #[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
    #[serde(rename_all = "kebab-case")]
    enum Form {
        Seconds,
        HttpDate,
        #[serde(rename = "503")]
        Status503,
    }

    #[test]
    fn names_come_from_serde() {
        assert_eq!(names::<Policy>(), &["not_cached", "cached"]);
        assert_eq!(names::<Form>(), &["seconds", "http-date", "503"]);
        assert!(names::<String>().is_empty());
    }

    #[test]
    fn reads_case_and_dash_insensitively() {
        for w in ["not_cached", "Not-Cached", " NOT_CACHED ", "not-cached"] {
            assert_eq!(Keyword::read(w), Keyword::Known(Policy::NotCached), "{w}");
        }
        for w in ["http-date", "HTTP_DATE", "Http-Date"] {
            assert_eq!(Keyword::read(w), Keyword::Known(Form::HttpDate), "{w}");
        }
        assert_eq!(Keyword::read("503"), Keyword::Known(Form::Status503));
        assert_eq!(
            Keyword::<Policy>::read("sometimes"),
            Keyword::Unknown("sometimes".into())
        );
        assert_eq!(Keyword::<Policy>::read(""), Keyword::Unknown(String::new()));
    }

    #[test]
    fn unknown_words_list_the_choices() {
        let e = Keyword::<Policy>::read("sometimes")
            .value("policy")
            .unwrap_err();
        assert_eq!(
            e,
            "unknown policy `sometimes`: use one of `not_cached`, `cached`"
        );
        let e = Keyword::<Form>::read("http-dat").value("form").unwrap_err();
        assert!(e.ends_with("(did you mean `http-date`?)"), "{e}");
        assert_eq!(
            Keyword::<Form>::read("Seconds").value("form"),
            Ok(Form::Seconds)
        );
    }

    #[test]
    fn deserializes_from_yaml_scalars_with_positions() {
        #[derive(Deserialize)]
        struct S {
            a: serde_saphyr::Spanned<Keyword<Form>>,
            b: Keyword<Form>,
            c: Keyword<Policy>,
        }
        let s: S = serde_saphyr::from_str("a: HTTP-date\nb: 503\nc: never\n").unwrap();
        assert_eq!(s.a.value, Keyword::Known(Form::HttpDate));
        assert_eq!(s.a.referenced.line(), 1);
        assert_eq!(s.b, Keyword::Known(Form::Status503));
        assert_eq!(s.c, Keyword::Unknown("never".into()));
    }
}
