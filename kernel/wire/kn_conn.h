/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_conn: the connection file that Jupyter hands a kernel (-f PATH).
 *
 * {"transport": "tcp"|"ipc", "ip": "127.0.0.1", "shell_port": 5555, ...,
 *  "key": "...", "signature_scheme": "hmac-sha256"} */
#ifndef KN_CONN_H
#define KN_CONN_H

#include <stddef.h>

typedef struct kn_conn {
  char transport[8]; /* "tcp" or "ipc" */
  char ip[256];      /* address for tcp, path prefix for ipc */
  int shell_port, iopub_port, stdin_port, control_port, hb_port;
  char *key; /* owned; may be "" (no signing) */
  size_t key_len;
  char signature_scheme[32];
} kn_conn_t;

/* Reads and validates the connection file at path. Ports must be integers in
 * 1..65535 (tcp) or any non-negative integer (ipc), transport tcp or ipc, and
 * signature_scheme "hmac-sha256" (or absent/empty when the key is empty).
 * Returns 0, or -1 with a reason in err naming the file and the field. */
int kn_conn_load(const char *path, kn_conn_t *conn, char *err, size_t err_size);

/* Formats the ZeroMQ endpoint of one port: "tcp://IP:PORT" or "ipc://IP-PORT"
 * (jupyter_client's convention for ipc). */
void kn_conn_endpoint(const kn_conn_t *conn, int port, char *buf, size_t size);

void kn_conn_free(kn_conn_t *conn);

#endif
