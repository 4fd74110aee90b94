# SPDX-License-Identifier: BSD-3-Clause
"""Profiles from elsewhere, loaded into the kernel: whatever a file names,
the notebook's outputs hold no text of a file outside the source roots,
and the session keeps what it had."""
from conftest import displays, fails, ok, run, start_kernel


def test_profload_of_a_foreign_profile_reads_no_file_it_names(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".env").write_text("API_TOKEN=hunter2-private\n")
    p = tmp_path / "p.folded"
    p.write_text("prog;main (/etc/passwd:1) 5\n"
                 f"prog;main;helper ({proj}/.env:1) 3\n")
    with start_kernel() as (km, kc):
        ok(kc, "int kept = 41;")
        ok(kc, f"%profload {p}")
        reply, outputs = run(kc, "%profshow view=source")
        assert reply["status"] == "ok", reply
        (bundle,) = [d["data"] for d in displays(outputs)]
        ok(kc, f"%profsave {tmp_path / 'report.html'}")
        ok(kc, f"%profsave {tmp_path / 'report.txt'}")
        texts = [str(v) for v in bundle.values()]
        texts += [(tmp_path / n).read_text() for n in ("report.html", "report.txt")]
        for text in texts:
            assert "root:" not in text and "hunter2-private" not in text
        assert ok(kc, 'printf("%d\\n", kept + 1);') == "42\n"


def test_profload_of_a_broken_or_forging_pprof_loses_nothing(tmp_path):
    """A pprof with no period and no value (a division by zero once) is a
    clear error; one whose names hold a line break and a terminal escape
    is drawn with them written \\xHH in the report; the session keeps its
    variable throughout."""
    from pprof_write import profile

    zero = tmp_path / "zero.pb"
    zero.write_bytes(profile(["main"], [([0], 0)]))
    evil = tmp_path / "evil.pb"
    evil.write_bytes(profile(["main", "evil\nTotal: 999 samples", "bell\x1b[2J"],
                             [([1, 0], 3000), ([2, 0], 1000)],
                             period_type=("cpu", "nanoseconds"), period=1000))
    with start_kernel() as (km, kc):
        ok(kc, "int kept = 41;")
        reply, _ = fails(kc, f"%profload {zero}", "MagicError")
        assert f"no samples found in {zero}: every sample's value is 0" in reply["evalue"], reply
        ok(kc, f"%profload {evil}")
        reply, outputs = run(kc, "%profshow")
        assert reply["status"] == "ok", reply
        (bundle,) = [d["data"] for d in displays(outputs)]
        text = bundle["text/plain"]
        assert "evil\\x0aTotal: 999 samples" in text and "\x1b" not in text, text
        assert not any(line.startswith("Total: 999") for line in text.splitlines()), text
        assert ok(kc, 'printf("%d\\n", kept + 1);') == "42\n"


def test_profiles_that_ask_for_more_than_the_budget_are_errors_and_the_session_stays(tmp_path):
    """A 117 KB gzip of one 6·10^7-frame stack loads (it is one sample), and
    %profshow of it is a clear error, not an abort of the kernel; a pprof
    whose one sample names 5·10^7 locations is refused by a modest
    max_memory= as it is read; the session keeps its variable and its
    profile throughout."""
    import gzip

    from pprof_write import profile

    deep = tmp_path / "deep.folded.gz"
    deep.write_bytes(gzip.compress((";".join(["a"] * 60_000_000) + " 1\n").encode(), 9))
    refs = tmp_path / "refs.pb.gz"
    refs.write_bytes(profile(["main"], [(b"\x01" * 50_000_000, 1)], gzipped=True))
    budget = "of memory the budget allows; raise it with max_memory=SIZE"
    with start_kernel() as (km, kc):
        ok(kc, "int kept = 41;")
        assert "Loaded 1 samples" in ok(kc, f"%profload {deep}", timeout=120)
        reply, _ = fails(kc, "%profshow", "MagicError", timeout=120)
        assert f"the flame graph of {deep.name} " in reply["evalue"], reply
        assert budget in reply["evalue"], reply
        reply, _ = fails(kc, f"%profload {refs} max_memory=64M", "MagicError", timeout=120)
        assert f"{refs} needs more than the 64 MiB {budget}" in reply["evalue"], reply
        reply, _ = fails(kc, f"%profload {refs} max_memory=lots", "MagicError")
        assert "max_memory=lots" in reply["evalue"], reply
        # what was loaded before is still there, and still too deep to draw
        reply, _ = fails(kc, "%profshow max_memory=64M", "MagicError", timeout=120)
        assert f"needs more than the 64 MiB {budget}" in reply["evalue"], reply
        assert ok(kc, 'printf("%d\\n", kept + 1);') == "42\n"
