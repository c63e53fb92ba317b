//! The document's event schemas (catalogue CON-004): OpenAPI 3.1's
//! top-level `webhooks:` map, one entry per event the API sends, each a path
//! item whose `post` request body describes the payload. Each entry's JSON
//! schema is compiled at load (a broken `$ref` is an error before the run),
//! and a delivery the webhook sink receives is judged against the entry of
//! its event type: the entry's name, its `operationId`, or the `const` /
//! `enum` of its payload's `type` property (how Standard Webhooks, Stripe
//! and most platforms tag events).

use serde_json::Value;

use super::load::Document;
use super::operation::{escape, is_json, Schemas};

/// Schema errors quoted for one delivery.
const MAX_ERRORS: usize = 3;

/// One documented event.
#[derive(Debug)]
pub struct WebhookEvent {
    /// The key under `webhooks:`.
    pub name: String,
    /// `#/webhooks/message.created/post/requestBody/content/application~1json/schema`.
    pub pointer: String,
    /// The event types it describes.
    pub types: Vec<String>,
    validator: jsonschema::Validator,
}

/// What judging one delivery's body found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// It conforms to the entry `event`.
    Conforms { event: String },
    /// Schema violations (`pointer into the body: message`), the first few.
    Violations { event: String, errors: Vec<String> },
    /// Its type is none the document describes.
    Undocumented { event_type: String },
    /// No event type could be read (no header given, no `type` in the body).
    Untyped,
    /// The body is not JSON.
    NotJson(String),
}

/// Every `webhooks:` entry of `doc` with a JSON payload schema.
pub fn webhooks(doc: &Document) -> Result<Vec<WebhookEvent>, String> {
    let Some(map) = doc.root_value().get("webhooks").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let schemas = Schemas::new(doc)?;
    let mut out = Vec::new();
    for (name, item) in map {
        let at = format!("#/webhooks/{}", escape(name));
        let (uri, item) = doc
            .deref(doc.root.as_str(), item)
            .map_err(|e| format!("{at}: {e}"))?;
        for method in ["post", "put"] {
            let Some(op) = item.get(method) else { continue };
            let Some(body) = op.get("requestBody") else {
                continue;
            };
            let (uri, body) = doc
                .deref(uri, body)
                .map_err(|e| format!("{at}/{method}/requestBody: {e}"))?;
            let Some(content) = body.get("content").and_then(Value::as_object) else {
                continue;
            };
            let json = content.iter().find(|(media, _)| {
                is_json(
                    &media
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_ascii_lowercase(),
                )
            });
            let Some((media, m)) = json else { continue };
            let Some(schema) = m.get("schema") else {
                continue;
            };
            let pointer = format!("{at}/{method}/requestBody/content/{}/schema", escape(media));
            let validator = schemas
                .validator(uri, schema)
                .map_err(|e| format!("{pointer}: {e}"))?;
            let mut types = vec![name.clone()];
            if let Some(id) = op.get("operationId").and_then(Value::as_str) {
                types.push(id.to_owned());
            }
            if let Ok((_, shape)) = doc.deref(uri, schema) {
                types.extend(declared_types(doc, uri, shape));
            }
            out.push(WebhookEvent {
                name: name.clone(),
                pointer,
                types,
                validator,
            });
            break;
        }
    }
    Ok(out)
}

/// The `const` or `enum` strings of a payload schema's `type` property
/// (looked for in `allOf` members too).
fn declared_types(doc: &Document, uri: &str, shape: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = shape.get("properties").and_then(|p| p.get("type")) {
        if let Ok((_, t)) = doc.deref(uri, t) {
            if let Some(c) = t.get("const").and_then(Value::as_str) {
                out.push(c.to_owned());
            }
            if let Some(e) = t.get("enum").and_then(Value::as_array) {
                out.extend(e.iter().filter_map(Value::as_str).map(str::to_owned));
            }
        }
    }
    for member in shape
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Ok((u, m)) = doc.deref(uri, member) {
            out.extend(declared_types(doc, u, m));
        }
    }
    out
}

/// The event type of a delivery: `header` (the value of the platform's
/// event header, when the scheme names one and it was sent), else the
/// body's `type` (or `event`, `event_type`) string.
pub fn event_type(header: Option<&str>, body: &Value) -> Option<String> {
    header.map(str::to_owned).or_else(|| {
        ["type", "event", "event_type"]
            .iter()
            .find_map(|k| body.get(k).and_then(Value::as_str))
            .map(str::to_owned)
    })
}

/// Judges one delivery body against `events`.
pub fn judge(events: &[WebhookEvent], header: Option<&str>, body: &[u8]) -> Payload {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Payload::NotJson(e.to_string()),
    };
    let Some(ty) = event_type(header, &value) else {
        return Payload::Untyped;
    };
    let Some(ev) = events.iter().find(|e| e.types.contains(&ty)) else {
        return Payload::Undocumented { event_type: ty };
    };
    let errors: Vec<String> = ev
        .validator
        .iter_errors(&value)
        .take(MAX_ERRORS)
        .map(|e| format!("{e} at #{}", e.instance_path().as_str()))
        .collect();
    if errors.is_empty() {
        Payload::Conforms {
            event: ev.name.clone(),
        }
    } else {
        Payload::Violations {
            event: ev.name.clone(),
            errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r##"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
      "webhooks": {
        "message.created": {"post": {"operationId": "onMessage",
          "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Ev"}}}},
          "responses": {"200": {"description": "ok"}}}},
        "other": {"post": {"requestBody": {"content": {"application/json": {"schema":
          {"allOf": [{"properties": {"type": {"enum": ["a.b", "a.c"]}}}], "required": ["x"]}}}},
          "responses": {"200": {"description": "ok"}}}}},
      "components": {"schemas": {"Ev": {"type": "object", "required": ["id", "type", "data"],
        "properties": {"id": {"type": "string"}, "type": {"const": "message.created"},
          "data": {"type": "object", "required": ["contact_id"]}}}}}}"##;

    #[test]
    fn deliveries_are_judged_by_their_event_type() {
        let doc = super::super::load::load_text(DOC, "t.json").unwrap();
        let events = webhooks(&doc).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(
            events[0].pointer,
            "#/webhooks/message.created/post/requestBody/content/application~1json/schema"
        );
        assert_eq!(events[1].types, ["other", "a.b", "a.c"]);
        let ok = br#"{"id": "e1", "type": "message.created", "data": {"contact_id": 1}}"#;
        assert_eq!(
            judge(&events, None, ok),
            Payload::Conforms {
                event: "message.created".into()
            }
        );
        // By the header, by the operationId.
        assert!(matches!(
            judge(&events, Some("onMessage"), ok),
            Payload::Conforms { .. }
        ));
        let missing = br#"{"id": "e1", "type": "message.created", "data": {}}"#;
        let Payload::Violations { event, errors } = judge(&events, None, missing) else {
            panic!("a required field is missing");
        };
        assert_eq!(event, "message.created");
        assert!(
            errors[0].contains("\"contact_id\" is a required property at #/data"),
            "{errors:?}"
        );
        assert!(matches!(
            judge(&events, None, br#"{"type": "a.c"}"#),
            Payload::Violations { .. }
        ));
        assert_eq!(
            judge(&events, None, br#"{"type": "z"}"#),
            Payload::Undocumented {
                event_type: "z".into()
            }
        );
        assert_eq!(judge(&events, None, br#"{"id": 1}"#), Payload::Untyped);
        assert!(matches!(judge(&events, None, b"<x/>"), Payload::NotJson(_)));
    }
}
