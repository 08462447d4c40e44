//! Serving the web interface: the redirect of `/`, the embedded files without authentication,
//! content types, ETag and 304, gzip, unknown files and methods (docs/design/webui.md).

use std::io::Read;
use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

/// Authentication stays on (the default): the files must be served without credentials.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        ..ServerConfig::default()
    };
    Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    }
}

impl Fixture {
    fn get(&self, target: &str) -> Response {
        self.send(Request::build(Method::GET, target))
    }

    fn send(&self, req: Request) -> Response {
        handle(&self.state, req).settle_blocking()
    }
}

#[test]
fn root_redirects_to_the_interface_of_system() {
    let f = fixture();
    let r = f.get("/");
    assert_eq!(r.status.as_u16(), 301, "{r:?}");
    assert_eq!(
        r.header("location"),
        Some("/_db/_system/_admin/aardvark/index.html")
    );
    for target in ["/_admin/aardvark", "/_admin/aardvark/"] {
        let r = f.get(target);
        assert_eq!(r.status.as_u16(), 301, "{target}: {r:?}");
        assert_eq!(
            r.header("location"),
            Some("/_db/_system/_admin/aardvark/index.html")
        );
    }
}

#[test]
fn files_are_served_without_credentials_with_their_types() {
    let f = fixture();
    let index = f.get("/_db/_system/_admin/aardvark/index.html");
    assert_eq!(index.status.as_u16(), 200, "{index:?}");
    assert_eq!(
        index.content_type.as_ref().unwrap(),
        "text/html; charset=utf-8"
    );
    assert!(std::str::from_utf8(&index.body).unwrap().contains("app.js"));
    let script = f.get("/_admin/aardvark/app.js");
    assert_eq!(script.status.as_u16(), 200);
    let ct = script.content_type.as_ref().unwrap().to_str().unwrap();
    assert!(ct.contains("javascript"), "{ct}");
    let page = f.get("/_admin/aardvark/pages/documents.js");
    assert_eq!(page.status.as_u16(), 200, "nested files are served");
    let css = f.get("/_admin/aardvark/style.css");
    assert_eq!(
        css.content_type.as_ref().unwrap(),
        "text/css; charset=utf-8"
    );
    // The API itself still needs credentials.
    assert_eq!(f.get("/_api/version").status.as_u16(), 401);
}

#[test]
fn unknown_files_methods_and_escapes_are_refused() {
    let f = fixture();
    for target in [
        "/_admin/aardvark/nope.js",
        "/_admin/aardvark/../../Cargo.toml",
        "/_admin/aardvark/%2e%2e/src/lib.rs",
        "/_admin/aardvark/pages/../app.js",
    ] {
        let r = f.get(target);
        assert_eq!(r.status.as_u16(), 404, "{target}: {r:?}");
        let body = r.body_json().unwrap();
        assert_eq!(body["errorNum"], 404);
        assert_eq!(body["error"], true);
    }
    let r = f.send(Request::build(Method::POST, "/_admin/aardvark/index.html"));
    assert_eq!(r.status.as_u16(), 405);
    let r = f.get("/_db/missing/_admin/aardvark/index.html");
    assert_eq!(r.status.as_u16(), 404);
    assert_eq!(r.body_json().unwrap()["errorNum"], 1228);
}

#[test]
fn etags_answer_304_and_gzip_is_offered() {
    let f = fixture();
    let first = f.get("/_admin/aardvark/app.js");
    let etag = first.header("etag").expect("ETag").to_string();
    assert!(etag.starts_with('"') && etag.len() == 66, "{etag}");
    assert_eq!(first.header("cache-control"), Some("no-cache"));
    let again = f.send(
        Request::build(Method::GET, "/_admin/aardvark/app.js").with_header("if-none-match", &etag),
    );
    assert_eq!(again.status.as_u16(), 304);
    assert!(again.body.is_empty());
    let changed = f.send(
        Request::build(Method::GET, "/_admin/aardvark/app.js")
            .with_header("if-none-match", "\"other\""),
    );
    assert_eq!(changed.status.as_u16(), 200);

    let zipped = f.send(
        Request::build(Method::GET, "/_admin/aardvark/app.js")
            .with_header("accept-encoding", "gzip, deflate"),
    );
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    assert!(zipped.body.len() < first.body.len());
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&zipped.body[..])
        .read_to_end(&mut plain)
        .unwrap();
    assert_eq!(plain, first.body.to_vec());
    assert_eq!(zipped.header("etag"), Some(etag.as_str()));
}
