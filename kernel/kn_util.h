/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_util: small helpers every part of the kernel uses. (Its clock is
 * flame/fl__common.h's, which record/ and flame/ share.) */
#ifndef KN_UTIL_H
#define KN_UTIL_H

#include <fcntl.h>
#include <unistd.h>

/* fd, moved (close-on-exec) to a number above `above` when it is not, so
 * that placing a child's fixed descriptors never overwrites one still to
 * be placed. Returns the descriptor, or -1 (errno) with fd closed. */
static inline int kn_fd_above(int fd, int above) {
  if (fd < 0 || fd > above) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, above + 1);
  close(fd);
  return moved;
}

#endif
