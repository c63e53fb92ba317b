//! The `tminus` binary: parse the command line, run, exit with its code.

use clap::Parser;

fn main() {
    let cli = tminus::cli::Cli::parse();
    let code = tminus::app::main(cli);
    std::process::exit(code);
}
