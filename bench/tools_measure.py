#!/usr/bin/env python3
"""Measurement side of bench/tools.sh (the data tools on the Pokec data set).

  tools_measure.py schema PORT
      drops and creates database `pokec` with `profiles` (documents) and `relations` (edges,
      autoincrement keys): the schema `quiver bench pokec load` creates.
  tools_measure.py count PORT
      prints {"profiles": n, "relations": n} of database `pokec`.
  tools_measure.py step OUT.json STEP SERVER_PID DOCS [DOCS_RELATIONS] -- COMMAND...
      runs COMMAND and writes OUT.json: wall seconds, documents/s, the command's user+system
      CPU seconds and peak RSS (wait4's rusage of the child, its whole process), the server's
      CPU seconds over the step (/proc/<pid>/stat) and peak RSS over the step (VmHWM reset
      through /proc/<pid>/clear_refs before the step, read after it, and VmRSS sampled every
      0.2 s; its anonymous part, RssAnon, sampled too), the load average before and after. The command's stderr goes to OUT.log.
  tools_measure.py note OUT.json KEY JSON
      adds KEY: JSON to a step report (a direct load's own per-file report, a dump's size).
  tools_measure.py table DIR
      prints the Markdown summary table of the step reports in DIR.
"""
import base64
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

AUTH = "Basic " + base64.b64encode(b"root:").decode()
TICKS = os.sysconf("SC_CLK_TCK")


def call(port, method, path, body=None, ok=(200, 201, 202)):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Authorization": AUTH})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            status, text = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    if status not in ok:
        raise SystemExit(f"{method} {path}: {status} {text[:300]!r}")
    return json.loads(text) if text else None


def schema(port):
    call(port, "DELETE", "/_api/database/pokec", ok=(200, 404))
    call(port, "POST", "/_api/database", {"name": "pokec"})
    call(port, "POST", "/_db/pokec/_api/collection", {"name": "profiles"})
    call(port, "POST", "/_db/pokec/_api/collection", {
        "name": "relations", "type": 3,
        "keyOptions": {"type": "autoincrement", "increment": 1, "offset": 0}})


def count(port):
    return {c: call(port, "GET", f"/_db/pokec/_api/collection/{c}/count")["count"]
            for c in ("profiles", "relations")}


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def step(out, name, server_pid, docs, command):
    server_pid = int(server_pid)
    with open(f"/proc/{server_pid}/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS, so the peak below is this step's
    server_cpu0 = cpu_seconds(server_pid)
    load0 = loadavg()
    peaks = {"server": status_kib(server_pid, "VmRSS:"), "tool": 0,
             "serverAnon": status_kib(server_pid, "RssAnon:")}
    stop = threading.Event()
    log = open(os.path.splitext(out)[0] + ".log", "w")
    started = time.monotonic()
    child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def sample():
        while not stop.wait(0.2):
            peaks["server"] = max(peaks["server"], status_kib(server_pid, "VmRSS:"))
            peaks["tool"] = max(peaks["tool"], status_kib(child.pid, "VmRSS:"))
            peaks["serverAnon"] = max(peaks["serverAnon"], status_kib(server_pid, "RssAnon:"))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    stop.set()
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    server_hwm = status_kib(server_pid, "VmHWM:")
    report = {
        "step": name,
        "command": command,
        "exitCode": code,
        "seconds": round(wall, 3),
        "documents": docs,
        # One collection: its rate. Both in one run (dump, direct load): the combined rate.
        "documentsPerSecond": {(next(iter(docs)) if len(docs) == 1 else "all"):
                               round(sum(docs.values()) / wall)},
        "tool": {"cpuSeconds": round(usage.ru_utime + usage.ru_stime, 2),
                 "userSeconds": round(usage.ru_utime, 2),
                 "systemSeconds": round(usage.ru_stime, 2),
                 "peakRssKiB": max(usage.ru_maxrss, peaks["tool"])},
        "server": {"cpuSeconds": round(cpu_seconds(server_pid) - server_cpu0, 2),
                   "peakRssKiB": max(server_hwm, peaks["server"]),
                   # Anonymous memory only (heap, not the mapped datafiles), sampled.
                   "peakRssAnonKiB": peaks["serverAnon"],
                   "rssAfterKiB": status_kib(server_pid, "VmRSS:")},
        "loadAverage": {"before": load0, "after": loadavg()},
    }
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    if code != 0:
        log.close()
        with open(os.path.splitext(out)[0] + ".log") as f:
            sys.stderr.write(f.read()[-2000:])
        raise SystemExit(f"{name}: exit {code}")
    return report


def mib(kib):
    return f"{kib / 1024:,.0f}"


def table(directory):
    rows = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json") or name in ("run.json",):
            continue
        r = json.load(open(os.path.join(directory, name)))
        if "step" not in r:
            continue
        rows.append((name, r))
    print("| round | step | documents | seconds | documents/s | tool CPU s | tool peak RSS MiB "
          "| server CPU s | server CPU µs / document | server peak RSS MiB (anonymous) | load before → after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        rnd = name.split("-", 1)[0]
        docs = " + ".join(f"{v:,}" for v in r["documents"].values())
        rates = ", ".join(f"{k} {v:,}" for k, v in r["documentsPerSecond"].items())
        if "perFile" in r:
            rates = ", ".join(f"{k} {v['documentsPerSecond']:,.0f} ({v['seconds']:.1f} s)"
                              for k, v in r["perFile"].items())
        anon = mib(r["server"]["peakRssAnonKiB"]) if "peakRssAnonKiB" in r["server"] else "–"
        la = f"{r['loadAverage']['before'][0]:.1f} → {r['loadAverage']['after'][0]:.1f}"
        print(f"| {rnd} | {r['step']} | {docs} | {r['seconds']:,.1f} | {rates} "
              f"| {r['tool']['cpuSeconds']:,.1f} | {mib(r['tool']['peakRssKiB'])} "
              f"| {r['server']['cpuSeconds']:,.1f} "
              f"| {r['server']['cpuSeconds'] * 1e6 / sum(r['documents'].values()):.1f} "
              f"| {mib(r['server']['peakRssKiB'])} ({anon}) | {la} |")


def main(argv):
    if argv[0] == "schema":
        schema(argv[1])
    elif argv[0] == "count":
        print(json.dumps(count(argv[1])))
    elif argv[0] == "step":
        sep = argv.index("--")
        out, name, pid, *counts = argv[1:sep]
        docs = dict(zip(["profiles", "relations"] if len(counts) == 2 else ["documents"],
                        (int(c) for c in counts)))
        if len(counts) == 1 and name.split()[-1] in ("profiles", "relations"):
            docs = {name.split()[-1]: int(counts[0])}
        step(out, name, pid, docs, argv[sep + 1:])
    elif argv[0] == "note":
        path, key, value = argv[1:4]
        r = json.load(open(path))
        r[key] = json.loads(value)
        if key == "directLoad":  # its per-file seconds, as the client timed them
            r["perFile"] = {k: {"seconds": value_of["seconds"],
                                "documentsPerSecond": value_of["documentsPerSecond"]}
                            for k, value_of in ((k, r[key][k]) for k in ("profiles", "relations"))}
        with open(path, "w") as f:
            json.dump(r, f, indent=1)
    elif argv[0] == "table":
        table(argv[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
