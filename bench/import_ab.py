#!/usr/bin/env python3
"""A/B of the server's cost of `POST /_api/import` for the Pokec relations (edges).

  bench/import_ab.py A_BIN B_BIN [--data DIR] [--lines N] [--rounds R] [--threads T] [--port P]

Per round, A then B, each a fresh server (`quiver serve` on a free port and a temporary data
directory): the edge collection `relations` of `quiver bench pokec load`'s schema (database
`pokec`, autoincrement keys; `_from`/`_to` are not looked up, so no `profiles` are needed), then
`quiver import --type jsonl --threads T` (B_BIN's tool, for both servers) of the first N lines
of DIR/relations.jsonl. Reported per run: wall seconds, the server's CPU time (utime + stime
from /proc/<pid>/stat, before and after the import) per document, and the server's peak RSS
(VmHWM), its peak anonymous and file-backed resident memory (RssAnon, RssFile sampled every
0.1 s during the import) and its RssAnon 5 s after the import (what stays: the index state and
what the allocator kept) and again `--settle` seconds after it (with the server CPU time spent
since the import ended: background work such as packing the primary index after the load). `--env-b KEY=VALUE` (repeatable) sets B's environment, so one binary
can be compared with itself under allocator settings. Then the medians per build and B/A. On a shared machine the CPU time per document is
the comparable figure; wall time depends on the load.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools_measure import call, cpu_seconds, status_kib  # noqa: E402


def hwm_kib(pid):
    return status_kib(pid, "VmHWM:")


def start(binary, scratch, env, port=0):
    log = open(os.path.join(scratch, "server.log"), "w")
    server = subprocess.Popen([binary, "--server.endpoint", f"tcp://127.0.0.1:{port}",
                               "--database.directory", os.path.join(scratch, "data")],
                              stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env})
    for _ in range(600):
        with open(os.path.join(scratch, "server.log")) as f:
            m = re.search(r"listening on tcp://127\.0\.0\.1:(\d+)", f.read())
        if m:
            return server, int(m.group(1))
        if server.poll() is not None:
            break
        time.sleep(0.1)
    raise SystemExit(f"{binary} did not start")


def run(binary, tool, relations, lines, threads, env, port=0, settle=5):
    scratch = tempfile.mkdtemp(prefix="import-ab.")
    server = None
    try:
        server, port = start(binary, scratch, env, port)
        call(port, "POST", "/_api/database", {"name": "pokec"})
        call(port, "POST", "/_db/pokec/_api/collection", {
            "name": "relations", "type": 3,
            "keyOptions": {"type": "autoincrement", "increment": 1, "offset": 0}})
        cpu0 = cpu_seconds(server.pid)
        peaks = {"RssAnon:": 0, "RssFile:": 0}
        done = threading.Event()

        def sample():
            while not done.is_set():
                for field in peaks:
                    peaks[field] = max(peaks[field], status_kib(server.pid, field))
                time.sleep(0.1)

        sampler = threading.Thread(target=sample)
        sampler.start()
        started = time.monotonic()
        subprocess.run([tool, "import", "--server.endpoint", f"tcp://127.0.0.1:{port}",
                        "--server.database", "pokec", "--collection", "relations",
                        "--file", relations, "--type", "jsonl", "--threads", str(threads),
                        "--progress", "false"],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.monotonic() - started
        cpu = cpu_seconds(server.pid) - cpu0
        done.set()
        sampler.join()
        got = call(port, "GET", "/_db/pokec/_api/collection/relations/count")["count"]
        if got != lines:
            raise SystemExit(f"{binary}: {got} relations imported, expected {lines}")
        time.sleep(5)
        settled = status_kib(server.pid, "RssAnon:") / 1024
        time.sleep(max(settle - 5, 0))
        return {"seconds": wall, "cpuUsPerDoc": cpu * 1e6 / lines,
                "cpuAfterSeconds": cpu_seconds(server.pid) - cpu0 - cpu,
                "lateRssAnonMiB": status_kib(server.pid, "RssAnon:") / 1024,
                "peakRssMiB": hwm_kib(server.pid) / 1024,
                "peakRssAnonMiB": peaks["RssAnon:"] / 1024,
                "peakRssFileMiB": peaks["RssFile:"] / 1024,
                "settledRssAnonMiB": settled}
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--data", default=os.path.expanduser("~/.cache/quiver-pokec/scale-0.1-seed-3"))
    p.add_argument("--lines", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--env-b", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--port", type=int, default=0, help="the servers' port (0: any free one)")
    p.add_argument("--settle", type=float, default=5,
                   help="seconds after the import to read RssAnon again (and the CPU spent since)")
    args = p.parse_args()
    env_b = dict(kv.split("=", 1) for kv in args.env_b)
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as part:
        with open(os.path.join(args.data, "relations.jsonl"), "rb") as src:
            n = 0
            for line in src:
                if n == args.lines:
                    break
                part.write(line)
                n += 1
    lines = n
    results = {"A": [], "B": []}
    try:
        for r in range(1, args.rounds + 1):
            for name, binary in (("A", args.a), ("B", args.b)):
                load = os.getloadavg()[0]
                env = env_b if name == "B" else {}
                one = run(binary, args.b, part.name, lines, args.threads, env, args.port,
                          args.settle)
                results[name].append(one)
                print(f"round {r} {name}: {one['seconds']:.1f} s, server "
                      f"{one['cpuUsPerDoc']:.2f} us CPU/document, peak RSS "
                      f"{one['peakRssMiB']:.0f} MiB (anon {one['peakRssAnonMiB']:.0f}, file "
                      f"{one['peakRssFileMiB']:.0f}; anon 5 s after "
                      f"{one['settledRssAnonMiB']:.0f}, {args.settle:.0f} s after "
                      f"{one['lateRssAnonMiB']:.0f}; CPU after the import "
                      f"{one['cpuAfterSeconds']:.2f} s), load {load:.1f}", flush=True)
    finally:
        os.unlink(part.name)
    print(f"{lines:,} relations, --threads {args.threads}, medians of {args.rounds} rounds:")
    print("| build | seconds | server CPU us / document | server peak RSS MiB "
          f"| peak RssAnon MiB | peak RssFile MiB | RssAnon 5 s after MiB "
          f"| RssAnon {args.settle:.0f} s after MiB | server CPU s after the import |")
    print("|---|---|---|---|---|---|---|---|---|")
    med = {k: {f: statistics.median(x[f] for x in v) for f in v[0]} for k, v in results.items()}
    for name in ("A", "B"):
        m = med[name]
        print(f"| {name} | {m['seconds']:.1f} | {m['cpuUsPerDoc']:.2f} | {m['peakRssMiB']:.0f} "
              f"| {m['peakRssAnonMiB']:.0f} | {m['peakRssFileMiB']:.0f} "
              f"| {m['settledRssAnonMiB']:.0f} | {m['lateRssAnonMiB']:.0f} "
              f"| {m['cpuAfterSeconds']:.2f} |")
    print(f"B/A server CPU per document: {med['B']['cpuUsPerDoc'] / med['A']['cpuUsPerDoc']:.2f}")


if __name__ == "__main__":
    sys.exit(main())
