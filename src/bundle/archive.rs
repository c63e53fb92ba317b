//! The bundle's container: a gzip-compressed tar of regular files. Writing
//! is plain; reading is for files from strangers, so it is bounded in every
//! way (compressed size, decompressed bytes, entry count, entry size, name
//! length) and accepts only regular files under plain relative names: no
//! `..`, no absolute path, no links, no devices, no duplicates.

use std::io::Read;
use std::path::{Component, Path};

/// The most entries a bundle may hold.
pub const MAX_ENTRIES: usize = 1000;
/// The most one file in a bundle may hold (a burst's `.hlog` is the largest).
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// The most all files together may hold, decompressed.
pub const MAX_TOTAL_BYTES: u64 = 256 << 20;
/// The most read of the compressed file.
pub const MAX_ARCHIVE_BYTES: u64 = 256 << 20;
/// The longest name inside a bundle.
pub const MAX_NAME: usize = 255;

/// One file in a bundle: its name inside the archive and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// Why a bundle could not be read: `Unreadable` (I/O, not gzip or tar, over
/// a cap: exit 3) or `Refused` (an entry no tminus bundle holds: exit 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    Unreadable(String),
    Refused(String),
}

/// The archive's bytes: each entry a regular file, mode 0644, owned by 0,
/// dated `mtime` (seconds since the epoch), in the order given.
pub fn write(entries: &[Entry], mtime: u64) -> std::io::Result<Vec<u8>> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(e.bytes.len() as u64);
        h.set_mode(0o644);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(mtime);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, &e.name, e.bytes.as_slice())?;
    }
    tar.into_inner()?.finish()
}

/// Whether `name` is a plain relative path: `reports/junit.xml`, never
/// `../x`, `/etc/x`, `a//b`, `./a` or a name with a backslash or a NUL.
pub fn safe_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!(
            "entry name of {} bytes (1 to {MAX_NAME} allowed)",
            name.len()
        ));
    }
    if name.contains('\\') || name.contains('\0') || name.contains("//") || name.ends_with('/') {
        return Err(format!(
            "entry `{}` is not a plain relative file name",
            name.escape_debug()
        ));
    }
    let plain = Path::new(name)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if !plain || name.starts_with("./") {
        return Err(format!(
            "entry `{}` leaves the bundle (absolute, `.` or `..`)",
            name.escape_debug()
        ));
    }
    Ok(())
}

/// Reads the bundle at `path` within every cap.
pub fn read_file(path: &Path) -> Result<Vec<Entry>, ReadError> {
    let shown = path.display();
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    {
        // A FIFO (or a device) named as the bundle would block the open
        // until a writer came (issue 44): opened without blocking, it is
        // refused below as not a regular file.
        use std::os::unix::fs::OpenOptionsExt as _;
        open.custom_flags(libc::O_NONBLOCK);
    }
    let f = open
        .open(path)
        .map_err(|e| ReadError::Unreadable(format!("cannot read {shown}: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| ReadError::Unreadable(format!("cannot read {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(ReadError::Unreadable(format!(
            "cannot read {shown}: not a regular file"
        )));
    }
    if meta.len() > MAX_ARCHIVE_BYTES {
        return Err(ReadError::Unreadable(format!(
            "{shown} is larger than {} MiB, the most tminus reads of a bundle",
            MAX_ARCHIVE_BYTES >> 20
        )));
    }
    read(f.take(MAX_ARCHIVE_BYTES), &shown.to_string())
}

/// Reads a gzip tar from `input` within every cap; `shown` names it in errors.
pub fn read(input: impl Read, shown: &str) -> Result<Vec<Entry>, ReadError> {
    let unreadable = |e: &dyn std::fmt::Display| {
        ReadError::Unreadable(format!("{shown} is not a readable tar.gz bundle: {e}"))
    };
    // Headers take 512 bytes each, plus the two closing blocks: past this
    // the stream is a decompression bomb, whatever its entries claim.
    let budget = MAX_TOTAL_BYTES + (MAX_ENTRIES as u64 + 8) * 2048;
    let gz = flate2::read::GzDecoder::new(input).take(budget);
    let mut archive = tar::Archive::new(gz);
    let mut out: Vec<Entry> = Vec::new();
    let mut total = 0u64;
    for entry in archive.entries().map_err(|e| unreadable(&e))? {
        let mut entry = entry.map_err(|e| unreadable(&e))?;
        if out.len() >= MAX_ENTRIES {
            return Err(ReadError::Unreadable(format!(
                "{shown} holds more than {MAX_ENTRIES} entries, the most a bundle may"
            )));
        }
        let raw = entry.path_bytes().into_owned();
        let name = String::from_utf8(raw)
            .map_err(|_| ReadError::Refused("an entry name is not UTF-8".into()))?;
        safe_name(&name).map_err(ReadError::Refused)?;
        let kind = entry.header().entry_type();
        if kind != tar::EntryType::Regular && kind != tar::EntryType::Continuous {
            return Err(ReadError::Refused(format!(
                "entry `{}` is a {kind:?}, not a regular file: a bundle holds only files",
                name.escape_debug()
            )));
        }
        let size = entry.header().size().map_err(|e| unreadable(&e))?;
        if size > MAX_FILE_BYTES {
            return Err(ReadError::Unreadable(format!(
                "{shown}: entry `{name}` is larger than {} MiB, the most tminus reads of one file",
                MAX_FILE_BYTES >> 20
            )));
        }
        total += size;
        if total > MAX_TOTAL_BYTES {
            return Err(ReadError::Unreadable(format!(
                "{shown} holds more than {} MiB, the most tminus reads of a bundle",
                MAX_TOTAL_BYTES >> 20
            )));
        }
        if out.iter().any(|e| e.name == name) {
            return Err(ReadError::Refused(format!(
                "entry `{name}` appears twice in the bundle"
            )));
        }
        let bytes =
            crate::files::read_capped(&mut entry, size, &name).map_err(ReadError::Unreadable)?;
        if bytes.len() as u64 != size {
            return Err(unreadable(&format!("entry `{name}` is cut short")));
        }
        out.push(Entry { name, bytes });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, bytes: &[u8]) -> Entry {
        Entry {
            name: name.into(),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn what_is_written_reads_back() {
        let long = format!("reports/{}.json", "x".repeat(150));
        let files = vec![entry("a/b.txt", b"hello"), entry(&long, b"")];
        let bytes = write(&files, 1_700_000_000).unwrap();
        assert_eq!(read(bytes.as_slice(), "t").unwrap(), files);
    }

    #[test]
    fn names_that_leave_the_bundle_are_refused() {
        for bad in [
            "../x",
            "/etc/passwd",
            "a/../../x",
            "./a",
            "a//b",
            "a\\b",
            "",
            "a/",
        ] {
            assert!(safe_name(bad).is_err(), "{bad}");
        }
        assert!(safe_name("reports/junit.xml").is_ok());
    }

    /// A raw tar with one entry of `kind` named `name`, gzipped.
    fn raw(name: &str, kind: tar::EntryType, link: Option<&str>) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut t = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        // Bypass the builder's own path checks: a hostile archive does.
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_entry_type(kind);
        h.set_size(0);
        if let Some(l) = link {
            h.set_link_name(l).unwrap();
        }
        h.set_cksum();
        t.append(&h, std::io::empty()).unwrap();
        t.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn links_and_escaping_names_are_refused_not_followed() {
        let cases = [
            raw("../evil", tar::EntryType::Regular, None),
            raw("/abs", tar::EntryType::Regular, None),
            raw("ln", tar::EntryType::Symlink, Some("/etc/passwd")),
            raw("hard", tar::EntryType::Link, Some("x")),
            raw("dir", tar::EntryType::Directory, None),
        ];
        for c in cases {
            let e = read(c.as_slice(), "t").unwrap_err();
            assert!(matches!(e, ReadError::Refused(_)), "{e:?}");
        }
    }

    #[test]
    fn garbage_and_bombs_are_unreadable() {
        let e = read(&b"not a gzip"[..], "t").unwrap_err();
        assert!(matches!(e, ReadError::Unreadable(_)), "{e:?}");
        // An entry claiming more than the cap is refused before it is read.
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut t = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_size(MAX_FILE_BYTES + 1);
        h.set_path("big").unwrap();
        h.set_cksum();
        let mut bytes = Vec::new();
        t.get_mut().write_all_header(&h);
        bytes.extend(t.into_inner().unwrap().finish().unwrap());
        let e = read(bytes.as_slice(), "t").unwrap_err();
        assert!(format!("{e:?}").contains("larger than"), "{e:?}");
        // Too many entries.
        let many: Vec<Entry> = (0..=MAX_ENTRIES)
            .map(|i| entry(&format!("f{i}"), b""))
            .collect();
        let e = read(write(&many, 0).unwrap().as_slice(), "t").unwrap_err();
        assert!(format!("{e:?}").contains("entries"), "{e:?}");
    }

    trait WriteHeader {
        fn write_all_header(&mut self, h: &tar::Header);
    }
    impl<W: std::io::Write> WriteHeader for W {
        fn write_all_header(&mut self, h: &tar::Header) {
            self.write_all(h.as_bytes()).unwrap();
        }
    }
}
