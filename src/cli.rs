//! Command-line definitions (clap derive). Parsed here, resolved in `app`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::report::console::ColorChoice;

#[derive(Parser, Debug)]
#[command(
    name = "tminus",
    version,
    about = "Certifies HTTP integrations before launch: idempotency, rate limits, webhooks, trace correlation",
    long_about = None,
    after_help = crate::exit::help_block()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: `run`'s many options cost nothing worth boxing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run suites against a target (the embedded reference when none is given)
    #[command(after_help = crate::exit::help_block())]
    Run(RunArgs),
    /// Parse and check suites; send nothing; report every error at once
    #[command(after_help = crate::exit::help_block())]
    Validate(ValidateArgs),
    /// List the check kinds with their parameters (`--format markdown`: the check reference)
    Checks(ChecksArgs),
    /// Serve the reference integration (optionally with defects)
    Reference(ReferenceArgs),
    // command: webhook
    /// Print the headers a signed webhook delivery would carry (never the secret)
    Sign(SignArgs),
    // command: load
    /// Merge the outputs of `run --shard I/N` into one judged burst: exact histograms, thresholds, the usual reports and exit codes
    #[command(after_help = crate::exit::help_block())]
    Merge(MergeArgs),
    /// Compare the bursts of two report folders (a baseline and a run): corrected and raw p50/p95/p99, throughput, error and 429 rates with 95 % intervals widened by the run-to-run noise; exit 1 (failed) on a regression beyond doubt, 4 (inconclusive) when the noise could explain it, 3 (broken) for a cancelled burst; --calibrate records two runs' noise band
    #[command(after_help = crate::exit::help_block())]
    Compare(CompareArgs),
    /// Serve the canary gate: Flagger webhooks and an Argo Rollouts web metric run the suites of a folder against the canary (token: TMINUS_SERVE_TOKEN)
    #[command(after_help = format!("A run's verdict (Argo's `verdict`, Flagger's answer): {}.\n\n{}", crate::exit::verdict_words(), crate::exit::help_block()))]
    Serve(ServeArgs),
    // command: ecosystem
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) to stdout
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout
    Man,
    /// Print a JSON Schema (`suite`: the suite grammar, for editors) to stdout
    Schema(SchemaArgs),
    /// Write a commented starter suite for a role and profile (validates as written)
    Init(InitArgs),
    // command: certification
    /// Pack a run's report folder and the suites it ran into a signed, verifiable bundle (tar.gz with an in-toto manifest in a DSSE envelope)
    Bundle(BundleArgs),
    /// Check a bundle: its ed25519 signature, every file's SHA-256, nothing missing or added; exit 0 (passed), or 1 (failed) naming the first that differs
    Verify(VerifyArgs),
    // command: contract
    /// The API's OpenAPI documents: `contract diff OLD NEW` classifies every change between two versions as breaking (ERR), potentially breaking (WARN) or compatible (INFO)
    Contract(ContractArgs),
    // command: end
}

/// Where the reports go: `run` and `merge` write the same files.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Folder for reports (JUnit, JSON, HTML) and load figures (.hgrm, .hlog)
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub report_dir: PathBuf,
    /// JUnit file (default: REPORT_DIR/junit.xml)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// JSON summary file (default: REPORT_DIR/report.json)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// HTML report for people (default: REPORT_DIR/report.html)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl ReportArgs {
    /// The JUnit, JSON and HTML files, each defaulting into the report folder.
    pub fn files(&self) -> [PathBuf; 3] {
        let or_default = |p: &Option<PathBuf>, name: &str| {
            p.clone().unwrap_or_else(|| self.report_dir.join(name))
        };
        [
            or_default(&self.junit, "junit.xml"),
            or_default(&self.json, "report.json"),
            or_default(&self.html, "report.html"),
        ]
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Suite files or folders
    #[arg(default_value = "suites")]
    pub paths: Vec<PathBuf>,
    /// PEM file of CA certificates to trust besides the system's (a private CA), as curl's --cacert
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// PEM file of the client certificate to present (mutual TLS), as curl's --cert
    #[arg(long, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// PEM file of the client certificate's private key (a secret: never printed)
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Accept any server certificate, as curl's --insecure; every report then says so in a warning
    #[arg(long)]
    pub insecure: bool,
    /// Forward proxy for every request, http://[user:pass@]host:port, as curl's --proxy (default: HTTPS_PROXY/HTTP_PROXY/ALL_PROXY)
    #[arg(long, value_name = "URL")]
    pub proxy: Option<String>,
    /// Hosts reached without the proxy, comma-separated, as curl's --noproxy (default: NO_PROXY; `*`: none proxied)
    #[arg(long, value_name = "LIST")]
    pub noproxy: Option<String>,
    /// Base URL of the target; overrides every suite's `target.base_url`
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    #[command(flatten)]
    pub reports: ReportArgs,
    /// Set a suite variable (repeatable): --var contact_id=42
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
    /// Run only checks whose id (or suite/id) matches the glob (repeatable)
    #[arg(long, value_name = "PATTERN")]
    pub only: Vec<String>,
    /// Run only checks with this tag (repeatable)
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// Stop at the first failure; checks not run are reported as skipped
    #[arg(long)]
    pub fail_fast: bool,
    /// Treat broken SHOULD properties (warnings) as failures, exit 1 (failed), as `strict: true` in a suite does
    #[arg(long)]
    pub strict: bool,
    /// Default per-request timeout, e.g. 5s or 800ms
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Let a suite's `load:` section send load to a non-loopback target
    #[arg(long)]
    pub allow_remote_load: bool,
    /// The target's quota per credential, for a target that sends no rate-limit headers, e.g. 60/1m (overrides `target.rate_limit`)
    #[arg(long, value_name = "N/WINDOW")]
    pub quota: Option<String>,
    /// The most the whole run may wait for the target's quota (429s, exhausted windows), e.g. 10m; past it a check is an error naming the block
    #[arg(long, value_name = "DURATION", default_value = "15m")]
    pub max_quota_wait: String,
    /// Colour on stderr: `auto` (a terminal, and NO_COLOR unset or empty), `always` or `never`
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Every property of every check on the console, and a table of verdicts at the end (by default a passing check is one line)
    #[arg(short, long)]
    pub verbose: bool,
    /// Markdown summary for CI (also appended to $GITHUB_STEP_SUMMARY when that is set)
    #[arg(long, value_name = "FILE")]
    pub summary_md: Option<PathBuf>,
    /// Where sink checks' webhook receiver listens (default 127.0.0.1:0); overrides `target.sink.listen`
    #[arg(long, value_name = "ADDR:PORT")]
    pub sink_listen: Option<std::net::SocketAddr>,
    /// Public base URL that leads to --sink-listen, given to the target as ${var.sink_url} (plus a per-check path); overrides `target.sink.url`
    #[arg(long, value_name = "URL")]
    pub sink_url: Option<String>,
    /// Where `dependency.*` checks' dependency double listens (default 127.0.0.1:0); the target's dependency URL must lead here
    #[arg(long, value_name = "ADDR:PORT")]
    pub dependency_listen: Option<std::net::SocketAddr>,
    /// Base URL that leads to --dependency-listen, given to the target as ${var.dependency_url}
    #[arg(long, value_name = "URL", requires = "dependency_listen")]
    pub dependency_url: Option<String>,
    /// The largest webhook delivery body the sink accepts (default 2MiB); larger ones are answered 413 and named in the verdict
    #[arg(long, value_name = "SIZE", value_parser = crate::model::scalar::parse_bytes)]
    pub sink_max_body: Option<u64>,
    /// The largest request body the mock upstream of `client.*` checks accepts (default 2MiB); larger ones are answered 413 and named in the verdict
    #[arg(long, value_name = "SIZE", value_parser = crate::model::scalar::parse_bytes)]
    pub upstream_max_body: Option<u64>,
    /// PEM certificate (chain) the webhook sink serves https with, for platforms that deliver only to https; may also hold the key
    #[arg(long, value_name = "FILE")]
    pub sink_cert: Option<PathBuf>,
    /// PEM private key of --sink-cert (a secret: never printed)
    #[arg(long, value_name = "FILE", requires = "sink_cert")]
    pub sink_key: Option<PathBuf>,
    /// PEM certificate (chain) the mock upstream of `client.*` checks serves https with, for clients that refuse http; may also hold the key
    #[arg(long, value_name = "FILE")]
    pub upstream_cert: Option<PathBuf>,
    /// PEM private key of --upstream-cert (a secret: never printed)
    #[arg(long, value_name = "FILE", requires = "upstream_cert")]
    pub upstream_key: Option<PathBuf>,
    // command: load
    /// Run only shard I of N (1-based, e.g. 2/3) of the suite's `load:` burst: users, rate and scheduled requests are split so the N shards add up to the whole burst. The suite's other checks are not run; results are deferred to `tminus merge`. In a Kubernetes Indexed Job: `auto/N` (or `auto` with JOB_COMPLETIONS=N set in the manifest) takes I from the pod's 0-based JOB_COMPLETION_INDEX
    #[arg(long, value_name = "I/N|auto[/N]")]
    pub shard: Option<crate::families::load::shard::ShardArg>,
    /// With --shard: start the burst at this UTC instant (RFC 3339, e.g. 2026-12-01T12:00:00Z), the same on every shard; within 24 h ahead
    #[arg(long, value_name = "RFC3339", requires = "shard")]
    pub start_at: Option<String>,
    /// After the run's bursts, compare them with this baseline report folder as `tminus compare` does (tables on stdout, REPORT_DIR/compare.md and compare.html); a regression beyond doubt fails the run, an inconclusive one makes it exit 4 (inconclusive)
    #[arg(long, value_name = "DIR", conflicts_with = "shard")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: a threshold as `tminus compare --threshold` takes it, e.g. "p95_regression < 10%" (repeatable; default: compare's)
    #[arg(long, value_name = "[KIND:] MEASURE < N%", requires = "baseline")]
    pub baseline_threshold: Vec<String>,
    // command: certification
    /// After the run, pack the reports and the suites as run into this tar.gz with a manifest (see `tminus bundle`, docs/certification.md)
    #[arg(long, value_name = "FILE.tar.gz")]
    pub bundle: Option<PathBuf>,
    /// Sign the bundle's manifest with this ed25519 private key (PKCS#8 PEM, as `openssl genpkey -algorithm ed25519` writes); never printed
    #[arg(long, value_name = "FILE", requires = "bundle")]
    pub sign_key: Option<PathBuf>,
}

// command: contract
#[derive(Args, Debug)]
pub struct ContractArgs {
    #[command(subcommand)]
    pub command: ContractCommand,
}

#[derive(Subcommand, Debug)]
pub enum ContractCommand {
    /// Compare two OpenAPI 3.0/3.1 documents (files or http(s) URLs): every change to operations, parameters, bodies, responses and security classified breaking (ERR), potentially breaking (WARN) or compatible (INFO), under rule ids named after oasdiff's; breaking changes are allowed when the major version moves (info.version, or a /v1 -> /v2 path)
    #[command(after_help = DIFF_EXIT_CODES)]
    Diff(DiffArgs),
    /// Print the rules `contract diff` classifies changes by (Markdown: id, level, oasdiff counterpart), as docs/contract.md shows them
    Rules,
}

/// `contract diff`'s exit codes (numbers and names from src/exit.rs).
pub const DIFF_EXIT_CODES: &str = "Exit codes:
    0  passed: no change fails --fail-on (changes a new major version allows do not)
    1  failed: a breaking change (ERR), or with --fail-on WARN a potentially breaking one, that no major version move allows
    2  invalid: bad usage
    3  broken: a document could not be read or is not OpenAPI 3.0/3.1 (file:line:col where the parser gives one), a URL did not answer in time or in size, the comparison stopped at its bound (a schema nested or recursive past it), or a report could not be written";

/// `--fail-on`: the lowest level that fails the diff (oasdiff's words).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    #[value(name = "ERR")]
    Err,
    #[value(name = "WARN")]
    Warn,
}

/// What `contract diff` prints on stdout.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffFormat {
    Text,
    Json,
    Junit,
    Markdown,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The document as released (the base branch's, the last release's): a file or an http(s) URL
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The document as changed: a file or an http(s) URL
    #[arg(value_name = "NEW")]
    pub new: String,
    /// The lowest level that fails: `ERR` (breaking changes) or `WARN` (potentially breaking ones too)
    #[arg(
        long,
        value_enum,
        ignore_case = true,
        value_name = "LEVEL",
        default_value = "ERR"
    )]
    pub fail_on: FailOn,
    /// What stdout gets: `text` (a listing), `json`, `junit` or `markdown`
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Also write the JSON report to FILE
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write JUnit (one testcase per rule) to FILE
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write the Markdown summary to FILE (it is also appended to $GITHUB_STEP_SUMMARY when that is set)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// A header sent when reading a URL (NAME: VALUE, repeatable); nothing else identifies you to it
    #[arg(long, value_name = "NAME: VALUE")]
    pub openapi_header: Vec<String>,
}

// command: certification
#[derive(Args, Debug)]
pub struct BundleArgs {
    /// The --report-dir of a finished `tminus run` (its report.json names the suites, which must be unchanged)
    #[arg(value_name = "REPORT_DIR")]
    pub report_dir: PathBuf,
    /// The bundle to write (default: REPORT_DIR.tar.gz beside the folder)
    #[arg(long, short, value_name = "FILE.tar.gz")]
    pub output: Option<PathBuf>,
    /// Sign the manifest with this ed25519 private key (PKCS#8 PEM); without it the bundle is unsigned
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The bundle (tar.gz) to check
    #[arg(value_name = "FILE.tar.gz")]
    pub bundle: PathBuf,
    /// The signer's ed25519 public key (SPKI PEM, as `openssl pkey -pubout` writes)
    #[arg(long, value_name = "PUBLIC_KEY.pem")]
    pub key: Option<PathBuf>,
    /// Accept an unsigned bundle (or check a signed one without --key): hashes only, said so in the output
    #[arg(long)]
    pub allow_unsigned: bool,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// `standard` (only what RFCs, drafts and Standard Webhooks require) or `botix`
    #[arg(long, value_enum, default_value_t = ProfileArg::Standard)]
    pub profile: ProfileArg,
    /// What the suite certifies: an `api`, a `client`, a webhook `receiver` or a webhook-sending `platform`
    #[arg(long, value_enum, default_value_t = crate::init::Role::Api)]
    pub role: crate::init::Role,
    /// Where to write it (`-`: stdout); an existing file is never overwritten
    #[arg(long, short, value_name = "FILE", default_value = "tminus.yaml")]
    pub output: PathBuf,
    /// Write the suite from the API's OpenAPI 3.0/3.1 document (YAML or JSON), a file or an http(s) URL (saved beside the suite): idempotency checks per mutating operation, rate-limit and trace checks, the contract, the credentials its security asks for
    #[arg(long, value_name = "FILE|URL", conflicts_with = "role")]
    pub from_openapi: Option<String>,
    /// A header sent when reading --from-openapi's URL (NAME: VALUE, repeatable); nothing else identifies you to it
    #[arg(long, value_name = "NAME: VALUE", requires = "from_openapi")]
    pub openapi_header: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Folder of suites a call may select (by file name); all of them by default
    #[arg(long, value_name = "DIR", default_value = "suites")]
    pub suites: PathBuf,
    /// Address to listen on (0.0.0.0:PORT inside a cluster)
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8089")]
    pub listen: std::net::SocketAddr,
    /// How long a call waits for its run before answering "running" (non-2xx; the controller calls again)
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub hook_wait: String,
    /// How long a finished run answers repeated calls before a call starts a new one
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub keep: String,
    /// A run taking longer is stopped and answers as an error
    #[arg(long, value_name = "DURATION", default_value = "30m")]
    pub run_timeout: String,
    /// Runs in progress at once; a call beyond them is answered "busy"
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub max_runs: usize,
    /// Folder for the runs' reports (default: tminus-serve-PID under $TMPDIR, else /tmp). With a read-only root filesystem, point it (or TMPDIR) at a writable volume such as an emptyDir
    #[arg(long, visible_alias = "report-dir", value_name = "DIR")]
    pub reports: Option<PathBuf>,
    /// Load may go to a non-loopback canary (passed to every run)
    #[arg(long)]
    pub allow_remote_load: bool,
    /// An origin a call's target may have: http(s)://HOST[:PORT], HOST may be *.DOMAIN, PORT * (repeatable); a target outside every one is refused (403) and starts nothing. Without it, any http(s) target
    #[arg(long, value_name = "ORIGIN")]
    pub allow_target: Vec<String>,
    /// A broken SHOULD fails the gate (passed to every run)
    #[arg(long)]
    pub strict: bool,
}

/// `--profile` as the command line spells it.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileArg {
    Standard,
    Botix,
}

impl From<ProfileArg> for crate::model::profile::Profile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::Standard => crate::model::profile::Profile::Standard,
            ProfileArg::Botix => crate::model::profile::Profile::Botix,
        }
    }
}

#[derive(Args, Debug)]
pub struct SchemaArgs {
    /// Which schema (`suite`: what schema/suite.schema.json holds)
    #[arg(value_enum)]
    pub which: SchemaKind,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaKind {
    Suite,
}

#[derive(Args, Debug)]
pub struct ChecksArgs {
    /// `text` (a terminal listing), `markdown` (the reference, as in docs/checks.md) or `requirements` (the catalogue ids, as in docs/requirements.md)
    #[arg(long, value_enum, default_value_t = ChecksFormat::Text)]
    pub format: ChecksFormat,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksFormat {
    Text,
    Markdown,
    Requirements,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Suite files or folders
    #[arg(default_value = "suites")]
    pub paths: Vec<PathBuf>,
    /// Variables, as for `run`, so placeholders resolve the same way
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
    /// The target's quota per credential, e.g. 60/1m: also print the least wall time it implies
    #[arg(long, value_name = "N/WINDOW")]
    pub quota: Option<String>,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ReferenceArgs {
    /// `client`: run the reference client instead of serving the API
    #[command(subcommand)]
    pub command: Option<ReferenceCommand>,
    /// Port on 127.0.0.1 (0 picks a free one)
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address to bind (loopback unless you mean it)
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Break one property (repeatable); see --list-defects
    #[arg(long = "defect", value_name = "NAME")]
    pub defects: Vec<String>,
    /// The environment it stands for: `sandbox` (the test keys) or `production` (its own key, ref_prod_key), for `auth.sandbox_isolated`
    #[arg(long, value_enum, default_value = "sandbox")]
    pub environment: crate::reference::Environment,
    /// Print the defects, one line each, and exit
    #[arg(long)]
    pub list_defects: bool,
    /// Append a JSON line per request (trace_id, request_id, status) to this file
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<std::path::PathBuf>,
    /// Write the JSON request log to stdout too
    #[arg(long)]
    pub log_stdout: bool,
    /// Artificial latency added to every API response, e.g. 20ms
    #[arg(long, value_name = "DURATION")]
    pub latency: Option<String>,
    /// Per-API-key rate limit as LIMIT/WINDOW (default 100/1s); `off` disables it
    #[arg(long, value_name = "LIMIT/WINDOW")]
    pub rate_limit: Option<String>,
    /// How the limit's window moves: `fixed` (epoch-aligned, the default) or `sliding` (a log of admissions)
    #[arg(long, value_name = "fixed|sliding", default_value = "fixed")]
    pub rate_limit_window: String,
    /// `off`: the limiter answers 429 with no limit fields and no Retry-After (a target for `--quota`)
    #[arg(long, value_name = "on|off", default_value = "on")]
    pub rate_limit_headers: String,
    /// Which limit fields to send, comma-separated: `legacy` (X-RateLimit-*, epoch Reset), `draft6` (RateLimit-Limit/-Remaining/-Reset, delta Reset, RateLimit-Policy: 100;w=1), `draft7` (RateLimit: limit=, remaining=, reset=), `ietf` (draft-8+ structured fields), `all` (legacy,draft6,draft7)
    #[arg(long, value_name = "DIALECTS", default_value = "legacy,ietf")]
    pub rate_limit_dialect: String,
    /// A second limit per API key and UTC day, e.g. 10000 (429 for either; both in `RateLimit`)
    #[arg(long, value_name = "N")]
    pub rate_limit_daily: Option<u64>,
    /// At most N API requests served at once; the rest wait for a slot (a target that really queues)
    #[arg(long, value_name = "N")]
    pub max_concurrency: Option<usize>,
    /// With `--defect stall`: every Nth API request stalls (default 200)
    #[arg(long, value_name = "N")]
    pub stall_every: Option<u64>,
    /// With `--defect stall`: how long a stalled request waits (default 1s)
    #[arg(long, value_name = "DURATION")]
    pub stall_for: Option<String>,
    /// Delays between outgoing webhook attempts, e.g. 30s,5m,30m,2h,6h (default 100ms,200ms,400ms)
    #[arg(long, value_name = "DURATIONS")]
    pub webhook_schedule: Option<String>,
    /// The payment provider POST /public/v1/payments calls (loopback http; also settable with PUT /public/v1/payment-provider)
    #[arg(long, value_name = "URL")]
    pub dependency_url: Option<String>,
    /// One provider attempt's time limit (default 300ms)
    #[arg(long, value_name = "DURATION")]
    pub dependency_timeout: Option<String>,
    /// A payment's total time limit across its attempts (default 800ms)
    #[arg(long, value_name = "DURATION")]
    pub dependency_deadline: Option<String>,
    /// Provider calls at once; beyond, payments are answered 503 + Retry-After (default 8)
    #[arg(long, value_name = "N")]
    pub dependency_pool: Option<usize>,
    /// Failed provider attempts in a row that open the breaker (default 10)
    #[arg(long, value_name = "N")]
    pub breaker_failures: Option<u32>,
    /// How long the breaker stays open before a probe (default 1s)
    #[arg(long, value_name = "DURATION")]
    pub breaker_open_for: Option<String>,
    /// Serve https with a CA generated at start; its certificate is written to DIR/ca.pem (for --cacert)
    #[arg(long, value_name = "DIR")]
    pub tls: Option<PathBuf>,
    /// With --tls: require a client certificate; one is written to DIR/client.pem and DIR/client.key
    #[arg(long, requires = "tls")]
    pub tls_client_certs: bool,
    /// How long a token POST /oauth/token issues is accepted, e.g. 2s (clients ref_client/ref_client_secret and ref_client_b/ref_client_b_secret)
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = token_lifetime)]
    pub token_lifetime: std::time::Duration,
}

/// `--token-lifetime`: from 1 s (the shortest `expires_in` tminus takes)
/// to a day.
fn token_lifetime(text: &str) -> Result<std::time::Duration, String> {
    let d = crate::model::scalar::parse_duration(text)?;
    if d < std::time::Duration::from_secs(1) || d > std::time::Duration::from_secs(86_400) {
        return Err(format!("`{text}` must be at least 1s and at most 24h"));
    }
    Ok(d)
}

#[derive(Subcommand, Debug)]
pub enum ReferenceCommand {
    /// Run the reference integration client against a platform URL (for client certification)
    Client(crate::reference::client::ClientArgs),
}

// command: load
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Folders with the shards' outputs (each folder and its direct subfolders are searched for *.shard.json)
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The suite the shards ran (default: the path their manifests record); its SHA-256 must match theirs
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,
    /// Set a suite variable (repeatable), as for `run`, so the suite plans the same way
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
    #[command(flatten)]
    pub reports: ReportArgs,
    /// Colour on stderr: `auto`, `always` or `never`
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// `tminus compare BASELINE_DIR RUN_DIR`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline's --report-dir (e.g. the last release's, kept as a CI artifact)
    #[arg(value_name = "BASELINE_DIR")]
    pub baseline: PathBuf,
    /// The --report-dir of the run to judge against it
    #[arg(value_name = "RUN_DIR")]
    pub run: PathBuf,
    /// `[KIND:] MEASURE < N% [min FLOOR]` (repeatable): p50_regression, p95_regression, p99_regression (any pQ; raw_pQ_regression for the raw latency), throughput_drop, error_rate_increase, rate_429_increase (default: p95_regression < 10%, p99_regression < 20%, error_rate_increase < 1%). A change smaller than FLOOR (`2ms`, `5/s`, `0.5%`) is never a regression
    #[arg(long = "threshold", value_name = "[KIND:] MEASURE < N% [min FLOOR]")]
    pub thresholds: Vec<String>,
    /// The floor of thresholds without `min`, by unit (repeatable): `2ms` for percentiles (default 1ms), `5/s` for throughput, `0.5%` for rates (default 0)
    #[arg(long = "min-delta", value_name = "FLOOR")]
    pub min_deltas: Vec<String>,
    /// BASELINE_DIR and RUN_DIR are two runs of the same release: record how far they differ (each measure's noise band) in BASELINE_DIR/tminus-noise.json; later comparisons with that folder widen their intervals by it
    #[arg(long, conflicts_with_all = ["thresholds", "min_deltas", "markdown", "html"])]
    pub calibrate: bool,
    /// Write the comparison as Markdown (it is also appended to $GITHUB_STEP_SUMMARY when that is set)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the comparison as an HTML page, with the baseline's and the run's percentile curves in one plot
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

// command: webhook
#[derive(Args, Debug)]
pub struct SignArgs {
    /// botix, timestamped, standard, stripe, github, slack or shopify
    #[arg(long, value_name = "NAME")]
    pub scheme: String,
    /// The signing secret (as the scheme encodes it, e.g. `whsec_...` for standard)
    #[arg(
        long,
        value_name = "SECRET",
        env = "TMINUS_WEBHOOK_SECRET",
        hide_env_values = true
    )]
    pub secret: String,
    /// Delivery id (default: a fresh msg_<ulid>)
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// Unix timestamp in seconds (default: now)
    #[arg(long, value_name = "TS")]
    pub timestamp: Option<i64>,
    /// Event name for schemes with an event header
    #[arg(long, value_name = "EVENT", default_value = "message.created")]
    pub event: String,
    /// The raw body to sign, byte for byte (`-` reads stdin)
    pub body_file: PathBuf,
}
