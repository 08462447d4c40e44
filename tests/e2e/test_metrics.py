"""Observability against the real binary: the metrics page parsed with prometheus_client's
text-format parser, counters that move with requests, statistics, log entries and levels, and
AQL query tracking (also for queries run through x-arango-async), through raw HTTP and
python-arango."""

import math
import time

from prometheus_client.parser import text_string_to_metric_families

from conftest import Server, unique


def scrape(http, path="/_admin/metrics/v2"):
    r = http.get(path)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    return r.text


def families(text):
    """Every metric family of a page, checked: each has HELP and TYPE, and each histogram's
    buckets are cumulative, end with +Inf, and +Inf equals the count."""
    helped, typed = set(), {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helped.add(line.split(" ")[2])
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            typed[name] = kind
    out = {}
    for family in text_string_to_metric_families(text):
        # The parser names a counter family without its `_total`.
        names = {family.name, family.name + "_total"}
        assert names & helped, f"{family.name} has no HELP"
        assert names & typed.keys(), f"{family.name} has no TYPE"
        assert family.documentation, f"{family.name} has an empty HELP"
        assert family.samples, f"{family.name} has no samples"
        if family.type == "histogram":
            buckets = [s for s in family.samples if s.name.endswith("_bucket")]
            bounds = [float(s.labels["le"]) for s in buckets]
            counts = [s.value for s in buckets]
            assert bounds == sorted(bounds) and math.isinf(bounds[-1]), family.name
            assert counts == sorted(counts), f"{family.name} buckets not cumulative"
            count = next(s.value for s in family.samples if s.name.endswith("_count"))
            assert counts[-1] == count, f"{family.name}: +Inf bucket != count"
        out[family.name] = family
    # Every TYPE line became a family.
    assert len(out) == len(typed), set(typed) - {n for f in out for n in (f, f + "_total")}
    return out


def value(fams, name, suffix=""):
    fam = fams[name.removesuffix("_total")] if name.endswith("_total") else fams[name]
    return next(s.value for s in fam.samples if s.name == name + suffix)


def test_scrape_parses_and_counters_move(http, db):
    before = families(scrape(http))
    for name in [
        "arangodb_http_request_statistics_total_requests_total",
        "arangodb_client_connection_statistics_client_connections",
        "arangodb_client_connection_statistics_bytes_received",
        "arangodb_aql_query_time",
        "arangodb_transactions_started_total",
        "arangodb_process_statistics_resident_set_size",
        "arangodb_server_statistics_physical_memory",
        "quiver_wal_bytes_written_total",
        "quiver_group_commit_fsync_time",
        "quiver_compaction_runs_total",
        "quiver_index_memory_bytes",
    ]:
        assert name.removesuffix("_total") in before, name
    col = db.create_collection(unique())
    for i in range(5):
        col.insert({"i": i}, sync=True)
    http.delete("/_api/version")  # a 405 is a request too
    db.aql.execute("FOR d IN @@c RETURN d", bind_vars={"@c": col.name})
    after = families(db.metrics())
    moved = [
        ("arangodb_http_request_statistics_total_requests_total", 7),
        ("arangodb_http_request_statistics_http_post_requests_total", 6),
        ("arangodb_http_request_statistics_http_delete_requests_total", 1),
        ("arangodb_http_request_statistics_user_requests_total", 7),
        ("arangodb_aql_all_query_total", 1),
        ("quiver_group_commit_waits_total", 5),
    ]
    for name, at_least in moved:
        assert value(after, name) - value(before, name) >= at_least, name
    rt = "arangodb_client_connection_statistics_request_time"
    assert value(after, rt, "_count") - value(before, rt, "_count") >= 7
    assert value(after, "quiver_wal_bytes_written_total") > value(before, "quiver_wal_bytes_written_total")
    assert value(after, "arangodb_client_connection_statistics_client_connections") >= 1
    # `/_admin/metrics` and `/v2` are the same page.
    assert set(families(scrape(http, "/_admin/metrics"))) == set(after)


def test_statistics_through_python_arango(sys_db, http):
    before = sys_db.statistics()
    http.get("/_api/version")
    http.get("/_api/version")
    after = sys_db.statistics()
    assert after["http"]["requestsGet"] >= before["http"]["requestsGet"] + 2
    assert after["system"]["numberOfThreads"] >= 1
    assert after["server"]["uptime"] > 0
    described = sys_db.statistics(description=True)
    for figure in described["figures"]:
        assert figure["identifier"] in after[figure["group"]], figure
        if figure["type"] == "distribution":
            dist = after[figure["group"]][figure["identifier"]]
            assert len(dist["counts"]) == len(figure["cuts"]) + 1
            assert sum(dist["counts"]) == dist["count"]


def test_log_entries_and_levels_through_python_arango(sys_db, http):
    levels = sys_db.log_levels()
    # conftest starts the server with `--log.level warning`, which is topic general's.
    assert levels["general"] == "WARNING" and levels["requests"] == "INFO"
    try:
        new = sys_db.set_log_levels(requests="DEBUG")
        assert new["requests"] == "DEBUG"
        marker = unique("marker")
        http.get(f"/_api/version?{marker}=1")
        # The request log line of that request is now in the entries (at debug level).
        deadline = time.time() + 5
        while True:
            found = sys_db.read_log_entries(upto="debug", search=marker)
            if found["total"] >= 1 or time.time() > deadline:
                break
            time.sleep(0.1)
        assert found["total"] >= 1, found
        entry = found["messages"][0]
        assert entry["topic"] == "requests" and entry["level"] == "DEBUG"
        assert set(entry) == {"id", "topic", "level", "date", "message"}
    finally:
        assert sys_db.set_log_levels(requests="INFO")["requests"] == "INFO"
    # Back at info, requests are not logged any more.
    marker = unique("quiet")
    http.get(f"/_api/version?{marker}=1")
    assert sys_db.read_log_entries(upto="trace", search=marker)["total"] == 0
    # The startup line is an info entry of topic startup.
    startup = sys_db.read_log_entries(search="ready for business")
    assert startup["total"] >= 1 and startup["messages"][0]["topic"] == "startup"
    r = http.get("/_admin/log/entries?upto=shouting")
    assert r.status_code == 400 and r.json()["errorNum"] == 400


def test_query_tracking_current_and_slow_including_async(db, http):
    props = db.aql.tracking()
    assert props["enabled"] is True
    try:
        db.aql.set_tracking(slow_query_threshold=0.5, track_bind_vars=True)
        assert db.aql.tracking()["slow_query_threshold"] == 0.5
        # A query queued with x-arango-async shows as running, then as slow.
        r = http.post(
            f"/_db/{db.name}/_api/cursor",
            json={"query": "RETURN SLEEP(1.5)"},
            headers={"x-arango-async": "store"},
        )
        assert r.status_code == 202
        job = r.headers["x-arango-async-id"]
        deadline = time.time() + 5
        running = []
        while not running and time.time() < deadline:
            running = [q for q in db.aql.queries() if "SLEEP(1.5)" in q["query"]]
            time.sleep(0.05)
        assert running, "the async query never showed as running"
        assert running[0]["state"] == "executing"
        metrics = families(db.metrics())
        assert value(metrics, "arangodb_aql_current_query") >= 1
        while http.put(f"/_db/{db.name}/_api/job/{job}").status_code == 204:
            time.sleep(0.1)
        slow = [q for q in db.aql.slow_queries() if "SLEEP(1.5)" in q["query"]]
        assert slow and slow[0]["runtime"] >= 1.4, slow
        metrics = families(db.metrics())
        assert value(metrics, "arangodb_aql_slow_query_time", "_count") >= 1
        db.aql.clear_slow_queries()
        assert not db.aql.slow_queries()
    finally:
        db.aql.set_tracking(slow_query_threshold=props["slow_query_threshold"])


def test_log_options_json_file_and_metrics_switch(tmp_path):
    log_file = tmp_path / "quiver.log"
    srv = Server(
        tmp_path / "data",
        extra_args=[
            f"--log.output=file://{log_file}",
            "--log.use-json-format=true",
            "--log.level=requests=debug",
            "--server.export-metrics-api=false",
            "--query.slow-threshold=0.25",
        ],
    ).start()
    try:
        client = srv.client()
        sys_db = client.db("_system", username="root", password="")
        assert sys_db.log_levels()["requests"] == "DEBUG"
        assert sys_db.aql.tracking()["slow_query_threshold"] == 0.25
        import requests

        r = requests.get(srv.url + "/_admin/metrics", auth=("root", ""), timeout=10)
        assert r.status_code == 404
    finally:
        srv.stop()
    import json

    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert any(l["topic"] == "startup" for l in lines)
    requests_logged = [l for l in lines if l["topic"] == "requests"]
    assert requests_logged and requests_logged[0]["level"] == "DEBUG"
    assert set(lines[0]) == {"time", "pid", "level", "topic", "message"}
