//! `tessera-bench`: see `tessera-bench --help` and docs/benchmarks.md.

use std::process::ExitCode;

use clap::Parser;
use tessera_bench::cli::{self, Cli};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                cli::EXIT_USAGE
            } else {
                cli::EXIT_OK
            });
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tessera-bench: cannot start the runtime: {e}");
            return ExitCode::from(cli::EXIT_FAILED);
        }
    };
    ExitCode::from(rt.block_on(cli::run(cli)))
}
