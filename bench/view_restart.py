#!/usr/bin/env python3
"""Start-up of a server with an arangosearch view, two binaries side by side (A, B): the
time and the server's CPU time from the process start until a `waitForSync` search over the
view answers with every document, i.e. until the view is back in line with its collection
after a clean restart (a binary that rebuilds views at start-up reindexes the collection; one
that catches up re-feeds only what changed).

Each binary gets its own data directory holding the first `--docs` lines of the search
corpus (bench/search.py `corpus`: lines of /usr/share/doc) in collection `docs`, linked to
view `v` with the text_en analyzer, built once and stopped cleanly. Then, for `--rounds`
rounds, A and B are started alternately on their directories, measured, and stopped cleanly.
CPU time is the server's utime+stime (/proc/<pid>/stat) when the search answers: every
cycle of its start-up on every core, whatever else runs on the machine.

    bench/view_restart.py --binary-a "$MAIN_BIN" \\
        --binary-b target/release/quiver [--docs 200000] [--rounds 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search import VIEW_LINK, Quiver, corpus  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields 14 and 15 of stat (utime, stime), counted after the command name.
    return (int(fields[11]) + int(fields[12])) / TICKS


def prepare(binary, data_dir, docs):
    q = Quiver(binary, data_dir)
    try:
        q.call("POST", "/_api/collection", {"name": "docs"})
        q.call("POST", "/_api/view", {"name": "v", "type": "arangosearch",
                                      "links": {"docs": VIEW_LINK}})
        q.import_docs("docs", docs, 10_000)
        indexed = q.wait_view("v")
        if indexed != len(docs):
            raise RuntimeError(f"the view holds {indexed} documents, not {len(docs)}")
    finally:
        q.stop()


def start_until_searchable(binary, data_dir, expected):
    t0 = time.perf_counter()
    q = Quiver(binary, data_dir)
    try:
        up = time.perf_counter() - t0
        indexed = q.wait_view("v")
        wall = time.perf_counter() - t0
        cpu = cpu_seconds(q.proc.pid)
        if indexed != expected:
            raise RuntimeError(f"the view holds {indexed} documents, not {expected}")
        return up, wall, cpu
    finally:
        q.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary-a", required=True)
    ap.add_argument("--binary-b", required=True)
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    docs = corpus(args.docs)
    load = lambda: " ".join(open("/proc/loadavg").read().split()[:3])
    print(f"# {len(docs):,} documents; {os.cpu_count()} cores; load average {load()}",
          flush=True)
    tmp = tempfile.mkdtemp(prefix="view-restart-bench-")
    binaries = {"A": args.binary_a, "B": args.binary_b}
    for name, binary in binaries.items():
        prepare(binary, f"{tmp}/{name}", docs)
    results = {name: [] for name in binaries}
    for r in range(args.rounds):
        for name, binary in binaries.items():
            up, wall, cpu = start_until_searchable(binary, f"{tmp}/{name}", len(docs))
            results[name].append((up, wall, cpu))
            print(f"round {r + 1} {name}: answering after {up:.2f} s, view complete after "
                  f"{wall:.2f} s, server CPU {cpu:.2f} s (load average {load()})", flush=True)
    print()
    print("| binary | answering (median s) | view complete (median s) | server CPU (median s) |")
    print("|---|---|---|---|")
    med = {}
    for name in binaries:
        up, wall, cpu = (statistics.median(x[i] for x in results[name]) for i in range(3))
        med[name] = (wall, cpu)
        print(f"| {name} | {up:.2f} | {wall:.2f} | {cpu:.2f} |")
    print(f"\nB/A: view complete {med['B'][0] / med['A'][0]:.3f}, "
          f"server CPU {med['B'][1] / med['A'][1]:.3f}")


if __name__ == "__main__":
    main()
