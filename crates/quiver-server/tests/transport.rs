//! The connection loop over real sockets with connections spread over several runtimes, as
//! the binary runs it (`serve_on` with one single-worker runtime per core).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver_core::{Core, CoreOptions};
use quiver_server::{serve_on, ServerConfig, ServerState};

fn runtimes(n: usize) -> Vec<tokio::runtime::Runtime> {
    (0..n)
        .map(|i| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .thread_name(format!("test-http-{i}"))
                .build()
                .unwrap()
        })
        .collect()
}

/// Sends one request on a keep-alive connection and reads the answer: status and body.
fn exchange(
    conn: &mut BufReader<TcpStream>,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String) {
    write!(
        conn.get_mut(),
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut status_line = String::new();
    conn.read_line(&mut status_line).unwrap();
    let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        conn.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0u8; length];
    conn.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}

#[test]
fn connections_spread_over_runtimes_are_all_served_and_shut_down() {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let state = ServerState::new(
        ServerConfig {
            data_dir: dir.path().to_path_buf(),
            async_workers: 1,
            // These tests exercise the handlers, not authentication (tests/access.rs does).
            auth: quiver_server::auth::AuthConfig::disabled(),
            ..ServerConfig::default()
        },
        core.clone(),
    )
    .unwrap();
    let rts = runtimes(2);
    let workers = rts.iter().map(|rt| rt.handle().clone()).collect();
    let handle = rts[0]
        .block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            serve_on(state.clone(), listener, workers)
        })
        .unwrap();
    let addr = handle.local_addr;

    // A connection nobody serves fails the test at its first read instead of hanging it.
    let mut conns: Vec<BufReader<TcpStream>> = (0..5)
        .map(|_| {
            let conn = TcpStream::connect(addr).unwrap();
            conn.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            BufReader::new(conn)
        })
        .collect();
    let (status, _) = exchange(&mut conns[0], "POST", "/_api/collection", r#"{"name":"c"}"#);
    assert_eq!(status, 200);
    // Every connection inserts and reads back, interleaved, so that each runtime serves
    // requests while the others hold open connections.
    for round in 0..3 {
        for (i, conn) in conns.iter_mut().enumerate() {
            let key = format!("k{i}-{round}");
            let (status, body) = exchange(
                conn,
                "POST",
                "/_api/document/c",
                &format!(r#"{{"_key":"{key}","i":{i}}}"#),
            );
            assert_eq!(status, 202, "{body}");
            let (status, body) = exchange(conn, "GET", &format!("/_api/document/c/{key}"), "");
            assert_eq!(status, 200, "{body}");
            assert!(body.contains(&format!(r#""i":{i}"#)), "{body}");
        }
    }
    // Every connection has been served, so every one was accepted: spread by open
    // connections, first runtime first, three on the first (plus the accept loop, which runs
    // there in this test), two on the second.
    let alive: Vec<usize> = rts
        .iter()
        .map(|rt| rt.metrics().num_alive_tasks())
        .collect();
    assert_eq!(alive, vec![4, 2], "tasks per runtime");
    // A route that runs in place (`block_in_place`) works on a single-worker runtime too,
    // and sees every connection's writes.
    let (status, body) = exchange(
        &mut conns[3],
        "POST",
        "/_api/cursor",
        r#"{"query":"FOR d IN c COLLECT WITH COUNT INTO n RETURN n"}"#,
    );
    assert_eq!(status, 201, "{body}");
    assert!(body.contains(r#""result":[15]"#), "{body}");
    // A duplicate key is refused with ArangoDB's unique-constraint error, on any runtime.
    let (status, body) = exchange(
        &mut conns[4],
        "POST",
        "/_api/document/c",
        r#"{"_key":"k0-0"}"#,
    );
    assert_eq!(status, 409, "{body}");
    assert!(body.contains(r#""errorNum":1210"#), "{body}");

    // Shutdown closes the open (idle) connections at once: each client reads the end of the
    // stream (its read timeout would fail the test) well within the grace period.
    let started = Instant::now();
    rts[0].block_on(handle.shutdown(Duration::from_secs(2)));
    for conn in &mut conns {
        let mut rest = Vec::new();
        conn.read_to_end(&mut rest)
            .expect("connection closed by the server");
        assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(TcpStream::connect(addr).is_err(), "still accepting");
    state.shutdown();
    drop(rts);
    core.shutdown().unwrap();
}
