//! What a burst shows while it runs (the indicatif bar on a terminal, a
//! plain line every few seconds otherwise), and the guard that keeps goose's
//! unconditional stdout lines off stdout. Moved out of `engine.rs` so that
//! file holds the run and the requests only.

use std::time::Duration;

/// Sends what is written to fd 1 to stderr until dropped (unix); a no-op
/// elsewhere. goose prints some lines to stdout unconditionally, with
/// `println!`, which panics when the write fails: fd 1 was once pointed at
/// stderr itself, and `tminus run ... 2>&1 | head -1` then killed the burst
/// with exit 101 (issue 37). Now fd 1 is a pipe tminus reads itself and
/// copies to stderr with the errors dropped, so goose's writes never fail,
/// whatever became of stderr.
pub(super) struct StdoutToStderr {
    #[cfg(unix)]
    saved: Option<(i32, std::sync::mpsc::Receiver<()>)>,
}

impl StdoutToStderr {
    pub(super) fn new() -> Self {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        #[cfg(unix)]
        {
            use std::os::fd::FromRawFd;
            let mut fds = [0i32; 2];
            // SAFETY: plain fd calls; on any failure the original fd 1 is
            // kept and every fd opened here is closed.
            let saved = unsafe { libc::dup(1) };
            if saved < 0 {
                return StdoutToStderr { saved: None };
            }
            if unsafe { libc::pipe(fds.as_mut_ptr()) } < 0 {
                unsafe { libc::close(saved) };
                return StdoutToStderr { saved: None };
            }
            // The read end stays in this process (pipe2 is not on macOS).
            unsafe { libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC) };
            if unsafe { libc::dup2(fds[1], 1) } < 0 {
                unsafe {
                    libc::close(saved);
                    libc::close(fds[0]);
                    libc::close(fds[1]);
                }
                return StdoutToStderr { saved: None };
            }
            // fd 1 is now the pipe's only write end.
            unsafe { libc::close(fds[1]) };
            // SAFETY: fds[0] is the pipe's read end, owned by this File only.
            let mut from = unsafe { std::fs::File::from_raw_fd(fds[0]) };
            let (done, ended) = std::sync::mpsc::channel();
            let relay = std::thread::Builder::new()
                .name("tminus-goose-stdout".into())
                .spawn(move || {
                    use std::io::Read;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let _ = std::io::stderr().write_all(&buf[..n]);
                    }
                    let _ = done.send(());
                });
            if relay.is_err() {
                // No reader: put fd 1 back before anything blocks on the pipe.
                unsafe {
                    libc::dup2(saved, 1);
                    libc::close(saved);
                }
                return StdoutToStderr { saved: None };
            }
            StdoutToStderr {
                saved: Some((saved, ended)),
            }
        }
        #[cfg(not(unix))]
        StdoutToStderr {}
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        #[cfg(unix)]
        if let Some((saved, ended)) = self.saved.take() {
            // SAFETY: `saved` is the fd dup'ed in `new`, still open. Putting
            // it back on fd 1 closes the pipe's write end: the relay reads to
            // the end and stops (a child that kept fd 1 could hold it open,
            // hence the bounded wait).
            unsafe {
                libc::dup2(saved, 1);
                libc::close(saved);
            }
            let _ = ended.recv_timeout(Duration::from_secs(1));
        }
    }
}

/// What the bar and the plain progress line say: the current rate, the
/// corrected p95 so far (µs in), the requests answered and the errors. No
/// URL, so nothing a secret could hide in.
pub(super) fn progress_message(rate: f64, p95_us: u64, total: u64, errors: u64) -> String {
    format!(
        "{rate:.0} req/s · p95 {:.1} ms (corrected) · {total} sent · {errors} errors",
        p95_us as f64 / 1000.0
    )
}

/// The line a burst writes to a non-terminal stderr every
/// [`PROGRESS_EVERY`]: `load 10s/30s: 120 req/s · p95 …`.
pub fn progress_line(elapsed: Duration, planned: Option<Duration>, message: String) -> String {
    let planned = planned.map_or_else(String::new, |p| format!("/{}s", p.as_secs()));
    format!("load {}s{planned}: {message}", elapsed.as_secs())
}

pub(super) fn progress_bar(total: Option<Duration>) -> indicatif::ProgressBar {
    let bar = match total {
        Some(t) => indicatif::ProgressBar::new(t.as_secs().max(1)),
        None => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
    let style = match total {
        Some(_) => "load {elapsed_precise}/{len}s [{bar:25}] {msg}",
        None => "load {elapsed_precise} {spinner} {msg}",
    };
    if let Ok(s) = indicatif::ProgressStyle::with_template(style) {
        bar.set_style(s.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_plain_progress_line_names_elapsed_rate_p95_and_counts() {
        let msg = progress_message(118.6, 6_940, 1_234, 2);
        assert_eq!(
            progress_line(Duration::from_millis(10_400), Some(ms(30_000)), msg.clone()),
            "load 10s/30s: 119 req/s · p95 6.9 ms (corrected) · 1234 sent · 2 errors"
        );
        // An iterations profile has no planned end.
        assert!(progress_line(ms(5_000), None, msg).starts_with("load 5s: 119 req/s"));
    }
}
