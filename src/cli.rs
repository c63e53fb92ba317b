//! Command-line definitions (clap derive). Parsed here, resolved in `app`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "tminus",
    version,
    about = "Certifies HTTP integrations before launch: idempotency, rate limits, webhooks, trace correlation",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run suites against a target (the embedded reference when none is given)
    Run(RunArgs),
    /// Parse and check suites; send nothing; report every error at once
    Validate(ValidateArgs),
    /// List the check kinds with their parameters
    Checks,
    /// Serve the reference integration (optionally with defects)
    Reference(ReferenceArgs),
    // command: webhook

    // command: load

    // command: end
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Suite files or folders
    #[arg(default_value = "suites")]
    pub paths: Vec<PathBuf>,
    /// Base URL of the target; overrides every suite's `target.base_url`
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Folder for reports (JUnit, JSON)
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub report_dir: PathBuf,
    /// JUnit file (default: REPORT_DIR/junit.xml)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// JSON summary file (default: REPORT_DIR/report.json)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
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
    /// Default per-request timeout, e.g. 5s or 800ms
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Let a suite's `load:` section send load to a non-loopback target
    #[arg(long)]
    pub allow_remote_load: bool,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Suite files or folders
    #[arg(default_value = "suites")]
    pub paths: Vec<PathBuf>,
    /// Variables, as for `run`, so placeholders resolve the same way
    #[arg(long = "var", value_name = "K=V")]
    pub vars: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ReferenceArgs {
    /// Port on 127.0.0.1 (0 picks a free one)
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address to bind (loopback unless you mean it)
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Break one property (repeatable); see --list-defects
    #[arg(long = "defect", value_name = "NAME")]
    pub defects: Vec<String>,
    /// Print the defects, one line each, and exit
    #[arg(long)]
    pub list_defects: bool,
    /// Artificial latency added to every API response, e.g. 20ms
    #[arg(long, value_name = "DURATION")]
    pub latency: Option<String>,
}
