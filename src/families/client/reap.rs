//! Nothing a client command started outlives the check (issue 24 item 8).
//!
//! A client runs in its own process group, which is killed as a whole; but
//! a descendant that called `setsid()` (a daemonising SDK helper, `setsid
//! cmd &`) has left the group and would survive `tminus run`. On Linux tminus
//! becomes a *child subreaper* before it starts the first client, so such an
//! orphan is re-parented to tminus rather than to init; after each client
//! ends, every child of tminus that is not a live client leader is such an
//! orphan and is killed and reaped (and again for what it left, a few
//! rounds). tminus starts no other processes, so nothing else is its child.
//! Elsewhere the group kill is all there is.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

/// The pids of the client processes tminus started and has not reaped.
fn live() -> &'static Mutex<HashSet<u32>> {
    static LIVE: OnceLock<Mutex<HashSet<u32>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashSet::new()))
}

fn lock() -> std::sync::MutexGuard<'static, HashSet<u32>> {
    live().lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes tminus the subreaper of everything it starts (once; Linux only).
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag of
            // this process; the extra arguments are ignored.
            unsafe {
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
            }
        });
    }
}

/// Spawns a client leader with `spawn` and records it as live, under the
/// lock a sweep holds, so a sweep running for another client never takes
/// a leader that was just started for an orphan.
pub fn spawn_client<T>(
    spawn: impl FnOnce() -> std::io::Result<T>,
    pid: impl Fn(&T) -> Option<u32>,
) -> std::io::Result<T> {
    become_subreaper();
    let mut live = lock();
    let child = spawn()?;
    if let Some(p) = pid(&child) {
        live.insert(p);
    }
    Ok(child)
}

/// The client leader `pid` was reaped.
pub fn ended(pid: u32) {
    lock().remove(&pid);
}

/// Kills and reaps every child of tminus that is not a live client leader:
/// the orphans a client left behind. Returns how many were killed.
pub fn sweep() -> usize {
    #[cfg(target_os = "linux")]
    {
        let me = std::process::id();
        let mut killed = 0;
        // Killing an orphan re-parents its own children to tminus: a few rounds.
        let keep = lock();
        for _ in 0..5 {
            let orphans: Vec<u32> = super::cpu::children(me)
                .into_iter()
                .filter(|p| !keep.contains(p))
                .collect();
            if orphans.is_empty() {
                break;
            }
            for pid in orphans {
                // SAFETY: kill and waitpid act on a child of this process
                // (just read from /proc as ours); ESRCH or ECHILD are fine.
                unsafe {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                    let mut status = 0;
                    libc::waitpid(pid as libc::pid_t, &mut status, 0);
                }
                killed += 1;
            }
        }
        drop(keep);
        killed
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}
