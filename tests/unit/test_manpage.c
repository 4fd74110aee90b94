/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_manpage: reading a page's parts, and the pages man really gives
 * (Debian's man-db and manpages-dev). */
#define _GNU_SOURCE
#include <poll.h>
#include <stdbool.h>
#include <string.h>

#include "kn_manpage.h"
#include "test.h"

static const char page[] =
    "frob(3)                  Library Functions Manual                  frob(3)\n"
    "\n"
    "NAME\n"
    "       frob - twiddle a widget\n"
    "\n"
    "SYNOPSIS\n"
    "       #include <frob.h>\n"
    "\n"
    "       int frob(int w,\n"
    "                int how);\n"
    "\n"
    "   Feature Test Macro Requirements for glibc (see feature_test_macros(7)):\n"
    "\n"
    "       frob():\n"
    "           _DEFAULT_SOURCE\n"
    "\n"
    "DESCRIPTION\n"
    "       frob() twiddles the widget w\n"
    "       the way how says.\n"
    "\n"
    "       A second paragraph.\n"
    "\n"
    "RETURN VALUE\n"
    "       0.\n";

static void test_summary(void) {
  char *title, *synopsis, *description;
  kn_manpage_summary(page, &title, &synopsis, &description);
  CHECK_STR(title, "frob(3)");
  /* Without the feature-test requirements, which are less indented. */
  CHECK_STR(synopsis, "#include <frob.h>\n\nint frob(int w,\n         int how);");
  CHECK_STR(description, "frob() twiddles the widget w the way how says.");
  free(title);
  free(synopsis);
  free(description);

  kn_manpage_summary("", &title, &synopsis, &description);
  CHECK(!title && !synopsis && !description);
  kn_manpage_summary("x(1)\n\nNAME\n       x\n", &title, &synopsis, &description);
  CHECK_STR(title, "x(1)");
  CHECK(!synopsis && !description);
  free(title);
}

/* Runs man for name and returns the page (new). */
static char *man(const char *name, bool is_type) {
  char err[256];
  kn_manpage_t *m = kn_manpage_start(name, is_type, err, sizeof err);
  CHECK(m != NULL);
  if (!m) return strdup("");
  while (!kn_manpage_poll(m)) {
    struct pollfd p = {kn_manpage_fd(m), POLLIN, 0};
    CHECK(poll(&p, 1, 30000) == 1);
  }
  char *text = strdup(kn_manpage_text(m));
  kn_manpage_destroy(&m);
  CHECK(m == NULL);
  return text;
}

static void test_real_pages(void) {
  char *text = man("printf", false);
  char *title, *synopsis, *description;
  kn_manpage_summary(text, &title, &synopsis, &description);
  CHECK_STR(title, "printf(3)");
  CHECK(synopsis && strstr(synopsis, "#include <stdio.h>") &&
        strstr(synopsis, "int printf(const char *restrict format, ...);"));
  CHECK(description && !strncmp(description, "The functions in the printf() family", 36));
  for (const char *l = description; l && *l;) { /* lines of at most 76 columns */
    size_t n = strcspn(l, "\n");
    CHECK(n <= 76);
    l += n + (l[n] == '\n');
  }
  CHECK(strstr(text, "RETURN VALUE") != NULL); /* the whole page */
  CHECK(strchr(text, '\b') == NULL);
  free(title);
  free(synopsis);
  free(description);
  free(text);

  /* A system call's page is in section 2; stat's own, not struct stat's. */
  text = man("stat", false);
  CHECK(!strncmp(text, "stat(2)", 7));
  free(text);
  text = man("size_t", true);
  CHECK(strstr(text, "size_t(3type)") != NULL);
  free(text);
  text = man("cflame_no_such_function", false);
  CHECK_STR(text, "");
  free(text);
}

/* A job destroyed before man has finished: nothing is left running. */
static void test_destroy_early(void) {
  char err[256];
  kn_manpage_t *m = kn_manpage_start("printf", false, err, sizeof err);
  CHECK(m != NULL);
  kn_manpage_destroy(&m);
  CHECK(m == NULL);
}

int main(void) {
  test_summary();
  test_real_pages();
  test_destroy_early();
  return TEST_DONE();
}
