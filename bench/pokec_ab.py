#!/usr/bin/env python3
"""A/B of quiver builds on one Pokec data directory: server CPU per workload (docs/benchmarks/peers.md).

    bench/pokec_ab.py --data DIR --dataset DATASET --rounds 3 [--agg-runs 20] [--neighbor-passes 10] \
        [--tests aggregation,neighbors,singleRead] [--port 18631] NAME=BINARY [NAME=BINARY ...]

For every round and build, in turn (the order reverses every other round), starts the build's
server on the same data directory (one server at a time), runs `quiver bench pokec run
--tests TESTS` against it (the runner verifies every answer) and then the seed's aggregation
AGG_RUNS more times through the cursor API (bench/aggregation.py's request) and the 1,000
neighbours queries NEIGHBOR_PASSES more times (4 connections, result sizes checked), and stops it;
a first, uncounted pass of the runner loads what a fresh server loads on first use, after the
server has finished its start-up work (its CPU under 5 % of a core for two seconds).
The server's CPU time (utime+stime of /proc/PID/stat, 10 ms ticks) is sampled every 5 ms and
attributed to a workload by the time its progress line was printed. Prints medians per build
and workload: server CPU seconds and the runner's wall milliseconds.
"""
import argparse, http.client, json, os, signal, socket, statistics, subprocess, sys, threading, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import aggregation  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PORT = 18631


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start(binary, data, log):
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", PORT)) == 0:
            sys.exit(f"port {PORT} is in use (a server left from another run?)")
    proc = subprocess.Popen([binary, "serve", "--server.endpoint", f"tcp://127.0.0.1:{PORT}",
                             "--database.directory", data], stdout=log, stderr=log)
    for _ in range(600):
        # Another server answering on the port (a stale run) must not pass for this one.
        if proc.poll() is not None:
            sys.exit(f"{binary} exited with status {proc.returncode} (see /tmp/pokec_ab_server.log)")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/_api/version", timeout=1)
            return proc
        except urllib.error.HTTPError:
            return proc
        except Exception:
            time.sleep(0.1)
    proc.kill()
    sys.exit(f"{binary} did not start")


NEIGHBORS = ('FOR v IN OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: "global"} '
             'RETURN v._id')


def neighbors_repeated(dataset, passes, connections=4):
    starts = json.load(open(os.path.join(dataset, "neighbors1000.json")))
    jobs = [s for _ in range(passes) for s in starts]

    def worker(part):
        conn = http.client.HTTPConnection("127.0.0.1", PORT)
        for s in part:
            body = json.dumps({"query": NEIGHBORS, "bindVars": {"key": f"profiles/{s['key']}"}})
            conn.request("POST", "/_db/pokec/_api/cursor", body,
                         {"Content-Type": "application/json", "Authorization": "Basic cm9vdDo="})
            reply = json.loads(conn.getresponse().read())
            if len(reply["result"]) != s["neighbors"] or reply.get("hasMore"):
                sys.exit(f"neighbours of {s['key']}: {reply}")

    threads = [threading.Thread(target=worker, args=(jobs[i::connections],))
               for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def wait_quiet(pid, limit=300):
    """Waits (at most `limit` seconds) until the server used under 5 % of a core for two
    seconds in a row: a server restarted on a large data directory rebuilds its edge index in
    the background for a minute or more (about 80 s at full Pokec scale), which would land
    in the first build's figures."""
    quiet, before = 0, cpu(pid)
    for _ in range(limit):
        time.sleep(1)
        now = cpu(pid)
        quiet = quiet + 1 if now - before < 0.05 else 0
        before = now
        if quiet >= 2:
            return


def one(name, binary, a, log):
    proc = start(binary, a.data, log)
    wait_quiet(proc.pid)
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            samples.append((time.monotonic(), cpu(proc.pid)))
            time.sleep(0.005)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    # A first pass (not counted) loads what a fresh server loads on first use (the edge
    # index of the relations), so the counted pass measures the workloads themselves.
    subprocess.run([a.runner, "bench", "pokec", "run", "--endpoint", f"tcp://127.0.0.1:{PORT}",
                    "--dir", a.dataset, "--tests", a.tests], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.05)
    marks = [("start", time.monotonic(), None)]
    run = subprocess.Popen([a.runner, "bench", "pokec", "run", "--endpoint",
                            f"tcp://127.0.0.1:{PORT}", "--dir", a.dataset, "--tests", a.tests,
                            "--server-pid", str(proc.pid)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    for line in run.stdout:
        words = line.split()
        if len(words) > 5 and words[3] == "total" and words[5] == "ms":
            marks.append((words[0], time.monotonic(), float(words[4].replace(",", ""))))
            if "ok" not in words:
                sys.exit(f"{name}: {line}")
    if run.wait() != 0:
        sys.exit(f"{name}: the runner failed")
    c0, t0 = cpu(proc.pid), time.monotonic()
    for _ in range(a.agg_runs):
        aggregation.run(PORT, "pokec", aggregation.AGG)
    marks.append((f"aggregation x{a.agg_runs}", time.monotonic(), (time.monotonic() - t0) * 1000))
    # The neighbours workload costs the server ~0.15 s: too little for 10 ms ticks, so the
    # same 1,000 queries run NEIGHBOR_PASSES more times (4 connections, answers checked).
    c0, t0 = cpu(proc.pid), time.monotonic()
    neighbors_repeated(a.dataset, a.neighbor_passes)
    marks.append((f"neighbors x{a.neighbor_passes}", time.monotonic(),
                  (time.monotonic() - t0) * 1000))
    time.sleep(0.05)
    stop.set()
    t.join()
    proc.send_signal(signal.SIGTERM)
    proc.wait()

    def cpu_at(when):
        return max((c for (s, c) in samples if s <= when), default=samples[0][1])

    out = {}
    for (_, prev, _), (label, when, wall) in zip(marks, marks[1:]):
        out[label] = (cpu_at(when) - cpu_at(prev), wall)
    return out


def main():
    global PORT
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--agg-runs", type=int, default=20)
    ap.add_argument("--neighbor-passes", type=int, default=10)
    ap.add_argument("--tests", default="aggregation,neighbors,singleRead")
    ap.add_argument("--port", type=int, default=PORT, help="the servers' port (one at a time)")
    ap.add_argument("--runner", help="quiver binary that runs the client (default: the first build)")
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    PORT = a.port
    builds = [b.split("=", 1) for b in a.builds]
    a.runner = a.runner or builds[0][1]
    results = {name: [] for name, _ in builds}
    with open("/tmp/pokec_ab_server.log", "a") as log:
        for r in range(a.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for name, binary in order:
                res = one(name, binary, a, log)
                results[name].append(res)
                print(f"round {r + 1} {name}: " + ", ".join(
                    f"{k} {c:.2f} s cpu / {w:.0f} ms" for k, (c, w) in res.items()),
                    f"(load {open('/proc/loadavg').read().split()[0]})", flush=True)
    labels = list(results[builds[0][0]][0].keys())
    print(f"\nmedians over {a.rounds} rounds: server CPU s / wall ms")
    print(f"{'workload':<18}" + "".join(f"{n:>24}" for n, _ in builds))
    for label in labels:
        cells = []
        for name, _ in builds:
            cs = [x[label][0] for x in results[name]]
            ws = [x[label][1] for x in results[name]]
            cells.append(f"{statistics.median(cs):.2f} s / {statistics.median(ws):,.0f} ms")
        print(f"{label:<18}" + "".join(f"{c:>24}" for c in cells))
    json.dump(results, open("/tmp/pokec_ab.json", "w"), indent=1)


if __name__ == "__main__":
    main()
