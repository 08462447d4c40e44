"""A view's primarySort and storedValues, two builds side by side: each binary serves its own
copy of the same documents (an arangosearch view with `primarySort: [{field: "date",
direction: "desc"}]` and `storedValues: [["title"]]`), and each query runs a fixed number of
times against A, then B, alternating for several rounds. Reported per query: the server's CPU
time (utime + stime from /proc/<pid>/stat, before and after) per run, medians over the rounds,
and B/A. Wall time is not used: the machine is shared.

    python3 bench/view_primary_sort.py --a path/to/quiver-main --b path/to/quiver \
        [--docs 100000] [--runs 20] [--rounds 3]
"""

import argparse
import base64
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request

AUTH = "Basic " + base64.b64encode(b"root:").decode()
TICKS = os.sysconf("SC_CLK_TCK")

QUERIES = {
    "sort_limit": "FOR d IN v SEARCH ANALYZER(d.text == 'lamp', 'text_en') "
                  "SORT d.date DESC LIMIT 10 RETURN d",
    "sort_offset_limit": "FOR d IN v SEARCH ANALYZER(d.text == 'lamp', 'text_en') "
                         "SORT d.date DESC LIMIT 1000, 10 RETURN d",
    "stored_values": "FOR d IN v SEARCH ANALYZER(d.text == 'lamp', 'text_en') "
                     "RETURN {t: d.title, date: d.date}",
}


class Server:
    def __init__(self, binary, directory):
        self.proc = subprocess.Popen(
            [binary, "serve", "--server.endpoint", "tcp://127.0.0.1:0",
             "--database.directory", directory, "--log.level", "warning"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        while True:
            line = self.proc.stdout.readline()
            m = re.search(r"listening on tcp://127\.0\.0\.1:(\d+)", line)
            if m:
                self.url = f"http://127.0.0.1:{m.group(1)}"
                break
            if not line and self.proc.poll() is not None:
                raise RuntimeError("server exited")

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": AUTH})
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def query(self, aql):
        reply = self.call("POST", "/_api/cursor", {"query": aql, "batchSize": 1000})
        rows = reply["result"]
        while reply.get("hasMore"):
            reply = self.call("POST", f"/_api/cursor/{reply['id']}")
            rows.extend(reply["result"])
        return rows

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def load(server, docs):
    server.call("POST", "/_api/collection", {"name": "docs"})
    server.call("POST", "/_api/view", {
        "name": "v", "type": "arangosearch",
        "primarySort": [{"field": "date", "direction": "desc"}],
        "storedValues": [["title"]],
        "links": {"docs": {"fields": {"text": {"analyzers": ["text_en"]}}}}})
    for at in range(0, len(docs), 10_000):
        server.call("POST", "/_api/document/docs", docs[at:at + 10_000])
    server.query("FOR d IN v SEARCH true OPTIONS {waitForSync: true} "
                 "COLLECT WITH COUNT INTO n RETURN n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    words = ["lamp", "drum", "pink", "cloud"]
    docs = [{"_key": f"k{i}", "text": f"{words[i % 4]} {words[(i * 7) % 4]}",
             "date": (i * 7919) % 100_003, "title": f"title {i}", "body": "x" * 200}
            for i in range(args.docs)]
    tmp = tempfile.mkdtemp(prefix="view-primary-sort-")
    servers = {}
    try:
        for name, binary in (("A", args.a), ("B", args.b)):
            servers[name] = Server(binary, f"{tmp}/{name}")
            load(servers[name], docs)
        time.sleep(2)
        for label, aql in QUERIES.items():
            # Equal rows (the two servers' `_rev`s differ).
            results = {name: [{k: v for k, v in row.items() if k != "_rev"}
                              for row in s.query(aql)] for name, s in servers.items()}
            if "SORT" not in aql:
                # Unsorted: each index's own order.
                for name in results:
                    results[name].sort(key=lambda row: json.dumps(row, sort_keys=True))
            assert results["A"] == results["B"], label
            cpu = {"A": [], "B": []}
            for _ in range(args.rounds):
                for name, server in servers.items():
                    before = server.cpu_seconds()
                    for _ in range(args.runs):
                        server.query(aql)
                    cpu[name].append((server.cpu_seconds() - before) / args.runs)
            a, b = statistics.median(cpu["A"]), statistics.median(cpu["B"])
            print(f"{label:18} A {a * 1000:8.2f} ms  B {b * 1000:8.2f} ms  B/A {b / a:6.3f}  "
                  f"(server CPU per query, median of {args.rounds} rounds of {args.runs})")
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
