#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the readers' hostile seeds into corpus/folded, corpus/perfscript
and corpus/pprof: one for each kind of profile that once crashed cflame or
took the machine's memory, each a few kilobytes, gzipped where what it
holds is large. The large ones ask for more than fuzz_io.h's budget of
64 MiB as the originals did of the default one (all but the perf script
stack, which is merely deep), so the fuzzers start from inputs that stop
at the budget, in the reader or in the tree:

  folded/hostile_deep_line.folded.gz   one line of 5·10^3 frames (the
                                       original: 6·10^7 in 117 KB; 10^6
                                       took 6 s of the fuzzer's 20 under
                                       ASan, and fit the budget once
                                       stacks shared their prefixes)
  folded/hostile_control_names.folded  names with line breaks and escapes
  perfscript/hostile_deep_stack.txt.gz one sample of 2·10^4 frame lines (a
                                       deeper one takes seconds of the
                                       fuzzer's 20 under ASan)
  pprof/hostile_refs.pb.gz             one sample naming a location 5·10^6
                                       times (the original: 5·10^7)
  pprof/hostile_strings.pb.gz          4·10^6 empty strings (2.5·10^7)
  pprof/hostile_lines.pb.gz            a location of 3,000 lines named
                                       10,000 times, as the original
  pprof/hostile_zero_period.pb         a time with no period and values of 0
  pprof/hostile_control_names.pb       names with line breaks and escapes

Run from anywhere: python3 tests/fuzz/make_hostile_seeds.py
"""
import gzip
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from pprof_write import profile  # noqa: E402

NAMES = ["main", "evil\nTotal: 999 samples", ("bell\x07\x1b[2J", "dir\r/x.c")]


def write(kind, name, data):
    path = os.path.join(HERE, "corpus", kind, name)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{path}: {len(data)} bytes")


def main():
    write("folded", "hostile_deep_line.folded.gz",
          gzip.compress((";".join(["a"] * 5_000) + " 1\n").encode(), 9))
    write("folded", "hostile_control_names.folded",
          b"main;evil\x0bname\x1b[2J 3\nmain;bell\x07 (dir\r/x.c:3) 1\n")
    frames = "\t4011d6 f+0x16 (/tmp/prog)\n" * 20_000
    write("perfscript", "hostile_deep_stack.txt.gz",
          gzip.compress(f"prog 1234 5678.901234: 250000 cpu-clock:\n{frames}\n".encode(), 9))
    write("pprof", "hostile_refs.pb.gz",
          profile(["main"], [(b"\x01" * 5_000_000, 1)], gzipped=True))
    write("pprof", "hostile_strings.pb.gz",
          profile(["main", "work"], [([1, 0], 5)], extra_strings=4_000_000, gzipped=True))
    write("pprof", "hostile_lines.pb.gz",
          profile(["main", "work"], [(b"\x02" * 10_000 + b"\x01", 1)],
                  location_lines={1: 3000}, gzipped=True))
    write("pprof", "hostile_zero_period.pb", profile(["main"], [([0], 0)]))
    write("pprof", "hostile_control_names.pb",
          profile(NAMES, [([1, 0], 3000), ([2, 0], 1000)],
                  period_type=("cpu", "nanoseconds"), period=1000))


if __name__ == "__main__":
    main()
