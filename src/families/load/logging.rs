//! tminus's `log` logger, installed before goose can install its own.
//!
//! goose initialises a `simplelog` logger that writes to stdout and lowers
//! the global level; stdout is reserved for machine-readable output, so
//! tminus takes the `log` facade first. goose's `CombinedLogger::init` then
//! fails quietly. Records go to stderr: errors always, warnings too when
//! `TMINUS_LOG` is set (`TMINUS_LOG=debug` shows everything). The engine
//! restores `log::max_level()` after each run, since goose changes it.
//! Every record passes through the run's `Redactor`: a library's error can
//! quote a URL or header that carries a secret.

use log::{Level, LevelFilter, Log, Metadata, Record};

use crate::redact::Redactor;

struct StderrLogger {
    level: Level,
    redactor: Redactor,
    /// Without `TMINUS_LOG`, the TLS libraries' own records are dropped:
    /// tminus reports each TLS failure itself, in one line
    /// (`http::tls::explain`), instead of an `ERROR [rustls_platform_verifier…]`
    /// in the middle of the progress.
    quiet_tls: bool,
}

impl Log for StderrLogger {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= self.level && !(self.quiet_tls && m.target().starts_with("rustls"))
    }
    fn log(&self, r: &Record<'_>) {
        if self.enabled(r.metadata()) {
            let text = self.redactor.redact(&r.args().to_string());
            eprintln!("{} [{}] {}", r.level(), r.target(), text);
        }
    }
    fn flush(&self) {}
}

/// Installs the logger once; later calls (and tests) are harmless. The
/// redactor is shared, so secrets registered later are masked too.
pub fn install(redactor: Redactor) {
    let setting = std::env::var("TMINUS_LOG").ok();
    let level = match setting.as_deref() {
        Some("trace") => Level::Trace,
        Some("debug") => Level::Debug,
        Some("info") => Level::Info,
        Some(_) => Level::Warn,
        None => Level::Error,
    };
    if log::set_boxed_logger(Box::new(StderrLogger {
        level,
        redactor,
        quiet_tls: setting.is_none(),
    }))
    .is_ok()
    {
        log::set_max_level(level.to_level_filter());
    }
}

/// The current global level, to restore after goose changed it.
pub fn level() -> LevelFilter {
    log::max_level()
}
