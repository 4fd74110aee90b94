/* kn_wire: Jupyter wire messages (messaging protocol 5.3) as frames.
 *
 * A message on a ROUTER/DEALER/PUB socket is the frame list
 *
 *   ident... | "<IDS|MSG>" | signature | header | parent_header | metadata |
 *   content | buffer...
 *
 * where signature is the lowercase hex HMAC-SHA256 of the four JSON frames
 * (header, parent_header, metadata, content) in that order, keyed with the
 * connection file's key. An empty key means messages are not signed and the
 * signature frame is empty.
 *
 * This module is pure: no ZeroMQ, no I/O. It turns frames into a kn_msg_t and
 * back, and it is what the fuzzer drives. */
#ifndef KN_WIRE_H
#define KN_WIRE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct kn_blob {
  unsigned char *data; /* owned unless stated otherwise */
  size_t size;
} kn_blob_t;

typedef struct kn_msg {
  kn_blob_t *idents; /* routing identities before the delimiter; owned */
  size_t n_idents;
  json_t *header;        /* owned references */
  json_t *parent_header;
  json_t *metadata;
  json_t *content;
  kn_blob_t *buffers; /* extra binary frames after content; owned */
  size_t n_buffers;
  char signature[65]; /* as received (hex HMAC), "" when unsigned */
} kn_msg_t;

/* The signing key. key may hold any bytes; len 0 disables signing. */
typedef struct kn_key {
  const unsigned char *data; /* borrowed */
  size_t len;
} kn_key_t;

#define KN_WIRE_DELIM "<IDS|MSG>"

/* Writes the hex HMAC-SHA256 of the four parts into hex (65 bytes with NUL).
 * With an empty key writes "". Returns 0, or -1 if OpenSSL fails. */
int kn_wire_sign(const kn_key_t *key, const kn_blob_t parts[4], char hex[65]);

/* Decodes a frame list. Checks the delimiter, then the signature over the raw
 * JSON frames with a constant-time compare (before parsing any JSON), then
 * parses the four JSON frames, each of which must be an object. On success
 * *out is a new message (kn_msg_destroy it). On failure returns -1, *out is
 * NULL and err says why ("bad signature", "no <IDS|MSG> delimiter",
 * "header is not a JSON object", ...). Frames are borrowed. */
int kn_wire_decode(const kn_blob_t *frames, size_t n_frames, const kn_key_t *key,
                   kn_msg_t **out, char *err, size_t err_size);

/* Encodes msg as frames, signing with key. JSON frames are compact
 * (JSON_COMPACT), and the signature is computed over exactly the bytes
 * returned. *frames is new (kn_frames_free it). Returns 0 or -1 with err. */
int kn_wire_encode(const kn_msg_t *msg, const kn_key_t *key, kn_blob_t **frames,
                   size_t *n_frames, char *err, size_t err_size);

void kn_frames_free(kn_blob_t *frames, size_t n_frames);

/* The signatures of the last KN_REPLAY_HISTORY messages received, so that a
 * message sent again (captured and replayed) is recognised, as
 * jupyter_client's Session does with its digest history. */
#define KN_REPLAY_HISTORY 16384
typedef struct kn_replay kn_replay_t;
kn_replay_t *kn_replay_new(void);
void kn_replay_destroy(kn_replay_t **r);
/* Whether signature (hex, as received) was seen among the last
 * KN_REPLAY_HISTORY; if not, remembers it, forgetting the oldest. An empty
 * signature (unsigned sessions) is never a repeat. */
bool kn_replay_seen(kn_replay_t *r, const char *signature);

/* Creates a message of type msg_type in session session_id, with a fresh
 * msg_id (uuid4), date (ISO 8601, UTC, microseconds), username "cflame" and
 * version "5.3". If parent is non-NULL its header becomes parent_header and
 * its identities are copied (so a reply routes back to the requester).
 * content is stolen (NULL means {}). Returns a new message. */
kn_msg_t *kn_msg_new(const char *msg_type, const kn_msg_t *parent, const char *session_id,
                     json_t *content);

/* Borrowed: header.msg_type, or "" when missing. */
const char *kn_msg_type(const kn_msg_t *msg);

void kn_msg_destroy(kn_msg_t **msg);

#endif
