#!/usr/bin/env python3
"""ArangoDB 3.12's AQL function list, as its documentation lists it.

Reads the function reference pages of the docs-hugo repository
(site/content/arangodb/3.12/aql/functions/*.md): every heading `NAME()` (or `A() / B()`) is a
function, listed once, under the first page that documents it.

    python3 scripts/aql_inventory.py FUNCTIONS_DIR list
    python3 scripts/aql_inventory.py FUNCTIONS_DIR check docs/aql-coverage.md

`check` fails when the function table of docs/aql-coverage.md and the documentation disagree;
whether quiver-aql agrees with the table is checked by
crates/quiver-server/tests/aql_coverage.rs. The grammar table of docs/aql-coverage.md follows
arangod/Aql/grammar.y of arangodb/arangodb and is kept by hand.
"""

import os
import re
import sys

HEADING = re.compile(r"^#{2,4} ([A-Z][A-Z0-9_]*\(\)(?: / [A-Z][A-Z0-9_]*\(\))*)\s*$")
ROW = re.compile(r"^\|\s*`([A-Z][A-Z0-9_]*)\(\)`\s*\|")


def functions(functions_dir):
    """(name, page) for every documented function, first page wins, in page order."""
    seen = {}
    for name in sorted(os.listdir(functions_dir)):
        if not name.endswith(".md") or name == "_index.md":
            continue
        with open(os.path.join(functions_dir, name), encoding="utf-8") as f:
            for line in f:
                m = HEADING.match(line)
                if not m:
                    continue
                # `ASSERT() / WARN()` documents two functions under one heading.
                for fn in re.findall(r"([A-Z][A-Z0-9_]*)\(\)", m.group(1)):
                    seen.setdefault(fn, name)
    return list(seen.items())


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    found = functions(argv[1])
    if argv[2] == "list":
        for name, page in found:
            print(f"{name:32} {page}")
        print(f"{len(found)} functions", file=sys.stderr)
        return 0
    if argv[2] == "check":
        with open(argv[3], encoding="utf-8") as f:
            rows = [m.group(1) for m in map(ROW.match, f) if m]
        documented = {name for name, _ in found}
        problems = [f"documented but not in the table: {n}()" for n in sorted(documented - set(rows))]
        extra = [n for n in rows if n not in documented]
        print(f"{len(documented)} documented functions, {len(rows)} table rows "
              f"({len(extra)} beyond the documented list)")
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    print(f"unknown command {argv[2]!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
