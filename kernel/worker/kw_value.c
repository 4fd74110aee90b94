/* SPDX-License-Identifier: BSD-3-Clause */
/* The value of a cell's trailing expression, printed from the cell's own
 * DWARF (see kw.h).
 *
 * The kernel compiles a cell that ends in an expression without ';' so that
 * its entry function ends with
 *
 *   static __typeof__(EXPR) *cflame_value_type;     (never evaluated)
 *   __auto_type cflame_value = (EXPR);               (evaluated once)
 *   cflame_value_hook(&cflame_value, sizeof cflame_value,
 *                     sizeof *cflame_value_type, decayed, is_void, too_large);
 *
 * (void expressions, and values larger than KN_VALUE_MAX_BYTES, which are
 * evaluated and never copied, are kept apart with __builtin_choose_expr,
 * see kn_session.c). The hook copies the value's bytes while the cell's
 * frame is alive: for an array or a function, which decay to a pointer,
 * the bytes the pointer points to, as far as KN_VALUE_MAX_BYTES. After
 * the run, with the profiler stopped, the worker reads the type of
 * cflame_value_type from the cell object's DWARF (elfutils libdw) and
 * prints the value with it. The type therefore is the compiler's, typedef
 * names and all; nothing here checks C types.
 *
 * Memory the value points to (a string, say) is read with
 * process_vm_readv on the worker itself, which fails cleanly on an address
 * that is not mapped: a bad pointer is reported, never a dead worker.
 * Output is bounded as gdb's print is: elements of an array, characters of
 * a string, depth of nested aggregates. Pointers other than strings and
 * functions are printed as addresses, never followed, so a cyclic list
 * prints in finite time. Text is valid UTF-8 whatever the value holds:
 * characters and strings are escaped as C literals (put_quoted). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kn_names.h"
#include "kn_text.h"
#include "kw.h"

#define MAX_ELEMENTS 200 /* array elements and struct members printed */
#define MAX_STRING 200   /* characters of a string */
#define MAX_DEPTH 8      /* nested aggregates */
#define MAX_DIMS 32      /* dimensions of an array C lets one write */
#define REPEATS_THRESHOLD 10 /* equal elements in a row told as a count */

/* ---- capture, in the cell's frame ---- */

static struct {
  bool set;
  bool is_void;
  bool decayed;
  uintptr_t pointer; /* the decayed value: where the array or function is */
  unsigned char *bytes;
  size_t size;      /* of bytes */
  size_t full_size; /* of the value: more than size when only its start was read */
  char error[256];
} captured;

/* Reads n bytes at addr of this process into buf; false if any is not
 * mapped. */
static bool read_memory(uintptr_t addr, void *buf, size_t n) {
  if (n == 0) return true;
  struct iovec local = {buf, n}, remote = {(void *)addr, n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n;
}

/* Called by the cell (see the top of this file and kn_session.c): value
 * points to value_size bytes, or, when decayed, to the address of the
 * type_size bytes of an array or function. A value too_large to copy was
 * evaluated and not copied: value points to nothing of it, and type_size
 * is its size. */
void KN_VALUE_HOOK_FN(const void *value, size_t value_size, size_t type_size, int decayed,
                      int is_void, int too_large);
void KN_VALUE_HOOK_FN(const void *value, size_t value_size, size_t type_size, int decayed,
                      int is_void, int too_large) {
  kw_value_reset();
  captured.set = true;
  captured.is_void = is_void != 0;
  if (captured.is_void) return;
  captured.decayed = decayed != 0;
  size_t n = decayed ? type_size : value_size;
  if (too_large) {
    snprintf(captured.error, sizeof captured.error,
             "the value of the cell's last expression is not shown: it is %zu bytes, more than "
             "the %u bytes a value may have to be shown, so it was computed but not copied; show a "
             "member or an element of it instead",
             type_size, KN_VALUE_MAX_BYTES);
    return;
  }
  captured.full_size = n;
  /* An array (or a value of another size than the kernel allows, which
   * it never passes) is read only as far as the bound: its start. */
  if (n > KN_VALUE_MAX_BYTES) n = KN_VALUE_MAX_BYTES;
  captured.bytes = malloc(n ? n : 1);
  if (!captured.bytes) {
    snprintf(captured.error, sizeof captured.error, "out of memory for a copy of the value");
    return;
  }
  captured.size = n;
  if (decayed) {
    memcpy(&captured.pointer, value, sizeof captured.pointer);
    /* A function's "bytes" are its code: only its address is printed. */
    if (!read_memory(captured.pointer, captured.bytes, n)) memset(captured.bytes, 0, n);
  } else {
    memcpy(captured.bytes, value, n);
  }
}

void kw_value_reset(void) {
  free(captured.bytes);
  memset(&captured, 0, sizeof captured);
}

/* ---- type names ---- */

static Dwarf_Die *type_of(Dwarf_Die *die, Dwarf_Die *out) {
  Dwarf_Attribute a;
  if (!dwarf_attr_integrate(die, DW_AT_type, &a)) return NULL;
  return dwarf_formref_die(&a, out);
}

static void put_type_name(fl__buf_t *sb, Dwarf_Die *type, const char *inner);

/* GCC names some base types in its own word order ("long unsigned int"):
 * the C spelling a programmer writes. */
static const char *c_spelling(const char *name) {
  static const char *const names[][2] = {
      {"long int", "long"},
      {"long unsigned int", "unsigned long"},
      {"long long int", "long long"},
      {"long long unsigned int", "unsigned long long"},
      {"short int", "short"},
      {"short unsigned int", "unsigned short"},
      {"__int128 unsigned", "unsigned __int128"},
  };
  if (!name) return "?";
  for (size_t i = 0; i < FL__ARRAY_SIZE(names); i++)
    if (!strcmp(name, names[i][0])) return names[i][1];
  return name;
}

/* A type name and its declarator touch where C writes them so: "int *p",
 * but "int[3]", "int(int)". */
static const char *space_before(const char *inner) {
  bool touches = inner[0] == '[' || (inner[0] == '(' && inner[1] != '*');
  return *inner && !touches ? " " : "";
}

/* The parameter list of a subroutine type: "(int, char *)". */
static void put_params(fl__buf_t *sb, Dwarf_Die *fn) {
  fl__buf_putc(sb, '(');
  Dwarf_Die child;
  int n = 0;
  bool prototyped = dwarf_hasattr(fn, DW_AT_prototyped);
  if (dwarf_child(fn, &child) == 0) {
    do {
      int tag = dwarf_tag(&child);
      if (tag == DW_TAG_formal_parameter) {
        Dwarf_Die pt;
        if (n++) fl__buf_puts(sb, ", ");
        if (type_of(&child, &pt)) put_type_name(sb, &pt, "");
      } else if (tag == DW_TAG_unspecified_parameters) {
        fl__buf_puts(sb, n++ ? ", ..." : "...");
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  if (n == 0 && prototyped) fl__buf_puts(sb, "void");
  fl__buf_putc(sb, ')');
}

/* C's declarator syntax, inside out: put_type_name(int[3], "*") is
 * "int (*)[3]". */
static void put_type_name(fl__buf_t *sb, Dwarf_Die *type, const char *inner) {
  Dwarf_Die sub;
  const char *name = dwarf_diename(type);
  fl__buf_t in = FL__BUF_INIT;
  switch (dwarf_tag(type)) {
  case DW_TAG_pointer_type:
    fl__buf_printf(&in, "*%s", inner);
    if (type_of(type, &sub))
      put_type_name(sb, &sub, in.data);
    else
      fl__buf_printf(sb, "void %s", in.data);
    break;
  case DW_TAG_array_type: {
    bool paren = inner[0] == '*';
    fl__buf_printf(&in, "%s%s%s", paren ? "(" : "", inner, paren ? ")" : "");
    Dwarf_Die child;
    if (dwarf_child(type, &child) == 0) {
      do {
        if (dwarf_tag(&child) != DW_TAG_subrange_type) continue;
        Dwarf_Word count;
        Dwarf_Attribute a;
        if (dwarf_attr(&child, DW_AT_count, &a) && dwarf_formudata(&a, &count) == 0)
          fl__buf_printf(&in, "[%" PRIu64 "]", (uint64_t)count);
        else if (dwarf_attr(&child, DW_AT_upper_bound, &a) && dwarf_formudata(&a, &count) == 0)
          fl__buf_printf(&in, "[%" PRIu64 "]", (uint64_t)count + 1);
        else
          fl__buf_puts(&in, "[]");
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    if (type_of(type, &sub)) put_type_name(sb, &sub, in.data);
    break;
  }
  case DW_TAG_subroutine_type: {
    bool paren = inner[0] == '*';
    fl__buf_printf(&in, "%s%s%s", paren ? "(" : "", inner, paren ? ")" : "");
    put_params(&in, type);
    if (type_of(type, &sub))
      put_type_name(sb, &sub, in.data);
    else
      fl__buf_printf(sb, "void %s", in.data);
    break;
  }
  case DW_TAG_const_type:
  case DW_TAG_volatile_type:
  case DW_TAG_restrict_type:
  case DW_TAG_atomic_type: {
    const char *q = dwarf_tag(type) == DW_TAG_const_type      ? "const"
                    : dwarf_tag(type) == DW_TAG_volatile_type ? "volatile"
                    : dwarf_tag(type) == DW_TAG_restrict_type ? "restrict"
                                                              : "_Atomic";
    if (!type_of(type, &sub)) {
      fl__buf_printf(sb, "%s void%s%s", q, space_before(inner), inner);
    } else if (dwarf_tag(&sub) == DW_TAG_pointer_type) {
      /* A qualified pointer: "char *const p". */
      fl__buf_printf(&in, " %s%s%s", q, *inner ? " " : "", inner);
      put_type_name(sb, &sub, in.data);
    } else {
      fl__buf_printf(sb, "%s ", q);
      put_type_name(sb, &sub, inner);
    }
    break;
  }
  case DW_TAG_structure_type:
  case DW_TAG_union_type:
  case DW_TAG_enumeration_type: {
    const char *kw = dwarf_tag(type) == DW_TAG_structure_type ? "struct"
                     : dwarf_tag(type) == DW_TAG_union_type   ? "union"
                                                              : "enum";
    fl__buf_printf(sb, "%s %s%s%s", kw, name ? name : "{...}", space_before(inner), inner);
    break;
  }
  default: { /* base types, typedefs */
    /* GCC's type of a bit-field's value (`(0, s.bits)`) has no C name:
     * say what it is, "int : 4". */
    Dwarf_Attribute at;
    Dwarf_Word bits = 0, enc = 0;
    if (dwarf_tag(type) == DW_TAG_base_type && name && !strcmp(name, "__unknown__")) {
      if (dwarf_attr(type, DW_AT_encoding, &at)) dwarf_formudata(&at, &enc);
      fl__buf_puts(sb, enc == DW_ATE_unsigned ? "unsigned" : "int");
      if (dwarf_attr(type, DW_AT_bit_size, &at) && dwarf_formudata(&at, &bits) == 0)
        fl__buf_printf(sb, " : %u", (unsigned)bits);
      fl__buf_printf(sb, "%s%s", space_before(inner), inner);
      break;
    }
    fl__buf_printf(sb, "%s%s%s", c_spelling(name), space_before(inner), inner);
    break;
  }
  }
  fl__buf_free(&in);
}

/* ---- values ---- */

/* Strips typedefs and qualifiers; false when nothing is left (void). */
static bool peel(Dwarf_Die *type, Dwarf_Die *out) {
  return dwarf_peel_type(type, out) == 0;
}

/* The length of the UTF-8 sequence of two bytes or more at s (n bytes
 * there), 0 if none starts there: overlong forms, UTF-16 surrogates and
 * code points past U+10FFFF are not UTF-8, as JSON parsers say. */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
  unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
  unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
  if (len == 0 || len > n || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  return len;
}

/* s[0..n) between quotes ('"' or '\''), escaped as C writes it, so that
 * the text is UTF-8 and reads back as the same bytes: UTF-8 sequences pass
 * through, other bytes of 0x80 and up and control characters become \xHH.
 * C reads as many hex digits as follow \x (and up to three octal digits
 * after \0), so an escape followed by a character that would extend it
 * ends the literal and the next one starts: "\xff" "a". Shows the bytes
 * before limit (a UTF-8 sequence begun there whole); returns how many it
 * showed. */
static size_t put_quoted(fl__buf_t *sb, const unsigned char *s, size_t n, size_t limit,
                         char quote) {
  const char *extends = ""; /* what would extend the escape just written */
  size_t i = 0;
  fl__buf_putc(sb, quote);
  while (i < n && i < limit) {
    unsigned char c = s[i];
    size_t len = c >= 0x80 ? utf8_sequence(s + i, n - i) : 1;
    if (c && strchr(extends, c)) fl__buf_printf(sb, "%c %c", quote, quote);
    extends = "";
    if (len > 1) {
      fl__buf_add(sb, (const char *)s + i, len);
      i += len;
      continue;
    }
    i++;
    const char *named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
    if (named) {
      fl__buf_puts(sb, named);
    } else if (c == '\0') {
      fl__buf_puts(sb, "\\0");
      extends = "01234567";
    } else if (c == '\\' || c == (unsigned char)quote) {
      fl__buf_printf(sb, "\\%c", c);
    } else if (c < 0x20 || c >= 0x7f) {
      fl__buf_printf(sb, "\\x%02x", c);
      extends = "0123456789abcdefABCDEF";
    } else {
      fl__buf_putc(sb, (char)c);
    }
  }
  fl__buf_putc(sb, quote);
  return i;
}

/* A string at addr: up to MAX_STRING bytes, or NUL. */
static void put_string_at(fl__buf_t *sb, uintptr_t addr) {
  /* Three bytes more, for a UTF-8 sequence begun before the bound. */
  unsigned char text[MAX_STRING + 3];
  size_t n = 0;
  bool readable = true;
  while (n < sizeof text && (readable = read_memory(addr + n, &text[n], 1)) && text[n]) n++;
  if (n == 0 && !readable) {
    fl__buf_printf(sb, "0x%" PRIxPTR " <cannot read memory there>", addr);
    return;
  }
  size_t shown = put_quoted(sb, text, n, MAX_STRING, '"');
  if (shown < n || (readable && n == sizeof text))
    fl__buf_puts(sb, "...");
  else if (!readable)
    fl__buf_printf(sb, "... <cannot read memory at 0x%" PRIxPTR ">", addr + n);
}

/* The floating formats of x86-64, as a base type of DW_ATE_float names
 * them by its size and, at 16 bytes, its name: _Float128 and __float128
 * are IEEE binary128, long double and _Float64x the x87 80-bit format. */
typedef enum float_format {
  FLOAT_HALF, /* _Float16 */
  FLOAT_SINGLE,
  FLOAT_DOUBLE,
  FLOAT_X87,
  FLOAT_BINARY128,
} float_format_t;

/* Whether a floating type of this name and size is one printed here. */
static bool float_format(const char *name, int size, float_format_t *f) {
  switch (size) {
#ifdef __FLT16_MAX__ /* the compiler that built the worker knows _Float16 */
  case 2: *f = FLOAT_HALF; return true;
#endif
  case 4: *f = FLOAT_SINGLE; return true;
  case 8: *f = FLOAT_DOUBLE; return true;
  case 16: *f = name && strstr(name, "128") ? FLOAT_BINARY128 : FLOAT_X87; return true;
  default: return false;
  }
}

/* Writes the value of format f at p with prec significant digits ("%g");
 * returns whether the text reads back as the same value. */
static bool format_float(float_format_t f, const unsigned char *p, int prec, char *buf,
                         size_t size) {
  switch (f) {
#ifdef __FLT16_MAX__
  case FLOAT_HALF: { /* through double, which holds every _Float16 exactly */
    _Float16 v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, size, "%.*g", prec, (double)v);
    return (_Float16)strtod(buf, NULL) == v;
  }
#else
  case FLOAT_HALF: break;
#endif
  case FLOAT_SINGLE: {
    float v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, size, "%.*g", prec, (double)v);
    return strtof(buf, NULL) == v;
  }
  case FLOAT_DOUBLE: {
    double v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, size, "%.*g", prec, v);
    return strtod(buf, NULL) == v;
  }
  case FLOAT_X87: {
    long double v;
    memcpy(&v, p, sizeof v);
    snprintf(buf, size, "%.*Lg", prec, v);
    return strtold(buf, NULL) == v;
  }
  case FLOAT_BINARY128: {
    _Float128 v;
    memcpy(&v, p, sizeof v);
    char format[16]; /* strfromf128 takes no '*' */
    snprintf(format, sizeof format, "%%.%dg", prec);
    strfromf128(buf, size, format, v);
    return strtof128(buf, NULL) == v;
  }
  }
  snprintf(buf, size, "?");
  return true;
}

/* The shortest decimal that reads back as the same value of format f (at
 * most 36 digits, binary128's), "inf", "-inf" or "nan". */
static void float_text(float_format_t f, const unsigned char *p, char *buf, size_t size) {
  for (int prec = 1; prec < 40 && !format_float(f, p, prec, buf, size); prec++)
    ;
  if (strstr(buf, "nan")) snprintf(buf, size, "nan"); /* never reads back equal */
}

static uint64_t load_unsigned(const unsigned char *p, size_t n) {
  uint64_t v = 0;
  memcpy(&v, p, n < sizeof v ? n : sizeof v); /* little-endian, as x86-64 */
  return v;
}

static int64_t sign_extend(uint64_t v, unsigned bits) {
  if (bits >= 64) return (int64_t)v;
  uint64_t m = 1ull << (bits - 1);
  v &= (1ull << bits) - 1;
  return (int64_t)((v ^ m) - m);
}

/* The name of the function at addr ("square"), or NULL. */
static const char *function_name(uintptr_t addr) {
  Dl_info info;
  if (!addr || !dladdr((void *)addr, &info) || !info.dli_sname ||
      (uintptr_t)info.dli_saddr != addr)
    return NULL;
  return kn_plain_name(info.dli_sname);
}

typedef struct printer {
  fl__buf_t *sb;
  int elements; /* printed so far, against MAX_ELEMENTS */
  bool cut;     /* it showed where the bytes read of the value end */
} printer_t;

static void put_value(printer_t *pr, Dwarf_Die *type, const unsigned char *p, size_t n,
                      int depth);

/* Whether the size bytes of a scalar are among the n there; if not (the
 * value was read only in part), shows that its bytes end there. */
static bool have_bytes(printer_t *pr, int size, size_t n) {
  if (size <= 0) {
    fl__buf_puts(pr->sb, "<incomplete>");
    return false;
  }
  if ((size_t)size <= n) return true;
  fl__buf_puts(pr->sb, "...");
  pr->cut = true;
  return false;
}

static void put_base(printer_t *pr, Dwarf_Die *base, const char *type_name,
                     const unsigned char *p, size_t n) {
  fl__buf_t *sb = pr->sb;
  Dwarf_Attribute a;
  Dwarf_Word enc = 0;
  if (dwarf_attr(base, DW_AT_encoding, &a)) dwarf_formudata(&a, &enc);
  int size = dwarf_bytesize(base);
  if (!have_bytes(pr, size, n)) return;
  switch (enc) {
  case DW_ATE_boolean:
    fl__buf_puts(sb, load_unsigned(p, (size_t)size) ? "true" : "false");
    return;
  case DW_ATE_signed_char:
  case DW_ATE_unsigned_char:
    /* Plain char reads as a character; signed char and unsigned char
     * (int8_t, uint8_t) as the numbers they mostly hold, with the
     * character after them. */
    if (type_name && !strcmp(type_name, "char")) {
      put_quoted(sb, p, 1, 1, '\'');
      return;
    }
    if (enc == DW_ATE_signed_char)
      fl__buf_printf(sb, "%d", (signed char)p[0]);
    else
      fl__buf_printf(sb, "%u", p[0]);
    return;
  case DW_ATE_signed:
    if (size == 16) {
      __int128 v;
      memcpy(&v, p, 16);
      if (v >= INT64_MIN && v <= INT64_MAX) {
        fl__buf_printf(sb, "%" PRId64, (int64_t)v);
        return;
      }
      unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
      char digits[48];
      int k = 0;
      while (u) {
        digits[k++] = (char)('0' + (int)(u % 10));
        u /= 10;
      }
      if (v < 0) fl__buf_putc(sb, '-');
      while (k) fl__buf_putc(sb, digits[--k]);
      return;
    }
    fl__buf_printf(sb, "%" PRId64, sign_extend(load_unsigned(p, (size_t)size), (unsigned)size * 8));
    return;
  case DW_ATE_unsigned:
    if (size == 16) {
      unsigned __int128 u;
      memcpy(&u, p, 16);
      char digits[48];
      int k = 0;
      do {
        digits[k++] = (char)('0' + (int)(u % 10));
        u /= 10;
      } while (u);
      while (k) fl__buf_putc(sb, digits[--k]);
      return;
    }
    fl__buf_printf(sb, "%" PRIu64, load_unsigned(p, (size_t)size));
    return;
  case DW_ATE_float:
  case DW_ATE_complex_float: {
    bool complex = enc == DW_ATE_complex_float;
    float_format_t f;
    if (!float_format(type_name, complex ? size / 2 : size, &f)) break;
    char text[64];
    float_text(f, p, text, sizeof text);
    fl__buf_puts(sb, text);
    if (complex) {
      float_text(f, p + size / 2, text, sizeof text);
      fl__buf_printf(sb, " %c %si", text[0] == '-' ? '-' : '+', text + (text[0] == '-'));
    }
    return;
  }
  default:
    break;
  }
  fl__buf_printf(sb, "<a value of type %s cannot be printed: DWARF encoding %u>",
                   type_name ? type_name : "?", (unsigned)enc);
}

static void put_enum(printer_t *pr, Dwarf_Die *en, const unsigned char *p, size_t n) {
  int size = dwarf_bytesize(en);
  if (!have_bytes(pr, size, n)) return;
  uint64_t raw = load_unsigned(p, (size_t)size);
  int64_t v = sign_extend(raw, (unsigned)size * 8);
  Dwarf_Die child;
  if (dwarf_child(en, &child) == 0) {
    do {
      Dwarf_Attribute a;
      Dwarf_Sword sv;
      if (dwarf_tag(&child) == DW_TAG_enumerator && dwarf_attr(&child, DW_AT_const_value, &a) &&
          dwarf_formsdata(&a, &sv) == 0 && (sv == v || (uint64_t)sv == raw)) {
        fl__buf_puts(pr->sb, dwarf_diename(&child));
        return;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  fl__buf_printf(pr->sb, "%" PRId64, v);
}

static void put_pointer(printer_t *pr, Dwarf_Die *ptr, const unsigned char *p, size_t n) {
  if (!have_bytes(pr, (int)sizeof(void *), n)) return;
  uintptr_t addr = (uintptr_t)load_unsigned(p, sizeof(void *));
  Dwarf_Die target, peeled;
  bool has_target = type_of(ptr, &target) != NULL;
  if (has_target && peel(&target, &peeled)) {
    if (dwarf_tag(&peeled) == DW_TAG_subroutine_type) {
      const char *fn = function_name(addr);
      if (fn)
        fl__buf_puts(pr->sb, fn);
      else
        fl__buf_printf(pr->sb, "0x%" PRIxPTR, addr);
      return;
    }
    Dwarf_Attribute a;
    Dwarf_Word enc = 0;
    const char *name = dwarf_diename(&peeled);
    if (dwarf_tag(&peeled) == DW_TAG_base_type && dwarf_attr(&peeled, DW_AT_encoding, &a) &&
        dwarf_formudata(&a, &enc) == 0 && name && !strcmp(name, "char") && addr) {
      put_string_at(pr->sb, addr);
      return;
    }
  }
  fl__buf_printf(pr->sb, "0x%" PRIxPTR, addr);
}

/* Elements of an array with dims (outermost first), each of esize bytes
 * when nd is 1, else an array of the remaining dimensions. */
static void put_dims(printer_t *pr, Dwarf_Die *elem, Dwarf_Word esize, const Dwarf_Word *dims,
                     int nd, const unsigned char *p, size_t n, int depth) {
  Dwarf_Word inner = esize;
  for (int i = 1; i < nd; i++) inner *= dims[i];
  Dwarf_Word count = dims[0];
  /* The bytes end before the elements when the value was read only in part
   * (KN_VALUE_MAX_BYTES): the elements there are shown, the last in part. */
  bool cut = inner && count * inner > n;
  if (cut) count = (n + inner - 1) / inner;
  /* A char array reads as a string when all after its text is NUL. */
  Dwarf_Die pe;
  const char *ename = nd == 1 && esize == 1 && peel(elem, &pe) ? dwarf_diename(&pe) : NULL;
  if (ename && !strcmp(ename, "char")) {
    size_t len = strnlen((const char *)p, (size_t)count);
    bool rest_zero = true;
    for (size_t i = len; i < count; i++)
      if (p[i]) rest_zero = false;
    if (rest_zero) {
      size_t shown = put_quoted(pr->sb, p, len, MAX_STRING, '"');
      if (shown == len && cut) pr->cut = true;
      if (shown < len || cut) fl__buf_puts(pr->sb, "...");
      return;
    }
  }
  if (depth >= MAX_DEPTH) {
    fl__buf_puts(pr->sb, "{...}");
    return;
  }
  fl__buf_puts(pr->sb, count ? "{ " : "{");
  for (Dwarf_Word i = 0; i < count; i++) {
    if (i) fl__buf_puts(pr->sb, ", ");
    if (pr->elements++ >= MAX_ELEMENTS) {
      fl__buf_puts(pr->sb, "...");
      cut = false; /* the bound on elements came first */
      break;
    }
    size_t at = (size_t)(i * inner), bytes = n - at < inner ? n - at : (size_t)inner;
    if (nd > 1) {
      put_dims(pr, elem, esize, dims + 1, nd - 1, p + at, bytes, depth + 1);
      continue;
    }
    put_value(pr, elem, p + at, bytes, depth + 1);
    /* A run of equal elements is told, as gdb does: 0 <repeats 499 times>. */
    Dwarf_Word same = 1;
    while (i + same < count && (i + same + 1) * esize <= n &&
           !memcmp(p + at, p + (i + same) * esize, (size_t)esize))
      same++;
    if (same >= REPEATS_THRESHOLD) {
      fl__buf_printf(pr->sb, " <repeats %" PRIu64 " times>", (uint64_t)same);
      i += same - 1;
    }
  }
  if (cut) {
    fl__buf_puts(pr->sb, ", ...");
    pr->cut = true;
  }
  fl__buf_puts(pr->sb, count ? " }" : "}");
}

static void put_array(printer_t *pr, Dwarf_Die *arr, const unsigned char *p, size_t n,
                      int depth) {
  Dwarf_Die elem;
  Dwarf_Word dims[MAX_DIMS], esize = 0;
  int nd = 0;
  Dwarf_Die child;
  if (type_of(arr, &elem) && dwarf_child(arr, &child) == 0) {
    do {
      if (dwarf_tag(&child) != DW_TAG_subrange_type) continue;
      if (nd == MAX_DIMS) {
        fl__buf_printf(pr->sb, "<an array of more than %d dimensions>", MAX_DIMS);
        return;
      }
      Dwarf_Attribute a;
      Dwarf_Word c = 0;
      if (dwarf_attr(&child, DW_AT_count, &a) && dwarf_formudata(&a, &c) == 0)
        dims[nd++] = c;
      else if (dwarf_attr(&child, DW_AT_upper_bound, &a) && dwarf_formudata(&a, &c) == 0)
        dims[nd++] = c + 1;
      else
        dims[nd++] = 0;
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  if (nd == 0 || dwarf_aggregate_size(&elem, &esize) != 0) {
    fl__buf_puts(pr->sb, "<an array of unknown size>");
    return;
  }
  put_dims(pr, &elem, esize, dims, nd, p, n, depth);
}

static void put_members(printer_t *pr, Dwarf_Die *agg, const unsigned char *p, size_t n,
                        int depth) {
  if (dwarf_hasattr(agg, DW_AT_declaration)) {
    fl__buf_puts(pr->sb, "<incomplete type>");
    return;
  }
  if (depth >= MAX_DEPTH) {
    fl__buf_puts(pr->sb, "{...}");
    return;
  }
  fl__buf_puts(pr->sb, "{ ");
  Dwarf_Die m;
  int shown = 0;
  if (dwarf_child(agg, &m) == 0) {
    do {
      if (dwarf_tag(&m) != DW_TAG_member) continue;
      if (shown++) fl__buf_puts(pr->sb, ", ");
      if (pr->elements++ >= MAX_ELEMENTS) {
        fl__buf_puts(pr->sb, "...");
        break;
      }
      Dwarf_Attribute a;
      Dwarf_Word off = 0, bits = 0, bit_off = 0;
      if (dwarf_attr(&m, DW_AT_data_member_location, &a)) dwarf_formudata(&a, &off);
      if (dwarf_attr(&m, DW_AT_bit_size, &a) && dwarf_formudata(&a, &bits) == 0 && bits) {
        /* A bit-field: DW_AT_data_bit_offset counts from the start of the
         * aggregate (DWARF 4 and 5, as GCC and Clang write it). */
        if (dwarf_attr(&m, DW_AT_data_bit_offset, &a)) dwarf_formudata(&a, &bit_off);
        else bit_off = off * 8;
        off = bit_off / 8;
      }
      if (off >= n && off < (Dwarf_Word)dwarf_bytesize(agg)) {
        /* the value was read only in part, and ends before this member */
        fl__buf_puts(pr->sb, "...");
        pr->cut = true;
        break;
      }
      const char *name = dwarf_diename(&m);
      if (name) fl__buf_printf(pr->sb, ".%s = ", name);
      Dwarf_Die mt;
      if (!type_of(&m, &mt)) {
        fl__buf_puts(pr->sb, "?");
        continue;
      }
      if (bits) {
        uint64_t word = 0;
        size_t at = (size_t)off;
        memcpy(&word, p + at, at + 8 <= n ? 8 : n - at);
        uint64_t v = (word >> (bit_off % 8)) & (bits >= 64 ? ~0ull : (1ull << bits) - 1);
        Dwarf_Die pt;
        Dwarf_Word enc = 0;
        if (peel(&mt, &pt) && dwarf_tag(&pt) == DW_TAG_base_type &&
            dwarf_attr(&pt, DW_AT_encoding, &a))
          dwarf_formudata(&a, &enc);
        if (enc == DW_ATE_signed || enc == DW_ATE_signed_char)
          fl__buf_printf(pr->sb, "%" PRId64, sign_extend(v, (unsigned)bits));
        else if (enc == DW_ATE_boolean)
          fl__buf_puts(pr->sb, v ? "true" : "false");
        else if (peel(&mt, &pt) && dwarf_tag(&pt) == DW_TAG_enumeration_type) {
          unsigned char tmp[8];
          memcpy(tmp, &v, 8);
          put_enum(pr, &pt, tmp, 8);
        } else
          fl__buf_printf(pr->sb, "%" PRIu64, v);
        continue;
      }
      if (off >= n) {
        fl__buf_puts(pr->sb, "{}"); /* a flexible array member */
        continue;
      }
      put_value(pr, &mt, p + off, n - (size_t)off, depth + 1);
    } while (dwarf_siblingof(&m, &m) == 0);
  }
  fl__buf_puts(pr->sb, shown ? " }" : "}");
}

static void put_value(printer_t *pr, Dwarf_Die *type, const unsigned char *p, size_t n,
                      int depth) {
  Dwarf_Die t;
  if (!peel(type, &t)) {
    fl__buf_puts(pr->sb, "<void>");
    return;
  }
  switch (dwarf_tag(&t)) {
  case DW_TAG_base_type:
    put_base(pr, &t, dwarf_diename(&t), p, n);
    break;
  case DW_TAG_enumeration_type:
    put_enum(pr, &t, p, n);
    break;
  case DW_TAG_pointer_type:
    put_pointer(pr, &t, p, n);
    break;
  case DW_TAG_array_type:
    put_array(pr, &t, p, n, depth);
    break;
  case DW_TAG_structure_type:
  case DW_TAG_union_type:
    put_members(pr, &t, p, n, depth);
    break;
  default:
    fl__buf_printf(pr->sb, "<a value of this kind (DWARF tag 0x%x) cannot be printed>",
                     (unsigned)dwarf_tag(&t));
  }
}

/* ---- finding the type ---- */

/* The DIE named name with tag, under die (depth-first). */
static bool find_named(Dwarf_Die *die, int tag, const char *name, Dwarf_Die *out) {
  Dwarf_Die child;
  if (dwarf_child(die, &child) != 0) return false;
  do {
    const char *n = dwarf_diename(&child);
    if (dwarf_tag(&child) == tag && n && !strcmp(n, name)) {
      *out = child;
      return true;
    }
    if (dwarf_haschildren(&child) && find_named(&child, tag, name, out)) return true;
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

/* The type the cell's trailing expression has: the pointee of
 * cflame_value_type's type, in entry's DWARF in the object at path. */
static bool find_value_type(Dwarf *dw, const char *entry, Dwarf_Die *type) {
  Dwarf_Off off = 0, next;
  size_t hsize;
  while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
    Dwarf_Die cu, fn, var, ptr;
    if (dwarf_offdie(dw, off + hsize, &cu) && find_named(&cu, DW_TAG_subprogram, entry, &fn) &&
        find_named(&fn, DW_TAG_variable, KN_VALUE_TYPE_VAR, &var) && type_of(&var, &ptr) &&
        type_of(&ptr, type))
      return true;
    off = next;
  }
  return false;
}

char *kw_value_format(const char *path, const char *entry, char *err, size_t err_size) {
  if (!captured.set || captured.is_void) {
    snprintf(err, err_size, "no value");
    return NULL;
  }
  if (captured.error[0]) {
    snprintf(err, err_size, "%s", captured.error);
    return NULL;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
  char *text = NULL;
  Dwarf_Die type;
  if (!dw) {
    snprintf(err, err_size,
             "the value cannot be printed: the cell was compiled without debugging information "
             "(-g); its type is not known");
  } else if (!find_value_type(dw, entry, &type)) {
    snprintf(err, err_size, "the value cannot be printed: its type was not found in the cell's "
                            "debugging information (compile with -g)");
  } else {
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_puts(&sb, "(");
    put_type_name(&sb, &type, "");
    fl__buf_puts(&sb, ") ");
    Dwarf_Die t;
    if (peel(&type, &t) && dwarf_tag(&t) == DW_TAG_subroutine_type) {
      const char *fn = function_name(captured.pointer);
      if (fn)
        fl__buf_puts(&sb, fn);
      else
        fl__buf_printf(&sb, "0x%" PRIxPTR, captured.pointer);
    } else {
      printer_t pr = {&sb, 0, false};
      put_value(&pr, &type, captured.bytes, captured.size, 0);
      if (pr.cut && captured.size < captured.full_size)
        fl__buf_printf(&sb, " <only the first %zu of %zu bytes were read>", captured.size,
                         captured.full_size);
    }
    text = fl__buf_take(&sb);
  }
  if (dw) dwarf_end(dw);
  if (fd >= 0) close(fd);
  return text;
}

bool kw_value_captured(void) {
  return captured.set && !captured.is_void;
}
