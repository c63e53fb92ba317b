//! `contract.ignore`: paths a suite's requests reach that are not part of
//! the API the document describes (an admin route, a test hook), so a
//! response there is never drift.

/// One pattern: segments matched exactly, `{name}` for any one segment, a
/// last `*` for any rest (none included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredPath {
    segments: Vec<Segment>,
    /// Ends in `/*`: any deeper path (and the prefix itself) matches.
    rest: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Exact(String),
    Any,
}

impl IgnoredPath {
    /// Parses `/internal/*`, `/admin/{id}/counts`, `/healthz`.
    pub fn parse(text: &str) -> Result<IgnoredPath, String> {
        let text = text.trim();
        if !text.starts_with('/') {
            return Err(format!(
                "`{text}` is not a path: write it from the first `/` (e.g. `/internal/*`)"
            ));
        }
        if text.contains(['?', '#']) {
            return Err(format!(
                "`{text}`: a path without a query or fragment is expected"
            ));
        }
        let mut parts: Vec<&str> = text[1..].split('/').collect();
        let rest = parts.last() == Some(&"*");
        if rest {
            parts.pop();
        }
        if parts.contains(&"*") {
            return Err(format!(
                "`{text}`: `*` stands for the rest of the path and may only end it (`/internal/*`); use `{{name}}` for one segment"
            ));
        }
        let segments = parts
            .into_iter()
            .filter(|p| !p.is_empty())
            .map(|p| {
                if p.starts_with('{') && p.ends_with('}') {
                    Segment::Any
                } else {
                    Segment::Exact(p.to_owned())
                }
            })
            .collect();
        Ok(IgnoredPath { segments, rest })
    }

    /// Whether `path` (no query) is one of these.
    pub fn matches(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        if parts.len() < self.segments.len() || (!self.rest && parts.len() > self.segments.len()) {
            return false;
        }
        self.segments.iter().zip(&parts).all(|(s, p)| match s {
            Segment::Exact(e) => e == p,
            Segment::Any => true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, path: &str) -> bool {
        IgnoredPath::parse(pattern).unwrap().matches(path)
    }

    #[test]
    fn exact_template_and_prefix_patterns() {
        assert!(m("/healthz", "/healthz"));
        assert!(m("/healthz", "/healthz/"));
        assert!(!m("/healthz", "/healthz/deep"));
        assert!(!m("/healthz", "/health"));
        assert!(m("/admin/{id}/counts", "/admin/42/counts"));
        assert!(!m("/admin/{id}/counts", "/admin/counts"));
        assert!(m("/internal/*", "/internal"));
        assert!(m("/internal/*", "/internal/a/b"));
        assert!(!m("/internal/*", "/internals/a"));
        assert!(m("/*", "/anything/at/all"));
    }

    #[test]
    fn patterns_that_are_no_paths_say_how_to_write_them() {
        assert!(IgnoredPath::parse("internal/*")
            .unwrap_err()
            .contains("from the first `/`"));
        assert!(IgnoredPath::parse("/a/*/b")
            .unwrap_err()
            .contains("may only end it"));
        assert!(IgnoredPath::parse("/a?x=1").unwrap_err().contains("query"));
    }
}
