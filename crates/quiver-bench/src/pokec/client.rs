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

/// Resource use of the server process, sampled from /proc in a background thread. Its peak
/// is the largest sample (every 200 ms), the one rule that applies to a one-process server
/// and to a process tree alike; a one-process server's exact VmHWM is reported beside it.
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
    /// The processes counted: 1 for a one-process server, whose `hwm_kib` is the kernel's
    /// exact high-water mark (VmHWM); for a tree it is only the current sum.
    pub processes: usize,
}

/// The fields of `/proc/PID/stat` after the command name (which may contain spaces).
fn stat_fields(pid: u32) -> Option<Vec<u64>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    // Index 0 is the state letter; parse it as 0 so indexes match stat(5) minus 3.
    Some(
        after
            .split_whitespace()
            .map(|f| f.parse::<u64>().unwrap_or(0))
            .collect(),
    )
}

/// A `kB` field of a /proc status-like file.
fn kib_field(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// `pid` and every process descending from it (a server of several processes, such as
/// PostgreSQL's postmaster and its backends). Bounded by the number of processes in /proc.
fn process_tree(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // stat(5) field 4 (ppid) is index 1 here.
            if let Some(ppid) = stat_fields(p).and_then(|f| f.get(1).copied()) {
                parent_of.push((p, ppid as u32));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree
}

/// Memory and user+system CPU time of the server `pid`. One process: VmRSS and VmHWM. A
/// process tree: the sum of the processes' proportional set sizes (shared memory such as
/// PostgreSQL's buffers counted once, not once per backend), for both current and peak, and
/// the sum of their CPU times plus what the root collected from exited children.
pub fn usage(pid: u32) -> Option<Usage> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let root = stat_fields(pid)?;
    // utime, stime, cutime, cstime are stat(5) fields 14-17 (indexes 11-14 here), in
    // USER_HZ ticks, which the Linux ABI fixes at 100 on the architectures we run on.
    let tick = |f: &Vec<u64>, i: usize| f.get(i).copied().unwrap_or(0);
    let tree = process_tree(pid);
    if tree.len() == 1 {
        return Some(Usage {
            rss_kib: kib_field(&status, "VmRSS:"),
            hwm_kib: kib_field(&status, "VmHWM:"),
            cpu_seconds: (tick(&root, 11) + tick(&root, 12)) as f64 / 100.0,
            processes: 1,
        });
    }
    let mut pss = 0;
    let mut ticks = tick(&root, 13) + tick(&root, 14);
    let processes = tree.len();
    for p in tree {
        if let Ok(rollup) = std::fs::read_to_string(format!("/proc/{p}/smaps_rollup")) {
            pss += kib_field(&rollup, "Pss:");
        }
        if let Some(f) = stat_fields(p) {
            ticks += tick(&f, 11) + tick(&f, 12);
        }
    }
    Some(Usage {
        rss_kib: pss,
        hwm_kib: pss,
        cpu_seconds: ticks as f64 / 100.0,
        processes,
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
                        // The sampled size only, for every kind of server alike: a
                        // process tree has no exact high-water mark to compare with.
                        peak.fetch_max(u.rss_kib, Ordering::Relaxed);
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
    fn usage_of_a_process_tree_counts_its_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let tree = process_tree(std::process::id());
        assert!(tree.contains(&child.id()), "{tree:?}");
        let u = usage(std::process::id()).unwrap();
        assert!(u.rss_kib > 0 && u.hwm_kib == u.rss_kib);
        assert!(u.processes >= 2, "{u:?}");
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn usage_of_this_process() {
        let u = usage(std::process::id()).unwrap();
        assert!(u.rss_kib > 0 && u.hwm_kib >= u.rss_kib);
        assert!(u.processes >= 1);
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
