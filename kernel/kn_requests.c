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
#include "kn_magics.h"
#include "kn_names.h"

static json_t *language_info(void) {
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", "c", "version", "C17", "mimetype",
                   "text/x-csrc", "file_extension", ".c", "pygments_lexer", "c",
                   "codemirror_mode", "text/x-csrc");
}

static void kernel_info(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
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
  kn_reply(k, channel, msg, "kernel_info_reply", content);
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

static void complete(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  const char *code = json_string_value(json_object_get(msg->content, "code"));
  json_int_t cursor = json_integer_value(json_object_get(msg->content, "cursor_pos"));
  if (!code) code = "";
  size_t len = strlen(code), start, end;
  size_t cur = byte_offset(code, len, cursor);
  word_at(code, len, cur, &start, &end);
  char *prefix = kn_strndup(code + start, cur - start);
  completion_t c = {json_array(), prefix, strlen(prefix)};
  if (prefix[0] == '%') {
    bool cell = prefix[1] == '%';
    const kn_magic_def_t *m;
    for (size_t i = 0; (m = kn_magic_at(i)) != NULL; i++) {
      if (!(m->forms & (cell ? KN_FORM_CELL : KN_FORM_LINE))) continue;
      char buf[64];
      snprintf(buf, sizeof buf, "%s%s", cell ? "%%" : "%", m->name);
      add_match(&c, buf);
    }
  } else if (prefix[0]) {
    kn_session_each_name(kn_kernel_session(k), add_match, &c);
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
  kn_reply(k, channel, msg, "complete_reply",
           json_pack("{s:s, s:o, s:I, s:I, s:{}}", "status", "ok", "matches", sorted,
                     "cursor_start", code_points(code, start), "cursor_end",
                     code_points(code, end), "metadata"));
  free(prefix);
}

static void inspect(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  const char *code = json_string_value(json_object_get(msg->content, "code"));
  json_int_t cursor = json_integer_value(json_object_get(msg->content, "cursor_pos"));
  if (!code) code = "";
  size_t len = strlen(code), start, end;
  word_at(code, len, byte_offset(code, len, cursor), &start, &end);
  char *word = kn_strndup(code + start, end - start);
  kn_strbuf_t text = KN_STRBUF_INIT;
  if (word[0] == '%') {
    char *help = kn_magic_help(word + strspn(word, "%"));
    if (help) kn_strbuf_puts(&text, help);
    free(help);
  } else if (word[0]) {
    int cell = 0;
    const char *decl = kn_session_describe(kn_kernel_session(k), word, &cell);
    if (decl) kn_strbuf_printf(&text, "%s\n\nDefined in " KN_CELL_FILE_FMT ".", decl, cell);
  }
  json_t *data = json_object();
  if (text.len) json_object_set_new(data, "text/plain", json_string(text.data));
  kn_reply(k, channel, msg, "inspect_reply",
           json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", text.len > 0, "data", data,
                     "metadata"));
  kn_strbuf_free(&text);
  free(word);
}

static void is_complete(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  const char *code = json_string_value(json_object_get(msg->content, "code"));
  const char *status = kn_cell_completeness(code ? code : "");
  json_t *content = json_pack("{s:s}", "status", status);
  /* A cell magic's body starts at the left margin; an open bracket indents. */
  if (!strcmp(status, "incomplete"))
    json_object_set_new(content, "indent",
                        json_string(kn_cell_has_cell_magic(code ? code : "") ? "" : "    "));
  kn_reply(k, channel, msg, "is_complete_reply", content);
}

static void history(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  json_t *out = kn_history_query(kn_kernel_history(k), msg->content);
  kn_reply(k, channel, msg, "history_reply", json_pack("{s:s, s:o}", "status", "ok", "history", out));
}

static void shutdown_request(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  bool restart = json_is_true(json_object_get(msg->content, "restart"));
  kn_reply(k, channel, msg, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart",
                                                       restart));
  /* The frontend also gets it on iopub (protocol 5.x). */
  kn_publish(k, msg, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
  kn_kernel_shutdown(k, restart);
}

bool kn_requests_dispatch(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  const char *type = kn_msg_type(msg);
  if (!strcmp(type, "kernel_info_request"))
    kernel_info(k, channel, msg);
  else if (!strcmp(type, "complete_request"))
    complete(k, channel, msg);
  else if (!strcmp(type, "inspect_request"))
    inspect(k, channel, msg);
  else if (!strcmp(type, "is_complete_request"))
    is_complete(k, channel, msg);
  else if (!strcmp(type, "history_request"))
    history(k, channel, msg);
  else if (!strcmp(type, "comm_info_request"))
    kn_reply(k, channel, msg, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
  else if (!strcmp(type, "shutdown_request"))
    shutdown_request(k, channel, msg);
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
