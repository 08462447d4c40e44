#!/usr/bin/env python3
"""A/B of the mapped datafile pages a full pass leaves in the server's resident set.

  bench/mapped_pass_ab.py A_BIN B_BIN --data DIR [--limit 64m] [--rounds 3] [--runs 3]
                          [--queries aggregation,projection,...]

DIR is a data directory holding database `pokec` (`quiver bench pokec load`); it is reused,
one server at a time. Per round, A then B, each started on DIR (port 0) with
`--storage.mapped-memory-limit LIMIT`: after startup it runs each query RUNS times, sampling
the server's `RssFile` (/proc/<pid>/status) every 5 ms, and records per query the highest
`RssFile` seen while it ran minus the one before, and the server's CPU time (utime + stime from
/proc/<pid>/stat) per run. Then the medians per build and query and B/A. On a shared machine
the server's CPU time is the comparable speed figure, not the wall time.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools_measure import call, cpu_seconds, status_kib  # noqa: E402

QUERIES = {
    # The benchmark's aggregation (and warmup): a parallel storage-order scan.
    "aggregation": "FOR x IN profiles COLLECT age = x.AGE WITH COUNT INTO counter "
                   "RETURN {age: age, amount: counter}",
    # A full pass returning little: a storage-order scan of a projection.
    "projection": "FOR x IN profiles FILTER x.AGE == 1000 RETURN x._key",
    # A full pass over whole documents: the key-order scan.
    "whole documents": "FOR x IN profiles FILTER x.AGE == 1000 RETURN x",
    # In key order: the key-range scan.
    "sorted by key": "FOR x IN profiles SORT x._key FILTER x.AGE == 1000 RETURN x",
}


def start(binary, data, limit, scratch):
    log_path = os.path.join(scratch, "server.log")
    log = open(log_path, "w")
    server = subprocess.Popen([binary, "--server.endpoint", "tcp://127.0.0.1:0",
                               "--database.directory", data,
                               "--storage.mapped-memory-limit", limit],
                              stdout=log, stderr=subprocess.STDOUT)
    for _ in range(1200):
        with open(log_path) as f:
            m = re.search(r"listening on tcp://127\.0\.0\.1:(\d+)", f.read())
        if m:
            return server, int(m.group(1))
        if server.poll() is not None:
            break
        time.sleep(0.1)
    raise SystemExit(f"{binary} did not start")


def query(port, aql):
    reply = call(port, "POST", "/_db/pokec/_api/cursor", {"query": aql, "batchSize": 100000})
    if reply.get("hasMore"):
        raise SystemExit("result larger than one batch")
    return reply["result"]


def peak_rss_file(pid, work):
    """Runs work(); returns (its result, the highest RssFile KiB seen meanwhile)."""
    peak = [status_kib(pid, "RssFile:")]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], status_kib(pid, "RssFile:"))
            time.sleep(0.005)

    t = threading.Thread(target=sample)
    t.start()
    try:
        result = work()
    finally:
        done.set()
        t.join()
    peak[0] = max(peak[0], status_kib(pid, "RssFile:"))
    return result, peak[0]


def run(binary, data, limit, runs):
    scratch = tempfile.mkdtemp(prefix="mapped-pass-ab.")
    server, port = start(binary, data, limit, scratch)
    out = {}
    try:
        time.sleep(2)  # startup's own passes released, the maintenance thread idle
        for name, aql in QUERIES.items():
            for _ in range(runs):
                before = status_kib(server.pid, "RssFile:")
                cpu0 = cpu_seconds(server.pid)
                result, peak = peak_rss_file(server.pid, lambda: query(port, aql))
                cpu = cpu_seconds(server.pid) - cpu0
                out.setdefault(name, []).append({
                    "rssFileBeforeMiB": before / 1024, "rssFilePeakMiB": peak / 1024,
                    "cpuSeconds": cpu, "rows": len(result)})
    finally:
        server.terminate()
        server.wait()
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--data", required=True)
    p.add_argument("--limit", default="64m")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--queries", help="comma-separated names of QUERIES (default: all)")
    args = p.parse_args()
    if args.queries:
        wanted = args.queries.split(",")
        for q in list(QUERIES):
            if q not in wanted:
                del QUERIES[q]
    results = {"A": [], "B": []}
    for r in range(args.rounds):
        for name, binary in (("A", args.a), ("B", args.b)):
            got = run(binary, args.data, args.limit, args.runs)
            results[name].append(got)
            for q, runs in got.items():
                print(f"round {r} {name} {q}: " + ", ".join(
                    f"RssFile {x['rssFileBeforeMiB']:.0f}->{x['rssFilePeakMiB']:.0f} MiB "
                    f"cpu {x['cpuSeconds']:.2f}s" for x in runs), flush=True)
    print(f"\nlimit {args.limit}; medians over {args.rounds} rounds x {args.runs} runs:")
    print("| query | A peak RssFile MiB | B peak RssFile MiB | A server CPU s | B server CPU s | B/A CPU |")
    print("|---|---|---|---|---|---|")
    for q in QUERIES:
        med = {}
        for name in ("A", "B"):
            runs = [x for rnd in results[name] for x in rnd[q]]
            med[name] = (statistics.median(x["rssFilePeakMiB"] for x in runs),
                         statistics.median(x["cpuSeconds"] for x in runs))
        ratio = med["B"][1] / med["A"][1] if med["A"][1] else float("nan")
        print(f"| {q} | {med['A'][0]:.0f} | {med['B'][0]:.0f} | {med['A'][1]:.2f} | "
              f"{med['B'][1]:.2f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
