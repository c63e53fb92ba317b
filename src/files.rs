//! Writing output files safely: whole or not at all (temp file beside the
//! target, synced, renamed), and checked before a run sends anything. Used
//! by the reporters and the burst's figure files; imports nothing above it.

use std::io::{self, Write};
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

/// Creates the parent folder of a file.
pub fn prepare(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
