#!/usr/bin/env python3
"""ArangoDB 3.12's single-server HTTP API, as its documentation lists it.

Reads the OpenAPI blocks of the docs-hugo repository's 3.12 HTTP API pages
(site/content/arangodb/3.12/develop/http-api/**.md) and lists every path and method with the
page and section it is documented in, its query parameters and its top-level body attributes.

    python3 scripts/api_inventory.py DOCS_DIR list        # one line per endpoint
    python3 scripts/api_inventory.py DOCS_DIR skeleton    # markdown rows for a new endpoint
    python3 scripts/api_inventory.py DOCS_DIR check docs/api-coverage.md

DOCS_DIR is the http-api directory of a docs-hugo checkout. `check` fails when the table in
docs/api-coverage.md and the documentation disagree (an endpoint missing from the table, or a
row the documentation does not have); whether the server agrees with the table is checked by
crates/quiver-server/tests/api_coverage.rs.
"""

import os
import re
import sys

import yaml

METHODS = ("get", "head", "post", "put", "patch", "delete", "options")
DB_PREFIX = "/_db/{database-name}"


def front_title(text):
    """The page's menu title (or title) from its front matter."""
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    if not m:
        return None
    meta = yaml.safe_load(m.group(1)) or {}
    return meta.get("menuTitle") or meta.get("title")


def openapi_blocks(text):
    """Yields (section heading, parsed OpenAPI block) in page order."""
    heading = None
    in_block = False
    lines = []
    for line in text.splitlines():
        if in_block:
            if line.rstrip() == "```":
                in_block = False
                for doc in yaml.safe_load_all("\n".join(lines)):
                    if isinstance(doc, dict) and "paths" in doc:
                        yield heading, doc
                lines = []
            else:
                lines.append(line)
        elif line.startswith("```openapi"):
            in_block = True
        elif re.match(r"#{2,4} ", line):
            heading = line.lstrip("#").strip()


def body_attributes(operation):
    """Top-level attribute names of a JSON request body, if it has an object schema."""
    content = (operation.get("requestBody") or {}).get("content") or {}
    names = []
    for media in content.values():
        schema = (media or {}).get("schema") or {}
        for name, prop in (schema.get("properties") or {}).items():
            names.append(name)
            # One level of nested options (`options.fullCount` of a cursor, ...).
            if name == "options":
                nested = (prop or {}).get("properties") or {}
                names.extend(f"{name}.{inner}" for inner in nested)
    return names


def merged(found):
    """One entry per method and path (a path documented in two sections, such as the import
    formats or the two View types, keeps its first section and the union of its options)."""
    out = {}
    for e in found:
        key = (e["method"], e["path"])
        if key not in out:
            out[key] = dict(e, query=list(e["query"]), body=list(e["body"]))
            continue
        for field in ("query", "body"):
            for name in e[field]:
                if name not in out[key][field]:
                    out[key][field].append(name)
    return list(out.values())


def endpoints(docs_dir):
    """Every documented endpoint, grouped by page in the documentation's menu order."""
    pages = []
    for root, _dirs, files in os.walk(docs_dir):
        for name in files:
            if name.endswith(".md"):
                pages.append(os.path.join(root, name))
    found = []
    for page in sorted(pages):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(page, docs_dir)
        group = front_title(text) or rel
        if os.path.basename(rel) != "_index.md" and os.path.dirname(rel):
            parent = os.path.join(docs_dir, os.path.dirname(rel), "_index.md")
            if os.path.exists(parent):
                with open(parent, encoding="utf-8") as f:
                    group = f"{front_title(f.read())} / {group}"
        for section, block in openapi_blocks(text):
            for path, item in ((block or {}).get("paths") or {}).items():
                for method, operation in (item or {}).items():
                    if method not in METHODS:
                        continue
                    operation = operation or {}
                    params = [
                        p["name"]
                        for p in operation.get("parameters") or []
                        if p.get("in") == "query"
                    ]
                    found.append(
                        {
                            "page": rel,
                            "group": group,
                            "section": section,
                            "method": method.upper(),
                            "path": short_path(path),
                            "query": params,
                            "body": body_attributes(operation),
                        }
                    )
    return found


def short_path(path):
    """The path without the database prefix (every route is served under /_db/{db}/ too)."""
    if path.startswith(DB_PREFIX):
        return path[len(DB_PREFIX):] or "/"
    return path


ROW = re.compile(r"^\|\s*(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)\s*\|\s*`([^`]+)`\s*\|")


# Rows under this heading are routes arangod 3.12 registers that its documentation no longer
# lists (the simple-query API); `check` leaves them out.
UNDOCUMENTED = "## Beyond the documentation"


def table_rows(coverage_path):
    rows = []
    with open(coverage_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith(UNDOCUMENTED):
                break
            m = ROW.match(line)
            if m:
                rows.append((m.group(1), m.group(2)))
    return rows


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    docs_dir, command = argv[1], argv[2]
    found = endpoints(docs_dir)
    if command == "list":
        for e in found:
            print(f"{e['method']:7} {e['path']:70} {e['group']} :: {e['section']}")
        print(f"{len(found)} endpoints", file=sys.stderr)
        return 0
    if command == "skeleton":
        group = None
        for e in merged(found):
            if e["group"] != group:
                group = e["group"]
                print(f"\n## {group}\n")
                print("| method | path | status | proof or reason | options |")
                print("|---|---|---|---|---|")
            opts = ", ".join(e["query"] + e["body"])
            print(f"| {e['method']} | `{e['path']}` | missing | issue 21 | {opts} |")
        return 0
    if command == "check":
        documented = {(e["method"], e["path"]) for e in found}
        rows = table_rows(argv[3])
        listed = set(rows)
        problems = []
        for key in sorted(documented - listed):
            problems.append(f"documented but not in the table: {key[0]} {key[1]}")
        for key in sorted(listed - documented):
            problems.append(f"in the table but not documented: {key[0]} {key[1]}")
        if len(rows) != len(listed):
            problems.append("the table lists an endpoint twice")
        for p in problems:
            print(p, file=sys.stderr)
        print(f"{len(documented)} documented endpoints, {len(listed)} table rows")
        return 1 if problems else 0
    print(f"unknown command {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
