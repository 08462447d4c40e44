#!/usr/bin/env python3
"""The server's peak memory per Pokec workload (what bench/peers.sh's one peak is made of).

  bench/peak_memory.py --bin QUIVER --bench QUIVER_BENCH --data DIR [--port P] [--tests a,b]
                       [--rounds R] [--restrict N] [--json OUT]

Starts one server (`--bin`, port P, a temporary data directory deleted afterwards), loads DIR
with `QUIVER_BENCH pokec load` (its default 8 connections, as peers.sh), then measures, each with the
peak resident memory reset just before it (`echo 5 > /proc/PID/clear_refs` resets VmHWM):
  - `load`: the import itself;
  - `aggregation-alone`, `loadIndexes-alone` (not with --no-steps): the two server-side steps
    of the harness's warmup (the COLLECT query once, PUT relations/loadIndexesIntoMemory);
  - then R passes of `QUIVER_BENCH pokec run --tests ...` (default: every workload, the order
    of peers.sh, 25 connections); the harness prints one line per finished workload (its
    warmup first), and each line closes that workload's window: VmHWM is read and reset.
Per window: VmHWM (exact peak of the resident set), and the largest RssAnon and RssFile
sampled every 0.1 s (a sub-0.1 s spike shows in VmHWM only; the samples, with VmHWM, are
kept in --json as `trace`: seconds into the window, RssAnon, RssFile, VmHWM), the server's CPU seconds
(utime + stime of /proc/PID/stat) and the wall seconds. Prints a Markdown table per pass.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools_measure import AUTH, cpu_seconds, status_kib  # noqa: E402

AGGREGATION = ("FOR x IN profiles COLLECT age = x.AGE WITH COUNT INTO counter "
               "RETURN {age: age, amount: counter}")


class Watch:
    """VmHWM plus RssAnon/RssFile peaks sampled every 0.1 s, per window."""

    def __init__(self, pid):
        self.pid = pid
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.reset()
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def mib(self, field):
        return status_kib(self.pid, field) / 1024

    def reset(self):
        with self.lock:
            with open(f"/proc/{self.pid}/clear_refs", "w") as f:
                f.write("5")
            self.anon = self.file = 0.0
            self.trace = []
            self.cpu = cpu_seconds(self.pid)
            self.t0 = time.monotonic()

    def sample(self):
        while not self.done.is_set():
            with self.lock:
                anon, file = self.mib("RssAnon:"), self.mib("RssFile:")
                self.anon = max(self.anon, anon)
                self.file = max(self.file, file)
                self.trace.append((round(time.monotonic() - self.t0, 2), round(anon),
                                   round(file), round(self.mib("VmHWM:"))))
            time.sleep(0.1)

    def close(self, name):
        """Ends the window `name` and starts the next one."""
        with self.lock:
            self.anon = max(self.anon, self.mib("RssAnon:"))
            self.file = max(self.file, self.mib("RssFile:"))
            row = {"window": name, "hwm": self.mib("VmHWM:"), "anon": self.anon,
                   "file": self.file, "rssAfter": self.mib("VmRSS:"),
                   "cpu": cpu_seconds(self.pid) - self.cpu,
                   "seconds": time.monotonic() - self.t0,
                   "trace": self.trace}
        self.reset()
        return row

    def stop(self):
        self.done.set()
        self.thread.join()


def call(port, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Authorization": AUTH})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read() or b"null")


def table(rows):
    cols = ("hwm", "anon", "file", "rssAfter", "cpu", "seconds")
    out = ["| window | VmHWM MiB | max RssAnon | max RssFile | VmRSS after | server CPU s | s |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['window']} | " + " | ".join(
            f"{r[c]:,.0f}" if c not in ("cpu", "seconds") else f"{r[c]:.2f}" for c in cols) + " |")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--bench", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--port", type=int, default=19500)
    p.add_argument("--tests", default="")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--restrict", type=int, default=0)
    p.add_argument("--connections", type=int, default=25)
    p.add_argument("--json", help="write every window's figures here")
    p.add_argument("--no-steps", action="store_true",
                   help="skip the aggregation and loadIndexes steps: the run follows the load "
                        "at once, as in peers.sh")
    p.add_argument("--server-arg", action="append", default=[],
                   help="extra server option (repeatable), e.g. --server-arg=--foo=1")
    args = p.parse_args()
    scratch = tempfile.mkdtemp(prefix="peak-memory.", dir=os.path.expanduser("~"))
    endpoint = f"tcp://127.0.0.1:{args.port}"
    log = open(os.path.join(scratch, "server.log"), "w")
    server = subprocess.Popen([args.bin, "--server.endpoint", endpoint, "--database.directory",
                               os.path.join(scratch, "data"), *args.server_arg],
                              stdout=log, stderr=subprocess.STDOUT)
    report = {"bin": args.bin, "data": args.data, "load": os.getloadavg(), "passes": []}
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{args.port}/_api/version", timeout=1)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.1)
        watch = Watch(server.pid)
        # The load with the tool's own default connections, as peers.sh runs it.
        subprocess.run([args.bench, "pokec", "load", "--dir", args.data, "--endpoint", endpoint],
                       check=True, stdout=subprocess.DEVNULL)
        rows = [watch.close("load")]
        if not args.no_steps:
            call(args.port, "POST", "/_db/pokec/_api/cursor", {"query": AGGREGATION})
            rows.append(watch.close("aggregation-alone"))
            call(args.port, "PUT",
                 "/_db/pokec/_api/collection/relations/loadIndexesIntoMemory")
            rows.append(watch.close("loadIndexes-alone"))
        print(table(rows), flush=True)
        report["steps"] = rows
        for r in range(args.rounds):
            cmd = [args.bench, "pokec", "run", "--database", "quiver", "--endpoint", endpoint,
                   "--dir", args.data, "--connections", str(args.connections),
                   "--restrict", str(args.restrict), "--max-rss-gib", "20"]
            if args.tests:
                cmd += ["--tests", args.tests]
            watch.reset()
            run = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
            rows = []
            for line in run.stdout:
                m = re.match(r"(\w+)\s+\d+ queries", line)
                if not m:
                    continue
                row = watch.close(m.group(1))
                row["line"] = line.strip()
                rows.append(row)
            run.wait()
            print(f"pass {r + 1} (load average {os.getloadavg()[0]:.1f})")
            print(table(rows), flush=True)
            report["passes"].append(rows)
        watch.stop()
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
