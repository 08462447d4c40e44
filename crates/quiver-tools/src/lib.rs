//! QuiverDB's data tools: `quiver dump`, `quiver restore`, `quiver import`, `quiver export`
//! and `quiver backup`, compatible with arangodump, arangorestore, arangoimport, arangoexport
//! and arangobackup in options,
//! behaviour and formats. They talk HTTP to any
//! ArangoDB-compatible server and never link server internals.

pub mod backup;
pub mod client;
pub mod dump;
pub mod dump_format;
pub mod export;
pub mod export_xml;
pub mod import;
pub mod options;
pub mod progress;
pub mod restore;
pub mod tls;

use std::sync::atomic::AtomicBool;

use clap::Parser;

use options::{BackupOptions, DumpOptions, ExportOptions, ImportOptions, RestoreOptions};

/// Runs `quiver <tool> args…` (`tool` is `dump`, `restore`, `import`, `export` or `backup`); `interrupted` is set by the
/// caller's Ctrl-C handler. Returns the exit status: 0 on success, 1 on any failure, 2 for
/// bad options.
pub fn run_cli(tool: &str, args: Vec<String>, interrupted: &AtomicBool) -> i32 {
    let argv = std::iter::once(format!("quiver {tool}")).chain(args);
    let outcome = match tool {
        "dump" => match DumpOptions::try_parse_from(argv) {
            Ok(options) => dump::run(&options, interrupted).map(|s| {
                eprintln!(
                    "Processed {} database(s), {} collection(s), wrote {} document(s), {} bytes of data",
                    s.databases, s.collections, s.documents, s.bytes
                )
            }),
            Err(e) => return usage(e),
        },
        "restore" => match RestoreOptions::try_parse_from(argv) {
            Ok(options) => restore::run(&options, interrupted).map(|s| {
                eprintln!(
                    "Processed {} database(s), {} collection(s), read {} document(s)",
                    s.databases, s.collections, s.documents
                )
            }),
            Err(e) => return usage(e),
        },
        "import" => match ImportOptions::try_parse_from(argv) {
            Ok(options) => import::run(&options, interrupted).and_then(|s| {
                if s.errors > 0 {
                    Err(quiver_errors::Error::with_message(
                        quiver_errors::ErrorCode::BadParameter,
                        format!("{} document(s) were not imported", s.errors),
                    ))
                } else {
                    Ok(())
                }
            }),
            Err(e) => return usage(e),
        },
        "backup" => match BackupOptions::try_parse_from(argv) {
            Ok(options) => backup::run(&options).map(|_| ()),
            Err(e) => return usage(e),
        },
        "export" => match ExportOptions::try_parse_from(argv) {
            Ok(options) => export::run(&options, interrupted).map(|_| ()),
            Err(e) => return usage(e),
        },
        other => {
            eprintln!("quiver: unknown tool '{other}'");
            return 2;
        }
    };
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("quiver {tool}: {} (error {})", e.message, e.number());
            1
        }
    }
}

fn usage(e: clap::Error) -> i32 {
    let _ = e.print();
    if e.use_stderr() {
        2
    } else {
        0
    }
}
