//! Planning the shared request / expect / capture grammar: templates
//! compiled, regexes and JSON paths checked, methods validated. The planned
//! types live in `model::request`.

use regex::Regex;
use serde_saphyr::Spanned;

use super::PlanCtx;
use crate::model::jsonpath::JsonPath;
pub use crate::model::request::{
    BodyPlan, CapturePlan, CaptureSource, CounterPlan, ExpectPlan, HeaderCheck, JsonCheck,
    JsonTemplate, RequestPlan, UrlPlan,
};
use crate::model::template::Template;
use crate::spec::request::{
    CaptureSpec, CounterSpec, ExpectSpec, HeaderExpect, JsonExpect, RequestSpec,
};

const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

impl PlanCtx<'_> {
    pub fn template(&mut self, s: &Spanned<String>) -> Template {
        self.template_at(&s.value, s.referenced)
    }

    pub fn template_at(&mut self, text: &str, loc: serde_saphyr::Location) -> Template {
        match Template::compile(text, &self.resolver()) {
            Ok(t) => t,
            Err(errs) => {
                for e in errs {
                    self.error(loc, e);
                }
                Template::default()
            }
        }
    }

    fn json_template(
        &mut self,
        v: &serde_json::Value,
        loc: serde_saphyr::Location,
    ) -> JsonTemplate {
        use serde_json::Value;
        match v {
            Value::Null => JsonTemplate::Null,
            Value::Bool(b) => JsonTemplate::Bool(*b),
            Value::Number(n) => JsonTemplate::Number(n.clone()),
            Value::String(s) => JsonTemplate::Str(self.template_at(s, loc)),
            Value::Array(a) => {
                JsonTemplate::Array(a.iter().map(|x| self.json_template(x, loc)).collect())
            }
            Value::Object(o) => JsonTemplate::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), self.json_template(x, loc)))
                    .collect(),
            ),
        }
    }

    pub fn request(&mut self, r: &RequestSpec, at: serde_saphyr::Location) -> RequestPlan {
        let method = match &r.method {
            None => reqwest::Method::GET,
            Some(m) => {
                let up = m.value.to_ascii_uppercase();
                if !METHODS.contains(&up.as_str()) {
                    let hint = crate::model::text::suggest(&up, METHODS.iter().copied())
                        .map(|s| format!(", did you mean `{s}`?"))
                        .unwrap_or_default();
                    self.error(
                        m.referenced,
                        format!("unknown HTTP method `{}`{hint}", m.value),
                    );
                }
                reqwest::Method::from_bytes(up.as_bytes()).unwrap_or(reqwest::Method::GET)
            }
        };
        let url = match (&r.path, &r.url) {
            (Some(p), None) => {
                if !p.value.starts_with('/') && !p.value.starts_with("${") {
                    self.error(
                        p.referenced,
                        format!(
                            "path `{}` must start with `/` (use `url:` for an absolute URL)",
                            p.value
                        ),
                    );
                }
                UrlPlan::Path(self.template(p))
            }
            (None, Some(u)) => {
                let t = self.template(u);
                if let Some(text) = t.as_literal() {
                    if let Err(e) = http_url(&text) {
                        self.error(
                            u.referenced,
                            format!("url `{}` {e}", crate::redact::mask_userinfo(&text)),
                        );
                    }
                }
                UrlPlan::Absolute(t)
            }
            (Some(p), Some(_)) => {
                self.error(p.referenced, "a request takes `path` or `url`, not both");
                UrlPlan::Path(Template::default())
            }
            (None, None) => {
                self.error(at, "a request needs a `path` (or an absolute `url`)");
                UrlPlan::Path(Template::default())
            }
        };
        let headers = r.headers.iter().map(|(k, v)| self.header(k, v)).collect();
        let query = r
            .query
            .iter()
            .map(|(k, v)| (k.clone(), self.template_at(&v.value.0, v.referenced)))
            .collect();
        let bodies = [r.json.is_some(), r.body.is_some(), r.form.is_some()]
            .iter()
            .filter(|b| **b)
            .count();
        if bodies > 1 {
            self.error(at, "a request takes one of `json`, `body` or `form`");
        }
        let body = if let Some(j) = &r.json {
            BodyPlan::Json(self.json_template(&j.value, j.referenced))
        } else if let Some(b) = &r.body {
            BodyPlan::Raw(self.template(b))
        } else if let Some(f) = &r.form {
            BodyPlan::Form(
                f.iter()
                    .map(|(k, v)| (k.clone(), self.template_at(&v.value.0, v.referenced)))
                    .collect(),
            )
        } else {
            BodyPlan::None
        };
        RequestPlan {
            method,
            url,
            headers,
            query,
            body,
            timeout: r.timeout.as_ref().map(|t| {
                if t.value.0.is_zero() {
                    self.error(t.referenced, "timeout must be longer than zero");
                }
                t.value.0
            }),
        }
    }

    pub fn regex(&mut self, text: &str, loc: serde_saphyr::Location) -> Regex {
        match Regex::new(text) {
            Ok(r) => r,
            Err(e) => {
                self.error(loc, format!("invalid regex `{text}`: {e}"));
                Regex::new("$^").expect("static regex")
            }
        }
    }

    pub fn json_path(&mut self, text: &str, loc: serde_saphyr::Location) -> JsonPath {
        match JsonPath::parse(text) {
            Ok(p) => p,
            Err(e) => {
                self.error(loc, e);
                JsonPath::parse("$").expect("root path")
            }
        }
    }

    pub fn expect(&mut self, e: &ExpectSpec) -> ExpectPlan {
        let headers = e
            .headers
            .iter()
            .map(|(name, spec)| {
                let check = match &spec.value {
                    HeaderExpect::Present => HeaderCheck::Present,
                    HeaderExpect::Absent => HeaderCheck::Absent,
                    HeaderExpect::Equals(v) => {
                        HeaderCheck::Equals(self.template_at(v, spec.referenced))
                    }
                    HeaderExpect::Matches(re) => {
                        HeaderCheck::Matches(self.regex(re, spec.referenced))
                    }
                };
                (name.clone(), check)
            })
            .collect();
        let json = e
            .json
            .iter()
            .map(|(path, spec)| {
                let p = self.json_path(path, spec.referenced);
                let check = match &spec.value {
                    JsonExpect::Equals(v) => {
                        JsonCheck::Equals(self.json_template(v, spec.referenced))
                    }
                    JsonExpect::Exists(b) => JsonCheck::Exists(*b),
                    JsonExpect::Matches(re) => JsonCheck::Matches(self.regex(re, spec.referenced)),
                };
                (p, check)
            })
            .collect();
        ExpectPlan {
            status: e.status.as_ref().map(|s| s.value.clone()),
            headers,
            json,
            body_contains: e.body_contains.as_ref().map(|b| self.template(b)),
            latency_under: e.latency_under.as_ref().map(|l| l.value.0),
        }
    }

    pub fn capture(&mut self, name: &str, spec: &Spanned<CaptureSpec>) -> Option<CapturePlan> {
        let source = match (&spec.value.json, &spec.value.header) {
            (Some(p), None) => CaptureSource::Json(self.json_path(p, spec.referenced)),
            (None, Some(h)) => CaptureSource::Header(h.clone()),
            _ => {
                self.error(
                    spec.referenced,
                    format!("capture `{name}` needs exactly one of `json` or `header`"),
                );
                return None;
            }
        };
        Some(CapturePlan {
            name: name.to_owned(),
            source,
        })
    }

    pub fn counter(&mut self, c: &CounterSpec) -> CounterPlan {
        CounterPlan {
            request: self.request(&c.request, c.value.referenced),
            value: self.json_path(&c.value.value, c.value.referenced),
        }
    }
}

/// A URL tminus can send to: http(s), parsable, with a host.
pub fn http_url(url: &str) -> Result<reqwest::Url, String> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err("must be an http:// or https:// URL".into());
    }
    match reqwest::Url::parse(url) {
        Err(e) => Err(format!("is not a valid URL ({e})")),
        Ok(u) if u.host_str().is_none_or(str::is_empty) => Err("has no host".into()),
        Ok(u) => Ok(u),
    }
}
