//! HTTP exchanges as plain-text scripts: the files under `tests/http/` list requests and the
//! answer each must get (goldenscript format: requests, `---`, expected answers; `( … )` around
//! a request whose answer is not shown). The requests go through `quiver_server::handle`
//! without a socket, against a server with a temporary data directory and authentication off
//! (tests/access.rs covers authentication).
//!
//! A request is `METHOD PATH [BODY] [header=value …] [[attribute,…]]`: the path without its
//! leading slash (`GET _api/version`), in quotes when it has a query string, the body as JSON text (anything that is not JSON is sent as it is),
//! headers as key/value arguments. The answer prints as the status, the headers that carry
//! meaning (ETag, Location, x-arango-errors, Allow, and a content type other than JSON) and the
//! body; a tag list such as `[name,type]` or `[result,extra.stats.writesExecuted]` shows only
//! those attributes of a JSON body, for answers that hold ids or times. Revisions print as `R1`, `R2`, … and generated keys
//! as `K1`, `K2`, … (see `script_names`), and scripts use those names in paths, headers and
//! bodies.
//!
//! After an intended change of behaviour, regenerate the expected answers and read the diff:
//! `UPDATE_GOLDENFILES=1 cargo test -p quiver-server --test http_scripts`.

use std::error::Error as StdError;
use std::path::Path;
use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::{handle, Request, ServerConfig, ServerState};
use serde_json::{Map, Value};

#[path = "../../quiver-core/tests/script_support/mod.rs"]
#[macro_use]
mod script_support;

use script_support::Names;

type Failure = Box<dyn StdError>;

/// Response headers scripts show when present.
const SHOWN_HEADERS: [&str; 5] = [
    "etag",
    "location",
    "x-arango-errors",
    "x-arango-error-codes",
    "allow",
];

/// Only the attributes at `paths` (dotted: `extra.stats.writesExecuted`) of `body`, nested as
/// they are; a path that is absent shows nothing.
fn select(body: &Value, paths: &[&str]) -> Value {
    let mut out = Value::Object(Map::new());
    for path in paths {
        let parts: Vec<&str> = path.split('.').collect();
        let Some(found) = parts.iter().try_fold(body, |v, part| v.get(part)) else {
            continue;
        };
        let mut slot = &mut out;
        for part in &parts {
            slot = slot
                .as_object_mut()
                .expect("selected paths only pass through objects")
                .entry(part.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
        }
        *slot = found.clone();
    }
    out
}

struct Runner {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
    names: Names,
}

impl Runner {
    fn new() -> Runner {
        let dir = tempfile::tempdir().expect("temporary directory");
        let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).expect("open core"));
        let config = ServerConfig {
            data_dir: dir.path().to_path_buf(),
            async_queue_capacity: 4,
            async_workers: 1,
            auth: quiver_server::auth::AuthConfig::disabled(),
            ..ServerConfig::default()
        };
        Runner {
            state: ServerState::new(config, core).expect("server state"),
            _dir: dir,
            names: Names::default(),
        }
    }

    /// A path with names replaced, segment by segment (query values included).
    fn real_path(&self, path: &str) -> String {
        let (route, query) = path.split_once('?').unwrap_or((path, ""));
        let route: Vec<String> = route.split('/').map(|s| self.names.real(s)).collect();
        let mut out = route.join("/");
        if !query.is_empty() {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, v)) => format!("{k}={}", self.names.real(v)),
                    None => pair.to_string(),
                })
                .collect();
            out.push('?');
            out.push_str(&pairs.join("&"));
        }
        out
    }

    /// A header value with a name replaced, quotes kept (`"R1"` → `"_hZk3…"`).
    fn real_header(&self, value: &str) -> String {
        match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            Some(inner) => format!("\"{}\"", self.names.real(inner)),
            None => self.names.real(value),
        }
    }

    /// A response header value with revisions shown by name.
    fn shown_header(&mut self, name: &str, value: &str) -> String {
        match name {
            "etag" => {
                let inner = value.trim_matches('"');
                format!("\"{}\"", self.names.revision(inner))
            }
            "location" => {
                let mut parts: Vec<String> = value.split('/').map(str::to_string).collect();
                if let Some(last) = parts.last_mut() {
                    *last = self.names.key(last);
                }
                parts.join("/")
            }
            _ => value.to_string(),
        }
    }
}

impl goldenscript::Runner for Runner {
    type Command = goldenscript::Command;

    fn run(
        &mut self,
        command: &goldenscript::Command,
        context: &goldenscript::Context,
    ) -> Result<String, Failure> {
        let method = Method::from_bytes(command.name.as_bytes())
            .map_err(|_| format!("not an HTTP method: {}", command.name))?;
        let mut args = command.consume_args();
        let path = self.real_path(&format!("/{}", args.next_pos().ok_or("path not given")?));
        let body = args.next_pos().map(str::to_string);
        let mut request = Request::build(method, &path);
        while let Some((name, value)) = args.next_key() {
            request = request.with_header(name, &self.real_header(value));
        }
        args.reject_next()?;
        if let Some(body) = body {
            let bytes = match serde_json::from_str::<Value>(&body) {
                Ok(json) => serde_json::to_vec(&self.names.input(json))?,
                Err(_) => body.into_bytes(),
            };
            request = request.with_body(bytes);
        }
        let response = handle(&self.state, request).settle_blocking();

        let mut output = response.status.as_u16().to_string();
        let content_type = response
            .content_type
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if !content_type.is_empty() && content_type != quiver_server::JSON_CONTENT_TYPE {
            output.push_str(&format!(" content-type: {content_type}"));
        }
        for name in SHOWN_HEADERS {
            if let Some(value) = response.header(name) {
                let value = value.to_string();
                let shown = self.shown_header(name, &value);
                output.push_str(&format!(" {name}: {shown}"));
            }
        }
        output.push('\n');
        if !response.body.is_empty() {
            match serde_json::from_slice::<Value>(&response.body) {
                Ok(json) => {
                    let json = if context.tags.is_empty() {
                        json
                    } else {
                        let mut paths: Vec<&str> =
                            context.tags.iter().map(String::as_str).collect();
                        paths.sort_unstable();
                        select(&json, &paths)
                    };
                    output.push_str(&format!("{}\n", self.names.show(&json)));
                }
                Err(_) => {
                    output.push_str(&String::from_utf8_lossy(&response.body));
                    output.push('\n');
                }
            }
        }
        Ok(output)
    }
}

fn run_script(path: &Path) {
    if let Err(err) = goldenscript::run(&mut Runner::new(), path) {
        panic!("{}: {err}", path.display());
    }
}

scripts!(
    "tests/http",
    run_script,
    [
        documents_single,
        documents_multi,
        overwrite_modes,
        vector_index,
        mdi_index,
        search_alias_views,
        inverted_filter,
        version_attribute,
        databases,
        collections,
        query_results_cache,
        replication_revisions,
    ]
);
