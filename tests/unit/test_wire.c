/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_wire: signatures against independently computed vectors,
 * byte-exact encoding, decode/encode round trips and every rejection path.
 *
 * The expected digests were computed outside this code base, e.g.
 *
 *   printf '%s' "$HEADER$PARENT$METADATA$CONTENT" \
 *     | openssl dgst -sha256 -hmac cflame-test-key
 *
 * and cross-checked with python3's hmac module (which also produced VEC_BINKEY,
 * whose key holds a NUL byte and cannot be passed to openssl -hmac). */
#include "kn_wire.h"

#include "test.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "fl__common.h"

#define HEADER                                                                         \
  "{\"msg_id\":\"a1b2c3d4-0000-4000-8000-000000000001\",\"session\":\"sess-1\","       \
  "\"username\":\"user\",\"date\":\"2026-01-01T00:00:00.000000Z\","                     \
  "\"msg_type\":\"execute_request\",\"version\":\"5.3\"}"
#define PARENT "{}"
#define METADATA "{}"
#define CONTENT "{\"code\":\"1+1\",\"silent\":false}"

/* HMAC-SHA256, key "cflame-test-key", over HEADER PARENT METADATA CONTENT. */
#define VEC_KEY "f8ccdcb1edbcd8b3b302eb4e63b9d469c953ae7f494db8627e4189c90778de17"
/* Same frames, key the 6 bytes 00 ff 01 'k' 'e' 'y'. */
#define VEC_BINKEY "4f49cef073c7684eaa4ece20ac14e792bd9980e8d0a6d89d88d9f3c3f806eeba"
/* Key "cflame-test-key" over HEADER PARENT2 METADATA2 CONTENT2 (UTF-8). */
#define PARENT2 "{\"msg_id\":\"p\"}"
#define METADATA2 "{\"m\":1}"
#define CONTENT2 "{\"text\":\"h\xc3\xa9llo\"}"
#define VEC_KEY2 "ae7be54e9559ba167c8680b96137c53bc144cbe54593844a17077a2e9d9e9caa"

static const kn_key_t test_key = {(const unsigned char *)"cflame-test-key", 15};
static const kn_key_t bin_key = {(const unsigned char *)"\x00\xff\x01key", 6};
static const kn_key_t no_key = {NULL, 0};

/* A frame on the heap of exactly size bytes, so that AddressSanitizer flags
 * any read past its end. */
static kn_blob_t heap_blob(const void *data, size_t size) {
  kn_blob_t b = {malloc(size ? size : 1), size};
  if (size) memcpy(b.data, data, size);
  return b;
}

static kn_blob_t str_blob(const char *s) { return heap_blob(s, strlen(s)); }

static void free_frames(kn_blob_t *frames, size_t n) {
  for (size_t i = 0; i < n; i++) free(frames[i].data);
}

static bool blob_eq(const kn_blob_t *b, const void *data, size_t size) {
  return b->size == size && (size == 0 || memcmp(b->data, data, size) == 0);
}

static bool blob_eq_str(const kn_blob_t *b, const char *s) { return blob_eq(b, s, strlen(s)); }

/* Builds ident1 ident2 <IDS|MSG> sig header parent metadata content buf1 buf2
 * into frames[10]; returns the frame count. */
static size_t build_frames(kn_blob_t frames[10], const char *sig, const char *header,
                           const char *parent, const char *metadata, const char *content) {
  frames[0] = heap_blob("\x00k\x8b\x45\x67", 5);
  frames[1] = str_blob("client-2");
  frames[2] = str_blob(KN_WIRE_DELIM);
  frames[3] = str_blob(sig);
  frames[4] = str_blob(header);
  frames[5] = str_blob(parent);
  frames[6] = str_blob(metadata);
  frames[7] = str_blob(content);
  frames[8] = heap_blob("\x00\x01\x02\xff", 4);
  frames[9] = heap_blob("", 0);
  return 10;
}

/* Decodes and expects failure with an error containing want: the frames
 * dropped (no message), or, when partial, a well-signed message answered
 * from what of it could be read (its idents, its header when that is a
 * JSON object, nothing else). */
static void expect_failure(const kn_blob_t *frames, size_t n, const kn_key_t *key, const char *want,
                           bool partial, int line) {
  kn_msg_t *msg = (kn_msg_t *)1;
  char err[256] = "";
  int rc = kn_wire_decode(frames, n, key, &msg, err, sizeof err);
  CHECK_INT(rc, -1);
  if (!strstr(err, want)) {
    fprintf(stderr, "(line %d) error \"%s\" does not contain \"%s\"\n", line, err, want);
    CHECK(strstr(err, want) != NULL);
  }
  if (!partial) {
    CHECK(msg == NULL);
    return;
  }
  CHECK(msg != NULL);
  if (!msg) return;
  CHECK_INT(msg->n_idents, 2);
  CHECK(strstr(err, "header is not") == err ? msg->header == NULL : json_is_object(msg->header));
  CHECK(!msg->parent_header && !msg->metadata && !msg->content && !msg->n_buffers);
  kn_msg_destroy(&msg);
}
#define EXPECT_REJECT(frames, n, key, want) expect_failure(frames, n, key, want, false, __LINE__)
#define EXPECT_UNREADABLE(frames, n, key, want) expect_failure(frames, n, key, want, true, __LINE__)

static void test_sign_vectors(void) {
  kn_blob_t parts[4] = {
      {(unsigned char *)HEADER, strlen(HEADER)},
      {(unsigned char *)PARENT, strlen(PARENT)},
      {(unsigned char *)METADATA, strlen(METADATA)},
      {(unsigned char *)CONTENT, strlen(CONTENT)},
  };
  kn_blob_t parts2[4] = {
      {(unsigned char *)HEADER, strlen(HEADER)},
      {(unsigned char *)PARENT2, strlen(PARENT2)},
      {(unsigned char *)METADATA2, strlen(METADATA2)},
      {(unsigned char *)CONTENT2, strlen(CONTENT2)},
  };
  char hex[65];

  CHECK_INT(kn_wire_sign(&test_key, parts, hex), 0);
  CHECK_STR(hex, VEC_KEY);
  CHECK_INT(kn_wire_sign(&bin_key, parts, hex), 0);
  CHECK_STR(hex, VEC_BINKEY);
  CHECK_INT(kn_wire_sign(&test_key, parts2, hex), 0);
  CHECK_STR(hex, VEC_KEY2);
  memset(hex, 'x', sizeof hex);
  CHECK_INT(kn_wire_sign(&no_key, parts, hex), 0);
  CHECK_STR(hex, "");
}

static void test_decode_valid(void) {
  kn_blob_t frames[10];
  size_t n = build_frames(frames, VEC_KEY, HEADER, PARENT, METADATA, CONTENT);
  kn_msg_t *msg = NULL;
  char err[256] = "";

  CHECK_INT(kn_wire_decode(frames, n, &test_key, &msg, err, sizeof err), 0);
  CHECK_STR(err, "");
  CHECK(msg != NULL);
  if (msg) {
    CHECK_INT(msg->n_idents, 2);
    CHECK(blob_eq(&msg->idents[0], "\x00k\x8b\x45\x67", 5));
    CHECK(blob_eq_str(&msg->idents[1], "client-2"));
    CHECK_STR(kn_msg_type(msg), "execute_request");
    CHECK_STR(json_string_value(json_object_get(msg->header, "version")), "5.3");
    CHECK_INT(json_object_size(msg->parent_header), 0);
    CHECK_INT(json_object_size(msg->metadata), 0);
    CHECK_STR(json_string_value(json_object_get(msg->content, "code")), "1+1");
    CHECK(json_is_false(json_object_get(msg->content, "silent")));
    CHECK_INT(msg->n_buffers, 2);
    CHECK(blob_eq(&msg->buffers[0], "\x00\x01\x02\xff", 4));
    CHECK(blob_eq(&msg->buffers[1], "", 0));
    /* The message owns copies: the frames are borrowed. */
    CHECK(msg->idents[1].data != frames[1].data);
  }
  kn_msg_destroy(&msg);
  CHECK(msg == NULL);
  kn_msg_destroy(&msg); /* destroying NULL is a no-op */

  /* The UTF-8 vector and the binary key, through decode. */
  free_frames(frames, n);
  n = build_frames(frames, VEC_KEY2, HEADER, PARENT2, METADATA2, CONTENT2);
  CHECK_INT(kn_wire_decode(frames, n, &test_key, &msg, err, sizeof err), 0);
  if (msg) {
    CHECK_STR(json_string_value(json_object_get(msg->content, "text")), "h\xc3\xa9llo");
    CHECK_STR(json_string_value(json_object_get(msg->parent_header, "msg_id")), "p");
  }
  kn_msg_destroy(&msg);
  free_frames(frames, n);
  n = build_frames(frames, VEC_BINKEY, HEADER, PARENT, METADATA, CONTENT);
  CHECK_INT(kn_wire_decode(frames, n, &bin_key, &msg, err, sizeof err), 0);
  kn_msg_destroy(&msg);
  /* ...and a signature made with one key fails under another. */
  EXPECT_REJECT(frames, n, &test_key, "bad signature");
  free_frames(frames, n);

  /* No idents and no buffers: the minimal message. */
  kn_blob_t minimal[6] = {str_blob(KN_WIRE_DELIM), str_blob(VEC_KEY), str_blob(HEADER),
                          str_blob(PARENT),        str_blob(METADATA), str_blob(CONTENT)};
  CHECK_INT(kn_wire_decode(minimal, 6, &test_key, &msg, err, sizeof err), 0);
  if (msg) {
    CHECK_INT(msg->n_idents, 0);
    CHECK_INT(msg->n_buffers, 0);
  }
  kn_msg_destroy(&msg);
  free_frames(minimal, 6);

  /* Whitespace around a JSON object is still one JSON object. */
  kn_blob_t spaced[6] = {str_blob(KN_WIRE_DELIM), str_blob(""),       str_blob(" {} \n"),
                         str_blob(PARENT),        str_blob(METADATA), str_blob(CONTENT)};
  CHECK_INT(kn_wire_decode(spaced, 6, &no_key, &msg, err, sizeof err), 0);
  CHECK_STR(kn_msg_type(msg), ""); /* no msg_type in the header */
  kn_msg_destroy(&msg);
  free_frames(spaced, 6);
}

static void test_encode_exact(void) {
  kn_msg_t msg = {0};
  kn_blob_t idents[2] = {{(unsigned char *)"\x00k\x8b\x45\x67", 5},
                         {(unsigned char *)"client-2", 8}};
  kn_blob_t buffers[1] = {{(unsigned char *)"\x00\xfe", 2}};
  kn_blob_t *frames = NULL;
  size_t n = 0;
  char err[256] = "";

  /* jansson keeps insertion order, so these dump back to the same bytes. */
  msg.idents = idents;
  msg.n_idents = 2;
  msg.header = json_loads(HEADER, 0, NULL);
  msg.parent_header = json_object();
  msg.metadata = json_object();
  msg.content = json_pack("{s:s, s:b}", "code", "1+1", "silent", 0);
  msg.buffers = buffers;
  msg.n_buffers = 1;

  CHECK_INT(kn_wire_encode(&msg, &test_key, &frames, &n, err, sizeof err), 0);
  CHECK_INT(n, 9);
  if (n == 9) {
    CHECK(blob_eq(&frames[0], "\x00k\x8b\x45\x67", 5));
    CHECK(blob_eq_str(&frames[1], "client-2"));
    CHECK(blob_eq_str(&frames[2], KN_WIRE_DELIM));
    CHECK(blob_eq_str(&frames[3], VEC_KEY));
    CHECK(blob_eq_str(&frames[4], HEADER));
    CHECK(blob_eq_str(&frames[5], PARENT));
    CHECK(blob_eq_str(&frames[6], METADATA));
    CHECK(blob_eq_str(&frames[7], CONTENT));
    CHECK(blob_eq(&frames[8], "\x00\xfe", 2));
  }

  /* Round trip: decoding what was encoded gives the same message back. */
  kn_msg_t *back = NULL;
  CHECK_INT(kn_wire_decode(frames, n, &test_key, &back, err, sizeof err), 0);
  if (back) {
    CHECK_INT(back->n_idents, 2);
    CHECK(blob_eq(&back->idents[0], "\x00k\x8b\x45\x67", 5));
    CHECK(json_equal(back->header, msg.header));
    CHECK(json_equal(back->parent_header, msg.parent_header));
    CHECK(json_equal(back->metadata, msg.metadata));
    CHECK(json_equal(back->content, msg.content));
    CHECK_INT(back->n_buffers, 1);
    CHECK(blob_eq(&back->buffers[0], "\x00\xfe", 2));
  }
  kn_msg_destroy(&back);
  kn_frames_free(frames, n);

  /* Empty key: empty signature frame, which decodes under the empty key. */
  CHECK_INT(kn_wire_encode(&msg, &no_key, &frames, &n, err, sizeof err), 0);
  CHECK_INT(n, 9);
  if (n == 9) CHECK_INT(frames[3].size, 0);
  CHECK_INT(kn_wire_decode(frames, n, &no_key, &back, err, sizeof err), 0);
  kn_msg_destroy(&back);
  /* ...but not under a key. */
  EXPECT_REJECT(frames, n, &test_key, "missing signature");
  kn_frames_free(frames, n);

  /* Missing parts are sent as {}; parts that are not objects are refused. */
  json_t *content = msg.content;
  msg.content = NULL;
  CHECK_INT(kn_wire_encode(&msg, &test_key, &frames, &n, err, sizeof err), 0);
  if (n == 9) CHECK(blob_eq_str(&frames[7], "{}"));
  kn_frames_free(frames, n);
  msg.content = json_array();
  frames = (kn_blob_t *)1;
  n = 99;
  CHECK_INT(kn_wire_encode(&msg, &test_key, &frames, &n, err, sizeof err), -1);
  CHECK(frames == NULL);
  CHECK_INT(n, 0);
  CHECK(strstr(err, "content is not a JSON object") != NULL);
  json_decref(msg.content);
  msg.content = content;

  json_decref(msg.header);
  json_decref(msg.parent_header);
  json_decref(msg.metadata);
  json_decref(msg.content);
}

/* Frames kn_wire_decode refuses, each the test vector (build_frames with
 * VEC_KEY, HEADER, PARENT, METADATA, CONTENT) with one frame replaced, or
 * fewer frames kept. */
static const struct reject_case {
  const char *what;
  int frame;        /* the frame replaced (2 delimiter, 3 signature, 4 header,
                     * 7 content); -1: none */
  const char *data; /* its bytes */
  size_t len;       /* how many of them; 0: strlen(data) */
  int keep;         /* frames decoded; -1: all */
  const kn_key_t *key;
  bool unreadable; /* well-signed, answered from what could be read */
  const char *want;
} rejects[] = {
    /* one hex digit changed, in the first and in the last position */
    {"first digit", 3, "e8ccdcb1edbcd8b3b302eb4e63b9d469c953ae7f494db8627e4189c90778de17", 0, -1,
     &test_key, false, "bad signature"},
    {"last digit", 3, "f8ccdcb1edbcd8b3b302eb4e63b9d469c953ae7f494db8627e4189c90778de18", 0, -1,
     &test_key, false, "bad signature"},
    /* uppercase hex is not what jupyter_client sends */
    {"uppercase", 3, "F8CCDCB1EDBCD8B3B302EB4E63B9D469C953AE7F494DB8627E4189C90778DE17", 0, -1,
     &test_key, false, "bad signature"},
    /* the right signature plus or minus bytes */
    {"a byte more", 3, VEC_KEY "0", 0, -1, &test_key, false, "bad signature"},
    {"a byte less", 3, VEC_KEY, 63, -1, &test_key, false, "bad signature"},
    {"one byte", 3, VEC_KEY, 1, -1, &test_key, false, "bad signature"},
    /* a content change under the original signature */
    {"content changed", 7, "{\"code\":\"1+2\",\"silent\":false}", 0, -1, &test_key, false,
     "bad signature"},
    {"no signature", 3, "", 0, -1, &test_key, false, "missing signature"},
    /* no delimiter, or one a byte short or long */
    {"delimiter short", 2, "<IDS|MSG", 0, -1, &no_key, false, "no <IDS|MSG> delimiter"},
    {"delimiter long", 2, "<IDS|MSG>>", 0, -1, &no_key, false, "no <IDS|MSG> delimiter"},
    {"delimiter and NUL", 2, "<IDS|MSG>\0", 10, -1, &no_key, false, "no <IDS|MSG> delimiter"},
    {"no frames", -1, NULL, 0, 0, &no_key, false, "no <IDS|MSG> delimiter"},
    /* a JSON frame with a NUL inside */
    {"header and NUL", 4, "{}\0", 3, -1, &no_key, true, "header is not JSON"},
    {"NUL in a key", 4, "{\"a\0\":1}", 8, -1, &no_key, true, "header is not JSON"},
};

/* JSON problems, correctly signed so that they reach the parser. */
static const struct {
  const char *parts[4];
  const char *want;
} bad_json[] = {
    {{"not json", PARENT, METADATA, CONTENT}, "header is not JSON"},
    {{"", PARENT, METADATA, CONTENT}, "header is not JSON"},
    {{HEADER, "[]", METADATA, CONTENT}, "parent_header is not a JSON object"},
    {{HEADER, PARENT, "null", CONTENT}, "metadata is not a JSON object"},
    {{HEADER, PARENT, METADATA, "[1,2]"}, "content is not a JSON object: it is an array"},
    {{HEADER, PARENT, METADATA, "\"str\""}, "content is not a JSON object: it is a string"},
    {{HEADER, PARENT, METADATA, "{\"code\":\"\\ud800\"}"}, "content is not JSON"},
    {{HEADER, PARENT, METADATA, "{} {}"}, "content is not JSON"},
    {{HEADER, PARENT, METADATA, "{\"a\":1"}, "content is not JSON"},
    {{HEADER, PARENT, METADATA, "{\"a\":\"\xff\"}"}, "content is not JSON"},
};

static void test_decode_rejects(void) {
  kn_blob_t frames[10];
  size_t n;
  char sig[65];

  for (size_t i = 0; i < FL__ARRAY_SIZE(rejects); i++) {
    const struct reject_case *c = &rejects[i];
    n = build_frames(frames, VEC_KEY, HEADER, PARENT, METADATA, CONTENT);
    if (c->frame >= 0) {
      free(frames[c->frame].data);
      frames[c->frame] = heap_blob(c->data, c->len ? c->len : strlen(c->data));
    }
    int failed = test_failures;
    expect_failure(frames, c->keep < 0 ? n : (size_t)c->keep, c->key, c->want, c->unreadable,
                   __LINE__);
    if (test_failures != failed) fprintf(stderr, "  in case \"%s\"\n", c->what);
    free_frames(frames, n);
  }

  /* With the empty key, any signature, the empty one too, is accepted:
   * there is nothing to check. */
  static const char *const any_sig[] = {"", "whatever"};
  for (size_t i = 0; i < 2; i++) {
    kn_msg_t *msg = NULL;
    n = build_frames(frames, any_sig[i], HEADER, PARENT, METADATA, CONTENT);
    CHECK_INT(kn_wire_decode(frames, n, &no_key, &msg, NULL, 0), 0);
    kn_msg_destroy(&msg);
    free_frames(frames, n);
  }

  /* Too few frames after the delimiter (0 to 4 of the needed 5). */
  n = build_frames(frames, VEC_KEY, HEADER, PARENT, METADATA, CONTENT);
  for (size_t keep = 3; keep < 8; keep++) {
    EXPECT_REJECT(frames, keep, &no_key, "too few frames");
    EXPECT_REJECT(frames, keep, &test_key, "too few frames");
  }
  free_frames(frames, n);

  for (size_t i = 0; i < FL__ARRAY_SIZE(bad_json); i++) {
    kn_blob_t parts[4];
    for (int j = 0; j < 4; j++)
      parts[j] = (kn_blob_t){(unsigned char *)bad_json[i].parts[j], strlen(bad_json[i].parts[j])};
    CHECK_INT(kn_wire_sign(&test_key, parts, sig), 0);
    n = build_frames(frames, sig, bad_json[i].parts[0], bad_json[i].parts[1],
                     bad_json[i].parts[2], bad_json[i].parts[3]);
    EXPECT_UNREADABLE(frames, n, &test_key, bad_json[i].want);
    EXPECT_UNREADABLE(frames, n, &no_key, bad_json[i].want);
    free_frames(frames, n);
  }

  /* Every proper prefix of the header. Frames are exact-size heap copies
   * (ASan checks). */
  n = build_frames(frames, "", HEADER, PARENT, METADATA, CONTENT);
  for (size_t len = 0; len < strlen(HEADER); len++) {
    free(frames[4].data);
    frames[4] = heap_blob(HEADER, len);
    EXPECT_UNREADABLE(frames, n, &no_key, "header is not JSON");
  }
  free_frames(frames, n);

  /* A short error buffer is truncated, never overrun. */
  n = build_frames(frames, rejects[0].data, HEADER, PARENT, METADATA, CONTENT);
  char small[5] = "xxxx";
  kn_msg_t *msg = NULL;
  CHECK_INT(kn_wire_decode(frames, n, &test_key, &msg, small, sizeof small), -1);
  CHECK_STR(small, "bad ");
  CHECK_INT(kn_wire_decode(frames, n, &test_key, &msg, NULL, 0), -1);
  free_frames(frames, n);
}

/* The idents are everything before the first delimiter, whatever they hold. */
static void test_idents(void) {
  kn_blob_t frames[9] = {
      heap_blob("", 0),       heap_blob("\0\0\0", 3), str_blob("<IDS|MSG"),
      str_blob(KN_WIRE_DELIM), str_blob(VEC_KEY),      str_blob(HEADER),
      str_blob(PARENT),       str_blob(METADATA),     str_blob(CONTENT),
  };
  kn_msg_t *msg = NULL;

  CHECK_INT(kn_wire_decode(frames, 9, &test_key, &msg, NULL, 0), 0);
  if (msg) {
    CHECK_INT(msg->n_idents, 3);
    CHECK(blob_eq(&msg->idents[0], "", 0));
    CHECK(blob_eq(&msg->idents[1], "\0\0\0", 3));
    CHECK(blob_eq_str(&msg->idents[2], "<IDS|MSG"));
    CHECK_INT(msg->n_buffers, 0);
  }
  kn_msg_destroy(&msg);
  free_frames(frames, 9);
}

static bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

static void test_msg_new(void) {
  kn_blob_t frames[10];
  size_t n = build_frames(frames, VEC_KEY, HEADER, PARENT, METADATA, CONTENT);
  kn_msg_t *request = NULL, *reply = NULL, *other = NULL;

  CHECK_INT(kn_wire_decode(frames, n, &test_key, &request, NULL, 0), 0);
  free_frames(frames, n);
  if (!request) return;

  json_t *content = json_pack("{s:s, s:i}", "status", "ok", "execution_count", 1);
  reply = kn_msg_new("execute_reply", request, "kernel-session", content);
  CHECK(reply != NULL);
  CHECK(reply->content == content); /* stolen, not copied */
  CHECK_STR(kn_msg_type(reply), "execute_reply");
  CHECK_STR(json_string_value(json_object_get(reply->header, "version")), "5.3");
  CHECK_STR(json_string_value(json_object_get(reply->header, "session")), "kernel-session");
  CHECK_STR(json_string_value(json_object_get(reply->header, "username")), "cflame");
  CHECK(json_equal(reply->parent_header, request->header));
  CHECK(reply->parent_header != request->header);
  CHECK_INT(json_object_size(reply->metadata), 0);

  const char *id = json_string_value(json_object_get(reply->header, "msg_id"));
  CHECK(id != NULL);
  if (id) {
    CHECK_INT(strlen(id), 36);
    for (size_t i = 0; i < 36 && id[i]; i++) {
      if (i == 8 || i == 13 || i == 18 || i == 23)
        CHECK(id[i] == '-');
      else
        CHECK(is_hex(id[i]));
    }
    CHECK(id[14] == '4'); /* version 4: random */
  }

  /* "2026-11-21T05:49:13.123456Z" */
  const char *date = json_string_value(json_object_get(reply->header, "date"));
  CHECK(date != NULL);
  if (date) {
    CHECK_INT(strlen(date), 27);
    for (size_t i = 0; i < 27 && date[i]; i++) {
      const char *punct = NULL;
      switch (i) {
      case 4: case 7: punct = "-"; break;
      case 10: punct = "T"; break;
      case 13: case 16: punct = ":"; break;
      case 19: punct = "."; break;
      case 26: punct = "Z"; break;
      }
      if (punct)
        CHECK(date[i] == punct[0]);
      else
        CHECK(date[i] >= '0' && date[i] <= '9');
    }
    CHECK(strncmp(date, "20", 2) == 0);
  }

  /* Idents are copies that route back to the requester. */
  CHECK_INT(reply->n_idents, request->n_idents);
  for (size_t i = 0; i < reply->n_idents && i < request->n_idents; i++) {
    CHECK(blob_eq(&reply->idents[i], request->idents[i].data, request->idents[i].size));
    CHECK(reply->idents[i].data != request->idents[i].data);
  }

  /* No parent: empty parent_header, no idents, content {}; fresh ids. */
  other = kn_msg_new("status", NULL, "kernel-session", NULL);
  CHECK_INT(json_object_size(other->parent_header), 0);
  CHECK_INT(other->n_idents, 0);
  CHECK(json_is_object(other->content));
  CHECK_INT(json_object_size(other->content), 0);
  CHECK(strcmp(json_string_value(json_object_get(other->header, "msg_id")),
               json_string_value(json_object_get(reply->header, "msg_id"))) != 0);

  /* The new message survives a wire round trip. */
  kn_blob_t *out = NULL;
  size_t n_out = 0;
  kn_msg_t *back = NULL;
  CHECK_INT(kn_wire_encode(reply, &test_key, &out, &n_out, NULL, 0), 0);
  CHECK_INT(kn_wire_decode(out, n_out, &test_key, &back, NULL, 0), 0);
  if (back) {
    CHECK(json_equal(back->header, reply->header));
    CHECK(json_equal(back->parent_header, request->header));
    CHECK(json_equal(back->content, content));
    CHECK_INT(back->n_idents, 2);
  }
  kn_msg_destroy(&back);
  kn_frames_free(out, n_out);

  kn_msg_destroy(&other);
  kn_msg_destroy(&reply);
  kn_msg_destroy(&request);
  CHECK_STR(kn_msg_type(NULL), "");
}

/* Replays: a signature is recognised as long as it is among the last
 * KN_REPLAY_HISTORY seen, forgotten after, through many evictions (the
 * table's deletions must keep every remembered one findable). */
static void test_replay_history(void) {
  kn_replay_t *r = kn_replay_new();
  char sig[65];
  CHECK(!kn_replay_seen(r, ""));
  CHECK(!kn_replay_seen(r, ""));
  size_t total = 3 * KN_REPLAY_HISTORY + 123;
  size_t wrong = 0;
  for (size_t i = 0; i < total; i++) {
    snprintf(sig, sizeof sig, "%064zx", i * 2654435761u);
    if (kn_replay_seen(r, sig)) wrong++;
    if (!kn_replay_seen(r, sig)) wrong++;
  }
  CHECK_INT(wrong, 0);
  for (size_t back = 1; back <= KN_REPLAY_HISTORY; back += 997) {
    snprintf(sig, sizeof sig, "%064zx", (total - back) * 2654435761u);
    CHECK(kn_replay_seen(r, sig));
  }
  snprintf(sig, sizeof sig, "%064zx", (total - KN_REPLAY_HISTORY - 1) * 2654435761u);
  CHECK(!kn_replay_seen(r, sig)); /* forgotten (and now remembered again) */
  kn_replay_destroy(&r);
  CHECK(r == NULL);
}

/* kn_wire_text: whatever the bytes, a JSON string of valid UTF-8 (bytes
 * that are not become U+FFFD, NUL bytes are left out), which serializes. */
static void test_text(void) {
  json_t *t = kn_wire_textn("caf\xe9 \xc3\xa9\0!", 10);
  CHECK_STR(json_string_value(t), "caf\xef\xbf\xbd \xc3\xa9!");
  json_decref(t);
  t = kn_wire_textf("%s: %d", "\xff\xfe", 7);
  CHECK_STR(json_string_value(t), "\xef\xbf\xbd\xef\xbf\xbd: 7");
  char *dumped = json_dumps(t, JSON_ENCODE_ANY);
  CHECK(dumped != NULL);
  free(dumped);
  json_decref(t);
  t = kn_wire_text(NULL);
  CHECK_STR(json_string_value(t), "");
  json_decref(t);
  /* A lone surrogate's UTF-8 form (ED A0 80) is not UTF-8 either. */
  t = kn_wire_text("\xed\xa0\x80");
  CHECK_STR(json_string_value(t), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  json_decref(t);
}

int main(void) {
  test_text();
  test_replay_history();
  test_sign_vectors();
  test_decode_valid();
  test_encode_exact();
  test_decode_rejects();
  test_idents();
  test_msg_new();
  return TEST_DONE();
}
