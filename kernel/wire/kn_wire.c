/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_wire: Jupyter wire messages as frames (see kn_wire.h).
 *
 * Decoding treats every frame as untrusted bytes: frames are addressed only
 * through their (data, size) pairs, never as C strings, and the signature is
 * verified over the raw JSON frames before any of them reaches the parser. */
#include "kn_wire.h"

#include "kn_text.h"

#include <assert.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uuid/uuid.h>

#define WIRE_DELIM_LEN (sizeof KN_WIRE_DELIM - 1)
#define WIRE_SIG_HEX_LEN 64

/* The four signed JSON frames, in wire order. */
static const char *const wire_part_names[4] = {"header", "parent_header", "metadata",
                                               "content"};

static void wire_err(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void wire_err(char *err, size_t err_size, const char *fmt, ...) {
  if (!err || err_size == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_size, fmt, ap);
  va_end(ap);
}

/* Copies size bytes into a new blob. data may be NULL when size is 0. */
static void blob_copy(kn_blob_t *dst, const unsigned char *data, size_t size) {
  dst->data = fl__xmalloc(size, 1);
  if (size) memcpy(dst->data, data, size);
  dst->size = size;
}

/* Copies n blobs into a new array (NULL when n is 0). */
static kn_blob_t *blobs_copy(const kn_blob_t *src, size_t n) {
  if (n == 0) return NULL;
  kn_blob_t *dst = fl__xcalloc(n, sizeof *dst);
  for (size_t i = 0; i < n; i++) blob_copy(&dst[i], src[i].data, src[i].size);
  return dst;
}

static bool is_delim(const kn_blob_t *frame) {
  return frame->size == WIRE_DELIM_LEN && memcmp(frame->data, KN_WIRE_DELIM, WIRE_DELIM_LEN) == 0;
}

int kn_wire_sign(const kn_key_t *key, const kn_blob_t parts[4], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  EVP_MAC *mac = NULL;
  EVP_MAC_CTX *ctx = NULL;
  unsigned char digest[32];
  size_t digest_len = 0;
  char digest_name[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end(),
  };

  hex[0] = '\0';
  if (!key || key->len == 0) return 0;

  mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  if (!mac) goto fail;
  ctx = EVP_MAC_CTX_new(mac);
  if (!ctx) goto fail;
  if (!EVP_MAC_init(ctx, key->data, key->len, params)) goto fail;
  for (int i = 0; i < 4; i++) {
    /* Skip empty parts: their data pointer may legitimately be NULL. */
    if (parts[i].size && !EVP_MAC_update(ctx, parts[i].data, parts[i].size)) goto fail;
  }
  if (!EVP_MAC_final(ctx, digest, &digest_len, sizeof digest)) goto fail;
  if (digest_len != sizeof digest) goto fail;

  for (size_t i = 0; i < sizeof digest; i++) {
    hex[2 * i] = digits[digest[i] >> 4];
    hex[2 * i + 1] = digits[digest[i] & 0xf];
  }
  hex[WIRE_SIG_HEX_LEN] = '\0';
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  return 0;

fail:
  hex[0] = '\0';
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  return -1;
}

/* Checks the signature frame against the four JSON frames. With an empty key
 * the signature frame is ignored, whatever it holds, as jupyter_client does
 * when it has no key. With a key, the frame must be exactly the 64 lowercase
 * hex digits of the HMAC; the compare is constant-time. */
static int verify_signature(const kn_key_t *key, const kn_blob_t *sig, const kn_blob_t parts[4],
                            char *err, size_t err_size) {
  char expected[65];

  if (!key || key->len == 0) return 0;
  if (sig->size == 0) {
    wire_err(err, err_size, "missing signature");
    return -1;
  }
  if (kn_wire_sign(key, parts, expected) < 0) {
    wire_err(err, err_size, "cannot compute HMAC-SHA256 (OpenSSL failed)");
    return -1;
  }
  if (sig->size != WIRE_SIG_HEX_LEN || CRYPTO_memcmp(expected, sig->data, WIRE_SIG_HEX_LEN) != 0) {
    wire_err(err, err_size, "bad signature");
    return -1;
  }
  return 0;
}

/* "an array", "a string", ...: what a JSON value is, for errors. */
static const char *json_type_name(const json_t *value) {
  switch (json_typeof(value)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
  }
}

/* Parses one JSON frame, which must hold exactly one JSON object (trailing
 * bytes other than whitespace are rejected). JSON_DECODE_ANY only makes a
 * valid scalar reach the object check, for a clearer error. Returns a new
 * reference, or NULL with err naming the part. */
static json_t *parse_part(const kn_blob_t *frame, const char *name, char *err, size_t err_size) {
  json_error_t jerr;
  /* JSON_ALLOW_NUL: a string may hold "\u0000" (a NUL typed into a cell);
   * the request is answered, and its handler says what is wrong. */
  json_t *value = json_loadb((const char *)frame->data, frame->size,
                             JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);

  if (!value) {
    wire_err(err, err_size, "%s is not JSON: %s", name, jerr.text);
    return NULL;
  }
  if (!json_is_object(value)) {
    wire_err(err, err_size, "%s is not a JSON object: it is %s", name, json_type_name(value));
    json_decref(value);
    return NULL;
  }
  return value;
}

int kn_wire_decode(const kn_blob_t *frames, size_t n_frames, const kn_key_t *key,
                   kn_msg_t **out, char *err, size_t err_size) {
  kn_msg_t *msg = NULL;
  json_t *parsed[4] = {NULL, NULL, NULL, NULL};
  const kn_blob_t *sig, *parts;
  size_t delim = 0, after;

  *out = NULL;
  while (delim < n_frames && !is_delim(&frames[delim])) delim++;
  if (delim == n_frames) {
    wire_err(err, err_size, "no %s delimiter", KN_WIRE_DELIM);
    goto fail;
  }
  /* After the delimiter: signature, the four JSON frames, then buffers. */
  after = n_frames - delim - 1;
  if (after < 5) {
    wire_err(err, err_size, "too few frames after %s (got %zu, need at least 5)", KN_WIRE_DELIM,
             after);
    goto fail;
  }
  sig = &frames[delim + 1];
  parts = &frames[delim + 2];
  if (verify_signature(key, sig, parts, err, err_size) < 0) goto fail;

  /* From here on the message is the key holder's: even when a part does
   * not parse, what did is handed back so that the sender can be told. */
  msg = fl__xcalloc(1, sizeof *msg);
  msg->idents = blobs_copy(frames, delim);
  msg->n_idents = delim;
  if (sig->size < sizeof msg->signature) memcpy(msg->signature, sig->data, sig->size);
  for (int i = 0; i < 4; i++) {
    parsed[i] = parse_part(&parts[i], wire_part_names[i], err, err_size);
    if (!parsed[i]) goto fail;
  }
  msg->header = parsed[0];
  msg->parent_header = parsed[1];
  msg->metadata = parsed[2];
  msg->content = parsed[3];
  msg->n_buffers = after - 5;
  msg->buffers = blobs_copy(parts + 4, msg->n_buffers);
  *out = msg;
  return 0;

fail:
  if (msg) {
    /* Well signed: the partial message, with its header if it parsed. */
    msg->header = parsed[0];
    parsed[0] = NULL;
    *out = msg;
  }
  for (int i = 0; i < 4; i++) json_decref(parsed[i]);
  return -1;
}

static int dump_to_strbuf(const char *buffer, size_t size, void *data) {
  fl__buf_add(data, buffer, size);
  return 0;
}

/* Serializes one JSON part compactly into a new blob (allocated by fl__buf,
 * so that kn_frames_free's free() matches whatever allocator jansson uses).
 * A NULL part is sent as {}; anything but an object is refused, since no
 * peer would accept it. */
static int dump_part(const json_t *value, const char *name, kn_blob_t *blob, char *err,
                     size_t err_size) {
  fl__buf_t sb = FL__BUF_INIT;

  if (!value) {
    blob_copy(blob, (const unsigned char *)"{}", 2);
    return 0;
  }
  if (!json_is_object(value)) {
    wire_err(err, err_size, "%s is not a JSON object", name);
    goto fail;
  }
  if (json_dump_callback(value, dump_to_strbuf, &sb, JSON_COMPACT) != 0) {
    wire_err(err, err_size, "cannot serialize %s", name);
    goto fail;
  }
  blob->size = sb.len;
  blob->data = (unsigned char *)fl__buf_take(&sb);
  return 0;

fail:
  fl__buf_free(&sb);
  return -1;
}

int kn_wire_encode(const kn_msg_t *msg, const kn_key_t *key, kn_blob_t **frames,
                   size_t *n_frames, char *err, size_t err_size) {
  const json_t *values[4] = {msg->header, msg->parent_header, msg->metadata, msg->content};
  size_t n = msg->n_idents + 2 + 4 + msg->n_buffers;
  kn_blob_t *out = fl__xcalloc(n, sizeof *out);
  kn_blob_t *sig, *parts;
  size_t at = 0;
  char hex[65];

  *frames = NULL;
  *n_frames = 0;
  for (size_t i = 0; i < msg->n_idents; i++, at++)
    blob_copy(&out[at], msg->idents[i].data, msg->idents[i].size);
  blob_copy(&out[at++], (const unsigned char *)KN_WIRE_DELIM, WIRE_DELIM_LEN);
  sig = &out[at++];
  parts = &out[at];
  for (int i = 0; i < 4; i++, at++) {
    if (dump_part(values[i], wire_part_names[i], &out[at], err, err_size) < 0) goto fail;
  }
  for (size_t i = 0; i < msg->n_buffers; i++, at++)
    blob_copy(&out[at], msg->buffers[i].data, msg->buffers[i].size);

  if (kn_wire_sign(key, parts, hex) < 0) {
    wire_err(err, err_size, "cannot compute HMAC-SHA256 (OpenSSL failed)");
    goto fail;
  }
  blob_copy(sig, (const unsigned char *)hex, strlen(hex));

  *frames = out;
  *n_frames = n;
  return 0;

fail:
  /* Frames not yet filled are zeroed by fl__xcalloc, so freeing all is safe. */
  kn_frames_free(out, n);
  return -1;
}

void kn_frames_free(kn_blob_t *frames, size_t n_frames) {
  if (!frames) return;
  for (size_t i = 0; i < n_frames; i++) free(frames[i].data);
  free(frames);
}

json_t *kn_wire_textn(const char *s, size_t n) {
  char *clean = kn_utf8_clean((const unsigned char *)(s ? s : ""), s ? n : 0);
  /* Valid UTF-8 by construction: jansson need not check it again. */
  json_t *text = fl__nonnull(json_stringn_nocheck(clean, strlen(clean)));
  free(clean);
  return text;
}

json_t *kn_wire_text(const char *s) {
  return kn_wire_textn(s, s ? strlen(s) : 0);
}

json_t *kn_wire_textf(const char *fmt, ...) {
  fl__buf_t sb = FL__BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  fl__buf_vprintf(&sb, fmt, ap);
  va_end(ap);
  json_t *text = kn_wire_textn(sb.data, sb.len);
  fl__buf_free(&sb);
  return text;
}

/* Formats the current UTC time as "YYYY-MM-DDTHH:MM:SS.uuuuuuZ". */
static void iso8601_now(char buf[32]) {
  struct timespec ts;
  struct tm tm;

  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, 32 - n, ".%06ldZ", (long)(ts.tv_nsec / 1000));
}

kn_msg_t *kn_msg_new(const char *msg_type, const kn_msg_t *parent, const char *session_id,
                     json_t *content) {
  assert(msg_type);
  uuid_t uuid;
  char msg_id[37];
  char date[32];
  kn_msg_t *msg = fl__xcalloc(1, sizeof *msg);

  uuid_generate_random(uuid);
  uuid_unparse_lower(uuid, msg_id);
  iso8601_now(date);

  json_t *header = fl__nonnull(json_object());
  json_object_set_new(header, "msg_id", fl__nonnull(json_string(msg_id)));
  json_object_set_new(header, "session", fl__nonnull(json_string(session_id ? session_id : "")));
  json_object_set_new(header, "username", fl__nonnull(json_string("cflame")));
  json_object_set_new(header, "date", fl__nonnull(json_string(date)));
  json_object_set_new(header, "msg_type", fl__nonnull(json_string(msg_type)));
  json_object_set_new(header, "version", fl__nonnull(json_string("5.3")));
  msg->header = header;

  /* A deep copy, so that editing the reply never alters the request. */
  if (parent && parent->header) {
    msg->parent_header = fl__nonnull(json_deep_copy(parent->header));
  } else {
    msg->parent_header = fl__nonnull(json_object());
  }
  if (parent) {
    msg->idents = blobs_copy(parent->idents, parent->n_idents);
    msg->n_idents = parent->n_idents;
  }
  msg->metadata = fl__nonnull(json_object());
  msg->content = content ? content : fl__nonnull(json_object());
  return msg;
}

const char *kn_msg_type(const kn_msg_t *msg) {
  const char *type = msg ? json_string_value(json_object_get(msg->header, "msg_type")) : NULL;
  return type ? type : "";
}

void kn_msg_destroy(kn_msg_t **msgp) {
  kn_msg_t *msg = msgp ? *msgp : NULL;
  if (!msg) return;
  kn_frames_free(msg->idents, msg->n_idents);
  kn_frames_free(msg->buffers, msg->n_buffers);
  json_decref(msg->header);
  json_decref(msg->parent_header);
  json_decref(msg->metadata);
  json_decref(msg->content);
  free(msg);
  *msgp = NULL;
}

/* ---- replays ---- */

/* A ring of the last signatures, and an open-addressing table of ring
 * positions (+1; 0 is empty) keyed by the signature's first hex digits,
 * twice the ring's size. The oldest signature leaves the table when its
 * place in the ring is taken, by backward-shift deletion, so the table
 * never fills. */
struct kn_replay {
  char (*ring)[64];
  uint32_t *table;
  size_t next, count;
};

#define REPLAY_SLOTS (2 * KN_REPLAY_HISTORY)

static size_t replay_hash(const char *sig) {
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < 64 && sig[i]; i++) h = (h ^ (unsigned char)sig[i]) * 1099511628211u;
  return (size_t)(h & (REPLAY_SLOTS - 1));
}

kn_replay_t *kn_replay_new(void) {
  kn_replay_t *r = fl__xcalloc(1, sizeof *r);
  r->ring = fl__xcalloc(KN_REPLAY_HISTORY, sizeof *r->ring);
  r->table = fl__xcalloc(REPLAY_SLOTS, sizeof *r->table);
  return r;
}

void kn_replay_destroy(kn_replay_t **rp) {
  kn_replay_t *r = *rp;
  if (!r) return;
  free(r->ring);
  free(r->table);
  free(r);
  *rp = NULL;
}

static void replay_forget(kn_replay_t *r, uint32_t pos) {
  size_t i = replay_hash(r->ring[pos]);
  while (r->table[i] != pos + 1) i = (i + 1) & (REPLAY_SLOTS - 1);
  /* Backward shift: move later entries of the run into the hole when their
   * home is at or before it. */
  for (size_t j = (i + 1) & (REPLAY_SLOTS - 1);; j = (j + 1) & (REPLAY_SLOTS - 1)) {
    if (!r->table[j]) break;
    size_t home = replay_hash(r->ring[r->table[j] - 1]);
    if (((j - home) & (REPLAY_SLOTS - 1)) >= ((j - i) & (REPLAY_SLOTS - 1))) {
      r->table[i] = r->table[j];
      i = j;
    }
  }
  r->table[i] = 0;
}

bool kn_replay_seen(kn_replay_t *r, const char *signature) {
  if (!signature[0]) return false;
  size_t i = replay_hash(signature);
  for (; r->table[i]; i = (i + 1) & (REPLAY_SLOTS - 1))
    if (!strncmp(r->ring[r->table[i] - 1], signature, 64)) return true;
  uint32_t pos = (uint32_t)r->next;
  if (r->count == KN_REPLAY_HISTORY) {
    replay_forget(r, pos);
    /* The hole may have moved the run that i ended: probe again. */
    for (i = replay_hash(signature); r->table[i]; i = (i + 1) & (REPLAY_SLOTS - 1)) continue;
  } else {
    r->count++;
  }
  strncpy(r->ring[pos], signature, 64);
  r->table[i] = pos + 1;
  r->next = (r->next + 1) % KN_REPLAY_HISTORY;
  return false;
}
