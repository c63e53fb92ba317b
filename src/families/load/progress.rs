//! What a burst shows while it runs (the indicatif bar on a terminal, a
//! plain line every few seconds otherwise), and the guard that keeps goose's
//! unconditional stdout lines off stdout. Moved out of `engine.rs` so that
//! file holds the run and the requests only.

use std::time::Duration;

/// Points fd 1 at stderr until dropped (unix); a no-op elsewhere.
pub(super) struct StdoutToStderr {
    #[cfg(unix)]
    saved: Option<i32>,
}

impl StdoutToStderr {
    pub(super) fn new() -> Self {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        #[cfg(unix)]
        {
            // SAFETY: plain fd calls; on failure the original fd 1 is kept.
            let saved = unsafe { libc::dup(1) };
            if saved >= 0 && unsafe { libc::dup2(2, 1) } >= 0 {
                return StdoutToStderr { saved: Some(saved) };
            }
            if saved >= 0 {
                unsafe { libc::close(saved) };
            }
            StdoutToStderr { saved: None }
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
        if let Some(saved) = self.saved.take() {
            // SAFETY: `saved` is the fd dup'ed in `new`, still open.
            unsafe {
                libc::dup2(saved, 1);
                libc::close(saved);
            }
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
