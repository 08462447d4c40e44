#!/usr/bin/env python3
"""A/B of the Pokec runner's client CPU per neighbours query (docs/benchmarks/peers.md).

    bench/pokec_client_ab.py --server BINARY --data DIR --dataset DATASET [--rounds 7] \
        [--runs 10] [--port 18632] NAME=BINARY [NAME=BINARY ...]

Starts one server (BINARY, on the data directory DIR loaded with DATASET) and, for every round
and client build in turn (the order reverses every other round), runs `quiver bench pokec run
--tests neighbors` RUNS times and `--tests hardPath` (one query) RUNS times with that build as
the client. The client's CPU time (user + system, from the children's rusage) of the hardPath
runs is subtracted from that of the neighbours runs, which leaves the 1,000 neighbours queries'
share (the runner's start, warmup and data set reading are the same in both). Prints per round
and as medians: client µs per neighbours query and the runner's wall time of the 1,000 queries.
Every answer is verified by the runner.
"""
import argparse, os, resource, signal, statistics, subprocess, sys, time, urllib.error, urllib.request


def wait_for(port, proc):
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit(f"the server exited with status {proc.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_api/version", timeout=1)
            return
        except urllib.error.HTTPError:
            return
        except Exception:
            time.sleep(0.1)
    sys.exit("the server did not start")


def run(binary, port, dataset, tests):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([binary, "bench", "pokec", "run", "--endpoint", f"tcp://127.0.0.1:{port}",
                          "--dir", dataset, "--tests", tests],
                         capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = None
    for line in out.splitlines():
        words = line.split()
        if len(words) > 5 and words[0] == tests and words[3] == "total":
            if "ok" not in words:
                sys.exit(f"{binary}: {line}")
            wall = float(words[4].replace(",", ""))
    if wall is None:
        sys.exit(f"{binary}: no result line for {tests}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--port", type=int, default=18632)
    ap.add_argument("clients", nargs="+")
    a = ap.parse_args()
    clients = [c.split("=", 1) for c in a.clients]
    server = subprocess.Popen([a.server, "serve", "--server.endpoint", f"tcp://127.0.0.1:{a.port}",
                               "--database.directory", a.data],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(a.port, server)
        # Loads what a fresh server loads on first use (the edge index).
        run(clients[0][1], a.port, a.dataset, "neighbors")
        results = {name: [] for name, _ in clients}
        for r in range(a.rounds):
            for name, binary in (clients if r % 2 == 0 else clients[::-1]):
                neighbors = fixed = 0.0
                walls = []
                for _ in range(a.runs):
                    cpu, wall = run(binary, a.port, a.dataset, "neighbors")
                    neighbors += cpu
                    walls.append(wall)
                    fixed += run(binary, a.port, a.dataset, "hardPath")[0]
                per_query = (neighbors - fixed) / (a.runs * 1000) * 1e6
                wall = statistics.median(walls)
                results[name].append((per_query, wall))
                load = open("/proc/loadavg").read().split()[0]
                print(f"round {r + 1} {name}: client {per_query:.1f} µs/query, "
                      f"neighbours wall {wall:.1f} ms (load {load})", flush=True)
        print(f"\nmedians over {a.rounds} rounds")
        for name, _ in clients:
            cpu = statistics.median(x[0] for x in results[name])
            wall = statistics.median(x[1] for x in results[name])
            print(f"{name}: client {cpu:.1f} µs/query, neighbours wall {wall:.1f} ms")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()


if __name__ == "__main__":
    main()
