//! OpenAPI 3.0 schemas rewritten to JSON Schema 2020-12 (what OpenAPI 3.1
//! uses and the validator speaks): `nullable: true` adds `null` to the type
//! (or to `enum`), and the boolean `exclusiveMinimum`/`exclusiveMaximum` of
//! draft 4 become the numbers of 2020-12. Only these keywords change: the
//! rest of 3.0's schema dialect already reads the same in 2020-12.

use serde_json::{json, Map, Value};

/// Rewrites every schema object in `v` (found wherever the 3.0-only
/// keywords appear with their boolean form, so no list of places where
/// schemas may sit is needed: a property *named* `nullable` holds a schema,
/// never a boolean).
pub fn from_3_0(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k != "example"
                    && k != "examples"
                    && k != "enum"
                    && k != "const"
                    && k != "default"
                {
                    from_3_0(x);
                }
            }
            exclusive(m, "exclusiveMinimum", "minimum");
            exclusive(m, "exclusiveMaximum", "maximum");
            // Only the boolean: a property *named* `nullable` is a schema.
            if let Some(Value::Bool(nullable)) = m.get("nullable").cloned() {
                m.remove("nullable");
                if nullable {
                    add_null(m);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(from_3_0),
        _ => {}
    }
}

/// `minimum: 5, exclusiveMinimum: true` -> `exclusiveMinimum: 5`;
/// `exclusiveMinimum: false` is dropped.
fn exclusive(m: &mut Map<String, Value>, key: &str, bound: &str) {
    let Some(Value::Bool(on)) = m.get(key).cloned() else {
        return;
    };
    m.remove(key);
    if on {
        if let Some(n) = m.remove(bound) {
            m.insert(key.to_owned(), n);
        }
    }
}

fn add_null(m: &mut Map<String, Value>) {
    if let Some(Value::Array(e)) = m.get_mut("enum") {
        if !e.contains(&Value::Null) {
            e.push(Value::Null);
        }
    }
    match m.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            m.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(ts)) => {
            if !ts.contains(&json!("null")) {
                ts.push(json!("null"));
            }
        }
        _ => {
            // No type (a `$ref`, an `allOf`...): null or whatever it was.
            let rest = Value::Object(std::mem::take(m));
            m.insert("anyOf".into(), json!([rest, {"type": "null"}]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_and_exclusive_bounds_become_2020_12() {
        let mut v = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "nullable": true},
                "b": {"type": "integer", "minimum": 0, "exclusiveMinimum": true,
                      "maximum": 9, "exclusiveMaximum": false},
                "c": {"$ref": "#/components/schemas/C", "nullable": true},
                "d": {"type": "string", "enum": ["x"], "nullable": true},
                "nullable": {"type": "boolean"},
                "e": {"type": "string", "nullable": false}
            }
        });
        from_3_0(&mut v);
        let p = &v["properties"];
        assert_eq!(p["a"], json!({"type": ["string", "null"]}));
        assert_eq!(
            p["b"],
            json!({"type": "integer", "exclusiveMinimum": 0, "maximum": 9})
        );
        assert_eq!(
            p["c"],
            json!({"anyOf": [{"$ref": "#/components/schemas/C"}, {"type": "null"}]})
        );
        assert_eq!(
            p["d"],
            json!({"type": ["string", "null"], "enum": ["x", null]})
        );
        assert_eq!(p["nullable"], json!({"type": "boolean"}));
        assert_eq!(p["e"], json!({"type": "string"}));
    }
}
