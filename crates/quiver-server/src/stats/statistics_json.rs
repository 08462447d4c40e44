//! `/_admin/statistics` and `/_admin/statistics-description` in ArangoDB's shape: the groups
//! `system`, `client`, `http` and `server`, each a set of figures; a distribution is
//! `{sum, count, counts}` with one count per cut and one above the last (not cumulative).

use std::time::Instant;

use quiver_metrics::HistogramSnapshot;
use serde_json::{json, Value};

use super::process;
use super::requests::{MethodKind, RequestStatistics};

fn distribution(h: &HistogramSnapshot) -> Value {
    json!({"sum": h.sum, "count": h.count, "counts": h.counts})
}

/// The body of `GET /_admin/statistics`, from the server's request statistics and the moment
/// it started.
pub fn statistics(s: &RequestStatistics, started: Instant) -> Value {
    let p = process::read();
    let t = &s.times;
    let tx = quiver_core::transaction_counts();
    let method = |k| s.method_count(k);
    json!({
        "time": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        "enabled": true,
        "system": {
            "minorPageFaults": p.minor_page_faults,
            "majorPageFaults": p.major_page_faults,
            "userTime": p.user_time,
            "systemTime": p.system_time,
            "numberOfThreads": p.threads,
            "residentSize": p.resident_size,
            "residentSizePercent": p.resident_share(),
            "virtualSize": p.virtual_size,
        },
        "client": {
            "httpConnections": s.open_connections.load(std::sync::atomic::Ordering::Relaxed),
            "connectionTime": distribution(&s.connection_time.snapshot()),
            "totalTime": distribution(&t.total_time.snapshot()),
            "requestTime": distribution(&t.request_time.snapshot()),
            "queueTime": distribution(&t.queue_time.snapshot()),
            "ioTime": distribution(&t.io_time.snapshot()),
            "bytesSent": distribution(&t.bytes_sent.snapshot()),
            "bytesReceived": distribution(&t.bytes_received.snapshot()),
        },
        "http": {
            "requestsTotal": s.total.get(),
            "requestsSuperuser": s.superuser.get(),
            "requestsUser": s.user.get(),
            "requestsAsync": s.asynchronous.get(),
            "requestsGet": method(MethodKind::Get),
            "requestsHead": method(MethodKind::Head),
            "requestsPost": method(MethodKind::Post),
            "requestsPut": method(MethodKind::Put),
            "requestsPatch": method(MethodKind::Patch),
            "requestsDelete": method(MethodKind::Delete),
            "requestsOptions": method(MethodKind::Options),
            "requestsOther": method(MethodKind::Other),
        },
        "server": {
            "uptime": started.elapsed().as_secs_f64(),
            "physicalMemory": p.physical_memory,
            "transactions": {
                "started": tx.started,
                "committed": tx.committed,
                "aborted": tx.aborted,
                "intermediateCommits": 0,
            },
            "cpuCores": p.cpu_cores,
        },
        "error": false,
        "code": 200,
    })
}

/// One figure of the description.
fn figure(group: &str, id: &str, name: &str, description: &str, kind: &str, units: &str) -> Value {
    json!({
        "group": group,
        "identifier": id,
        "name": name,
        "description": description,
        "type": kind,
        "units": units,
    })
}

fn distribution_figure(
    group: &str,
    id: &str,
    name: &str,
    description: &str,
    units: &str,
    cuts: &[f64],
) -> Value {
    let mut f = figure(group, id, name, description, "distribution", units);
    f["cuts"] = json!(cuts);
    f
}

/// The body of `GET /_admin/statistics-description`.
pub fn description(s: &RequestStatistics) -> Value {
    let t = &s.times;
    let mut figures = vec![
        figure(
            "system",
            "userTime",
            "User Time",
            "CPU time the server process spent in user mode.",
            "accumulated",
            "seconds",
        ),
        figure(
            "system",
            "systemTime",
            "System Time",
            "CPU time the server process spent in kernel mode.",
            "accumulated",
            "seconds",
        ),
        figure(
            "system",
            "numberOfThreads",
            "Number of Threads",
            "Threads of the server process.",
            "current",
            "number",
        ),
        figure(
            "system",
            "residentSize",
            "Resident Set Size",
            "Memory of the server process that is in RAM.",
            "current",
            "bytes",
        ),
        figure(
            "system",
            "residentSizePercent",
            "Resident Set Size",
            "Resident set size as a share of physical memory.",
            "current",
            "percent",
        ),
        figure(
            "system",
            "virtualSize",
            "Virtual Memory Size",
            "Virtual memory size of the server process.",
            "current",
            "bytes",
        ),
        figure(
            "system",
            "minorPageFaults",
            "Minor Page Faults",
            "Page faults that needed no disk read.",
            "accumulated",
            "number",
        ),
        figure(
            "system",
            "majorPageFaults",
            "Major Page Faults",
            "Page faults that read a page from disk.",
            "accumulated",
            "number",
        ),
        figure(
            "client",
            "httpConnections",
            "Client Connections",
            "Client connections open now.",
            "current",
            "number",
        ),
        distribution_figure(
            "client",
            "connectionTime",
            "Connection Time",
            "How long closed client connections were open.",
            "seconds",
            s.connection_time.bounds(),
        ),
        distribution_figure(
            "client",
            "totalTime",
            "Total Time",
            "Time from a request's head to its answer.",
            "seconds",
            t.total_time.bounds(),
        ),
        distribution_figure(
            "client",
            "requestTime",
            "Request Time",
            "Time spent in request handlers.",
            "seconds",
            t.request_time.bounds(),
        ),
        distribution_figure(
            "client",
            "queueTime",
            "Queue Time",
            "Time from reading a request to the start of its handler.",
            "seconds",
            t.queue_time.bounds(),
        ),
        distribution_figure(
            "client",
            "ioTime",
            "IO Time",
            "Time spent reading request bodies.",
            "seconds",
            t.io_time.bounds(),
        ),
        distribution_figure(
            "client",
            "bytesSent",
            "Bytes Sent",
            "Response body sizes.",
            "bytes",
            t.bytes_sent.bounds(),
        ),
        distribution_figure(
            "client",
            "bytesReceived",
            "Bytes Received",
            "Request body sizes.",
            "bytes",
            t.bytes_received.bounds(),
        ),
    ];
    for (id, name) in [
        ("requestsTotal", "Total requests"),
        ("requestsSuperuser", "Superuser requests"),
        ("requestsUser", "User requests"),
        ("requestsAsync", "Async requests"),
        ("requestsGet", "HTTP GET requests"),
        ("requestsHead", "HTTP HEAD requests"),
        ("requestsPost", "HTTP POST requests"),
        ("requestsPut", "HTTP PUT requests"),
        ("requestsPatch", "HTTP PATCH requests"),
        ("requestsDelete", "HTTP DELETE requests"),
        ("requestsOptions", "HTTP OPTIONS requests"),
        ("requestsOther", "Other HTTP requests"),
    ] {
        figures.push(figure(
            "http",
            id,
            name,
            &format!("{name} answered."),
            "accumulated",
            "number",
        ));
    }
    figures.push(figure(
        "server",
        "uptime",
        "Server Uptime",
        "Seconds since the server started.",
        "current",
        "seconds",
    ));
    figures.push(figure(
        "server",
        "physicalMemory",
        "Physical Memory",
        "Physical memory of the machine.",
        "current",
        "bytes",
    ));
    json!({
        "groups": [
            {"group": "system", "name": "Process Statistics", "description": "Statistics about the server process."},
            {"group": "client", "name": "Client Connection Statistics", "description": "Statistics about the connections and requests of clients."},
            {"group": "http", "name": "HTTP Request Statistics", "description": "Requests by caller and method."},
            {"group": "server", "name": "Server Statistics", "description": "Statistics about the server and its machine."},
        ],
        "figures": figures,
        "error": false,
        "code": 200,
    })
}
