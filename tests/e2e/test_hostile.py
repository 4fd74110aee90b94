# SPDX-License-Identifier: BSD-3-Clause
"""Profiles from elsewhere, loaded into the kernel: whatever a file names,
the notebook's outputs hold no text of a file outside the source roots,
and the session keeps what it had."""
from conftest import displays, ok, run, start_kernel


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
