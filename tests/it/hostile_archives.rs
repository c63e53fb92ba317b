//! Archives and folders from strangers (issue 44): `tminus verify` on
//! hand-made tar.gz bundles that try to leave the folder, link elsewhere,
//! declare a huge size or repeat a name, and on a FIFO; `tminus compare` on
//! report folders holding FIFOs, links, and sparse or truncated histogram
//! logs. Each is refused with the path named, at once.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A tar header block for `name` of `kind`, declaring `size` bytes (the
/// name is written raw, so `/etc/x` and `../x` go in as they are).
fn header(name: &str, kind: tar::EntryType, size: u64, link: Option<&str>) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(0o644);
    if let Some(l) = link {
        h.set_link_name(l).unwrap();
    }
    h.set_cksum();
    h
}

/// A bundle's entries: a header and the data after it.
type Entries<'a> = Vec<(tar::Header, &'a [u8])>;

/// A gzip tar of `entries` (header, data), data padded to 512 bytes.
fn bundle(path: &Path, entries: &[(tar::Header, &[u8])]) {
    let mut raw = Vec::new();
    for (h, data) in entries {
        raw.extend_from_slice(h.as_bytes());
        raw.extend_from_slice(data);
        raw.resize(raw.len().div_ceil(512) * 512, 0);
    }
    raw.resize(raw.len() + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).unwrap();
    std::fs::write(path, gz.finish().unwrap()).unwrap();
}

/// Runs tminus with `args`, killed after 20 s: (exit code, output, time).
fn tminus(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(common::bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Outputs are a few lines: the pipes never fill while it runs.
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text, started.elapsed())
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn verify_refuses_hostile_bundles_naming_the_entry() {
    use tar::EntryType as T;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = |name: &str| (header(name, T::Regular, 1, None), &b"x"[..]);
    let cases: Vec<(&str, Entries, &str)> = vec![
        (
            "traversal",
            vec![file("../evil")],
            "entry `../evil` leaves the bundle",
        ),
        (
            "absolute",
            vec![file("/etc/evil")],
            "entry `/etc/evil` leaves the bundle",
        ),
        (
            "deep-traversal",
            vec![file("reports/../../evil")],
            "entry `reports/../../evil` leaves the bundle",
        ),
        (
            "symlink",
            vec![(
                header("report.json", T::Symlink, 0, Some("/etc/passwd")),
                &b""[..],
            )],
            "entry `report.json` is a Symlink",
        ),
        (
            "hardlink",
            vec![(
                header("report.json", T::Link, 0, Some("/etc/passwd")),
                &b""[..],
            )],
            "entry `report.json` is a Link",
        ),
        (
            "fifo-entry",
            vec![(header("report.json", T::Fifo, 0, None), &b""[..])],
            "entry `report.json` is a Fifo",
        ),
        (
            "sparse-entry",
            vec![(header("report.json", T::GNUSparse, 0, None), &b""[..])],
            // tar reads its sparse map first, and finds none.
            "sparse-entry.tar.gz is not a readable tar.gz bundle",
        ),
        (
            "duplicate",
            vec![file("report.json"), file("report.json")],
            "entry `report.json` appears twice",
        ),
        (
            "huge",
            vec![(header("report.json", T::Regular, 1 << 40, None), &b""[..])],
            "entry `report.json` is larger than 64 MiB",
        ),
    ];
    for (name, entries, says) in cases {
        let path = d.join(format!("{name}.tar.gz"));
        bundle(&path, &entries);
        let (code, text, took) = tminus(&[
            "verify".as_ref(),
            "--allow-unsigned".as_ref(),
            path.as_os_str(),
        ]);
        assert!(matches!(code, Some(1 | 3)), "{name}: exit {code:?}: {text}");
        assert!(text.contains(says), "{name}: {text}");
        assert!(
            text.contains(&format!("{name}.tar.gz")),
            "{name}: the bundle is not named: {text}"
        );
        assert!(took < Duration::from_secs(10), "{name}: {took:?}");
    }
    assert!(!d.join("../evil").exists() && !d.join("evil").exists());
    // A FIFO named as the bundle: the open blocked until a writer came.
    let fifo = d.join("fifo.tar.gz");
    mkfifo(&fifo);
    let (code, text, took) = tminus(&[
        "verify".as_ref(),
        "--allow-unsigned".as_ref(),
        fifo.as_os_str(),
    ]);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("fifo.tar.gz: not a regular file"), "{text}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}
