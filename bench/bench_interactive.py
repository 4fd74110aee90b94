#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The interactive SVG and the pictures of a bounded graph (docs/PERFORMANCE.md).

The graph: the flame graph of bench_cli.py's profile (10^6 samples in 10^5
distinct stacks, the same seed), which cflame bounds to its 5,000 widest
frames. Measured:

  script      the bytes the SVG's script adds (the <script> element):
              target at most 8 KB (8,192 bytes);
  bundle      the bytes it adds to a notebook output: the same element as a
              JSON string inside the markdown item (a bundle holds it once);
              target no more than 8 KB;
  open        headless Chromium (network off) opening the SVG file: from
              navigation to the first frame painted after the script set
              it up (bench/interactive_open.mjs), median of --runs;
  click       a click on the widest frame narrower than the plot, to the
              frame zoomed to the plot's width and painted, median; target
              for both: at most 1 s;
  png, pdf    cflame --format png|pdf of the profile, less cflame --format
              svg of it (reading the input and laying the graph out are the
              same in both), medians of --runs interleaved runs; target at
              most 300 ms each.

Nothing here asserts: the table says which targets were met. Raw timings go
to --json.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from bench_cli import generate, timed  # noqa: E402  (the same profile, the same timer)

TARGET_SCRIPT_BYTES = 8192
TARGET_BROWSER_MS = 1000.0
TARGET_PICTURE_S = 0.300


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(REPO / "build"), help="cflame build tree")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--json", help="write every timing here")
    args = ap.parse_args()

    cflame = pathlib.Path(args.build) / "bin" / "cflame"
    if not cflame.exists():
        raise SystemExit(f"no {cflame}: build cflame first (scripts/bench builds it)")
    node = os.environ.get("CFLAME_NODE") or shutil.which("node")
    if not node:
        raise SystemExit("no node to drive Chromium (set CFLAME_NODE)")

    with tempfile.TemporaryDirectory(prefix="cflame-bench-interactive-") as tmp:
        tmp = pathlib.Path(tmp)
        folded = tmp / "bench.folded"
        generate(folded, 10**6, 10**5, 3000, args.seed)
        svg = tmp / "graph.svg"
        subprocess.run([cflame, "--format", "svg", "--minwidth", "0", folded, "-o", svg], check=True)
        text = svg.read_text()
        frames = len(re.findall(r"<path d=", text))
        script = re.search(r"<script>.*?</script>\n", text, re.S).group(0)
        script_bytes = len(script.encode())
        bundle_bytes = len(json.dumps(script, ensure_ascii=False).encode()) - 2

        browser = subprocess.run([node, str(REPO / "bench" / "interactive_open.mjs"), str(svg),
                                  str(args.runs)], check=True, capture_output=True, text=True)
        opened = json.loads(browser.stdout.strip().splitlines()[-1])

        times = {"svg": [], "png": [], "pdf": []}
        for _ in range(args.runs):
            for fmt in times:
                seconds, _ = timed([cflame, "--format", fmt, "--minwidth", "0", folded, "-o",
                                    tmp / f"out.{fmt}"])
                times[fmt].append(seconds)

    med = {k: statistics.median(v) for k, v in times.items()}
    open_ms, click_ms = statistics.median(opened["open_ms"]), statistics.median(opened["click_ms"])
    rows = [
        ("script", f"{script_bytes:,} bytes", f"≤ {TARGET_SCRIPT_BYTES:,} bytes",
         script_bytes <= TARGET_SCRIPT_BYTES),
        ("bundle growth", f"{bundle_bytes:,} bytes", f"≤ {TARGET_SCRIPT_BYTES:,} bytes",
         bundle_bytes <= TARGET_SCRIPT_BYTES),
        (f"open ({opened['frames']:,} frames)", f"{open_ms:.0f} ms", "≤ 1,000 ms",
         open_ms <= TARGET_BROWSER_MS),
        ("click to zoom", f"{click_ms:.0f} ms", "≤ 1,000 ms", click_ms <= TARGET_BROWSER_MS),
        ("png (less svg)", f"{1000 * (med['png'] - med['svg']):.0f} ms", "≤ 300 ms",
         med["png"] - med["svg"] <= TARGET_PICTURE_S),
        ("pdf (less svg)", f"{1000 * (med['pdf'] - med['svg']):.0f} ms", "≤ 300 ms",
         med["pdf"] - med["svg"] <= TARGET_PICTURE_S),
    ]
    print(f"a bounded flame graph: {frames:,} frames; {args.runs} runs; svg alone "
          f"{1000 * med['svg']:.0f} ms, png {1000 * med['png']:.0f} ms, pdf {1000 * med['pdf']:.0f} ms")
    print(f"{'measure':<26} {'figure':>14}  {'target':<16} met")
    for name, figure, target, met in rows:
        print(f"{name:<26} {figure:>14}  {target:<16} {'yes' if met else 'NO'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"when": datetime.datetime.now().isoformat(timespec="seconds"),
                       "machine": platform.node(), "frames": frames,
                       "script_bytes": script_bytes, "bundle_bytes": bundle_bytes,
                       "open_ms": opened["open_ms"], "click_ms": opened["click_ms"],
                       "seconds": times}, f, indent=1)


if __name__ == "__main__":
    main()
