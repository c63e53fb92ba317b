//! Resolves the parsed command line into work and runs it: loading and
//! planning suites, starting the embedded reference when no target is given,
//! wiring the runner to the reporters, and mapping results to exit codes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::{ChecksArgs, ChecksFormat, Cli, Command, ReferenceArgs, RunArgs, ValidateArgs};
use crate::exit;
use crate::families::load::spec::{DOC as LOAD_DOC, LOAD};
use crate::plan::{self, Plan, PlanOptions};
use crate::redact::Redactor;
use crate::reference::tls::Written;
use crate::reference::{Defect, ReferenceConfig, ReferenceServer};
use crate::report::summary::{MarkdownSummary, SummaryConfig};
use crate::report::{console::Console, html::Html, json::Json, junit::Junit, Reporters};
use crate::run::{self, RunOptions};
use crate::spec::kinds::{DefaultValue, FamilyDoc, KindDoc, Param, COMMON_PARAMS};
use crate::suite::{self, Diagnostics, SuiteSource};

pub fn main(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(a) => cmd_run(a),
        Command::Validate(a) => cmd_validate(a),
        Command::Checks(a) => cmd_checks(a),
        Command::Reference(a) => cmd_reference(a),
        // command: webhook
        Command::Sign(a) => cmd_sign(a),
        // command: load
        Command::Merge(a) => cmd_merge(a),
        Command::Compare(a) => cmd_compare(&a),
        // command: ecosystem
        Command::Serve(a) => crate::serve::cmd_serve(a),
        Command::Completions(a) => cmd_completions(a.shell),
        Command::Man => cmd_man(),
        Command::Schema(a) => cmd_schema(a.which),
        Command::Init(a) => cmd_init(a),
        // command: certification
        Command::Bundle(a) => crate::certify::cmd_bundle(a),
        Command::Verify(a) => crate::certify::cmd_verify(a),
        // command: contract
        Command::Contract(a) => match a.command {
            crate::cli::ContractCommand::Diff(d) => cmd_contract_diff(&d),
            crate::cli::ContractCommand::Rules => {
                say_bytes(crate::contract::diff::rules_markdown().as_bytes())
            }
        },
        // command: end
    }
}

fn usage_error(msg: &str) -> i32 {
    eprintln!("error: {msg}");
    exit::INVALID
}

fn parse_vars(raw: &[String]) -> Result<Vec<(String, String)>, String> {
    raw.iter()
        .map(|kv| {
            kv.split_once('=')
                .filter(|(k, _)| !k.trim().is_empty())
                .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
                .ok_or_else(|| format!("--var `{kv}` must look like NAME=VALUE"))
        })
        .collect()
}

/// Loads every file, then plans the ones that loaded, so one pass reports
/// every problem of every file.
pub fn read_and_plan(paths: &[PathBuf], opts: &PlanOptions) -> Result<Plan, Diagnostics> {
    let mut diags = Diagnostics::default();
    let files = match suite::discover(paths) {
        Ok(f) => f,
        Err(d) => {
            diags.push(d);
            return Err(diags);
        }
    };
    let mut loaded: Vec<SuiteSource> = Vec::new();
    for f in &files {
        match suite::read_suite(f) {
            Ok(l) => loaded.push(l),
            Err(found) => found.into_iter().for_each(|d| diags.push(d)),
        }
    }
    match plan::build(&loaded, opts) {
        Ok(p) if diags.is_empty() => Ok(p),
        Ok(_) => Err(diags),
        Err(more) => {
            diags.extend(more);
            Err(diags)
        }
    }
}

fn report_diagnostics(d: &Diagnostics) -> i32 {
    eprint!("{d}");
    eprintln!("{} error(s); nothing was sent.", d.len());
    exit::INVALID
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
}

fn cmd_validate(a: ValidateArgs) -> i32 {
    let vars = match parse_vars(&a.vars) {
        Ok(v) => v,
        Err(e) => return usage_error(&e),
    };
    let quota = match a
        .quota
        .as_deref()
        .map(crate::http::quota::DeclaredQuota::parse)
        .transpose()
    {
        Ok(q) => q,
        Err(e) => return usage_error(&format!("--quota: {e}")),
    };
    let opts = PlanOptions {
        vars,
        ..PlanOptions::default()
    };
    match read_and_plan(&a.paths, &opts) {
        Ok(p) => {
            eprintln!(
                "ok: {} suite(s), {} check(s)",
                p.suites.len(),
                p.check_count()
            );
            eprint!("{}", crate::cost::report(&p, quota));
            exit::OK
        }
        Err(d) => report_diagnostics(&d),
    }
}

fn cmd_run(a: RunArgs) -> i32 {
    let vars = match parse_vars(&a.vars) {
        Ok(v) => v,
        Err(e) => return usage_error(&e),
    };
    let timeout = match a
        .timeout
        .as_deref()
        .map(crate::model::scalar::parse_duration)
        .transpose()
    {
        Ok(Some(t)) if t.is_zero() => {
            return usage_error("--timeout: must be longer than zero");
        }
        Ok(t) => t,
        Err(e) => return usage_error(&format!("--timeout: {e}")),
    };
    let quota = match quota_options(a.quota.as_deref(), &a.max_quota_wait) {
        Ok(q) => q,
        Err(e) => return usage_error(&e),
    };
    // The command line's own credentials (a URL's userinfo, with or without
    // its scheme), so its usage errors are redacted like any output.
    let cli_secrets = Redactor::new();
    for u in [&a.target, &a.sink_url, &a.dependency_url]
        .into_iter()
        .flatten()
    {
        cli_secrets.add_userinfo(u);
    }
    let url_error = |flag: &str, u: &str, e: String| {
        let shown = crate::redact::mask_userinfo(u);
        usage_error(&cli_secrets.redact(&format!("{flag} `{shown}` {e}")))
    };
    if let Some(t) = &a.target {
        if let Err(e) = crate::context::check_base_url(t.trim_end_matches('/')) {
            return url_error("--target", t, e);
        }
    }
    if let Some(u) = &a.sink_url {
        if let Err(e) = crate::context::check_base_url(u.trim_end_matches('/')) {
            return url_error("--sink-url", u, e);
        }
        if a.sink_listen.is_none_or(|l| l.port() == 0) {
            return usage_error(
                "--sink-url needs --sink-listen ADDR:PORT with a fixed port: the URL must lead to where the sink listens",
            );
        }
    }
    if let Some(u) = &a.dependency_url {
        if let Err(e) = crate::context::check_base_url(u.trim_end_matches('/')) {
            return url_error("--dependency-url", u, e);
        }
    }
    // The certificates tminus's own servers show (read before anything
    // is sent; the keys are secrets).
    let server_tls = |cert: &Option<PathBuf>, key: &Option<PathBuf>, c: &str, k: &str| {
        cert.as_ref()
            .map(|cert| {
                let key = key.as_ref().map(|p| crate::http::tls::TlsFile::new(k, p));
                crate::http::tls_server::server_config(
                    &crate::http::tls::TlsFile::new(c, cert),
                    key.as_ref(),
                )
                .map(crate::http::tls_server::ServerTls)
            })
            .transpose()
    };
    let sink_tls = match server_tls(&a.sink_cert, &a.sink_key, "--sink-cert", "--sink-key") {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let upstream_tls = match server_tls(
        &a.upstream_cert,
        &a.upstream_key,
        "--upstream-cert",
        "--upstream-key",
    ) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let opts = PlanOptions {
        vars,
        target: a.target.clone(),
        timeout,
        only: a.only.clone(),
        tags: a.tag.clone(),
        sink_listen: a.sink_listen,
        sink_url: a.sink_url.clone(),
        sink_max_body: a.sink_max_body,
        sink_tls,
    };
    let mut plan = match read_and_plan(&a.paths, &opts) {
        Ok(p) => p,
        Err(d) => return report_diagnostics(&d),
    };
    // command: load
    if let Some(arg) = a.shard {
        use crate::families::load::shard;
        let spec = match arg.resolve(|k| std::env::var(k).ok()) {
            Ok(s) => s,
            Err(e) => return usage_error(&e),
        };
        let start_at = match a
            .start_at
            .as_deref()
            .map(|t| shard::parse_start_at(t, std::time::SystemTime::now()))
            .transpose()
        {
            Ok(t) => t,
            Err(e) => return usage_error(&format!("--start-at {e}")),
        };
        if let Err(e) = crate::plan::shard::apply(&mut plan, spec, start_at) {
            return usage_error(&e);
        }
    }
    if plan.check_count() == 0 {
        return usage_error("no check selected (see --only and --tag)");
    }
    // The baseline is read and checked before anything is sent.
    let baseline = match a
        .baseline
        .as_deref()
        .map(|d| baseline_for(&plan, d, &a.baseline_threshold))
    {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(e)) => return usage_error(&format!("--baseline: {e}")),
    };
    // command: certification
    // The key is read (and registered as a secret) before anything is sent.
    let sign_key = match crate::certify::load_key(a.sign_key.as_deref(), &plan.redactor) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return exit::RUN_BROKEN;
        }
    };
    let [junit, json, html] = a.reports.files();
    let bundle = a.bundle.clone().map(|out| crate::certify::RunBundle {
        out,
        key: sign_key,
        report_dir: a.reports.report_dir.clone(),
        json: json.clone(),
        files: [
            Some(junit.clone()),
            Some(html.clone()),
            a.summary_md.clone(),
        ]
        .into_iter()
        .flatten()
        .collect(),
        // A little before now: a file system may keep coarse times.
        since: std::time::SystemTime::now() - Duration::from_secs(2),
    });
    let redactor = plan.redactor.clone();
    // Outputs may not overwrite each other or an input suite (exit 2), and
    // must be writable before anything is sent (exit 3): a run whose
    // reports are lost at the end has cost its target for nothing.
    let mut named = vec![("--junit", &junit), ("--json", &json), ("--html", &html)];
    if let Some(md) = &a.summary_md {
        named.push(("--summary-md", md));
    }
    // The bursts this run makes, `suite/load` as their summaries name them:
    // only these are compared (the folder may hold older ones).
    let burst_ids: Vec<String> = plan
        .suites
        .iter()
        .filter_map(|s| Some(format!("{}/{}", s.name, s.load.as_ref()?.id)))
        .collect();
    let compare_files = baseline.as_ref().map(|_| {
        let dir = &a.reports.report_dir;
        (dir.join("compare.md"), dir.join("compare.html"))
    });
    if let Some((md, html)) = &compare_files {
        named.push(("--baseline's compare.md", md));
        named.push(("--baseline's compare.html", html));
    }
    // command: certification
    if let Some(b) = &a.bundle {
        named.push(("--bundle", b));
    }
    if let Err(e) = outputs_apart(&named, &a.paths) {
        return usage_error(&e);
    }
    // `$GITHUB_STEP_SUMMARY` is an output like the others: never an input
    // suite or another report (it may be --summary-md: that is written once),
    // and appendable before anything is sent.
    let step_summary = SummaryConfig::default()
        .github(|k| std::env::var(k).ok())
        .append;
    if let Some(p) = &step_summary {
        let others = [
            ("$GITHUB_STEP_SUMMARY", p),
            ("--junit", &junit),
            ("--json", &json),
            ("--html", &html),
        ];
        if let Err(e) = outputs_apart(&others, &a.paths) {
            return usage_error(&e);
        }
        if let Err(e) = crate::report::preflight_append(p) {
            eprintln!("error: $GITHUB_STEP_SUMMARY: {e}");
            return exit::RUN_BROKEN;
        }
    }
    let mut outputs: Vec<&Path> = named.iter().map(|(_, p)| p.as_path()).collect();
    let load_probe = a.reports.report_dir.join("load-figures");
    let has_load = plan.suites.iter().any(|s| s.load.is_some());
    if has_load {
        outputs.push(&load_probe);
    }
    if let Some(b) = &a.bundle {
        outputs.push(b);
    }
    if let Err(e) = crate::report::preflight(&outputs) {
        eprintln!("error: {e}");
        return exit::RUN_BROKEN;
    }
    // Before the first client is built: every client carries them.
    let cli_tls = crate::http::tls::TlsOptions {
        ca: a
            .cacert
            .as_ref()
            .map(|p| crate::http::tls::TlsFile::new("--cacert", p)),
        cert: a
            .cert
            .as_ref()
            .map(|p| crate::http::tls::TlsFile::new("--cert", p)),
        key: a
            .key
            .as_ref()
            .map(|p| crate::http::tls::TlsFile::new("--key", p)),
        insecure: a.insecure,
        ..Default::default()
    };
    let tls = match crate::plan::tls::for_the_run(&plan.suites, cli_tls) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    // Said in every report: nothing this run saw over TLS is authenticated.
    let mut warnings = Vec::new();
    if tls.insecure {
        warnings.push(INSECURE_WARNING.to_owned());
    }
    // A suite run against the embedded reference that names routes the
    // reference does not serve was written for another API (src/fit.rs).
    for suite in plan.suites.iter().filter(|s| s.base_url.is_none()) {
        let text = crate::files::read_file_capped(&suite.file, crate::files::MAX_SUITE_BYTES)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let foreign = crate::fit::foreign_paths(&text);
        if !foreign.is_empty() {
            warnings.push(crate::fit::warning(&suite.name, &foreign));
        }
    }
    let mut loaded = None;
    if !tls.is_empty() {
        match tls.load() {
            Ok(t) => loaded = Some(t),
            Err(e) => return usage_error(&e),
        }
    }
    // The embedded reference is served over https with a CA made for this
    // run, which the run's clients trust (nothing is written to disk): the
    // self-test exercises TLS as a real deployment does.
    let mut reference_tls = None;
    if plan.needs_reference() {
        match crate::reference::tls::generate(&crate::reference::tls::TlsSetup::default()) {
            Ok((server, written)) => {
                let t = loaded.get_or_insert_with(crate::http::tls::Tls::default);
                if let Err(e) = t.trust_pem(written.ca_pem.as_bytes()) {
                    eprintln!("error: the embedded reference's CA: {e}");
                    return exit::RUN_BROKEN;
                }
                reference_tls = Some(server);
            }
            Err(e) => {
                eprintln!("error: {e}");
                return exit::RUN_BROKEN;
            }
        }
    }
    // A suite that asks for the embedded reference's listener requiring
    // client certificates (SEC-005): a second CA and a client certificate
    // made for the run, presented by the run's clients. A certificate of the
    // user's own could not be trusted by that listener.
    let mut reference_client_cert_tls = None;
    if plan.needs_client_cert_reference() {
        if loaded.as_ref().is_some_and(|t| t.has_identity()) {
            return usage_error(
                "--cert/--key (or target.tls.cert) and a suite run against the embedded reference's listener that requires client certificates (`target.embedded: client_certs`): that listener trusts only the certificate made for the run; give --target, or leave the certificate out",
            );
        }
        let setup = crate::reference::tls::TlsSetup {
            client_certs: true,
            ..Default::default()
        };
        let made = crate::reference::tls::generate(&setup).and_then(|(server, written)| {
            let t = loaded.get_or_insert_with(crate::http::tls::Tls::default);
            t.trust_pem(written.ca_pem.as_bytes())?;
            let (cert, key) = written
                .client_pem
                .as_ref()
                .ok_or("the embedded reference made no client certificate")?;
            t.identify_pem(cert.as_bytes(), key.as_bytes())?;
            Ok(server)
        });
        match made {
            Ok(server) => reference_client_cert_tls = Some(server),
            Err(e) => {
                eprintln!("error: the embedded reference's client certificates: {e}");
                return exit::RUN_BROKEN;
            }
        }
    }
    if let Some(t) = loaded {
        if let Err(e) = crate::http::tls::install(t) {
            eprintln!("error: {e}");
            return exit::RUN_BROKEN;
        }
    }
    // Likewise the proxies: their credentials are secrets from here on.
    if let Some(p) = &a.proxy {
        plan.redactor.add_userinfo(p);
    }
    let proxies = match crate::plan::proxy::proxies_for_the_run(
        &plan.suites,
        a.proxy.as_deref(),
        a.noproxy.as_deref(),
        |k| std::env::var(k).ok(),
    ) {
        Ok(p) => p,
        Err(e) => return usage_error(&plan.redactor.redact(&e)),
    };
    for u in proxies.urls() {
        plan.redactor.add_userinfo(u.as_str());
    }
    if let Err(e) = crate::http::proxy::install(proxies) {
        eprintln!("error: {e}");
        return exit::RUN_BROKEN;
    }
    // Before anything can start goose: tminus's logger owns `log` (goose's
    // own cannot take stdout), and ONE SIGINT handler serves the runner and
    // goose's killswitch alike (see load/signal.rs).
    crate::families::load::logging::install(plan.redactor.clone());
    let cancel_rx = crate::families::load::signal::install();
    let color = crate::report::console::use_color(
        a.color,
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        std::env::var_os("NO_COLOR"),
    );
    let opts = RunOptions {
        fail_fast: a.fail_fast,
        default_base_url: None,
        client_cert_base_url: None,
        production_twin: None,
        report_dir: a.reports.report_dir.clone(),
        allow_remote_load: a.allow_remote_load,
        strict: a.strict,
        quota,
        upstream_max_body: a
            .upstream_max_body
            .map_or(crate::upstream::DEFAULT_MAX_BODY, |m| {
                usize::try_from(m).unwrap_or(usize::MAX)
            }),
        upstream_tls,
        dependency: crate::double::DependencyEndpoint {
            listen: a
                .dependency_listen
                .unwrap_or(crate::double::DependencyEndpoint::default().listen),
            public_url: a
                .dependency_url
                .as_ref()
                .map(|u| u.trim_end_matches('/').to_owned()),
        },
        warnings,
    };
    let code = rt.block_on(run_plan(
        plan,
        opts,
        EmbeddedTls {
            main: reference_tls,
            client_certs: reference_client_cert_tls,
        },
        color,
        a.verbose,
        ReportFiles {
            summary: SummaryConfig {
                file: a.summary_md.clone(),
                reports: [
                    ("JUnit", junit.clone()),
                    ("JSON", json.clone()),
                    ("HTML", html.clone()),
                ]
                .into_iter()
                .chain(
                    has_load.then(|| ("load figures (.hgrm, .hlog)", a.reports.report_dir.clone())),
                )
                .collect(),
                ..SummaryConfig::default()
            }
            .github(|k| std::env::var(k).ok()),
            junit,
            json,
            html,
        },
        cancel_rx,
    ));
    let code = match (baseline, compare_files) {
        (Some(b), Some((markdown, html))) => {
            let outputs = crate::compare::Outputs {
                markdown: Some(markdown),
                html: Some(html),
                step_summary: step_summary.clone(),
            };
            against_baseline(code, &b, &a.reports.report_dir, &burst_ids, &outputs)
        }
        _ => code,
    };
    // A failed or cancelled run is bundled as what it is (the manifest
    // says so); a JSON report this run did not write is never packed.
    match bundle {
        Some(b) => b.pack(code, &redactor),
        None => code,
    }
}

/// `run --baseline DIR`: the baseline read and its thresholds parsed, for
/// a plan with a burst (its bursts are the ones compared).
fn baseline_for(
    plan: &Plan,
    dir: &Path,
    thresholds: &[String],
) -> Result<crate::compare::Baseline, String> {
    if !plan.suites.iter().any(|s| s.load.is_some()) {
        return Err("no selected suite has a `load:` section: there is no burst to compare".into());
    }
    let baseline = crate::compare::load_baseline(dir, thresholds)?;
    let missing: Vec<String> = plan
        .suites
        .iter()
        .filter_map(|s| Some(format!("{}/{}", s.name, s.load.as_ref()?.id)))
        .filter(|id| !baseline.bursts.contains_key(id))
        .map(|id| format!("`{id}`"))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} holds no burst {} to compare this run's with",
            dir.display(),
            missing.join(", ")
        ));
    }
    Ok(baseline)
}

/// The run's exit code with its bursts judged against the baseline: a
/// broken run stays broken (3), a regression fails it (1), an
/// inconclusive comparison is 4, one that cannot be made 3.
fn against_baseline(
    code: i32,
    baseline: &crate::compare::Baseline,
    report_dir: &Path,
    bursts: &[String],
    outputs: &crate::compare::Outputs,
) -> i32 {
    let compared = match crate::compare::judge_run(baseline, report_dir, Some(bursts), outputs) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: --baseline: the run's bursts cannot be compared: {e}");
            exit::RUN_BROKEN
        }
    };
    exit::worst(code, compared)
}

/// The warning every report of an `--insecure` run carries.
pub const INSECURE_WARNING: &str = "TLS certificates were not verified (--insecure or target.tls.insecure): any server could have answered for the target, so no verdict of this run shows the target itself; transport.certificate still judges its certificate";

/// `--quota` and `--max-quota-wait` as the request budget's options.
pub fn quota_options(
    quota: Option<&str>,
    max_wait: &str,
) -> Result<crate::http::quota::QuotaOptions, String> {
    let declared = quota
        .map(crate::http::quota::DeclaredQuota::parse)
        .transpose()
        .map_err(|e| format!("--quota: {e}"))?;
    let max_wait = crate::model::scalar::parse_duration(max_wait)
        .map_err(|e| format!("--max-quota-wait: {e}"))?;
    Ok(crate::http::quota::QuotaOptions { max_wait, declared })
}

/// Refuses two outputs on one file, and an output on an input suite.
fn outputs_apart(outputs: &[(&str, &PathBuf)], inputs: &[PathBuf]) -> Result<(), String> {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    for (i, (fa, a)) in outputs.iter().enumerate() {
        for (fb, b) in &outputs[i + 1..] {
            if abs(a) == abs(b) {
                return Err(format!(
                    "{fa} and {fb} both write {}: give them different files",
                    a.display()
                ));
            }
        }
    }
    let suites = suite::discover(inputs).unwrap_or_default();
    for (flag, out) in outputs {
        if let Some(s) = suites.iter().find(|s| abs(s) == abs(out)) {
            return Err(format!(
                "{flag} {} would overwrite the suite {}",
                out.display(),
                s.display()
            ));
        }
    }
    Ok(())
}

/// Where the file reporters write.
pub struct ReportFiles {
    pub junit: PathBuf,
    pub json: PathBuf,
    pub html: PathBuf,
    /// The Markdown summary's destinations (none: not written).
    pub summary: SummaryConfig,
}

/// The console and the three report files, as `run` and `merge` write them.
fn standard_reporters(
    redactor: &Redactor,
    color: bool,
    verbose: bool,
    junit: &Path,
    json: &Path,
    html: &Path,
) -> Reporters {
    let mut reporters = Reporters::default();
    reporters.push(Box::new(
        Console::stderr(redactor.clone(), color).verbose(verbose),
    ));
    reporters.push(Box::new(Junit::new(junit.to_path_buf(), redactor.clone())));
    reporters.push(Box::new(Json::new(json.to_path_buf(), redactor.clone())));
    reporters.push(Box::new(Html::new(html.to_path_buf(), redactor.clone())));
    reporters
}

/// The embedded reference's TLS configurations: its main listener's, and
/// the one of its listener that requires client certificates when a suite
/// asks for it.
struct EmbeddedTls {
    main: Option<std::sync::Arc<rustls::ServerConfig>>,
    client_certs: Option<std::sync::Arc<rustls::ServerConfig>>,
}

/// Starts an embedded reference (the target, or its production twin) on a
/// free loopback port, over TLS when the run serves one.
async fn start_embedded(
    config: ReferenceConfig,
    tls: Option<std::sync::Arc<rustls::ServerConfig>>,
) -> std::io::Result<ReferenceServer> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    match tls {
        Some(tls) => ReferenceServer::start_tls(config, addr, tls).await,
        None => ReferenceServer::start(config, addr).await,
    }
}

async fn run_plan(
    plan: Plan,
    mut opts: RunOptions,
    reference_tls: EmbeddedTls,
    color: bool,
    verbose: bool,
    files: ReportFiles,
    cancel_rx: tokio::sync::watch::Receiver<bool>,
) -> i32 {
    let mut reporters = standard_reporters(
        &plan.redactor,
        color,
        verbose,
        &files.junit,
        &files.json,
        &files.html,
    );
    if files.summary.is_active() {
        reporters.push(Box::new(MarkdownSummary::new(
            files.summary.clone(),
            plan.redactor.clone(),
        )));
    }

    let mut reference = None;
    let mut client_cert_reference = None;
    if let Some(tls) = reference_tls.client_certs {
        let addr = "127.0.0.1:0".parse().expect("loopback address");
        match ReferenceServer::start_tls(ReferenceConfig::default(), addr, tls).await {
            Ok(server) => {
                let url = server.base_url();
                eprintln!(
                    "note: started the embedded reference's listener that requires client certificates at {url}"
                );
                opts.client_cert_base_url = Some(url);
                client_cert_reference = Some(server);
            }
            Err(e) => {
                eprintln!(
                    "error: cannot start the embedded reference integration on 127.0.0.1: {e}"
                );
                return exit::RUN_BROKEN;
            }
        }
    }
    if plan.needs_reference() {
        // A suite run against the embedded reference that reads its logs
        // from a file (`observe.logs.file`): the reference writes them there.
        let config = ReferenceConfig {
            log_file: plan
                .suites
                .iter()
                .filter(|s| s.base_url.is_none())
                .find_map(|s| match s.logs.as_ref().map(|l| &l.kind) {
                    Some(crate::logs::SourceKind::File(p)) => Some(p.clone()),
                    _ => None,
                }),
            ..ReferenceConfig::default()
        };
        match start_embedded(config, reference_tls.main.clone()).await {
            Ok(server) => {
                let url = server.base_url();
                eprintln!(
                    "note: no target given: started the embedded reference integration at {url}"
                );
                opts.default_base_url = Some(url);
                reference = Some(server);
            }
            Err(e) => {
                eprintln!(
                    "error: cannot start the embedded reference integration on 127.0.0.1: {e}"
                );
                return exit::RUN_BROKEN;
            }
        }
    }
    // A sandbox check without a production URL: a second reference with
    // its own keys stands for production (`auth.sandbox_isolated`).
    let mut production_twin = None;
    if plan.needs_production_twin() {
        match start_embedded(ReferenceConfig::production(), reference_tls.main.clone()).await {
            Ok(server) => {
                let url = server.base_url();
                eprintln!(
                    "note: started the embedded reference's production twin (its own API key) at {url}"
                );
                opts.production_twin = Some(url);
                production_twin = Some(server);
            }
            Err(e) => {
                eprintln!(
                    "error: cannot start the embedded reference's production twin on 127.0.0.1: {e}"
                );
                return exit::RUN_BROKEN;
            }
        }
    }
    let client = match crate::http::Client::new() {
        Ok(c) => c.with_quota(crate::http::Quota::new(opts.quota)),
        Err(e) => {
            eprintln!("error: {e}");
            return exit::RUN_BROKEN;
        }
    };
    let summary = run::run(&plan, &opts, &client, &mut reporters, cancel_rx.clone()).await;
    let mut code = summary.exit_code();
    if *cancel_rx.borrow() {
        code = exit::worst(code, exit::RUN_BROKEN);
    }
    match reporters.finish() {
        Ok(()) => eprintln!(
            "reports: {} {} {}",
            files.junit.display(),
            files.json.display(),
            files.html.display()
        ),
        Err(e) => {
            eprintln!("error: cannot write reports: {e}");
            code = exit::RUN_BROKEN;
        }
    }
    for r in [reference, client_cert_reference, production_twin]
        .into_iter()
        .flatten()
    {
        r.shutdown().await;
    }
    code
}

fn cmd_checks(a: ChecksArgs) -> i32 {
    use std::io::Write;
    let text = match a.format {
        ChecksFormat::Text => checks_text(),
        ChecksFormat::Markdown => checks_markdown(),
        ChecksFormat::Requirements => crate::catalogue::markdown(),
    };
    // A closed pipe (`tminus checks | head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    exit::OK
}

/// `println!` for the binary's own stdout output, except that a closed pipe
/// (`tminus reference --list-defects | head`) ends quietly instead of
/// panicking, as ripgrep does.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// How `docs/checks.md` is regenerated.
pub const CHECKS_MD_COMMAND: &str = "cargo run -- checks --format markdown > docs/checks.md";

fn text_params(out: &mut String, params: &[Param]) {
    use std::fmt::Write;
    for p in params {
        let _ = writeln!(
            out,
            "    {:<24} {:<20} {}",
            p.name,
            p.default.to_string(),
            p.doc
        );
    }
}

/// What `tminus checks` prints: every kind with its parameters, the common
/// parameters and those of `load:`.
pub fn checks_text() -> String {
    use std::fmt::Write;
    let mut out = String::from("Check kinds (use as `kind:` in a suite):\n\n");
    for k in crate::families::all_kinds() {
        let _ = writeln!(out, "{:<28} {}", k.name, k.summary);
        text_params(&mut out, k.params);
    }
    out.push_str("\nEvery kind also takes:\n");
    text_params(&mut out, COMMON_PARAMS);
    out.push_str("\nA suite's `load:` section (the burst rehearsal) takes:\n");
    text_params(&mut out, LOAD.params);
    out.push_str(
        "\nThe reference with examples: docs/checks.md (`tminus checks --format markdown`).\n",
    );
    out
}

/// A GitHub heading anchor: lowercase, spaces to `-`, punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// A table cell: pipes escaped, line breaks flattened.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn default_cell(d: &DefaultValue) -> String {
    match d {
        DefaultValue::Required | DefaultValue::Absent | DefaultValue::Text(_) => {
            cell(&d.to_string())
        }
        DefaultValue::Profiled { standard, botix } => format!(
            "standard: {}<br>botix: {}",
            default_cell(standard),
            default_cell(botix)
        ),
        typed => format!("`{}`", cell(&typed.to_string())),
    }
}

fn md_params(out: &mut String, params: &[Param]) {
    use std::fmt::Write;
    out.push_str("| parameter | default | meaning |\n|---|---|---|\n");
    for p in params {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            p.name,
            default_cell(&p.default),
            cell(p.doc)
        );
    }
    out.push('\n');
}

/// What a kind judges: one verdict per row (a JUnit testcase
/// `<check-id>.<property>` when there are several), its level under each
/// profile (a botix MUST in bold where it differs from the RFC level) and
/// where that level comes from.
fn md_properties(out: &mut String, props: &[crate::spec::kinds::Property]) {
    use crate::model::profile::Profile;
    use std::fmt::Write;
    out.push_str("| property | standard | botix | source | holds when |\n|---|---|---|---|---|\n");
    for p in props {
        let standard = p.severity_in(Profile::Standard);
        let botix = p.severity_in(Profile::Botix);
        let botix = if botix == standard {
            botix.to_string()
        } else {
            format!("**{botix}**")
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            p.name,
            standard,
            botix,
            cell(p.source),
            cell(p.doc)
        );
    }
    out.push('\n');
}

fn sentence(summary: &str) -> String {
    let mut c = summary.chars();
    let mut s: String = match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    };
    if !s.ends_with(['.', '!', '?']) {
        s.push('.');
    }
    s
}

/// A family's section: its doc's intro, each kind (summary, parameters,
/// details), then the rest of its doc.
fn md_family(out: &mut String, doc: &str, kinds: &[KindDoc]) {
    let fd = FamilyDoc::parse(doc);
    out.push_str(fd.intro.trim());
    out.push_str("\n\n");
    let mut seen: Vec<&KindDoc> = Vec::new();
    for k in kinds {
        out.push_str(&format!("### `{}`\n\n{}\n\n", k.name, sentence(k.summary)));
        let req = crate::coverage::of_kind(k.name);
        if let Some(point) = req.point {
            out.push_str(&format!(
                "Certifies: {} (catalogue point {point}).\n\n",
                req.ids.join(", ")
            ));
        }
        match seen.iter().find(|s| s.params == k.params) {
            Some(same) => out.push_str(&format!(
                "Parameters: as for [`{}`](#{}).\n\n",
                same.name,
                slug(same.name)
            )),
            None if k.params.is_empty() => out.push_str("Parameters: only the common ones.\n\n"),
            None => {
                md_params(out, k.params);
                seen.push(k);
            }
        }
        md_properties(out, &k.properties);
        let details = fd.details(k.name).trim();
        if !details.is_empty() {
            out.push_str(details);
            out.push_str("\n\n");
        }
    }
    let outro = fd.outro.trim();
    if !outro.is_empty() {
        out.push_str(outro);
        out.push_str("\n\n");
    }
}

/// How to read the two severity columns of every property table.
const SEVERITY_NOTE: &str = "**Severities per profile.** Every property table gives the property's level under \
each profile: `standard` is the RFC, IETF draft or Standard Webhooks level; `botix` is the seed \
checklist's contract, where every property the checklist states (the replay marker, limit headers on \
every response, Retry-After and the error code on 429, fast 429s, a Trace-Id on every response, an \
async status that keeps the trace, the webhook retry schedule, stopping on 410, ...) is a MUST, shown \
in **bold** where it differs. A broken MUST fails the run (exit 1); a broken SHOULD is a warning \
(exit 0) unless `--strict`. A check's `severity:` wins over both.\n\n";

/// The check reference (`docs/checks.md`), generated from the kind tables
/// and the family docs of the registry.
pub fn checks_markdown() -> String {
    use crate::families::FAMILIES;
    use std::fmt::Write;
    // The load family's doc holds `load:` (not a kind of `checks:`) first.
    let families: Vec<(&str, Vec<KindDoc>)> = FAMILIES
        .iter()
        .map(|f| {
            let own = f.kinds.iter().flat_map(|t| t.docs());
            let kinds = match f.doc == LOAD_DOC {
                true => std::iter::once(KindDoc::from(&LOAD)).chain(own).collect(),
                false => own.collect(),
            };
            (f.doc, kinds)
        })
        .collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "# Check reference\n\n\
         <!-- Generated by `tminus checks --format markdown` from the kind tables \
         (src/families/*/spec.rs) and the family docs the registry includes \
         (src/families/mod.rs: a README.md per family). \
         Do not edit: change those, then run `{CHECKS_MD_COMMAND}`. \
         tests/it/docs.rs fails while this file is stale. -->\n\n\
         Every check kind, family by family: what it sends, what passes, its parameters \
         with their defaults (the values the planner applies, read from the same \
         constants) and what its failure looks like. `tminus checks` prints the same \
         tables as text. The suite grammar (requests, expectations, captures, \
         placeholders, durations) is in the [README](../README.md#suite-grammar).\n\n"
    );
    out.push_str("- [Parameters every check takes](#parameters-every-check-takes)\n");
    for (doc, kinds) in &families {
        let title = FamilyDoc::parse(doc)
            .title()
            .unwrap_or("untitled")
            .to_owned();
        let _ = write!(out, "- [{}](#{}):", title.replace('`', ""), slug(&title));
        for (i, k) in kinds.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            let _ = write!(out, "{sep}[`{}`](#{})", k.name, slug(k.name));
        }
        out.push('\n');
    }
    out.push_str("\n## Parameters every check takes\n\n");
    md_params(&mut out, COMMON_PARAMS);
    out.push_str(SEVERITY_NOTE);
    for (doc, kinds) in &families {
        md_family(&mut out, doc, kinds);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The reference's knobs beyond defects: rate limit, stall, concurrency, webhook schedule.
fn apply_reference_tuning(a: &ReferenceArgs, config: &mut ReferenceConfig) -> Result<(), String> {
    let dur = |flag: &str, text: &str| {
        crate::model::scalar::parse_duration(text).map_err(|e| format!("{flag}: {e}"))
    };
    if let Some(rl) = &a.rate_limit {
        if rl.trim() == "off" {
            // A limit no run can reach: the limiter stays (headers keep their shape).
            config.rate_limit.limit = u32::MAX as u64;
        } else {
            let (limit, window) = rl
                .split_once('/')
                .ok_or_else(|| format!("--rate-limit `{rl}` must look like 100/1s or `off`"))?;
            config.rate_limit.limit = limit
                .trim()
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("--rate-limit: `{limit}` is not a positive whole number"))?;
            let w = dur("--rate-limit", window)?;
            if w.as_secs() == 0 || w.subsec_nanos() != 0 {
                return Err(format!(
                    "--rate-limit: the window `{window}` must be whole seconds, at least 1s"
                ));
            }
            config.rate_limit.window = w;
        }
    }
    config.rate_limit.sliding = match a.rate_limit_window.as_str() {
        "fixed" => false,
        "sliding" => true,
        other => {
            return Err(format!(
                "--rate-limit-window: `{other}` is not fixed or sliding"
            ))
        }
    };
    config.rate_limit.headers = match a.rate_limit_headers.as_str() {
        "on" => true,
        "off" => false,
        other => return Err(format!("--rate-limit-headers: `{other}` is not on or off")),
    };
    config.rate_limit.dialects =
        crate::reference::RateLimitDialect::parse_list(&a.rate_limit_dialect)
            .map_err(|e| format!("--rate-limit-dialect: {e}"))?;
    if let Some(n) = a.rate_limit_daily {
        if n == 0 {
            return Err("--rate-limit-daily must be at least 1".into());
        }
        config.rate_limit.daily = Some(n);
    }
    if let Some(n) = a.stall_every {
        if n == 0 {
            return Err("--stall-every must be at least 1".into());
        }
        config.stall_every = n;
    }
    if let Some(s) = &a.stall_for {
        config.stall_for = dur("--stall-for", s)?;
    }
    if let Some(n) = a.max_concurrency {
        if n == 0 {
            return Err("--max-concurrency must be at least 1".into());
        }
        config.max_concurrency = Some(n);
    }
    apply_dependency_tuning(a, &mut config.dependency)?;
    if let Some(s) = &a.webhook_schedule {
        config.webhook_schedule = s
            .split(',')
            .map(|d| dur("--webhook-schedule", d))
            .collect::<Result<_, _>>()?;
    }
    Ok(())
}

/// The payment provider knobs (`--dependency-*`, `--breaker-*`).
fn apply_dependency_tuning(
    a: &ReferenceArgs,
    c: &mut crate::reference::DependencyConfig,
) -> Result<(), String> {
    let dur = |flag: &str, text: &str| {
        crate::model::scalar::parse_duration(text).map_err(|e| format!("{flag}: {e}"))
    };
    if let Some(u) = &a.dependency_url {
        c.url = Some(u.trim_end_matches('/').to_owned());
    }
    if let Some(t) = &a.dependency_timeout {
        c.try_timeout = dur("--dependency-timeout", t)?;
    }
    if let Some(t) = &a.dependency_deadline {
        c.deadline = dur("--dependency-deadline", t)?;
    }
    if let Some(n) = a.dependency_pool {
        if n == 0 {
            return Err("--dependency-pool must be at least 1".into());
        }
        c.pool = n;
    }
    if let Some(n) = a.breaker_failures {
        if n == 0 {
            return Err("--breaker-failures must be at least 1".into());
        }
        c.breaker_failures = n;
    }
    if let Some(t) = &a.breaker_open_for {
        c.breaker_open_for = dur("--breaker-open-for", t)?;
    }
    Ok(())
}

fn cmd_reference(a: ReferenceArgs) -> i32 {
    use crate::reference::client::is_client_defect;
    if let Some(crate::cli::ReferenceCommand::Client(c)) = a.command {
        return crate::reference::client::main(c);
    }
    if a.list_defects {
        say!("API defects (tminus reference --defect NAME):");
        for d in Defect::all().iter().filter(|d| !is_client_defect(**d)) {
            say!("  {:<28} {}", d.name(), d.summary());
        }
        say!("\nclient defects (tminus reference client --defect NAME):");
        for d in Defect::all().iter().filter(|d| is_client_defect(**d)) {
            say!("  {:<28} {}", d.name(), d.summary());
        }
        return exit::OK;
    }
    let mut defects = Vec::new();
    for name in &a.defects {
        match name.parse::<Defect>() {
            Ok(d) if is_client_defect(d) => {
                return usage_error(&format!(
                    "--defect {d} applies to the reference client: use `tminus reference client --defect {d}`"
                ))
            }
            Ok(d) => defects.push(d),
            Err(e) => return usage_error(&format!("--defect: {e}")),
        }
    }
    let latency = match a
        .latency
        .as_deref()
        .map(crate::model::scalar::parse_duration)
        .transpose()
    {
        Ok(l) => l.unwrap_or(Duration::ZERO),
        Err(e) => return usage_error(&format!("--latency: {e}")),
    };
    let base = match a.environment {
        crate::reference::Environment::Sandbox => ReferenceConfig::default(),
        crate::reference::Environment::Production => ReferenceConfig::production(),
    };
    let mut config = ReferenceConfig {
        defects,
        latency,
        token_lifetime: a.token_lifetime,
        log_file: a.log_file.clone(),
        log_stdout: a.log_stdout,
        ..base
    };
    if let Err(e) = apply_reference_tuning(&a, &mut config) {
        return usage_error(&e);
    }
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return exit::RUN_BROKEN;
        }
    };
    let tls = match &a.tls {
        None => None,
        Some(dir) => {
            let setup = crate::reference::tls::TlsSetup {
                dir: Some(dir.clone()),
                client_certs: a.tls_client_certs,
                defects: config.defects.clone(),
            };
            match crate::reference::tls::generate(&setup) {
                Ok(t) => Some(t),
                Err(e) => {
                    eprintln!("error: --tls {}: {e}", dir.display());
                    return exit::RUN_BROKEN;
                }
            }
        }
    };
    rt.block_on(async move {
        let addr = std::net::SocketAddr::new(a.bind, a.port);
        let started = match &tls {
            Some((server_tls, _)) => {
                ReferenceServer::start_tls(config.clone(), addr, server_tls.clone()).await
            }
            None => ReferenceServer::start(config.clone(), addr).await,
        };
        let server = match started {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot listen on {addr}: {e}");
                return exit::RUN_BROKEN;
            }
        };
        // stdout carries only the URL so scripts can read it.
        say!("{}", server.base_url());
        let names: Vec<&str> = config.defects.iter().map(|d| d.name()).collect();
        eprintln!(
            "reference integration listening on {} (defects: {}); API keys: {}; Ctrl-C stops it",
            server.base_url(),
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            },
            config.api_keys.join(", ")
        );
        if let Some((_, Written { ca: Some(ca), .. })) = &tls {
            eprintln!(
                "TLS: trust the reference's CA with --cacert {}",
                ca.display()
            );
        }
        if let Some((_, written)) = &tls {
            if let Some((cert, key)) = &written.client {
                eprintln!(
                    "TLS: a client certificate is required: --cert {} --key {}",
                    cert.display(),
                    key.display()
                );
            }
        }
        let _ = tokio::signal::ctrl_c().await;
        server.shutdown().await;
        exit::OK
    })
}

// command: ecosystem
/// `tminus completions SHELL`: generated from the clap model, so it never
/// drifts from the flags (as ripgrep and nextest ship theirs).
fn cmd_completions(shell: clap_complete::Shell) -> i32 {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "tminus", &mut buf);
    say_bytes(&buf)
}

/// `init --from-openapi FILE|URL`: the suite's text and what it holds. A
/// URL's document is saved beside the suite first (its `contract:` names a
/// file), never over an existing file, and removed when no suite is made.
fn init_from_openapi(
    source: &str,
    a: &crate::cli::InitArgs,
    suite_dir: &std::path::Path,
    profile: crate::model::profile::Profile,
) -> Result<(String, String), String> {
    let (doc, fetched) = if crate::init::is_url(source) {
        if a.output.as_os_str() != "-" && a.output.exists() {
            return Err(format!(
                "{} exists; not overwritten (choose another --output)",
                a.output.display()
            ));
        }
        let f = crate::init::fetch_document(source, &a.openapi_header)?;
        let stem = match a.output.file_stem() {
            _ if a.output.as_os_str() == "-" => "tminus".to_owned(),
            Some(s) => s.to_string_lossy().into_owned(),
            None => "tminus".to_owned(),
        };
        let path = suite_dir.join(format!("{stem}.openapi.{}", f.extension));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, f.text.as_bytes()))
            .map_err(|e| {
                format!(
                    "cannot save the document read from {source} as {}: {e}",
                    path.display()
                )
            })?;
        (path, Some(source))
    } else {
        (PathBuf::from(source), None)
    };
    match crate::init::from_openapi(&doc, suite_dir, profile, fetched) {
        Ok(s) => Ok((
            s.text,
            format!(
                "{} checks from {}{}, profile {profile}; {} mutating operation(s) not covered, each with its reason in the file",
                s.checks,
                doc.display(),
                fetched.map_or(String::new(), |u| format!(" (read from {u})")),
                s.skipped
            ),
        )),
        Err(e) => {
            if fetched.is_some() {
                let _ = std::fs::remove_file(&doc);
            }
            Err(match fetched {
                Some(u) => format!("{e} (read from {u})"),
                None => e,
            })
        }
    }
}

/// `tminus man`: the roff man page of the whole command tree.
fn cmd_init(a: crate::cli::InitArgs) -> i32 {
    let profile = crate::model::profile::Profile::from(a.profile);
    let (text, what) = match &a.from_openapi {
        None => (
            crate::init::starter(a.role, profile),
            format!("{} role, profile {profile}", a.role.as_str()),
        ),
        Some(source) => {
            let suite_dir = match a.output.parent() {
                _ if a.output.as_os_str() == "-" => PathBuf::from("."),
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            match init_from_openapi(source, &a, &suite_dir, profile) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("error: {e}");
                    return exit::INVALID;
                }
            }
        }
    };
    if a.output.as_os_str() == "-" {
        print!("{text}");
        return exit::OK;
    }
    // `create_new`: a suite someone wrote is never replaced by a starter.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&a.output)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    match written {
        Ok(()) => {
            eprintln!(
                "wrote {} ({what}): `tminus validate {0}`, then `tminus run {0}`",
                a.output.display(),
            );
            exit::OK
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            eprintln!(
                "error: {} exists; not overwritten (choose another --output)",
                a.output.display()
            );
            exit::INVALID
        }
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", a.output.display());
            exit::RUN_BROKEN
        }
    }
}

fn cmd_schema(which: crate::cli::SchemaKind) -> i32 {
    match which {
        crate::cli::SchemaKind::Suite => print!("{}", suite::schema::suite_schema_text()),
    }
    exit::OK
}

fn cmd_man() -> i32 {
    use clap::CommandFactory;
    let mut buf = Vec::new();
    let man = clap_mangen::Man::new(Cli::command());
    if let Err(e) = man.render(&mut buf) {
        eprintln!("error: cannot render the man page: {e}");
        return exit::RUN_BROKEN;
    }
    // Each subcommand's options in the same page, under its own heading,
    // so `man tminus` documents the `run` flags too (one page to install).
    for sub in Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
    {
        let heading = format!("tminus {} options", sub.get_name());
        let sub = sub
            .clone()
            .disable_help_flag(true)
            .mut_args(|a| a.help_heading(heading.clone()));
        if let Err(e) = clap_mangen::Man::new(sub).render_options_section(&mut buf) {
            eprintln!("error: cannot render the man page: {e}");
            return exit::RUN_BROKEN;
        }
    }
    say_bytes(&buf)
}

/// Writes generated output to stdout; a closed pipe ends quietly.
fn say_bytes(buf: &[u8]) -> i32 {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(buf);
    exit::OK
}

// command: load
/// `tminus merge DIR...`: the shards of one burst judged as one. Refusals
/// (mixed suites, a shard missing or twice, a changed suite) exit 3.
fn cmd_merge(a: crate::cli::MergeArgs) -> i32 {
    use crate::events::{CheckResult, Event, SuiteInfo, Summary};
    use crate::families::load::merge;
    use crate::run::EventListener;
    let broken = |msg: String| {
        eprintln!("error: {msg}");
        exit::RUN_BROKEN
    };
    let vars = match parse_vars(&a.vars) {
        Ok(v) => v,
        Err(e) => return usage_error(&e),
    };
    let shards = match merge::find(&a.dirs).and_then(merge::check_set) {
        Ok(s) => s,
        Err(e) => return broken(e),
    };
    let m = shards[0].manifest.clone();
    let suite_file = a.suite.clone().unwrap_or_else(|| m.suite_file.clone());
    let opts = PlanOptions {
        vars,
        target: Some(m.target.clone()),
        ..PlanOptions::default()
    };
    let plan = match read_and_plan(std::slice::from_ref(&suite_file), &opts) {
        Ok(p) => p,
        Err(d) => return report_diagnostics(&d),
    };
    let Some(suite) = plan.suites.iter().find(|s| s.name == m.suite) else {
        return broken(format!(
            "{} has no suite `{}`, which the shards ran",
            suite_file.display(),
            m.suite
        ));
    };
    if suite.digest != m.suite_digest {
        return broken(format!(
            "{} has SHA-256 {}, but the shards ran {}: pass --suite with the file they ran",
            suite_file.display(),
            suite.digest,
            m.suite_digest
        ));
    }
    let Some(load) = suite.load.as_ref().filter(|l| l.id == m.load) else {
        return broken(format!(
            "suite `{}` has no load `{}`, which the shards ran",
            suite.name, m.load
        ));
    };
    let figures = match merge::merge_figures(load, &shards) {
        Ok(f) => f,
        Err(e) => return broken(e),
    };
    let [junit, json, html] = a.reports.files();
    let named = [("--junit", &junit), ("--json", &json), ("--html", &html)];
    if let Err(e) = outputs_apart(&named, std::slice::from_ref(&suite_file)) {
        return usage_error(&e);
    }
    let probe = a.reports.report_dir.join("load-figures");
    if let Err(e) = crate::report::preflight(&[&junit, &json, &html, &probe]) {
        return broken(e.to_string());
    }
    let color = crate::report::console::use_color(
        a.color,
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        std::env::var_os("NO_COLOR"),
    );
    let mut reporters = standard_reporters(&plan.redactor, color, true, &junit, &json, &html);
    let started_at = shards
        .iter()
        .map(|s| s.manifest.started_unix_s)
        .fold(f64::INFINITY, f64::min);
    let started_at = std::time::UNIX_EPOCH + Duration::from_secs_f64(started_at.max(0.0));
    let info = SuiteInfo {
        name: suite.name.clone(),
        file: suite.file.clone(),
        digest: Some(suite.digest.clone()),
        version: suite.version.clone(),
        target: m.target.clone(),
        checks: crate::families::load::exec::result_count(load),
        profile: suite.profile.as_str(),
    };
    reporters.event(&Event::RunStarted {
        started_at,
        suites: vec![info.clone()],
        warnings: Vec::new(),
    });
    reporters.event(&Event::Notice(format!(
        "merged {} shards of {}/{} ({} requests)",
        shards.len(),
        suite.name,
        load.id,
        figures.overall.requests
    )));
    reporters.event(&Event::SuiteStarted(info));
    let results = merge::judge_merged(
        load,
        &suite.name,
        &m.target,
        &shards,
        &figures,
        &a.reports.report_dir,
        &plan.redactor,
    );
    let mut summary = Summary::default();
    for r in results {
        summary.add_outcome(&r.outcome);
        reporters.event(&Event::CheckFinished(Box::new(CheckResult {
            suite: suite.name.clone(),
            id: r.id,
            kind: r.kind,
            tags: load.tags.clone(),
            description: Some(r.description),
            requirements: crate::coverage::of_kind(r.kind),
            outcome: r.outcome,
            started_at,
            duration: figures.elapsed,
        })));
    }
    reporters.event(&Event::SuiteFinished {
        suite: suite.name.clone(),
        duration: figures.elapsed,
    });
    reporters.event(&Event::RunFinished {
        summary,
        duration: figures.elapsed,
        cancelled: false,
    });
    let mut code = summary.exit_code();
    match reporters.finish() {
        Ok(()) => eprintln!(
            "reports: {} {} {}",
            junit.display(),
            json.display(),
            html.display()
        ),
        Err(e) => {
            eprintln!("error: cannot write reports: {e}");
            code = exit::RUN_BROKEN;
        }
    }
    code
}

/// `tminus compare`: the run's `GITHUB_STEP_SUMMARY` rule applies to it too.
fn cmd_compare(a: &crate::cli::CompareArgs) -> i32 {
    crate::compare::cmd_compare(&crate::compare::CompareOptions {
        baseline: &a.baseline,
        run: &a.run,
        thresholds: &a.thresholds,
        min_deltas: &a.min_deltas,
        calibrate: a.calibrate,
        outputs: crate::compare::Outputs {
            markdown: a.markdown.clone(),
            html: a.html.clone(),
            step_summary: SummaryConfig::default()
                .github(|k| std::env::var(k).ok())
                .append,
        },
    })
}

// command: webhook
/// `tminus sign`: the headers a delivery would carry, so an integrator can
/// debug a verifier by hand. The secret is only used, never printed.
fn cmd_sign(a: crate::cli::SignArgs) -> i32 {
    use crate::signing::{Delivery, Scheme};
    let scheme = match Scheme::builtin(&a.scheme) {
        Ok(s) => s,
        Err(e) => return usage_error(&format!("--scheme: {e}")),
    };
    let key = match scheme.decode_secret(&a.secret) {
        Ok(k) => k,
        Err(e) => return usage_error(&format!("--secret: {e}")),
    };
    let cap = crate::files::MAX_BODY_FILE_BYTES;
    let body = if a.body_file.as_os_str() == "-" {
        crate::files::read_capped(std::io::stdin(), cap, "the body on stdin")
    } else {
        crate::files::read_file_capped(&a.body_file, cap)
    };
    let body = match body {
        Ok(b) => b,
        Err(e) => return usage_error(&e),
    };
    let d = Delivery {
        id: a.id.unwrap_or_else(|| format!("msg_{}", ulid::Ulid::new())),
        timestamp: a.timestamp.unwrap_or_else(crate::model::time::unix_now),
        body,
    };
    for (k, v) in scheme.headers(&key, &d, Some(&a.event)) {
        say!("{k}: {v}");
    }
    exit::OK
}

// command: contract
/// `tminus contract diff OLD NEW`: each side read from a file (with the
/// files its `$ref`s name) or a URL (bounded as `init --from-openapi`
/// reads one), compared, and reported on stdout and in the files asked
/// for. A side that cannot be read is exit 3 (broken): tminus could not
/// do its job, which says nothing about the change.
fn cmd_contract_diff(a: &crate::cli::DiffArgs) -> i32 {
    use crate::cli::{DiffFormat, FailOn};
    use crate::contract::diff;
    let read = |source: &str| -> Result<crate::contract::Document, String> {
        if crate::init::is_url(source) {
            let f = crate::init::fetch_document(source, &a.openapi_header)?;
            crate::contract::load_document_text(&f.text, source)
        } else {
            crate::contract::load_document(Path::new(source))
        }
    };
    let (old, new) = match (read(&a.old), read(&a.new)) {
        (Ok(o), Ok(n)) => (o, n),
        (o, n) => {
            for e in [o.err(), n.err()].into_iter().flatten() {
                eprintln!("error: {e}");
            }
            return exit::RUN_BROKEN;
        }
    };
    let fail_on = match a.fail_on {
        FailOn::Err => diff::Level::Err,
        FailOn::Warn => diff::Level::Warn,
    };
    let report = diff::diff(&old, &a.old, &new, &a.new);
    if let Some(why) = &report.incomplete {
        eprintln!("error: the comparison could not finish: {why}");
    }
    let json = || {
        let mut t = serde_json::to_string_pretty(&diff::json(&report, fail_on)).unwrap_or_default();
        t.push('\n');
        t
    };
    let junit = || diff::junit(&report, fail_on);
    let markdown = || diff::markdown(&report, fail_on);
    let stdout = match a.format {
        DiffFormat::Text => Ok(diff::console(&report, fail_on)),
        DiffFormat::Json => Ok(json()),
        DiffFormat::Junit => junit(),
        DiffFormat::Markdown => Ok(markdown()),
    };
    let mut code = report.exit_code(fail_on);
    match stdout {
        Ok(text) => {
            say_bytes(text.as_bytes());
        }
        Err(e) => {
            eprintln!("error: {e}");
            code = exit::RUN_BROKEN;
        }
    }
    let mut files: Vec<(&Path, Result<String, String>)> = Vec::new();
    if let Some(p) = &a.json {
        files.push((p.as_path(), Ok(json())));
    }
    if let Some(p) = &a.junit {
        files.push((p.as_path(), junit()));
    }
    if let Some(p) = &a.markdown {
        files.push((p.as_path(), Ok(markdown())));
    }
    for (path, text) in files {
        let written = text.and_then(|t| {
            std::fs::write(path, t).map_err(|e| format!("cannot write {}: {e}", path.display()))
        });
        if let Err(e) = written {
            eprintln!("error: {e}");
            code = exit::RUN_BROKEN;
        }
    }
    // GitHub gives every step the same summary file: append, as `run` does.
    if let Some(step) = SummaryConfig::default()
        .github(|k| std::env::var(k).ok())
        .append
    {
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&step)
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, format!("{}\n", markdown()).as_bytes())
            });
        if let Err(e) = appended {
            eprintln!("error: cannot append to {}: {e}", step.display());
            code = exit::RUN_BROKEN;
        }
    }
    code
}
