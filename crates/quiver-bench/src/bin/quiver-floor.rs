//! The HTTP floor server of the benchmarks (docs/shared limits.md §2): a minimal hyper 1.x
//! server that parses a POSTed JSON body and answers a small fixed-shape JSON, and answers
//! any other method with `{"ok":true}`. It is the ceiling any Rust HTTP+JSON server can reach
//! on a machine, and the target against which `quiver bench` is compared with wrk.
//!
//! Usage: `quiver-floor PORT` (0 = pick a free port). Prints `listening on 127.0.0.1:PORT`
//! on stdout once it accepts connections.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

fn json_response(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

async fn handle(
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.method() != Method::POST {
        return Ok(json_response(
            StatusCode::OK,
            Bytes::from_static(b"{\"ok\":true}"),
        ));
    }
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Ok(json_response(StatusCode::BAD_REQUEST, Bytes::new())),
    };
    // A generic parse, as a document database has to do with every document.
    let document: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => {
            return Ok(json_response(
                StatusCode::BAD_REQUEST,
                Bytes::from_static(b"{\"error\":true,\"code\":400}"),
            ))
        }
    };
    let (key, fields) = match &document {
        serde_json::Value::Object(map) => (
            map.get("_key").and_then(|k| k.as_str()).unwrap_or("none"),
            map.len(),
        ),
        _ => ("none", 0),
    };
    let reply = serde_json::json!({
        "_id": format!("profiles/{key}"),
        "_key": key,
        "_rev": "_hZk3Ld2---",
        "fields": fields,
        "ok": true,
    });
    let bytes = serde_json::to_vec(&reply).unwrap_or_default();
    Ok(json_response(StatusCode::CREATED, Bytes::from(bytes)))
}

#[tokio::main]
async fn main() {
    let port: u16 = match std::env::args().nth(1).map(|p| p.parse()) {
        None => 0,
        Some(Ok(port)) => port,
        Some(Err(_)) => {
            eprintln!("usage: quiver-floor PORT   (0 = pick a free port)");
            std::process::exit(2);
        }
    };
    let listener = match TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("quiver-floor: cannot listen on port {port}: {e}");
            std::process::exit(1);
        }
    };
    let address = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    println!("listening on {address}");
    let _ = std::io::stdout().flush();
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(pair) => pair,
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                eprintln!("quiver-floor: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .keep_alive(true)
                .pipeline_flush(true)
                .serve_connection(TokioIo::new(stream), service_fn(handle))
                .await;
        });
    }
}
