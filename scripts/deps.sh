# SPDX-License-Identifier: BSD-3-Clause
# Sourced by scripts/test and scripts/demo: installs what cflame needs from
# Debian's packages (as root), or says the one apt-get line to run.
# golang-go is for the tests alone: `go tool pprof` reads what cflame
# writes, and a Go program's own CPU profile is drawn by cflame.
# openmpi-bin and libopenmpi-dev are the tests' only (cflame record of MPI
# ranks, tests/cli/test_record.py); g++ and rustc too (demangled C++ and
# Rust names, tests/cli/test_demangle.py); time (GNU time) is the
# benchmarks' (peak memory of cflame record, bench/bench_symbolize.py).
# librsvg2-dev and libcairo2-dev draw PNG and PDF pictures (fl_picture.c);
# poppler-utils' pdftoppm is the tests' reader of the PDFs.
# python3-notebook is the tests' classic Notebook 6, where the SVG's own
# script makes a trusted notebook's graphs interactive; jupyter-console is
# the tests' terminal front end (a live graph there is a line).
CFLAME_DEBS="build-essential cmake pkg-config clang libclang-rt-14-dev \
libzmq3-dev libjansson-dev uuid-dev libssl-dev libunwind-dev libdw-dev libelf-dev libiberty-dev \
libprotobuf-c-dev protobuf-c-compiler zlib1g-dev golang-go \
python3 python3-zmq python3-jupyter-client python3-jupyter-kernel-test python3-pytest \
python3-nbconvert python3-nbformat python3-ipykernel jupyter-nbconvert jupyter-core \
chromium linux-perf libclang-dev manpages-dev man-db openmpi-bin libopenmpi-dev g++ rustc time \
librsvg2-dev libcairo2-dev poppler-utils python3-notebook jupyter-console"

cflame_missing_debs() {
  local missing=""
  # Node (for the vega-lite checks) may come from the image; Debian's
  # nodejs and npm otherwise.
  command -v node >/dev/null 2>&1 || missing="$missing nodejs"
  command -v npm >/dev/null 2>&1 || missing="$missing npm"
  for p in $CFLAME_DEBS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  echo "$missing"
}

cflame_install_debs() {
  local missing
  missing=$(cflame_missing_debs)
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" = 0 ]; then
    echo "==> installing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "cflame needs these Debian packages; run:" >&2
    echo "  sudo apt-get install$missing" >&2
    return 1
  fi
}
