#!/usr/bin/env python3
"""Fails when two top-level modules of one workspace crate use each other (ARCHITECTURE.md).

Inside a crate the top-level modules (those declared in `lib.rs` or `main.rs`) form layers the
same way the crates do: a module may use the modules below it, never one that uses it back,
directly or through a chain. This script reads every module file of every crate, resolves each
`crate::x::…` and `super::…` path to the top-level module it names, and reports every strongly
connected group of two or more top-level modules with the references that close the loop.

A name the crate root imports (`pub use x::Y;`, `pub(crate) use …`, a private `use`, a group, an
alias, a glob `pub use x::*;`) is nameable as `crate::Y` anywhere in the crate; such a path is
followed through the root's import to the module that holds the item, so `use crate::Y` in a
module counts as a use of `x`, not of the crate root.

Code under `#[cfg(test)]` is not part of the layering (tests may reach anywhere) and is skipped,
as are comments and string literals. Paths inside macros are read like any other text.
"""
import os
import re
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# Crates whose module loops would be reported but not fail the check; each entry is a crate
# name. Empty: every crate's top-level modules are layered. Add a crate only while a loop is
# being removed, and empty it again when that lands.
ALLOW_CYCLES: set = set()

TOKEN = re.compile(
    r"""
      (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*)
    | (?P<raw_string>b?r(?P<hashes>\#*)")
    | (?P<string>b?"(?:\\.|[^"\\])*")
    | (?P<char>b?'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^'\\\n])')
    | (?P<cfg_test>\#\[cfg\(test\)\])
    | (?P<mod_open>\bmod\s+(?P<mod_name>[A-Za-z_][A-Za-z0-9_]*)\s*\{)
    | (?P<open>\{)
    | (?P<close>\})
    | (?P<semi>;)
    | (?P<path>\b(?:crate|super|self)(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)*(?P<group>\s*::\s*(?=\{))?)
    """,
    re.VERBOSE,
)

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def skip_block_comment(text, pos):
    """Position after the block comment starting at `pos` (block comments nest in Rust)."""
    depth = 0
    while pos < len(text):
        if text.startswith("/*", pos):
            depth += 1
            pos += 2
        elif text.startswith("*/", pos):
            depth -= 1
            pos += 2
            if depth == 0:
                return pos
        else:
            pos += 1
    return pos


def brace_group_heads(text, pos):
    """The first path segment of every item of the use-tree group `{…}` opening at `pos`."""
    depth = 0
    start = pos + 1
    heads = []
    i = pos
    limit = min(len(text), pos + 20000)  # a use group is never this long; bounds the scan
    while i < limit:
        c = text[i]
        if c == "{":
            depth += 1
            if depth == 1:
                start = i + 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                heads.append(text[start:i])
                break
        elif c == "," and depth == 1:
            heads.append(text[start:i])
            start = i + 1
        i += 1
    names = []
    for item in heads:
        m = IDENT.match(item.strip())
        if m and m.group(0) != "self":
            names.append(m.group(0))
    return names


def references(path, module):
    """(line, absolute module path) for every crate-relative path in the file outside tests.

    `module` is the file's own module path (a list of names below the crate root).
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = []
    # Stack of (kind, module path) per open brace: kind is "mod", "test" or "block".
    stack = []
    pending_test = False
    pos = 0
    while pos < len(text):
        m = TOKEN.search(text, pos)
        if not m:
            break
        if m.group("line_comment"):
            pos = m.end()
            continue
        if m.group("block_comment"):
            pos = skip_block_comment(text, m.start())
            continue
        if m.group("raw_string") is not None:
            end = text.find('"' + m.group("hashes"), m.end())
            pos = len(text) if end < 0 else end + 1 + len(m.group("hashes"))
            continue
        if m.group("string") or m.group("char"):
            pos = m.end()
            continue
        in_test = any(k == "test" for k, _ in stack)
        current = stack[-1][1] if stack else module
        if m.group("cfg_test"):
            pending_test = True
        elif m.group("mod_open"):
            kind = "test" if pending_test else "mod"
            stack.append((kind, current + [m.group("mod_name")]))
            pending_test = False
        elif m.group("open"):
            stack.append(("test" if pending_test else "block", current))
            pending_test = False
        elif m.group("close"):
            if stack:
                stack.pop()
        elif m.group("semi"):
            # `#[cfg(test)] use …;` or `#[cfg(test)] mod tests;` ends the attribute's item.
            pending_test = False
        elif m.group("path") and not in_test:
            segments = [s.strip() for s in m.group("path").split("::") if s.strip()]
            resolved = resolve(segments, current)
            line = text.count("\n", 0, m.start()) + 1
            if resolved is not None:
                if m.group("group") is not None:
                    # `crate::{a, b}` / `super::x::{a, b}` names several items at once; the
                    # group's braces are read by the scan as ordinary braces afterwards.
                    for name in brace_group_heads(text, m.end()):
                        found.append((line, resolved + [name]))
                else:
                    found.append((line, resolved))
        pos = m.end()
    return found


def resolve(segments, current):
    """The absolute path a `crate::`/`super::`/`self::` path starts with, or None."""
    if segments[0] == "crate":
        base = []
        rest = segments[1:]
    else:
        base = list(current)
        rest = segments
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                if not base:
                    return None
                base.pop()
            rest = rest[1:]
    return base + rest


def module_files(src, root_file):
    """(file, module path) for every module file reachable from the crate root."""
    out = []
    queue = [(os.path.join(src, root_file), [], src)]
    seen = 0
    while queue:
        seen += 1
        assert seen < 10000, "module tree unexpectedly large"
        path, module, directory = queue.pop()
        out.append((path, module))
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"//[^\n]*", "", text)
        for m in re.finditer(
            r"(?m)^\s*(#\[cfg\(test\)\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;",
            text,
        ):
            if m.group(1):
                continue  # test-only module file
            name = m.group(2)
            for candidate, child_dir in (
                (os.path.join(directory, name + ".rs"), os.path.join(directory, name)),
                (os.path.join(directory, name, "mod.rs"), os.path.join(directory, name)),
            ):
                if os.path.isfile(candidate):
                    queue.append((candidate, module + [name], child_dir))
                    break
    return out


USE_ITEM = re.compile(
    r"(?P<attributes>(?:\#\[[^\]]*\]\s*)*)"
    r"\b(?P<visibility>pub(?:\s*\([^)]*\))?\s+)?use\s+(?P<tree>[^;]*);"
)
USE_TOKEN = re.compile(r"\s*(::|[A-Za-z_][A-Za-z0-9_]*|[{},*])")
PUBLIC_ITEM = re.compile(
    r"\bpub(?:\s*\([^)]*\))?\s+(?:(?:const|async|unsafe|extern\s+\"[^\"]*\")\s+)*"
    r"(?:fn|struct|enum|union|trait|type|const|static|mod)\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
)


def strip_comments_and_strings(text):
    """The text with comments, string and char literals blanked (the tokenizer's rules)."""
    out = []
    pos = 0
    while pos < len(text):
        m = TOKEN.search(text, pos)
        if not m:
            break
        if m.group("line_comment"):
            out.append(text[pos : m.start()])
            pos = m.end()
        elif m.group("block_comment"):
            out.append(text[pos : m.start()] + " ")
            pos = skip_block_comment(text, m.start())
        elif m.group("raw_string") is not None:
            out.append(text[pos : m.start()] + '""')
            end = text.find('"' + m.group("hashes"), m.end())
            pos = len(text) if end < 0 else end + 1 + len(m.group("hashes"))
        elif m.group("string") or m.group("char"):
            out.append(text[pos : m.start()] + '""')
            pos = m.end()
        else:
            out.append(text[pos : m.end()])
            pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def use_tree_leaves(tree):
    """(path, name it is imported as) for every leaf of a use tree; a glob's name is `*`.

    `a::{b::C, D as E, f::*, self}` gives (a b C, C), (a D, E), (a f, *) and (a, a).
    """
    tokens = []
    pos = 0
    while pos < len(tree):
        m = USE_TOKEN.match(tree, pos)
        if not m:
            break
        tokens.append(m.group(1))
        pos = m.end()
    leaves = []

    def parse(i, prefix):
        """Reads one use tree from token i under `prefix`; returns the index after it."""
        path = list(prefix)
        while i < len(tokens):
            token = tokens[i]
            if token == "{":
                i += 1
                while i < len(tokens) and tokens[i] != "}":
                    i = parse(i, path)
                    if i < len(tokens) and tokens[i] == ",":
                        i += 1
                return i + 1
            if token == "*":
                leaves.append((path, "*"))
                return i + 1
            if token == "::":
                i += 1
                continue
            if token in (",", "}"):
                break
            if token == "self" and path:
                i += 1
                name = path[-1]
            else:
                path = path + [token]
                name = token
                i += 1
            if i + 1 < len(tokens) and tokens[i] == "as":
                name = tokens[i + 1]
                i += 2
            if i >= len(tokens) or tokens[i] in (",", "}"):
                if name != "_":
                    leaves.append((path, name))
                return i
        return i

    i = 0
    while i < len(tokens):
        i = parse(i, [])
        i += 1
    return leaves


def top_level(pattern, text):
    """The matches of `pattern` in `text` that start outside every brace block (items of the
    file itself, not of an inline module, an impl or a function body). Each match must hold
    as many `{` as `}` (a use tree's groups do)."""
    depth = 0
    last = 0
    for m in pattern.finditer(text):
        between = text[last : m.start()]
        depth += between.count("{") - between.count("}")
        last = m.end()
        if depth == 0:
            yield m


def public_names(path):
    """The names a glob import of the module file at `path` brings in: its items with a
    visibility and the names it imports with one."""
    with open(path, encoding="utf-8") as f:
        text = strip_comments_and_strings(f.read())
    names = {m.group("name") for m in top_level(PUBLIC_ITEM, text)}
    for m in top_level(USE_ITEM, text):
        if "cfg(test)" not in m.group("attributes") and m.group("visibility"):
            names.update(name for _, name in use_tree_leaves(m.group("tree")) if name != "*")
    return names


def root_imports(src, root_file, files, tops):
    """{name: absolute path} for every name the crate root imports from one of its own
    top-level modules, so that `crate::name` can be followed to the module holding the item.

    Every visibility counts (a private `use` in the root is nameable as `crate::name` by every
    module below it); imports under `#[cfg(test)]` and inside blocks do not. Explicit imports
    win over glob imports, as in Rust; a glob is followed when it names a module file. Imports
    of other crates' items are left out: a path through them names no module of this crate.
    """
    with open(os.path.join(src, root_file), encoding="utf-8") as f:
        text = strip_comments_and_strings(f.read())
    module_file = {tuple(module): path for path, module in files}
    explicit = {}
    globbed = {}
    for m in top_level(USE_ITEM, text):
        if "cfg(test)" in m.group("attributes"):
            continue
        for path, name in use_tree_leaves(m.group("tree")):
            while path and path[0] in ("crate", "self"):
                path = path[1:]
            if not path:
                continue
            if name != "*":
                explicit[name] = path
            elif tuple(path) in module_file:
                for item in public_names(module_file[tuple(path)]):
                    globbed.setdefault(item, path + [item])
    imports = {**globbed, **explicit}
    resolved = {}
    for name, path in imports.items():
        # An import of a name the root imported itself (`use x::Y; pub use Y as Z;`).
        for _ in range(len(imports)):
            if path[0] in tops or path[0] not in imports:
                break
            path = imports[path[0]] + path[1:]
        if path[0] in tops:
            resolved[name] = path
    return resolved


def crate_cycles(crate_dir):
    """Loops among the top-level modules of one crate: list of (modules, evidence lines)."""
    src = os.path.join(crate_dir, "src")
    loops = []
    for root_file in ("lib.rs", "main.rs"):
        if not os.path.isfile(os.path.join(src, root_file)):
            continue
        files = module_files(src, root_file)
        tops = {m[0] for _, m in files if m}
        imports = root_imports(src, root_file, files, tops)
        edges = {}
        for path, module in files:
            if not module:
                continue
            for line, target in references(path, module):
                if target and target[0] not in tops and target[0] in imports:
                    # `crate::Y` where the root imports `Y` from a module: a use of that module.
                    target = imports[target[0]] + target[1:]
                if not target or target[0] not in tops or target[0] == module[0]:
                    continue
                rel = os.path.relpath(path, ROOT)
                edges.setdefault(module[0], {}).setdefault(target[0], f"{rel}:{line}")
        for group in strongly_connected(sorted(tops), edges):
            if len(group) > 1:
                evidence = [
                    f"{a} -> {b} ({edges[a][b]})"
                    for a in sorted(group)
                    for b in sorted(edges.get(a, {}))
                    if b in group
                ]
                loops.append((sorted(group), evidence))
    return loops


def strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative (bounded by the number of nodes and edges)."""
    index = {}
    low = {}
    on_stack = set()
    stack = []
    groups = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


SELF_CHECK = {
    "lib.rs": (
        "pub mod a;\npub mod b;\npub mod c;\nmod d;\nmod e;\nmod f;\nmod g;\n"
        "pub use e::Thing;\n"
        "pub(crate) use f::{inner::{Other as Renamed}};\n"
        "#[doc(hidden)]\npub use g::*;\n"
        "pub use std::fmt::Debug;\n"
        "use Renamed as Twice;\n"
        # Imports of the root's tests and of a function body name nothing for the modules.
        "#[allow(unused)]\n#[cfg(test)]\nuse e::Hidden;\n"
        "fn h() { use f::Hidden; }\n"
    ),
    # a -> b through a grouped use; the test module's use of c does not count.
    "a.rs": "use crate::{b::Thing, d};\n#[cfg(test)]\nmod tests {\n    use crate::c::X;\n}\n",
    # b -> a through a nested file and `super::super`; comments and strings do not count.
    "b.rs": "mod inner;\n// crate::c::Y\nconst S: &str = \"crate::c\";\n",
    "b/inner.rs": "fn f() { super::super::a::g(); let c = '{'; }\n",
    # c -> d only (another crate's item and the root's test and block imports are no edge),
    # so c stays out of the loop of e, f and g although g uses it.
    "c.rs": "use crate::d::Z;\nuse crate::{Debug, Hidden};\n",
    "d.rs": "",
    # e -> f -> g -> e, every step hidden behind an import of the crate root: an alias, an
    # import of an import, a glob and `super::` from a top-level module.
    "e.rs": "pub struct Thing;\nfn f(_: crate::Twice) {}\n",
    "f.rs": "pub mod inner { pub struct Other; }\nuse crate::{Debug, Globbed};\n",
    "g.rs": (
        # The root's explicit `pub use e::Thing` shadows the `Thing` its glob brings from here.
        "pub struct Globbed;\npub struct Thing;\n"
        "pub(crate) fn helper() { let _ = super::Thing; crate::c::f(); }\n"
    ),
}

USE_TREES = {
    "a::B": [(["a", "B"], "B")],
    "a::{b::C, D as E, f::*, self, _x as _}": [
        (["a", "b", "C"], "C"),
        (["a", "D"], "E"),
        (["a", "f"], "*"),
        (["a"], "a"),
    ],
    "self::x::{y::{Z, W}, V}": [
        (["self", "x", "y", "Z"], "Z"),
        (["self", "x", "y", "W"], "W"),
        (["self", "x", "V"], "V"),
    ],
}


def self_check():
    """The checker finds the known loops and nothing else in a small synthetic crate."""
    for tree, leaves in USE_TREES.items():
        assert use_tree_leaves(tree) == leaves, f"use-tree reader is broken on {tree}"
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in SELF_CHECK.items():
            path = os.path.join(tmp, "src", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        loops = sorted(group for group, _ in crate_cycles(tmp))
    assert loops == [["a", "b"], ["e", "f", "g"]], f"module-loop checker is broken: found {loops}"


def main() -> int:
    self_check()
    crates_dir = os.path.join(ROOT, "crates")
    failed = 0
    checked = 0
    for crate in sorted(os.listdir(crates_dir)):
        crate_dir = os.path.join(crates_dir, crate)
        if not os.path.isdir(os.path.join(crate_dir, "src")):
            continue
        checked += 1
        for group, evidence in crate_cycles(crate_dir):
            allowed = crate in ALLOW_CYCLES
            tag = "allowed" if allowed else "error"
            print(f"{crate}: module loop ({tag}): {', '.join(group)}", file=sys.stderr)
            for line in evidence:
                print(f"    {line}", file=sys.stderr)
            if not allowed:
                failed += 1
    print(f"module loops: {checked} crates checked, {failed} loops outside the allow-list")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
