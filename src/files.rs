//! Writing output files safely: whole or not at all (temp file beside the
//! target, synced, renamed), and checked before a run sends anything; and
//! reading input files with a cap, so `/dev/zero` or a 700 MB file named as
//! a suite is refused at the cap instead of filling memory; and the options
//! every YAML text is parsed with. Used by the reporters, the burst's figure
//! files, the suite reader, the contract loader and `sign`; imports nothing
//! above it.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Writes a report whole or not at all: into a temporary file beside it,
/// synced, then renamed over the target, so a full disk or a crash leaves
/// the previous file (or none), never a truncated one. Errors name the file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    prepare(path).map_err(named)?;
    let tmp = temp_beside(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(named)
}

/// `dir/.name.tminus-PID.tmp` for `dir/name`.
fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tminus-{}.tmp", std::process::id()))
}

/// Before anything is sent: every report path can be created and written
/// (its folder is created). Returns the first that cannot, with the reason.
pub fn preflight(paths: &[&Path]) -> Result<(), String> {
    for p in paths {
        prepare(p).map_err(|e| format!("cannot create the folder of {}: {e}", p.display()))?;
        if p.is_dir() {
            return Err(format!("{} is a folder, not a file", p.display()));
        }
        let probe = temp_beside(p);
        std::fs::write(&probe, b"")
            .map_err(|e| format!("cannot write reports to {}: {e}", p.display()))?;
        let _ = std::fs::remove_file(&probe);
    }
    Ok(())
}

/// The most tminus reads of a suite file (a suite of 10,000 checks is
/// about 1.5 MB).
pub const MAX_SUITE_BYTES: u64 = 16 << 20;

/// The most `tminus sign` reads of a body (the webhook sink's body limit
/// is 2 MiB; a signature is wanted for a delivery, not an archive).
pub const MAX_BODY_FILE_BYTES: u64 = 64 << 20;

/// Reads at most `cap` bytes of `reader`; more is an error naming `what`
/// and the cap (after reading `cap + 1` bytes, never the whole input).
pub fn read_capped(reader: impl Read, cap: u64, what: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    reader
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {what}: {e}"))?;
    if bytes.len() as u64 > cap {
        return Err(format!(
            "{what} is larger than {} MiB, the most tminus reads of it",
            cap >> 20
        ));
    }
    Ok(bytes)
}

/// [`read_capped`] of the file at `path` (named in every error).
pub fn read_file_capped(path: &Path, cap: u64) -> Result<Vec<u8>, String> {
    let shown = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(format!("cannot read {shown}: it is a folder"));
    }
    read_capped(f, cap, &shown)
}

/// Before anything is sent: the file a report is appended to (GitHub's
/// step summary) can be opened for appending, its folder created; nothing
/// in it is changed.
pub fn preflight_append(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{} is a folder, not a file", path.display()));
    }
    prepare(path)
        .and_then(|_| {
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .map(drop)
        })
        .map_err(|e| format!("cannot append to {}: {e}", path.display()))
}

/// Creates the parent folder of a file.
pub fn prepare(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    Ok(())
}

/// The reader's options for every YAML text tminus reads (suites, their
/// defaults, OpenAPI documents): serde-saphyr's defaults, whose budget bounds
/// the events, nesting depth, anchors and aliases, with comments not emitted.
///
/// tminus never reads a comment's text, and emitting them makes the parser
/// buffer each comment met while it looks ahead for a key: more than 96 in a
/// row (a commented-out block, as `init --from-openapi` writes) stopped the
/// read with "too many buffered comments while looking ahead". Not emitted,
/// comments are still scanned and validated as YAML but never buffered; the
/// size of a file stays bounded by [`MAX_SUITE_BYTES`] and the
/// budget's byte and event limits.
pub fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! { emit_comments: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_the_cap_and_name_it() {
        // An endless input: only cap + 1 bytes are read.
        let e = read_capped(io::repeat(0), 1 << 20, "s.yaml").unwrap_err();
        assert_eq!(
            e,
            "s.yaml is larger than 1 MiB, the most tminus reads of it"
        );
        assert_eq!(read_capped(&b"abc"[..], 3, "x").unwrap(), b"abc");
        let dir = tempfile::tempdir().unwrap();
        let e = read_file_capped(dir.path(), 10).unwrap_err();
        assert!(e.ends_with("it is a folder"), "{e}");
        let e = read_file_capped(&dir.path().join("none"), 10).unwrap_err();
        assert!(e.starts_with("cannot read "), "{e}");
    }

    #[test]
    fn atomic_write_replaces_whole_and_names_the_file_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/report.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let leftovers: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file is left behind");
        let blocked = dir.path().join("sub/report.json/inner.xml");
        let e = write_atomic(&blocked, b"x").unwrap_err();
        assert!(e.to_string().contains("inner.xml"), "{e}");
        assert!(preflight(&[&blocked]).is_err());
        assert!(preflight(&[&dir.path().join("ok/junit.xml")]).is_ok());
    }
}
