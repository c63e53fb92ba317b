//! CPU time the clients under test spend, sampled from `/proc` while a herd
//! runs (`client.jitter`), so that the spread a heavy herd's own work can
//! make on this machine's cores is known, not assumed.
//!
//! Why: a herd of clients that each need CPU to act on their answer (an
//! interpreter's work per request) queues for the cores when they all wake
//! at once, and that queue spreads a herd without any jitter; a light
//! control group (the reference client) is served first by the scheduler
//! and does not see it. The CPU each client used between its answer and its
//! retry, summed over the herd and shared over the cores, bounds that
//! spread (see [`crate::families::client::timing::jitter_judgement`]).
//!
//! A client is sampled when its request reaches the upstream and when its
//! answer goes out (an upstream [`crate::upstream::Hook`]): it is waiting on
//! the upstream at both moments, so the reading is current and the client is
//! alive. Its process group is followed from its leader through
//! `/proc/PID/task/TID/children`, so a wrapper script's interpreter is
//! counted. Linux only: elsewhere nothing is sampled and the judgement rests
//! on the control group alone.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Most processes followed per client group.
const MAX_GROUP: usize = 64;

/// Most samples kept per client (two per request).
const MAX_SAMPLES: usize = 64;

/// Per client: its group leader's pid and its CPU seconds over time (the
/// upstream's clock).
#[derive(Default)]
pub struct CpuBook {
    pids: Mutex<HashMap<usize, u32>>,
    series: Mutex<HashMap<usize, Vec<(Duration, f64)>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CpuBook {
    /// Follows client `client`, whose group leader is `pid`.
    pub fn register(&self, client: usize, pid: u32) {
        lock(&self.pids).insert(client, pid);
    }

    /// Whether this platform can be sampled at all.
    pub fn supported() -> bool {
        cfg!(target_os = "linux") && std::path::Path::new("/proc/self/stat").exists()
    }

    /// One sample of client `client`, at `now` (nothing for a client not followed).
    pub fn sample(&self, client: usize, now: Duration) {
        let Some(pid) = lock(&self.pids).get(&client).copied() else {
            return;
        };
        let Some(s) = group_cpu(pid) else {
            return;
        };
        let mut series = lock(&self.series);
        let v = series.entry(client).or_default();
        if v.len() < MAX_SAMPLES {
            v.push((now, s));
        }
    }

    /// CPU seconds client `client` used from `from` to `to`: from the last
    /// sample at or before `from` to the first at or after `to` (taken as the
    /// answer went out and as the next request arrived). `None` when the
    /// samples do not cover the span.
    pub fn used_between(&self, client: usize, from: Duration, to: Duration) -> Option<f64> {
        let series = lock(&self.series);
        let v = series.get(&client)?;
        let before = v.iter().rev().find(|(t, _)| *t <= from)?.1;
        let after = v.iter().find(|(t, _)| *t >= to)?.1;
        Some((after - before).max(0.0))
    }
}

/// CPU seconds of the process `pid` and its descendants (bounded).
fn group_cpu(pid: u32) -> Option<f64> {
    let mut total = 0.0;
    let mut stack = vec![pid];
    let mut seen = 0;
    let mut first = true;
    while let Some(p) = stack.pop() {
        seen += 1;
        if seen > MAX_GROUP {
            break;
        }
        match process_cpu(p) {
            Some(s) => total += s,
            // The leader gone: no reading (its last one stands).
            None if first => return None,
            None => {}
        }
        first = false;
        stack.extend(children(p));
    }
    Some(total)
}

/// utime + stime + cutime + cstime of one process, in seconds.
fn process_cpu(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state(3) ... utime is field 14 of the line, index 11 here.
    let ticks: f64 = f
        .get(11..15)?
        .iter()
        .map(|x| x.parse::<f64>().unwrap_or(0.0))
        .sum();
    Some(ticks / clock_ticks())
}

/// The children of `pid`, from `/proc/PID/task/*/children` (also how
/// `reap` finds the orphans re-parented to tminus); empty off Linux.
pub(super) fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // Every thread: a child is listed under the thread that started it (or,
    // re-parented, under the one that adopted it).
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn clock_ticks() -> f64 {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads a configuration value.
        let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if t > 0 {
            return t as f64;
        }
    }
    100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_child_is_counted_in_its_group() {
        if !CpuBook::supported() {
            return;
        }
        // The inner sh spins, then sleeps, so it is still there to be read.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 5'",
            ])
            .spawn()
            .unwrap();
        let book = CpuBook::default();
        book.register(0, child.id());
        book.sample(0, Duration::ZERO);
        let start = std::time::Instant::now();
        let mut used = 0.0;
        while start.elapsed() < Duration::from_secs(20) && used < 0.05 {
            std::thread::sleep(Duration::from_millis(50));
            let t = start.elapsed();
            book.sample(0, t);
            used = book.used_between(0, Duration::ZERO, t).unwrap();
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(used >= 0.05, "{used}");
        assert!(book
            .used_between(1, Duration::ZERO, start.elapsed())
            .is_none());
    }

    #[test]
    fn this_process_reads_its_own_cpu() {
        if !CpuBook::supported() {
            return;
        }
        let s = process_cpu(std::process::id()).unwrap();
        assert!(s >= 0.0);
    }
}
