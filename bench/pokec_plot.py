#!/usr/bin/env python3
"""Chart of a Pokec benchmark run (bench/pokec.sh), in bench/plot.py's conventions.

    pokec_plot.py CSV [CSV ...] OUT_DIR  -> pokec-<scale>.png per CSV

One horizontal bar per workload: average time per query (ms, log scale), labelled with the
total time; workloads the server did not implement (501) or that failed are marked instead
of drawn.
"""
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def chart(path, out):
    with open(path, newline="") as f:
        data = list(csv.DictReader(f))
    if not data:
        return
    scale = data[0]["scale"]
    names = [r["workload"] for r in data]
    avgs = []
    for r in data:
        v = float(r["avg_ms"]) if r["status"] == "ok" else math.nan
        avgs.append(v if v > 0 else math.nan)
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(names) + 1.5))
    ys = range(len(names))
    ax.barh(ys, [0 if math.isnan(a) else a for a in avgs], color="tab:blue")
    ax.set_yticks(list(ys))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    finite = [a for a in avgs if not math.isnan(a)]
    lo = min(finite) / 3 if finite else 0.001
    ax.set_xlim(left=lo)
    for y, r, a in zip(ys, data, avgs):
        if math.isnan(a):
            text = r["status"]
        else:
            text = f"{a:.3g} ms/query, total {float(r['total_ms']):,.0f} ms"
        ax.text(lo * 1.1 if math.isnan(a) else a * 1.05, y, text, va="center", fontsize="small")
    rss = data[0].get("peak_rss_kib") or "nan"
    try:
        rss_text = f", server peak RSS {float(rss) / 1024:,.0f} MiB"
    except ValueError:
        rss_text = ""
    ax.set_xlabel("average time per query (ms, wall clock / queries, 25 connections)")
    ax.set_title(f"Pokec benchmark, scale {scale}{rss_text}")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"pokec-{scale}.png"), dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[-1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[1:-1]:
        chart(path, out)


if __name__ == "__main__":
    main()
