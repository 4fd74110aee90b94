# SPDX-License-Identifier: BSD-3-Clause
"""`jupyter nbconvert --execute` drives the kernel: the executed notebook
holds each cell's output, in order, with its execution count, and an error
cell's error. Exported pages (`--to html`) draw every flame graph, checked
in headless Chromium; scripts/demo's notebook too, and its kernelspec step.
"""
import base64
import contextlib
import json
import os
import pathlib
import re
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET

import nbformat
import pytest

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


EXPORT_TEST = pathlib.Path(__file__).resolve().parents[1] / "render" / "export_test.mjs"
INTERACTIVE_TEST = pathlib.Path(__file__).resolve().parents[1] / "render" / "interactive_test.mjs"
LIVE_TEST = pathlib.Path(__file__).resolve().parents[1] / "render" / "live_notebook_test.mjs"
DEMO = pathlib.Path(__file__).resolve().parents[2] / "examples" / "demo.ipynb"


def nbconvert(*args, cwd=None, timeout=300):
    proc = subprocess.run([sys.executable, "-m", "nbconvert", *map(str, args)], env=dict(os.environ),
                          cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc


def drawn_in_chromium(pages, graphs, width=None):
    """Runs tests/render/export_test.mjs: every flame graph of each page is
    drawn in headless Chromium (frames laid out and painted, labels, not
    clipped). Returns its report."""
    node = os.environ.get("CFLAME_NODE") or shutil.which("node")
    assert node, "no node to run export_test.mjs (set CFLAME_NODE)"
    cmd = [node, str(EXPORT_TEST), "--graphs", str(graphs), *map(str, pages)]
    if width:
        cmd[2:2] = ["--width", str(width)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    report = p.stdout + p.stderr
    assert p.returncode == 0, report
    return report


def interactive_in_chromium(targets, graphs, source=None, static=False, untrusted=False):
    """Runs tests/render/interactive_test.mjs with the network off: in each
    page, every graph answers hover, click, reset and search as its titles
    in source (default: the page) say; with static, where scripts were
    stripped, the drawing shows with the hint instead. Returns its
    report."""
    node = os.environ.get("CFLAME_NODE") or shutil.which("node")
    assert node, "no node to run interactive_test.mjs (set CFLAME_NODE)"
    cmd = [node, str(INTERACTIVE_TEST), "--graphs", str(graphs)]
    if source:
        cmd += ["--source", str(source)]
    if static:
        cmd += ["--static"]
    if untrusted:
        cmd += ["--untrusted"]
    p = subprocess.run(cmd + [str(t) for t in targets], capture_output=True, text=True, timeout=600)
    report = p.stdout + p.stderr
    assert p.returncode == 0, report
    return report


def notebook_of(*cells):
    """A cflame notebook: a cell defining spin(n), n steps of CPU, then
    cells."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "cflame", "display_name": "C (cflame)", "language": "c"}
    nb.cells = [nbformat.v4.new_code_cell(
        "__attribute__((noinline)) double spin(int n) {\n"
        "    volatile double s = 0;\n"
        "    for (int i = 0; i < n; i++) s += i * 0.5;\n"
        "    return s;\n"
        "}"), *cells]
    return nb


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """A notebook with a flame graph, a statement-form one, a diff and an
    allocation graph, executed through the kernel; the last is saved with
    %profsave as saved.html and saved.svg beside it."""
    tmp = tmp_path_factory.mktemp("export")
    nb = notebook_of(
        nbformat.v4.new_code_cell('%%profview title="first graph"\nfor (int r = 0; r < 40; r++) spin(1000000);'),
        nbformat.v4.new_code_cell('%profview title="second graph" for (int r = 0; r < 40; r++) spin(1000000);'),
        nbformat.v4.new_code_cell("%%profbase before\nfor (int r = 0; r < 30; r++) spin(1000000);"),
        nbformat.v4.new_code_cell('%%profdiffview before title="diff graph"\n'
                                  "for (int r = 0; r < 60; r++) spin(1000000);"),
        nbformat.v4.new_code_cell('%%profallocs sample_rate=1 title="allocation graph"\n'
                                  'for (int i = 0; i < 1000; i++) { void *volatile p = malloc(100 + i); free(p); }'),
        # The last graph shown (the allocations'), saved as a page and an SVG.
        nbformat.v4.new_code_cell(f"%profsave {tmp / 'saved.html'}"),
        nbformat.v4.new_code_cell(f"%profsave {tmp / 'saved.svg'}"))
    src = tmp / "profiled.ipynb"
    nbformat.write(nb, src)
    nbconvert("--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=120", "--output-dir", tmp,
              "--output", "executed.ipynb", src)
    return tmp / "executed.ipynb"


@pytest.mark.parametrize("template", ["lab", "classic"])
def test_html_export_draws_every_flame_graph(profiled, template):
    """`nbconvert --to html` (its default lab template, and classic) shows each
    flame graph drawn: plain, statement form, diff and allocations. Debian's
    nbconvert 6.5 strips <rect> and <text> from SVG outputs; the bundle's
    markdown item, which holds the SVG, is what the page shows."""
    out = profiled.parent / f"executed-{template}.html"
    nbconvert("--to", "html", "--template", template, "--output-dir", out.parent, "--output", out.name,
              profiled)
    html = out.read_text()
    for title in ("first graph", "second graph", "diff graph", "allocation graph"):
        assert title in html
    report = drawn_in_chromium([out], graphs=4)
    # A narrow page: each graph scales down to its output area, and below
    # its smallest scale scrolls sideways rather than being clipped.
    report += drawn_in_chromium([out], graphs=4, width=560)
    # Offline, each graph is interactive by itself: hover, click to zoom,
    # reset, search, as the notebook's own copy of each graph says.
    report += interactive_in_chromium([out], graphs=4, source=profiled)
    print(report)


def test_profsave_page_and_svg_are_interactive_offline(profiled):
    """%profsave NAME.html and NAME.svg, opened in Chromium with the network
    off: the page's every tab (an allocation profile's flame graph, callers,
    top and source) and the SVG file answer hover, click, reset and search."""
    page, svg = profiled.parent / "saved.html", profiled.parent / "saved.svg"
    assert page.is_file() and svg.is_file()
    tabs = len(re.findall(r'<input type="radio" name="cflame-tab"', page.read_text()))
    assert tabs >= 4, tabs
    print(interactive_in_chromium([page], graphs=tabs) + interactive_in_chromium([svg], graphs=1))


def test_sanitized_export_shows_the_static_graph_and_the_hint(profiled):
    """With --sanitize-html, nbconvert strips the scripts: what is left is
    the static picture with its tooltips, and a line saying where the
    interactive view is, and how to trust a notebook whose output is shown
    without its picture."""
    out = profiled.parent / "executed-sanitized.html"
    nbconvert("--to", "html", "--sanitize-html", "--output-dir", out.parent, "--output", out.name, profiled)
    html = out.read_text()
    assert html.count("Static picture: hover, zoom and search where scripts run") == 4
    assert html.count("No picture above? Untrusted output is shown without it: "
                      "File &gt; Trust Notebook") == 4
    print(interactive_in_chromium([out], graphs=4, static=True))


@contextlib.contextmanager
def classic_notebook(root, home):
    """The classic Notebook (Debian's python3-notebook) serving root on a
    free local port, its signatures database in home: yields the base URL
    and the token."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_DATA_DIR=str(home / "data"), JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"))
    proc = subprocess.Popen([sys.executable, "-m", "notebook", "--no-browser", "--allow-root",
                             "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
                             f"--NotebookApp.token={token}", f"--notebook-dir={root}"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # until it answers: its start-up has no fixed time
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5)
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                time.sleep(0.1)
        yield url, token
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_classic_notebook_trusted_is_interactive_and_untrusted_says_how(profiled, tmp_path):
    """The classic Notebook draws the markdown item: in a trusted notebook
    its script runs (as jQuery inserts the output) and each graph answers
    hover, click, reset and search; an untrusted one shows neither markdown
    nor SVG (outputarea.js's safe types), but the text report, as a console
    does."""
    home = tmp_path / "home"
    trusted, untrusted = tmp_path / "trusted.ipynb", tmp_path / "untrusted.ipynb"
    shutil.copy(profiled, trusted)
    # Trust goes with a notebook's content: the untrusted one differs.
    nb = nbformat.read(profiled, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("Not signed."))
    nbformat.write(nb, untrusted)
    env = dict(os.environ, JUPYTER_DATA_DIR=str(home / "data"))
    subprocess.run([sys.executable, "-m", "nbformat.sign", str(trusted)], env=env, check=True,
                   capture_output=True)
    with classic_notebook(tmp_path, home) as (url, token):
        report = interactive_in_chromium([f"{url}/notebooks/trusted.ipynb?token={token}"], graphs=4,
                                         source=trusted)
        report += interactive_in_chromium([f"{url}/notebooks/untrusted.ipynb?token={token}"], graphs=4,
                                          untrusted=True)
    print(report)


def test_classic_notebook_redraws_a_live_graph_and_keeps_the_final_one(tmp_path):
    """%%profview every=0.5 of a cell that runs 4 s of its own CPU time, run
    in the classic Notebook in Chromium: its graph is redrawn in place while
    it runs (two live graphs at least, one at a time, growing), the final
    graph takes its place, and it is still there after a save and a reload
    (tests/render/live_notebook_test.mjs); the saved file holds that final
    graph only."""
    nb = notebook_of(nbformat.v4.new_code_cell(
        "%%profview every=0.5\n"
        "#include <time.h>\n"
        "struct timespec t0, t;\n"
        "clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);\n"
        "do {\n"
        "    spin(1000000);\n"
        "    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);\n"
        "} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < 4.0);"))
    path = tmp_path / "live.ipynb"
    nbformat.write(nb, path)
    node = os.environ.get("CFLAME_NODE") or shutil.which("node")
    assert node, "no node to run live_notebook_test.mjs (set CFLAME_NODE)"
    with classic_notebook(tmp_path, tmp_path / "home") as (url, token):
        p = subprocess.run([node, str(LIVE_TEST), f"{url}/notebooks/live.ipynb?token={token}"],
                           capture_output=True, text=True, timeout=900)
    report = p.stdout + p.stderr
    assert p.returncode == 0, report
    saw = json.loads(p.stdout.strip().splitlines()[-1])
    outputs = nbformat.read(path, as_version=4).cells[-1].outputs
    graphs = [o for o in outputs if "application/vnd.vegalite.v5+json" in o.get("data", {})]
    assert len(graphs) == 1, [o.get("output_type") for o in outputs]
    assert saw["final"] in graphs[0]["data"]["text/plain"], (saw, graphs[0]["data"]["text/plain"][:300])
    assert "live:" not in graphs[0]["data"]["text/plain"]
    print(report)


def test_demo_notebook_export_draws_every_graph(tmp_path):
    """examples/demo.ipynb, executed and exported as scripts/demo does: every
    flame graph it shows is drawn in the HTML page, and is interactive there
    with the network off."""
    nb_path = tmp_path / "demo.ipynb"
    shutil.copy(DEMO, nb_path)
    nbconvert("--to", "notebook", "--execute", "--inplace", "--ExecutePreprocessor.timeout=300", nb_path,
              cwd=tmp_path, timeout=600)
    nbconvert("--to", "html", "--output-dir", tmp_path, "--output", "demo.html", nb_path, cwd=tmp_path)
    nb = nbformat.read(nb_path, as_version=4)
    shown = sum(1 for c in nb.cells for o in c.get("outputs", [])
                if "application/vnd.vegalite.v5+json" in o.get("data", {}))
    assert shown >= 5, f"the demo showed {shown} flame graphs"
    print(drawn_in_chromium([tmp_path / "demo.html"], graphs=shown))
    # Offline, every graph of the export answers hover, click, reset and
    # search, as the notebook's own copy of it says.
    print(interactive_in_chromium([tmp_path / "demo.html"], graphs=shown, source=nb_path))


INSTALL_KERNELSPEC = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "install_kernelspec.py"


def test_demo_never_repoints_another_checkouts_kernel(tmp_path):
    """scripts/demo installs the kernelspec for the user only where no
    cflame kernel of another checkout is installed, and says what it did and
    how to undo it."""
    built = pathlib.Path(os.environ["JUPYTER_PATH"].split(os.pathsep)[0]) / "kernels" / "cflame"
    env = dict(os.environ, JUPYTER_DATA_DIR=str(tmp_path / "data"))
    installed = tmp_path / "data" / "kernels" / "cflame" / "kernel.json"

    def install():
        p = subprocess.run([sys.executable, str(INSTALL_KERNELSPEC), str(built)], env=env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    out = install()
    assert installed.exists() and "undo with: jupyter kernelspec uninstall cflame" in out, out
    ours = json.loads(installed.read_text())["argv"][0]
    # Another checkout's kernel, installed before: left as it is.
    other = json.loads(installed.read_text())
    other["argv"][0] = "/elsewhere/build/bin/cflame-kernel"
    installed.write_text(json.dumps(other))
    out = install()
    assert json.loads(installed.read_text())["argv"][0] == "/elsewhere/build/bin/cflame-kernel"
    assert "left as it is" in out and f"jupyter kernelspec install --user {built}" in out, out
    # Its own, installed before: installed again.
    installed.write_text(json.dumps(dict(other, argv=[ours] + other["argv"][1:])))
    out = install()
    assert "installed" in out and json.loads(installed.read_text())["argv"][0] == ours, out


def test_demo_notebook_is_valid_nbformat_4_5_with_cell_ids():
    """examples/demo.ipynb reads without nbformat's warnings (scripts/demo
    printed MissingIDFieldWarning): nbformat 4.5, every cell with an id of
    its own."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with open(DEMO, encoding="utf-8") as f:
            nb = nbformat.read(f, as_version=4)
        nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) >= (4, 5)
    ids = [cell.get("id") for cell in nb.cells]
    assert all(ids) and len(set(ids)) == len(ids), ids


def test_png_is_in_the_output_when_asked_and_latex_draws_it(tmp_path):
    """png=true adds image/png, a picture of the SVG at dpi= (192: twice its
    pixels), which nbconvert --to latex (and so --to pdf) takes; the kernel
    started with CFLAME_PNG=1 adds it to every graph but where png=false.
    Without either, no picture: the notebook does not carry it."""
    nb = notebook_of(
        nbformat.v4.new_code_cell('%%profview png=true\nfor (int r = 0; r < 20; r++) spin(1000000);'),
        nbformat.v4.new_code_cell('%%profview\nfor (int r = 0; r < 20; r++) spin(1000000);'),
        nbformat.v4.new_code_cell('%%profview png=false\nfor (int r = 0; r < 20; r++) spin(1000000);'))
    src = tmp_path / "png.ipynb"
    nbformat.write(nb, src)

    def pictures(setting):
        out = tmp_path / f"png-{setting}.ipynb"
        env = dict(os.environ)
        env.pop("CFLAME_PNG", None)
        if setting:
            env["CFLAME_PNG"] = setting
        proc = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                               "--ExecutePreprocessor.timeout=120", "--output-dir", tmp_path,
                               "--output", out.name, src], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        graphs = [o["data"] for c in nbformat.read(out, as_version=4).cells[1:]
                  for o in c.outputs if "application/vnd.vegalite.v5+json" in o.get("data", {})]
        assert len(graphs) == 3
        return out, graphs

    _, plain = pictures(None)
    assert ["image/png" in g for g in plain] == [True, False, False]
    out, every = pictures("1")
    assert ["image/png" in g for g in every] == [True, True, False]
    for g in (plain[0], every[0], every[1]):
        png = base64.b64decode(g["image/png"])
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        w, h = struct.unpack(">II", png[16:24])
        root = ET.fromstring(re.search(r"<svg\b.*</svg>", g["text/markdown"], re.S).group(0))
        assert (w, h) == (2 * int(float(root.get("width"))), 2 * int(float(root.get("height"))))
    # LaTeX takes the pictures (image/png before markdown, which it would
    # hand to pandoc). The graph without one is left out: pandoc is not
    # installed here, and it would drop the markdown's HTML anyway.
    nb = nbformat.read(out, as_version=4)
    nb.cells = nb.cells[:3]
    pictured = tmp_path / "pictured.ipynb"
    nbformat.write(nb, pictured)
    nbconvert("--to", "latex", "--output-dir", tmp_path, "--output", "png", pictured, cwd=tmp_path)
    tex = (tmp_path / "png.tex").read_text()
    shown = re.findall(r"\{([^{}]*\.png)\}", tex)  # \adjustimage{...}{F.png} (6.5), \includegraphics
    assert len(shown) == 2, shown
    for name in shown:
        assert (tmp_path / name).read_bytes() == base64.b64decode(every[shown.index(name)]["image/png"])
