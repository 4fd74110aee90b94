# SPDX-License-Identifier: BSD-3-Clause
"""Redraws the pictures of the docs with the kernel and the CLI of a build
tree:

    JUPYTER_PATH=build/share/jupyter /usr/bin/python3 docs/img/make_images.py [build]

docs/DIFF.md: ProfileVega's f1/f2 example (the workload of
tests/e2e/test_diff.py), each graph saved with %profsave. docs/PROFILING.md:
each view of one cell (two threads, a 1:3 split through a shared leaf,
qsort), and the source of an edit. docs/CLI.md: views of the perf script
recording in tests/data/perf, drawn by the cflame binary of the build tree
(default: build)."""
import pathlib
import subprocess
import sys

from jupyter_client.manager import start_new_kernel

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build").resolve()
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from test_diff import N, WORKLOAD  # noqa: E402

DIFF_CELLS = [
    WORKLOAD,
    f"%%profview\nf1({N});",
    f"%%profbase f1\nf1({N});",
    f'%%profview title="f2 alone"\nf2({N});',
    f"%profsave {HERE}/flame-f2.svg",
    f'%%profdiffview f1 title="f2 against a baseline of f1"\nf2({N});',
    f"%profsave {HERE}/diff-f2-vs-f1.svg",
    f"%profsave {HERE}/diff-negate.svg negate=true title=\"negate=true: the baseline's layout\"",
    f'%profsave {HERE}/diff-self.svg delta=self title="delta=self: change in self time"',
    f"%%profbase again\nf1({N});",
    f'%%profdiffview again title="f1 against a fresh run of itself: within noise"\nf1({N});',
    f"%profsave {HERE}/diff-noise.svg",
]

VIEW_DEFS = r"""
#include <pthread.h>
#include <stdlib.h>
__attribute__((noinline)) double spin(long n) {
    double a = 1;
    for (long i = 0; i < n; i++) a = a * 1.0000001 + 0.5;
    return a;
}
__attribute__((noinline)) double one_part(void) { return spin(4000000); }
__attribute__((noinline)) double three_parts(void) { return spin(12000000); }
static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
__attribute__((noinline)) void *sorter(void *arg) {
    static int v[1 << 18];
    for (int r = 0; r < 8; r++) {
        for (int i = 0; i < (1 << 18); i++) v[i] = rand();
        qsort(v, 1 << 18, sizeof *v, cmp_int);
    }
    return arg;
}
double sink;
"""

VIEW_CELL = """pthread_t th;
pthread_setname_np(pthread_self(), "main");
pthread_create(&th, NULL, sorter, NULL);
pthread_setname_np(th, "sorter");
for (int k = 0; k < 12; k++)
    sink += one_part() + three_parts();
pthread_join(th, NULL);"""

EDITED_CELL = """pthread_t th;
pthread_setname_np(pthread_self(), "main");
pthread_create(&th, NULL, sorter, NULL);
pthread_setname_np(th, "sorter");
// three_parts' result does not change: compute it once
double three = three_parts();
for (int k = 0; k < 12; k++)
    sink += one_part() + three;
pthread_join(th, NULL);"""

VIEW_CELLS = [
    VIEW_DEFS,
    f'%%profview C=true recur=flat title="one cell, two threads"\n{VIEW_CELL}',
    f"%profsave {HERE}/view-flame.svg",
    f"%profsave {HERE}/view-callers.svg view=callers lines=false title=\"view=callers\"",
    f"%profsave {HERE}/view-top.svg view=top title=\"view=top\"",
    f"%profsave {HERE}/view-source.svg view=source title=\"view=source\"",
    f"%profsave {HERE}/view-chart.svg view=chart title=\"view=chart\"",
    f"%profsave {HERE}/view-sandwich.svg view=sandwich focus=spin lines=false "
    f"title=\"view=sandwich focus=spin\"",
    f"%%profbase before\n{VIEW_CELL}",
    f'%%profdiffview before view=source title="view=source of a diff: the edit, line by line"\n'
    f"{EDITED_CELL}",
    f"%profsave {HERE}/view-source-diff.svg",
]

# The CLI's pictures: (file, arguments).
CLI_VIEWS = [
    ("cli-callers.svg", ["--view", "callers", "--no-lines"]),
    ("cli-top.svg", ["--view", "top"]),
    ("cli-chart.svg", ["--view", "chart"]),
    ("cli-sandwich.svg", ["--view", "sandwich", "--focus", "hash_worker"]),
]


def run_cells(cells):
    km, kc = start_new_kernel(kernel_name="cflame")
    try:
        for code in cells:
            reply = kc.execute_interactive(code, timeout=300, output_hook=lambda msg: None)
            if reply["content"]["status"] != "ok":
                sys.exit(f"{code.splitlines()[0]}: {reply['content'].get('evalue')}")
    finally:
        kc.stop_channels()
        km.shutdown_kernel()


run_cells(DIFF_CELLS)
print(f"wrote the graphs of docs/DIFF.md into {HERE}")
run_cells(VIEW_CELLS)
print(f"wrote the views of docs/PROFILING.md into {HERE}")
for name, args in CLI_VIEWS:
    subprocess.run([BUILD / "bin" / "cflame", *args, "-o", HERE / name,
                    ROOT / "tests" / "data" / "perf" / "threads.txt"], check=True)
print(f"wrote the views of docs/CLI.md into {HERE}")
