# SPDX-License-Identifier: BSD-3-Clause
"""The kernel's rooms depend one way: a file of kernel/ includes headers
and calls functions of its own folder and of the folders below it, and no
two files call each other round a circle.

    kernel_layers.py SOURCE_DIR [LIBCFLAME_KN_A]

Includes are read from every kernel/**/*.[ch] (`#include "NAME"`, found by
name among the kernel's files). Calls are read from the kernel library's
objects (nm): a file calls another when it uses a symbol the other
defines. Exits 1, saying each circle and back-edge and what makes it."""

import collections
import os
import re
import subprocess
import sys

# The folders of kernel/, lowest first: a file may depend on its own folder
# and those before it. worker/ and clang/ are programs of their own, which
# use the kernel's pipes, names and libclang jobs; kn_main.c, in kernel/
# itself, opens the rooms and comes last.
ORDER = ["wire", "session", "profile", "exec", "assist", "worker", "clang", "."]
TOP_FILES = {"kn_main.c"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def kernel_files(source):
    """{file name: folder} for kernel/**/*.[ch]; a name is one file."""
    files, errors = {}, []
    root = os.path.join(source, "kernel")
    for folder, _, names in os.walk(root):
        rel = os.path.relpath(folder, root)
        for name in names:
            if not name.endswith((".c", ".h")):
                continue
            if name in files:
                errors.append(f"kernel/{rel}/{name}: the name is also kernel/{files[name]}/{name}")
            files[name] = rel
    for name, folder in sorted(files.items()):
        if folder not in ORDER:
            errors.append(f"kernel/{folder}/{name}: kernel/{folder}/ is no room "
                          f"(the rooms, lowest first: {', '.join(ORDER[:-1])})")
        elif folder == "." and name not in TOP_FILES:
            errors.append(f"kernel/{name} stands in no room "
                          f"(the rooms, lowest first: {', '.join(ORDER[:-1])})")
    return files, errors


def path(files, name):
    folder = files[name]
    return f"kernel/{name}" if folder == "." else f"kernel/{folder}/{name}"


def rank(files, name):
    folder = files[name]
    return ORDER.index(folder) if folder in ORDER else -1


def include_graph(source, files):
    """{file: {included file: [why]}} between the kernel's files."""
    graph = collections.defaultdict(dict)
    for name in files:
        with open(os.path.join(source, path(files, name)), encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            base = os.path.basename(inc)
            if base in files and base != name:
                graph[name][base] = [f'#include "{inc}"']
    return graph


def call_graph(archive, files):
    """{file: {called file: [symbols]}} between the library's objects."""
    out = subprocess.run(["nm", "-A", archive], check=True, capture_output=True,
                         text=True).stdout
    defined, used = {}, collections.defaultdict(set)
    for line in out.splitlines():
        m = re.match(r"[^:]+:([^:]+)\.o:\s*\S*\s+(\w)\s+(\S+)$", line)
        if not m or m.group(1) not in files:
            continue
        obj, kind, sym = m.groups()
        if kind == "U":
            used[obj].add(sym)
        elif kind in "TDBR":
            defined[sym] = obj
    graph = collections.defaultdict(dict)
    for obj, syms in used.items():
        for sym in sorted(syms):
            callee = defined.get(sym)
            if callee and callee != obj:
                graph[obj].setdefault(callee, []).append(sym)
    return graph


def circles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def check(what, graph, files):
    errors = []
    for a in sorted(graph):
        for b, why in sorted(graph[a].items()):
            if rank(files, a) >= 0 and rank(files, b) > rank(files, a):
                errors.append(f"{what}: {path(files, a)} -> {path(files, b)} goes up from "
                              f"{files[a]}/ to {files[b]}/ ({', '.join(why[:4])})")
    for comp in circles(graph):
        edges = [f"{a} -> {b} ({', '.join(graph[a][b][:4])})"
                 for a in comp for b in sorted(graph[a]) if b in comp]
        errors.append(f"{what}: a circle of {len(comp)} files: " + "; ".join(edges))
    return errors


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    source = argv[1]
    files, errors = kernel_files(source)
    errors += check("includes", include_graph(source, files), files)
    if len(argv) == 3:
        errors += check("calls", call_graph(argv[2], files), files)
    for e in errors:
        print(e)
    print(f"kernel_layers: {len(files)} files, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
