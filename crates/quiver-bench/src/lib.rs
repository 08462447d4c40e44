//! `quiver bench`: an arangobench-compatible load generator for QuiverDB or any
//! ArangoDB-compatible server. It speaks HTTP only and links no server internals.
//!
//! Entry point: [`run_cli`] takes the arguments that follow `quiver bench` and returns the
//! process exit code (0 = every run succeeded and verified).

pub mod batch;
pub mod case_kind;
pub mod cases;
pub mod http;
pub mod options;
pub mod pokec;
pub mod report;
pub mod runner;

pub use options::{Config, Options};

/// Runs `quiver bench ARGS…` and returns the exit code: 0 on success, 1 when a run failed
/// (failed or unexpected responses, verification problems) or could not start, 2 on
/// unusable command-line options.
pub fn run_cli(args: Vec<String>) -> i32 {
    // The Pokec benchmark has its own subcommands; everything else is arangobench's CLI.
    if args.first().map(String::as_str) == Some("pokec") {
        return pokec::run_cli(args[1..].to_vec());
    }
    let options = match Options::parse_args(&args) {
        Ok(options) => options,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let config = match options.into_config() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("quiver bench: {}", e.message);
            return 2;
        }
    };
    match runner::run_all(&config) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("quiver bench: {} (error {})", e.message, e.number());
            1
        }
    }
}
