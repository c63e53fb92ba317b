//! A command whose stdout is the logs (`kubectl logs deploy/api
//! --since=5m`, `docker logs api`, `journalctl -u api`). It runs without a
//! shell unless the suite asks (`shell: true`), with a timeout; its stdout
//! is read up to `max_bytes` (then the command is killed: an endless
//! `kubectl logs -f` costs no more than the cap), its stderr up to a few
//! kilobytes, kept for the message when it fails.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::{defaults, split_lines, Logs};

/// Runs the command and reads its stdout (bounded).
pub async fn run(
    argv: &[String],
    shell: bool,
    max_bytes: u64,
    max_lines: u64,
    timeout: Duration,
) -> Result<Logs, String> {
    let mut cmd = if shell {
        let mut c = Command::new("sh");
        c.arg("-c").arg(argv.join(" "));
        c
    } else {
        let (program, args) = argv.split_first().ok_or("the command is empty")?;
        let mut c = Command::new(program);
        c.args(args);
        c
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start it: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    // stderr is drained beside stdout (a full pipe would block the
    // command); its head is kept for the message.
    let err_task = tokio::spawn(async move {
        let mut kept = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = defaults::STDERR_KEPT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        kept
    });
    let deadline = tokio::time::Instant::now() + timeout;
    let read_out = async {
        let mut raw = Vec::new();
        (&mut stdout)
            .take(max_bytes + 1)
            .read_to_end(&mut raw)
            .await
            .map(|_| raw)
    };
    let out = match tokio::time::timeout_at(deadline, read_out).await {
        Ok(x) => x,
        Err(_) => {
            let _ = child.kill().await;
            err_task.abort();
            return Err(format!(
                "did not finish within {} (a command that follows the logs, `-f`, never does: leave it out)",
                crate::fmt_duration(timeout)
            ));
        }
    };
    let mut raw = out.map_err(|e| format!("cannot read its output: {e}"))?;
    let mut logs = Logs::default();
    if raw.len() as u64 > max_bytes {
        raw.truncate(max_bytes as usize);
        logs.capped = true;
        // The rest is not wanted: stop the command rather than drain it.
        let _ = child.kill().await;
        err_task.abort();
    } else {
        let status = match tokio::time::timeout_at(deadline, child.wait()).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("cannot wait for it: {e}")),
            Err(_) => {
                let _ = child.kill().await;
                err_task.abort();
                return Err(format!(
                    "closed its output but did not exit within {}",
                    crate::fmt_duration(timeout)
                ));
            }
        };
        if !status.success() {
            let err = match tokio::time::timeout_at(deadline, err_task).await {
                Ok(Ok(kept)) => kept,
                _ => Vec::new(),
            };
            let text = String::from_utf8_lossy(&err);
            return Err(format!(
                "exited with {status}{}",
                if text.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", text.trim())
                }
            ));
        }
    }
    logs.bytes = raw.len() as u64;
    split_lines(&raw, None, max_lines, &mut logs);
    Ok(logs)
}
