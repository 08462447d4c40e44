#!/usr/bin/env python3
"""Writes with and without a linked arangosearch view, two binaries alternating (A/B).

For each round and each binary: a fresh server imports the search corpus (bench/search.py)
into a collection without a view, then the same documents into a collection linked to a view
(`{"fields": {"text": {"analyzers": ["text_en"]}}}`), and waits until the view has them all
(`SEARCH … OPTIONS {waitForSync: true}`). Reported per phase: wall seconds and the server's
CPU seconds (utime + stime of the whole process from /proc/<pid>/stat), which the machine's
other load disturbs far less than wall time.

The client's own CPU competes with the server on a small machine. `--client json` (the
default) encodes each import request while the clock runs, as bench/search.py does;
`--client encoded` encodes every request body before the clock starts and sends them over
one kept-alive connection, so the phases measure the server with a lighter client.
`--api document` writes through `POST /_api/document` (arrays, `silent`) instead of
`POST /_api/import`.

`--view-properties NAME=JSON` adds properties to the view that run NAME creates (say
`B={"consolidationIntervalMsec": 0}`), so that one binary can be compared with itself under
other view settings.

    python3 bench/search_writes.py --binary A=path/to/main --binary B=path/to/build \\
        --docs 200000 --rounds 3 [--client encoded] [--port 19500]
"""

import argparse
import http.client
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
    # Only PostgreSQL's side of bench/search.py uses it; this script starts no PostgreSQL.
    sys.modules["psycopg"] = types.ModuleType("psycopg")
import search  # noqa: E402  (bench/search.py)

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of the line; fields[0] here is field 3.
    return (int(fields[11]) + int(fields[12])) / TICKS


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def encoded_batches(docs, batch, api="import"):
    """The request bodies of `docs`, `batch` documents each, encoded once: JSON lines for
    `POST /_api/import`, an array for `POST /_api/document`."""
    out = []
    for start in range(0, len(docs), batch):
        items = [{"_key": str(i), "text": docs[i]}
                 for i in range(start, min(len(docs), start + batch))]
        if api == "import":
            out.append("\n".join(json.dumps(d) for d in items).encode())
        else:
            out.append(json.dumps(items).encode())
    return out


def send_encoded(quiver, collection, bodies, api="import"):
    """Sends pre-encoded bodies over one kept-alive connection."""
    if api == "import":
        path = f"/_api/import?collection={collection}&type=documents"
    else:
        path = f"/_api/document?collection={collection}&silent=true"
    conn = http.client.HTTPConnection("127.0.0.1", quiver.port, timeout=3600)
    try:
        for body in bodies:
            conn.request("POST", path, body=body, headers={"content-type": "application/json"})
            resp = conn.getresponse()
            res = json.loads(resp.read() or b"null")
            if resp.status >= 300 or (api == "import" and res.get("errors")) or (
                    api == "document" and res):
                raise RuntimeError(f"{api}: {resp.status} {str(res)[:300]}")
    finally:
        conn.close()


def one_run(binary, docs, batch, bodies, api, port=0, view_properties=None):
    tmp = tempfile.mkdtemp(prefix="search-writes-")
    quiver = search.Quiver(binary, f"{tmp}/quiver", port)
    pid = quiver.proc.pid
    out = {}

    def load_into(collection):
        if bodies is not None:
            send_encoded(quiver, collection, bodies, api)
        elif api == "import":
            quiver.import_docs(collection, docs, batch)
        else:
            quiver.insert_docs(collection, docs, batch)

    try:
        quiver.call("POST", "/_api/collection", {"name": "plain"})
        c0, t0 = cpu_seconds(pid), time.perf_counter()
        load_into("plain")
        out["plain_s"], out["plain_cpu"] = time.perf_counter() - t0, cpu_seconds(pid) - c0
        quiver.call("DELETE", "/_api/collection/plain")
        quiver.call("POST", "/_api/collection", {"name": "docs"})
        quiver.call("POST", "/_api/view", {"name": "v", "type": "arangosearch",
                                           "links": {"docs": search.VIEW_LINK},
                                           **(view_properties or {})})
        c0, t0 = cpu_seconds(pid), time.perf_counter()
        load_into("docs")
        out["linked_s"], out["linked_cpu"] = time.perf_counter() - t0, cpu_seconds(pid) - c0
        indexed = quiver.wait_view("v")
        out["searchable_s"] = time.perf_counter() - t0
        out["searchable_cpu"] = cpu_seconds(pid) - c0
        if indexed != len(docs):
            raise RuntimeError(f"the view holds {indexed} documents, not {len(docs)}")
    finally:
        quiver.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", action="append", required=True, help="NAME=PATH, in run order")
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=10_000, help="documents per import request")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--client", choices=["json", "encoded"], default="json",
                    help="json: encode each request while timed; encoded: bodies encoded "
                         "before the clock starts, one kept-alive connection")
    ap.add_argument("--api", choices=["import", "document"], default="import",
                    help="POST /_api/import (JSON lines) or POST /_api/document (arrays, silent)")
    ap.add_argument("--port", type=int, default=0, help="the servers' port (default: any free one)")
    ap.add_argument("--view-properties", action="append", default=[],
                    help="NAME=JSON: properties added to the view of the runs of binary NAME")
    args = ap.parse_args()
    binaries = [b.split("=", 1) for b in args.binary]
    view_properties = {}
    for spec in args.view_properties:
        name, props = spec.split("=", 1)
        if name not in {n for n, _ in binaries}:
            ap.error(f"--view-properties names {name}, which is no --binary")
        view_properties[name] = json.loads(props)
    docs = search.corpus(args.docs)
    bodies = encoded_batches(docs, args.batch, args.api) if args.client == "encoded" else None
    print(f"# {len(docs):,} documents, {args.batch:,} per request, "
          f"{len(binaries)} binaries x {args.rounds} rounds, alternating, "
          f"client {args.client}, {args.api} API", flush=True)
    runs = {name: [] for name, _ in binaries}
    for r in range(args.rounds):
        for name, path in binaries:
            before = load()
            out = one_run(path, docs, args.batch, bodies, args.api, args.port,
                          view_properties.get(name))
            runs[name].append(out)
            print(f"round {r + 1} {name}: load {before} -> {load()}; "
                  + " ".join(f"{k} {v:.2f}" for k, v in out.items()), flush=True)
    n = len(docs)
    print("\n| binary | without view: docs/s (CPU s) | with view, acknowledged: docs/s (CPU s) "
          "| acknowledged with / without | until searchable: docs/s (CPU s) "
          "| CPU with view / without |")
    print("|---|---|---|---|---|---|")
    for name, _ in binaries:
        med = {k: statistics.median(o[k] for o in runs[name]) for k in runs[name][0]}
        ratio = statistics.median(o["plain_s"] / o["linked_s"] for o in runs[name])
        cpu_ratio = statistics.median(o["searchable_cpu"] / o["plain_cpu"] for o in runs[name])
        print(f"| {name} | {n / med['plain_s']:,.0f} ({med['plain_cpu']:.1f}) "
              f"| {n / med['linked_s']:,.0f} ({med['linked_cpu']:.1f}) | {ratio:.0%} "
              f"| {n / med['searchable_s']:,.0f} ({med['searchable_cpu']:.1f}) "
              f"| {cpu_ratio:.2f} |")


if __name__ == "__main__":
    main()
