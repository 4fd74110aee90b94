/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__demangle: libiberty's demangler (see fl__demangle.h). */
#define _GNU_SOURCE
#include "fl__demangle.h"

#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "fl__common.h"

char *fl__demangle(const char *symbol) {
  /* Only what can be mangled goes to libiberty: C's names are most of a C
   * profile, and "_Z"/"_R" (or macOS's "__Z") begin every mangled one. */
  if (!symbol || symbol[0] != '_') return NULL;
  const char *s = symbol[1] == '_' ? symbol + 1 : symbol;
  if (s[1] != 'Z' && s[1] != 'R') return NULL;
  /* libiberty reads no '@': a PLT stub's name or a versioned symbol
   * ("_Znwm@plt", "_ZNSo3putEc@@GLIBCXX_3.4") is demangled up to it and
   * keeps the rest. DMGL_AUTO tries Rust first (its legacy names are valid
   * C++ names too), then C++; DMGL_PARAMS keeps C++'s parameter types,
   * which tell overloads apart. DMGL_RET_DROP leaves out the return type
   * that a template function's symbol carries ("void std::sort<...>"): a
   * frame's label starts with what the function is, not with "void", which
   * is all a narrow frame would show. */
  const char *at = strchr(s, '@');
  char *mangled = at ? fl__xstrndup(s, (size_t)(at - s)) : NULL;
  char *name =
      cplus_demangle(mangled ? mangled : s, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO | DMGL_RET_DROP);
  free(mangled);
  if (name && !*name) {
    free(name);
    return NULL;
  }
  if (name && at) {
    char *whole = fl__xasprintf("%s%s", name, at);
    free(name);
    name = whole;
  }
  return name;
}
