//! `quiver bench pokec …`: the Pokec social-network benchmark (the 2015/2018 "NoSQL
//! performance benchmark" workloads, queries as the ArangoDB adapter sent them).
//!
//! - `generate` writes a deterministic Pokec-shaped data set ([`gen`]);
//! - `load` imports it through `POST /_api/import`;
//! - `run` runs the workloads and reports times, checksums and server resources.

pub mod gen;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "quiver bench pokec", about = "Pokec social-network benchmark")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write a deterministic Pokec-shaped data set (profiles, relations, id files).
    Generate {
        /// 1.0 = 1,632,803 profiles and 30,622,564 relations.
        #[arg(long, default_value_t = 0.01)]
        scale: f64,
        #[arg(long, default_value_t = gen::DEFAULT_SEED)]
        seed: u64,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        quiet: bool,
    },
}

/// Runs `quiver bench pokec ARGS…`; returns the process exit code.
pub fn run_cli(args: Vec<String>) -> i32 {
    let cli = match Cli::try_parse_from(std::iter::once("pokec".to_string()).chain(args)) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match cli.command {
        Command::Generate {
            scale,
            seed,
            out,
            quiet,
        } => gen::Spec::new(scale, seed)
            .and_then(|spec| gen::write_dataset(&spec, &out, !quiet))
            .map(|meta| {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&meta).unwrap_or_default()
                )
            }),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("quiver bench pokec: {} (error {})", e.message, e.number());
            1
        }
    }
}
