//! The credentials a written suite sends, from the document's security
//! schemes and each operation's requirement (its own `security`, else the
//! document's: FastAPI, NestJS and drf-spectacular write it per operation).
//! Every credential is a `${secret.X}` (an `${env.X}` for an OAuth2 client
//! id) with no fallback value, so a missing one stops `validate` with its
//! name; an operation whose requirement is `security: []` (or allows `{}`)
//! needs none.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::contract::Document;

/// One credential, as the suite writes it: values are tminus templates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Credential {
    Header {
        name: String,
        value: String,
    },
    Query {
        name: String,
        value: String,
    },
    Cookie {
        name: String,
        value: String,
    },
    /// `target.auth.oauth2` (client credentials, docs/oauth.md).
    OAuth2 {
        token_url: String,
        client_id: String,
        client_secret: String,
        scopes: Vec<String>,
    },
}

/// What one operation asks for: the first alternative of its requirement
/// tminus can send (empty: none).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Need {
    pub schemes: Vec<String>,
    pub creds: Vec<Credential>,
}

impl Need {
    pub fn label(&self) -> String {
        if self.schemes.is_empty() {
            "none".into()
        } else {
            self.schemes.join(" + ")
        }
    }

    /// The credentials of `self` that `target` does not already send.
    pub fn beyond(&self, target: &Need) -> Vec<Credential> {
        self.creds
            .iter()
            .filter(|c| !target.creds.contains(c) || matches!(c, Credential::Query { .. }))
            .cloned()
            .collect()
    }
}

/// The document's security schemes, each with the secret it is given.
pub(super) struct Security<'d> {
    doc: &'d Document,
    schemes: Vec<(String, &'d Value)>,
    secrets: BTreeMap<String, String>,
}

impl<'d> Security<'d> {
    pub fn new(doc: &'d Document) -> Security<'d> {
        let mut schemes = Vec::new();
        let listed = doc
            .root_value()
            .pointer("/components/securitySchemes")
            .and_then(Value::as_object);
        for (name, s) in listed.into_iter().flatten() {
            if let Ok((_, s)) = doc.deref(&doc.root, s) {
                schemes.push((name.clone(), s));
            }
        }
        // The first scheme of each kind gets the name the docs use; the
        // others that name with their own after it.
        let mut secrets = BTreeMap::new();
        let mut taken = Vec::new();
        for (name, s) in &schemes {
            let base = match (field(s, "type"), field(s, "scheme").to_ascii_lowercase()) {
                ("http", b) if b == "basic" => "TMINUS_API_BASIC",
                ("oauth2", _) => "TMINUS_OAUTH_CLIENT",
                _ => "TMINUS_API_KEY",
            };
            let secret = if taken.contains(&base) {
                format!("{base}_{}", env_slug(name))
            } else {
                taken.push(base);
                base.to_owned()
            };
            secrets.insert(name.clone(), secret);
        }
        Security {
            doc,
            schemes,
            secrets,
        }
    }

    /// Header names the schemes send (a parameter of that name is theirs).
    pub fn header_names(&self) -> Vec<String> {
        let mut out = vec!["authorization".to_owned()];
        for (_, s) in &self.schemes {
            if field(s, "type") == "apiKey" && field(s, "in") == "header" {
                out.push(field(s, "name").to_ascii_lowercase());
            }
        }
        out
    }

    /// The requirement of `op`: its own `security`, else the document's.
    pub fn need(&self, op: &Value) -> Result<Need, String> {
        let req = op
            .get("security")
            .or_else(|| self.doc.root_value().get("security"));
        let Some(alternatives) = req.and_then(Value::as_array) else {
            return Ok(Need::default());
        };
        let mut why = Vec::new();
        for alt in alternatives {
            let Some(alt) = alt.as_object() else { continue };
            let mut need = Need::default();
            let made: Result<(), String> = alt.iter().try_for_each(|(name, scopes)| {
                let scopes = scopes
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect();
                need.creds.push(self.credential(name, scopes)?);
                need.schemes.push(name.clone());
                Ok(())
            });
            match made {
                Ok(()) => return Ok(need),
                Err(e) => why.push(e),
            }
        }
        if alternatives.is_empty() {
            return Ok(Need::default());
        }
        Err(format!(
            "its security cannot be sent by tminus ({}); give the credential in \
             target.headers and write its checks by hand",
            why.join("; ")
        ))
    }

    fn credential(&self, name: &str, scopes: Vec<String>) -> Result<Credential, String> {
        let s = self
            .schemes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
            .ok_or_else(|| format!("scheme `{name}` is not in components.securitySchemes"))?;
        let secret = self.secrets.get(name).cloned().unwrap_or_default();
        let key = format!("${{secret.{secret}}}");
        let http = field(s, "scheme").to_ascii_lowercase();
        let (place, pname) = (field(s, "in"), field(s, "name").to_owned());
        Ok(match (field(s, "type"), http.as_str(), place) {
            ("http", "bearer", _) => Credential::Header {
                name: "Authorization".into(),
                value: format!("Bearer {key}"),
            },
            ("http", "basic", _) => Credential::Header {
                name: "Authorization".into(),
                value: format!("Basic {key}"),
            },
            ("apiKey", _, "header") => Credential::Header {
                name: pname,
                value: key,
            },
            ("apiKey", _, "query") => Credential::Query {
                name: pname,
                value: key,
            },
            ("apiKey", _, "cookie") => Credential::Cookie {
                name: pname,
                value: key,
            },
            ("oauth2", _, _) => {
                let url = s
                    .pointer("/flows/clientCredentials/tokenUrl")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        format!("scheme `{name}`: an OAuth2 flow other than client credentials")
                    })?;
                Credential::OAuth2 {
                    token_url: url.to_owned(),
                    client_id: format!("${{env.{secret}_ID}}"),
                    client_secret: format!("${{secret.{secret}_SECRET}}"),
                    scopes,
                }
            }
            (ty, _, _) => {
                return Err(format!(
                    "scheme `{name}` ({ty}{}{})",
                    if http.is_empty() { "" } else { " " },
                    http
                ))
            }
        })
    }
}

/// The suite-wide credential: the one every tested operation asks for
/// when they agree; otherwise only an OAuth2 token (it can only be
/// suite-wide), and each request carries the rest of its own.
pub(super) fn suite_need(needs: &[Need]) -> Need {
    let Some(first) = needs.first() else {
        return Need::default();
    };
    if needs.iter().all(|n| n == first) {
        return first.clone();
    }
    needs
        .iter()
        .find_map(|n| {
            n.creds
                .iter()
                .position(|c| matches!(c, Credential::OAuth2 { .. }))
                .map(|i| Need {
                    schemes: vec![n.schemes[i].clone()],
                    creds: vec![n.creds[i].clone()],
                })
        })
        .unwrap_or_default()
}

/// (name, template) pairs: a header or a query parameter.
pub(super) type Pairs = Vec<(String, String)>;

/// Headers and query parameters (name, template) that carry `creds`;
/// cookies joined into one `Cookie` header.
pub(super) fn carried(creds: &[Credential]) -> (Pairs, Pairs) {
    let (mut headers, mut query, mut cookies) = (Vec::new(), Vec::new(), Vec::new());
    for c in creds {
        match c {
            Credential::Header { name, value } => headers.push((name.clone(), value.clone())),
            Credential::Query { name, value } => query.push((name.clone(), value.clone())),
            Credential::Cookie { name, value } => cookies.push(format!("{name}={value}")),
            Credential::OAuth2 { .. } => {}
        }
    }
    if !cookies.is_empty() {
        headers.push(("Cookie".into(), cookies.join("; ")));
    }
    (headers, query)
}

fn field<'v>(s: &'v Value, key: &str) -> &'v str {
    s.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `HTTPBearer` -> `HTTPBEARER`, `api-key` -> `API_KEY`.
fn env_slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        crate::contract::load_document_text(text, "t.json").unwrap()
    }

    const DOC: &str = r#"{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{},
      "components":{"securitySchemes":{
        "HTTPBearer":{"type":"http","scheme":"bearer"},
        "Key":{"type":"apiKey","in":"query","name":"api_key"},
        "Session":{"type":"apiKey","in":"cookie","name":"sid"},
        "Basic":{"type":"http","scheme":"basic"},
        "OIDC":{"type":"openIdConnect","openIdConnectUrl":"https://id/x"},
        "CC":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"/token","scopes":{}}}}}}}"#;

    #[test]
    fn per_operation_requirements_become_secrets_without_fallbacks() {
        let d = doc(DOC);
        let s = Security::new(&d);
        let bearer = s
            .need(&serde_json::json!({"security": [{"HTTPBearer": []}]}))
            .unwrap();
        assert_eq!(
            bearer.creds,
            vec![Credential::Header {
                name: "Authorization".into(),
                value: "Bearer ${secret.TMINUS_API_KEY}".into()
            }]
        );
        // The second key-like scheme is named after itself.
        let key = s
            .need(&serde_json::json!({"security": [{"Key": []}]}))
            .unwrap();
        assert_eq!(
            carried(&key.creds).1,
            vec![("api_key".into(), "${secret.TMINUS_API_KEY_KEY}".into())]
        );
        let cookie = s
            .need(&serde_json::json!({"security": [{"Session": []}]}))
            .unwrap();
        assert_eq!(
            carried(&cookie.creds).0,
            vec![(
                "Cookie".into(),
                "sid=${secret.TMINUS_API_KEY_SESSION}".into()
            )]
        );
        assert!(s
            .need(&serde_json::json!({"security": []}))
            .unwrap()
            .creds
            .is_empty());
        // The first alternative tminus can send is taken.
        let alt = s
            .need(&serde_json::json!({"security": [{"OIDC": []}, {"Basic": []}]}))
            .unwrap();
        assert_eq!(alt.schemes, vec!["Basic".to_owned()]);
        let err = s
            .need(&serde_json::json!({"security": [{"OIDC": []}]}))
            .unwrap_err();
        assert!(err.contains("OIDC"), "{err}");
        let cc = s
            .need(&serde_json::json!({"security": [{"CC": ["a"]}]}))
            .unwrap();
        assert!(
            matches!(&cc.creds[0], Credential::OAuth2 { client_secret, .. }
            if client_secret == "${secret.TMINUS_OAUTH_CLIENT_SECRET}")
        );
        assert_eq!(suite_need(&[bearer.clone(), bearer.clone()]), bearer);
        assert_eq!(
            suite_need(&[bearer.clone(), Need::default()]),
            Need::default()
        );
    }
}
