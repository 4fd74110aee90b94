/* Unit tests for `cflame record`'s reading of a process's maps
 * (record/rc_collect.c): the snapshots the preloaded library wrote at
 * start, before each dlopen and at exit, merged into the maps text the
 * process is symbolized by. The rest of the command runs end to end in
 * tests/cli/test_record.py. */
#include <stdlib.h>
#include <string.h>

#include "rc_collect.h"
#include "rc_files.h"
#include "test.h"

#define LINE(range, path) range " r-xp 00000000 fe:00 42      " path "\n"
#define DATA(range, path) range " rw-s 00000000 fe:00 43      " path "\n"

static void test_merge_maps(void) {
  /* Start: the program and libc. A dlopen'd plugin, then closed, and
   * another library loaded where it was; the heap and the stack (not
   * files) are left out. */
  const char *snapshots =
      LINE("1000-2000", "/usr/bin/prog")
      LINE("7000-8000", "/usr/lib/libc.so.6")
      "9000-a000 rw-p 00000000 00:00 0          [heap]\n" RC_MAPS_END
      LINE("1000-2000", "/usr/bin/prog")
      LINE("5000-6000", "/opt/plugin.so")
      LINE("7000-8000", "/usr/lib/libc.so.6") RC_MAPS_END
      LINE("1000-2000", "/usr/bin/prog")
      LINE("5800-6800", "/opt/other.so")
      LINE("7000-8000", "/usr/lib/libc.so.6")
      "8800-8900 r--p 00010000 fe:00 42      /usr/lib/libc.so.6\n"
      DATA("9000-9800", "/tmp/cflame-record-x/12.0.samples")
      "fff000-1000000 rw-p 00000000 00:00 0          [stack]\n" RC_MAPS_END;
  char *maps = rc_collect_merge_maps(snapshots);
  /* The last snapshot wins where ranges overlap: the plugin, closed, does
   * not stand where other.so is now. Every mapping of code files is kept,
   * and no file mapped without code (the sample buffer). */
  CHECK_STR(maps,
            LINE("1000-2000", "/usr/bin/prog") LINE("5800-6800", "/opt/other.so") LINE(
                "7000-8000",
                "/usr/lib/libc.so.6") "8800-8900 r--p 00010000 fe:00 42      /usr/lib/libc.so.6\n");
  free(maps);

  /* A plugin closed before the end keeps its place, and a snapshot cut
   * short (a process killed while writing it) still counts. */
  maps = rc_collect_merge_maps(LINE("1000-2000", "/usr/bin/prog") LINE(
      "5000-6000", "/opt/plugin.so") RC_MAPS_END LINE("1000-2000", "/usr/bin/prog"));
  CHECK_STR(maps, LINE("1000-2000", "/usr/bin/prog") LINE("5000-6000", "/opt/plugin.so"));
  free(maps);

  maps = rc_collect_merge_maps("");
  CHECK_STR(maps, "");
  free(maps);
}

int main(void) {
  test_merge_maps();
  return TEST_DONE();
}
