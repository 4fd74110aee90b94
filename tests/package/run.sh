#!/bin/bash
# package.consumer: installs the build into a fresh prefix, then builds the
# consumers of this folder against it the two ways a user would (pkg-config,
# and CMake's find_package), runs them, and checks what a user would look
# at: the text report of a folded profile, its SVG, and samples recorded by
# the sampler.
#
#   run.sh BUILD_DIR WORK_DIR VERSION
#
# CC, CFLAGS and LDFLAGS, when set, build the consumers (the sanitizer
# build's libraries need its flags).
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
                for r in svg.iter(ns + "rect") if r.find(ns + "title") is not None)
want = sorted(["all", "main", "parse", "read_line", "work", "compute"])
assert frames == want, frames
PY
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
  check_flame "$dir/flame_consumer" "pkg-config$how"
  check_sampler "$dir/sampler_consumer" "pkg-config$how"
done

# CMake: find_package(cflame) from a project of its own.
cmake -S "$src" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCFLAME_EXPECTED_VERSION="$version" >"$work/cmake-configure.log" ||
  { cat "$work/cmake-configure.log" >&2; fail "find_package(cflame) failed"; }
cmake --build "$work/cmake" >"$work/cmake-build.log" ||
  { cat "$work/cmake-build.log" >&2; fail "the CMake consumer does not build"; }
check_flame "$work/cmake/flame_consumer" cmake
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
