//! `quiver export`: arangoexport over the cursor API. Each `--collection` (or the
//! `--custom-query` with its bind parameters) is read through `POST /_api/cursor` and
//! `PUT /_api/cursor/{id}` batch by batch and written to `<collection>.<type>` (`query.<type>`)
//! in the output directory: a JSON array, JSON lines, CSV with the `--fields` as header, or
//! XML. `--type xgmml` writes one graph, `--graph-name`, into `<graph-name>.xgmml`: the
//! vertex and edge collections of the named graph's edge definitions, or the `--collection`s
//! given. A file is written under a temporary name and renamed when complete.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use crate::client::{encode, Client};
use crate::dump_format::io_error;
use crate::export_xml::{self, XgmmlStyle};
use crate::options::ExportOptions;
use crate::progress::{rate, Progress};

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

/// One output file being written.
struct Output<'a> {
    kind: String,
    fields: Vec<String>,
    out: Box<dyn Write>,
    path: PathBuf,
    written: u64,
    xgmml: XgmmlStyle<'a>,
    /// xgmml: values nested too deep to be written.
    skipped: u64,
}

/// A value as a CSV cell: strings as they are, `null` and missing values empty, other
/// values as JSON text.
pub fn csv_cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

impl<'a> Output<'a> {
    /// Creates the file at `path` and writes the start of the format; `name` is the
    /// collection, query or graph the file holds.
    fn create(
        path: PathBuf,
        name: &str,
        options: &'a ExportOptions,
        fields: Vec<String>,
    ) -> Result<Output<'a>> {
        let file = std::fs::File::create(&path).map_err(|e| io_error(&path, e))?;
        let buffered = std::io::BufWriter::with_capacity(1 << 20, file);
        let out: Box<dyn Write> = if options.compress_output {
            Box::new(flate2::write::GzEncoder::new(
                buffered,
                flate2::Compression::fast(),
            ))
        } else {
            Box::new(buffered)
        };
        let mut output = Output {
            kind: options.kind.clone(),
            fields,
            out,
            path,
            written: 0,
            xgmml: XgmmlStyle {
                label_attribute: &options.xgmml_label_attribute,
                label_only: options.xgmml_label_only,
            },
            skipped: 0,
        };
        match output.kind.as_str() {
            "json" => output.write(b"[")?,
            "csv" => {
                let header = csv_line(output.fields.iter().map(String::as_str))?;
                output.write(&header)?;
            }
            "xml" => output.write(export_xml::xml_header(name).as_bytes())?,
            "xgmml" => output.write(export_xml::xgmml_header(name).as_bytes())?,
            _ => {}
        }
        Ok(output)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .map_err(|e| io_error(&self.path, e))
    }

    fn document(&mut self, doc: &Value) -> Result<()> {
        let projected;
        let doc = if self.fields.is_empty() || self.kind == "csv" {
            doc
        } else {
            let mut map = Map::new();
            for field in &self.fields {
                if let Some(v) = doc.get(field) {
                    map.insert(field.clone(), v.clone());
                }
            }
            projected = Value::Object(map);
            &projected
        };
        let bytes = match self.kind.as_str() {
            "csv" => {
                let cells: Vec<String> = self.fields.iter().map(|f| csv_cell(doc.get(f))).collect();
                csv_line(cells.iter().map(String::as_str))?
            }
            "json" => {
                let mut b = if self.written == 0 {
                    b"\n".to_vec()
                } else {
                    b",\n".to_vec()
                };
                b.extend(serde_json::to_vec(doc).unwrap_or_default());
                b
            }
            "xml" => export_xml::xml_document(doc).into_bytes(),
            "xgmml" => export_xml::xgmml_element(doc, &self.xgmml, &mut self.skipped).into_bytes(),
            _ => {
                let mut b = serde_json::to_vec(doc).unwrap_or_default();
                b.push(b'\n');
                b
            }
        };
        self.written += 1;
        self.write(&bytes)
    }

    fn finish(mut self) -> Result<PathBuf> {
        match self.kind.as_str() {
            "json" => self.write(b"\n]\n")?,
            "xml" => self.write(export_xml::XML_FOOTER.as_bytes())?,
            "xgmml" => self.write(export_xml::XGMML_FOOTER.as_bytes())?,
            _ => {}
        }
        if self.skipped > 0 {
            eprintln!(
                "skipped {} deep nested object(s) / array(s) in {}",
                self.skipped,
                self.path.display()
            );
        }
        self.out.flush().map_err(|e| io_error(&self.path, e))?;
        drop(self.out);
        Ok(self.path)
    }
}

fn csv_line<'a>(cells: impl Iterator<Item = &'a str>) -> Result<Vec<u8>> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer
        .write_record(cells)
        .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))?;
    writer
        .into_inner()
        .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))
}

/// Runs the export; `interrupted` is polled between batches.
pub fn run(options: &ExportOptions, interrupted: &AtomicBool) -> Result<u64> {
    let started = Instant::now();
    let fields: Vec<String> = options
        .fields
        .as_deref()
        .map(|f| {
            f.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    if options.kind == "csv" && fields.is_empty() {
        return Err(bad("expecting --fields for the csv export"));
    }
    if options.collections.is_empty()
        && options.custom_query.is_none()
        && options.graph_name.is_none()
    {
        return Err(bad(
            "expecting at least one --collection, a --graph-name or a --custom-query",
        ));
    }
    if options.custom_query.is_some()
        && (!options.collections.is_empty() || options.graph_name.is_some())
    {
        return Err(bad(
            "expecting either a list of collections or an AQL query",
        ));
    }
    if options.kind == "xgmml" && options.graph_name.is_none() {
        return Err(bad("expecting a --graph-name to export a graph as xgmml"));
    }
    if options.kind != "xgmml" && options.collections.is_empty() && options.custom_query.is_none() {
        return Err(bad(
            "expecting at least one --collection or a --custom-query (--graph-name is for --type xgmml)",
        ));
    }
    let bind_vars: Value = match &options.custom_query_bindvars {
        None => json!({}),
        Some(text) => match serde_json::from_str(text) {
            Ok(v @ Value::Object(_)) => v,
            _ => return Err(bad("--custom-query-bindvars must be a JSON object")),
        },
    };
    prepare_directory(&options.output_directory, options.overwrite)?;
    let client = options.server.connection()?.client();
    let collection_query = |c: &String| {
        (
            "FOR doc IN @@collection RETURN doc".to_string(),
            json!({"@collection": c}),
        )
    };
    // Each file: its name stem and the queries whose results it holds, in order.
    let mut jobs: Vec<(String, Vec<(String, Value)>)> = Vec::new();
    if let (Some(graph), "xgmml") = (&options.graph_name, options.kind.as_str()) {
        let collections = if options.collections.is_empty() {
            graph_collections(&client, options, graph)?
        } else {
            options.collections.clone()
        };
        jobs.push((
            graph.clone(),
            collections.iter().map(collection_query).collect(),
        ));
    } else {
        for c in &options.collections {
            jobs.push((c.clone(), vec![collection_query(c)]));
        }
        if let Some(query) = &options.custom_query {
            jobs.push(("query".to_string(), vec![(query.clone(), bind_vars)]));
        }
    }
    let mut total = 0u64;
    for (name, queries) in jobs {
        let gz = if options.compress_output { ".gz" } else { "" };
        let file_name = format!("{name}.{}{gz}", options.kind);
        let tmp = options.output_directory.join(format!(".{file_name}.tmp"));
        let mut output = Output::create(tmp, &name, options, fields.clone())?;
        let progress = Progress::new(&format!("export {name}"), 0, options.progress);
        let result = queries.iter().try_for_each(|(query, bind_vars)| {
            export_query(
                &client,
                options,
                query,
                bind_vars,
                &mut output,
                &progress,
                interrupted,
            )
        });
        progress.finish();
        result?;
        let written = output.written;
        let tmp = output.finish()?;
        let path = options.output_directory.join(&file_name);
        std::fs::rename(&tmp, &path).map_err(|e| io_error(&path, e))?;
        eprintln!("Exported {written} document(s) to {}", path.display());
        total += written;
    }
    eprintln!("Exported {total} document(s) ({})", rate(total, started));
    Ok(total)
}

/// The collections of named graph `graph` as arangoexport takes them: every edge
/// definition's edge collection and its `from` and `to` vertex collections, each once.
fn graph_collections(client: &Client, options: &ExportOptions, graph: &str) -> Result<Vec<String>> {
    let body = client
        .request(
            "GET",
            Some(options.server.database.as_str()),
            &format!("/_api/gharial/{}", encode(graph)),
            None,
        )?
        .json()?;
    let mut collections: Vec<String> = Vec::new();
    for definition in body["graph"]["edgeDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let names = std::iter::once(&definition["collection"])
            .chain(definition["from"].as_array().into_iter().flatten())
            .chain(definition["to"].as_array().into_iter().flatten());
        for name in names.filter_map(Value::as_str) {
            if !collections.iter().any(|c| c == name) {
                collections.push(name.to_string());
            }
        }
    }
    Ok(collections)
}

fn prepare_directory(dir: &Path, overwrite: bool) -> Result<()> {
    if dir.exists() {
        let non_empty = std::fs::read_dir(dir)
            .map_err(|e| io_error(dir, e))?
            .next()
            .is_some();
        if non_empty && !overwrite {
            return Err(Error::with_message(
                ErrorCode::FileExists,
                format!(
                    "output directory '{}' already exists; use \"--overwrite true\" to overwrite data in it",
                    dir.display()
                ),
            ));
        }
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))
}

fn export_query(
    client: &Client,
    options: &ExportOptions,
    query: &str,
    bind_vars: &Value,
    output: &mut Output,
    progress: &Progress,
    interrupted: &AtomicBool,
) -> Result<()> {
    let db = Some(options.server.database.as_str());
    let mut page = client.json(
        "POST",
        db,
        "/_api/cursor",
        &json!({
            "query": query,
            "bindVars": bind_vars,
            "batchSize": options.documents_per_batch.clamp(1, 100_000),
            "ttl": 1200,
        }),
    )?;
    loop {
        let results = page["result"].as_array().cloned().unwrap_or_default();
        for doc in &results {
            output.document(doc)?;
        }
        progress.add(results.len() as u64);
        if page["hasMore"].as_bool() != Some(true) {
            return Ok(());
        }
        let id = page["id"].as_str().unwrap_or("").to_string();
        if interrupted.load(Ordering::Relaxed) {
            let _ = client.request("DELETE", db, &format!("/_api/cursor/{}", encode(&id)), None);
            return Err(Error::with_message(
                ErrorCode::RequestCanceled,
                "interrupted",
            ));
        }
        page = client.json(
            "PUT",
            db,
            &format!("/_api/cursor/{}", encode(&id)),
            &json!({}),
        )?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_and_lines() {
        assert_eq!(csv_cell(None), "");
        assert_eq!(csv_cell(Some(&json!(null))), "");
        assert_eq!(csv_cell(Some(&json!("a,b"))), "a,b");
        assert_eq!(csv_cell(Some(&json!([1, 2]))), "[1,2]");
        assert_eq!(
            csv_line(["a,b", "c\"d", "e"].into_iter()).unwrap(),
            b"\"a,b\",\"c\"\"d\",e\n"
        );
    }
}
