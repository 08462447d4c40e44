//! The web interface's files, embedded into the binary at compile time and served as ArangoDB
//! serves its own ("aardvark"): `GET /` redirects to `/_db/_system/_admin/aardvark/index.html`,
//! `/_db/{db}/_admin/aardvark/{file}` answers the file without authentication (the API calls
//! the page makes are authenticated). docs/design/webui.md.

use std::collections::HashMap;
use std::io::Write;
use std::sync::OnceLock;

use bytes::Bytes;
use http::{header, HeaderValue, Method};
use quiver_errors::{Error, ErrorCode};
use rust_embed::RustEmbed;

use crate::{Request, Response};

/// The files under `crates/quiver-server/webui/`, in the binary in every build profile.
#[derive(RustEmbed)]
#[folder = "webui/"]
struct Assets;

/// The page a bare `/` and `/_admin/aardvark` lead to.
pub const INDEX_PATH: &str = "/_db/_system/_admin/aardvark/index.html";

/// Files smaller than this are sent as they are: gzip would save less than its header costs.
const GZIP_MIN_BYTES: usize = 512;

/// `/` (any method, as ArangoDB): 301 to the interface of the request's database, which is
/// `_system` for a path without `/_db/{db}`.
pub fn root_redirect(req: &Request) -> Response {
    if req.database == crate::DEFAULT_DATABASE {
        return redirect(INDEX_PATH);
    }
    redirect(&index_of(&req.database))
}

fn index_of(database: &str) -> String {
    let db = percent_encoding::utf8_percent_encode(database, SEGMENT);
    format!("/_db/{db}/_admin/aardvark/index.html")
}

/// `/_admin/aardvark/…` of the request's database (segments 0 and 1 are `_admin/aardvark`).
pub fn serve(req: &Request) -> Response {
    debug_assert_eq!(req.segments.get(1), Some("aardvark"));
    let file: Vec<&str> = req.segments.iter().skip(2).collect();
    if file.is_empty() || file == [""] {
        return redirect(&index_of(&req.database));
    }
    if req.method != Method::GET && req.method != Method::HEAD {
        return ErrorCode::HttpMethodNotAllowed.into();
    }
    // Segments are already percent-decoded; an embedded name never contains `..` or `/`
    // inside a segment, so a lookup by the joined name cannot leave the embedded set.
    if file
        .iter()
        .any(|s| s.is_empty() || *s == "." || *s == ".." || s.contains('/'))
    {
        return not_found(&req.path);
    }
    let name = file.join("/");
    let Some(asset) = Assets::get(&name) else {
        return not_found(&req.path);
    };
    let etag = format!("\"{}\"", hex(&asset.metadata.sha256_hash()));
    let content_type = HeaderValue::from_str(&content_type(asset.metadata.mimetype()))
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let not_modified = req
        .header(header::IF_NONE_MATCH)
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if not_modified {
        Response::empty(304)
    } else {
        let gzip = accepts_gzip(req).then(|| gzipped(&name)).flatten();
        let mut ok = Response::empty(200);
        ok.content_type = Some(content_type);
        match gzip {
            Some(body) => {
                ok.body = body;
                ok = ok.with_header(header::CONTENT_ENCODING, "gzip");
            }
            None => ok.body = Bytes::from(asset.data.into_owned()),
        }
        ok
    };
    response = response
        .with_header(header::ETAG, &etag)
        .with_header(header::CACHE_CONTROL, "no-cache")
        .with_header(header::VARY, "Accept-Encoding");
    response
}

/// Percent-encodes a database name for a path segment.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'_')
    .remove(b'-')
    .remove(b'.');

fn redirect(location: &str) -> Response {
    Response::empty(301).with_header(header::LOCATION, location)
}

fn not_found(path: &str) -> Response {
    Error::with_message(ErrorCode::HttpNotFound, format!("file not found: '{path}'")).into()
}

/// Text types carry their character set, as browsers expect for scripts and pages.
fn content_type(mime: &str) -> String {
    let textual = mime.starts_with("text/")
        || mime == "application/javascript"
        || mime == "application/json"
        || mime == "image/svg+xml";
    if textual && !mime.contains("charset") {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    }
}

fn accepts_gzip(req: &Request) -> bool {
    req.header(header::ACCEPT_ENCODING).is_some_and(|v| {
        v.split(',').any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                let p = p.trim().replace(' ', "");
                p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000"
            });
            name.eq_ignore_ascii_case("gzip") && !refused
        })
    })
}

/// The gzip body of an embedded file, when it is worth sending: every file is compressed
/// once per process (the set is fixed at compile time, so the map is bounded by it).
fn gzipped(name: &str) -> Option<Bytes> {
    static GZIPPED: OnceLock<HashMap<String, Bytes>> = OnceLock::new();
    GZIPPED
        .get_or_init(|| {
            Assets::iter()
                .filter_map(|name| {
                    let data = Assets::get(&name)?.data;
                    if data.len() < GZIP_MIN_BYTES {
                        return None;
                    }
                    let mut encoder = flate2::write::GzEncoder::new(
                        Vec::with_capacity(data.len() / 3),
                        flate2::Compression::default(),
                    );
                    encoder.write_all(&data).ok()?;
                    let compressed = encoder.finish().ok()?;
                    (compressed.len() < data.len())
                        .then(|| (name.into_owned(), Bytes::from(compressed)))
                })
                .collect()
        })
        .get(name)
        .cloned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_accepted_unless_refused_by_quality() {
        let req = |v: &str| Request::build(Method::GET, "/").with_header("accept-encoding", v);
        assert!(accepts_gzip(&req("gzip, deflate, br")));
        assert!(accepts_gzip(&req("br;q=1.0, GZIP;q=0.5")));
        assert!(!accepts_gzip(&req("gzip;q=0, br")));
        assert!(!accepts_gzip(&req("deflate")));
        assert!(!accepts_gzip(&Request::build(Method::GET, "/")));
    }

    #[test]
    fn text_types_carry_utf8() {
        assert_eq!(
            content_type("text/javascript"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type("image/png"), "image/png");
    }

    #[test]
    fn the_index_page_is_embedded() {
        let index = Assets::get("index.html").expect("index.html embedded");
        assert!(std::str::from_utf8(&index.data)
            .unwrap()
            .contains("<script type=\"module\""));
    }
}
