//! The one SIGINT handler of `tminus run`.
//!
//! goose calls `ctrlc::set_handler` at the start of every `execute()`; when a
//! handler is already set, goose 0.19 logs "reset ctrl-c handler" and calls
//! `reset_killswitch()` (util.rs `setup_ctrlc_handler`). So tminus installs
//! its handler first, at start-up: it flips the runner's cancel flag (so the
//! check runner stops between checks) and triggers goose's killswitch (so a
//! running burst stops and writes its partial figures). Because goose resets
//! the killswitch when it starts, the load ticker re-triggers it whenever
//! `cancelled()` is set and the killswitch is not (see `engine.rs`). A second
//! Ctrl-C exits at once with 130.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use tokio::sync::watch;

static CANCELLED: AtomicBool = AtomicBool::new(false);
static PRESSES: AtomicUsize = AtomicUsize::new(0);
static CHANNEL: OnceLock<(watch::Sender<bool>, watch::Receiver<bool>)> = OnceLock::new();

/// True once Ctrl-C was pressed.
pub fn cancelled() -> bool {
    CANCELLED.load(Ordering::SeqCst)
}

/// Installs the handler (once per process) and returns the runner's cancel
/// receiver. If the handler cannot be installed the run goes on; Ctrl-C then
/// has the default effect (the process ends).
pub fn install() -> watch::Receiver<bool> {
    let (_, rx) = CHANNEL.get_or_init(|| {
        let (tx, rx) = watch::channel(false);
        if let Err(e) = ctrlc::set_handler(on_interrupt) {
            eprintln!("warning: cannot install the Ctrl-C handler: {e}");
        }
        (tx, rx)
    });
    rx.clone()
}

fn on_interrupt() {
    if PRESSES.fetch_add(1, Ordering::SeqCst) > 0 {
        eprintln!("\ninterrupted twice: exiting now");
        std::process::exit(crate::exit::INTERRUPTED);
    }
    CANCELLED.store(true, Ordering::SeqCst);
    eprintln!("\ninterrupted: stopping the load / current check and writing reports (press Ctrl-C again to abort)");
    goose::trigger_killswitch("SIGINT received");
    if let Some((tx, _)) = CHANNEL.get() {
        let _ = tx.send(true);
    }
}
