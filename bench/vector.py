#!/usr/bin/env python3
"""Vector search, side by side: QuiverDB's vector index (through AQL over HTTP, as an
application uses it) against FAISS's IndexIVFFlat (in process, its best case) on the same
vectors, the same nLists and the same nProbe values.

Measured, per system: the time to build the index (FAISS: train + add; QuiverDB: the
POST /_api/index that trains and fills it), recall@10 against the exact neighbours (FAISS
IndexFlat), and the median latency of one query at each nProbe. FAISS runs single-threaded
per query (omp 1), QuiverDB answers one query at a time; both sides see the queries in the
same order. Data: `--n` vectors of `--dim` dimensions around `--n // 100` Gaussian centres
(embeddings are clustered), queries drawn near the data.

Run with bench/vector.sh (it builds a venv with faiss-cpu and numpy and a release binary).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import faiss
import numpy as np


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Quiver:
    def __init__(self, binary, data_dir):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "serve", "--server.endpoint", f"tcp://127.0.0.1:{self.port}",
             "--database.directory", data_dir, "--server.authentication", "false",
             "--log.level", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                self.call("GET", "/_api/version")
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("quiver did not start")

    def call(self, method, path, body=None, raw=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method)
        req.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=3600) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            raise RuntimeError(f"{method} {path}: {err.code} {err.read()[:300]!r}") from None

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def status_mib(pid, field):
    """A /proc/<pid>/status memory field (VmRSS, VmHWM) in MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def data(n, dim, queries, seed):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, (max(1, n // 100), dim)).astype(np.float32)
    xb = centres[rng.integers(0, len(centres), n)] + rng.normal(0, 0.3, (n, dim)).astype(np.float32)
    xq = xb[rng.integers(0, n, queries)] + rng.normal(0, 0.3, (queries, dim)).astype(np.float32)
    return xb.astype(np.float32), xq.astype(np.float32)


def recall(found, truth):
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth)]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--n-lists", type=int, default=0, help="default: n / 100")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--probes", default="1,8,32")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    n_lists = args.n_lists or max(1, args.n // 100)
    probes = [int(p) for p in args.probes.split(",")]
    k = 10
    xb, xq = data(args.n, args.dim, args.queries, args.seed)
    print(f"# {args.n} vectors, dim {args.dim}, nLists {n_lists}, {args.queries} queries, k {k}", flush=True)

    # Exact neighbours (ground truth), L2.
    flat = faiss.IndexFlatL2(args.dim)
    flat.add(xb)
    _, truth = flat.search(xq, k)

    # FAISS IVF,Flat: ArangoDB's own engine, same nLists, its default 25 iterations.
    faiss.omp_set_num_threads(2)
    quantizer = faiss.IndexFlatL2(args.dim)
    ivf = faiss.IndexIVFFlat(quantizer, args.dim, n_lists, faiss.METRIC_L2)
    ivf.cp.niter = 25
    faiss_rss0 = status_mib(os.getpid(), "VmRSS")
    t0 = time.perf_counter()
    ivf.train(xb)
    ivf.add(xb)
    faiss_build = time.perf_counter() - t0
    faiss_index_mib = status_mib(os.getpid(), "VmRSS") - faiss_rss0
    faiss.omp_set_num_threads(1)
    faiss_rows = {}
    for p in probes:
        ivf.nprobe = p
        found, lat = [], []
        for q in xq:
            t = time.perf_counter()
            _, ids = ivf.search(q.reshape(1, -1), k)
            lat.append(time.perf_counter() - t)
            found.append(list(ids[0]))
        faiss_rows[p] = (recall(found, truth), statistics.median(lat) * 1e3)

    # QuiverDB through its HTTP API.
    tmp = tempfile.mkdtemp(prefix="quiver-vector-bench-")
    srv = Quiver(args.binary, tmp)
    try:
        srv.call("POST", "/_api/collection", {"name": "v"})
        chunk = 10_000
        t0 = time.perf_counter()
        for start in range(0, args.n, chunk):
            lines = "\n".join(json.dumps({"_key": str(i), "v": xb[i].tolist()})
                              for i in range(start, min(args.n, start + chunk)))
            srv.call("POST", "/_api/import?collection=v&type=documents", raw=lines.encode())
        load = time.perf_counter() - t0
        time.sleep(10)
        rss_before_index = status_mib(srv.proc.pid, "VmRSS")
        t0 = time.perf_counter()
        srv.call("POST", "/_api/index?collection=v", {
            "type": "vector", "fields": ["v"],
            "params": {"metric": "l2", "dimension": args.dim, "nLists": n_lists}})
        quiver_build = time.perf_counter() - t0
        time.sleep(10)
        rss_after_index = status_mib(srv.proc.pid, "VmRSS")
        hwm = status_mib(srv.proc.pid, "VmHWM")
        # The round trip without the search: same request size, no index work.
        base = []
        for q in xq:
            body = {"query": "RETURN LENGTH(@q) + @p", "bindVars": {"q": q.tolist(), "p": 1}}
            t = time.perf_counter()
            srv.call("POST", "/_api/cursor", body)
            base.append(time.perf_counter() - t)
        baseline = statistics.median(base) * 1e3
        quiver_rows = {}
        for p in probes:
            found, lat = [], []
            for q in xq:
                body = {"query": "FOR d IN v SORT APPROX_NEAR_L2(d.v, @q, {nProbe: @p}) LIMIT 10 RETURN d._key",
                        "bindVars": {"q": q.tolist(), "p": p}}
                t = time.perf_counter()
                res = srv.call("POST", "/_api/cursor", body)
                lat.append(time.perf_counter() - t)
                found.append([int(key) for key in res["result"]])
            quiver_rows[p] = (recall(found, truth), statistics.median(lat) * 1e3)
    finally:
        srv.stop()

    print(f"load (import API): {load:.1f} s; raw vectors: {xb.nbytes / 2**20:.0f} MiB")
    print(f"build: QuiverDB {quiver_build:.2f} s, FAISS {faiss_build:.2f} s "
          f"(ratio {quiver_build / faiss_build:.2f})")
    print(f"memory: QuiverDB server RSS {rss_before_index:.0f} MiB after the load, "
          f"{rss_after_index:.0f} MiB with the index (+{rss_after_index - rss_before_index:.0f} MiB), "
          f"peak {hwm:.0f} MiB; FAISS IVF,Flat train + add: +{faiss_index_mib:.0f} MiB of its process")
    print(f"HTTP+AQL round trip without a search (same request size): {baseline:.2f} ms median")
    print("| nProbe | QuiverDB recall@10 | FAISS recall@10 | QuiverDB median ms (HTTP+AQL) "
          "| QuiverDB search ms (minus round trip) | FAISS median ms (in process) |")
    print("|---|---|---|---|---|---|")
    for p in probes:
        qr, ql = quiver_rows[p]
        fr, fl = faiss_rows[p]
        print(f"| {p} | {qr:.3f} | {fr:.3f} | {ql:.2f} | {max(0.0, ql - baseline):.2f} | {fl:.3f} |")


if __name__ == "__main__":
    sys.exit(main())
