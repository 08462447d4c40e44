//! CORS over a real socket with authentication on: preflights, and requests from a trusted
//! and an untrusted origin, with and without credentials.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use quiver_core::{Core, CoreOptions};
use quiver_server::cors::TrustedOrigins;
use quiver_server::{serve_on, ServerConfig, ServerState};

const TRUSTED: &str = "http://app.test";
const UNTRUSTED: &str = "http://evil.test";
const ROOT: &str = "Basic cm9vdDo="; // root, empty password

struct Answer {
    status: u16,
    headers: HashMap<String, String>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// One request on a fresh connection (`Connection: close`), headers as given.
fn send(addr: std::net::SocketAddr, head: &str, body: &str) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{head}\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
    }
    let mut body = String::new();
    reader.read_to_string(&mut body).unwrap();
    Answer {
        status,
        headers,
        body,
    }
}

#[test]
fn credentials_only_for_trusted_origins_and_no_unauthenticated_writes() {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let state = ServerState::new(
        ServerConfig {
            data_dir: dir.path().to_path_buf(),
            async_workers: 1,
            trusted_origins: TrustedOrigins::parse(&[TRUSTED]),
            ..ServerConfig::default()
        },
        core.clone(),
    )
    .unwrap();
    assert!(state.config.auth.enabled, "authentication is on by default");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let handle = rt
        .block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            serve_on(state.clone(), listener, vec![rt.handle().clone()])
        })
        .unwrap();
    let addr = handle.local_addr;
    let created = send(
        addr,
        &format!("POST /_api/collection HTTP/1.1\r\nAuthorization: {ROOT}"),
        r#"{"name":"c"}"#,
    );
    assert_eq!(created.status, 200, "{}", created.body);

    // Preflight: answered without credentials, credentials allowed only for the trusted one.
    for (origin, credentials) in [(UNTRUSTED, "false"), (TRUSTED, "true")] {
        let a = send(
            addr,
            &format!(
                "OPTIONS /_api/document/c HTTP/1.1\r\nOrigin: {origin}\r\n\
                 Access-Control-Request-Method: POST\r\n\
                 Access-Control-Request-Headers: authorization, content-type"
            ),
            "",
        );
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.header("access-control-allow-origin"), Some(origin));
        assert_eq!(
            a.header("access-control-allow-credentials"),
            Some(credentials)
        );
        assert_eq!(
            a.header("access-control-allow-methods"),
            Some(quiver_server::ALLOWED_METHODS)
        );
        assert_eq!(
            a.header("access-control-allow-headers"),
            Some("authorization, content-type")
        );
        assert_eq!(a.header("access-control-max-age"), Some("1800"));
    }

    // A "simple" cross-origin POST (text/plain, no credentials) writes nothing: 401.
    let a = send(
        addr,
        &format!(
            "POST /_api/document/c HTTP/1.1\r\nOrigin: {UNTRUSTED}\r\nContent-Type: text/plain"
        ),
        r#"{"_key":"forged"}"#,
    );
    assert_eq!(a.status, 401, "{}", a.body);
    assert!(a.body.contains("\"errorNum\":11"), "{}", a.body);
    assert_eq!(a.header("access-control-allow-origin"), Some(UNTRUSTED));
    assert_eq!(a.header("access-control-allow-credentials"), Some("false"));
    assert!(a.header("access-control-allow-methods").is_none());

    // With credentials: the trusted origin may read the answer, the untrusted one may not.
    for (key, origin, credentials) in [("a", UNTRUSTED, "false"), ("b", TRUSTED, "true")] {
        let a = send(
            addr,
            &format!("POST /_api/document/c HTTP/1.1\r\nOrigin: {origin}\r\nAuthorization: {ROOT}"),
            &format!(r#"{{"_key":"{key}"}}"#),
        );
        assert_eq!(a.status, 202, "{}", a.body);
        assert_eq!(
            a.header("access-control-allow-credentials"),
            Some(credentials)
        );
        assert!(a
            .header("access-control-expose-headers")
            .unwrap()
            .contains("etag"));
    }
    let c = core.database("_system").unwrap().collection("c").unwrap();
    assert_eq!(c.count().unwrap(), 2, "the forged document was not written");

    // Without an Origin header nothing CORS is added.
    let a = send(
        addr,
        &format!("GET /_api/version HTTP/1.1\r\nAuthorization: {ROOT}"),
        "",
    );
    assert_eq!(a.status, 200);
    assert!(a.header("access-control-allow-origin").is_none());
    assert!(a.header("access-control-allow-credentials").is_none());

    rt.block_on(handle.shutdown(std::time::Duration::from_secs(2)));
    state.shutdown();
    drop(state);
    core.shutdown().unwrap();
}
