# SPDX-License-Identifier: BSD-3-Clause
"""Counts as cflame prints them, read back by the tests.

cflame's messages and summaries print a count with thousands separators
("wrote x.pb.gz: 1,577 samples every 1 ms", the SVG's "1,577 samples, one
every 1 ms": fl__thousands in flame/draw/fl__render.c); its text reports' columns
print plain digits ("Total: 1577 samples"). A test reads either with COUNT in
its pattern and count() on what it matched, never with a bare \\d+, which
matches a run of 999 samples and not one of 1,000.
"""

import re

# A count: "1,577", "12,345,678" or "1577". A group of its own (no capture),
# so it can stand anywhere in a pattern: rf"({COUNT}) samples?".
COUNT = r"(?:\d{1,3}(?:,\d{3})+|\d+)"

_COUNT_RE = re.compile(COUNT)


def count(text):
    """The number a COUNT matched: count("1,577") == 1577."""
    assert _COUNT_RE.fullmatch(text), f"not a count as cflame prints one: {text!r}"
    return int(text.replace(",", ""))


def count_in(pattern, text):
    """The count that pattern's one group matches in text (re.search),
    where pattern says COUNT as "{count}": count_in(r": {count} samples? ",
    stderr). Fails, quoting text, where the pattern is not found."""
    m = re.search(pattern.replace("{count}", f"({COUNT})"), text)
    assert m, f"{pattern!r} not found in {text[:500]!r}"
    return count(m.group(1))


def folded_stacks(path):
    """{stack: count} of a folded file as cflame writes one ("a;b;c 12" a
    line), the counts of a stack given twice added."""
    out = {}
    with open(path) as f:
        for line in f.read().splitlines():
            stack, _, n = line.rpartition(" ")
            out[stack] = out.get(stack, 0) + int(n)
    return out
