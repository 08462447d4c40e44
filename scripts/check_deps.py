#!/usr/bin/env python3
"""Checks that workspace crates depend on each other in one direction only (ARCHITECTURE.md).

Each crate may depend only on the crates listed for it below; a new edge has to be added here
deliberately, which keeps the layering a reviewed decision rather than an accident.
"""
import json
import subprocess
import sys

ALLOWED = {
    "quiver-errors": set(),
    "quiver-types": {"quiver-errors"},
    "quiver-storage": {"quiver-errors", "quiver-types"},
    "quiver-core": {"quiver-errors", "quiver-types", "quiver-storage"},
    "quiver-graph": {"quiver-errors", "quiver-types"},
    "quiver-aql": {"quiver-errors", "quiver-types", "quiver-core", "quiver-graph"},
    "quiver-server": {"quiver-errors", "quiver-types", "quiver-core", "quiver-aql", "quiver-graph"},
    "quiver-bench": {"quiver-errors"},
    "quiver": {
        "quiver-errors", "quiver-types", "quiver-storage", "quiver-core", "quiver-aql",
        "quiver-server", "quiver-bench",
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
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
