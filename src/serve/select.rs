//! Turns a caller's selection (target, suites, tags) into a run: the
//! target must be an http(s) URL; suites are plain file names inside the
//! `--suites` folder (no paths, so a caller cannot name another file of
//! the server's); tags are plain words.

use std::path::Path;

use super::runs::RunSpec;

fn list(text: Option<&str>) -> Vec<String> {
    text.unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn plain(word: &str) -> bool {
    !word.starts_with('.')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn is_suite(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

/// The run `target`, `suites` and `tags` ask for, and its key's selection.
pub fn select(
    dir: &Path,
    target: Option<&str>,
    suites: Option<&str>,
    tags: Option<&str>,
) -> Result<(RunSpec, String), String> {
    let target = target.map(str::trim).filter(|t| !t.is_empty()).ok_or(
        "no target: give the canary's base URL as metadata.target (Flagger) or ?target= (Argo)",
    )?;
    let url = reqwest::Url::parse(target).map_err(|e| format!("target `{target}`: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("target `{target}`: not an http(s) URL"));
    }
    let mut names = list(suites);
    if names.is_empty() {
        names = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .flatten()
            .filter(|e| e.path().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| plain(n) && is_suite(n))
            .collect();
        if names.is_empty() {
            return Err(format!("{} holds no suite (*.yaml)", dir.display()));
        }
    }
    names.sort();
    names.dedup();
    for n in &names {
        if !plain(n) || !is_suite(n) {
            return Err(format!(
                "suite `{n}`: a suite is named by its file name in the --suites folder (NAME.yaml)"
            ));
        }
        if !dir.join(n).is_file() {
            return Err(format!("suite `{n}`: no such file in {}", dir.display()));
        }
    }
    let mut tags = list(tags);
    tags.sort();
    tags.dedup();
    if let Some(t) = tags.iter().find(|t| !plain(t)) {
        return Err(format!("tag `{t}`: tags are plain words"));
    }
    let selection = format!("{target} {} {}", names.join(","), tags.join(","));
    Ok((
        RunSpec {
            target: target.to_owned(),
            suites: names.iter().map(|n| dir.join(n)).collect(),
            tags,
        },
        selection,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_suite_names_inside_the_folder_are_run() {
        let dir = std::env::temp_dir().join(format!("tminus-select-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.yaml"), "suite: a\n").unwrap();
        std::fs::write(dir.join("b.yml"), "suite: b\n").unwrap();
        let t = Some("http://127.0.0.1:1");
        let (spec, sel) = select(&dir, t, None, Some("x, x,y")).unwrap();
        assert_eq!(spec.suites.len(), 2);
        assert_eq!(sel, "http://127.0.0.1:1 a.yaml,b.yml x,y");
        for bad in [
            "../etc/passwd",
            "/etc/passwd",
            ".hidden.yaml",
            "c.yaml",
            "a.json",
        ] {
            assert!(select(&dir, t, Some(bad), None).is_err(), "{bad}");
        }
        assert!(select(&dir, None, None, None).is_err());
        assert!(select(&dir, Some("file:///etc"), None, None).is_err());
        assert!(select(&dir, t, None, Some("a b")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
