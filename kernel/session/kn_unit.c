/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_unit: a cell as a translation unit of the session, and what an item
 * becomes among the session's entries (see kn_session.h: what a unit
 * holds, and kn__session.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn__session.h"
#include "kn_names.h"
#include "kn_text.h"

static void put_line(fl__buf_t *sb, int cell, int line) {
  fl__buf_printf(sb, "#line %d \"" KN_CELL_FILE_FMT "\"\n", line > 0 ? line : 1, cell);
}

/* #line for text that starts at column col of that line: the padding keeps
 * the compiler's column numbers those of the cell. */
static void put_pos(fl__buf_t *sb, int cell, int line, int col) {
  put_line(sb, cell, line);
  for (int i = 1; i < col; i++) fl__buf_putc(sb, ' ');
}

static void put_symbol(fl__buf_t *sb, int cell, const char *name) {
  fl__buf_printf(sb, " __asm__(\"" KN_SYMBOL_PREFIX "%d_%s\")", cell, name);
}

/* A function written as main is main only if the preprocessor leaves it so:
 * a program pasted in with `#define main prog_main` defines prog_main. Its
 * assembler name in the cell's own unit is therefore that of what main
 * expands to where it stands (cflame_cN_main, or cflame_cN_prog_main), so
 * that the object says which it is (resolve_main). */
bool kn__writes_main(const kn_item_t *it) {
  return it->kind == KN_ITEM_FUNC && !it->is_inline && it->name && !strcmp(it->name, "main");
}

static void put_main_symbol(fl__buf_t *sb, int cell) {
  fl__buf_printf(sb, " __asm__(" KN_SYMBOL_MACRO "_name(" KN_SYMBOL_MACRO "(%d, main)))", cell);
}

/* ---- items and the entries they become ---- */

bool kn__item_key_is_macro(const kn_item_t *it) {
  return it->kind == KN_ITEM_PREPROC && it->name &&
         !strncmp(it->text + strspn(it->text, " \t#"), "define", 6);
}

char *kn__item_key(const kn_item_t *it) {
  fl__buf_t sb = FL__BUF_INIT;
  switch (it->kind) {
  case KN_ITEM_FUNC:
  case KN_ITEM_PROTO:
  case KN_ITEM_GLOBAL:
  case KN_ITEM_EXTERN:
    if (!it->name) return NULL;
    fl__buf_printf(&sb, "id:%s", it->name);
    break;
  case KN_ITEM_TYPE:
    if (!it->name) return NULL;
    if (!strncmp(it->name, "struct ", 7) || !strncmp(it->name, "union ", 6) ||
        !strncmp(it->name, "enum ", 5))
      fl__buf_printf(&sb, "tag:%s", it->name);
    else
      fl__buf_printf(&sb, "id:%s", it->name);
    break;
  case KN_ITEM_PREPROC:
    if (kn__item_key_is_macro(it))
      fl__buf_printf(&sb, "macro:%s", it->name);
    else
      fl__buf_printf(&sb, "pp:%s", it->text);
    break;
  case KN_ITEM_STMT:
    return NULL;
  }
  return fl__buf_take(&sb);
}

/* FUNC and GLOBAL items carry definitions that prototypes and externs of the
 * same name must not displace. */
bool kn__item_is_definition(const kn_item_t *it) {
  return it->kind == KN_ITEM_FUNC || it->kind == KN_ITEM_GLOBAL;
}

ssize_t kn__find_entry(const kn_session_t *s, const char *key) {
  for (size_t i = 0; i < s->n_entries; i++)
    if (!strcmp(s->entries[i].key, key)) return (ssize_t)i;
  return -1;
}

/* Whether item it (with key) should take the place of entry e. */
bool kn__replaces(const kn_item_t *it, const entry_t *e) {
  return !(e->is_definition && !kn__item_is_definition(it));
}

/* ---- the unit ---- */

/* Items a cell's unit takes where the cell has them, never at the place of
 * the earlier entry they replace: preprocessor directives (a macro means
 * what was defined and undefined before the line that uses it) and a
 * function written as main. */
static bool in_cell_order(const kn_item_t *it) {
  return it->kind == KN_ITEM_PREPROC || kn__writes_main(it);
}

bool kn__is_include(const kn_item_t *it) {
  const char *t = it->text + strspn(it->text, " \t");
  if (*t++ != '#') return false;
  t += strspn(t, " \t");
  return !strncmp(t, "include", 7);
}

/* A directive of cell as a unit holds it, at its line: a #define first
 * undefines its macro, so that redefining a macro in a later cell is no
 * error. */
static void put_directive(fl__buf_t *sb, int cell, const kn_item_t *it) {
  if (kn__item_key_is_macro(it)) fl__buf_printf(sb, "#undef %s\n", it->name);
  put_pos(sb, cell, it->line, it->col);
  fl__buf_puts(sb, it->text);
  fl__buf_putc(sb, '\n');
}

/* An inline function's text, made `static` when it was plain `inline`: a
 * C99 inline definition emits no symbol, and later cells repeat it. */
static void put_inline_text(fl__buf_t *sb, const kn_item_t *it) {
  if (!it->is_static) fl__buf_puts(sb, "static ");
  fl__buf_puts(sb, it->text);
  fl__buf_putc(sb, '\n');
}

/* Whether an initializer is made only of literals and operators, so it can
 * stay a static initializer and survive a worker restart. Identifiers (other
 * than sizeof) may name variables or functions: those run in the cell. */
static bool init_is_constant(const char *s) {
  for (const char *p = s; *p;) {
    if (*p == '"' || *p == '\'') {
      char q = *p++;
      while (*p && *p != q) p += (*p == '\\' && p[1]) ? 2 : 1;
      if (*p) p++;
    } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
      while (isalnum((unsigned char)*p) || *p == '.' || *p == '_' ||
             ((*p == '+' || *p == '-') &&
              (p[-1] == 'e' || p[-1] == 'E' || p[-1] == 'p' || p[-1] == 'P')))
        p++;
    } else if (isalpha((unsigned char)*p) || *p == '_') {
      const char *b = p;
      while (isalnum((unsigned char)*p) || *p == '_') p++;
      if (!(p - b == 6 && !strncmp(b, "sizeof", 6))) return false;
    } else {
      p++;
    }
  }
  return true;
}

static bool global_init_is_static(const kn_item_t *it) {
  return it->init && (it->init_is_static || it->is_array_unsized || init_is_constant(it->init));
}

/* The text an item contributes to the translation units of later cells. */
char *kn__header_text(const kn_item_t *it, int cell) {
  fl__buf_t sb = FL__BUF_INIT;
  if (it->kind == KN_ITEM_PREPROC) {
    put_directive(&sb, cell, it);
    return fl__buf_take(&sb);
  }
  put_line(&sb, cell, it->line);
  switch (it->kind) {
    case KN_ITEM_FUNC:
      if (it->is_inline) {
        put_inline_text(&sb, it);
      } else {
        fl__buf_puts(&sb, it->signature);
        put_symbol(&sb, cell, it->name);
        fl__buf_puts(&sb, ";\n");
      }
      break;
    case KN_ITEM_GLOBAL:
      fl__buf_puts(&sb, "extern ");
      fl__buf_puts(&sb, it->decl);
      put_symbol(&sb, cell, it->name);
      fl__buf_puts(&sb, ";\n");
      break;
    default:
      fl__buf_puts(&sb, it->text);
      fl__buf_putc(&sb, '\n');
      break;
  }
  return fl__buf_take(&sb);
}

/* ---- building a translation unit ---- */

static const char prelude[] =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include <math.h>\n"
    "#include <stdint.h>\n"
    "#include <stdbool.h>\n"
    "#include <stddef.h>\n"
    /* put_main_symbol: a name, macros expanded, into its assembler name */
    /* clang-format off */
    "#define " KN_SYMBOL_MACRO "_name_(x) #x\n"
    "#define " KN_SYMBOL_MACRO "_name(x) " KN_SYMBOL_MACRO "_name_(x)\n"
    "#define " KN_SYMBOL_MACRO "_(cell, name) " KN_SYMBOL_PREFIX "##cell##_##name\n"
    "#define " KN_SYMBOL_MACRO "(cell, name) " KN_SYMBOL_MACRO "_(cell, name)\n"
    /* put_renamed_mains: whether main expands to a given name, in #if */
    "#define " KN_MAIN_IS_MACRO "_(name) " KN_MAIN_IS_MACRO "_##name\n"
    "#define " KN_MAIN_IS_MACRO "(name) " KN_MAIN_IS_MACRO "_(name)\n";
/* clang-format on */

/* The trailing expression's text at its cell position, on lines of its own
 * (a #line directive must start a line). */
static void put_expression(fl__buf_t *sb, int cell, const kn_item_t *it) {
  fl__buf_putc(sb, '\n');
  put_pos(sb, cell, it->line, it->col);
  fl__buf_puts(sb, it->text);
  fl__buf_putc(sb, '\n');
}

/* The names in put_value_code's code: KN_VALUE_VAR and its locals. The
 * generated code is written one line of it a source line, clang-format
 * off. */
#define VALUE KN_VALUE_VAR
#define VALUE_TYPE KN_VALUE_TYPE_VAR
#define VALUE_VOID KN_VALUE_VAR "_void"
#define VALUE_DECAYS KN_VALUE_VAR "_decays"
#define VALUE_LARGE KN_VALUE_VAR "_large"
#define VALUE_SIZE KN_VALUE_VAR "_size"

/* The code that shows the value of the cell's trailing expression EXPR:
 * it is evaluated once, as the initializer of cflame_value (arrays and
 * functions decay to pointers there), and appears three times more under
 * __typeof__, which never evaluates: to tell a void expression (run, and
 * nothing shown), and to declare cflame_value_type, a pointer to EXPR's
 * own type, whose DWARF the worker reads to print the value
 * (kernel/worker/kw_value.c). The hook copies the value's bytes while the
 * cell's frame is alive.
 *
 * A value larger than KN_VALUE_MAX_BYTES (*p, p pointing to a 100 MB
 * struct) is evaluated as a void expression: copied into cflame_value it
 * would overflow the stack, and it would not be shown anyway. Whether EXPR
 * is an lvalue, whose address would let the worker read its first part,
 * C cannot ask; its size it can, while compiling. An array or a function
 * decays to its address (cflame_value_decays: the comma converts it as
 * __auto_type does), whatever its size: the worker reads its first part. */
static void put_value_code(fl__buf_t *sb, int cell, const kn_item_t *it) {
  /* clang-format off */
  fl__buf_puts(sb, "{ enum { " VALUE_VOID " = __builtin_types_compatible_p(__typeof__(");
  put_expression(sb, cell, it);
  fl__buf_puts(sb, "), void) };\n"
                     "  static __attribute__((used))\n"
                     "  __typeof__(__builtin_choose_expr(" VALUE_VOID ", 0, (");
  put_expression(sb, cell, it);
  /* The size of a function type (1 in GNU C) is what -Wpointer-arith
   * warns of: the kernel's own question, not the cell's. */
  fl__buf_printf(sb,
                   "))) *" VALUE_TYPE ";\n"
                   "  enum { " VALUE_DECAYS " = !__builtin_types_compatible_p(\n"
                   "      __typeof__(*" VALUE_TYPE "), __typeof__(((void)0, *" VALUE_TYPE "))) };\n"
                   "#pragma GCC diagnostic push\n"
                   "#pragma GCC diagnostic ignored \"-Wpointer-arith\"\n"
                   "  enum { " VALUE_LARGE " = !" VALUE_DECAYS " && sizeof *" VALUE_TYPE " > %uu };\n"
                   "  unsigned long " VALUE_SIZE " = sizeof *" VALUE_TYPE ";\n"
                   "#pragma GCC diagnostic pop\n"
                   "  __auto_type " VALUE " = __builtin_choose_expr(" VALUE_VOID " || " VALUE_LARGE ", ((void)(",
                   KN_VALUE_MAX_BYTES);
  put_expression(sb, cell, it);
  fl__buf_puts(sb, "), 0), (");
  put_expression(sb, cell, it);
  fl__buf_puts(sb, "));\n"
                     "  extern void " KN_VALUE_HOOK "(const void *, unsigned long, unsigned long, int, int, int);\n"
                     "  " KN_VALUE_HOOK "(&" VALUE ", sizeof " VALUE ", " VALUE_SIZE ",\n"
                     "      " VALUE_DECAYS ", " VALUE_VOID ", " VALUE_LARGE "); }\n");
  /* clang-format on */
}

/* Index of the item of this cell that provides the header text for key:
 * the last item with that key, a definition preferred over declarations. */
static ssize_t dominant_item(const kn_items_t *items, const char *key, char **keys) {
  ssize_t best = -1;
  for (size_t i = 0; i < items->n; i++) {
    if (!keys[i] || strcmp(keys[i], key)) continue;
    if (best < 0 || kn__item_is_definition(&items->items[i]) ||
        !kn__item_is_definition(&items->items[best]))
      best = (ssize_t)i;
  }
  return best;
}

/* An earlier program's main that a macro renamed (prog_main) is declared
 * with its cell's assembler name. A cell that writes main again may be the
 * same program pasted anew: then its main must get this cell's assembler
 * name, which an earlier declaration with another one would override (gcc
 * keeps the first, with a warning; clang refuses). Only the preprocessor
 * knows, where the cell writes main, what main expands to; so the earlier
 * declaration is put there, under #if, and only if main does not expand to
 * its name. (A use of prog_main in the same cell before its main is then
 * the new one's, as the definition that follows it is.) */
static void put_renamed_mains(const kn_session_t *s, fl__buf_t *tu) {
  for (size_t e = 0; e < s->n_entries; e++) {
    const entry_t *en = &s->entries[e];
    if (!en->main_renamed) continue;
    fl__buf_printf(tu, "#define " KN_MAIN_IS_MACRO "_%s 1\n#if !" KN_MAIN_IS_MACRO "(main)\n",
                     en->name);
    fl__buf_puts(tu, en->header);
    fl__buf_printf(tu, "#endif\n#undef " KN_MAIN_IS_MACRO "_%s\n", en->name);
  }
}

static bool writes_any_main(const kn_items_t *items) {
  for (size_t i = 0; i < items->n; i++)
    if (kn__writes_main(&items->items[i])) return true;
  return false;
}

/* Earlier cells' declarations; what this cell redefines takes the old
 * place, so declarations that depend on it stay after it. placed[j]: item j
 * of the cell was put there. */
static void put_entries(const kn_session_t *s, int cell, const kn_items_t *items, char **keys,
                        bool *placed, fl__buf_t *tu) {
  bool renamed_mains_deferred = writes_any_main(items);
  for (size_t e = 0; e < s->n_entries; e++) {
    const entry_t *en = &s->entries[e];
    ssize_t i = dominant_item(items, en->key, keys);
    if (i >= 0 && in_cell_order(&items->items[i])) {
      /* An earlier directive stays where it was; an earlier main is not
       * declared again (nothing calls main). */
      if (items->items[i].kind == KN_ITEM_PREPROC) fl__buf_puts(tu, en->header);
    } else if (i >= 0 && kn__replaces(&items->items[i], en)) {
      char *h = kn__header_text(&items->items[i], cell);
      fl__buf_puts(tu, h);
      free(h);
      for (size_t j = 0; j < items->n; j++)
        if (keys[j] && !strcmp(keys[j], en->key)) placed[j] = true;
    } else if (!(renamed_mains_deferred && en->main_renamed)) {
      fl__buf_puts(tu, en->header);
    }
  }
}

/* The cell's entry function: its statements (run), then, when the cell
 * wrote main, a call of main. */
static void put_entry_function(fl__buf_t *tu, int cell, const fl__buf_t *run,
                               bool main_written) {
  fl__buf_printf(tu, "#line 1 \"" KN_GEN_FILE_FMT "\"\nint " KN_ENTRY_FMT "(void) {\n", cell,
                   cell);
  if (run->data) fl__buf_puts(tu, run->data);
  /* What follows the cell's statements is the kernel's: a diagnostic there
   * (a statement left unfinished runs into it) names this file, and
   * end_of_cell_messages moves it to the end of the cell. */
  fl__buf_printf(tu, "\n#line 1 \"" END_FILE "\"\n", cell);
  if (main_written) {
    /* main may be declared (void) or (int, char **); call it through a
     * second name for the same symbol, declared with the full signature.
     * The reference is weak: where a macro renamed main, the object does
     * not define cflame_cN_main and nothing is called. */
    /* clang-format off */
    fl__buf_printf(tu,
                     "{ extern int " KN_MAIN_ENTRY "(int, char **) __asm__(\"" KN_SYMBOL_PREFIX "%d_main\")\n"
                     "    __attribute__((weak));\n"
                     "  static char " KN_MAIN_ARG0 "[] = \"cell\";\n"
                     "  static char *" KN_MAIN_ARGV "[] = {" KN_MAIN_ARG0 ", 0};\n"
                     "  if (" KN_MAIN_ENTRY ") return " KN_MAIN_ENTRY "(1, " KN_MAIN_ARGV "); }\n",
                     cell);
    /* clang-format on */
  }
  fl__buf_puts(tu, "return 0;\n}\n");
}

void kn__build_unit(const kn_session_t *s, int cell, const kn_items_t *items, char **keys,
                    fl__buf_t *tu) {
  bool *placed = fl__xcalloc(items->n + 1, sizeof *placed);
  bool main_written = false;
  fl__buf_puts(tu, "#line 1 \"<cflame prelude>\"\n");
  fl__buf_puts(tu, prelude);

  put_entries(s, cell, items, keys, placed, tu);

  /* This cell, in order. Declarations placed above are not repeated, except
   * that definitions still need their bodies here. */
  fl__buf_t run = FL__BUF_INIT;
  for (size_t i = 0; i < items->n; i++) {
    const kn_item_t *it = &items->items[i];
    bool first_of_name = true;
    for (size_t j = 0; j < i; j++)
      if (keys[i] && keys[j] && !strcmp(keys[i], keys[j])) first_of_name = false;
    switch (it->kind) {
      case KN_ITEM_STMT:
        if (it->is_expression) {
          put_value_code(&run, cell, it);
          break;
        }
        put_pos(&run, cell, it->line, it->col);
        fl__buf_puts(&run, it->text);
        fl__buf_putc(&run, '\n');
        break;
      case KN_ITEM_FUNC:
        if (it->is_inline) {
          if (placed[i]) break;
          put_pos(tu, cell, it->line, it->col);
          put_inline_text(tu, it);
          break;
        }
        if (kn__writes_main(it) && !main_written) {
          put_renamed_mains(s, tu);
          main_written = true;
        }
        if (!placed[i] && first_of_name) {
          /* The first mention of the name gets the assembler name, so that
           * uses before the definition bind to it too. */
          put_line(tu, cell, it->line);
          fl__buf_puts(tu, it->signature);
          if (kn__writes_main(it))
            put_main_symbol(tu, cell);
          else
            put_symbol(tu, cell, it->name);
          fl__buf_puts(tu, ";\n");
        }
        put_pos(tu, cell, it->line, it->col);
        fl__buf_puts(tu, it->definition);
        fl__buf_putc(tu, '\n');
        break;
      case KN_ITEM_GLOBAL: {
        bool static_init = global_init_is_static(it);
        put_line(tu, cell, it->line);
        fl__buf_puts(tu, static_init || !it->init ? it->decl : it->decl_mutable);
        put_symbol(tu, cell, it->name);
        if (static_init) {
          fl__buf_puts(tu, " =\n");
          put_pos(tu, cell, it->init_line, it->init_col);
          fl__buf_puts(tu, it->init);
        }
        fl__buf_puts(tu, ";\n");
        if (it->init && !static_init) {
          fl__buf_printf(&run, "%s = (\n", it->name);
          put_pos(&run, cell, it->init_line, it->init_col);
          fl__buf_printf(&run, "%s);\n", it->init);
        }
        break;
      }
      case KN_ITEM_PREPROC:
        /* An #include the session already has was included at its place. */
        if (kn__is_include(it) && keys[i] && kn__find_entry(s, keys[i]) >= 0) break;
        put_directive(tu, cell, it);
        break;
      default:
        if (placed[i]) break;
        put_pos(tu, cell, it->line, it->col);
        fl__buf_puts(tu, it->text);
        fl__buf_putc(tu, '\n');
        /* A prototype written before the definition in the same cell: give
         * the name its assembler name now. */
        if ((it->kind == KN_ITEM_PROTO || it->kind == KN_ITEM_EXTERN) && first_of_name && keys[i]) {
          ssize_t d = dominant_item(items, keys[i], keys);
          if (d > (ssize_t)i && kn__item_is_definition(&items->items[d]) &&
              !(items->items[d].kind == KN_ITEM_FUNC && items->items[d].is_inline)) {
            const kn_item_t *def = &items->items[d];
            put_line(tu, cell, def->line);
            if (def->kind == KN_ITEM_FUNC)
              fl__buf_puts(tu, def->signature);
            else {
              fl__buf_puts(tu, "extern ");
              fl__buf_puts(tu, def->decl);
            }
            put_symbol(tu, cell, def->name);
            fl__buf_puts(tu, ";\n");
          }
        }
        break;
    }
  }

  put_entry_function(tu, cell, &run, main_written);
  fl__buf_free(&run);
  free(placed);
}
