/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__demangle: the names people read for the symbols compilers write.
 *
 * C++ (the Itanium ABI, "_ZN2ns5KlassIiE6methodEi") and Rust (legacy
 * "_ZN...17h<hash>E" and v0 "_R...") symbols are demangled by libiberty,
 * the demangler of binutils and gdb (Debian's libiberty-dev), as c++filt
 * reads them but without Rust's hashes and crate disambiguators, which
 * tell builds apart rather than functions: "ns::Klass<int>::method(int)",
 * "core::fmt::write". A frame keeps its symbol beside the name
 * (fl_frame_t.system_name), so nothing is lost. */
#ifndef FL__DEMANGLE_H
#define FL__DEMANGLE_H

#include <stdlib.h> /* free() what fl__demangle returns */

#include "fl__platform.h"

/* The readable name of symbol, new (free it), or NULL when symbol is not a
 * mangled C++ or Rust name (C's names, "[unknown]", names already
 * readable). A suffix from '@' on, a PLT stub's or a symbol version's, stays:
 * "_Znwm@plt" reads "operator new(unsigned long)@plt". Out of memory aborts
 * (fl__common.h). */
FL__HIDDEN char *fl__demangle(const char *symbol);

#endif
