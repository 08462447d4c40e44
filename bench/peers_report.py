#!/usr/bin/env python3
"""Summarises bench/peers.sh runs: for each database and workload the median over rounds of
the total time, its ratio to QuiverDB (= 100 %, as the seed's charts used ArangoDB), whether the
answers were right, load time, size on disk, peak memory and CPU time. Writes summary.md and
summary.json into the run directory, and bar charts (PNG) when matplotlib is importable.

    python3 bench/peers_report.py bench/results/peers-0.1
"""
import glob
import json
import os
import statistics
import sys

WORKLOADS = ["singleRead", "singleWrite", "singleWriteSync", "aggregation", "neighbors",
             "neighbors2", "neighbors2data", "shortest", "hardPath"]
ORDER = ["quiver", "postgresql-tabular", "postgresql-jsonb", "neo4j"]


def load(run_dir):
    runs = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "*-r*.json"))):
        with open(path) as f:
            report = json.load(f)
        runs.setdefault(report.get("database", "quiver"), []).append(report)
    return runs


def summarise(runs):
    out = {}
    for db, reports in runs.items():
        entry = {"rounds": len(reports), "workloads": {}}
        for name in WORKLOADS:
            totals, statuses, avgs = [], set(), []
            for r in reports:
                for w in r.get("workloads", []):
                    if w["name"] == name:
                        statuses.add(w["status"])
                        if w["status"] == "ok":
                            totals.append(w["totalMs"])
                            avgs.append(w["avgMs"])
            if statuses:
                entry["workloads"][name] = {
                    "status": "ok" if statuses == {"ok"} else "/".join(sorted(statuses)),
                    "medianTotalMs": statistics.median(totals) if totals else None,
                    "medianAvgMs": statistics.median(avgs) if avgs else None,
                }
        med = lambda xs: statistics.median(xs) if xs else None
        entry["loadSeconds"] = med([r["load"]["seconds"] for r in reports if "load" in r])
        entry["diskMiB"] = med([r["load"]["diskKiB"] / 1024 for r in reports if "load" in r])
        entry["peakMemoryMiB"] = med([r["server"]["peakRssKiB"] / 1024 for r in reports])
        # A one-process server's exact high-water mark since it started (load included);
        # reports of builds before it was recorded have none.
        entry["hwmMiB"] = med([r["server"]["hwmKiB"] / 1024 for r in reports
                               if r["server"].get("hwmKiB") is not None])
        entry["cpuSeconds"] = med([r["server"]["cpuSecondsDuringRun"] for r in reports
                                   if r["server"].get("cpuSecondsDuringRun") is not None])
        entry["info"] = reports[0].get("databaseInfo")
        out[db] = entry
    return out


def fmt(x, digits=1):
    return "–" if x is None else f"{x:,.{digits}f}"


def table(summary, scale):
    dbs = [d for d in ORDER if d in summary] + [d for d in summary if d not in ORDER]
    base = summary.get("quiver", {}).get("workloads", {})
    lines = [f"### Scale {scale}: median total time per workload (ms) and relative to QuiverDB",
             "", "| workload | " + " | ".join(dbs) + " |", "|---|" + "---|" * len(dbs)]
    for name in WORKLOADS:
        cells = []
        for db in dbs:
            w = summary[db]["workloads"].get(name)
            if not w:
                cells.append("not run")
            elif w["status"] != "ok":
                cells.append(w["status"])
            else:
                b = base.get(name, {}).get("medianTotalMs")
                rel = f" ({100 * w['medianTotalMs'] / b:.0f} %)" if b else ""
                cells.append(fmt(w["medianTotalMs"]) + rel)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for label, key in [("load (s)", "loadSeconds"), ("size on disk (MiB)", "diskMiB"),
                       ("peak memory during the workloads, sampled (MiB)", "peakMemoryMiB"),
                       ("VmHWM since start, one-process servers (MiB)", "hwmMiB"),
                       ("server CPU during run (s)", "cpuSeconds")]:
        lines.append(f"| {label} | " + " | ".join(fmt(summary[d][key]) for d in dbs) + " |")
    lines.append("")
    lines.append("Rounds: " + ", ".join(f"{d} {summary[d]['rounds']}" for d in dbs) + ".")
    return "\n".join(lines) + "\n"


def charts(summary, run_dir, scale):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not importable: no charts", file=sys.stderr)
        return
    dbs = [d for d in ORDER if d in summary]
    base = summary.get("quiver", {}).get("workloads", {})
    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.8 / max(1, len(dbs))
    for i, db in enumerate(dbs):
        values = []
        for name in WORKLOADS:
            w = summary[db]["workloads"].get(name, {})
            b = base.get(name, {}).get("medianTotalMs")
            ok = w.get("status") == "ok" and w.get("medianTotalMs") is not None and b
            values.append(100 * w["medianTotalMs"] / b if ok else 0)
        ax.bar([x + i * width for x in range(len(WORKLOADS))], values, width, label=db)
    ax.set_xticks([x + width * (len(dbs) - 1) / 2 for x in range(len(WORKLOADS))])
    ax.set_xticklabels(WORKLOADS, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.axhline(100, color="black", linewidth=0.8)
    ax.set_ylabel("time relative to QuiverDB (%, log scale; 0 = not run or wrong)")
    ax.set_title(f"Pokec workloads, scale {scale}: lower is faster")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(run_dir, "relative-times.png"), dpi=110)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(dbs, [summary[d]["peakMemoryMiB"] or 0 for d in dbs])
    ax.set_ylabel("peak server memory (MiB)")
    ax.set_title(f"Peak memory during the run, scale {scale}")
    fig.tight_layout()
    fig.savefig(os.path.join(run_dir, "memory.png"), dpi=110)


def main():
    run_dir = sys.argv[1]
    runs = load(run_dir)
    if not runs:
        print(f"no run reports in {run_dir}", file=sys.stderr)
        return 1
    scale = next(iter(runs.values()))[0]["dataset"]["scale"]
    summary = summarise(runs)
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    text = table(summary, scale)
    with open(os.path.join(run_dir, "summary.md"), "w") as f:
        f.write(text)
    print(text)
    charts(summary, run_dir, scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
