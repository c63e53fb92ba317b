//! Version semantics: a breaking change is allowed when the API's major
//! version moves, said by `info.version` (semantic versioning, a leading
//! `v` taken) or by a `/v1` -> `/v2` segment of the path (its base path
//! included). Anything else keeps a breaking change failing, and the
//! report says what the version did.

/// The major version of `v`: `2.1.0` -> 2, `v3` -> 3, `2024-01-01` -> 2024.
pub fn major(v: &str) -> Option<u64> {
    let v = v.trim();
    let v = v.strip_prefix(['v', 'V']).unwrap_or(v);
    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Why breaking changes are allowed, when `info.version`'s major grew.
pub fn major_bump(old: Option<&str>, new: Option<&str>) -> Option<String> {
    let (o, n) = (old?, new?);
    match (major(o), major(n)) {
        (Some(a), Some(b)) if b > a => Some(format!(
            "info.version {o} -> {n} (major version {a} -> {b})"
        )),
        _ => None,
    }
}

/// What the report says when a breaking change has no major version move.
pub fn not_bumped(old: Option<&str>, new: Option<&str>) -> String {
    match (old, new) {
        (Some(o), Some(n)) if o == n => format!(
            "info.version is {o} on both sides: a breaking change needs a new major version (or a /v{{N+1}} path)"
        ),
        (Some(o), Some(n)) => format!(
            "info.version {o} -> {n} is not a new major version: a breaking change needs one (or a /v{{N+1}} path)"
        ),
        _ => "no info.version to compare: a breaking change needs a new major version (or a /v{N+1} path)".to_owned(),
    }
}

fn segment_version(s: &str) -> Option<u64> {
    let rest = s.strip_prefix(['v', 'V'])?;
    if rest.is_empty() || !rest.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// `get /v1/pets/{}` -> (`get /v*/pets/{}`, [1]): the key with its
/// version segments blanked, and the versions.
pub fn path_versions(key: &str) -> (String, Vec<u64>) {
    let mut versions = Vec::new();
    let blanked: Vec<String> = key
        .split('/')
        .map(|s| match segment_version(s) {
            Some(v) => {
                versions.push(v);
                "v*".to_owned()
            }
            None => s.to_owned(),
        })
        .collect();
    (blanked.join("/"), versions)
}

/// Why an operation's move from `old_key` to `new_key` allows breaking
/// changes: its path's version grew.
pub fn path_bump(old_key: &str, new_key: &str) -> Option<String> {
    let (_, a) = path_versions(old_key);
    let (_, b) = path_versions(new_key);
    let grew = a.len() == b.len()
        && a.iter().zip(&b).any(|(x, y)| y > x)
        && a.iter().zip(&b).all(|(x, y)| y >= x);
    grew.then(|| {
        let show = |v: &[u64]| {
            v.iter()
                .map(|n| format!("/v{n}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        format!("the path's version {} -> {}", show(&a), show(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majors_and_paths() {
        assert_eq!(major("1.4.0"), Some(1));
        assert_eq!(major("v2"), Some(2));
        assert_eq!(major("beta"), None);
        assert!(major_bump(Some("1.4.0"), Some("2.0.0")).is_some());
        assert!(major_bump(Some("1.4.0"), Some("1.5.0")).is_none());
        assert!(major_bump(Some("2.0.0"), Some("1.0.0")).is_none());
        assert_eq!(path_versions("get /v1/pets/{}").0, "get /v*/pets/{}");
        assert!(path_bump("get /v1/pets", "get /v2/pets").is_some());
        assert!(path_bump("get /v2/pets", "get /v1/pets").is_none());
    }
}
