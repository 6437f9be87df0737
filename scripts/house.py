#!/usr/bin/env python3
"""House rules the compiler does not check, run by scripts/test.sh.

1. No production function longer than 80 lines (Rust under crates/*/src and
   src/; test modules and tests/ folders are exempt).
2. No module cycles in any crate, at any level: among the sibling modules of
   each folder (a crate's root, and every module folder below it), A uses B
   when a file of A names `crate::...::B`, or `super::B` from just under the
   folder; a folder's own mod.rs is its parent, not a sibling.

Prints each breach and exits 1 if there is any.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_LINES = 80
FN = re.compile(r"^\s*(pub(\([\w:]+\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")
TEST_MOD = re.compile(r"^\s*#\[cfg\(test\)\]")


def strip(line):
    """The line without string literals and // comments (enough for brace counting)."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split("//", 1)[0]


def block_end(lines, start):
    """Index of the line closing the block opened at or after `start`, or None for a declaration."""
    depth = 0
    opened = False
    for j in range(start, len(lines)):
        code = strip(lines[j])
        if not opened and code.rstrip().endswith(";") and "{" not in code:
            return None
        for c in code:
            if c == "{":
                depth += 1
                opened = True
            elif c == "}":
                depth -= 1
        if opened and depth == 0:
            return j
    return None


def long_functions(path):
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        if TEST_MOD.match(lines[i]):
            end = block_end(lines, i + 1)
            i = (end if end is not None else i) + 1
            continue
        m = FN.match(lines[i])
        if m:
            end = block_end(lines, i)
            if end is not None:
                n = end - i + 1
                if n > MAX_LINES:
                    yield m.group(6), i + 1, n
        i += 1


def production_sources():
    for pattern in ("crates/*/src/**/*.rs", "src/**/*.rs"):
        for p in sorted(ROOT.glob(pattern)):
            rel = p.relative_to(ROOT)
            if "tests" in rel.parts or p.name == "tests.rs":
                continue
            yield p


CRATES = ["crates/core/src", "crates/remote/src", "crates/server/src", "src"]


def code_of(p):
    """A file's code without comments, strings or its test module (tests may use anything)."""
    text = "\n".join(strip(line) for line in p.read_text().split("\n") if not line.lstrip().startswith("//"))
    return text.split("#[cfg(test)]", 1)[0]


def uses(text, prefix):
    """Names used as `<prefix>::name` or inside `use <prefix>::{...}` groups."""
    found = set(re.findall(prefix + r"::(\w+)", text))
    for group in re.findall(r"use " + prefix + r"::\{([^;]*)\}", text, re.S):
        found |= set(re.findall(r"(?:^|[,{\s])(\w+)::", group))
        found |= set(re.findall(r"(?:^|[,{\s])(\w+)\s*[,}]", group))
    return found


def module_graph(src, path=()):
    """Graph of the sibling modules directly under `src/<path>`: A -> B when code in A (or below it) uses B."""
    base = src.joinpath(*path)
    roots = {"lib", "main", "mod"}
    modules = {p.stem for p in base.glob("*.rs") if p.stem not in roots}
    modules |= {p.name for p in base.iterdir() if p.is_dir() and p.name != "tests" and any(p.rglob("*.rs"))}
    graph = {m: set() for m in modules}
    crate_prefix = r"crate" + "".join(r"::" + part for part in path)
    for p in base.rglob("*.rs"):
        rel = p.relative_to(base)
        if rel.parts[0].removesuffix(".rs") in roots or "tests" in rel.parts or p.name == "tests.rs":
            continue
        owner = rel.parts[0].removesuffix(".rs")
        if owner not in graph:
            continue
        text = code_of(p)
        used = uses(text, crate_prefix)
        if path and len(rel.parts) == 1:
            used |= uses(text, "super")
        if path and len(rel.parts) == 2 and rel.parts[1] == "mod.rs":
            used |= uses(text, "super")
        graph[owner] |= {u for u in used if u in modules and u != owner}
    return graph


def all_graphs():
    """(label, graph) for every module level of every crate."""
    for crate in CRATES:
        src = ROOT / crate
        yield crate, module_graph(src)
        for d in sorted(p for p in src.rglob("*") if p.is_dir() and "tests" not in p.parts):
            path = d.relative_to(src).parts
            yield f"{crate}/{'/'.join(path)}", module_graph(src, path)


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    breaches = []
    for p in production_sources():
        for name, line, n in long_functions(p):
            breaches.append(f"{p.relative_to(ROOT)}:{line}: fn {name} is {n} lines (limit {MAX_LINES})")
    modules = edges = 0
    for label, graph in all_graphs():
        modules += len(graph)
        edges += sum(len(v) for v in graph.values())
        for comp in cycles(graph):
            cyc = [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
            breaches.append(f"{label} module cycle: " + ", ".join(cyc))
    for b in breaches:
        print(b)
    print(f"house: {len(breaches)} breach(es); {len(CRATES)} crates, {modules} modules, {edges} dependencies")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
