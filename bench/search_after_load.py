#!/usr/bin/env python3
"""Queries right after a load, two binaries alternating (A/B): the segments a merge policy
leaves behind and what they cost the queries.

For each round and each binary: a fresh server imports the search corpus (bench/search.py)
into a collection linked to a view, waits until the view has it (`waitForSync`), waits
`--settle` seconds for merges in flight, counts the view's segments (its `meta.json`), times
a query without a search (`RETURN @q`, 20 × `--repeat` runs: the round trip) and
times the queries of bench/search.py (each once as warm-up, then `--repeat` times; the
figure is the median over a kind's queries and runs).

    python3 bench/search_after_load.py --binary A=path/to/main --binary B=path/to/build \\
        --docs 200000 --rounds 2
"""

import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import psycopg  # noqa: F401  (bench/search.py imports it for PostgreSQL)
except ImportError:
    sys.modules["psycopg"] = types.ModuleType("psycopg")
import search  # noqa: E402  (bench/search.py)

KINDS = {"term": search.TERMS, "phrase": search.PHRASES, "prefix": search.PREFIXES,
         "bm25": search.RANKED}


def segments(data_dir):
    counts = []
    for meta in glob.glob(f"{data_dir}/views/*/*/meta.json"):
        with open(meta) as f:
            counts.append(len(json.load(f)["segments"]))
    return sum(counts)


def one_run(binary, docs, batch, settle, repeat, port=0):
    tmp = tempfile.mkdtemp(prefix="search-after-load-")
    quiver = search.Quiver(binary, f"{tmp}/quiver", port)
    out = {}
    try:
        quiver.call("POST", "/_api/collection", {"name": "docs"})
        quiver.call("POST", "/_api/view", {"name": "v", "type": "arangosearch",
                                           "links": {"docs": search.VIEW_LINK}})
        quiver.import_docs("docs", docs, batch)
        quiver.query("FOR d IN v SEARCH d.text == 'x' OPTIONS {waitForSync: true} RETURN 1")
        time.sleep(settle)
        out["segments"] = segments(f"{tmp}/quiver")
        times = []
        for _ in range(repeat * 20):
            t = time.perf_counter()
            quiver.query("RETURN @q", {"q": "x"})
            times.append(time.perf_counter() - t)
        out["round trip"] = statistics.median(times) * 1e3
        for kind, queries in KINDS.items():
            times = []
            for q in queries:
                quiver.query(search.QUIVER_QUERIES[kind], {"q": q})
                for _ in range(repeat):
                    t = time.perf_counter()
                    quiver.query(search.QUIVER_QUERIES[kind], {"q": q})
                    times.append(time.perf_counter() - t)
            out[kind] = statistics.median(times) * 1e3
    finally:
        quiver.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", action="append", required=True, help="NAME=PATH, in run order")
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--port", type=int, default=0, help="the servers' port (default: any free one)")
    args = ap.parse_args()
    binaries = [b.split("=", 1) for b in args.binary]
    docs = search.corpus(args.docs)
    results = {name: [] for name, _ in binaries}
    for r in range(args.rounds):
        for name, path in binaries:
            out = one_run(path, docs, args.batch, args.settle, args.repeat, args.port)
            print(f"round {r + 1} {name}: " + " ".join(
                f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in out.items()),
                flush=True)
            results[name].append(out)
    columns = ["round trip", *KINDS]
    print("\n| binary | segments | " + " | ".join(f"{k} ms" for k in columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for name, runs in results.items():
        seg = statistics.median(r["segments"] for r in runs)
        cells = " | ".join(f"{statistics.median(r[k] for r in runs):.2f}" for k in columns)
        print(f"| {name} | {seg:g} | {cells} |")


if __name__ == "__main__":
    main()
