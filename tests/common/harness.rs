//! The defect harness: one table per defect family, each row a set of reference
//! defects with the checks it must make fail (and a substring of each failure's
//! message) and the checks it must make skip; one function runs a table.
//!
//! For every table, [`run_table`] first runs the table's suite against the healthy
//! reference (every check passes, exit 0), then each row against a reference with
//! the row's defects: exactly the listed checks fail, each with its reason in the
//! message, exactly the listed ones are skipped, every other check of the suite
//! passes, and the exit code is 1 when something fails. Runs are **not**
//! `--strict`, as a CI gate reads exit codes (issue 22 case 5): a defect must
//! fail a MUST property of the suite's profile (the shipped suites say
//! `botix`, whose contract properties are MUSTs), and a warning anywhere is a
//! problem (a listed check must say `fail`, every other `pass`). That also
//! proves the `--strict` run: strict only turns warnings into failures, and a
//! row that passes here has none. Every per-property verdict must name a
//! property its kind's table declares. The coverage helpers
//! ([`defect_tables`], [`failed_kinds`]) prove that every defect has exactly one
//! home and that every check kind is failed by some row.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tminus::reference::{Defect, DefectFamily};

use super::{repo, stdout, tminus, RefHandle};

/// How a table's suite reaches the defects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    /// A reference integration started with the row's defects; `--target` its URL.
    Reference,
    /// The reference over https with the row's defects (`tminus reference
    /// --tls`), client certificates required when `client_certs`; tminus is
    /// given its CA (and the client certificate).
    ReferenceTls { client_certs: bool },
    /// No target (tminus plays the platform); the reference client the suite
    /// starts reads the row's defects from `TMINUS_CLIENT_DEFECTS`.
    ClientEnv,
    /// Two references: the sandbox (healthy) as `--target`, and the
    /// production twin (`--environment production`) with the row's defects
    /// as `TMINUS_PRODUCTION`.
    SandboxAndProduction,
    /// [`Runner::Reference`] appending its JSON request log to a file of the
    /// run's folder, named to the suite by `TMINUS_LOG_FILE`.
    ReferenceLogs,
}

/// One row: these defects make exactly these checks fail (each with a substring of
/// its failure message) and exactly these checks skip; every other check passes.
#[derive(Debug)]
pub struct Row {
    pub defects: &'static [Defect],
    /// `(check id, substring of its failure message)`.
    pub fails: &'static [(&'static str, &'static str)],
    pub skips: &'static [&'static str],
    /// `(check id, substring of its message)`: checks that must be errors
    /// (the harness could not judge: "not exercised"), never passes.
    pub errors: &'static [(&'static str, &'static str)],
    /// Runs this suite instead of the table's (ids are then that suite's).
    pub suite: Option<&'static str>,
}

/// A row on the table's suite.
pub const fn row(
    defects: &'static [Defect],
    fails: &'static [(&'static str, &'static str)],
    skips: &'static [&'static str],
) -> Row {
    Row {
        defects,
        fails,
        skips,
        errors: &[],
        suite: None,
    }
}

impl Row {
    /// The same row on another suite (a cross-family suite such as the launch
    /// checklist); it runs by itself, after the table's own rows.
    pub const fn on(self, suite: &'static str) -> Row {
        Row {
            suite: Some(suite),
            ..self
        }
    }

    /// The same row, with these checks errors (each with a substring of
    /// its message).
    pub const fn erring(self, errors: &'static [(&'static str, &'static str)]) -> Row {
        Row { errors, ..self }
    }

    pub fn suite<'a>(&'a self, table: &'a Table) -> &'a str {
        self.suite.unwrap_or(table.suite)
    }

    fn name(&self) -> String {
        if self.defects.is_empty() {
            "healthy reference".into()
        } else {
            names(self.defects)
        }
    }
}

/// A family's table.
#[derive(Debug)]
pub struct Table {
    pub family: DefectFamily,
    /// The suite every row runs, relative to the repository (unless a row says otherwise).
    pub suite: &'static str,
    pub runner: Runner,
    /// Suite runs at once (each against its own reference): the suites mostly
    /// wait on timers and sockets, but some judge timing.
    pub width: usize,
    pub rows: &'static [Row],
}

/// The healthy reference: every check passes.
const HEALTHY: Row = row(&[], &[], &[]);

fn names(defects: &[Defect]) -> String {
    defects
        .iter()
        .map(|d| d.name())
        .collect::<Vec<_>>()
        .join(",")
}

/// One check's line of the JSON report.
#[derive(Debug, Clone)]
pub struct CheckResult {
    /// The check id without the `suite/` prefix.
    pub id: String,
    pub verdict: String,
    pub message: String,
    /// The per-property verdicts' property names.
    pub properties: Vec<String>,
    /// The properties that failed (or warned).
    pub failed_properties: Vec<String>,
}

/// Reads a JSON report (one suite) into its checks.
pub fn read_report(path: &Path) -> Vec<CheckResult> {
    let text = std::fs::read_to_string(path).expect("read JSON report");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON report parses");
    let mut out = Vec::new();
    for s in v["suites"].as_array().expect("suites") {
        for c in s["checks"].as_array().expect("checks") {
            out.push(CheckResult {
                id: c["id"].as_str().expect("check id").to_owned(),
                verdict: c["verdict"].as_str().expect("verdict").to_owned(),
                message: c["message"].as_str().unwrap_or_default().to_owned(),
                properties: properties(c, |_| true),
                failed_properties: properties(c, |v| v == "fail" || v == "warn"),
            });
        }
    }
    out
}

/// The names of a reported check's assertions whose verdict `keep` accepts.
fn properties(check: &serde_json::Value, keep: impl Fn(&str) -> bool) -> Vec<String> {
    check["assertions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|x| keep(x["verdict"].as_str().unwrap_or_default()))
                .map(|x| x["property"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn suite_path(suite: &str) -> PathBuf {
    repo().join(suite)
}

/// What a suite declares: its check ids with their kinds, and the prefix of its
/// load results (`burst.` for `load: { id: burst }`), read with tminus's own loader.
pub struct Declared {
    pub kinds: BTreeMap<String, String>,
    pub load_prefix: Option<String>,
}

/// [`Declared`] of `suite`, read once per test process (parsing is not free in
/// a debug build, and it must not steal CPU from a table's timed runs).
pub fn declared(suite: &str) -> Arc<Declared> {
    static CACHE: OnceLock<Mutex<BTreeMap<String, Arc<Declared>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(d) = cache.lock().unwrap().get(suite) {
        return d.clone();
    }
    let d = Arc::new(read_declared(suite));
    cache
        .lock()
        .unwrap()
        .entry(suite.to_owned())
        .or_insert(d)
        .clone()
}

fn read_declared(suite: &str) -> Declared {
    let loaded = tminus::suite::read_suite(&suite_path(suite))
        .unwrap_or_else(|d| panic!("{suite} does not load: {d:?}"));
    let kinds = loaded
        .file
        .checks
        .iter()
        .map(|c| (c.id().value.clone(), c.kind_name().to_owned()))
        .collect();
    let load_prefix = loaded.file.load.as_ref().map(|l| {
        let id = l.id.as_ref().map_or("load", |i| i.value.as_str());
        format!("{id}.")
    });
    Declared { kinds, load_prefix }
}

impl Declared {
    /// The kind of a reported id: its check's kind, or `load` for a load result.
    pub fn kind_of(&self, id: &str) -> Option<String> {
        if let Some(k) = self.kinds.get(id) {
            return Some(k.clone());
        }
        match &self.load_prefix {
            Some(p) if id.starts_with(p.as_str()) => Some("load".into()),
            _ => None,
        }
    }
}

/// Runs `suite` once for `defects`; returns the checks and the process output.
fn run_once(table: &Table, suite: &str, defects: &[Defect]) -> (Vec<CheckResult>, Output) {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("report.json");
    let path = suite_path(suite);
    let mut args: Vec<String> = vec![
        "run".into(),
        path.to_string_lossy().into_owned(),
        "--json".into(),
        json.to_string_lossy().into_owned(),
        "--report-dir".into(),
        dir.path().to_string_lossy().into_owned(),
    ];
    let mut envs: Vec<(&str, String)> = Vec::new();
    // Kept alive until the run is over.
    let reference;
    let mut _production = None;
    let mut _pki = None;
    match table.runner {
        Runner::Reference => {
            reference = Some(RefHandle::start(defects));
            args.push("--target".into());
            args.push(reference.as_ref().unwrap().url.clone());
        }
        Runner::ReferenceTls { client_certs } => {
            let (r, pki) = RefHandle::start_tls(defects, client_certs);
            args.push("--target".into());
            args.push(r.url.clone());
            args.extend(RefHandle::tls_args(pki.path(), client_certs));
            reference = Some(r);
            _pki = Some(pki);
        }
        Runner::ClientEnv => {
            reference = None;
            envs.push(("TMINUS_CLIENT_DEFECTS", names(defects)));
        }
        Runner::SandboxAndProduction => {
            reference = Some(RefHandle::start(&[]));
            args.push("--target".into());
            args.push(reference.as_ref().unwrap().url.clone());
            let p = RefHandle::start_with(tminus::reference::ReferenceConfig {
                defects: defects.to_vec(),
                ..tminus::reference::ReferenceConfig::production()
            });
            envs.push(("TMINUS_PRODUCTION", p.url.clone()));
            _production = Some(p);
        }
        Runner::ReferenceLogs => {
            let log = dir.path().join("reference-requests.log");
            reference = Some(RefHandle::start_with(tminus::reference::ReferenceConfig {
                defects: defects.to_vec(),
                log_file: Some(log.clone()),
                ..tminus::reference::ReferenceConfig::default()
            }));
            args.push("--target".into());
            args.push(reference.as_ref().unwrap().url.clone());
            envs.push(("TMINUS_LOG_FILE", log.to_string_lossy().into_owned()));
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = tminus(dir.path(), &args, &envs, Duration::from_secs(150));
    drop(reference);
    assert!(
        json.exists(),
        "{suite} with {}: no JSON report; stderr:\n{}",
        names(defects),
        super::stderr(&out)
    );
    (read_report(&json), out)
}

/// Judges one run of `row`; returns every problem found.
fn judge(
    table: &Table,
    row: &Row,
    declared: &Declared,
    results: &[CheckResult],
    out: &Output,
) -> Vec<String> {
    let mut problems = Vec::new();
    let suite = row.suite(table);
    let fails: BTreeMap<&str, &str> = row.fails.iter().copied().collect();
    let skips: BTreeSet<&str> = row.skips.iter().copied().collect();
    let reported: BTreeSet<&str> = results.iter().map(|r| r.id.as_str()).collect();
    for id in declared.kinds.keys() {
        if !reported.contains(id.as_str()) {
            problems.push(format!("{id}: declared in {suite} but not reported"));
        }
    }
    let errors: BTreeMap<&str, &str> = row.errors.iter().copied().collect();
    for id in fails.keys().chain(skips.iter()).chain(errors.keys()) {
        if !reported.contains(id) {
            problems.push(format!("{id}: named by the row but not reported"));
        }
    }
    for r in results {
        match declared.kind_of(&r.id) {
            None => problems.push(format!("{}: reported but not declared in {suite}", r.id)),
            Some(kind) => {
                let table: Vec<&str> = tminus::families::all_kinds()
                    .find(|k| k.name == kind)
                    .map(|k| k.properties.iter().map(|p| p.name).collect())
                    .unwrap_or_default();
                for p in &r.properties {
                    // `contract` is the runner's, judged on any check of a
                    // suite with `contract:` (issue 26).
                    if !table.contains(&p.as_str()) && p != tminus::contract::PROPERTY {
                        problems.push(format!(
                            "{}: judged property `{p}`, which {kind}'s table does not declare ({table:?})",
                            r.id
                        ));
                    }
                }
            }
        }
        let want = if fails.contains_key(r.id.as_str()) {
            "fail"
        } else if errors.contains_key(r.id.as_str()) {
            "error"
        } else if skips.contains(r.id.as_str()) {
            "skipped"
        } else {
            "pass"
        };
        if r.verdict != want {
            // A warning is the CI gate letting a defect through (exit 0).
            let why = if r.verdict == "warn" {
                " (a SHOULD under the suite's profile: exit 0 without --strict)"
            } else {
                ""
            };
            problems.push(format!(
                "{}: {}{why}, expected {want}: {}",
                r.id, r.verdict, r.message
            ));
            continue;
        }
        if let Some(reason) = fails.get(r.id.as_str()).or(errors.get(r.id.as_str())) {
            if reason.is_empty() || !r.message.contains(reason) {
                problems.push(format!(
                    "{}: fails, but the message lacks the reason `{reason}`: {}",
                    r.id, r.message
                ));
            }
        }
    }
    // A failure outranks an error; an error (nothing failed) is exit 3.
    let code = match (fails.is_empty(), errors.is_empty()) {
        (false, _) => 1,
        (true, false) => 3,
        (true, true) => 0,
    };
    if out.status.code() != Some(code) {
        problems.push(format!(
            "exit code {:?}, expected {code}",
            out.status.code()
        ));
    }
    problems
}

/// One finished run of a table.
struct RunOutcome {
    label: String,
    took: Duration,
    problems: Vec<String>,
    /// `kind.property` of every property the run failed.
    broken: BTreeSet<String>,
}

/// Runs `row` once and judges it.
fn run_row(table: &Table, row: &Row) -> RunOutcome {
    let suite = row.suite(table);
    let started = Instant::now();
    let declared = declared(suite);
    let (checks, out) = run_once(table, suite, row.defects);
    let mut problems = judge(table, row, &declared, &checks, &out);
    if !problems.is_empty() {
        problems.push(format!("stdout:\n{}", stdout(&out)));
    }
    let broken = checks
        .iter()
        .filter_map(|c| Some((declared.kind_of(&c.id)?, c)))
        .flat_map(|(kind, c)| {
            c.failed_properties
                .iter()
                .map(move |p| format!("{kind}.{p}"))
        })
        .collect();
    RunOutcome {
        label: format!("{} on {suite}", row.name()),
        took: started.elapsed(),
        problems,
        broken,
    }
}

/// Runs `rows`, `width` at a time; their outcomes in row order.
fn run_rows(table: &Table, rows: &[&Row], width: usize) -> Vec<RunOutcome> {
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<RunOutcome>>> = rows.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..width.clamp(1, rows.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(row) = rows.get(i) else { break };
                // A run that panics (no report, a reference that did not start)
                // is one row's problem; the other rows still run and report.
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| run_row(table, row)))
                    .unwrap_or_else(|panic| RunOutcome {
                        label: format!("{} on {}", row.name(), row.suite(table)),
                        took: Duration::ZERO,
                        problems: vec![format!("the run panicked: {}", panic_text(&*panic))],
                        broken: BTreeSet::new(),
                    });
                *done[i].lock().unwrap() = Some(outcome);
            });
        }
    });
    done.into_iter()
        .map(|o| o.into_inner().unwrap().expect("every row ran"))
        .collect()
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// Runs a table: the healthy reference on the table's suite and every row,
/// `table.width` at a time (rows on another suite one by one, afterwards);
/// panics with every problem of every row.
pub fn run_table(table: &Table) {
    // One table at a time, as when each family had its own test binary: the
    // suites judge timing, so two tables' runs must not share the two cores.
    static ONE_TABLE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_TABLE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());

    let started = Instant::now();
    // The table's own suite `width` at a time; a row on another suite alone,
    // afterwards (the width was chosen for the table's suite, not for that one).
    let (own, other): (Vec<&Row>, Vec<&Row>) = std::iter::once(&HEALTHY)
        .chain(table.rows)
        .partition(|r| r.suite.is_none());
    let mut outcomes = run_rows(table, &own, table.width);
    for r in &other {
        outcomes.extend(run_rows(table, &[r], 1));
    }
    let mut report = Vec::new();
    for o in &outcomes {
        eprintln!("[{}] {}: {:.1?}", table.family, o.label, o.took);
        if !o.problems.is_empty() {
            report.push(format!("{}:\n  {}", o.label, o.problems.join("\n  ")));
        }
    }
    eprintln!(
        "[{}] table: {} runs, {} at a time, {:.1?}",
        table.family,
        outcomes.len(),
        table.width,
        started.elapsed()
    );
    // Per property: which of the family's properties some defect breaks
    // (reported, not asserted: the gaps are listed in the session notes;
    // the first run is the healthy one, which breaks nothing).
    let broken: BTreeSet<&String> = outcomes.iter().flat_map(|o| &o.broken).collect();
    // Only the family's own kinds: the launch checklist holds every family's.
    let family = match table.family {
        DefectFamily::Foundation => "steps".to_string(),
        f => f.to_string(),
    };
    let mut kinds: BTreeSet<String> = BTreeSet::new();
    for r in std::iter::once(&HEALTHY).chain(table.rows) {
        kinds.extend(
            declared(r.suite(table))
                .kinds
                .values()
                .filter(|k| k.split('.').next() == Some(family.as_str()))
                .cloned(),
        );
    }
    let unbroken: Vec<String> = kinds
        .iter()
        .filter_map(|k| tminus::families::all_kinds().find(|x| x.name == k))
        .flat_map(|k| {
            k.properties
                .iter()
                .map(|p| format!("{}.{}", k.name, p.name))
                .collect::<Vec<_>>()
        })
        .filter(|p| !broken.contains(p))
        .collect();
    eprintln!(
        "[{}] properties broken by a defect: {}; by none: {}",
        table.family,
        broken.len(),
        unbroken.join(", ")
    );
    assert!(report.is_empty(), "{}", report.join("\n\n"));
}

/// For each defect, the tables it appears in (by family).
pub fn defect_tables(tables: &[&Table]) -> BTreeMap<Defect, Vec<DefectFamily>> {
    let mut out: BTreeMap<Defect, Vec<DefectFamily>> = BTreeMap::new();
    for t in tables {
        for d in t.rows.iter().flat_map(|r| r.defects) {
            let homes = out.entry(*d).or_default();
            if !homes.contains(&t.family) {
                homes.push(t.family);
            }
        }
    }
    out
}

/// Every kind some row makes fail (`load` for a load result).
pub fn failed_kinds(tables: &[&Table]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for t in tables {
        for r in t.rows {
            let suite = r.suite(t);
            let d = declared(suite);
            for (id, _) in r.fails {
                let kind = d
                    .kind_of(id)
                    .unwrap_or_else(|| panic!("{}: `{id}` is not a check of {suite}", r.name()));
                out.insert(kind);
            }
        }
    }
    out
}
