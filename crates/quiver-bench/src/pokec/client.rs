//! What the loader and the workload runner share: connection settings, JSON requests that
//! turn server errors into [`Error`]s, and a sampler of the server's memory and CPU time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use quiver_errors::{Error, ErrorCode};
use serde_json::Value;

use crate::http::{ClientSettings, HttpClient, Method, Response};
use crate::options::Endpoint;

pub const DATABASE: &str = "pokec";

/// Connection settings for `endpoint`; `authorization` is the `Authorization` header every
/// request carries (None: no header).
pub fn settings(
    endpoint: &str,
    authorization: Option<String>,
    timeout: Duration,
) -> Result<ClientSettings, Error> {
    use std::net::ToSocketAddrs;
    let endpoint = Endpoint::parse(endpoint)?;
    let addrs = (endpoint.host.as_str(), endpoint.port)
        .to_socket_addrs()
        .map_err(|e| {
            Error::with_message(
                ErrorCode::SimpleClientCouldNotConnect,
                format!("cannot resolve '{}': {e}", endpoint.host),
            )
        })?
        .collect();
    Ok(ClientSettings {
        addrs,
        host_header: endpoint.host_header(),
        authorization,
        keep_alive: true,
        connect_timeout: Duration::from_secs(10),
        request_timeout: timeout,
    })
}

/// The error a server response carries (ArangoDB's `errorNum`/`errorMessage`), or a generic
/// one naming the status.
pub fn server_error(what: &str, response: &Response) -> Error {
    let json = response.json().unwrap_or(Value::Null);
    let number = json["errorNum"].as_u64().unwrap_or(0) as u32;
    let message = json["errorMessage"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| response.body_text());
    let code = ErrorCode::from_number(number).unwrap_or(if response.status == 501 {
        ErrorCode::NotImplemented
    } else {
        ErrorCode::Internal
    });
    Error::with_message(
        code,
        format!("{what}: HTTP {} error {number}: {message}", response.status),
    )
}

/// Sends a JSON control request and returns the parsed body; statuses outside `ok` are errors.
pub async fn call(
    client: &mut HttpClient,
    method: Method,
    path: &str,
    body: Option<&Value>,
    ok: &[u16],
) -> Result<Value, Error> {
    let response = match body {
        Some(body) => client.send_json(method, path, body).await?,
        None => client.request(method, path, None, b"", false).await?,
    };
    if !ok.contains(&response.status) {
        return Err(server_error(
            &format!("{} {path}", method.as_str()),
            &response,
        ));
    }
    Ok(response.json().unwrap_or(Value::Null))
}

/// Resource use of the server process, sampled from /proc in a background thread.
pub struct Monitor {
    pid: Option<u32>,
    peak_rss_kib: Arc<AtomicU64>,
    over_limit: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub rss_kib: u64,
    pub hwm_kib: u64,
    pub cpu_seconds: f64,
}

/// Reads VmRSS, VmHWM and user+system CPU time of `pid`.
pub fn usage(pid: u32) -> Option<Usage> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; the fields after its closing parenthesis are fixed.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of stat (indexes 11 and 12 after the name), in
    // USER_HZ ticks, which the Linux ABI fixes at 100 on the architectures we run on.
    let cpu_seconds = (ticks(11) + ticks(12)) as f64 / 100.0;
    Some(Usage {
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
        cpu_seconds,
    })
}

impl Monitor {
    /// Starts sampling `pid` (None: no server process to watch) every 200 ms; crossing
    /// `limit_kib` sets [`Monitor::over_limit`], which the workloads check to stop early.
    pub fn start(pid: Option<u32>, limit_kib: u64) -> Monitor {
        let peak_rss_kib = Arc::new(AtomicU64::new(0));
        let over_limit = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = pid.map(|pid| {
            let (peak, over, stop) = (peak_rss_kib.clone(), over_limit.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(u) = usage(pid) {
                        peak.fetch_max(u.rss_kib.max(u.hwm_kib), Ordering::Relaxed);
                        if u.rss_kib > limit_kib {
                            over.store(true, Ordering::Relaxed);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
        });
        Monitor {
            pid,
            peak_rss_kib,
            over_limit,
            stop,
            thread,
        }
    }

    pub fn over_limit(&self) -> Arc<AtomicBool> {
        self.over_limit.clone()
    }

    pub fn now(&self) -> Option<Usage> {
        self.pid.and_then(usage)
    }

    pub fn peak_rss_kib(&self) -> u64 {
        self.peak_rss_kib.load(Ordering::Relaxed)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::with_message(ErrorCode::Internal, format!("tokio runtime: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_of_this_process() {
        let u = usage(std::process::id()).unwrap();
        assert!(u.rss_kib > 0 && u.hwm_kib >= u.rss_kib);
        assert!(u.cpu_seconds >= 0.0);
        assert!(usage(u32::MAX).is_none());
    }

    #[test]
    fn server_errors_keep_arango_numbers() {
        let response = Response {
            status: 501,
            body: br#"{"error":true,"errorNum":9,"errorMessage":"traversals are not implemented"}"#
                .to_vec(),
            ..Response::default()
        };
        let e = server_error("query", &response);
        assert_eq!(e.number(), 9);
        assert!(e.message.contains("traversals are not implemented"));
        let plain = Response {
            status: 502,
            body: b"bad gateway".to_vec(),
            ..Response::default()
        };
        assert!(server_error("x", &plain).message.contains("bad gateway"));
    }
}
