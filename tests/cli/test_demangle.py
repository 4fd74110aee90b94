# SPDX-License-Identifier: BSD-3-Clause
"""C++ and Rust names as people read them (docs/PROFILING.md, "Names").

Real programs, compiled here with g++ and rustc (Debian's, from
scripts/deps.sh) and recorded by `cflame record`: a C++ method of a class
template in a namespace, a lambda and a function template
(examples/record_demo.cc, which scripts/demo records too), std::sort's
templates (demangle/sort.cc), and a Rust method of a generic type in a
module (demangle/geo.rs), mangled the legacy way and the v0 way. Every
frame that has a symbol is checked against c++filt, binutils' demangler,
which reads Rust's hashes and crate disambiguators too (cflame leaves
them out: they tell builds apart, not functions) and a template function's
return type (cflame leaves it out: a label starts with the function). The symbols stay in the
data: in the Vega-Lite rows, in pprof's system_name (read back by
`go tool pprof -raw`), and drawn with --no-demangle.
"""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cflame_bundle import frames_of
from test_cli import CFLAME, folded_counts
from test_pprof import go_env, go_pprof  # noqa: F401 (a fixture)

SOURCES = Path(__file__).resolve().parent / "demangle"
CPP_DEMO = Path(__file__).resolve().parents[2] / "examples" / "record_demo.cc"
# About 0.3 s of CPU each on this machine's VMs: some 300 samples at 1 ms.
KLASS_N = 300_000_000
GEO_N = 600_000_000


def tool(name):
    path = shutil.which(name)
    if not path:
        pytest.fail(f"{name} is missing: scripts/deps.sh installs it (Debian's g++, rustc, binutils)")
    return path


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    d = tmp_path_factory.mktemp("demangle")
    def build(cmd):
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, f"{' '.join(map(str, cmd))}:\n{r.stderr}"
    build([tool("g++"), "-O2", "-g", "-fno-omit-frame-pointer", "-o", d / "klass",
           CPP_DEMO])
    rustc = [tool("rustc"), "-O", "-g", "-C", "force-frame-pointers=yes"]
    for name in ("sort", "lambda_sort"):
        build([tool("g++"), "-O2", "-g", "-fno-omit-frame-pointer", "-o", d / name,
               SOURCES / f"{name}.cc"])
    build([*rustc, "-o", d / "geo-legacy", SOURCES / "geo.rs"])
    build([*rustc, "-C", "symbol-mangling-version=v0", "-o", d / "geo-v0", SOURCES / "geo.rs"])
    return d


def record(tmp_path, out, *args):
    r = subprocess.run([CFLAME, "record", "-o", tmp_path / out, "--no-lines", *map(str, args)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    return tmp_path / out


def rows(spec_path):
    """Every frame of a Vega-Lite spec."""
    return frames_of(json.loads(Path(spec_path).read_text()))


def cxxfilt(symbols):
    """c++filt's reading of each symbol, Rust's hashes and disambiguators
    left out as cflame leaves them out."""
    out = subprocess.run([tool("c++filt")], input="\n".join(symbols) + "\n",
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [re.sub(r"::h[0-9a-f]{16}$", "", re.sub(r"\[[0-9a-f]+\]", "", s)) for s in out]


def check_against_cxxfilt(spec_rows):
    """Each row with a symbol: its name is c++filt's, less the return type
    c++filt puts first for a template function ("void ns::f<int>(int)").
    Returns the names."""
    named = [(r["func"], r["sym"]) for r in spec_rows if r.get("sym")]
    assert named, "no frame had a mangled symbol"
    for (func, sym), filtered in zip(named, cxxfilt([s for _, s in named])):
        returns = filtered[:len(filtered) - len(func)]
        assert filtered.endswith(func) and (not returns or (returns.endswith(" ") and "<" in func)), \
            f"{sym}: cflame reads {func!r}, c++filt {filtered!r}"
    return {func for func, _ in named}


def test_template_functions_are_named_without_their_return_type(progs, tmp_path):
    """std::sort's frames, out of line or inlined, start with the function:
    at a narrow width the label shows "std::__introsort_loop<...", not
    "vo...". """
    names = check_against_cxxfilt(rows(record(tmp_path, "sort.vl.json", "--", progs / "sort",
                                              1_000_000)))
    assert any(n.startswith("std::__introsort_loop<") for n in names), names
    assert any(n.startswith("std::operator< <char") for n in names), names
    assert not any(n.startswith(("void ", "bool ")) for n in names), names


def test_cpp_names_read_as_cxxfilt_reads_them(progs, tmp_path):
    spec = record(tmp_path, "klass.vl.json", "--", progs / "klass", KLASS_N)
    names = check_against_cxxfilt(rows(spec))
    assert "ns::Klass<int>::method(int)" in names
    # gcc's DWARF gives a lambda no linkage name: its ELF symbol names it
    assert any(n.startswith("main::{lambda(long)#1}::operator()(long) const") for n in names), names


def test_rust_names_legacy_and_v0(progs, tmp_path):
    legacy = check_against_cxxfilt(rows(record(tmp_path, "l.vl.json", "--", progs / "geo-legacy",
                                               GEO_N)))
    assert "geo::geo::Pt<u64>::spin" in legacy, legacy
    v0 = check_against_cxxfilt(rows(record(tmp_path, "v.vl.json", "--", progs / "geo-v0", GEO_N)))
    assert "<geo::geo::Pt<u64>>::spin" in v0, v0


def test_symbols_are_kept(progs, tmp_path, go_env):  # noqa: F811 (the fixture)
    # drawn by their symbols with --no-demangle
    counts = folded_counts(record(tmp_path, "raw.folded", "--no-demangle", "--",
                                  progs / "klass", KLASS_N).read_text())
    leaves = {stack.split(";")[-1] for stack in counts}
    assert "_ZN2ns5KlassIiE6methodEi" in leaves, leaves
    assert not any("::" in leaf for leaf in leaves), leaves
    # pprof: the readable name, and the symbol as system_name
    raw = go_pprof(go_env, "-raw", record(tmp_path, "k.pb.gz", "--", progs / "klass", KLASS_N))
    assert re.search(r" ns::Klass<int>::method\(int\) .*\(_ZN2ns5KlassIiE6methodEi\)$", raw,
                     re.M), raw


def test_inlined_frames_without_a_linkage_name_keep_their_scopes(progs, tmp_path):
    """std::sort with a lambda: gcc's DWARF gives the instances that hold
    the lambda (std::__sort<..., lambda>, std::__unguarded_partition<...>)
    and the lambda's operator() no linkage name. Their inlined frames are
    named with the namespaces and classes they are declared in, as the
    out-of-line ones' symbols name them: "std::__sort<...>", not
    "__sort<...>"; the lambda "main::{lambda}::operator()"."""
    names = {r["func"] for r in rows(record(tmp_path, "lambda.vl.json", "--", progs / "lambda_sort",
                                            1_000_000))}
    sorting = [n for n in names if "sort<" in n or "partition" in n]
    assert any(n.startswith("std::__sort<") for n in sorting), sorting
    assert all(n.startswith("std::") for n in sorting), sorting
    assert "main::{lambda}::operator()" in names, names
    assert "operator()" not in names, names
