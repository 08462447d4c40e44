#!/usr/bin/env python3
"""Times one AQL query against running quiver servers, side by side (docs/benchmarks/aggregation.md).

    bench/aggregation.py --runs N [--query AQL] [--db pokec] NAME=PORT:PID [NAME=PORT:PID ...]

Each server gets one warmup run, then the servers take turns, one run each, N rounds, so a
change in machine load hits all of them alike. Reports per server the median and minimum
wall time and the median server CPU time (utime+stime of PID from /proc, 10 ms ticks), and
checks that every server returned the same result.
"""
import argparse, json, os, statistics, sys, time, urllib.request

AGG = ("FOR x IN profiles COLLECT age = x.AGE WITH COUNT INTO counter "
       "RETURN {age: age, amount: counter}")
TICK = os.sysconf("SC_CLK_TCK")


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def run(port, db, query):
    body = json.dumps({"query": query, "batchSize": 100000}).encode()
    # Root's empty password (HTTP Basic): builds without authentication ignore the header.
    req = urllib.request.Request(f"http://127.0.0.1:{port}/_db/{db}/_api/cursor", body,
                                 {"Content-Type": "application/json",
                                  "Authorization": "Basic cm9vdDo="})
    with urllib.request.urlopen(req, timeout=600) as r:
        reply = json.load(r)
    if reply.get("hasMore"):
        sys.exit("result larger than one batch")
    return reply["result"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--query", default=AGG)
    ap.add_argument("--db", default="pokec")
    ap.add_argument("servers", nargs="+")
    a = ap.parse_args()
    servers = []
    for s in a.servers:
        name, rest = s.split("=")
        port, pid = rest.split(":")
        servers.append((name, int(port), int(pid)))
    results, walls, cpus = {}, {s[0]: [] for s in servers}, {s[0]: [] for s in servers}
    for name, port, pid in servers:
        results[name] = run(port, a.db, a.query)
    for _ in range(a.runs):
        for name, port, pid in servers:
            c0, t0 = cpu(pid), time.perf_counter()
            res = run(port, a.db, a.query)
            walls[name].append((time.perf_counter() - t0) * 1000)
            cpus[name].append((cpu(pid) - c0) * 1000)
            if res != results[name]:
                sys.exit(f"{name}: result changed between runs")
    ref = servers[0][0]
    canon = lambda r: sorted(json.dumps(x, sort_keys=True) for x in r)
    for name in results:
        if canon(results[name]) != canon(results[ref]):
            sys.exit(f"{name} and {ref} disagree")
    print(f"load average {open('/proc/loadavg').read().split()[:3]}, {a.runs} runs, "
          f"{len(results[ref])} result rows")
    print(f"{'server':<12} {'wall med ms':>12} {'wall min ms':>12} {'cpu med ms':>11}")
    for name, _, _ in servers:
        print(f"{name:<12} {statistics.median(walls[name]):>12.1f} {min(walls[name]):>12.1f} "
              f"{statistics.median(cpus[name]):>11.0f}")


if __name__ == "__main__":
    main()
