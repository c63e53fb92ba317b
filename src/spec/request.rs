//! The request / expect / capture grammar shared by every check family, and
//! the generic multi-step check (`kind: steps`, the default).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::model::scalar::{DurationValue, Scalar, StatusSet};

/// One HTTP request as written in a suite.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    /// Defaults to GET.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub method: Option<Spanned<String>>,
    /// A path joined to the target's base URL.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub path: Option<Spanned<String>>,
    /// An absolute URL, used as is (instead of `path`).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub url: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub headers: BTreeMap<String, Spanned<Scalar>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Scalar>")]
    pub query: BTreeMap<String, Spanned<Scalar>>,
    /// A JSON body; string leaves are templates.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Value>")]
    pub json: Option<Spanned<serde_json::Value>>,
    /// A raw body, sent byte for byte (after interpolation).
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub body: Option<Spanned<String>>,
    /// A form-encoded body.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, Scalar>>")]
    pub form: Option<BTreeMap<String, Spanned<Scalar>>>,
    /// Per-request timeout.
    #[serde(default)]
    #[schemars(with = "Option<DurationValue>")]
    pub timeout: Option<Spanned<DurationValue>>,
}

/// What a response must look like.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectSpec {
    #[serde(default)]
    #[schemars(with = "Option<StatusSet>")]
    pub status: Option<Spanned<StatusSet>>,
    /// Header name -> `present`, `absent`, `{equals: V}` or `{matches: REGEX}`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, HeaderExpect>")]
    pub headers: BTreeMap<String, Spanned<HeaderExpect>>,
    /// JSON path -> a value it must equal, or `{equals|exists|matches: ...}`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, JsonExpect>")]
    pub json: BTreeMap<String, Spanned<JsonExpect>>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub body_contains: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Option<DurationValue>")]
    pub latency_under: Option<Spanned<DurationValue>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum HeaderExpect {
    Present,
    Absent,
    Equals(String),
    Matches(String),
}

impl<'de> Deserialize<'de> for HeaderExpect {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HeaderExpect;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("`present`, `absent`, `{equals: VALUE}` or `{matches: REGEX}`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HeaderExpect, E> {
                match v {
                    "present" => Ok(HeaderExpect::Present),
                    "absent" => Ok(HeaderExpect::Absent),
                    other => Err(E::custom(format!(
                        "unknown header expectation `{other}`: use `present`, `absent`, `{{equals: VALUE}}` or `{{matches: REGEX}}`"
                    ))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HeaderExpect, A::Error> {
                let key: String = map
                    .next_key()?
                    .ok_or_else(|| de::Error::custom("empty header expectation"))?;
                let Scalar(value) = map.next_value()?;
                let out = match key.as_str() {
                    "equals" => HeaderExpect::Equals(value),
                    "matches" => HeaderExpect::Matches(value),
                    other => {
                        return Err(de::Error::unknown_field(other, &["equals", "matches"]));
                    }
                };
                if map.next_key::<String>()?.is_some() {
                    return Err(de::Error::custom(
                        "a header expectation takes one of `equals` or `matches`",
                    ));
                }
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

/// The schema of the forms `HeaderExpect::deserialize` reads.
impl schemars::JsonSchema for HeaderExpect {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HeaderExpect".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let scalar = g.subschema_for::<Scalar>();
        schemars::json_schema!({
            "description": "`present`, `absent`, `{equals: VALUE}` or `{matches: REGEX}`",
            "anyOf": [
                { "enum": ["present", "absent"] },
                one_key("equals", scalar.clone()),
                one_key("matches", scalar),
            ]
        })
    }
}

/// An object with exactly the one key `key` (an expectation's predicate).
fn one_key(key: &str, value: schemars::Schema) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": { key: value },
        "required": [key],
        "additionalProperties": false
    })
}

#[derive(Debug, Clone, PartialEq)]
pub enum JsonExpect {
    Equals(serde_json::Value),
    Exists(bool),
    Matches(String),
}

impl<'de> Deserialize<'de> for JsonExpect {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A bare scalar means "equals"; a map names the predicate. A map value
        // that is itself the expected object is written `{equals: {...}}`.
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JsonExpect;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value, `{equals: V}`, `{exists: BOOL}` or `{matches: REGEX}`")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<JsonExpect, E> {
                Ok(JsonExpect::Equals(v.into()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<JsonExpect, E> {
                Ok(JsonExpect::Equals(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<JsonExpect, E> {
                Ok(JsonExpect::Equals(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<JsonExpect, E> {
                Ok(JsonExpect::Equals(v.into()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<JsonExpect, E> {
                Ok(JsonExpect::Equals(v.into()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<JsonExpect, E> {
                Ok(JsonExpect::Equals(serde_json::Value::Null))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonExpect, A::Error> {
                let key: String = map
                    .next_key()?
                    .ok_or_else(|| de::Error::custom("empty JSON expectation"))?;
                let out = match key.as_str() {
                    "equals" => JsonExpect::Equals(map.next_value()?),
                    "exists" => JsonExpect::Exists(map.next_value()?),
                    "matches" => JsonExpect::Matches(map.next_value::<Scalar>()?.0),
                    other => {
                        return Err(de::Error::unknown_field(
                            other,
                            &["equals", "exists", "matches"],
                        ));
                    }
                };
                if map.next_key::<String>()?.is_some() {
                    return Err(de::Error::custom(
                        "a JSON expectation takes one of `equals`, `exists` or `matches`",
                    ));
                }
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

/// The schema of the forms `JsonExpect::deserialize` reads.
impl schemars::JsonSchema for JsonExpect {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "JsonExpect".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let scalar = g.subschema_for::<Scalar>();
        schemars::json_schema!({
            "description": "a value it must equal, `{equals: V}`, `{exists: BOOL}` or `{matches: REGEX}`",
            "anyOf": [
                { "type": ["string", "number", "boolean", "null"] },
                one_key("equals", schemars::json_schema!(true)),
                one_key("exists", schemars::json_schema!({ "type": "boolean" })),
                one_key("matches", scalar),
            ]
        })
    }
}

/// Where a captured variable comes from.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct CaptureSpec {
    #[serde(default)]
    pub json: Option<String>,
    #[serde(default)]
    pub header: Option<String>,
}

/// A side-effect counter: a request whose answer holds a number at `value`
/// (or a list/object whose length counts), read before and after an action to
/// see how many times the target really executed it.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct CounterSpec {
    pub request: RequestSpec,
    /// JSON path to a number, or to a list (its length counts).
    #[schemars(with = "String")]
    pub value: Spanned<String>,
}

/// One step of a multi-step case.
#[derive(Debug, Deserialize, schemars::JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    #[serde(default)]
    pub name: Option<String>,
    /// The request; a step is a request or a `wait:`.
    #[serde(default)]
    pub request: Option<RequestSpec>,
    /// A pause instead of a request (`wait: 10s`, at most 1h): a small
    /// rate-limit window refills, an asynchronous effect lands.
    #[serde(default)]
    #[schemars(with = "Option<crate::model::scalar::DurationValue>")]
    pub wait: Option<Spanned<crate::model::scalar::DurationValue>>,
    #[serde(default)]
    pub expect: Option<ExpectSpec>,
    /// Variable name -> `{json: PATH}` or `{header: NAME}`; readable as
    /// `${var.NAME}` in later steps of the same check.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, CaptureSpec>")]
    pub capture: BTreeMap<String, Spanned<CaptureSpec>>,
}
