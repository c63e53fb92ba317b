//! The request / expect / capture grammar after planning: templates
//! compiled, regexes and JSON paths checked, methods validated. The HTTP
//! client renders these; `context::request` builds them from suite specs.

use std::time::Duration;

use regex::Regex;

use crate::model::jsonpath::JsonPath;
use crate::model::scalar::StatusSet;
use crate::model::template::{Scope, Template};

#[derive(Debug, Clone)]
pub enum UrlPlan {
    /// Joined to the suite's base URL at run time.
    Path(Template),
    Absolute(Template),
}

#[derive(Debug, Clone)]
pub enum JsonTemplate {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    Str(Template),
    Array(Vec<JsonTemplate>),
    Object(Vec<(String, JsonTemplate)>),
}

impl JsonTemplate {
    pub fn render(&self, scope: &Scope) -> serde_json::Value {
        use serde_json::Value;
        match self {
            JsonTemplate::Null => Value::Null,
            JsonTemplate::Bool(b) => Value::Bool(*b),
            JsonTemplate::Number(n) => Value::Number(n.clone()),
            JsonTemplate::Str(t) => Value::String(t.render(scope)),
            JsonTemplate::Array(a) => Value::Array(a.iter().map(|v| v.render(scope)).collect()),
            JsonTemplate::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), v.render(scope)))
                    .collect(),
            ),
        }
    }
}

#[derive(Debug, Clone)]
pub enum BodyPlan {
    None,
    Json(JsonTemplate),
    Raw(Template),
    Form(Vec<(String, Template)>),
}

#[derive(Debug, Clone)]
pub struct RequestPlan {
    pub method: reqwest::Method,
    pub url: UrlPlan,
    pub headers: Vec<(String, Template)>,
    pub query: Vec<(String, Template)>,
    pub body: BodyPlan,
    pub timeout: Option<Duration>,
}

#[derive(Debug, Clone)]
pub enum HeaderCheck {
    Present,
    Absent,
    Equals(Template),
    Matches(Regex),
}

#[derive(Debug, Clone)]
pub enum JsonCheck {
    /// String leaves are templates (`${var.id}` from a capture).
    Equals(JsonTemplate),
    Exists(bool),
    Matches(Regex),
}

#[derive(Debug, Clone, Default)]
pub struct ExpectPlan {
    pub status: Option<StatusSet>,
    pub headers: Vec<(String, HeaderCheck)>,
    pub json: Vec<(JsonPath, JsonCheck)>,
    pub body_contains: Option<Template>,
    pub latency_under: Option<Duration>,
}

#[derive(Debug, Clone)]
pub enum CaptureSource {
    Json(JsonPath),
    Header(String),
}

#[derive(Debug, Clone)]
pub struct CapturePlan {
    pub name: String,
    pub source: CaptureSource,
}

/// A planned side-effect counter (see `CounterSpec`).
#[derive(Debug, Clone)]
pub struct CounterPlan {
    pub request: RequestPlan,
    pub value: JsonPath,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Redactor;
    use std::collections::{HashMap, HashSet};

    fn capture_template(text: &str) -> Template {
        let vars = HashMap::new();
        let caps: HashSet<String> = ["id".to_owned()].into_iter().collect();
        let red = Redactor::new();
        let r = crate::model::template::Resolver {
            vars: &vars,
            captures: &caps,
            env: &|_| None,
            redactor: &red,
        };
        Template::compile(text, &r).unwrap()
    }

    #[test]
    fn json_template_renders_every_shape_in_order() {
        let t = JsonTemplate::Object(vec![
            ("z".into(), JsonTemplate::Null),
            ("ok".into(), JsonTemplate::Bool(true)),
            ("n".into(), JsonTemplate::Number(7.into())),
            (
                "ids".into(),
                JsonTemplate::Array(vec![
                    JsonTemplate::Str(capture_template("msg-${var.id}")),
                    JsonTemplate::Str(Template::literal("x")),
                ]),
            ),
        ]);
        let mut scope = Scope::new();
        scope.insert("id".into(), "42".into());
        let v = t.render(&scope);
        assert_eq!(
            v.to_string(),
            r#"{"z":null,"ok":true,"n":7,"ids":["msg-42","x"]}"#
        );
    }
}
