//! `quiver bench pokec …`: the Pokec social-network benchmark (the 2015/2018 "NoSQL
//! performance benchmark" workloads, queries as the ArangoDB adapter sent them).
//!
//! - `generate` writes a deterministic Pokec-shaped data set ([`gen`]);
//! - `load` imports it through `POST /_api/import`;
//! - `run` runs the workloads and reports times, checksums and server resources.

pub mod arango_http;
pub mod client;
pub mod gen;
pub mod load;
pub mod neo4j;
pub mod peer;
pub mod postgres;
pub mod workload;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use quiver_errors::{Error, ErrorCode};

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
    /// Import a generated data set into database `pokec` (dropped and recreated).
    Load {
        #[arg(long, default_value = "tcp://127.0.0.1:8529")]
        endpoint: String,
        /// Directory written by `generate`.
        #[arg(long)]
        dir: PathBuf,
        /// Parallel import connections (arangoimport used 8 threads).
        #[arg(long, default_value_t = 8)]
        connections: usize,
        /// Bytes of JSON lines per import request.
        #[arg(long, default_value_t = 4 << 20)]
        batch_bytes: usize,
        #[command(flatten)]
        server: ServerArgs,
        #[command(flatten)]
        credentials: CredentialArgs,
        /// Write the import report (JSON) here as well as to stdout.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Write the TSV input of Neo4j's bulk importer (bench/peers/neo4j) from a data set.
    Neo4jFiles {
        /// Directory written by `generate`.
        #[arg(long)]
        dir: PathBuf,
        /// Where profiles.tsv and relations.tsv go.
        #[arg(long)]
        out: PathBuf,
    },
    /// Load a data set into a peer database: PostgreSQL by COPY (tables, indexes, ANALYZE),
    /// Neo4j after its bulk import (the uniqueness constraint on `_key`).
    LoadPeer {
        #[command(flatten)]
        peer: PeerArgs,
        #[arg(long)]
        dir: PathBuf,
        /// Write the load report (JSON) here as well as to stdout.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Run the workloads against an imported data set.
    Run {
        #[command(flatten)]
        peer: PeerArgs,
        #[arg(long, default_value = "tcp://127.0.0.1:8529")]
        endpoint: String,
        #[arg(long)]
        dir: PathBuf,
        /// Concurrent connections (the benchmark's client pool had 25).
        #[arg(long, default_value_t = 25)]
        connections: usize,
        /// Comma-separated subset of the workloads, in the harness order.
        #[arg(long, value_delimiter = ',', default_values_t = workload::ALL_TESTS.map(String::from))]
        tests: Vec<String>,
        /// Use only the first N read ids, write bodies, neighbor starts and path pairs
        /// (0 = all; benchmark.js `-s`), for quick checks.
        #[arg(long, default_value_t = 0)]
        restrict: usize,
        #[command(flatten)]
        server: ServerArgs,
        #[command(flatten)]
        credentials: CredentialArgs,
        /// Import report to embed into the run report.
        #[arg(long)]
        import_report: Option<PathBuf>,
        /// Write the JSON report here.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Write one CSV row per workload here.
        #[arg(long)]
        csv: Option<PathBuf>,
    },
}

/// Which database `run` and `load-peer` talk to, and where.
#[derive(clap::Args, Debug)]
struct PeerArgs {
    /// quiver (any ArangoDB-compatible server, at --endpoint), postgresql-tabular,
    /// postgresql-jsonb (at --postgres) or neo4j (at --bolt).
    #[arg(long, default_value = "quiver")]
    database: String,
    /// libpq-style connection string of the PostgreSQL peers.
    #[arg(
        long,
        default_value = "host=127.0.0.1 port=5432 user=postgres dbname=pokec"
    )]
    postgres: String,
    /// host:port of Neo4j's Bolt connector.
    #[arg(long, default_value = "127.0.0.1:7687")]
    bolt: String,
}

impl PeerArgs {
    fn layout(&self) -> Option<postgres::Layout> {
        match self.database.as_str() {
            "postgresql-tabular" => Some(postgres::Layout::Tabular),
            "postgresql-jsonb" => Some(postgres::Layout::Jsonb),
            _ => None,
        }
    }
}

fn unknown_database(name: &str) -> Error {
    Error::with_message(
        ErrorCode::BadParameter,
        format!(
            "unknown database '{name}'; known: quiver, postgresql-tabular, postgresql-jsonb, neo4j"
        ),
    )
}

#[derive(clap::Args, Debug)]
struct ServerArgs {
    /// Server process to watch (peak RSS, CPU time) on this machine.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Stop when the server's resident memory passes this many GiB.
    #[arg(long, default_value_t = 16.0)]
    max_rss_gib: f64,
}

impl ServerArgs {
    fn limit_kib(&self) -> u64 {
        (self.max_rss_gib * 1024.0 * 1024.0) as u64
    }
}

/// HTTP Basic credentials, with arangobench's option names and defaults (root, empty
/// password, authentication on).
#[derive(clap::Args, Debug)]
struct CredentialArgs {
    /// User name for HTTP Basic authentication.
    #[arg(long = "server.username", default_value = "root")]
    username: String,
    /// Password for HTTP Basic authentication.
    #[arg(long = "server.password", default_value = "")]
    password: String,
    /// Send an Authorization header at all.
    #[arg(long = "server.authentication", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = crate::options::parse_bool,
          action = clap::ArgAction::Set)]
    authentication: bool,
}

impl CredentialArgs {
    /// The `Authorization` header every request carries (None with authentication off).
    fn authorization(&self) -> Option<String> {
        self.authentication
            .then(|| crate::http::basic_authorization(&self.username, &self.password))
    }
}

fn write(path: &std::path::Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text)
        .map_err(|e| Error::with_message(ErrorCode::IoError, format!("{}: {e}", path.display())))
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
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
            .map(|meta| print!("{}", pretty(&meta))),
        Command::Load {
            endpoint,
            dir,
            connections,
            batch_bytes,
            server,
            credentials,
            report,
        } => {
            let opts = load::LoadOptions {
                endpoint,
                authorization: credentials.authorization(),
                dir,
                connections,
                batch_bytes: batch_bytes.clamp(1 << 10, 256 << 20),
                server_pid: server.server_pid,
                max_rss_kib: server.limit_kib(),
                progress: true,
            };
            load::load(&opts).and_then(|r| {
                print!("{}", pretty(&r));
                report.map_or(Ok(()), |p| write(&p, &pretty(&r)))
            })
        }
        Command::Neo4jFiles { dir, out } => {
            neo4j::write_import_files(&dir, &out).map(|r| print!("{}", pretty(&r)))
        }
        Command::LoadPeer { peer, dir, report } => load_peer(&peer, &dir).and_then(|r| {
            print!("{}", pretty(&r));
            report.map_or(Ok(()), |p| write(&p, &pretty(&r)))
        }),
        Command::Run {
            peer,
            endpoint,
            dir,
            connections,
            tests,
            restrict,
            server,
            credentials,
            import_report,
            report,
            csv,
        } => {
            let opts = workload::RunOptions {
                dir,
                connections,
                tests,
                restrict,
                server_pid: server.server_pid,
                max_rss_kib: server.limit_kib(),
                progress: true,
            };
            run_peer(&peer, &endpoint, credentials.authorization(), &opts).and_then(|mut r| {
                if let Some(p) = import_report {
                    r["import"] = load::read_json(&p)?;
                }
                if let Some(p) = report {
                    write(&p, &pretty(&r))?;
                }
                if let Some(p) = csv {
                    write(&p, &workload::csv(&r))?;
                }
                let bad = r["workloads"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .iter()
                    .filter(|w| w["status"] != "ok" && w["status"] != "not implemented")
                    .count();
                if bad > 0 {
                    return Err(Error::with_message(
                        ErrorCode::Internal,
                        format!("{bad} workload(s) failed or were stopped"),
                    ));
                }
                Ok(())
            })
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("quiver bench pokec: {} (error {})", e.message, e.number());
            1
        }
    }
}

/// Loads `dir` into the PostgreSQL or Neo4j peer, timing it.
fn load_peer(peer: &PeerArgs, dir: &std::path::Path) -> Result<serde_json::Value, Error> {
    let runtime = client::runtime()?;
    let started = std::time::Instant::now();
    let mut report = runtime.block_on(async {
        if let Some(layout) = peer.layout() {
            postgres::Postgres::new(&peer.postgres, layout)
                .load(dir)
                .await
        } else if peer.database == "neo4j" {
            let neo = neo4j::Neo4j::new(&peer.bolt, 1);
            neo.prepare().await?;
            Ok(serde_json::json!({"step": "uniqueness constraint on PROFILES._key"}))
        } else {
            Err(unknown_database(&peer.database))
        }
    })?;
    report["database"] = serde_json::json!(peer.database);
    report["seconds"] = serde_json::json!(started.elapsed().as_secs_f64());
    Ok(report)
}

/// Runs the workloads against the database `peer` names.
fn run_peer(
    peer: &PeerArgs,
    endpoint: &str,
    authorization: Option<String>,
    opts: &workload::RunOptions,
) -> Result<serde_json::Value, Error> {
    if let Some(layout) = peer.layout() {
        return workload::run(postgres::Postgres::new(&peer.postgres, layout), opts);
    }
    match peer.database.as_str() {
        "quiver" => workload::run(arango_http::ArangoHttp::new(endpoint, authorization)?, opts),
        "neo4j" => workload::run(neo4j::Neo4j::new(&peer.bolt, opts.connections), opts),
        other => Err(unknown_database(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("pokec").chain(args.iter().copied())).unwrap()
    }

    fn credentials(cli: Cli) -> CredentialArgs {
        match cli.command {
            Command::Load { credentials, .. } | Command::Run { credentials, .. } => credentials,
            _ => panic!("only load and run have credentials"),
        }
    }

    #[test]
    fn load_and_run_send_roots_empty_password_by_default() {
        for sub in ["load", "run"] {
            let c = credentials(parse(&[sub, "--dir", "/tmp/x"]));
            // base64("root:")
            assert_eq!(
                c.authorization().as_deref(),
                Some("Basic cm9vdDo="),
                "{sub}"
            );
        }
    }

    #[test]
    fn credentials_follow_arangobench_options() {
        let c = credentials(parse(&[
            "run",
            "--dir",
            "/tmp/x",
            "--server.username",
            "bench",
            "--server.password",
            "s3cret",
        ]));
        // base64("bench:s3cret")
        assert_eq!(c.authorization().as_deref(), Some("Basic YmVuY2g6czNjcmV0"));
        let off = credentials(parse(&[
            "load",
            "--dir",
            "/tmp/x",
            "--server.authentication",
            "false",
        ]));
        assert_eq!(off.authorization(), None);
    }
}
