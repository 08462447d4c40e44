#!/usr/bin/env python3
"""Side-by-side A/B of the journal-size cost: runs `engine_bench --journal-one MIB OPS` for
two builds (A = before, B = after) and journal sizes, alternating A and B and the size order
in every repeat, and prints medians and the ratio of each size to 32 MiB within each build.

Usage: bench/storage/journal_ab.py A_BIN B_BIN [--ops N] [--repeats R] [--sizes 1,32] [--dir D]
Build a binary: bash bench/storage/run.sh --help (builds examples/engine_bench in release) and
copy $CARGO_TARGET_DIR/release/examples/engine_bench away before switching commits.
"""
import argparse
import statistics
import subprocess
import tempfile

p = argparse.ArgumentParser()
p.add_argument("a")
p.add_argument("b")
p.add_argument("--ops", type=int, default=100_000)
p.add_argument("--repeats", type=int, default=5)
p.add_argument("--sizes", default="1,32")
p.add_argument("--dir", default=None)
args = p.parse_args()
sizes = [int(s) for s in args.sizes.split(",")]
cols = ["insert/s", "replace/s", "get/s", "remove/s", "collect ms"]
runs = {(b, s): [] for b in ("A", "B") for s in sizes}
base = args.dir or tempfile.gettempdir()
for r in range(args.repeats):
    builds = [("A", args.a), ("B", args.b)]
    if r % 2:
        builds.reverse()
    order = sizes if r % 2 == 0 else list(reversed(sizes))
    for size in order:
        for name, binary in builds:
            with tempfile.TemporaryDirectory(dir=base) as d:
                out = subprocess.run(
                    [binary, "--dir", d, "--journal-one", str(size), str(args.ops)],
                    check=True, capture_output=True, text=True,
                ).stdout.strip().splitlines()[-1]
            vals = [float(x) for x in out.split(",")]
            runs[(name, size)].append(vals)
            print(f"repeat {r} build {name} {size} MiB: {out}", flush=True)

print(f"\nmedians of {args.repeats} alternating repeats, {args.ops} ops per phase\n")
print("| build | journal | " + " | ".join(cols) + " | insert vs 32 MiB | replace vs 32 MiB |")
print("|---|---|" + "---|" * (len(cols) + 2))
for name in ("A", "B"):
    med = {s: [statistics.median(v[i] for v in runs[(name, s)]) for i in range(len(cols))]
           for s in sizes}
    ref = med[max(sizes)]
    for s in sizes:
        m = med[s]
        print(f"| {name} | {s} MiB | " + " | ".join(f"{x:.0f}" if i < 4 else f"{x:.1f}"
              for i, x in enumerate(m))
              + f" | {m[0] / ref[0]:.2f} | {m[1] / ref[1]:.2f} |")
