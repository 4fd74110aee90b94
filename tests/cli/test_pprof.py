# SPDX-License-Identifier: BSD-3-Clause
"""pprof through the cflame command line (docs/CLI.md, "pprof"), with Go's
own tools as the reference reader and writer.

- What cflame writes, `go tool pprof` reads with the same shares (-top) and
  the same samples (-raw).
- What cflame writes, cflame reads back into the same graph.
- A Go program's own CPU profile (runtime/pprof), which the test builds and
  runs itself, is drawn by cflame: its functions with the shares its work
  gives them. Diffs and folded stacks of pprof inputs.
- Truncated and foreign files: an error that names the file and what was
  wrong, exit status 1, nothing written.

Go is Debian's golang-go (scripts/deps.sh); everything it writes (its build
cache, the program) goes to a temporary directory, and nothing needs the
network. Environment as tests/cli/test_cli.py's (tests/CMakeLists.txt).
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cflame_bundle import frames_of
from cflame_text import COUNT
from test_cli import CFLAME, DATA, SVG_NS, check_spec, cflame, folded_counts, ok

GO = shutil.which("go")
CAPTURES = ["single", "threads", "pidtid", "srcline", "dwarf", "events"]


@pytest.fixture(scope="module")
def go_env(tmp_path_factory):
    """Go's environment, all in a temporary directory."""
    if not GO:
        pytest.fail("go is missing: install Debian's golang-go (scripts/deps.sh lists it)")
    home = tmp_path_factory.mktemp("go")
    env = dict(os.environ, HOME=str(home), GOCACHE=str(home / "cache"),
               GOPATH=str(home / "gopath"), GOENV="off", GOFLAGS="", GO111MODULE="off",
               GOPROXY="off", CGO_ENABLED="0")
    return env


def go_pprof(env, *args):
    r = subprocess.run([GO, "tool", "pprof", *map(str, args)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def pprof_top(env, path):
    """{function: (flat %, cum %)} from `go tool pprof -top`, every node."""
    out = go_pprof(env, "-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0", path)
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s+([\d.]+)%\s+[\d.]+%\s+(\S+)\s+([\d.]+)%\s+(.+?)\s*$", line)
        if m:
            name = re.sub(r" \(inline\)$", "", m.group(5))
            rows[name] = (float(m.group(2)), float(m.group(4)))
    assert rows, out
    return rows


def shares(folded_text):
    """{function: (flat %, cum %)} of folded stacks: self and inclusive
    shares of the total, a function counted once per stack, as pprof does."""
    counts = folded_counts(folded_text)
    total = sum(counts.values())
    flat, cum = {}, {}
    for stack, n in counts.items():
        frames = stack.split(";") if stack else []
        if frames:
            flat[frames[-1]] = flat.get(frames[-1], 0) + n
        for f in set(frames):
            cum[f] = cum.get(f, 0) + n
    return {f: (100.0 * flat.get(f, 0) / total, 100.0 * cum[f] / total) for f in cum}


# ---- cflame -> go tool pprof ----

@pytest.mark.parametrize("name", CAPTURES)
def test_go_tool_pprof_reads_cflame_with_the_same_shares(tmp_path, go_env, name):
    out = tmp_path / f"{name}.pb.gz"
    assert cflame(DATA / f"{name}.txt", "-o", out).stdout == ""
    assert out.read_bytes()[:2] == b"\x1f\x8b"  # gzip, by -o's ending
    want = shares(ok("-f", "folded", "--no-lines", DATA / f"{name}.txt"))
    got = pprof_top(go_env, out)
    assert set(got) == set(want)
    for func, (flat, cum) in want.items():
        assert abs(got[func][0] - flat) <= 0.006, (func, got[func], (flat, cum))
        assert abs(got[func][1] - cum) <= 0.006, (func, got[func], (flat, cum))
    # -raw: every sample, its period, and the values add up to the total
    raw = go_pprof(go_env, "-raw", out)
    assert "PeriodType: cpu nanoseconds" in raw
    samples = raw.split("Samples:\n", 1)[1].split("Locations\n", 1)[0]
    values = [int(m.group(1)) for m in re.finditer(r"^\s+(\d+)(?:\s+\d+)?:", samples, re.M)]
    total = sum(folded_counts(ok("-f", "folded", DATA / f"{name}.txt")).values())
    assert sum(values) == total


def test_go_tool_pprof_reads_lines_and_inlined_frames(tmp_path, go_env):
    """srcline.txt has files and lines; dwarf.txt functions perf says were
    inlined: pprof lists them, marked (inline)."""
    out = tmp_path / "srcline.pb.gz"
    ok("-f", "pprof", DATA / "srcline.txt", "-o", out)
    lines = go_pprof(go_env, "-top", "-lines", "-nodefraction=0", out)
    assert re.search(r"leaf \S*workload\.c:\d+", lines), lines
    out = tmp_path / "dwarf.pb.gz"
    ok("-f", "pprof", DATA / "dwarf.txt", "-o", out)
    assert "(inline)" in go_pprof(go_env, "-top", "-nodefraction=0", out)


# ---- cflame -> cflame ----

@pytest.mark.parametrize("name", CAPTURES)
def test_cflame_reads_its_own_pprof_back(tmp_path, name):
    out = tmp_path / f"{name}.pb.gz"
    ok("--format", "pprof", DATA / f"{name}.txt", "-o", out)
    for args in (["-f", "folded"], ["-f", "folded", "--no-lines"], ["-f", "text", "--no-C"],
                 ["-f", "vegalite", "--title", "t"], ["-f", "svg", "--title", "t"]):
        assert ok(*args, out) == ok(*args, DATA / f"{name}.txt"), args


def test_pprof_output_follows_the_tree_options(tmp_path):
    out = tmp_path / "f.pb.gz"
    ok("--no-C", "--filter", "middle", DATA / "single.txt", "-o", out)
    assert ok("-f", "folded", out) == ok("-f", "folded", "--no-C", "--filter", "middle",
                                         DATA / "single.txt")
    # standard output: the same bytes as the file
    r = subprocess.run([CFLAME, "-f", "pprof", "--no-C", "--filter", "middle",
                        DATA / "single.txt"], capture_output=True, timeout=60)
    assert r.returncode == 0 and gzip.decompress(r.stdout) == gzip.decompress(out.read_bytes())


def test_input_format_pprof_and_gzipped_text(tmp_path):
    out = tmp_path / "s.pb.gz"
    ok(DATA / "single.txt", "-o", out)
    raw = tmp_path / "s.pb"
    raw.write_bytes(gzip.decompress(out.read_bytes()))
    want = ok("-f", "folded", DATA / "single.txt")
    assert ok("-f", "folded", raw) == want  # bare profile.proto, told by content
    assert ok("-f", "folded", "--input-format", "pprof", out) == want
    zipped = tmp_path / "s.perf.gz"
    zipped.write_bytes(gzip.compress((DATA / "single.txt").read_bytes()))
    assert ok("-f", "folded", zipped) == want  # gzipped perf script text
    r = cflame("--input-format", "pprof", DATA / "single.folded")
    assert r.returncode == 1, r.stderr
    assert re.match(rf"cflame: {re.escape(str(DATA / 'single.folded'))} is not a (valid )?pprof "
                    r"profile", r.stderr), r.stderr


# ---- Go's own profile -> cflame ----

GO_PROGRAM = r"""
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"
)

var sink float64

//go:noinline
func busy(n int) {
	x := 0.0
	for i := 0; i < n; i++ {
		x += float64(i) * 0.5
	}
	sink += x
}

//go:noinline
func light(n int) {
	x := 0.0
	for i := 0; i < n; i++ {
		x += float64(i) * 0.25
	}
	sink += x
}

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	// Three parts busy, one part light: about 75% and 25% of the CPU.
	// Until it has used 1.5 s of CPU time, which Go samples 100 times a
	// second, however busy the machine is (wall time only bounds it).
	for end := time.Now().Add(40 * time.Second); cpuSeconds() < 1.5 && time.Now().Before(end); {
		busy(3000000)
		light(1000000)
	}
	pprof.StopCPUProfile()
	f.Close()
	fmt.Println(cpuSeconds())
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
"""


@pytest.fixture(scope="module")
def go_profile(tmp_path_factory, go_env):
    """The CPU profile a Go program wrote of itself with runtime/pprof."""
    d = tmp_path_factory.mktemp("goprog")
    (d / "prog.go").write_text(GO_PROGRAM)
    r = subprocess.run([GO, "build", "-o", str(d / "prog"), str(d / "prog.go")], env=go_env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    prof = d / "cpu.pb.gz"
    r = subprocess.run([str(d / "prog"), str(prof)], check=True, timeout=120,
                       capture_output=True, text=True)
    return prof, float(r.stdout)


def test_go_cpu_profile_is_drawn(tmp_path, go_profile, go_env):
    go_profile, cpu_seconds = go_profile
    counts = folded_counts(ok("-f", "folded", "--no-lines", go_profile))
    total = sum(counts.values())
    # Go samples 100 times per second of the CPU time the program measured
    # it used; some ticks land in the runtime's own start and stop.
    assert 0.5 * cpu_seconds * 100 <= total <= 1.1 * cpu_seconds * 100 + 5, (cpu_seconds, counts)

    def share(func):
        return sum(n for s, n in counts.items() if func in s.split(";")) / total

    # How Go split its samples between busy and light is the Go runtime's
    # sampling, which a loaded machine skews (busy, three times light's
    # work, got 40% on a busy machine): what cflame answers for is reading
    # them as go tool pprof does (below), and every loop sample under main.
    assert share("main.busy") + share("main.light") >= 0.95 * share("main.main"), counts
    assert share("main.main") >= 0.95
    assert all(s.startswith("runtime.main;main.main") for s in counts if "main.busy" in s)
    # the interval is Go's period, 10 ms; the graph's frames are Go's functions
    out = tmp_path / "go.vl.json"
    ok(go_profile, "-o", out)  # the format from the ending
    spec = json.loads(out.read_text())
    rows = {r["func"]: r for r in frames_of(spec)}
    # a loaded profile is drawn by function (its file kept); --lines, by line
    assert rows["main.busy"]["file"].endswith("prog.go") and rows["main.busy"]["line"] == 0
    lined = {r["func"]: r for r in frames_of(json.loads(ok("-f", "vegalite", "--lines",
                                                           go_profile)))}
    assert lined["main.busy"]["file"].endswith("prog.go") and lined["main.busy"]["line"] > 0
    assert rows["main.busy"]["module"].endswith("prog")
    check_spec(out)
    svg = ET.fromstring(ok(go_profile))
    texts = [t.text for t in svg.iter(SVG_NS + "text")]
    assert any(t and re.match(rf"{COUNT} samples, one every 10 ms", t) for t in texts), texts[:5]
    # and go tool pprof agrees with cflame on it
    want = shares(ok("-f", "folded", "--no-lines", go_profile))
    got = pprof_top(go_env, go_profile)
    for func in ("main.busy", "main.light", "main.main"):
        assert abs(got[func][1] - want[func][1]) <= 0.006, func


def test_go_profile_diffs_and_folds(tmp_path, go_profile):
    go_profile, _ = go_profile
    # against itself: every frame the same
    rows = frames_of(json.loads(ok("-f", "vegalite", "--diff", go_profile, go_profile)))
    assert {r["change"] for r in rows} == {"same"}
    # folded stacks of it read back into the same stacks
    folded = tmp_path / "go.folded"
    ok("-f", "folded", go_profile, "-o", folded)
    assert ok("-f", "folded", folded) == folded.read_text()
    # a diff of two pprof files is the diff of their folded stacks
    base, target = tmp_path / "base.folded", tmp_path / "target.folded"
    base.write_text("main;parse 100\nmain;work 100\nmain;gone;read 40\n")
    target.write_text("main;parse 100\nmain;work 300\nmain;fresh;write 50\n")
    ok(base, "-o", tmp_path / "base.pb.gz")
    ok(target, "-o", tmp_path / "target.pb.gz")
    for fmt in ("folded", "text", "vegalite"):
        assert ok("-f", fmt, "--title", "t", "--diff", tmp_path / "base.pb.gz",
                  tmp_path / "target.pb.gz") == \
            ok("-f", fmt, "--title", "t", "--diff", base, target), fmt


# ---- bad files ----

def test_truncated_and_foreign_pprof_name_the_file(tmp_path):
    good = tmp_path / "good.pb.gz"
    ok(DATA / "single.txt", "-o", good)
    data = good.read_bytes()
    cases = {
        "truncated.pb.gz": (data[: len(data) // 2], "the gzip data is truncated"),
        "foreign.pb.gz": (gzip.compress(bytes(range(1, 200)) * 5),
                          "is gzip-compressed, but not a pprof profile"),
        "cut.pb": (gzip.decompress(data)[:300], "cut.pb is not a pprof profile: its bytes"),
        "image.png": (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(200),
                      "image.png is not a pprof profile: its bytes"),
    }
    for name, (content, why) in cases.items():
        bad = tmp_path / name
        bad.write_bytes(content)
        out = tmp_path / "out.svg"
        r = cflame(DATA / "single.txt", bad, "-o", out)
        assert r.returncode == 1 and r.stdout == "", name
        assert r.stderr.startswith(f"cflame: {bad}"), r.stderr
        assert why in r.stderr, r.stderr
        assert not out.exists(), name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["good.pb.gz", *cases])
    # a pprof output that cannot be written leaves nothing either
    r = cflame(DATA / "single.txt", "-o", tmp_path / "no" / "dir.pb.gz")
    assert r.returncode == 1 and "cannot write" in r.stderr


def test_pprof_output_of_a_diff_is_refused():
    r = cflame("-f", "pprof", "--diff", DATA / "single.txt", DATA / "single.txt")
    assert r.returncode == 2 and "a pprof file holds one profile" in r.stderr
