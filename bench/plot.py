#!/usr/bin/env python3
"""Bar charts (like the 2012 seed posts) from the CSV files of the bench/ experiments.

    plot.py batch-api     CSV OUT_DIR   -> batch-api-complexity-<x>.png
    plot.py journal-sizes CSV OUT_DIR   -> journal-sizes-<n>-ops.png
    plot.py sync-writes   CSV OUT_DIR   -> sync-writes.png
    plot.py client-vs-wrk CSV OUT_DIR   -> client-vs-wrk.png
"""
import csv
import math
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def grouped_bars(ax, groups, series, values, ylabel, legend_title):
    """groups on the x axis, one bar per series within each group."""
    width = 0.8 / max(len(series), 1)
    for i, s in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [values.get((g, s), math.nan) for g in groups], width, label=str(s))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([str(g) for g in groups])
    ax.set_ylabel(ylabel)
    ax.legend(title=legend_title, fontsize="small", ncol=2)
    ax.grid(axis="y", alpha=0.3)


def batch_api(data, out):
    for x in sorted({int(r["complexity"]) for r in data}):
        sub = [r for r in data if int(r["complexity"]) == x]
        conc = sorted({int(r["concurrency"]) for r in sub})
        batches = sorted({int(r["batch_size"]) for r in sub})
        values = {(int(r["concurrency"]), int(r["batch_size"])): num(r["total_seconds"]) for r in sub}
        values = {(conc.index(c), b): v for (c, b), v in values.items()}
        fig, ax = plt.subplots(figsize=(11, 5))
        grouped_bars(ax, list(range(len(conc))), batches, values, "total time (s)", "batch size")
        ax.set_xticklabels([str(c) for c in conc])
        ax.set_xlabel("concurrency")
        n = sub[0]["requests"]
        ax.set_title(f"Inserting {int(n):,} documents, complexity {x}: total time by batch size")
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"batch-api-complexity-{x}.png"), dpi=110)
        plt.close(fig)


def journal_sizes(data, out):
    for n in sorted({int(r["operations"]) for r in data}):
        sub = [r for r in data if int(r["operations"]) == n]
        conc = sorted({int(r["concurrency"]) for r in sub})
        journals = sorted({int(r["journal_mib"]) for r in sub})
        fig, axes = plt.subplots(2, 2, figsize=(12, 8))
        for ax, phase in zip(axes.flat, ["insert", "get", "update", "delete"]):
            values = {
                (conc.index(int(r["concurrency"])), int(r["journal_mib"])): num(r["total_seconds"])
                for r in sub
                if r["phase"] == phase
            }
            grouped_bars(ax, list(range(len(conc))), journals, values, "total time (s)", "journal MiB")
            ax.set_xticklabels([str(c) for c in conc])
            ax.set_xlabel("concurrency")
            ax.set_title(f"{phase}, {n:,} operations")
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"journal-sizes-{n}-ops.png"), dpi=110)
        plt.close(fig)


def sync_writes(data, out):
    conc = sorted({int(r["concurrency"]) for r in data})
    values = {
        (conc.index(int(r["concurrency"])), "waitForSync" if r["wait_for_sync"] == "true" else "no sync"):
            num(r["ops_per_second"])
        for r in data
    }
    fig, ax = plt.subplots(figsize=(10, 5))
    grouped_bars(ax, list(range(len(conc))), ["no sync", "waitForSync"], values, "inserts per second", "")
    ax.set_xticklabels([str(c) for c in conc])
    ax.set_xlabel("concurrency")
    ax.set_yscale("log")
    ax.set_title("Single-document inserts with and without waitForSync")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sync-writes.png"), dpi=110)
    plt.close(fig)


def client_vs_wrk(data, out):
    by = {}
    for r in data:
        by.setdefault((int(r["concurrency"]), r["tool"]), []).append(num(r["requests_per_second"]))
    conc = sorted({c for c, _ in by})
    values = {(conc.index(c), t): statistics.median(v) for (c, t), v in by.items()}
    fig, ax = plt.subplots(figsize=(9, 5))
    grouped_bars(ax, list(range(len(conc))), ["wrk", "quiver-bench"], values, "requests per second (median)", "")
    ax.set_xticklabels([str(c) for c in conc])
    ax.set_xlabel("connections")
    ax.set_title("GET against the hyper floor server: quiver bench vs wrk")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "client-vs-wrk.png"), dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kind, path, out = sys.argv[1:]
    handlers = {
        "batch-api": batch_api,
        "journal-sizes": journal_sizes,
        "sync-writes": sync_writes,
        "client-vs-wrk": client_vs_wrk,
    }
    if kind not in handlers:
        sys.exit(f"unknown chart kind {kind!r}; one of {', '.join(handlers)}")
    os.makedirs(out, exist_ok=True)
    handlers[kind](rows(path), out)


if __name__ == "__main__":
    main()
