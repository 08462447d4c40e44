"""Peak memory of the three ways one client could make the server hold unbounded results
(docs/benchmarks/reliability.md "Held results"): cursors left open over large results,
`x-arango-async: store` results never fetched, and one large `/_api/import` of tiny
documents. Each case runs against a fresh server (binary of $QUIVER_BIN, default
target/debug/quiver) and reports the server's peak RSS (VmHWM) and what the requests got.

    QUIVER_BIN=target/release/quiver .venv/bin/python bench/reliability/held_memory.py [case ...]

Cases: cursors, async, import (default: all three). Extra server flags can follow `--`.
`HELD_IMPORT_DOCS` sets the number of documents of the import case (default 10,000,000). After
each case the server's RSS is also given split into anonymous memory and file pages (RssAnon,
RssFile: the mapped WAL segments and datafiles); with `HELD_SETTLE_SECONDS` it is given again
after that many idle seconds (the collector has moved the WAL into datafiles by then).
"""
import os
import collections
import pathlib
import sys
import tempfile
import threading
import time

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "e2e"))
from conftest import ROOT, Server  # noqa: E402


def memory_mib(srv, field):
    status = open(f"/proc/{srv.proc.pid}/status").read()
    return int(status.split(field + ":")[1].split()[0]) // 1024


class PeakSampler:
    """The highest RssAnon and RssFile seen, sampled every 0.2 s while a case runs (VmHWM has
    only their highest sum)."""

    def __init__(self, srv):
        self.srv, self.anon, self.file = srv, 0, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.wait(0.2):
            try:
                self.anon = max(self.anon, memory_mib(self.srv, "RssAnon"))
                self.file = max(self.file, memory_mib(self.srv, "RssFile"))
            except (OSError, IndexError):
                return

    def stop(self):
        self.done.set()
        self.thread.join()
        return self.anon, self.file


def fresh(extra):
    return Server(pathlib.Path(tempfile.mkdtemp(prefix="quiver-held-")) / "data", extra_args=extra).start()


def cursors(srv, s):
    """84 cursors of 1,000,000 numbers each, batch size 1, none read on."""
    outcomes = collections.Counter()
    for _ in range(84):
        r = s.post(srv.url + "/_api/cursor",
                   json={"query": "FOR i IN 1..1000000 RETURN i", "batchSize": 1, "ttl": 600})
        outcomes[(r.status_code, r.json().get("errorNum"))] += 1
    return outcomes


def async_results(srv, s):
    """5,900 stored async cursors of about 900 KB each, none fetched."""
    outcomes = collections.Counter()
    ids = []
    for _ in range(5900):
        r = s.post(srv.url + "/_api/cursor", headers={"x-arango-async": "store"},
                   json={"query": "RETURN (FOR i IN 1000000..1125000 RETURN i)"})
        outcomes[("submit", r.status_code, r.json().get("errorNum") if r.content else None)] += 1
        if r.status_code == 202:
            ids.append(r.headers["x-arango-async-id"])
    # Wait until the queue has drained, then see what the jobs answer (without fetching).
    deadline = time.time() + 600
    while time.time() < deadline:
        r = s.get(srv.url + "/_api/job/pending", params={"count": 10})
        if not r.json():
            break
        time.sleep(0.5)
    return outcomes


def import_tiny(srv, s):
    """10,000,000 documents of 8 bytes each (80 MB) in one JSON-lines import."""
    s.post(srv.url + "/_api/collection", json={"name": "tiny"})
    body = b'{"a":1}\n' * int(os.environ.get("HELD_IMPORT_DOCS", "10000000"))
    started = time.time()
    r = s.post(srv.url + "/_api/import", params={"collection": "tiny", "type": "documents"}, data=body)
    took = time.time() - started
    answer = r.json()
    return {"status": r.status_code, "created": answer.get("created"), "errors": answer.get("errors"),
            "seconds": round(took, 1), "body_mb": len(body) / 1e6}


CASES = {"cursors": cursors, "async": async_results, "import": import_tiny}


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    for name in args or list(CASES):
        srv = fresh(extra)
        s = requests.Session()
        s.auth = ROOT
        try:
            start = memory_mib(srv, "VmRSS")
            started = time.time()
            sampler = PeakSampler(srv)
            outcome = CASES[name](srv, s)
            peak_anon, peak_file = sampler.stop()
            print(f"{name}: {dict(outcome) if isinstance(outcome, collections.Counter) else outcome}; "
                  f"RSS at start {start} MiB, peak {memory_mib(srv, 'VmHWM')} MiB "
                  f"(sampled peaks: RssAnon {peak_anon} MiB, RssFile {peak_file} MiB), "
                  f"now {memory_mib(srv, 'VmRSS')} MiB (RssAnon {memory_mib(srv, 'RssAnon')} MiB, "
                  f"RssFile {memory_mib(srv, 'RssFile')} MiB), {time.time() - started:.0f} s", flush=True)
            settle = float(os.environ.get("HELD_SETTLE_SECONDS", "0"))
            if settle > 0:
                time.sleep(settle)
                print(f"{name}: after {settle:.0f} idle seconds RSS {memory_mib(srv, 'VmRSS')} MiB "
                      f"(RssAnon {memory_mib(srv, 'RssAnon')} MiB, RssFile {memory_mib(srv, 'RssFile')} MiB)",
                      flush=True)
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
