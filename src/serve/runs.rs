//! The runs `tminus serve` keeps: one per (namespace, name, hook, selection),
//! each a `tminus run` child process with its own report folder and a
//! deadline. A call for a run in progress is answered from it (never a
//! second run); a finished run is kept for `--keep`, then forgotten with
//! its folder. At most `--max-runs` run at once, at most one per canary
//! and hook (a call with another selection while one runs is refused, 409),
//! and at most [`MAX_WAITERS`] calls wait on one run (more are answered at
//! once, 429): a controller retrying in a tight loop, or many replicas
//! calling together, hold a bounded number of connections and start one run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use super::verdict::RunResult;

/// Calls that may wait on one run at once (`--hook-wait`).
pub const MAX_WAITERS: usize = 8;

/// What a run is: the key callers repeat.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub namespace: String,
    pub name: String,
    pub hook: String,
    /// The selection (target, suites, tags) as one canonical string.
    pub selection: String,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub target: String,
    pub suites: Vec<PathBuf>,
    pub tags: Vec<String>,
}

/// The server's settings a run needs.
#[derive(Debug, Clone)]
pub struct Settings {
    pub exe: PathBuf,
    pub reports: PathBuf,
    pub keep: Duration,
    pub run_timeout: Duration,
    pub max_runs: usize,
    pub allow_remote_load: bool,
    pub strict: bool,
}

/// One run, in progress or finished.
#[derive(Clone)]
pub struct Handle {
    pub id: u64,
    pub started: Instant,
    pub done: watch::Receiver<Option<Arc<RunResult>>>,
    waiters: Arc<Semaphore>,
}

impl Handle {
    pub fn result(&self) -> Option<Arc<RunResult>> {
        self.done.borrow().clone()
    }

    /// A place among the calls waiting on this run, if one is free.
    pub fn waiter(&self) -> Option<OwnedSemaphorePermit> {
        self.waiters.clone().try_acquire_owned().ok()
    }

    /// Waits for the result at most `wait` (holding a place from
    /// [`Handle::waiter`] while it waits).
    pub async fn wait(&mut self, wait: Duration) -> Option<Arc<RunResult>> {
        if wait.is_zero() {
            return self.result();
        }
        let _ = tokio::time::timeout(wait, self.done.wait_for(|r| r.is_some())).await;
        self.result()
    }
}

/// Why no run could be had.
#[derive(Debug)]
pub enum Refused {
    /// `--max-runs` runs are in progress.
    Busy(usize),
    /// The canary's hook has a run in progress for another selection (its id).
    Conflict(u64),
}

pub struct Registry {
    settings: Settings,
    runs: Mutex<BTreeMap<Key, (Handle, PathBuf)>>,
    next: AtomicU64,
}

impl Registry {
    pub fn new(settings: Settings) -> Registry {
        Registry {
            settings,
            runs: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Key, (Handle, PathBuf)>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets finished runs older than `--keep` (and their folders).
    fn purge(&self, runs: &mut BTreeMap<Key, (Handle, PathBuf)>) {
        let keep = self.settings.keep;
        runs.retain(|_, (h, dir)| match h.result() {
            Some(r) if r.finished.elapsed() >= keep => {
                let _ = std::fs::remove_dir_all(dir);
                false
            }
            _ => true,
        });
    }

    /// The run for `key`: the one in progress or kept, else a new one.
    pub fn get_or_start(&self, key: Key, spec: RunSpec) -> Result<(Handle, bool), Refused> {
        let mut runs = self.lock();
        self.purge(&mut runs);
        if let Some((h, _)) = runs.get(&key) {
            return Ok((h.clone(), false));
        }
        let same_hook =
            |k: &Key| k.namespace == key.namespace && k.name == key.name && k.hook == key.hook;
        if let Some((h, _)) = runs
            .iter()
            .find(|(k, (h, _))| same_hook(k) && h.result().is_none())
            .map(|(_, v)| v)
        {
            return Err(Refused::Conflict(h.id));
        }
        let running = runs.values().filter(|(h, _)| h.result().is_none()).count();
        if running >= self.settings.max_runs {
            return Err(Refused::Busy(running));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let dir = self.settings.reports.join(format!("run-{id}"));
        let (tx, rx) = watch::channel(None);
        let handle = Handle {
            id,
            started: Instant::now(),
            done: rx,
            waiters: Arc::new(Semaphore::new(MAX_WAITERS)),
        };
        runs.insert(key, (handle.clone(), dir.clone()));
        let settings = self.settings.clone();
        tokio::spawn(async move {
            let result = super::child::run(&settings, &spec, &dir).await;
            let _ = tx.send(Some(Arc::new(result)));
        });
        Ok((handle, true))
    }

    /// The latest finished run of each hook of one canary, and whether
    /// one of its runs is still going.
    pub fn latest(&self, namespace: &str, name: &str) -> (Vec<(String, Arc<RunResult>)>, bool) {
        let mut runs = self.lock();
        self.purge(&mut runs);
        let mut by_hook: BTreeMap<String, Arc<RunResult>> = BTreeMap::new();
        let mut running = false;
        for (k, (h, _)) in runs.iter() {
            if k.namespace != namespace || k.name != name {
                continue;
            }
            match h.result() {
                None => running = true,
                Some(r) => {
                    let newer = by_hook
                        .get(&k.hook)
                        .is_none_or(|old| old.finished < r.finished);
                    if newer {
                        by_hook.insert(k.hook.clone(), r);
                    }
                }
            }
        }
        (by_hook.into_iter().collect(), running)
    }
}
