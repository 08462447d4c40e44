#!/usr/bin/env python3
"""Server CPU per neighbours query with plans NOT cached: every query a start vertex not used
before on this server. usage: bench/neighbors_uncached.py BINARY PORT DATA FIRST COUNT [perf-out]"""
import http.client, json, os, signal, subprocess, sys, threading, time, urllib.request

binary, port, data, first, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
perf_out = sys.argv[6] if len(sys.argv) > 6 else None
TICK = os.sysconf("SC_CLK_TCK")
Q = ('FOR v IN OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: "global"} RETURN v._id')
ids = json.load(open(os.path.expanduser("~/.cache/quiver-pokec/scale-0.1-seed-3/ids100000.json")))
ids = [i if isinstance(i, str) else i.get("key") for i in ids]


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def run(keys, connections=4):
    def worker(part):
        conn = http.client.HTTPConnection("127.0.0.1", port)
        for k in part:
            body = json.dumps({"query": Q, "bindVars": {"key": f"profiles/{k}"}})
            conn.request("POST", "/_db/pokec/_api/cursor", body,
                         {"Content-Type": "application/json", "Authorization": "Basic cm9vdDo="})
            r = conn.getresponse()
            reply = json.loads(r.read())
            if r.status != 201:
                sys.exit(f"{k}: {reply}")
    ts = [threading.Thread(target=worker, args=(keys[i::connections],)) for i in range(connections)]
    for t in ts: t.start()
    for t in ts: t.join()


proc = subprocess.Popen([binary, "serve", "--server.endpoint", f"tcp://127.0.0.1:{port}",
                         "--database.directory", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_api/version", timeout=1); break
        except urllib.error.HTTPError:
            break
        except Exception:
            time.sleep(0.1)
    run(ids[:2000])  # loads the edge index; these keys are not used again
    keys = ids[2000 + first: 2000 + first + count]
    perf = None
    if perf_out:
        perf = subprocess.Popen(["perf", "record", "--no-buildid-cache", "-F", "2000", "-g", "-o", perf_out, "-p", str(proc.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    c0 = cpu(proc.pid)
    run(keys)
    c1 = cpu(proc.pid)
    if perf:
        perf.send_signal(signal.SIGINT); perf.wait()
    print(f"{os.path.basename(binary)} {count} uncached queries: server cpu {c1 - c0:.2f} s = {(c1 - c0) / count * 1e6:.0f} us/query (load {open('/proc/loadavg').read().split()[0]})", flush=True)
    # The last 500 keys ten times: their plans are cached (the cache holds the last
    # count % 1024 >= 500 plans; it starts over when full).
    c0 = cpu(proc.pid)
    run(keys[-500:] * 10)
    c1 = cpu(proc.pid)
    count = 5000
    print(f"{os.path.basename(binary)} {count} cached queries: server cpu {c1 - c0:.2f} s = {(c1 - c0) / count * 1e6:.0f} us/query", flush=True)
finally:
    proc.send_signal(signal.SIGTERM); proc.wait()
