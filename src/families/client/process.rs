//! Runs the client under test: one command, with the upstream URL in its
//! environment (and in its argv and env where `${upstream.*}` asks for it), in its own process group so that the client and everything
//! it started are killed together (at the timeout, when the verdict is
//! already known, or when the check is dropped).

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::families::client::cpu::CpuBook;
use crate::families::client::plan::CommandPlan;
use crate::upstream::Upstream;

/// How a client run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// Exited by itself with this code (`None`: killed by a signal it did not get from us).
    Exited(Option<i32>),
    /// Could not be started.
    SpawnFailed(String),
    /// Still running at `client.timeout`; killed.
    TimedOut,
    /// Killed by the check because the verdict was known (why).
    Stopped(String),
}

#[derive(Debug, Clone)]
pub struct ClientRunResult {
    pub client: usize,
    pub ended: Ended,
    pub elapsed: Duration,
    /// The last lines of the client's stderr.
    pub stderr_tail: String,
}

impl ClientRunResult {
    /// `exit 1 after 0.4 s`, `killed at the 20 s timeout`, ...
    pub fn describe(&self) -> String {
        let t = crate::fmt_duration(self.elapsed);
        match &self.ended {
            Ended::Exited(Some(c)) => format!("exited with status {c} after {t}"),
            Ended::Exited(None) => format!("was killed by a signal after {t}"),
            Ended::SpawnFailed(e) => format!("could not be started: {e}"),
            Ended::TimedOut => format!("was still running at its {t} timeout and was killed"),
            Ended::Stopped(why) => format!("was stopped after {t}: {why}"),
        }
    }
}

/// When the check stops a client early.
#[derive(Debug, Clone, Copy, Default)]
pub struct StopRule {
    pub after_attempts: Option<usize>,
    pub after_time: Option<Duration>,
}

const STDERR_TAIL: usize = 1500;

/// Runs client `n` against `up` and waits for it, bounded by `cmd.timeout`.
pub async fn run_client(
    cmd: &CommandPlan,
    up: &Upstream,
    n: usize,
    stop: StopRule,
    cpu: Option<&CpuBook>,
) -> ClientRunResult {
    let started = Instant::now();
    let url = up.client_url(n);
    let scope = CommandPlan::scope(&url, up.addr());
    let argv: Vec<String> = cmd.argv.iter().map(|a| a.render(&scope)).collect();
    let mut c = tokio::process::Command::new(&argv[0]);
    c.args(&argv[1..])
        .envs(cmd.env.iter().map(|(k, v)| (k, v.render(&scope))))
        .env(&cmd.url_env, &url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(d) = &cmd.cwd {
        c.current_dir(d);
    }
    #[cfg(unix)]
    c.process_group(0);
    let mut child = match super::reap::spawn_client(|| c.spawn(), |ch| ch.id()) {
        Ok(ch) => ch,
        Err(e) => {
            return ClientRunResult {
                client: n,
                ended: Ended::SpawnFailed(format!("`{}`: {e}", argv[0])),
                elapsed: started.elapsed(),
                stderr_tail: String::new(),
            }
        }
    };
    if let (Some(book), Some(pid)) = (cpu, child.id()) {
        book.register(n, pid);
    }
    let leader = child.id();
    let mut group = Group(leader);
    let mut stderr = child.stderr.take();
    let reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let mut chunk = [0u8; 4096];
            while let Ok(k) = s.read(&mut chunk).await {
                if k == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..k]);
                if buf.len() > 64 * 1024 {
                    buf.drain(..buf.len() - 2 * STDERR_TAIL);
                }
            }
        }
        buf
    });
    let ended = loop {
        tokio::select! {
            r = child.wait() => break Ended::Exited(r.ok().and_then(|s| s.code())),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        let elapsed = started.elapsed();
        if elapsed >= cmd.timeout {
            break Ended::TimedOut;
        }
        if let Some(max) = stop.after_attempts {
            let made = up.attempt_count(n);
            if made > max {
                break Ended::Stopped(format!("it made {made} attempts, more than {max}"));
            }
        }
        if let Some(t) = stop.after_time {
            if elapsed > t {
                break Ended::Stopped(format!("still running after {}", crate::fmt_duration(t)));
            }
        }
    };
    // Always: whatever the client left behind in its group goes too, and
    // (Linux) whatever left the group with setsid() and is now tminus's.
    group.kill();
    let _ = child.kill().await;
    if let Some(pid) = leader {
        super::reap::ended(pid);
    }
    super::reap::sweep();
    let elapsed = started.elapsed();
    let buf = tokio::time::timeout(Duration::from_millis(500), reader)
        .await
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&buf);
    let tail: String = {
        let chars: Vec<char> = text.chars().collect();
        let cut = chars.len().saturating_sub(STDERR_TAIL);
        let kept: String = chars[cut..].iter().collect();
        // `…` marks the cut, so the redactor can mask the end of a secret
        // that stands right after it.
        if cut > 0 {
            format!("…{}", kept.trim_start())
        } else {
            kept
        }
    };
    ClientRunResult {
        client: n,
        ended,
        elapsed,
        stderr_tail: tail.trim().to_owned(),
    }
}

/// The process group of one client (its leader's pid).
struct Group(Option<u32>);

impl Group {
    /// Kills the group once; later calls do nothing (the pid may be reused).
    fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.0.take() {
            // SAFETY: killpg only sends a signal; the group is the one we created
            // for this child, and ESRCH (already gone) is fine.
            unsafe {
                libc::killpg(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // A cancelled check drops its future: take the group down with it.
        self.kill();
    }
}
