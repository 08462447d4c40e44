//! Command-line options of `quiver dump` and `quiver restore`, spelled and defaulted as
//! arangodump's and arangorestore's.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser};
use quiver_errors::Result;

use crate::client::Connection;

/// ArangoDB's boolean options take a value (`--overwrite true`) or stand bare (`true`).
pub fn parse_bool(text: &str) -> std::result::Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" | "y" => Ok(true),
        "false" | "no" | "off" | "0" | "n" => Ok(false),
        other => Err(format!("expected true or false, got '{other}'")),
    }
}

/// `--server.*`: where the server is and who the tool is.
#[derive(Args, Debug, Clone)]
pub struct ServerOptions {
    /// Endpoint to connect to: `tcp://host:port`, or `ssl://host:port` for TLS (both also
    /// with an `http+` prefix).
    #[arg(long = "server.endpoint", default_value = "tcp://127.0.0.1:8529")]
    pub endpoint: String,
    /// User name.
    #[arg(long = "server.username", default_value = "root")]
    pub username: String,
    /// Password.
    #[arg(long = "server.password", default_value = "")]
    pub password: String,
    /// A JWT to send as bearer token instead of the user name and password.
    #[arg(long = "server.jwt")]
    pub jwt: Option<String>,
    /// Database to use.
    #[arg(long = "server.database", default_value = "_system")]
    pub database: String,
    /// Send credentials.
    #[arg(long = "server.authentication", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub authentication: bool,
    /// Request timeout in seconds.
    #[arg(long = "server.request-timeout", default_value_t = 1200.0)]
    pub request_timeout: f64,
    /// TLS protocol of an `ssl://` endpoint, ArangoDB's numbers: 1 (SSLv2, refused), 2, 3, 4,
    /// 5 (TLSv1.2), 6 (TLSv1.3), 9 (generic TLS); TLS 1.2 or 1.3 is negotiated for all but 1.
    #[arg(long = "ssl.protocol", default_value_t = crate::tls::DEFAULT_PROTOCOL,
          value_parser = crate::tls::parse_protocol)]
    pub ssl_protocol: u64,
}

impl ServerOptions {
    /// The connection these options describe.
    pub fn connection(&self) -> Result<Connection> {
        Connection::new(
            &self.endpoint,
            self.authentication,
            &self.username,
            &self.password,
            self.jwt.as_deref(),
            Duration::from_secs_f64(self.request_timeout.clamp(1.0, 86_400.0)),
            self.ssl_protocol,
        )
    }
}

/// `quiver dump`: arangodump's options.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "quiver dump",
    about = "Dump databases of QuiverDB or any ArangoDB-compatible server (arangodump's options and format)",
    disable_version_flag = true
)]
pub struct DumpOptions {
    #[command(flatten)]
    pub server: ServerOptions,
    /// Output directory.
    #[arg(long = "output-directory", default_value = "dump")]
    pub output_directory: PathBuf,
    /// Overwrite data in an existing output directory.
    #[arg(long = "overwrite", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub overwrite: bool,
    /// Restrict the dump to this collection (repeatable).
    #[arg(long = "collection", action = ArgAction::Append)]
    pub collections: Vec<String>,
    /// Include system collections.
    #[arg(long = "include-system-collections", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub include_system_collections: bool,
    /// Dump every database the user can access (one subdirectory each).
    #[arg(long = "all-databases", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub all_databases: bool,
    /// Dump collection data (false: structure only).
    #[arg(long = "dump-data", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub dump_data: bool,
    /// Compress data files with gzip.
    #[arg(long = "compress-output", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub compress_output: bool,
    /// Wrap each document into a `{type, data}` envelope (the format before 3.8).
    #[arg(long = "envelope", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub envelope: bool,
    /// Collections dumped in parallel.
    #[arg(long = "threads", default_value_t = 2)]
    pub threads: usize,
    /// Initial size of a data batch in bytes.
    #[arg(long = "initial-batch-size", default_value_t = 8 * 1024 * 1024)]
    pub initial_batch_size: u64,
    /// Maximum size of a data batch in bytes.
    #[arg(long = "batch-size", default_value_t = 64 * 1024 * 1024)]
    pub batch_size: u64,
    /// Continue after a collection fails.
    #[arg(long = "force", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub force: bool,
    /// Show progress.
    #[arg(long = "progress", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub progress: bool,
}

/// `quiver restore`: arangorestore's options.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "quiver restore",
    about = "Restore a dump into QuiverDB or any ArangoDB-compatible server (arangorestore's options and format)",
    disable_version_flag = true
)]
pub struct RestoreOptions {
    #[command(flatten)]
    pub server: ServerOptions,
    /// Input directory.
    #[arg(long = "input-directory", default_value = "dump")]
    pub input_directory: PathBuf,
    /// Restrict the restore to this collection (repeatable).
    #[arg(long = "collection", action = ArgAction::Append)]
    pub collections: Vec<String>,
    /// Include system collections.
    #[arg(long = "include-system-collections", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub include_system_collections: bool,
    /// Restore every database of the dump (one subdirectory each).
    #[arg(long = "all-databases", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub all_databases: bool,
    /// Create the target database when it does not exist.
    #[arg(long = "create-database", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub create_database: bool,
    /// Create collections (and their indexes and views).
    #[arg(long = "create-collection", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub create_collection: bool,
    /// Import documents.
    #[arg(long = "import-data", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub import_data: bool,
    /// Replace existing collections.
    #[arg(long = "overwrite", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub overwrite: bool,
    /// Continue after errors.
    #[arg(long = "force", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub force: bool,
    /// Collections restored in parallel.
    #[arg(long = "threads", default_value_t = 2)]
    pub threads: usize,
    /// Maximum size of one data request in bytes.
    #[arg(long = "batch-size", default_value_t = 8 * 1024 * 1024)]
    pub batch_size: u64,
    /// Show progress.
    #[arg(long = "progress", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub progress: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arangodump_defaults_and_spellings() {
        let o = DumpOptions::try_parse_from(["quiver dump"]).unwrap();
        assert!(o.compress_output && o.dump_data && !o.overwrite && !o.include_system_collections);
        assert_eq!(o.output_directory, PathBuf::from("dump"));
        let o = DumpOptions::try_parse_from([
            "quiver dump",
            "--collection",
            "a",
            "--collection",
            "b",
            "--overwrite",
            "true",
            "--compress-output",
            "false",
            "--server.database",
            "shop",
        ])
        .unwrap();
        assert_eq!(o.collections, vec!["a", "b"]);
        assert!(o.overwrite && !o.compress_output);
        assert_eq!(o.server.database, "shop");
        assert!(DumpOptions::try_parse_from(["quiver dump", "--overwrite", "maybe"]).is_err());
        assert_eq!(o.server.ssl_protocol, 5);
        let o = DumpOptions::try_parse_from(["quiver dump", "--ssl.protocol", "9"]).unwrap();
        assert_eq!(o.server.ssl_protocol, 9);
        assert!(DumpOptions::try_parse_from(["quiver dump", "--ssl.protocol", "7"]).is_err());
    }

    #[test]
    fn arangorestore_defaults() {
        let o = RestoreOptions::try_parse_from(["quiver restore"]).unwrap();
        assert!(o.overwrite && o.create_collection && o.import_data && !o.create_database);
        assert_eq!(o.batch_size, 8 * 1024 * 1024);
    }
}

/// `quiver import`: arangoimport's options.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "quiver import",
    about = "Import JSON, JSON lines, CSV or TSV into QuiverDB or any ArangoDB-compatible server (arangoimport's options)",
    disable_version_flag = true
)]
pub struct ImportOptions {
    #[command(flatten)]
    pub server: ServerOptions,
    /// The file to import (`-` for standard input; `.gz` files are decompressed).
    #[arg(long = "file")]
    pub file: String,
    /// Input format: json, jsonl, csv or tsv.
    #[arg(long = "type", default_value = "json", value_parser = ["json", "jsonl", "csv", "tsv"])]
    pub kind: String,
    /// Target collection.
    #[arg(long = "collection")]
    pub collection: String,
    /// Create the collection when it does not exist.
    #[arg(long = "create-collection", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub create_collection: bool,
    /// Type of a created collection: document or edge.
    #[arg(long = "create-collection-type", default_value = "document", value_parser = ["document", "edge"])]
    pub create_collection_type: String,
    /// What to do with a document whose key exists: error, update, replace or ignore.
    #[arg(long = "on-duplicate", default_value = "error", value_parser = ["error", "update", "replace", "ignore"])]
    pub on_duplicate: String,
    /// Remove all documents of the collection before the import.
    #[arg(long = "overwrite", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub overwrite: bool,
    /// Maximum size of one request in bytes.
    #[arg(long = "batch-size", default_value_t = 8 * 1024 * 1024)]
    pub batch_size: u64,
    /// Requests in flight.
    #[arg(long = "threads", default_value_t = 2)]
    pub threads: usize,
    /// Prefix for `_from` values without a collection.
    #[arg(long = "from-collection-prefix")]
    pub from_collection_prefix: Option<String>,
    /// Prefix for `_to` values without a collection.
    #[arg(long = "to-collection-prefix")]
    pub to_collection_prefix: Option<String>,
    /// Apply the prefixes also to `_from`/`_to` values that hold a collection already.
    #[arg(long = "overwrite-collection-prefix", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub overwrite_collection_prefix: bool,
    /// Field separator of csv and tsv input (default `,` for csv, a tab for tsv).
    #[arg(long = "separator")]
    pub separator: Option<String>,
    /// Quote character of csv input.
    #[arg(long = "quote", default_value = "\"")]
    pub quote: String,
    /// Rename a column: `old=new` (repeatable).
    #[arg(long = "translate", action = ArgAction::Append)]
    pub translate: Vec<String>,
    /// Drop an attribute from every document (repeatable).
    #[arg(long = "remove-attribute", action = ArgAction::Append)]
    pub remove_attribute: Vec<String>,
    /// Turn csv/tsv values `null`, `true`, `false` and numbers into JSON values.
    #[arg(long = "convert", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub convert: bool,
    /// Lines to skip at the start of csv/tsv input (before the header).
    #[arg(long = "skip-lines", default_value_t = 0)]
    pub skip_lines: u64,
    /// Show progress.
    #[arg(long = "progress", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub progress: bool,
    /// All or nothing (`/_api/import`'s `complete=true`): the whole input goes in one request
    /// of at most 512 MiB; a malformed line or a refused document stores nothing and fails
    /// the import naming the line.
    #[arg(long = "complete", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub complete: bool,
}

/// `quiver export`: arangoexport's options (json, jsonl, csv, xml and xgmml output).
#[derive(Parser, Debug, Clone)]
#[command(
    name = "quiver export",
    about = "Export collections, a query's results or a graph as JSON, JSON lines, CSV, XML or XGMML (arangoexport's options)",
    disable_version_flag = true
)]
pub struct ExportOptions {
    #[command(flatten)]
    pub server: ServerOptions,
    /// Output format: json, jsonl, csv, xml or xgmml (xgmml needs --graph-name).
    #[arg(long = "type", default_value = "json", value_parser = ["json", "jsonl", "csv", "xml", "xgmml"])]
    pub kind: String,
    /// xgmml: the graph to export (into `<graph-name>.xgmml`): the named graph's collections,
    /// or the `--collection`s given.
    #[arg(long = "graph-name")]
    pub graph_name: Option<String>,
    /// xgmml: the attribute whose string value labels nodes and edges.
    #[arg(long = "xgmml-label-attribute", default_value = "label")]
    pub xgmml_label_attribute: String,
    /// xgmml: write only the labels, no attributes.
    #[arg(long = "xgmml-label-only", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub xgmml_label_only: bool,
    /// A collection to export (repeatable); one file each.
    #[arg(long = "collection", action = ArgAction::Append)]
    pub collections: Vec<String>,
    /// An AQL query whose results are exported (into `query.<type>`).
    #[arg(long = "custom-query")]
    pub custom_query: Option<String>,
    /// Bind parameters of the custom query, as a JSON object.
    #[arg(long = "custom-query-bindvars")]
    pub custom_query_bindvars: Option<String>,
    /// Attributes to export, comma-separated (required for csv).
    #[arg(long = "fields")]
    pub fields: Option<String>,
    /// Output directory.
    #[arg(long = "output-directory", default_value = "export")]
    pub output_directory: PathBuf,
    /// Overwrite files in an existing output directory.
    #[arg(long = "overwrite", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub overwrite: bool,
    /// Compress the output files with gzip.
    #[arg(long = "compress-output", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub compress_output: bool,
    /// Documents per cursor batch.
    #[arg(long = "documents-per-batch", default_value_t = 1000)]
    pub documents_per_batch: u64,
    /// Show progress.
    #[arg(long = "progress", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub progress: bool,
}

/// `quiver backup`: arangobackup's operations against a running server.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "quiver backup",
    about = "Create, list, restore or delete hot backups of a running server (arangobackup's options)",
    disable_version_flag = true
)]
pub struct BackupOptions {
    /// create, list, restore or delete.
    #[arg(value_parser = ["create", "list", "restore", "delete"])]
    pub operation: String,
    #[command(flatten)]
    pub server: ServerOptions,
    /// Label of a new backup (its id is `<UTC time>_<label>`).
    #[arg(long = "label")]
    pub label: Option<String>,
    /// Id of the backup to restore, delete or list.
    #[arg(long = "identifier")]
    pub identifier: Option<String>,
    /// restore: the server's data directory, which holds `backups/<identifier>`.
    #[arg(long = "database.directory")]
    pub database_directory: Option<std::path::PathBuf>,
    /// restore: an empty or new directory that receives a copy of the backup; a server
    /// started with `--database.directory` on it opens the backed-up state.
    #[arg(long = "target-directory")]
    pub target_directory: Option<std::path::PathBuf>,
}
