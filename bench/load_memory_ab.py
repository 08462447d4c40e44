#!/usr/bin/env python3
"""A/B of the server's memory over a whole `quiver bench pokec load` (profiles and relations).

  bench/load_memory_ab.py A_BIN B_BIN --data DIR [--rounds R] [--connections C] [--port P]
                          [--settle S]

Per round, A then B (`--b-first`: B then A; the order reverses every other round), each a fresh server (`quiver serve`
on port P and a temporary data directory, deleted afterwards): `quiver bench pokec load --dir
DIR --connections C` (A_BIN's tool for both) while `VmRSS`, `RssAnon` and `RssFile` of
/proc/PID/status are sampled every 0.25 s; then the same figures 5 s and S s after the load,
and the server's CPU time (utime + stime of /proc/PID/stat) during the load and after it (not
counting the reading of `quiver_index_memory_bytes` from /_admin/metrics/v2 at the load's end).
Prints each run and the medians per build. The full-scale set needs about 8.3 GB of disk per run.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools_measure import AUTH, cpu_seconds, status_kib  # noqa: E402

FIELDS = ("VmRSS:", "RssAnon:", "RssFile:")


def mib(pid, field):
    return status_kib(pid, field) / 1024


def index_mib(port):
    """The server's `quiver_index_memory_bytes` (every collection's indexes), in MiB."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/_admin/metrics/v2",
                                 headers={"Authorization": AUTH})
    with urllib.request.urlopen(req, timeout=120) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("quiver_index_memory_bytes"):
                return float(line.split()[-1]) / 2**20
    return float("nan")


def run(binary, tool, data, connections, port, settle):
    scratch = tempfile.mkdtemp(prefix="load-memory-ab.", dir=os.path.expanduser("~"))
    log = open(os.path.join(scratch, "server.log"), "w")
    server = subprocess.Popen([binary, "--server.endpoint", f"tcp://127.0.0.1:{port}",
                               "--database.directory", os.path.join(scratch, "data")],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_api/version", timeout=1)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.1)
        peaks = dict.fromkeys(FIELDS, 0.0)
        done = threading.Event()

        def sample():
            while not done.is_set():
                for field in FIELDS:
                    peaks[field] = max(peaks[field], mib(server.pid, field))
                time.sleep(0.25)

        sampler = threading.Thread(target=sample)
        cpu0 = cpu_seconds(server.pid)
        started = time.monotonic()
        sampler.start()
        subprocess.run([tool, "bench", "pokec", "load", "--dir", data,
                        "--endpoint", f"tcp://127.0.0.1:{port}",
                        "--connections", str(connections)],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.monotonic() - started
        cpu = cpu_seconds(server.pid) - cpu0
        end = {f: mib(server.pid, f) for f in FIELDS}
        cpu_index = cpu_seconds(server.pid)
        index = index_mib(port)
        cpu0 += cpu_seconds(server.pid) - cpu_index
        time.sleep(5)
        after5 = mib(server.pid, "RssAnon:")
        time.sleep(max(settle - 5, 0))
        done.set()
        sampler.join()
        return {"seconds": wall, "loadCpu": cpu,
                "cpuAfter": cpu_seconds(server.pid) - cpu0 - cpu,
                "peakRss": peaks["VmRSS:"], "peakAnon": peaks["RssAnon:"],
                "peakFile": peaks["RssFile:"], "endAnon": end["RssAnon:"],
                "anon5": after5, "anonLate": mib(server.pid, "RssAnon:"), "index": index}
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--data", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--connections", type=int, default=25)
    p.add_argument("--port", type=int, default=19300)
    p.add_argument("--settle", type=float, default=20)
    p.add_argument("--b-first", action="store_true", help="B before A in the first round")
    args = p.parse_args()
    results = {"A": [], "B": []}
    cols = ("seconds", "loadCpu", "peakRss", "peakAnon", "peakFile", "endAnon", "anon5",
            "anonLate", "cpuAfter", "index")
    for r in range(1, args.rounds + 1):
        order = (("A", args.a), ("B", args.b))
        for name, binary in (order if (r % 2 == 1) != args.b_first else order[::-1]):
            load = os.getloadavg()[0]
            one = run(binary, args.a, args.data, args.connections, args.port, args.settle)
            results[name].append(one)
            print(f"round {r} {name} (load {load:.1f}): "
                  + ", ".join(f"{c} {one[c]:.1f}" for c in cols), flush=True)
    print(f"medians of {args.rounds} rounds; MiB, seconds; RssAnon at the end of the load, "
          f"5 s and {args.settle:.0f} s after it; server CPU s during and after the load; "
          f"index: quiver_index_memory_bytes at the end of the load")
    print("| build | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name in ("A", "B"):
        m = {c: statistics.median(x[c] for x in results[name]) for c in cols}
        print(f"| {name} | " + " | ".join(f"{m[c]:,.1f}" for c in cols) + " |")


if __name__ == "__main__":
    sys.exit(main())
