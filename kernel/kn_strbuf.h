/* kn_strbuf: a growable, always NUL-terminated byte buffer.
 *
 * Used wherever the kernel assembles text (generated translation units,
 * error messages, output batches). Running out of memory follows the one
 * policy of fl__common.h (a message and abort, or the program's handler),
 * whose allocators (fl__xmalloc, fl__xcalloc, fl__xrealloc, fl__xstrdup,
 * fl__grow, ...) the kernel uses everywhere: the kernel cannot serve a
 * session without memory, and every caller would otherwise carry an error
 * path it could not test. */
#ifndef KN_STRBUF_H
#define KN_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "fl__common.h"

typedef struct kn_strbuf {
  char *data; /* NUL-terminated; owned */
  size_t len;
  size_t cap;
} kn_strbuf_t;

#define KN_STRBUF_INIT {NULL, 0, 0}

void kn_strbuf_append(kn_strbuf_t *sb, const char *s, size_t n);
void kn_strbuf_puts(kn_strbuf_t *sb, const char *s);
void kn_strbuf_putc(kn_strbuf_t *sb, char c);
void kn_strbuf_printf(kn_strbuf_t *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kn_strbuf_vprintf(kn_strbuf_t *sb, const char *fmt, va_list ap);
void kn_strbuf_clear(kn_strbuf_t *sb);
/* Returns the data (new; the caller frees it) and leaves sb empty. Never NULL. */
char *kn_strbuf_steal(kn_strbuf_t *sb);
void kn_strbuf_free(kn_strbuf_t *sb);

/* s[0..n) as valid UTF-8 without NUL bytes: each byte that does not
 * belong to a valid UTF-8 sequence becomes U+FFFD (EF BF BD), and NUL bytes
 * are left out (Jupyter's JSON strings cannot hold them). The one cleaner
 * of text for the wire (kn_wire_text, kn_output). New string. */
char *kn_utf8_clean(const unsigned char *s, size_t n);

#endif
