//! Turns a caller's selection (target, suites, tags) into a run: the
//! target must be an http(s) URL, inside `--allow-target` when given (so a
//! caller cannot turn the gate's checks on another service of the
//! cluster); suites are plain file names inside the `--suites` folder (no
//! paths, so a caller cannot name another file of the server's), and a
//! suite that is a symbolic link must resolve inside the folder too (a
//! Kubernetes ConfigMap's links do); tags are plain words.

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

/// One `--allow-target` origin: `scheme://host[:port]`, the host a name
/// or `*.suffix` (any name under it), the port a number or `*` (any; when
/// left out, the scheme's default).
#[derive(Debug, Clone)]
pub struct Allowed {
    scheme: String,
    host: String,
    /// `None`: any port.
    port: Option<u16>,
}

impl std::str::FromStr for Allowed {
    type Err = String;
    fn from_str(text: &str) -> Result<Allowed, String> {
        let bad = |why: &str| {
            format!("--allow-target {text}: {why} (give an origin: http(s)://HOST[:PORT], HOST may be *.DOMAIN, PORT may be *)")
        };
        let (scheme, rest) = text.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let default = match scheme {
            "http" => 80,
            "https" => 443,
            _ => return Err(bad("not http or https")),
        };
        // `[::1]:8080`: the port follows the bracket.
        let host_end = match rest.strip_prefix('[') {
            Some(r) => r.find(']').map(|i| i + 2).ok_or_else(|| bad("no `]`"))?,
            None => rest.find(':').unwrap_or(rest.len()),
        };
        let (host, port) = rest.split_at(host_end);
        let port = match port {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| bad("text after the host"))?,
            ),
        };
        if host.is_empty()
            || host.contains(['/', '?', '#', '@'])
            || host.chars().skip(1).any(|c| c == '*')
        {
            return Err(bad("the host must be a name, an address or *.DOMAIN"));
        }
        if host.starts_with('*') && !host.starts_with("*.") {
            return Err(bad("a wildcard host is *.DOMAIN"));
        }
        let port = match port {
            None => Some(default),
            Some("*") => None,
            Some(p) => Some(
                p.parse()
                    .map_err(|_| bad("the port must be a number or *"))?,
            ),
        };
        Ok(Allowed {
            scheme: scheme.to_owned(),
            host: host.to_ascii_lowercase(),
            port,
        })
    }
}

impl Allowed {
    fn admits(&self, url: &reqwest::Url) -> bool {
        let host = url.host_str().unwrap_or("").to_ascii_lowercase();
        let host_ok = match self.host.strip_prefix("*.") {
            Some(suffix) => host
                .strip_suffix(suffix)
                .is_some_and(|h| h.len() > 1 && h.ends_with('.')),
            None => host == self.host,
        };
        url.scheme() == self.scheme
            && host_ok
            && self
                .port
                .is_none_or(|p| url.port_or_known_default() == Some(p))
    }
}

/// The suite file `name` in `dir`, when it resolves inside `dir` (a link
/// to a file elsewhere does not) and is a regular file.
fn inside(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    let root = dir.canonicalize().ok()?;
    let file = dir.join(name).canonicalize().ok()?;
    (file.starts_with(&root) && file.is_file()).then_some(file)
}

fn is_suite(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

/// Why a selection was refused: the status to answer and what to say.
#[derive(Debug)]
pub struct Refusal(pub axum::http::StatusCode, pub String);

impl From<String> for Refusal {
    fn from(text: String) -> Refusal {
        Refusal(axum::http::StatusCode::BAD_REQUEST, text)
    }
}

impl From<&str> for Refusal {
    fn from(text: &str) -> Refusal {
        Refusal::from(text.to_owned())
    }
}

/// The run `target`, `suites` and `tags` ask for, and its key's selection.
pub fn select(
    dir: &Path,
    allowed: &[Allowed],
    target: Option<&str>,
    suites: Option<&str>,
    tags: Option<&str>,
) -> Result<(RunSpec, String), Refusal> {
    let target = target.map(str::trim).filter(|t| !t.is_empty()).ok_or(
        "no target: give the canary's base URL as metadata.target (Flagger) or ?target= (Argo)",
    )?;
    let url = reqwest::Url::parse(target).map_err(|e| format!("target `{target}`: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("target `{target}`: not an http(s) URL").into());
    }
    if !allowed.is_empty() && !allowed.iter().any(|a| a.admits(&url)) {
        return Err(Refusal(
            axum::http::StatusCode::FORBIDDEN,
            format!("target `{target}`: outside the targets this server may run against (--allow-target); nothing was started"),
        ));
    }
    let mut names = list(suites);
    if names.is_empty() {
        names = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| plain(n) && is_suite(n) && inside(dir, n).is_some())
            .collect();
        if names.is_empty() {
            return Err(format!("{} holds no suite (*.yaml)", dir.display()).into());
        }
    }
    names.sort();
    names.dedup();
    for n in &names {
        if !plain(n) || !is_suite(n) {
            return Err(Refusal::from(format!(
                "suite `{n}`: a suite is named by its file name in the --suites folder (NAME.yaml)"
            )));
        }
        if inside(dir, n).is_none() {
            return Err(Refusal::from(format!(
                "suite `{n}`: no such file in {} (a link must lead to a file inside it)",
                dir.display()
            )));
        }
    }
    let mut tags = list(tags);
    tags.sort();
    tags.dedup();
    if let Some(t) = tags.iter().find(|t| !plain(t)) {
        return Err(format!("tag `{t}`: tags are plain words").into());
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
        let (spec, sel) = select(&dir, &[], t, None, Some("x, x,y")).unwrap();
        assert_eq!(spec.suites.len(), 2);
        assert_eq!(sel, "http://127.0.0.1:1 a.yaml,b.yml x,y");
        for bad in [
            "../etc/passwd",
            "/etc/passwd",
            ".hidden.yaml",
            "c.yaml",
            "a.json",
        ] {
            assert!(select(&dir, &[], t, Some(bad), None).is_err(), "{bad}");
        }
        assert!(select(&dir, &[], None, None, None).is_err());
        assert!(select(&dir, &[], Some("file:///etc"), None, None).is_err());
        assert!(select(&dir, &[], t, None, Some("a b")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_that_leaves_the_folder_is_no_suite() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("suites");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(root.path().join("secret.yaml"), "suite: s\n").unwrap();
        std::fs::create_dir(dir.join("..data")).unwrap();
        std::fs::write(dir.join("..data/gate.yaml"), "suite: g\n").unwrap();
        // A ConfigMap's layout: a link to a file inside the folder is run.
        std::os::unix::fs::symlink("..data/gate.yaml", dir.join("gate.yaml")).unwrap();
        std::os::unix::fs::symlink("../secret.yaml", dir.join("out.yaml")).unwrap();
        let t = Some("http://127.0.0.1:1");
        let e = select(&dir, &[], t, Some("out.yaml"), None).unwrap_err();
        assert_eq!(e.0, 400);
        assert!(
            e.1.contains("a link must lead to a file inside it"),
            "{}",
            e.1
        );
        let (spec, _) = select(&dir, &[], t, None, None).unwrap();
        assert_eq!(spec.suites, [dir.join("gate.yaml")]);
    }

    #[test]
    fn targets_outside_allow_target_are_forbidden() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), "suite: a\n").unwrap();
        let allowed: Vec<Allowed> = [
            "http://127.0.0.1:*",
            "https://*.canary.svc",
            "http://[::1]:8080",
        ]
        .iter()
        .map(|a| a.parse().unwrap())
        .collect();
        for ok in [
            "http://127.0.0.1:1234/x",
            "https://podinfo.canary.svc/",
            "https://a.b.canary.svc:443",
            "http://[::1]:8080",
        ] {
            assert!(
                select(dir.path(), &allowed, Some(ok), None, None).is_ok(),
                "{ok}"
            );
        }
        for out in [
            "http://127.0.0.2:1234",
            "https://canary.svc",
            "https://evilcanary.svc",
            "https://podinfo.canary.svc:8443",
            "http://podinfo.canary.svc",
            "http://[::1]:8081",
            "http://127.0.0.1.nip.io",
        ] {
            let e = select(dir.path(), &allowed, Some(out), None, None).unwrap_err();
            assert_eq!(e.0, 403, "{out}");
            assert!(e.1.contains("--allow-target"), "{}", e.1);
        }
        for bad in [
            "ftp://x",
            "x",
            "http://a*b",
            "http://*x.y",
            "http://h:p",
            "http://h/x",
        ] {
            assert!(bad.parse::<Allowed>().is_err(), "{bad}");
        }
    }
}
