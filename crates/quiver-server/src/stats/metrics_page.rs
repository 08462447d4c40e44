//! The page `GET /_admin/metrics` answers: every metric of docs/metrics.md in the Prometheus
//! text format, read at the moment of the request from the request statistics, the query
//! service, the transaction counts, the storage engine and the operating system.

use std::time::Instant;

use quiver_aql::QueryService;
use quiver_core::Core;
use quiver_metrics::{Exposition, HistogramSnapshot};

use super::process;
use super::requests::{MethodKind, RequestStatistics};

/// Bytes of every index of every collection in every database (primary, edge and secondary
/// indexes, as the collections' figures report them).
pub fn index_memory(core: &Core) -> u64 {
    let mut total = 0u64;
    for db in core.databases() {
        for coll in db.collections() {
            if let Ok(figures) = coll.figures() {
                total += figures["indexes"]["size"].as_u64().unwrap_or(0);
            }
        }
    }
    total
}

/// The whole page, from the server's request statistics, query service and core, and the
/// moment it started.
pub fn render(
    statistics: &RequestStatistics,
    queries: &QueryService,
    core: &Core,
    started: Instant,
) -> String {
    let mut page = Exposition::new();
    http_metrics(&mut page, statistics);
    aql_metrics(&mut page, queries);
    transaction_metrics(&mut page);
    process_metrics(&mut page, started);
    storage_metrics(&mut page, core);
    page.finish()
}

fn http_metrics(page: &mut Exposition, s: &RequestStatistics) {
    page.counter(
        "arangodb_http_request_statistics_total_requests_total",
        "Total number of HTTP requests",
        s.total.get() as f64,
    );
    page.counter(
        "arangodb_http_request_statistics_superuser_requests_total",
        "Number of HTTP requests by the superuser (server JWT or authentication off)",
        s.superuser.get() as f64,
    );
    page.counter(
        "arangodb_http_request_statistics_user_requests_total",
        "Number of HTTP requests by users",
        s.user.get() as f64,
    );
    page.counter(
        "arangodb_http_request_statistics_async_requests_total",
        "Number of HTTP requests queued with x-arango-async",
        s.asynchronous.get() as f64,
    );
    let per_method: [(MethodKind, &'static str, &str); 8] = [
        (
            MethodKind::Delete,
            "arangodb_http_request_statistics_http_delete_requests_total",
            "Number of HTTP DELETE requests",
        ),
        (
            MethodKind::Get,
            "arangodb_http_request_statistics_http_get_requests_total",
            "Number of HTTP GET requests",
        ),
        (
            MethodKind::Head,
            "arangodb_http_request_statistics_http_head_requests_total",
            "Number of HTTP HEAD requests",
        ),
        (
            MethodKind::Options,
            "arangodb_http_request_statistics_http_options_requests_total",
            "Number of HTTP OPTIONS requests",
        ),
        (
            MethodKind::Patch,
            "arangodb_http_request_statistics_http_patch_requests_total",
            "Number of HTTP PATCH requests",
        ),
        (
            MethodKind::Post,
            "arangodb_http_request_statistics_http_post_requests_total",
            "Number of HTTP POST requests",
        ),
        (
            MethodKind::Put,
            "arangodb_http_request_statistics_http_put_requests_total",
            "Number of HTTP PUT requests",
        ),
        (
            MethodKind::Other,
            "arangodb_http_request_statistics_other_http_requests_total",
            "Number of HTTP requests with other methods",
        ),
    ];
    for (kind, name, help) in per_method {
        page.counter(name, help, s.method_count(kind) as f64);
    }
    page.gauge(
        "arangodb_client_connection_statistics_client_connections",
        "Number of client connections open now",
        s.open_connections
            .load(std::sync::atomic::Ordering::Relaxed) as f64,
    );
    page.histogram(
        "arangodb_client_connection_statistics_connection_time",
        "How long closed client connections were open [s]",
        &s.connection_time.snapshot(),
    );
    let t = &s.times;
    page.histogram(
        "arangodb_client_connection_statistics_total_time",
        "Time from a request's head to its answer, durability wait included [s]",
        &t.total_time.snapshot(),
    );
    page.histogram(
        "arangodb_client_connection_statistics_request_time",
        "Time spent in request handlers [s]",
        &t.request_time.snapshot(),
    );
    page.histogram(
        "arangodb_client_connection_statistics_queue_time",
        "Time from reading a request to the start of its handler [s]",
        &t.queue_time.snapshot(),
    );
    page.histogram(
        "arangodb_client_connection_statistics_io_time",
        "Time spent reading request bodies from connections [s]",
        &t.io_time.snapshot(),
    );
    page.histogram(
        "arangodb_client_connection_statistics_bytes_received",
        "Request body sizes [bytes]",
        &t.bytes_received.snapshot(),
    );
    page.histogram(
        "arangodb_client_connection_statistics_bytes_sent",
        "Response body sizes [bytes]",
        &t.bytes_sent.snapshot(),
    );
}

fn aql_metrics(page: &mut Exposition, queries: &QueryService) {
    let q = queries.figures();
    page.counter(
        "arangodb_aql_all_query_total",
        "Number of AQL queries finished",
        q.all_queries as f64,
    );
    page.histogram(
        "arangodb_aql_query_time",
        "Execution times of all AQL queries [s]",
        &q.query_time,
    );
    page.histogram(
        "arangodb_aql_slow_query_time",
        "Execution times of slow AQL queries [s]",
        &q.slow_query_time,
    );
    page.counter(
        "arangodb_aql_total_query_time_msec_total",
        "Total execution time of all AQL queries [ms]",
        q.total_query_time_msec as f64,
    );
    page.gauge(
        "arangodb_aql_current_query",
        "Number of AQL queries executing now",
        q.running as f64,
    );
    page.gauge(
        "arangodb_aql_global_memory_usage",
        "Memory of the AQL queries executing now, as tracked by their memory limits [bytes]",
        q.running_memory as f64,
    );
    page.gauge(
        "arangodb_aql_cursors_active",
        "Number of open AQL cursors",
        q.cursors as f64,
    );
}

fn transaction_metrics(page: &mut Exposition) {
    let t = quiver_core::transaction_counts();
    page.counter(
        "arangodb_transactions_started_total",
        "Number of transactions started (stream transactions, AQL and multi-document writes)",
        t.started as f64,
    );
    page.counter(
        "arangodb_transactions_committed_total",
        "Number of transactions committed",
        t.committed as f64,
    );
    page.counter(
        "arangodb_transactions_aborted_total",
        "Number of transactions aborted",
        t.aborted as f64,
    );
}

fn process_metrics(page: &mut Exposition, started: Instant) {
    let p = process::read();
    page.gauge(
        "arangodb_process_statistics_resident_set_size",
        "Resident set size of the server process [bytes]",
        p.resident_size as f64,
    );
    page.gauge(
        "arangodb_process_statistics_resident_set_size_percent",
        "Resident set size as a share of physical memory (0..1)",
        p.resident_share(),
    );
    page.gauge(
        "arangodb_process_statistics_virtual_memory_size",
        "Virtual memory size of the server process [bytes]",
        p.virtual_size as f64,
    );
    page.gauge(
        "arangodb_process_statistics_user_time",
        "CPU time of the server process in user mode [s]",
        p.user_time,
    );
    page.gauge(
        "arangodb_process_statistics_system_time",
        "CPU time of the server process in kernel mode [s]",
        p.system_time,
    );
    page.gauge(
        "arangodb_process_statistics_number_of_threads",
        "Number of threads of the server process",
        p.threads as f64,
    );
    page.counter(
        "arangodb_process_statistics_minor_page_faults_total",
        "Minor page faults of the server process (no disk read needed)",
        p.minor_page_faults as f64,
    );
    page.counter(
        "arangodb_process_statistics_major_page_faults_total",
        "Major page faults of the server process (a page read from disk)",
        p.major_page_faults as f64,
    );
    page.counter(
        "arangodb_server_statistics_server_uptime_total",
        "Seconds since the server started",
        started.elapsed().as_secs_f64(),
    );
    page.gauge(
        "arangodb_server_statistics_physical_memory",
        "Physical memory of the machine [bytes]",
        p.physical_memory as f64,
    );
    page.gauge(
        "arangodb_server_statistics_cpu_cores",
        "Number of CPU cores available to the server process",
        p.cpu_cores as f64,
    );
}

fn storage_metrics(page: &mut Exposition, core: &Core) {
    let e = core.engine().stats();
    page.counter(
        "quiver_wal_commits_total",
        "Batches committed to the write-ahead log",
        e.commits as f64,
    );
    page.counter(
        "quiver_wal_bytes_written_total",
        "Bytes of markers appended to the write-ahead log",
        e.wal_bytes as f64,
    );
    page.counter(
        "quiver_wal_segments_started_total",
        "Write-ahead log segments started",
        e.wal_segments_started as f64,
    );
    page.counter(
        "quiver_wal_segments_sealed_total",
        "Write-ahead log segments sealed for the collector",
        e.wal_segments_sealed as f64,
    );
    page.counter(
        "quiver_wal_segments_collected_total",
        "Sealed write-ahead log segments copied into collection journals",
        e.wal_segments_collected as f64,
    );
    page.gauge(
        "quiver_wal_segments_pending",
        "Sealed write-ahead log segments waiting for the collector",
        e.wal_segments_pending as f64,
    );
    page.counter(
        "quiver_wal_throttled_writes_total",
        "Writes that waited for the write-ahead log throttle (--wal.throttle-when-pending)",
        e.wal_throttled as f64,
    );
    page.counter(
        "quiver_wal_syncs_total",
        "fdatasync calls on write-ahead log segments",
        e.wal_syncs as f64,
    );
    page.counter(
        "quiver_group_commit_batches_total",
        "Group-commit rounds that ran fdatasync",
        e.group_commit_rounds as f64,
    );
    page.counter(
        "quiver_group_commit_waits_total",
        "Writes that waited for a group commit (waitForSync)",
        e.group_commit_waits as f64,
    );
    page.histogram(
        "quiver_group_commit_fsync_time",
        "fdatasync time of one group-commit round [s]",
        &HistogramSnapshot {
            bounds: quiver_core::FSYNC_SECONDS_BUCKETS.to_vec(),
            count: e.fsync_buckets.iter().sum(),
            counts: e.fsync_buckets.clone(),
            sum: e.fsync_seconds,
        },
    );
    page.counter(
        "quiver_compaction_runs_total",
        "Compaction passes over a collection that rewrote datafiles",
        e.compaction_runs as f64,
    );
    page.counter(
        "quiver_compaction_files_total",
        "Datafiles compacted",
        e.compaction_files as f64,
    );
    page.counter(
        "quiver_compaction_bytes_reclaimed_total",
        "Bytes of dead data the compactor dropped",
        e.compaction_bytes_reclaimed as f64,
    );
    page.counter(
        "quiver_storage_checksum_failures_total",
        "Stored markers whose checksum failed when read (each read answered error 1000)",
        e.checksum_failures as f64,
    );
    page.gauge(
        "quiver_storage_disk_reserve_bytes",
        "Bytes of the data directory's disk reserve in place (0 while a full disk has it released)",
        if e.disk_reserve_held {
            e.disk_reserve_bytes as f64
        } else {
            0.0
        },
    );
    page.counter(
        "quiver_storage_disk_reserve_releases_total",
        "Times a full disk released the disk reserve for drops, truncates and the collector",
        e.disk_reserve_releases as f64,
    );
    page.gauge(
        "quiver_index_memory_bytes",
        "Memory of all indexes of all collections [bytes]",
        index_memory(core) as f64,
    );
}
