//! The target's own logs, read back (issue 45, catalogue §10): one source
//! per suite (`observe: { logs: ... }`), shared by every check that judges
//! logs against what tminus sent (the `observability` family).
//!
//! A source is a file (read from the offset it had when the check began),
//! a command whose stdout is the logs (`kubectl logs`, `docker logs`,
//! `journalctl`: an argv list, no shell unless asked, a timeout, an output
//! cap) or Loki's HTTP API (`query_range` with a LogQL selector). Every
//! read is bounded in bytes, lines and time: a log of any size costs at most
//! `max_bytes` of memory, and a read that hit the cap says so (`Logs::capped`),
//! so a check can tell "not in the logs" from "not in the part read".
//!
//! Lines are kept as text with their position (`LogLine::position`): a
//! finding names where a line is, never what it holds. JSON lines are parsed
//! with configurable field names for the trace id, the request id and the
//! message (`LineFormat`); other lines are searched as text.
//!
//! This sits below the families (the http row of `docs/architecture.md`):
//! the suite's grammar (`spec.rs`) is planned by `context::observe`, and
//! each family only sees the planned [`LogSource`].

mod command;
mod file;
mod loki;
pub mod spec;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::http::Client;

/// Defaults and bounds of a log source.
pub mod defaults {
    use std::time::Duration;
    /// Bytes one read keeps at most (a file's tail, a command's stdout, a
    /// Loki answer).
    pub const MAX_BYTES: u64 = 16 << 20;
    /// The largest `max_bytes` a suite may ask for.
    pub const MAX_BYTES_MAX: u64 = 256 << 20;
    /// A line longer than this is cut (and the cut counted).
    pub const MAX_LINE: usize = 64 << 10;
    /// Lines one read keeps at most (each line costs its text and a few
    /// words: with `max_bytes` this bounds a read of tiny lines too).
    pub const MAX_LINES: u64 = 100_000;
    /// Lines Loki is asked for at most (`limit`; Loki's own default
    /// `max_entries_limit_per_query`).
    pub const LOKI_LIMIT: u64 = 5000;
    pub const TIMEOUT: Duration = Duration::from_secs(10);
    pub const TIMEOUT_MAX: Duration = Duration::from_secs(120);
    /// How much of a failing command's stderr is kept for the message.
    pub const STDERR_KEPT: usize = 2048;
    pub const TRACE_ID_FIELD: &str = "trace_id";
    pub const REQUEST_ID_FIELD: &str = "request_id";
    pub const MESSAGE_FIELD: &str = "msg";
}

/// Where the logs come from.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    /// A file the target appends to.
    File(PathBuf),
    /// A command whose stdout is the logs: its argv, or one shell line
    /// (`shell: true`, run by `sh -c`).
    Command { argv: Vec<String>, shell: bool },
    /// Loki's HTTP API: its base URL (or a path on the target) and the
    /// LogQL selector.
    Loki {
        url: String,
        query: String,
        headers: Vec<(String, String)>,
    },
}

/// Which JSON fields hold what; dotted names reach into objects
/// (`trace.id`).
#[derive(Debug, Clone, PartialEq)]
pub struct LineFormat {
    pub trace_id: String,
    pub request_id: String,
    pub message: String,
}

impl Default for LineFormat {
    fn default() -> Self {
        LineFormat {
            trace_id: defaults::TRACE_ID_FIELD.into(),
            request_id: defaults::REQUEST_ID_FIELD.into(),
            message: defaults::MESSAGE_FIELD.into(),
        }
    }
}

/// A planned log source.
#[derive(Debug, Clone, PartialEq)]
pub struct LogSource {
    pub kind: SourceKind,
    pub format: LineFormat,
    pub max_bytes: u64,
    pub max_lines: u64,
    pub timeout: Duration,
}

/// Where a check began reading: a file's length then, and the time (Loki
/// is asked from there).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    pub offset: u64,
    pub since: SystemTime,
}

/// One line of the logs, with where it was.
#[derive(Debug, Clone)]
pub struct LogLine {
    /// 1-based, among the lines this read returned.
    pub number: u64,
    /// Byte offset of the line in the file (files only).
    pub offset: Option<u64>,
    pub text: String,
}

/// What one read returned.
#[derive(Debug, Clone, Default)]
pub struct Logs {
    pub lines: Vec<LogLine>,
    /// Bytes read.
    pub bytes: u64,
    /// The read stopped at `max_bytes` (or Loki's line limit): more logs
    /// may exist than were read.
    pub capped: bool,
    /// Lines longer than [`defaults::MAX_LINE`], cut there.
    pub cut_lines: u64,
    /// A note on how the read went (a rotated file read from its start).
    pub note: Option<String>,
}

impl LogSource {
    /// The source as messages name it (never a secret: a Loki URL's
    /// userinfo is masked, a command is its program and argument count).
    pub fn name(&self) -> String {
        match &self.kind {
            SourceKind::File(p) => format!("log file {}", p.display()),
            SourceKind::Command { argv, shell: false } => format!(
                "log command `{}`{}",
                argv.first().map(String::as_str).unwrap_or(""),
                match argv.len() {
                    0 | 1 => String::new(),
                    n => format!(" (with {} arguments)", n - 1),
                }
            ),
            SourceKind::Command { .. } => "log command (a shell line)".into(),
            SourceKind::Loki { url, .. } => {
                format!("Loki at {}", crate::redact::mask_userinfo(url))
            }
        }
    }

    /// Where a read after now starts.
    pub async fn mark(&self) -> Result<Mark, String> {
        let since = SystemTime::now();
        let offset = match &self.kind {
            SourceKind::File(p) => file::length(p).await?,
            _ => 0,
        };
        Ok(Mark { offset, since })
    }

    /// Reads the logs from `mark`; `base_url` resolves a Loki path on the
    /// target. An unreadable source is an error naming it.
    pub async fn read(&self, mark: &Mark, client: &Client, base_url: &str) -> Result<Logs, String> {
        let r = match &self.kind {
            SourceKind::File(p) => file::read(p, mark.offset, self.max_bytes, self.max_lines).await,
            SourceKind::Command { argv, shell } => {
                command::run(argv, *shell, self.max_bytes, self.max_lines, self.timeout).await
            }
            SourceKind::Loki {
                url,
                query,
                headers,
            } => {
                let url = if url.starts_with('/') {
                    format!("{}{url}", base_url.trim_end_matches('/'))
                } else {
                    url.clone()
                };
                loki::read(
                    client,
                    &loki::Query {
                        url: &url,
                        query,
                        headers,
                        since: mark.since,
                        limit: self.max_lines.min(defaults::LOKI_LIMIT),
                        max_bytes: self.max_bytes,
                        timeout: self.timeout,
                    },
                )
                .await
            }
        };
        r.map_err(|e| format!("{}: {e}", self.name()))
    }
}

/// Splits raw bytes into lines (a trailing partial line included), each
/// cut at [`defaults::MAX_LINE`], at most `max_lines` of them (then the
/// read is capped); `start` is the offset of `raw[0]` in the file, when it
/// is one.
pub fn split_lines(raw: &[u8], start: Option<u64>, max_lines: u64, logs: &mut Logs) {
    let mut at = 0usize;
    for chunk in raw.split(|b| *b == b'\n') {
        if logs.lines.len() as u64 >= max_lines {
            logs.capped = true;
            return;
        }
        let here = at;
        at += chunk.len() + 1;
        let chunk = chunk.strip_suffix(b"\r").unwrap_or(chunk);
        if chunk.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        push_line(logs, chunk, start.map(|s| s + here as u64));
    }
}

/// Adds one line, cut at [`defaults::MAX_LINE`].
pub fn push_line(logs: &mut Logs, bytes: &[u8], offset: Option<u64>) {
    let keep = if bytes.len() > defaults::MAX_LINE {
        logs.cut_lines += 1;
        &bytes[..defaults::MAX_LINE]
    } else {
        bytes
    };
    logs.lines.push(LogLine {
        number: logs.lines.len() as u64 + 1,
        offset,
        text: String::from_utf8_lossy(keep).into_owned(),
    });
}

impl LogLine {
    /// Where the line is, for a finding: `line 12` (with its byte offset in
    /// a file). Never its content.
    pub fn position(&self) -> String {
        match self.offset {
            Some(o) => format!("line {} (byte {o})", self.number),
            None => format!("line {}", self.number),
        }
    }

    /// The line as JSON, when it is a JSON object.
    pub fn json(&self) -> Option<serde_json::Value> {
        let t = self.text.trim();
        if !t.starts_with('{') {
            return None;
        }
        serde_json::from_str::<serde_json::Value>(t)
            .ok()
            .filter(serde_json::Value::is_object)
    }
}

/// The text of field `name` (dotted: `trace.id`) of a JSON line; numbers
/// as written, anything else `None`.
pub fn field(doc: &serde_json::Value, name: &str) -> Option<String> {
    let mut v = doc;
    for part in name.split('.') {
        v = v.get(part)?;
    }
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_offsets_and_long_ones_are_cut() {
        let mut logs = Logs::default();
        let long = "x".repeat(defaults::MAX_LINE + 10);
        let raw = format!("a\r\n\n{long}\nlast");
        split_lines(raw.as_bytes(), Some(100), 10, &mut logs);
        let got: Vec<(u64, Option<u64>, usize)> = logs
            .lines
            .iter()
            .map(|l| (l.number, l.offset, l.text.len()))
            .collect();
        assert_eq!(
            got,
            [
                (1, Some(100), 1),
                (2, Some(104), defaults::MAX_LINE),
                (3, Some(104 + long.len() as u64 + 1), 4)
            ]
        );
        assert_eq!(logs.cut_lines, 1);
        assert_eq!(logs.lines[1].position(), "line 2 (byte 104)");
        assert!(!logs.capped);
        let mut few = Logs::default();
        split_lines(b"a\nb\nc\n", None, 2, &mut few);
        assert_eq!(few.lines.len(), 2);
        assert!(few.capped);
    }

    #[test]
    fn fields_are_read_by_dotted_names() {
        let doc = serde_json::json!({"trace": {"id": "abc"}, "n": 7, "o": {}});
        assert_eq!(field(&doc, "trace.id").as_deref(), Some("abc"));
        assert_eq!(field(&doc, "n").as_deref(), Some("7"));
        assert_eq!(field(&doc, "o"), None);
        assert_eq!(field(&doc, "missing"), None);
    }

    /// Peak resident memory of this process, in bytes (Linux).
    fn peak_rss() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }

    const GIB: u64 = 1 << 30;
    const CAP: u64 = 8 << 20;
    /// What a capped read may add to the peak: the cap, its lines, and the
    /// noise of other tests running beside it; far below the 1 GiB log.
    const MARGIN: u64 = 256 << 20;

    fn source(kind: SourceKind) -> LogSource {
        LogSource {
            kind,
            format: LineFormat::default(),
            max_bytes: CAP,
            max_lines: defaults::MAX_LINES,
            timeout: Duration::from_secs(30),
        }
    }

    /// A 1 GiB log file (sparse: no disk used) is read up to the cap, and
    /// the process's peak memory does not grow by anything like the file.
    #[tokio::test]
    async fn a_1_gib_file_is_read_up_to_its_cap_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.log");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(GIB).unwrap();
        let before = peak_rss();
        let s = source(SourceKind::File(path));
        let mark = Mark {
            offset: 0,
            since: SystemTime::now(),
        };
        let client = Client::new().unwrap();
        let logs = s.read(&mark, &client, "http://127.0.0.1:1").await.unwrap();
        assert!(logs.capped);
        assert_eq!(logs.bytes, CAP);
        // Zeros hold no newline: one line, cut at the line cap.
        assert_eq!(logs.lines.len(), 1);
        assert_eq!(logs.cut_lines, 1);
        if let (Some(b), Some(a)) = (before, peak_rss()) {
            assert!(a.saturating_sub(b) < MARGIN, "peak grew {} bytes", a - b);
        }
    }

    /// A command streaming 1 GiB (and an endless one) is stopped at the cap,
    /// quickly, with bounded memory.
    #[tokio::test]
    async fn a_command_streaming_1_gib_is_stopped_at_its_cap() {
        let before = peak_rss();
        let client = Client::new().unwrap();
        let mark = Mark {
            offset: 0,
            since: SystemTime::now(),
        };
        for argv in [
            vec!["head", "-c", "1073741824", "/dev/zero"],
            vec!["yes", "{\"msg\":\"a line of an endless log\"}"],
        ] {
            let s = source(SourceKind::Command {
                argv: argv.iter().map(|a| a.to_string()).collect(),
                shell: false,
            });
            let started = std::time::Instant::now();
            let logs = s.read(&mark, &client, "http://127.0.0.1:1").await.unwrap();
            assert!(logs.capped, "{argv:?}");
            assert_eq!(logs.bytes, CAP, "{argv:?}");
            assert!(started.elapsed() < Duration::from_secs(20), "{argv:?}");
        }
        if let (Some(b), Some(a)) = (before, peak_rss()) {
            assert!(a.saturating_sub(b) < MARGIN, "peak grew {} bytes", a - b);
        }
    }

    /// A command that outlives its timeout is killed and named.
    #[tokio::test]
    async fn a_command_past_its_timeout_is_an_error() {
        let mut s = source(SourceKind::Command {
            argv: vec!["sleep".into(), "30".into()],
            shell: false,
        });
        s.timeout = Duration::from_millis(300);
        let mark = Mark {
            offset: 0,
            since: SystemTime::now(),
        };
        let started = std::time::Instant::now();
        let e = s
            .read(&mark, &Client::new().unwrap(), "http://127.0.0.1:1")
            .await
            .unwrap_err();
        assert!(
            e.starts_with("log command `sleep` (with 1 arguments): did not finish within"),
            "{e}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    /// A file that keeps growing while it is read (a busy service's log) is
    /// read up to the cap and no further, in bounded time: the reader never
    /// chases the writer.
    #[tokio::test]
    async fn a_file_growing_while_read_stops_at_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.log");
        std::fs::write(&path, "").unwrap();
        let s = source(SourceKind::File(path.clone()));
        let mark = s.mark().await.unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (stop, path) = (stop.clone(), path.clone());
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                let line = [b"{\"msg\":\"x\"}".as_slice(), &[b'y'; 1000], b"\n"].concat();
                // Bounded: at most 64 MiB, or until the read is done.
                for _ in 0..(64 << 20) / line.len() {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    std::io::Write::write_all(&mut f, &line).unwrap();
                }
            })
        };
        // Let the file outgrow the cap before the read starts.
        while std::fs::metadata(&path).unwrap().len() < CAP + (1 << 20) && !writer.is_finished() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let started = std::time::Instant::now();
        let logs = s.read(&mark, &Client::new().unwrap(), "").await.unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        assert!(logs.capped);
        assert!(logs.bytes <= CAP, "{} bytes read", logs.bytes);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    /// A file read from its mark sees only what was appended since; a
    /// file that shrank (rotated) is read from its start, and says so.
    #[tokio::test]
    async fn a_file_is_read_from_its_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("api.log");
        std::fs::write(&path, "old 1\nold 2\n").unwrap();
        let s = source(SourceKind::File(path.clone()));
        let mark = s.mark().await.unwrap();
        assert_eq!(mark.offset, 12);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"new\n").unwrap();
        let client = Client::new().unwrap();
        let logs = s.read(&mark, &client, "").await.unwrap();
        let lines: Vec<&str> = logs.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(lines, ["new"]);
        assert_eq!(logs.lines[0].position(), "line 1 (byte 12)");
        std::fs::write(&path, "x\n").unwrap();
        let logs = s.read(&mark, &client, "").await.unwrap();
        assert_eq!(logs.lines.len(), 1);
        assert!(logs.note.as_deref().unwrap().contains("rotated"));
    }
}
