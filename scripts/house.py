#!/usr/bin/env python3
"""House rules the compiler does not check, run by scripts/test.sh.

1. No production function longer than 80 lines (Rust under crates/*/src and
   src/; test modules and tests/ folders are exempt).
2. No cycles between the top-level modules of crates/core (module A uses B
   when a file of A names `crate::B`; `use super::` inside A stays inside A).

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


def core_graph():
    src = ROOT / "crates" / "core" / "src"
    modules = {p.stem for p in src.glob("*.rs") if p.stem != "lib"}
    modules |= {p.name for p in src.iterdir() if p.is_dir()}
    graph = {m: set() for m in modules}
    for p in src.rglob("*.rs"):
        rel = p.relative_to(src)
        if rel.parts[0] == "lib.rs" or "tests" in rel.parts or p.name == "tests.rs":
            continue
        owner = rel.parts[0].removesuffix(".rs")
        text = "\n".join(
            strip(line)
            for line in p.read_text().split("\n")
            if not line.lstrip().startswith("//")
        )
        # Test modules inside a file may use anything.
        text = text.split("#[cfg(test)]", 1)[0]
        for used in re.findall(r"crate::(\w+)", text):
            if used in modules and used != owner:
                graph[owner].add(used)
        for group in re.findall(r"use crate::\{([^;]*)\}", text, re.S):
            for used in re.findall(r"(?:^|[,{\s])(\w+)::", group):
                if used in modules and used != owner:
                    graph[owner].add(used)
    return graph


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
    graph = core_graph()
    for comp in cycles(graph):
        edges = [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
        breaches.append("crates/core module cycle: " + ", ".join(edges))
    for b in breaches:
        print(b)
    edges = sum(len(v) for v in graph.values())
    print(f"house: {len(breaches)} breach(es); core has {len(graph)} modules, {edges} dependencies")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
