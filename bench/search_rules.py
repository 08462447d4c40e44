"""The view loop rules side by side in one server: each query of bench/search.py runs with the
optimizer rules `arangosearch-constrained-sort` and `no-document-materialization-arangosearch`
on and off, alternating, on the same documents in the same minutes (docs/benchmarks/search.md).

    python3 bench/search_rules.py --binary path/to/quiver [--docs 200000] [--repeat 3]

Needs psycopg only because bench/search.py imports it (run it with the venv bench/search.sh
makes).
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import search  # noqa: E402  (bench/search.py)

RULES_OFF = ["-arangosearch-constrained-sort", "-no-document-materialization-arangosearch"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    docs = search.corpus(args.docs)
    tmp = tempfile.mkdtemp(prefix="search-rules-")
    quiver = search.Quiver(args.binary, f"{tmp}/quiver")
    try:
        quiver.call("POST", "/_api/collection", {"name": "docs"})
        quiver.call("POST", "/_api/view", {"name": "v", "type": "arangosearch",
                                           "links": {"docs": search.VIEW_LINK}})
        quiver.import_docs("docs", docs, 10_000)
        quiver.wait_view("v")
        time.sleep(2)
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        print(f"# {len(docs):,} documents; load average {load}")

        def run(aql, q, rules):
            res = quiver.call("POST", "/_api/cursor", {
                "query": aql, "bindVars": {"q": q}, "batchSize": 1000,
                "options": {"optimizer": {"rules": rules}}})
            return res["result"]

        kinds = {"term": search.TERMS, "phrase": search.PHRASES,
                 "prefix": search.PREFIXES, "bm25": search.RANKED}
        print("| query (median ms) | rules on | rules off | off / on |")
        print("|---|---|---|---|")
        for kind, queries in kinds.items():
            aql = search.QUIVER_QUERIES[kind]
            lat = {"on": [], "off": []}
            for q in queries:
                on, off = run(aql, q, []), run(aql, q, RULES_OFF)
                if on != off:
                    raise RuntimeError(f"{kind} {q!r}: {on} != {off}")
                for _ in range(args.repeat):
                    for name, rules in (("on", []), ("off", RULES_OFF)):
                        t = time.perf_counter()
                        run(aql, q, rules)
                        lat[name].append(time.perf_counter() - t)
            on = statistics.median(lat["on"]) * 1e3
            off = statistics.median(lat["off"]) * 1e3
            print(f"| {kind} | {on:.2f} | {off:.2f} | {off / on:.1f}× |")
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        print(f"# load average at the end {load}")
    finally:
        quiver.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
