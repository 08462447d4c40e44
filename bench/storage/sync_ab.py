#!/usr/bin/env python3
"""Sync-writer scaling, side by side: runs `engine_bench --sync-one WRITERS` for several
group-commit gathering waits (`--gather-us`) and writer counts, rotating the order of the
variants in every repeat, and prints medians of sync/non-sync and sync/raw-fdatasync ratios
(each cell measures the raw fdatasync rate of the disk in the same process, right before).

Usage: bench/storage/sync_ab.py ENGINE_BENCH [--gathers 800] [--writers 1,4,16,64]
                                [--repeats 5] [--window-ms 1000] [--dir D]
Build: bash bench/storage/run.sh --help (builds examples/engine_bench in release mode).
"""
import argparse
import statistics
import subprocess
import tempfile

p = argparse.ArgumentParser()
p.add_argument("bench")
p.add_argument("--gathers", default="800")
p.add_argument("--writers", default="1,4,16,64")
p.add_argument("--repeats", type=int, default=5)
p.add_argument("--window-ms", type=int, default=1000)
p.add_argument("--dir", default=None)
args = p.parse_args()
gathers = [int(g) for g in args.gathers.split(",")]
writers = [int(w) for w in args.writers.split(",")]
runs = {(g, w): [] for g in gathers for w in writers}
base = args.dir or tempfile.gettempdir()
for r in range(args.repeats):
    # Rotate the variant order so that no variant always runs first (or last) in a repeat.
    order = gathers[r % len(gathers):] + gathers[:r % len(gathers)]
    for w in writers:
        for g in order:
            with tempfile.TemporaryDirectory(dir=base) as d:
                out = subprocess.run(
                    [args.bench, "--dir", d, "--gather-us", str(g),
                     "--window-ms", str(args.window_ms), "--sync-one", str(w)],
                    check=True, capture_output=True, text=True, timeout=600,
                ).stdout.strip().splitlines()[-1]
            raw, sync, nosync, syncs = (float(x) for x in out.split(","))
            runs[(g, w)].append((raw, sync, nosync, syncs))
            print(f"repeat {r} gather {g} us writers {w}: raw {raw:.0f}/s sync {sync:.0f}/s "
                  f"non-sync {nosync:.0f}/s fdatasyncs {syncs:.0f} "
                  f"ratio {100 * sync / nosync:.1f} %", flush=True)

print(f"\nmedians of {args.repeats} repeats, {args.window_ms} ms per phase\n")
print("| gather | writers | raw fdatasync/s | sync/s | non-sync/s | sync / non-sync "
      "| sync / raw | commits per fdatasync |")
print("|---|---|---|---|---|---|---|---|")
for g in gathers:
    for w in writers:
        cells = runs[(g, w)]
        med = lambda f: statistics.median(f(c) for c in cells)
        print(f"| {g} us | {w} | {med(lambda c: c[0]):.0f} | {med(lambda c: c[1]):.0f} "
              f"| {med(lambda c: c[2]):.0f} | {100 * med(lambda c: c[1] / c[2]):.1f} % "
              f"| {med(lambda c: c[1] / max(c[0], 1)):.1f}x "
              f"| {med(lambda c: c[1] * args.window_ms / 1000 / max(c[3], 1)):.1f} |")
