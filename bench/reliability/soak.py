#!/usr/bin/env python3
"""A soak: steady mixed load on one server for a fixed time, with the server's resident memory,
open file descriptors, request rate and latency recorded every second.

    QUIVER_BIN=target-release/release/quiver python3 bench/reliability/soak.py \
        [--minutes 30] [--clients 6] [--out DIR]

Starts the binary on a free port with a fresh data directory (authentication off), creates a
document collection with a persistent index and an edge collection, and runs CLIENTS threads,
each on its own keep-alive connection, drawing operations from a fixed mix: single inserts
(some with waitForSync), reads by key, updates, replaces, removals, batch inserts of 50,
imports of 200 lines, AQL queries (an index range with a sort, a COLLECT, a one-hop traversal)
read through cursors of small batches, and a stream transaction. Keys come from a bounded key
space, so the data set stays about the same size while every document is rewritten again and
again (compaction and the collector keep working). Any answer outside the expected statuses
stops the soak with an error.

Writes DIR/soak.csv (one row per second: elapsed s, RSS MiB, file descriptors, requests in
that second, p50/p99/max latency ms, errors) and, when matplotlib is importable,
DIR/soak.png. Prints a summary: RSS and descriptors at the first and last minute, their
maxima, the latency percentiles per ten-minute slice.
"""

import argparse
import csv
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

KEYS = 20_000
EDGE_KEYS = 5_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Client:
    """One keep-alive connection; `call` returns (status, parsed body) and checks the status."""

    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method, path, body=None, ok=(200, 201, 202), raw=None):
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        try:
            self.conn.request(method, path, body=data)
            resp = self.conn.getresponse()
            text = resp.read()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            raise
        if resp.status not in ok:
            raise RuntimeError(f"{method} {path}: {resp.status} {text[:300]!r}")
        return resp.status, (json.loads(text) if text else None)


def doc(rng, key):
    return {
        "_key": key,
        "n": rng.randrange(1_000_000),
        "group": f"g{rng.randrange(50)}",
        "text": "x" * rng.randrange(20, 600),
        "tags": [rng.randrange(100) for _ in range(rng.randrange(5))],
    }


def cursor(c, query, bind, batch=100):
    _, body = c.call("POST", "/_api/cursor", {"query": query, "bindVars": bind, "batchSize": batch})
    rows = len(body["result"])
    while body.get("hasMore"):
        _, body = c.call("PUT", f"/_api/cursor/{body['id']}")
        rows += len(body["result"])
    return rows


def one_operation(c, rng):
    key = f"k{rng.randrange(KEYS)}"
    r = rng.random()
    if r < 0.25:
        c.call("GET", f"/_api/document/docs/{key}", ok=(200, 404))
    elif r < 0.40:
        sync = "true" if rng.random() < 0.1 else "false"
        c.call("POST", f"/_api/document/docs?overwriteMode=replace&waitForSync={sync}", doc(rng, key))
    elif r < 0.50:
        c.call("PATCH", f"/_api/document/docs/{key}", {"n": rng.randrange(1_000_000)}, ok=(201, 202, 404))
    elif r < 0.55:
        c.call("PUT", f"/_api/document/docs/{key}", doc(rng, key), ok=(201, 202, 404))
    elif r < 0.63:
        c.call("DELETE", f"/_api/document/docs/{key}", ok=(200, 202, 404))
    elif r < 0.68:
        batch = [doc(rng, f"k{rng.randrange(KEYS)}") for _ in range(50)]
        c.call("POST", "/_api/document/docs?overwriteMode=update", batch)
    elif r < 0.71:
        lines = "\n".join(json.dumps(doc(rng, f"k{rng.randrange(KEYS)}")) for _ in range(200))
        c.call("POST", "/_api/import?collection=docs&type=documents&onDuplicate=replace", raw=lines)
    elif r < 0.76:
        a, b = rng.randrange(EDGE_KEYS), rng.randrange(EDGE_KEYS)
        c.call(
            "POST",
            "/_api/document/links?overwriteMode=replace",
            {"_key": f"e{a}-{b}", "_from": f"docs/k{a}", "_to": f"docs/k{b}"},
        )
    elif r < 0.86:
        low = rng.randrange(1_000_000)
        cursor(
            c,
            "FOR d IN docs FILTER d.n >= @low AND d.n < @low + 20000 SORT d.n RETURN d._key",
            {"low": low},
            batch=rng.choice([10, 100, 1000]),
        )
    elif r < 0.90:
        cursor(c, "FOR d IN docs COLLECT g = d.group WITH COUNT INTO n RETURN {g, n}", {})
    elif r < 0.97:
        cursor(
            c,
            "FOR v IN 1..1 OUTBOUND @start links RETURN v._key",
            {"start": f"docs/k{rng.randrange(EDGE_KEYS)}"},
        )
    else:
        _, body = c.call(
            "POST", "/_api/transaction/begin", {"collections": {"write": ["docs"]}}
        )
        tid = body["result"]["id"]
        for _ in range(3):
            c.conn.request(
                "POST",
                "/_api/document/docs?overwriteMode=replace",
                body=json.dumps(doc(rng, f"k{rng.randrange(KEYS)}")),
                headers={"x-arango-trx-id": tid},
            )
            resp = c.conn.getresponse()
            text = resp.read()
            if resp.status == 409:
                # A write-write conflict (1200) with a concurrent writer: the transaction is
                # given up, as a client would.
                c.call("DELETE", f"/_api/transaction/{tid}", ok=(200, 404, 409, 410))
                return
            if resp.status not in (201, 202):
                raise RuntimeError(f"transaction insert: {resp.status} {text[:300]!r}")
        action = "PUT" if rng.random() < 0.8 else "DELETE"
        # Committing may meet a conflict with a writer that committed first (409/1200).
        c.call(action, f"/_api/transaction/{tid}", ok=(200, 409))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--out", default="bench/results/soak")
    args = ap.parse_args()
    binary = os.environ.get("QUIVER_BIN", "target/release/quiver")
    os.makedirs(args.out, exist_ok=True)
    data = tempfile.mkdtemp(prefix="quiver-soak-")
    port = free_port()
    log = open(os.path.join(args.out, "server.log"), "w")
    server = subprocess.Popen(
        [binary, "serve", "--server.endpoint", f"tcp://127.0.0.1:{port}",
         "--database.directory", data, "--server.authentication", "false",
         "--log.level", "warning"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(300):
            try:
                Client(port).call("GET", "/_api/version")
                break
            except OSError:
                time.sleep(0.1)
        setup = Client(port)
        setup.call("POST", "/_api/collection", {"name": "docs"})
        setup.call("POST", "/_api/collection", {"name": "links", "type": 3})
        setup.call("POST", "/_api/index?collection=docs", {"type": "persistent", "fields": ["n"]})

        stop = threading.Event()
        lock = threading.Lock()
        latencies, errors = [], []

        def worker(seed):
            rng = random.Random(seed)
            c = Client(port)
            while not stop.is_set():
                t0 = time.monotonic()
                try:
                    one_operation(c, rng)
                except Exception as e:  # recorded; the soak stops on the first error
                    with lock:
                        errors.append(repr(e))
                    stop.set()
                    return
                with lock:
                    latencies.append(time.monotonic() - t0)

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(args.clients)]
        for t in threads:
            t.start()
        rows = []
        start = time.monotonic()
        end = start + args.minutes * 60
        next_tick = start + 1
        while time.monotonic() < end and not stop.is_set() and server.poll() is None:
            time.sleep(max(0, next_tick - time.monotonic()))
            next_tick += 1
            with lock:
                window, latencies[:] = list(latencies), []
            window.sort()
            q = lambda p: 1000 * window[min(len(window) - 1, int(p * len(window)))] if window else 0
            rows.append({
                "elapsed_s": round(time.monotonic() - start),
                "rss_mib": round(proc_status(server.pid, "VmRSS") / 1024, 1),
                "fds": len(os.listdir(f"/proc/{server.pid}/fd")),
                "requests": len(window),
                "p50_ms": round(q(0.5), 2),
                "p99_ms": round(q(0.99), 2),
                "max_ms": round(1000 * window[-1], 2) if window else 0,
                "errors": len(errors),
            })
        stop.set()
        for t in threads:
            t.join(timeout=60)
        with open(os.path.join(args.out, "soak.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        alive = server.poll() is None
        summarize(rows, errors, alive, args)
        chart(rows, args.out)
        if errors or not alive:
            sys.exit(1)
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)


def summarize(rows, errors, alive, args):
    first = rows[: min(60, len(rows))]
    last = rows[-min(60, len(rows)):]
    med = lambda rs, k: statistics.median(r[k] for r in rs)
    print(f"soak: {len(rows)} s, {args.clients} clients, {sum(r['requests'] for r in rows):,} requests, "
          f"errors {len(errors)}, server alive {alive}")
    for e in errors[:5]:
        print("  error:", e)
    print(f"RSS MiB: first minute median {med(first, 'rss_mib'):.1f}, last minute median "
          f"{med(last, 'rss_mib'):.1f}, max {max(r['rss_mib'] for r in rows)}")
    print(f"file descriptors: first minute median {med(first, 'fds')}, last minute median "
          f"{med(last, 'fds')}, max {max(r['fds'] for r in rows)}")
    for i in range(0, len(rows), 600):
        s = rows[i:i + 600]
        print(f"  {i // 60:>3}–{(i + len(s)) // 60} min: {med(s, 'requests'):,.0f} requests/s, "
              f"p50 {med(s, 'p50_ms')} ms, p99 {med(s, 'p99_ms')} ms (medians of the seconds), "
              f"max {max(r['max_ms'] for r in s)} ms")


def chart(rows, out):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not importable: soak.csv written, no chart")
        return
    t = [r["elapsed_s"] / 60 for r in rows]
    fig, ax = plt.subplots(4, 1, figsize=(9, 9), sharex=True)
    ax[0].plot(t, [r["rss_mib"] for r in rows]); ax[0].set_ylabel("RSS MiB")
    ax[1].plot(t, [r["fds"] for r in rows]); ax[1].set_ylabel("open fds")
    ax[2].plot(t, [r["requests"] for r in rows]); ax[2].set_ylabel("requests/s")
    ax[3].plot(t, [r["p50_ms"] for r in rows], label="p50")
    ax[3].plot(t, [r["p99_ms"] for r in rows], label="p99")
    ax[3].set_yscale("log"); ax[3].set_ylabel("latency ms"); ax[3].legend()
    ax[3].set_xlabel("minutes")
    fig.suptitle("QuiverDB soak: steady mixed load")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "soak.png"), dpi=90)


if __name__ == "__main__":
    main()
