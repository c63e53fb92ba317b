//! Verifiable certification: a run's reports and the suites it ran, packed
//! as a tar.gz with a signed manifest (`tminus run --bundle`, `tminus
//! bundle`), and the check anyone can run on it (`tminus verify`).
//!
//! Layout of a bundle:
//! - `reports/...`: the report files of the run (`report.json` always);
//! - `suites/...`: each suite file as it was run (its SHA-256 must equal the
//!   digest `report.json` records, or nothing is packed);
//! - `manifest.dsse.json`: a DSSE envelope whose payload is the in-toto
//!   Statement (`manifest`) naming every other file with its SHA-256, signed
//!   with ed25519 (`keys`) or unsigned (`signatures: []`).
//!
//! The manifest is built from `report.json`, which is already redacted, and
//! the private key is registered with the redactor when it is read, so no
//! secret reaches the bundle or the console.

pub mod archive;
pub mod dsse;
pub mod keys;
pub mod manifest;
pub mod verify;

use std::path::{Path, PathBuf};

use archive::Entry;
use ed25519_dalek::SigningKey;

/// The envelope's name inside the bundle.
pub const ENVELOPE: &str = "manifest.dsse.json";
/// The most read of `report.json` (a report of 10,000 checks is a few MB).
const MAX_REPORT_BYTES: u64 = 64 << 20;

/// What goes into a bundle.
#[derive(Debug, Default)]
pub struct Contents {
    /// `(name inside the bundle, file)`, `report.json` among them.
    pub reports: Vec<(String, PathBuf)>,
    /// The run's `report.json`.
    pub report_json: PathBuf,
}

/// Why a bundle could not be made (always exit 3: tminus could not do its job).
pub type PackError = String;

/// The report files of `dir`, for `tminus bundle DIR`: every regular file
/// in it and its subfolders (links are not followed), within the caps a
/// verifier applies. `skip` is left out (the bundle itself, when written
/// into `dir`).
pub fn report_dir_contents(dir: &Path, skip: Option<&Path>) -> Result<Contents, PackError> {
    let json = dir.join("report.json");
    if !json.is_file() {
        return Err(format!(
            "{} has no report.json: give the --report-dir of a `tminus run`",
            dir.display()
        ));
    }
    let skip = skip.map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    let mut out = Contents {
        report_json: json,
        ..Contents::default()
    };
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut names: Vec<_> = std::fs::read_dir(&d)
            .map_err(|e| format!("cannot read {}: {e}", d.display()))?
            .filter_map(Result::ok)
            .collect();
        names.sort_by_key(|e| e.file_name());
        for e in names {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            // Temp files of an interrupted write are not reports.
            if !ft.is_file() || name.ends_with(".tmp") {
                continue;
            }
            let abs = std::path::absolute(&p).unwrap_or_else(|_| p.clone());
            if skip.as_ref() == Some(&abs) || name.ends_with(".tar.gz") {
                continue;
            }
            let rel = p.strip_prefix(dir).unwrap_or(&p);
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.reports
                .push((format!("reports/{}", rel.join("/")), p.clone()));
        }
    }
    out.reports.sort();
    Ok(out)
}

fn read(path: &Path) -> Result<Vec<u8>, PackError> {
    crate::files::read_file_capped(path, archive::MAX_FILE_BYTES)
}

/// A name inside the bundle for each suite: `suites/<file name>`, with a
/// number before it when two suites share a file name.
fn suite_names(files: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let base = Path::new(f).file_name().map_or_else(
            || format!("suite-{i}.yaml"),
            |n| n.to_string_lossy().into_owned(),
        );
        let mut name = format!("suites/{base}");
        if out.contains(&name) {
            name = format!("suites/{}-{base}", i + 1);
        }
        out.push(name);
    }
    out
}

/// Packs `contents` and the suites `report.json` names into `out`, signed
/// with `key` when given. Returns what was packed, one line per file.
pub fn pack(
    contents: &Contents,
    out: &Path,
    key: Option<&SigningKey>,
) -> Result<Vec<String>, PackError> {
    let report_bytes = crate::files::read_file_capped(&contents.report_json, MAX_REPORT_BYTES)?;
    let report: serde_json::Value = serde_json::from_slice(&report_bytes).map_err(|e| {
        format!(
            "{} is not a tminus JSON report: {e}",
            contents.report_json.display()
        )
    })?;
    let mut entries: Vec<Entry> = Vec::new();
    // The caps a verifier applies, checked before each read: a bundle
    // tminus writes is one tminus can verify.
    let mut total = 0u64;
    let mut add = |entries: &mut Vec<Entry>, name: String, bytes: Vec<u8>| {
        total += bytes.len() as u64;
        if entries.len() + 2 > archive::MAX_ENTRIES {
            return Err(format!(
                "more files than a bundle may hold ({})",
                archive::MAX_ENTRIES
            ));
        }
        if total > archive::MAX_TOTAL_BYTES {
            return Err(format!(
                "the files hold more than a bundle may ({} MiB)",
                archive::MAX_TOTAL_BYTES >> 20
            ));
        }
        entries.push(Entry { name, bytes });
        Ok(())
    };
    for (name, path) in &contents.reports {
        archive::safe_name(name)?;
        add(&mut entries, name.clone(), read(path)?)?;
    }
    let suites = report["suites"].as_array().cloned().unwrap_or_default();
    let files: Vec<String> = suites
        .iter()
        .map(|s| s["file"].as_str().unwrap_or("").to_owned())
        .collect();
    let mut bundled = Vec::new();
    for ((s, file), name) in suites.iter().zip(&files).zip(suite_names(&files)) {
        let bytes = read(Path::new(file))?;
        let digest = manifest::sha256_hex(&bytes);
        // The report certifies the suite it ran; a file edited since is
        // another suite.
        if s["digest"].as_str() != Some(digest.as_str()) {
            return Err(format!(
                "suite {file} has changed since the run (its SHA-256 is {digest}, the report's {}): a bundle holds the suites as run",
                s["digest"].as_str().unwrap_or("not recorded")
            ));
        }
        archive::safe_name(&name)?;
        bundled.push(manifest::BundledSuite {
            bundled_as: name.clone(),
            digest,
        });
        add(&mut entries, name, bytes)?;
    }
    let statement = manifest::statement(&entries, &report, &bundled);
    let payload = serde_json::to_vec(&statement).map_err(|e| e.to_string())?;
    let signer = key.map(|k| (k, keys::key_id(&k.verifying_key())));
    let envelope = dsse::seal(&payload, signer.as_ref().map(|(k, id)| (*k, id.clone())));
    let mut env_bytes = serde_json::to_vec_pretty(&envelope).map_err(|e| e.to_string())?;
    env_bytes.push(b'\n');
    let mut lines: Vec<String> = entries
        .iter()
        .map(|e| format!("{}  {}", manifest::sha256_hex(&e.bytes), e.name))
        .collect();
    lines.push(match &signer {
        Some((_, id)) => format!("{ENVELOPE}: signed with ed25519 key {id}"),
        None => format!("{ENVELOPE}: unsigned (no --sign-key)"),
    });
    entries.push(Entry {
        name: ENVELOPE.to_owned(),
        bytes: env_bytes,
    });
    let mtime = humantime::parse_rfc3339(report["started_at"].as_str().unwrap_or(""))
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let bytes = archive::write(&entries, mtime).map_err(|e| e.to_string())?;
    crate::files::write_atomic(out, &bytes).map_err(|e| format!("cannot write the bundle: {e}"))?;
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_sharing_a_file_name_get_distinct_names() {
        let n = suite_names(&["a/s.yaml".into(), "b/s.yaml".into(), "t.yaml".into()]);
        assert_eq!(n, ["suites/s.yaml", "suites/2-s.yaml", "suites/t.yaml"]);
    }
}
