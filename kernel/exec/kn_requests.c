/* SPDX-License-Identifier: BSD-3-Clause */
/* Requests answered at once: kernel_info, is_complete, history, comm_info,
 * shutdown, comms (see kn_requests.h). complete and inspect are
 * kn_complete.c's. */
#define _GNU_SOURCE
#include "kn_requests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cflame/fl_api.h"
#include "kn_cell.h"

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
           "cflame %s -- C cells, compiled and run in a persistent "
           "session.\nType %%lsmagic for the magics. To interrupt a running cell from a "
           "terminal: kill -INT %ld",
           fl_version_string(), (long)getpid());
  json_t *content = json_pack(
      "{s:s, s:s, s:s, s:s, s:o, s:s, s:[], s:b}", "status", "ok", "protocol_version",
      KN_PROTOCOL_VERSION, "implementation", "cflame", "implementation_version",
      fl_version_string(), "language_info", language_info(), "banner", banner,
      "help_links", "debugger", 0);
  kn_reply(k, channel, msg, "kernel_info_reply", content);
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

static void comm_info(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  kn_reply(k, channel, msg, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
}

/* No comm targets: a comm_open is closed, as ipykernel does for unknown
 * targets, and nothing else of comms is ever open. */
static void comm_open(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  (void)channel;
  json_t *id = json_object_get(msg->content, "comm_id");
  kn_publish(k, msg, "comm_close", json_pack("{s:O, s:{}}", "comm_id", id ? id : json_null(),
                                             "data"));
}

static void comm_ignored(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  (void)k, (void)channel, (void)msg;
}

void kn_requests_register(kn_kernel_t *k) {
  static const struct {
    const char *msg_type;
    kn_handler_fn fn;
  } requests[] = {
      {"kernel_info_request", kernel_info}, {"is_complete_request", is_complete},
      {"history_request", history},         {"comm_info_request", comm_info},
      {"shutdown_request", shutdown_request}, {"comm_open", comm_open},
      {"comm_msg", comm_ignored},           {"comm_close", comm_ignored},
  };
  for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++)
    kn_kernel_handle(k, requests[i].msg_type, KN_ON(KN_SHELL) | KN_ON(KN_CONTROL), KN_SERVE,
                     requests[i].fn);
}
