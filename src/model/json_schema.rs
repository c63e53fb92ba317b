//! JSON Schemas of the shared value types whose `Deserialize` is written by
//! hand (`Scalar`, `DurationValue`, `StatusSet`, `Keyword`), so the derived
//! suite schema (`tminus schema suite`) accepts exactly the spellings the
//! parser does: an editor then flags what `tminus validate` would reject.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;

use super::keyword::{names, Keyword};
use super::scalar::{DurationValue, Scalar, StatusSet};

/// A status code or class as one list item or a lone value (`201`, `"2xx"`).
fn status_item() -> serde_json::Value {
    serde_json::json!({
        "anyOf": [
            { "type": "integer", "minimum": 100, "maximum": 599 },
            { "type": "string", "pattern": r"^\s*([1-5]xx|[1-5][0-9]{2})\s*$" }
        ]
    })
}

impl JsonSchema for Scalar {
    fn schema_name() -> Cow<'static, str> {
        "Scalar".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "a string, number or boolean, read as text (templates such as `${env.NAME}` allowed)",
            "type": ["string", "number", "boolean"]
        })
    }
}

impl JsonSchema for DurationValue {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // The spellings of `scalar::parse_duration`; its range check (0 to
        // 7 days) is left to `tminus validate`.
        json_schema!({
            "description": "a duration: `250ms`, `1.5s`, `2m`, `1h` or a bare number of seconds",
            "anyOf": [
                { "type": "number", "minimum": 0 },
                {
                    "type": "string",
                    "pattern": r"^\s*([0-9]+\.?[0-9]*|\.[0-9]+)\s*(s|sec|secs|ms|us|µs|m|min|h)?\s*$"
                }
            ]
        })
    }
}

impl JsonSchema for StatusSet {
    fn schema_name() -> Cow<'static, str> {
        "StatusSet".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let item = status_item();
        json_schema!({
            "description": "a status code (100 to 599), a class like `2xx`, or a non-empty list of them",
            "anyOf": [
                item,
                { "type": "array", "minItems": 1, "items": item }
            ]
        })
    }
}

impl<T: JsonSchema + DeserializeOwned> JsonSchema for Keyword<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Keyword_{}", T::schema_name()).into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("tminus::Keyword<{}>", T::schema_id()).into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // The documented words complete in an editor; the lenient spellings
        // `Keyword::read` accepts (any case, `-` for `_`, spaces around)
        // validate through the pattern.
        let words = names::<T>();
        let lenient: Vec<String> = words
            .iter()
            .map(|w| {
                w.chars()
                    .map(|c| match c {
                        '_' | '-' => "[-_]".to_owned(),
                        c if c.is_ascii_alphabetic() => {
                            format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                        }
                        c => regex::escape(&c.to_string()),
                    })
                    .collect()
            })
            .collect();
        json_schema!({
            "anyOf": [
                { "enum": words },
                { "type": "string", "pattern": format!(r"^\s*({})\s*$", lenient.join("|")) }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validator<T: JsonSchema>() -> impl Fn(serde_json::Value) -> bool {
        let schema = SchemaGenerator::default().into_root_schema_for::<T>();
        let v = jsonschema::validator_for(schema.as_value()).expect("a valid schema");
        move |value| v.is_valid(&value)
    }

    #[test]
    fn durations_match_the_parser() {
        let ok = validator::<DurationValue>();
        for good in ["250ms", "1.5s", "2m", "1h", " 10 s ", "3"] {
            assert!(ok(good.into()), "{good}");
            assert!(crate::model::scalar::parse_duration(good).is_ok(), "{good}");
        }
        assert!(ok(2.into()));
        for bad in ["fast", "5x", "ms", ""] {
            assert!(!ok(bad.into()), "{bad}");
            assert!(crate::model::scalar::parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn statuses_match_the_parser() {
        let ok = validator::<StatusSet>();
        for good in [
            serde_json::json!(201),
            "2xx".into(),
            serde_json::json!([200, "4xx"]),
        ] {
            assert!(ok(good.clone()), "{good}");
        }
        for bad in [
            serde_json::json!(99),
            "6xx".into(),
            "fast".into(),
            serde_json::json!([]),
        ] {
            assert!(!ok(bad.clone()), "{bad}");
        }
    }

    #[test]
    fn keywords_accept_the_lenient_spellings() {
        #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "snake_case")]
        enum Policy {
            NotCached,
            Cached,
        }
        let ok = validator::<Keyword<Policy>>();
        for good in ["not_cached", "Not-Cached", " cached "] {
            assert!(ok(good.into()), "{good}");
            assert!(matches!(Keyword::<Policy>::read(good), Keyword::Known(_)));
        }
        assert!(!ok("uncached".into()));
        assert!(matches!(
            Keyword::<Policy>::read("uncached"),
            Keyword::Unknown(_)
        ));
    }
}
