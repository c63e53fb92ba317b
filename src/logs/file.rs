//! A log file: its length when a check begins, then what was appended
//! since, at most `max_bytes` of it (a file that shrank was rotated: it is
//! read from its start, and the note says so).

use std::path::Path;

use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::{split_lines, Logs};

/// The file's length now (a file that does not exist yet is empty: the
/// target may create it with its first line).
pub async fn length(path: &Path) -> Result<u64, String> {
    match tokio::fs::metadata(path).await {
        Ok(m) if m.is_file() => Ok(m.len()),
        Ok(_) => Err("is not a regular file".into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(format!("cannot read it: {e}")),
    }
}

/// What was appended after `offset`, at most `max_bytes` and `max_lines`.
pub async fn read(
    path: &Path,
    offset: u64,
    max_bytes: u64,
    max_lines: u64,
) -> Result<Logs, String> {
    let mut f = match tokio::fs::File::open(path).await {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("does not exist (the target never wrote it)".into())
        }
        Err(e) => return Err(format!("cannot open it: {e}")),
    };
    let len = f
        .metadata()
        .await
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    let mut logs = Logs::default();
    let start = if len < offset {
        logs.note = Some(format!(
            "the file shrank from {offset} to {len} bytes (rotated?): read from its start"
        ));
        0
    } else {
        offset
    };
    f.seek(std::io::SeekFrom::Start(start))
        .await
        .map_err(|e| format!("cannot seek to byte {start}: {e}"))?;
    // One byte past the cap tells a capped read from one that fit.
    let mut raw = Vec::new();
    f.take(max_bytes + 1)
        .read_to_end(&mut raw)
        .await
        .map_err(|e| format!("cannot read it: {e}"))?;
    if raw.len() as u64 > max_bytes {
        raw.truncate(max_bytes as usize);
        logs.capped = true;
    }
    logs.bytes = raw.len() as u64;
    split_lines(&raw, Some(start), max_lines, &mut logs);
    Ok(logs)
}
