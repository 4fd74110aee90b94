/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_conn: the connection file that Jupyter hands a kernel (see kn_conn.h).
 *
 * Defaults follow jupyter_client's load_connection_info: a missing transport
 * means "tcp", a missing ip means "127.0.0.1" and a missing key means the
 * empty key (unsigned messages). Ports have no sensible default and are
 * required. */
#include "kn_conn.h"

#include "kn_text.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void conn_err(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void conn_err(char *err, size_t err_size, const char *fmt, ...) {
  if (!err || err_size == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_size, fmt, ap);
  va_end(ap);
}

/* Copies the optional string field name of root into buf (size bytes), or
 * def when the field is absent. Fails when the field is present but is not a
 * string, or when it does not fit. */
static int get_string(const char *path, json_t *root, const char *name, const char *def,
                      char *buf, size_t size, char *err, size_t err_size) {
  json_t *value = json_object_get(root, name);
  const char *s = def;

  if (value) {
    if (!json_is_string(value)) {
      conn_err(err, err_size, "connection file %s: %s is not a string", path, name);
      return -1;
    }
    s = json_string_value(value);
  }
  if (strlen(s) >= size) {
    conn_err(err, err_size, "connection file %s: %s is too long (at most %zu bytes)", path, name,
             size - 1);
    return -1;
  }
  memcpy(buf, s, strlen(s) + 1);
  return 0;
}

/* Reads the required port field name. tcp ports are 1..65535; ipc "ports"
 * are only suffixes of a path, so any non-negative int is accepted. */
static int get_port(const char *path, json_t *root, const char *name, bool is_tcp, int *port,
                    char *err, size_t err_size) {
  json_t *value = json_object_get(root, name);

  if (!json_is_integer(value)) {
    conn_err(err, err_size, "connection file %s: %s is missing or not an integer", path, name);
    return -1;
  }
  json_int_t n = json_integer_value(value);
  json_int_t max = is_tcp ? 65535 : INT_MAX;
  json_int_t min = is_tcp ? 1 : 0;
  if (n < min || n > max) {
    conn_err(err, err_size, "connection file %s: %s is %lld, outside %lld..%lld", path, name,
             (long long)n, (long long)min, (long long)max);
    return -1;
  }
  *port = (int)n;
  return 0;
}

int kn_conn_load(const char *path, kn_conn_t *conn, char *err, size_t err_size) {
  json_error_t jerr;
  json_t *root = NULL;
  json_t *key;
  bool is_tcp;

  memset(conn, 0, sizeof *conn);
  root = json_load_file(path, 0, &jerr);
  if (!root) {
    /* jansson reports line -1 when the file cannot be opened at all. */
    if (jerr.line > 0)
      conn_err(err, err_size, "connection file %s: line %d: %s", path, jerr.line, jerr.text);
    else
      conn_err(err, err_size, "connection file %s: %s", path, jerr.text);
    goto fail;
  }
  if (!json_is_object(root)) {
    conn_err(err, err_size, "connection file %s: not a JSON object", path);
    goto fail;
  }

  if (get_string(path, root, "transport", "tcp", conn->transport, sizeof conn->transport, err,
                 err_size) < 0)
    goto fail;
  if (strcmp(conn->transport, "tcp") != 0 && strcmp(conn->transport, "ipc") != 0) {
    conn_err(err, err_size, "connection file %s: transport \"%s\" is not \"tcp\" or \"ipc\"",
             path, conn->transport);
    goto fail;
  }
  is_tcp = strcmp(conn->transport, "tcp") == 0;

  if (get_string(path, root, "ip", "127.0.0.1", conn->ip, sizeof conn->ip, err, err_size) < 0)
    goto fail;
  if (conn->ip[0] == '\0') {
    conn_err(err, err_size, "connection file %s: ip is empty", path);
    goto fail;
  }

  if (get_port(path, root, "shell_port", is_tcp, &conn->shell_port, err, err_size) < 0 ||
      get_port(path, root, "iopub_port", is_tcp, &conn->iopub_port, err, err_size) < 0 ||
      get_port(path, root, "stdin_port", is_tcp, &conn->stdin_port, err, err_size) < 0 ||
      get_port(path, root, "control_port", is_tcp, &conn->control_port, err, err_size) < 0 ||
      get_port(path, root, "hb_port", is_tcp, &conn->hb_port, err, err_size) < 0)
    goto fail;

  key = json_object_get(root, "key");
  if (key && !json_is_string(key)) {
    conn_err(err, err_size, "connection file %s: key is not a string", path);
    goto fail;
  }
  conn->key_len = key ? json_string_length(key) : 0;
  conn->key = fl__xstrndup(key ? json_string_value(key) : "", conn->key_len);

  if (get_string(path, root, "signature_scheme", "", conn->signature_scheme,
                 sizeof conn->signature_scheme, err, err_size) < 0)
    goto fail;
  /* jupyter_client writes "hmac-sha256" even with an empty key, so that is
   * accepted too; only a keyed file must name the scheme. */
  if (conn->signature_scheme[0] == '\0' && conn->key_len != 0) {
    conn_err(err, err_size,
             "connection file %s: signature_scheme is missing or empty but key is set", path);
    goto fail;
  }
  if (conn->signature_scheme[0] != '\0' && strcmp(conn->signature_scheme, "hmac-sha256") != 0) {
    conn_err(err, err_size,
             "connection file %s: signature_scheme \"%s\" is not supported (need \"hmac-sha256\")",
             path, conn->signature_scheme);
    goto fail;
  }

  json_decref(root);
  return 0;

fail:
  json_decref(root);
  kn_conn_free(conn);
  memset(conn, 0, sizeof *conn);
  return -1;
}

void kn_conn_endpoint(const kn_conn_t *conn, int port, char *buf, size_t size) {
  if (strcmp(conn->transport, "ipc") == 0) {
    snprintf(buf, size, "ipc://%s-%d", conn->ip, port);
  } else if (strchr(conn->ip, ':') && conn->ip[0] != '[') {
    /* An IPv6 address: ZeroMQ wants it in brackets. */
    snprintf(buf, size, "tcp://[%s]:%d", conn->ip, port);
  } else {
    snprintf(buf, size, "tcp://%s:%d", conn->ip, port);
  }
}

void kn_conn_free(kn_conn_t *conn) {
  if (!conn) return;
  free(conn->key);
  conn->key = NULL;
  conn->key_len = 0;
}
