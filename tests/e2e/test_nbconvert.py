"""`jupyter nbconvert --execute` drives the kernel (SPEC section 6): the
executed notebook holds each cell's output, in order, with its execution
count, and an error cell's error."""
import os
import pathlib
import subprocess
import sys

import nbformat

NOTEBOOK = pathlib.Path(__file__).resolve().parent / "notebooks" / "session.ipynb"


def test_nbconvert_execute(tmp_path):
    env = dict(os.environ)  # conftest put the build tree's kernelspec in JUPYTER_PATH
    proc = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
         "--ExecutePreprocessor.timeout=60", "--output-dir", str(tmp_path), str(NOTEBOOK)],
        env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    nb = nbformat.read(tmp_path / NOTEBOOK.name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == [1, 2, 3, 4, 5]

    def text(cell, name):
        return "".join(o.get("text", "") for o in cell.outputs
                       if o.output_type == "stream" and o.name == name)

    assert code[0].outputs == []
    assert text(code[1], "stdout") == "FLAME\nGRAPH\ntotal 25\n"
    assert text(code[2], "stderr") == "a warning on stderr\n"
    assert text(code[2], "stdout") == "total is still 25\n"
    errs = [o for o in code[3].outputs if o.output_type == "error"]
    assert len(errs) == 1 and errs[0].ename == "CompileError"
    assert any("cell[4]:1:14: error" in line for line in errs[0].traceback), errs[0].traceback
    assert text(code[4], "stdout") == "-std=gnu17 -O2 -g -fno-omit-frame-pointer -Wall\n"


def test_html_export_shows_every_flame_graph(tmp_path):
    """An executed notebook with %%profview and %%profallocs cells exported with
    `nbconvert --to html` carries each flame graph as inline SVG, so a reader
    without JavaScript sees it."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "cflame", "display_name": "C (cflame)", "language": "c"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            "__attribute__((noinline)) double spin(int n) {\n"
            "    volatile double s = 0;\n"
            "    for (int i = 0; i < n; i++) s += i * 0.5;\n"
            "    return s;\n"
            "}"),
        nbformat.v4.new_code_cell('%%profview title="first graph"\nfor (int r = 0; r < 40; r++) spin(1000000);'),
        nbformat.v4.new_code_cell('%profview title="second graph" for (int r = 0; r < 40; r++) spin(1000000);'),
        nbformat.v4.new_code_cell('%%profallocs sample_rate=1 title="third graph"\n'
                                  'for (int i = 0; i < 1000; i++) { void *volatile p = malloc(100 + i); free(p); }'),
    ]
    src = tmp_path / "profiled.ipynb"
    nbformat.write(nb, src)
    env = dict(os.environ)
    executed = tmp_path / "executed.ipynb"
    proc = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
         "--ExecutePreprocessor.timeout=120", "--output-dir", str(tmp_path),
         "--output", executed.name, str(src)],
        env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(tmp_path),
         "--output", "executed.html", str(executed)],
        env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "executed.html").read_text()
    # Each graph's own SVG is inline, with its title and a <title> per frame.
    assert html.count("<svg") >= 3, "no inline SVG flame graphs in the HTML export"
    for title in ("first graph", "second graph", "third graph"):
        assert title in html
    assert "spin" in html and "top-level scope" in html
