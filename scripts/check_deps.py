#!/usr/bin/env python3
"""Checks that workspace crates depend on each other in one direction only (ARCHITECTURE.md),
and (through check_module_cycles.py) that the top-level modules inside each crate do too.

Each crate may depend only on the crates listed for it below; a new edge has to be added here
deliberately, which keeps the layering a deliberate decision rather than an accident.
"""
import json
import subprocess
import sys

import check_module_cycles

ALLOWED = {
    "quiver-errors": set(),
    "quiver-metrics": set(),
    "quiver-types": {"quiver-errors"},
    "quiver-geo": {"quiver-errors"},
    "quiver-storage": {"quiver-errors", "quiver-types"},
    "quiver-search": {"quiver-errors", "quiver-types", "quiver-geo"},
    "quiver-core": {
        "quiver-errors", "quiver-types", "quiver-storage", "quiver-search", "quiver-geo",
    },
    "quiver-graph": {"quiver-errors", "quiver-types"},
    "quiver-aql": {
        "quiver-errors", "quiver-types", "quiver-core", "quiver-graph", "quiver-search",
        "quiver-metrics", "quiver-geo",
    },
    "quiver-server": {
        "quiver-errors", "quiver-types", "quiver-core", "quiver-aql", "quiver-graph", "quiver-search",
        "quiver-metrics",
    },
    "quiver-bench": {"quiver-errors"},
    "quiver-tools": {"quiver-errors"},
    "quiver": {
        "quiver-errors", "quiver-types", "quiver-storage", "quiver-core", "quiver-aql",
        "quiver-server", "quiver-bench", "quiver-tools", "quiver-search", "quiver-metrics",
    },
}


def main() -> int:
    meta = json.loads(
        subprocess.check_output(["cargo", "metadata", "--no-deps", "--format-version", "1"])
    )
    names = {p["name"] for p in meta["packages"]}
    bad = []
    for package in meta["packages"]:
        name = package["name"]
        if name not in ALLOWED:
            bad.append(f"{name}: workspace crate missing from scripts/check_deps.py")
            continue
        for dep in package["dependencies"]:
            # Dev-dependencies may reach further (test helpers), normal and build ones may not.
            if dep["name"] in names and dep.get("kind") != "dev" and dep["name"] not in ALLOWED[name]:
                bad.append(f"{name} -> {dep['name']} is not an allowed dependency")
    for line in bad:
        print(line, file=sys.stderr)
    print(f"dependency direction: {len(names)} crates checked, {len(bad)} violations")
    loops = check_module_cycles.main()
    return 1 if bad or loops else 0


if __name__ == "__main__":
    sys.exit(main())
