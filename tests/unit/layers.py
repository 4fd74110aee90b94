#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""layers: the flame library's rooms include one way (ctest: unit.layers).

flame/ holds a folder per room (docs/ARCHITECTURE.md, "The folder tree")
and, at its root, what every room shares. A file's #include "..." of a
library file may name its own room, the root, or a room on a lower tier of
ORDER: never a room of its own tier or above it. So drawing never reaches
back into a view, nor the model into drawing; what two rooms both need
lives in the lower one (or the root), and cflame/*.h, the installed API,
is open to every room. Headers are included by name (CMake puts every room
on the include path), so a name is unique across the rooms.

Outside flame/ (the kernel, its worker, `cflame record`, the command) a
program may include only the internal headers ARCHITECTURE.md's "Internal
headers" lists as theirs: OUTSIDE.

No source file of the product (flame/, kernel/, record/, tools/) is over
MAX_LINES lines: a longer one holds more than one concern, and is split
along a seam (a file a concern, named for it).

Usage: layers.py [SOURCE_DIR]; exits 1 and lists each offending include
and each file over the limit.
"""
import pathlib
import re
import sys

# Lowest first; rooms of one tier are independent of each other. The root,
# "", is below them all.
ORDER = [
    ("",),
    ("sample", "symbol"),
    ("model",),
    ("read",),
    ("draw",),
    ("view",),
    ("output",),
]

# What flame/'s users outside it may include, and why (ARCHITECTURE.md):
OUTSIDE = {
    "fl__common.h",  # every program: the one allocator, buffer, clock
    "fl__spawn.h",  # kernel, record: the one way to start a program
    "fl__threads.h",  # the worker and the preloaded library define the
    "fl__waits.h",  # wrappers' hooks; rc_collect.c cuts at their frames
    "fl__platform.h",  # kw_fault.c reads a signal's context as the sampler does
}
OUTSIDE_DIRS = ("kernel", "record", "tools")

MAX_LINES = 900

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE = (".c", ".h")


def tier_of(room):
    for i, rooms in enumerate(ORDER):
        if room in rooms:
            return i
    return None


def room_of(path, flame):
    rel = path.relative_to(flame)
    return rel.parts[0] if len(rel.parts) > 1 else ""


def main():
    top = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2])
    flame = top / "flame"
    problems = []

    # Every library file by name, and the room it lives in. A header
    # protoc-c generates from X.proto lives where X.proto does.
    where = {}
    for path in sorted(flame.rglob("*")):
        if not path.is_file():
            continue
        room = room_of(path, flame)
        if tier_of(room) is None:
            problems.append(f"{path.relative_to(top)}: flame/{room}/ is in no tier of "
                            f"tests/unit/layers.py's ORDER; place the room there")
            continue
        names = [path.name]
        if path.suffix == ".proto":
            names.append(path.stem + ".pb-c.h")
        for name in names:
            if name in where:
                problems.append(f"{path.relative_to(top)}: a second {name} (the other in "
                                f"flame/{where[name]}/): headers are included by name")
            where[name] = room

    for path in sorted(flame.rglob("*")):
        if path.suffix not in SOURCE or tier_of(room_of(path, flame)) is None:
            continue
        room = room_of(path, flame)
        for name in INCLUDE.findall(path.read_text()):
            if name.startswith("cflame/"):
                continue
            if name not in where:
                problems.append(f"{path.relative_to(top)}: includes {name}, which is "
                                f"no file of flame/")
                continue
            other = where[name]
            if other == room or tier_of(other) < tier_of(room):
                continue
            problems.append(
                f"{path.relative_to(top)}: {room or 'the root'} includes {name} of "
                f"{other or 'the root'}, " +
                ("a room of its own tier" if tier_of(other) == tier_of(room) else "a higher room") +
                f"; the order is {' < '.join('/'.join(r or 'root' for r in t) for t in ORDER)}")

    seen_outside = {}
    for d in OUTSIDE_DIRS:
        for path in sorted((top / d).rglob("*")):
            if path.suffix not in SOURCE:
                continue
            for name in INCLUDE.findall(path.read_text()):
                if name in where and name.startswith("fl__"):
                    seen_outside.setdefault(name, set()).add(d)
                    if name not in OUTSIDE:
                        problems.append(f"{path.relative_to(top)}: includes the library's "
                                        f"internal {name}; outside flame/ only "
                                        f"{', '.join(sorted(OUTSIDE))} may be")

    for d in ("flame",) + OUTSIDE_DIRS:
        for path in sorted((top / d).rglob("*")):
            if path.suffix in SOURCE and path.is_file():
                n = path.read_text().count("\n")
                if n > MAX_LINES:
                    problems.append(f"{path.relative_to(top)}: {n} lines, over {MAX_LINES}; "
                                    f"split it along a seam, a file a concern")

    for p in problems:
        print(p)
    print(f"{len(where)} library files in {len(ORDER)} tiers; outside flame/: " +
          "; ".join(f"{n} ({', '.join(sorted(ds))})" for n, ds in sorted(seen_outside.items())))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
