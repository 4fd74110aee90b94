/* Requests answered at once: kernel_info, complete, inspect, is_complete,
 * history, comm_info, shutdown (see kn_kernel.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kn_cell.h"
#include "kn_kernel.h"

extern const char *const kn_magic_names[];
const char *kn_magic_help(const char *name);

static json_t *language_info(void) {
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", "c", "version", "C17", "mimetype",
                   "text/x-csrc", "file_extension", ".c", "pygments_lexer", "c",
                   "codemirror_mode", "text/x-csrc");
}

static void kernel_info(kn_kernel_t *k, void *socket, kn_msg_t *msg) {
  /* jupyter console 6.4 never forwards Ctrl-C to a kernel, and the kernel
   * runs in a session of its own, out of the terminal's reach: the banner
   * says what interrupts a cell from another terminal. */
  char banner[256];
  snprintf(banner, sizeof banner,
           "cflame " KN_IMPLEMENTATION_VERSION " -- C cells, compiled and run in a persistent "
           "session.\nType %%lsmagic for the magics. To interrupt a running cell from a "
           "terminal: kill -INT %ld",
           (long)getpid());
  json_t *content = json_pack(
      "{s:s, s:s, s:s, s:s, s:o, s:s, s:[], s:b}", "status", "ok", "protocol_version",
      KN_PROTOCOL_VERSION, "implementation", "cflame", "implementation_version",
      KN_IMPLEMENTATION_VERSION, "language_info", language_info(), "banner", banner,
      "help_links", "debugger", 0);
  kn_reply(k, socket, msg, "kernel_info_reply", content);
}

static bool is_ident(int c) { return isalnum(c) || c == '_'; }

/* The identifier (or %magic) around cursor_pos in code: [*start, *end). */
static void word_at(const char *code, size_t len, size_t cursor, size_t *start, size_t *end) {
  if (cursor > len) cursor = len;
  size_t s = cursor, e = cursor;
  while (s > 0 && is_ident((unsigned char)code[s - 1])) s--;
  while (s > 0 && code[s - 1] == '%') s--;
  while (e < len && is_ident((unsigned char)code[e])) e++;
  *start = s;
  *end = e;
}

/* Jupyter counts cursor_pos in Unicode code points; convert to a byte
 * offset into UTF-8 code. */
static size_t byte_offset(const char *code, size_t len, json_int_t cp) {
  size_t i = 0;
  for (json_int_t n = 0; i < len && n < cp; n++) {
    i++;
    while (i < len && ((unsigned char)code[i] & 0xC0) == 0x80) i++;
  }
  return i;
}

static json_int_t code_points(const char *code, size_t bytes) {
  json_int_t n = 0;
  for (size_t i = 0; i < bytes; i++)
    if (((unsigned char)code[i] & 0xC0) != 0x80) n++;
  return n;
}

typedef struct completion {
  json_t *matches;
  const char *prefix;
  size_t prefix_len;
} completion_t;

static void add_match(void *ctx, const char *name) {
  completion_t *c = ctx;
  if (strncmp(name, c->prefix, c->prefix_len) != 0) return;
  size_t n = json_array_size(c->matches);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(json_string_value(json_array_get(c->matches, i)), name)) return;
  json_array_append_new(c->matches, json_string(name));
}

static int cmp_json_str(const void *a, const void *b) {
  return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

static void complete(kn_kernel_t *k, void *socket, kn_msg_t *msg) {
  const char *code = json_string_value(json_object_get(msg->content, "code"));
  json_int_t cursor = json_integer_value(json_object_get(msg->content, "cursor_pos"));
  if (!code) code = "";
  size_t len = strlen(code), start, end;
  size_t cur = byte_offset(code, len, cursor);
  word_at(code, len, cur, &start, &end);
  char *prefix = kn_strndup(code + start, cur - start);
  completion_t c = {json_array(), prefix, strlen(prefix)};
  if (prefix[0] == '%') {
    for (size_t i = 0; kn_magic_names[i]; i++) {
      char buf[64];
      snprintf(buf, sizeof buf, "%s%s", prefix[1] == '%' ? "%%" : "%", kn_magic_names[i]);
      add_match(&c, buf);
    }
  } else if (prefix[0]) {
    kn_session_each_name(k->session, add_match, &c);
    for (size_t i = 0; kn_c_keywords[i]; i++) add_match(&c, kn_c_keywords[i]);
  }
  /* Sorted, session names and keywords mixed, as a user scans them. */
  size_t n = json_array_size(c.matches);
  json_t **v = kn_xcalloc(n + 1, sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = json_incref(json_array_get(c.matches, i));
  qsort(v, n, sizeof *v, cmp_json_str);
  json_t *sorted = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(sorted, v[i]);
  free(v);
  json_decref(c.matches);
  kn_reply(k, socket, msg, "complete_reply",
           json_pack("{s:s, s:o, s:I, s:I, s:{}}", "status", "ok", "matches", sorted,
                     "cursor_start", code_points(code, start), "cursor_end",
                     code_points(code, end), "metadata"));
  free(prefix);
}

static void inspect(kn_kernel_t *k, void *socket, kn_msg_t *msg) {
  const char *code = json_string_value(json_object_get(msg->content, "code"));
  json_int_t cursor = json_integer_value(json_object_get(msg->content, "cursor_pos"));
  if (!code) code = "";
  size_t len = strlen(code), start, end;
  word_at(code, len, byte_offset(code, len, cursor), &start, &end);
  char *word = kn_strndup(code + start, end - start);
  kn_strbuf_t text = KN_STRBUF_INIT;
  if (word[0] == '%') {
    const char *help = kn_magic_help(word + strspn(word, "%"));
    if (help) kn_strbuf_puts(&text, help);
  } else if (word[0]) {
    int cell = 0;
    const char *decl = kn_session_describe(k->session, word, &cell);
    if (decl) kn_strbuf_printf(&text, "%s\n\nDefined in cell[%d].", decl, cell);
  }
  json_t *data = json_object();
  if (text.len) json_object_set_new(data, "text/plain", json_string(text.data));
  kn_reply(k, socket, msg, "inspect_reply",
           json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", text.len > 0, "data", data,
                     "metadata"));
  kn_strbuf_free(&text);
  free(word);
}

static void is_complete(kn_kernel_t *k, void *socket, kn_msg_t *msg) {
  const char *code = json_string_value(json_object_get(msg->content, "code"));
  const char *status = kn_cell_completeness(code ? code : "");
  json_t *content = json_pack("{s:s}", "status", status);
  /* A cell magic's body starts at the left margin; an open bracket indents. */
  if (!strcmp(status, "incomplete"))
    json_object_set_new(content, "indent",
                        json_string(kn_cell_has_cell_magic(code ? code : "") ? "" : "    "));
  kn_reply(k, socket, msg, "is_complete_reply", content);
}

void kn_history_add(kn_kernel_t *k, const char *code) {
  if (k->n_history == k->cap_history) {
    k->cap_history = k->cap_history ? k->cap_history * 2 : 64;
    k->history = kn_xrealloc(k->history, k->cap_history * sizeof *k->history);
  }
  k->history[k->n_history++] =
      (kn_history_entry_t){.session = 1, .line = k->execution_count, .input = kn_strdup(code)};
}

void kn_history_free(kn_kernel_t *k) {
  for (size_t i = 0; i < k->n_history; i++) free(k->history[i].input);
  free(k->history);
  k->history = NULL;
  k->n_history = k->cap_history = 0;
}

/* history_request: this session's inputs. hist_access_type "tail" (the last
 * n), "range" (lines start..stop of session 1 or 0 = current), "search"
 * (fnmatch-free: substring of the pattern without its * wildcards). */
static void history(kn_kernel_t *k, void *socket, kn_msg_t *msg) {
  const char *type = json_string_value(json_object_get(msg->content, "hist_access_type"));
  json_t *jn = json_object_get(msg->content, "n");
  size_t n = json_is_integer(jn) ? (size_t)json_integer_value(jn) : k->n_history;
  json_t *out = json_array();
  size_t from = 0, to = k->n_history;
  if (type && !strcmp(type, "tail")) {
    from = n < k->n_history ? k->n_history - n : 0;
  } else if (type && !strcmp(type, "range")) {
    json_int_t start = json_integer_value(json_object_get(msg->content, "start"));
    json_t *jstop = json_object_get(msg->content, "stop");
    json_int_t stop = json_is_integer(jstop) ? json_integer_value(jstop) : (json_int_t)1 << 40;
    for (size_t i = 0; i < k->n_history; i++) {
      const kn_history_entry_t *h = &k->history[i];
      if (h->line >= start && h->line < stop)
        json_array_append_new(out, json_pack("[i, i, s]", h->session, h->line, h->input));
    }
    goto reply;
  } else if (type && !strcmp(type, "search")) {
    const char *pattern = json_string_value(json_object_get(msg->content, "pattern"));
    char *needle = kn_strdup(pattern ? pattern : "");
    size_t w = 0;
    for (size_t r = 0; needle[r]; r++)
      if (needle[r] != '*' && needle[r] != '?') needle[w++] = needle[r];
    needle[w] = '\0';
    for (size_t i = 0; i < k->n_history; i++)
      if (strstr(k->history[i].input, needle))
        json_array_append_new(out, json_pack("[i, i, s]", k->history[i].session,
                                             k->history[i].line, k->history[i].input));
    free(needle);
    goto reply;
  }
  for (size_t i = from; i < to; i++)
    json_array_append_new(out, json_pack("[i, i, s]", k->history[i].session, k->history[i].line,
                                         k->history[i].input));
reply:
  kn_reply(k, socket, msg, "history_reply", json_pack("{s:s, s:o}", "status", "ok", "history", out));
}

static void shutdown_request(kn_kernel_t *k, void *socket, kn_msg_t *msg) {
  bool restart = json_is_true(json_object_get(msg->content, "restart"));
  kn_reply(k, socket, msg, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart",
                                                       restart));
  /* The frontend also gets it on iopub (protocol 5.x). */
  kn_publish(k, msg, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
  k->shutting_down = true;
  k->restart_requested = restart;
}

bool kn_requests_dispatch(kn_kernel_t *k, void *socket, kn_msg_t *msg) {
  const char *type = kn_msg_type(msg);
  if (!strcmp(type, "kernel_info_request"))
    kernel_info(k, socket, msg);
  else if (!strcmp(type, "complete_request"))
    complete(k, socket, msg);
  else if (!strcmp(type, "inspect_request"))
    inspect(k, socket, msg);
  else if (!strcmp(type, "is_complete_request"))
    is_complete(k, socket, msg);
  else if (!strcmp(type, "history_request"))
    history(k, socket, msg);
  else if (!strcmp(type, "comm_info_request"))
    kn_reply(k, socket, msg, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
  else if (!strcmp(type, "shutdown_request"))
    shutdown_request(k, socket, msg);
  else if (!strcmp(type, "comm_open")) {
    /* No comm targets: close it, as ipykernel does for unknown targets. */
    json_t *id = json_object_get(msg->content, "comm_id");
    kn_publish(k, msg, "comm_close", json_pack("{s:O, s:{}}", "comm_id", id ? id : json_null(),
                                               "data"));
  } else if (!strcmp(type, "comm_msg") || !strcmp(type, "comm_close"))
    ; /* nothing is open */
  else
    return false;
  return true;
}
