#!/usr/bin/env python3
"""A/B of the server's cost of `PUT /_api/replication/restore-data` for the Pokec relations.

  bench/restore_ab.py A_BIN B_BIN [--data DIR] [--lines N] [--rounds R] [--threads T] [--envelope]

Once: a server of B_BIN gets the edge collection `relations` of `quiver bench pokec load`'s
schema (database `pokec`, autoincrement keys) and the first N lines of DIR/relations.jsonl
(`quiver import`), and `quiver dump` writes them uncompressed (with `--envelope`, in the
enveloped format before 3.8). Per round, A then B, each a fresh server on a temporary data
directory: `quiver restore --create-database true --threads T` (B_BIN's tool, for both
servers) of that dump. Reported per run: wall seconds, documents/s, the server's CPU time
(utime + stime from /proc/<pid>/stat, before and after the restore) per document and its peak
RSS (VmHWM); then the medians per build and B/A. On a shared machine the CPU time per document
is the comparable figure; wall time depends on the load.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from import_ab import hwm_kib, start  # noqa: E402
from tools_measure import call, cpu_seconds  # noqa: E402


def endpoint(port):
    return f"tcp://127.0.0.1:{port}"


def make_dump(binary, relations, out, envelope):
    scratch = tempfile.mkdtemp(prefix="restore-ab.")
    server = None
    try:
        server, port = start(binary, scratch)
        call(port, "POST", "/_api/database", {"name": "pokec"})
        call(port, "POST", "/_db/pokec/_api/collection", {
            "name": "relations", "type": 3,
            "keyOptions": {"type": "autoincrement", "increment": 1, "offset": 0}})
        subprocess.run([binary, "import", "--server.endpoint", endpoint(port),
                        "--server.database", "pokec", "--collection", "relations",
                        "--file", relations, "--type", "jsonl", "--progress", "false"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([binary, "dump", "--server.endpoint", endpoint(port),
                        "--server.database", "pokec", "--output-directory", out,
                        "--compress-output", "false", "--envelope", str(envelope).lower(),
                        "--overwrite", "true"],
                       check=True, stdout=subprocess.DEVNULL)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def run(binary, tool, dump, lines, threads):
    scratch = tempfile.mkdtemp(prefix="restore-ab.")
    server = None
    try:
        server, port = start(binary, scratch)
        cpu0 = cpu_seconds(server.pid)
        started = time.monotonic()
        subprocess.run([tool, "restore", "--server.endpoint", endpoint(port),
                        "--server.database", "pokec", "--create-database", "true",
                        "--input-directory", dump, "--threads", str(threads),
                        "--progress", "false"],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.monotonic() - started
        cpu = cpu_seconds(server.pid) - cpu0
        got = call(port, "GET", "/_db/pokec/_api/collection/relations/count")["count"]
        if got != lines:
            raise SystemExit(f"{binary}: {got} relations restored, expected {lines}")
        return {"seconds": wall, "docsPerSecond": lines / wall,
                "cpuUsPerDoc": cpu * 1e6 / lines, "peakRssMiB": hwm_kib(server.pid) / 1024}
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
    p.add_argument("--envelope", action="store_true")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="restore-ab-dump.")
    try:
        part = os.path.join(work, "relations.jsonl")
        with open(part, "wb") as dst, open(os.path.join(args.data, "relations.jsonl"), "rb") as src:
            n = 0
            for line in src:
                if n == args.lines:
                    break
                dst.write(line)
                n += 1
        lines = n
        dump = os.path.join(work, "dump")
        make_dump(args.b, part, dump, args.envelope)
        results = {"A": [], "B": []}
        for r in range(1, args.rounds + 1):
            for name, binary in (("A", args.a), ("B", args.b)):
                load = os.getloadavg()[0]
                one = run(binary, args.b, dump, lines, args.threads)
                results[name].append(one)
                print(f"round {r} {name}: {one['seconds']:.1f} s, {one['docsPerSecond']:,.0f} "
                      f"documents/s, server {one['cpuUsPerDoc']:.2f} us CPU/document, peak RSS "
                      f"{one['peakRssMiB']:.0f} MiB, load {load:.1f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    kind = "enveloped" if args.envelope else "plain"
    print(f"{lines:,} relations ({kind} dump), --threads {args.threads}, "
          f"medians of {args.rounds} rounds:")
    print("| build | seconds | documents/s | server CPU us / document | server peak RSS MiB |")
    print("|---|---|---|---|---|")
    med = {k: {f: statistics.median(x[f] for x in v) for f in v[0]} for k, v in results.items()}
    for name in ("A", "B"):
        m = med[name]
        print(f"| {name} | {m['seconds']:.1f} | {m['docsPerSecond']:,.0f} | "
              f"{m['cpuUsPerDoc']:.2f} | {m['peakRssMiB']:.0f} |")
    print(f"B/A server CPU per document: {med['B']['cpuUsPerDoc'] / med['A']['cpuUsPerDoc']:.2f}")


if __name__ == "__main__":
    sys.exit(main())
