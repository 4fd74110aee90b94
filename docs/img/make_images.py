# SPDX-License-Identifier: BSD-3-Clause
"""Redraws the flame graphs of docs/DIFF.md with the kernel of a build tree:

    JUPYTER_PATH=build/share/jupyter /usr/bin/python3 docs/img/make_images.py

Runs ProfileVega's f1/f2 example (the workload of tests/e2e/test_diff.py)
and saves each graph with %profsave into this folder."""
import pathlib
import sys

from jupyter_client.manager import start_new_kernel

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "e2e"))
from test_diff import N, WORKLOAD  # noqa: E402

CELLS = [
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

km, kc = start_new_kernel(kernel_name="cflame")
try:
    for code in CELLS:
        reply = kc.execute_interactive(code, timeout=300, output_hook=lambda msg: None)
        if reply["content"]["status"] != "ok":
            sys.exit(f"{code.splitlines()[0]}: {reply['content'].get('evalue')}")
    print(f"wrote the graphs of docs/DIFF.md into {HERE}")
finally:
    kc.stop_channels()
    km.shutdown_kernel()
