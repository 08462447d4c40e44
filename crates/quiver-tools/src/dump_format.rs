//! ArangoDB's dump directory format (arangodump 3.12): per collection
//! `<name>_<md5 of name>.structure.json` (`{"indexes":[…],"parameters":{…}}`) and
//! `<name>_<md5>.data.json` (or `.data.json.gz`) holding one document per line, per view
//! `<name>.view.json`, the `ENCRYPTION` file (`none`) and `dump.json` (database, its
//! properties, the tick at dump start, whether data lines are enveloped). The dump tool
//! writes `dump.json` last, so a directory without it is not a complete dump.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

/// The file that marks a complete dump.
pub const DUMP_FILE: &str = "dump.json";
/// The encryption marker file.
pub const ENCRYPTION_FILE: &str = "ENCRYPTION";
/// Its content for an unencrypted dump.
pub const NO_ENCRYPTION: &str = "none";

/// An I/O failure on `path` as the tools report it.
pub fn io_error(path: &Path, err: std::io::Error) -> Error {
    Error::with_message(ErrorCode::IoError, format!("{}: {err}", path.display()))
}

/// The lower-case hex MD5 of a collection name.
pub fn name_hash(name: &str) -> String {
    let digest = Md5::digest(name.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `<name>_<md5>.structure.json`.
pub fn structure_file(name: &str) -> String {
    format!("{name}_{}.structure.json", name_hash(name))
}

/// `<name>_<md5>.data.json`, with `.gz` when compressed.
pub fn data_file(name: &str, compressed: bool) -> String {
    let gz = if compressed { ".gz" } else { "" };
    format!("{name}_{}.data.json{gz}", name_hash(name))
}

/// `<name>.view.json`.
pub fn view_file(name: &str) -> String {
    format!("{name}.view.json")
}

/// The content of `dump.json`.
pub fn dump_meta(database: &str, tick: &str, properties: &Value, envelope: bool) -> Value {
    json!({
        "database": database,
        "lastTickAtDumpStart": tick,
        "properties": properties,
        "useEnvelope": envelope,
    })
}

/// Writes `bytes` to `dir/name` through a temporary file and a rename, so the file appears
/// complete or not at all.
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let path = dir.join(name);
    let mut file = File::create(&tmp).map_err(|e| io_error(&tmp, e))?;
    file.write_all(bytes).map_err(|e| io_error(&tmp, e))?;
    file.sync_all().map_err(|e| io_error(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io_error(&path, e))
}

/// Writes a JSON value as a file of its own.
pub fn write_json(dir: &Path, name: &str, value: &Value) -> Result<()> {
    let bytes = serde_json::to_vec(value)
        .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))?;
    write_atomically(dir, name, &bytes)
}

/// Reads a JSON file.
pub fn read_json(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::with_message(
            ErrorCode::BadParameter,
            format!("{}: not valid JSON: {e}", path.display()),
        )
    })
}

/// A data file being written, plain or gzip-compressed.
pub struct DataWriter {
    path: PathBuf,
    out: Box<dyn Write + Send>,
}

impl DataWriter {
    /// Creates (truncates) the data file of collection `name` in `dir`.
    pub fn create(dir: &Path, name: &str, compressed: bool) -> Result<DataWriter> {
        let path = dir.join(data_file(name, compressed));
        let file = File::create(&path).map_err(|e| io_error(&path, e))?;
        let buffered = BufWriter::with_capacity(1 << 20, file);
        let out: Box<dyn Write + Send> = if compressed {
            Box::new(flate2::write::GzEncoder::new(
                buffered,
                flate2::Compression::fast(),
            ))
        } else {
            Box::new(buffered)
        };
        Ok(DataWriter { path, out })
    }

    /// Appends JSON lines as the server sent them.
    pub fn write(&mut self, lines: &[u8]) -> Result<()> {
        self.out
            .write_all(lines)
            .map_err(|e| io_error(&self.path, e))
    }

    /// Flushes and closes the file (the gzip trailer included).
    pub fn finish(mut self) -> Result<()> {
        self.out.flush().map_err(|e| io_error(&self.path, e))?;
        drop(self.out);
        Ok(())
    }
}

/// The data file of collection `name` in `dir`: compressed or plain, with the hash in its
/// name or (older dumps) without. `None` when there is none.
pub fn find_data_file(dir: &Path, name: &str) -> Option<PathBuf> {
    [
        data_file(name, true),
        data_file(name, false),
        format!("{name}.data.json.gz"),
        format!("{name}.data.json"),
    ]
    .into_iter()
    .map(|f| dir.join(f))
    .find(|p| p.is_file())
}

/// Reads the lines of a data file (gzip detected by its magic bytes).
pub fn open_data(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let mut file = File::open(path).map_err(|e| io_error(path, e))?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(|e| io_error(path, e))?;
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    Ok(if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(file),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, file))
    })
}

/// The collections of a dump directory: the structure files, parsed, sorted as arangorestore
/// restores them (document collections before edge collections, then by name).
pub fn read_structures(dir: &Path) -> Result<Vec<Value>> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, e))?;
        let file_name = entry.file_name().to_string_lossy().to_string();
        if !file_name.ends_with(".structure.json") {
            continue;
        }
        let value = read_json(&entry.path())?;
        if value
            .pointer("/parameters/name")
            .and_then(Value::as_str)
            .is_none()
        {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("{file_name}: collection parameters have no name"),
            ));
        }
        out.push(value);
    }
    out.sort_by_key(|s| {
        (
            s.pointer("/parameters/type").and_then(Value::as_u64) == Some(3),
            s.pointer("/parameters/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        )
    });
    Ok(out)
}

/// The view definitions of a dump directory, by file name.
pub fn read_views(dir: &Path) -> Result<Vec<Value>> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, e))?;
    let mut names: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, e))?;
        if entry.file_name().to_string_lossy().ends_with(".view.json") {
            names.push(entry.path());
        }
    }
    names.sort();
    names.iter().map(|p| read_json(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_carry_the_md5_of_the_collection_name() {
        // md5("users") computed independently (coreutils md5sum).
        assert_eq!(name_hash("users"), "9bc65c2abec141778ffaa729489f3e87");
        assert_eq!(
            structure_file("users"),
            "users_9bc65c2abec141778ffaa729489f3e87.structure.json"
        );
        assert_eq!(
            data_file("users", true),
            "users_9bc65c2abec141778ffaa729489f3e87.data.json.gz"
        );
        assert_eq!(view_file("v"), "v.view.json");
    }

    #[test]
    fn data_files_round_trip_plain_and_compressed() {
        let dir = tempfile::tempdir().unwrap();
        for compressed in [false, true] {
            let mut w = DataWriter::create(dir.path(), "c", compressed).unwrap();
            w.write(b"{\"_key\":\"a\"}\n{\"_key\":\"\xc3\xa4\"}\n")
                .unwrap();
            w.finish().unwrap();
            let path = find_data_file(dir.path(), "c").unwrap();
            assert_eq!(path.to_string_lossy().ends_with(".gz"), compressed);
            let lines: Vec<String> = open_data(&path)
                .unwrap()
                .lines()
                .map(|l| l.unwrap())
                .collect();
            assert_eq!(lines, vec!["{\"_key\":\"a\"}", "{\"_key\":\"ä\"}"]);
            std::fs::remove_file(path).unwrap();
        }
    }

    #[test]
    fn structures_sort_documents_before_edges() {
        let dir = tempfile::tempdir().unwrap();
        for (name, kind) in [("b", 2), ("a", 3), ("c", 2)] {
            let s = json!({"indexes": [], "parameters": {"name": name, "type": kind}});
            write_json(dir.path(), &structure_file(name), &s).unwrap();
        }
        let names: Vec<String> = read_structures(dir.path())
            .unwrap()
            .iter()
            .map(|s| s["parameters"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, vec!["b", "c", "a"]);
    }
}
