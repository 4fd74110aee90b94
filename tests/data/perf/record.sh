#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Re-records the perf script captures of this directory and their reference
# folded stacks (see README). Needs perf (Debian's linux-perf), a C
# compiler, and two copies of stackcollapse-perf.pl, which are not part of
# cflame: SC_OLD (brendangregg/FlameGraph at commit ef64564) and SC_NEW (a
# version with the event filter and the sample period as the count).
#
#   SC_OLD=/path/stackcollapse-perf.pl SC_NEW=/path/stackcollapse-perf.pl \
#     tests/data/perf/record.sh
set -euo pipefail
cd "$(dirname "$0")"
: "${SC_OLD:?set SC_OLD to stackcollapse-perf.pl of FlameGraph commit ef64564}"
: "${SC_NEW:?set SC_NEW to a stackcollapse-perf.pl with --event-filter}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cc -O2 -g -fno-omit-frame-pointer -o "$work/workload" workload.c
cc -O2 -g -fno-omit-frame-pointer -pthread -o "$work/t" threads.c
(cd "$work" &&
  perf record -g -o single.data ./workload 30 &&
  perf record -g -o threads.data ./t &&
  perf record -e cpu-clock,task-clock -g -o events.data ./workload 20) >/dev/null 2>&1

perf script -i "$work/single.data" > single.txt 2>/dev/null
perf script -i "$work/threads.data" > threads.txt 2>/dev/null
perf script -i "$work/events.data" > events.txt 2>/dev/null
perf script -F comm,pid,tid,time,event,ip,sym,dso -i "$work/single.data" > pidtid.txt 2>/dev/null
perf script -F +srcline -i "$work/single.data" > srcline.txt 2>/dev/null

# The old script has no event filter: events.txt gets no .folded from it.
for f in single threads pidtid srcline; do
  perl "$SC_OLD" "$f.txt" > "$f.folded" 2>/dev/null
done
for f in single threads events pidtid srcline synthetic; do
  perl "$SC_NEW" "$f.txt" > "$f.latest.folded" 2>/dev/null
done
