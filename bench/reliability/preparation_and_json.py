"""Times the request shapes that used to cost quadratic CPU (issue list in
docs/benchmarks/reliability.md): wide JSON objects, a one-line 1 MB query, long LET chains, and
the memory limit on plan-time constants. Starts the binary of $QUIVER_BIN (default
target/debug/quiver) on a free port with a temporary data directory.

    QUIVER_BIN=target/debug/quiver .venv/bin/python bench/reliability/preparation_and_json.py
"""
import pathlib
import sys
import tempfile
import time

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "e2e"))
from conftest import ROOT, Server  # noqa: E402


def timed(call):
    started = time.time()
    r = call()
    return r, time.time() - started


def main():
    srv = Server(pathlib.Path(tempfile.mkdtemp(prefix="quiver-reliability-")) / "data").start()
    s = requests.Session()
    s.auth = ROOT
    u = srv.url
    try:
        s.post(u + "/_api/collection", json={"name": "wide"})
        for n in (100_000, 1_000_000):
            body = "{" + ",".join(f'"a{i}":{i}' for i in range(n)) + "}"
            r, t = timed(lambda: s.post(u + "/_api/document/wide", data=body))
            print(f"document with {n:,} attributes: {r.status_code} in {t:.2f} s")
            r, t = timed(lambda: s.post(u + "/_api/document/wide", data='{"x":' + body + "}"))
            print(f"document with {n:,} attributes one level down: {r.status_code} in {t:.2f} s")
        for size in (250_000, 500_000, 1_000_000):
            q = "RETURN [" + ",".join(["'ä',1"] * (size // 6)) + "]"
            r, t = timed(lambda: s.post(u + "/_api/query", json={"query": q}))
            print(f"parse a {size:,}-byte one-line query: {r.status_code} in {t:.2f} s")
        for n in (5_000, 10_000, 20_000, 40_000):
            chain = "LET v0 = 0 " + " ".join(f"LET v{i} = v{i-1} + 1" for i in range(1, n))
            chain += f" RETURN v{n-1}"
            r, t = timed(lambda: s.post(u + "/_api/explain", json={"query": chain}))
            print(f"explain a chain of {n:,} LETs: {r.status_code} in {t:.2f} s")
            r, t = timed(lambda: s.post(u + "/_api/cursor", json={"query": chain}))
            print(f"run a chain of {n:,} LETs: {r.status_code} in {t:.2f} s")
        constants = "FOR i IN 1..2 " + " ".join(f"LET v{i} = {i}" for i in range(20_000))
        r, t = timed(lambda: s.post(u + "/_api/cursor", json={"query": constants + " RETURN [i, v19999]"}))
        print(f"run 20,000 constant LETs inside a loop: {r.status_code} in {t:.2f} s")
        r, t = timed(lambda: s.post(u + "/_api/cursor", json={"query": chain, "options": {"maxRuntime": 0.05}}))
        print(f"40,000 LETs with maxRuntime 0.05: {r.status_code} {r.json().get('errorNum')} in {t:.2f} s")

        def rss_mib():
            status = open(f"/proc/{srv.proc.pid}/status").read()
            return int(status.split("VmRSS:")[1].split()[0]) // 1024

        before = rss_mib()
        q = "LET a=RANGE(1,1e7) LET b=RANGE(1,1e7) LET c=RANGE(1,1e7) RETURN LENGTH(a)+LENGTH(b)+LENGTH(c)"
        r, t = timed(lambda: s.post(u + "/_api/cursor", json={"query": q, "memoryLimit": 1_000_000}))
        print(f"three RANGE(1,1e7) under memoryLimit 1e6: {r.status_code} {r.json().get('errorNum')} "
              f"in {t:.2f} s, RSS {before} -> {rss_mib()} MiB")
        before = rss_mib()
        q = "FOR a IN 1..1e5 FOR b IN 1..1e5 RETURN [a, b]"
        r, t = timed(lambda: s.post(u + "/_api/cursor", json={"query": q, "memoryLimit": 100_000_000}))
        print(f"10^10 result rows under memoryLimit 1e8: {r.status_code} {r.json().get('errorNum')} "
              f"in {t:.2f} s, RSS {before} -> {rss_mib()} MiB")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
