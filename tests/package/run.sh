#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# package.consumer: installs the build into a fresh prefix, then builds the
# consumers of this folder against it the two ways a user would (pkg-config,
# and CMake's find_package), runs them, and checks what a user would look
# at: the text report of a folded profile (also from a C++ program), its
# SVG, samples recorded by the sampler, and what the library exports.
#
#   run.sh BUILD_DIR WORK_DIR VERSION
#
# CC, CXX, CFLAGS, CXXFLAGS and LDFLAGS, when set, build the consumers (the
# sanitizer build's libraries need its flags).
set -euo pipefail
build=$1 work=$2 version=$3
src=$(cd "$(dirname "$0")" && pwd)
fail() { echo "package.consumer: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
pc=$(find "$prefix" -name cflame.pc -path '*/pkgconfig/*')
[ -n "$pc" ] || fail "no cflame.pc installed under $prefix"
export PKG_CONFIG_PATH=$(dirname "$pc")

for module in cflame cflame-sampler; do
  got=$(pkg-config --modversion "$module")
  [ "$got" = "$version" ] || fail "pkg-config says $module is $got, the build is $version"
done

# Every installed header declares its API inside CFLAME_BEGIN_DECLS (C
# linkage for C++, exported), and all of them compile as C++.
headers=$prefix/include/cflame
for h in "$headers"/*.h; do
  case ${h##*/} in fl_api.h | fl_version.h) continue ;; esac
  grep -q '^CFLAME_BEGIN_DECLS$' "$h" && grep -q '^CFLAME_END_DECLS$' "$h" ||
    fail "${h##*/} does not declare its API between CFLAME_BEGIN_DECLS and CFLAME_END_DECLS"
done
for h in "$headers"/*.h; do echo "#include <cflame/${h##*/}>"; done |
  ${CXX:-c++} ${CXXFLAGS:-} -x c++ -fsyntax-only -Wall -Wextra -Werror \
    $(pkg-config --cflags cflame cflame-sampler) - ||
  fail "the installed headers do not compile as C++"

# What the library exports (include/cflame/fl_api.h): the API declared in
# the headers, not its internals (fl__*) nor the C generated for pprof.
lib=$(find "$prefix" -name libcflame.a)
visibility() { # SYMBOL: DEFAULT or HIDDEN, where libcflame.a defines it
  readelf -sW "$lib" | awk -v s="$1" '$8 == s && $7 != "UND" { print $6; exit }'
}
for symbol in fl_read_profile fl_bundle fl_tree_build; do
  [ "$(visibility $symbol)" = DEFAULT ] || fail "libcflame.a does not export $symbol"
done
for symbol in fl__gunzip fl__rows_get perftools__profiles__profile__unpack; do
  [ "$(visibility $symbol)" = HIDDEN ] || fail "libcflame.a exports its internal $symbol"
done

# The report and the picture of tests/package/profile.folded.
check_flame() { # BINARY HOW
  "$1" "$src/profile.folded" "$work/$2.svg" >"$work/$2.txt" || fail "$2: flame_consumer failed"
  diff -u "$src/expected.txt" "$work/$2.txt" || fail "$2: the text report differs"
  python3 - "$work/$2.svg" <<'PY' || fail "$2: the SVG is not the flame graph"
import sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
svg = ET.parse(sys.argv[1]).getroot()
assert svg.tag == ns + "svg", svg.tag
frames = sorted(r.find(ns + "title").text.split("\n")[0]
                for r in svg.iter(ns + "path") if r.find(ns + "title") is not None)
want = sorted(["all", "main", "parse", "read_line", "work", "compute"])
assert frames == want, frames
PY
}
check_cxx() { # BINARY HOW
  "$1" "$src/profile.folded" "$version" >"$work/$2-cxx.txt" || fail "$2: cxx_consumer failed"
  diff -u "$src/expected.txt" "$work/$2-cxx.txt" || fail "$2: the C++ program's report differs"
}
check_sampler() { # BINARY HOW
  "$1" >"$work/$2-sampler.txt" || fail "$2: sampler_consumer failed"
  grep -qE '^samples: [1-9][0-9]*$' "$work/$2-sampler.txt" || fail "$2: no samples recorded"
}

# pkg-config, with a plain compiler command: `--libs` alone and with
# `--static` (the libraries are static only, so both must link).
for how in "" --static; do
  dir=$work/pc${how}
  mkdir -p "$dir"
  ${CC:-cc} -std=c11 ${CFLAGS:-} -o "$dir/flame_consumer" "$src/flame_consumer.c" \
    $(pkg-config --cflags --libs $how cflame) ${LDFLAGS:-} ||
    fail "pkg-config --libs $how cflame does not link the example"
  ${CC:-cc} -std=c11 ${CFLAGS:-} -o "$dir/sampler_consumer" "$src/sampler_consumer.c" \
    $(pkg-config --cflags --libs $how cflame-sampler) ${LDFLAGS:-} ||
    fail "pkg-config --libs $how cflame-sampler does not link the example"
  ${CXX:-c++} ${CXXFLAGS:-} -o "$dir/cxx_consumer" "$src/cxx_consumer.cpp" \
    $(pkg-config --cflags --libs $how cflame) ${LDFLAGS:-} ||
    fail "pkg-config --libs $how cflame does not link the C++ example"
  check_flame "$dir/flame_consumer" "pkg-config$how"
  check_cxx "$dir/cxx_consumer" "pkg-config$how"
  check_sampler "$dir/sampler_consumer" "pkg-config$how"
done

# CMake: find_package(cflame) from a project of its own.
cmake -S "$src" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCFLAME_EXPECTED_VERSION="$version" >"$work/cmake-configure.log" ||
  { cat "$work/cmake-configure.log" >&2; fail "find_package(cflame) failed"; }
cmake --build "$work/cmake" >"$work/cmake-build.log" ||
  { cat "$work/cmake-build.log" >&2; fail "the CMake consumer does not build"; }
check_flame "$work/cmake/flame_consumer" cmake
check_cxx "$work/cmake/cxx_consumer" cmake
check_sampler "$work/cmake/sampler_consumer" cmake
# The installed kernel: its kernelspec names the prefix given to
# `cmake --install --prefix`, not the one configured, and it runs a cell.
spec=$prefix/share/jupyter/kernels/cflame/kernel.json
[ -f "$spec" ] || fail "no kernelspec installed at $spec"
JUPYTER_PATH=$prefix/share/jupyter "${CFLAME_PYTHON:-/usr/bin/python3}" - "$spec" "$prefix" <<'PY' || fail "the installed kernel does not run a cell"
import json, os, sys
from jupyter_client.manager import start_new_kernel
spec, prefix = sys.argv[1], sys.argv[2]
argv0 = json.load(open(spec))["argv"][0]
assert argv0 == os.path.join(prefix, "bin", "cflame-kernel"), f"kernel.json names {argv0}"
km, kc = start_new_kernel(kernel_name="cflame", startup_timeout=60)
try:
    got = []
    reply = kc.execute_interactive("6 * 7", timeout=60,
                                   output_hook=lambda m: got.append(m["content"]))
    assert reply["content"]["status"] == "ok", reply["content"]
    values = [c["data"]["text/plain"] for c in got if "data" in c]
    assert values == ["(int) 42"], got
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
PY
echo "package.consumer: pkg-config (with and without --static) and find_package consumers" \
  "built and checked; the installed kernel ran a cell"
