/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_conn: connection files written to temporary files, the
 * defaults jupyter_client also applies, each validation error, and the
 * ZeroMQ endpoint strings. */
#include "kn_conn.h"

#include "test.h"

#include <stdbool.h>
#include <unistd.h>

#define PORTS                                                                          \
  "\"shell_port\": 5555, \"iopub_port\": 5556, \"stdin_port\": 5557, "                 \
  "\"control_port\": 5558, \"hb_port\": 5559"

/* Writes text to a new temporary file and returns its path in path[64]. */
static void write_temp(const char *text, char path[64]) {
  strcpy(path, "/tmp/cflame-test-conn-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) {
    perror("mkstemp");
    exit(2);
  }
  size_t len = strlen(text);
  if (write(fd, text, len) != (ssize_t)len) {
    perror("write");
    exit(2);
  }
  close(fd);
}

/* Loads text as a connection file; on success conn must be kn_conn_free'd. */
static int load_text(const char *text, kn_conn_t *conn, char *err, size_t err_size,
                     char path[64]) {
  write_temp(text, path);
  int rc = kn_conn_load(path, conn, err, err_size);
  unlink(path);
  return rc;
}

/* Expects text to be refused with an error that names the file and holds want. */
static void expect_reject(const char *text, const char *want, int line) {
  kn_conn_t conn;
  char err[512] = "";
  char path[64];
  int rc = load_text(text, &conn, err, sizeof err, path);

  CHECK_INT(rc, -1);
  CHECK(conn.key == NULL);
  if (!strstr(err, want) || !strstr(err, path)) {
    fprintf(stderr, "(line %d) error \"%s\" lacks \"%s\" or the path %s\n", line, err, want, path);
    CHECK(strstr(err, want) != NULL && strstr(err, path) != NULL);
  }
  if (rc == 0) kn_conn_free(&conn);
}
#define EXPECT_REJECT(text, want) expect_reject(text, want, __LINE__)

static void test_valid_tcp(void) {
  kn_conn_t conn;
  char err[512] = "";
  char path[64];
  char ep[300];

  CHECK_INT(load_text("{\"transport\": \"tcp\", \"ip\": \"127.0.0.1\", " PORTS
                      ", \"key\": \"a0436f6c-1916-498b-8eb9-e81ab9368e84\","
                      " \"signature_scheme\": \"hmac-sha256\", \"kernel_name\": \"cflame\"}",
                      &conn, err, sizeof err, path),
            0);
  CHECK_STR(err, "");
  CHECK_STR(conn.transport, "tcp");
  CHECK_STR(conn.ip, "127.0.0.1");
  CHECK_INT(conn.shell_port, 5555);
  CHECK_INT(conn.iopub_port, 5556);
  CHECK_INT(conn.stdin_port, 5557);
  CHECK_INT(conn.control_port, 5558);
  CHECK_INT(conn.hb_port, 5559);
  CHECK_STR(conn.key, "a0436f6c-1916-498b-8eb9-e81ab9368e84");
  CHECK_INT(conn.key_len, 36);
  CHECK_STR(conn.signature_scheme, "hmac-sha256");

  kn_conn_endpoint(&conn, conn.shell_port, ep, sizeof ep);
  CHECK_STR(ep, "tcp://127.0.0.1:5555");
  /* A short buffer is truncated, not overrun. */
  char small[8];
  kn_conn_endpoint(&conn, conn.shell_port, small, sizeof small);
  CHECK_STR(small, "tcp://1");
  kn_conn_free(&conn);
  CHECK(conn.key == NULL);
  kn_conn_free(&conn); /* twice is harmless */

  /* Defaults: transport tcp, ip 127.0.0.1; "*" and IPv6 endpoints. */
  CHECK_INT(load_text("{" PORTS ", \"key\": \"k\", \"signature_scheme\": \"hmac-sha256\"}", &conn,
                      err, sizeof err, path),
            0);
  CHECK_STR(conn.transport, "tcp");
  CHECK_STR(conn.ip, "127.0.0.1");
  strcpy(conn.ip, "*");
  kn_conn_endpoint(&conn, 1, ep, sizeof ep);
  CHECK_STR(ep, "tcp://*:1");
  strcpy(conn.ip, "::1");
  kn_conn_endpoint(&conn, 65535, ep, sizeof ep);
  CHECK_STR(ep, "tcp://[::1]:65535");
  kn_conn_free(&conn);
}

static void test_valid_ipc(void) {
  kn_conn_t conn;
  char err[512] = "";
  char path[64];
  char ep[300];

  CHECK_INT(load_text("{\"transport\": \"ipc\", \"ip\": \"kernel-ipc\", \"shell_port\": 5,"
                      " \"iopub_port\": 6, \"stdin_port\": 7, \"control_port\": 8,"
                      " \"hb_port\": 0, \"key\": \"\", \"signature_scheme\": \"hmac-sha256\"}",
                      &conn, err, sizeof err, path),
            0);
  CHECK_STR(err, "");
  CHECK_STR(conn.transport, "ipc");
  CHECK_STR(conn.ip, "kernel-ipc");
  CHECK_INT(conn.shell_port, 5);
  CHECK_INT(conn.hb_port, 0);
  kn_conn_endpoint(&conn, conn.shell_port, ep, sizeof ep);
  CHECK_STR(ep, "ipc://kernel-ipc-5");
  kn_conn_endpoint(&conn, conn.hb_port, ep, sizeof ep);
  CHECK_STR(ep, "ipc://kernel-ipc-0");
  kn_conn_free(&conn);
}

static void test_key_handling(void) {
  kn_conn_t conn;
  char err[512] = "";
  char path[64];

  /* A missing key is the empty key: messages are not signed, and then the
   * scheme may be absent. */
  CHECK_INT(load_text("{\"transport\": \"tcp\", \"ip\": \"127.0.0.1\", " PORTS "}", &conn, err,
                      sizeof err, path),
            0);
  CHECK(conn.key != NULL);
  CHECK_STR(conn.key, "");
  CHECK_INT(conn.key_len, 0);
  CHECK_STR(conn.signature_scheme, "");
  kn_conn_free(&conn);

  /* Empty key, empty scheme. */
  CHECK_INT(load_text("{" PORTS ", \"key\": \"\", \"signature_scheme\": \"\"}", &conn, err,
                      sizeof err, path),
            0);
  CHECK_STR(conn.key, "");
  kn_conn_free(&conn);

  /* Non-ASCII key: its length is in bytes. */
  CHECK_INT(load_text("{" PORTS ", \"key\": \"\\u00e9t\\u00e9\", \"signature_scheme\": "
                      "\"hmac-sha256\"}",
                      &conn, err, sizeof err, path),
            0);
  CHECK_STR(conn.key, "\xc3\xa9t\xc3\xa9");
  CHECK_INT(conn.key_len, 5);
  kn_conn_free(&conn);

  EXPECT_REJECT("{" PORTS ", \"key\": 42}", "key is not a string");
  EXPECT_REJECT("{" PORTS ", \"key\": \"k\"}", "signature_scheme is missing");
  EXPECT_REJECT("{" PORTS ", \"key\": \"k\", \"signature_scheme\": \"\"}",
                "signature_scheme is missing");
  EXPECT_REJECT("{" PORTS ", \"key\": \"k\", \"signature_scheme\": \"hmac-md5\"}",
                "signature_scheme \"hmac-md5\" is not supported");
  EXPECT_REJECT("{" PORTS ", \"key\": \"\", \"signature_scheme\": \"hmac-md5\"}",
                "signature_scheme \"hmac-md5\" is not supported");
  EXPECT_REJECT("{" PORTS ", \"key\": \"k\", \"signature_scheme\": 1}",
                "signature_scheme is not a string");
}

static void test_rejects(void) {
  kn_conn_t conn;
  char err[512] = "";

  EXPECT_REJECT("{\"transport\": \"udp\", " PORTS "}", "transport \"udp\" is not");
  EXPECT_REJECT("{\"transport\": \"\", " PORTS "}", "transport \"\" is not");
  EXPECT_REJECT("{\"transport\": 7, " PORTS "}", "transport is not a string");
  EXPECT_REJECT("{\"transport\": \"tcp-and-more-text\", " PORTS "}", "transport is too long");
  EXPECT_REJECT("{\"ip\": \"\", " PORTS "}", "ip is empty");
  EXPECT_REJECT("{\"ip\": null, " PORTS "}", "ip is not a string");

  /* Ports: each field by name, wrong types and out of range values. */
  EXPECT_REJECT("{\"shell_port\": \"5555\", \"iopub_port\": 5556, \"stdin_port\": 5557, "
                "\"control_port\": 5558, \"hb_port\": 5559}",
                "shell_port is missing or not an integer");
  EXPECT_REJECT("{\"shell_port\": 5555, \"iopub_port\": 5556.0, \"stdin_port\": 5557, "
                "\"control_port\": 5558, \"hb_port\": 5559}",
                "iopub_port is missing or not an integer");
  EXPECT_REJECT("{\"shell_port\": 5555, \"iopub_port\": 5556, "
                "\"control_port\": 5558, \"hb_port\": 5559}",
                "stdin_port is missing or not an integer");
  EXPECT_REJECT("{\"shell_port\": 5555, \"iopub_port\": 5556, \"stdin_port\": 5557, "
                "\"control_port\": null, \"hb_port\": 5559}",
                "control_port is missing or not an integer");
  EXPECT_REJECT("{\"shell_port\": 5555, \"iopub_port\": 5556, \"stdin_port\": 5557, "
                "\"control_port\": 5558, \"hb_port\": true}",
                "hb_port is missing or not an integer");
  EXPECT_REJECT("{\"shell_port\": 0, \"iopub_port\": 5556, \"stdin_port\": 5557, "
                "\"control_port\": 5558, \"hb_port\": 5559}",
                "shell_port is 0, outside 1..65535");
  EXPECT_REJECT("{\"shell_port\": 5555, \"iopub_port\": 65536, \"stdin_port\": 5557, "
                "\"control_port\": 5558, \"hb_port\": 5559}",
                "iopub_port is 65536, outside 1..65535");
  EXPECT_REJECT("{\"transport\": \"ipc\", \"ip\": \"k\", \"shell_port\": -1, \"iopub_port\": 1, "
                "\"stdin_port\": 2, \"control_port\": 3, \"hb_port\": 4}",
                "shell_port is -1, outside 0..");
  EXPECT_REJECT("{\"transport\": \"ipc\", \"ip\": \"k\", \"shell_port\": 1, \"iopub_port\": 1, "
                "\"stdin_port\": 2, \"control_port\": 3, \"hb_port\": 99999999999}",
                "hb_port is 99999999999, outside 0..");

  /* Not JSON, not an object, empty file. */
  EXPECT_REJECT("{\"shell_port\": 5555,", "connection file");
  EXPECT_REJECT("not json at all", "connection file");
  EXPECT_REJECT("", "connection file");
  EXPECT_REJECT("[1, 2, 3]", "not a JSON object");

  /* A file that does not exist. */
  const char *missing = "/tmp/cflame-test-conn-does-not-exist/kernel.json";
  CHECK_INT(kn_conn_load(missing, &conn, err, sizeof err), -1);
  CHECK(strstr(err, missing) != NULL);
  CHECK(conn.key == NULL);
  /* NULL err is allowed. */
  CHECK_INT(kn_conn_load(missing, &conn, NULL, 0), -1);
}

int main(void) {
  test_valid_tcp();
  test_valid_ipc();
  test_key_handling();
  test_rejects();
  return TEST_DONE();
}
