#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a flame graph costs a notebook: the bytes of each item of its output
(docs/PERFORMANCE.md, "Output size").

Run by Debian's /usr/bin/python3 (jupyter_client, nbformat and nbconvert
from Debian's packages); scripts/bench bundle runs it on this build, and
scripts/bench compare REF on this build and REF's, side by side.

  profile   One profile of the benchmarks game's binarytrees (depth 16, from
            tests/e2e/workloads), taken once by this build's kernel under
            %%profview delay=0.0001 (about 5,000 samples) and saved with
            %profsave as pprof. Each build's kernel then loads it
            (%profload) and shows it (%profshow, and %profshow C=true, which
            draws the C library's frames too): the same profile, drawn by
            each build. For each output: the bytes of each MIME item as the
            kernel sends it (compact JSON), and what the output adds to a
            notebook's file (nbformat writes JSON items indented, a value
            per line, and text items as lists of lines).
  demo      examples/demo.ipynb executed by each build's kernel (nbconvert
            --execute): the bytes of all its outputs together, over the
            cells every build ran without an error (an older build lacks
            what later cells use).

The target: this build's output of the profile is at most a third of what
5f48cbc's made, before the SVG was sent once and the data written as CSV
tables (scripts/bench compare 5f48cbc builds it and passes --reference).
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import nbformat
from jupyter_client import KernelManager

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "tests" / "e2e" / "workloads" / "binarytrees.c"
DEMO = ROOT / "examples" / "demo.ipynb"
VIEWS = [("%profshow", "default"), ("%profshow lines=false", "lines=false")]


def item_sizes(data):
    """The bytes of each item of a display_data's data, as compact JSON, and
    under "notebook" what the whole output adds to a notebook's file."""
    sizes = {k: len(json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode())
             for k, v in data.items()}
    sizes["notebook"] = notebook_bytes(data) - notebook_bytes(None)
    return sizes


def notebook_bytes(data):
    """The bytes of a notebook of one code cell with data as its output."""
    cell = nbformat.v4.new_code_cell("%profshow")
    if data is not None:
        cell.outputs = [nbformat.v4.new_output("display_data", data=data)]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    return len(nbformat.writes(nb).encode())


class Session:
    """A kernel of one build, started through its own kernelspec."""

    def __init__(self, build, workdir):
        self.old = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = str(pathlib.Path(build).resolve() / "share" / "jupyter")
        self.km = KernelManager(kernel_name="cflame")
        self.km.start_kernel(cwd=str(workdir))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code, timeout=300):
        """Runs a cell that must succeed; returns its display_data items."""
        shown = []

        def hook(msg):
            if msg["msg_type"] == "display_data":
                shown.append(msg["content"]["data"])
            elif msg["msg_type"] == "error":
                sys.exit(f"bench_bundle: {code.splitlines()[0]!r} failed: {msg['content']['evalue']}")

        reply = self.kc.execute_interactive(code, output_hook=hook, timeout=timeout)
        if reply["content"]["status"] != "ok":
            sys.exit(f"bench_bundle: {code.splitlines()[0]!r} failed: {reply['content']}")
        return shown

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
        if self.old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = self.old


def record_profile(build, workdir):
    """Profiles binarytrees with build's kernel; returns the pprof file."""
    saved = workdir / "binarytrees.pb.gz"
    s = Session(build, workdir)
    try:
        s.run(f"#define main bt_main\n{WORKLOAD.read_text()}\n#undef main")
        s.run('%%profview delay=0.0001\nchar *args[] = {"bt_main", "16", 0};\nbt_main(2, args);')
        s.run(f"%profsave {saved}")
    finally:
        s.close()
    return saved


def draw(build, saved, workdir):
    """Each view of the saved profile as build draws it: {view: sizes}."""
    s = Session(build, workdir)
    try:
        s.run(f"%profload {saved}")
        out = {}
        for magic, name in VIEWS:
            (data,) = s.run(magic)
            out[name] = item_sizes(data)
        return out
    finally:
        s.close()


def demo_cells(build, workdir):
    """examples/demo.ipynb executed by build: per code cell, the bytes of
    all its outputs as sent, or None for a cell that failed (an older
    build that lacks what the cell uses)."""
    d = pathlib.Path(tempfile.mkdtemp(dir=workdir))
    nb = d / "demo.ipynb"
    shutil.copy(DEMO, nb)
    env = dict(os.environ, JUPYTER_PATH=str(pathlib.Path(build).resolve() / "share" / "jupyter"))
    subprocess.run(["jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace",
                    "--allow-errors", "--ExecutePreprocessor.kernel_name=cflame",
                    "--ExecutePreprocessor.timeout=300", str(nb)],
                   cwd=d, env=env, check=True, capture_output=True)
    cells = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
    return [None if any(o.get("output_type") == "error" for o in c.get("outputs", []))
            else sum(sum(v for k, v in item_sizes(o.get("data", {})).items() if k != "notebook")
                     for o in c.get("outputs", []))
            for c in cells]


def demo_sizes(builds, workdir):
    """{build name: bytes of the demo's outputs}, over the cells that every
    build ran without an error, so that the builds are compared on the
    same cells; and how many cells that is, of how many."""
    cells = {name: demo_cells(b, workdir) for name, b in builds.items()}
    n = len(next(iter(cells.values())))
    both = [i for i in range(n) if all(c[i] is not None for c in cells.values())]
    return {name: sum(c[i] for i in both) for name, c in cells.items()}, len(both), n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--reference", help="another build directory, drawn side by side")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    builds = {"this build": args.build}
    if args.reference:
        builds["reference"] = args.reference

    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        saved = record_profile(args.build, workdir)
        drawn = {name: draw(b, saved, workdir) for name, b in builds.items()}
        demo, ran, cells = demo_sizes(builds, workdir)

    items = sorted({k for d in drawn.values() for v in d.values() for k in v if k != "notebook"})
    print("The same binarytrees profile (pprof, %profload), drawn by each build: bytes per item "
          "as sent, their total, and what the output adds to a notebook file")
    print(f"{'build':<12}{'view':<12}" + "".join(f"{k.split('/')[-1][:20]:>22}" for k in items)
          + f"{'total':>10}{'notebook':>10}")
    for name, views in drawn.items():
        for view, sizes in views.items():
            total = sum(v for k, v in sizes.items() if k != "notebook")
            sizes["total"] = total
            print(f"{name:<12}{view:<12}" + "".join(f"{sizes.get(k, 0):>22,}" for k in items)
                  + f"{total:>10,}{sizes['notebook']:>10,}")
    print()
    print(f"examples/demo.ipynb executed: bytes of all outputs, as sent, of the {ran} code cells "
          f"(of {cells}) that every build ran")
    for name, size in demo.items():
        print(f"  {name:<12}{size:>10,}")
    result = {"profile": drawn, "demo": demo, "demo_cells": {"compared": ran, "of": cells}}
    if args.reference:
        print()
        for _, view in VIEWS:
            for what in ("total", "notebook"):
                new, ref = drawn["this build"][view][what], drawn["reference"][view][what]
                met = "met" if new * 3 <= ref else "MISSED"
                print(f"target ({view}, {what}): output <= 1/3 of the reference's: "
                      f"{new:,} / {ref:,} = {new / ref:.3f} ({met})")
        new, ref = demo["this build"], demo["reference"]
        print(f"demo notebook: {new:,} / {ref:,} = {new / ref:.3f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
