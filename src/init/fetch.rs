//! `tminus init --from-openapi URL`: the document read from an http(s)
//! URL (FastAPI's `/openapi.json`, NestJS's `/api-json`), bounded: at most
//! [`MAX_BYTES`], within [`TIMEOUT`], redirects followed only on the same
//! origin (at most 5). Nothing identifies the caller unless asked: no
//! cookies, no credentials (a `user:password@` in the URL is refused), only
//! the headers given with `--openapi-header`. The suite's `contract:` names
//! a file, so the document is saved beside the suite.

use std::time::Duration;

/// The largest document read.
pub const MAX_BYTES: usize = 10 * 1024 * 1024;
/// The time the whole read may take.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A document read from a URL.
#[derive(Debug)]
pub struct Fetched {
    pub text: String,
    /// `json` or `yaml`, from its first character: the saved file's extension.
    pub extension: &'static str,
}

/// Whether `--from-openapi`'s argument is a URL rather than a file.
pub fn is_url(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// Reads the document at `url`, sending `headers` (NAME: VALUE) only.
pub fn fetch_document(url: &str, headers: &[String]) -> Result<Fetched, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url}: not a URL ({e})"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "{}: credentials in the URL are not sent; give them with --openapi-header \
             'Authorization: ...'",
            redacted(&parsed)
        ));
    }
    let shown = redacted(&parsed);
    let mut extra = reqwest::header::HeaderMap::new();
    for h in headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| format!("--openapi-header `{}`: write it NAME: VALUE", name_of(h)))?;
        let k = reqwest::header::HeaderName::from_bytes(k.trim().as_bytes())
            .map_err(|e| format!("--openapi-header `{}`: {e}", name_of(h)))?;
        let mut v = reqwest::header::HeaderValue::from_str(v.trim())
            .map_err(|e| format!("--openapi-header `{k}`: {e}"))?;
        v.set_sensitive(true);
        extra.insert(k, v);
    }
    let origin = parsed.origin();
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= 5 {
            attempt.error("more than 5 redirects")
        } else if attempt.url().origin() != origin {
            let to = attempt.url().origin().ascii_serialization();
            attempt.error(format!(
                "a redirect to another origin ({to}): not followed; give that URL"
            ))
        } else {
            attempt.follow()
        }
    });
    let client = crate::http::client_builder()
        .redirect(policy)
        .timeout(TIMEOUT)
        .default_headers(extra)
        .build()
        .map_err(|e| format!("{shown}: cannot build the HTTP client: {e}"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("{shown}: cannot start a runtime: {e}"))?;
    let bytes = rt.block_on(async {
        let mut resp = client
            .get(parsed.clone())
            .header(
                reqwest::header::ACCEPT,
                "application/json, application/yaml;q=0.9, */*;q=0.1",
            )
            .send()
            .await
            .map_err(|e| format!("{shown}: cannot read the document: {}", chain(&e)))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!(
                "{shown}: answered {status}{}",
                if status.as_u16() == 401 || status.as_u16() == 403 {
                    "; no credentials were sent (give them with --openapi-header)"
                } else {
                    ""
                }
            ));
        }
        if resp.content_length().is_some_and(|n| n > MAX_BYTES as u64) {
            return Err(format!(
                "{shown}: the document is larger than {MAX_BYTES} bytes"
            ));
        }
        let mut out = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| format!("{shown}: reading the document: {}", chain(&e)))?
        {
            if out.len() + chunk.len() > MAX_BYTES {
                return Err(format!(
                    "{shown}: the document is larger than {MAX_BYTES} bytes"
                ));
            }
            out.extend_from_slice(&chunk);
        }
        Ok::<Vec<u8>, String>(out)
    })?;
    let text =
        String::from_utf8(bytes).map_err(|_| format!("{shown}: the document is not UTF-8"))?;
    let extension = if text.trim_start().starts_with('{') {
        "json"
    } else {
        "yaml"
    };
    Ok(Fetched { text, extension })
}

/// The URL without its query (it may hold a token) for messages.
fn redacted(u: &reqwest::Url) -> String {
    let mut u = u.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    if u.query().is_some() {
        u.set_query(Some("…"));
    }
    u.to_string()
}

/// A header's name only: its value may be a secret.
fn name_of(h: &str) -> &str {
    h.trim().split([':', ' ']).next().unwrap_or_default()
}

/// The error and its causes, joined (reqwest's top line says little).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let s = c.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_refusals() {
        assert!(is_url("HTTP://127.0.0.1/openapi.json"));
        assert!(!is_url("api/openapi.yaml"));
        let e = fetch_document("http://u:p@127.0.0.1:9/openapi.json", &[]).unwrap_err();
        assert!(e.contains("credentials in the URL are not sent"), "{e}");
        assert!(!e.contains("u:p"), "{e}");
        let e = fetch_document(
            "http://127.0.0.1:9/openapi.json",
            &["Authorization Bearer x".into()],
        )
        .unwrap_err();
        assert!(e.contains("NAME: VALUE") && !e.contains("Bearer x"), "{e}");
    }
}
