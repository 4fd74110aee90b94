/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_output: what a cell's output looks like once it reaches
 * iopub. The publish callback is captured, so each test sees the (stream,
 * text) messages a notebook would show: the order of stdout and stderr, UTF-8
 * sequences never cut, bytes that are not UTF-8 and NUL bytes, the output
 * limit and its note, and when a batch is due. */
#include <jansson.h>

#include "kn_output.h"
#include "kn_text.h"
#include "test.h"

#define MAX_MESSAGES 64
#define FFFD "\xef\xbf\xbd" /* U+FFFD REPLACEMENT CHARACTER */

/* What was published, in order. */
typedef struct capture {
  int n;
  char kind[MAX_MESSAGES];
  char *text[MAX_MESSAGES];
} capture_t;

static void capture_publish(void *ctx, char kind, const char *text) {
  capture_t *c = ctx;
  if (c->n == MAX_MESSAGES) return;
  c->kind[c->n] = kind;
  c->text[c->n++] = fl__xstrdup(text);
}

static void capture_free(capture_t *c) {
  for (int i = 0; i < c->n; i++) free(c->text[i]);
  c->n = 0;
}

/* Every message of stream kind, joined (new string). */
static char *joined(const capture_t *c, char kind) {
  fl__buf_t sb = FL__BUF_INIT;
  for (int i = 0; i < c->n; i++)
    if (c->kind[i] == kind) fl__buf_puts(&sb, c->text[i]);
  return fl__buf_take(&sb);
}

/* Whether every message is text Jupyter can carry: jansson takes it as a
 * JSON string (valid UTF-8, no NUL) and it holds no U+FFFD. */
static bool all_clean(const capture_t *c) {
  for (int i = 0; i < c->n; i++) {
    json_t *s = json_string(c->text[i]);
    bool ok = s && !strstr(c->text[i], FFFD) && *c->text[i];
    json_decref(s);
    if (!ok) return false;
  }
  return true;
}

static void test_streams_in_order(void) {
  capture_t c = {0};
  kn_output_t o;
  kn_output_init(&o, KN_OUTPUT_DEFAULT_LIMIT, capture_publish, &c);
  kn_output_add(&o, 'O', "hello ", 6, 0);
  kn_output_add(&o, 'O', "world\n", 6, 1);
  CHECK_INT(c.n, 0); /* not due yet */
  kn_output_add(&o, 'E', "warning: x\n", 11, 2);
  CHECK_INT(c.n, 1); /* stderr starting publishes what stdout had */
  kn_output_end(&o);
  CHECK_INT(c.n, 2);
  if (c.n == 2) {
    CHECK_INT(c.kind[0], 'O');
    CHECK_STR(c.text[0], "hello world\n");
    CHECK_INT(c.kind[1], 'E');
    CHECK_STR(c.text[1], "warning: x\n");
  }
  kn_output_free(&o);
  capture_free(&c);
}

/* Text cut into two adds at every byte, with a tick between them that
 * makes the first part due: whatever is published is clean UTF-8, and
 * together it is the text. */
static void test_utf8_never_cut(void) {
  static const char *const texts[] = {
      "caf\xc3\xa9",                          /* 2-byte é */
      "\xe6\x97\xa5\xe6\x9c\xac",             /* 3-byte 日本 */
      "ok \xf0\x9f\x98\x80!",                 /* 4-byte 😀 */
      "\xc3\xa9\xe2\x82\xac\xf0\x9f\x8e\x89", /* é€🎉 back to back */
  };
  for (size_t t = 0; t < FL__ARRAY_SIZE(texts); t++) {
    size_t len = strlen(texts[t]);
    for (size_t cut = 1; cut < len; cut++) {
      capture_t c = {0};
      kn_output_t o;
      kn_output_init(&o, KN_OUTPUT_DEFAULT_LIMIT, capture_publish, &c);
      kn_output_add(&o, 'O', texts[t], cut, 0);
      kn_output_tick(&o, KN_OUTPUT_BATCH_MS);
      kn_output_add(&o, 'O', texts[t] + cut, len - cut, KN_OUTPUT_BATCH_MS + 1);
      kn_output_tick(&o, 3 * KN_OUTPUT_BATCH_MS);
      kn_output_end(&o);
      char *all = joined(&c, 'O');
      CHECK(all_clean(&c));
      CHECK_STR(all, texts[t]);
      if (!all_clean(&c) || strcmp(all, texts[t]))
        fprintf(stderr, "  text %zu cut at byte %zu\n", t, cut);
      free(all);
      kn_output_free(&o);
      capture_free(&c);
    }
  }

  /* The example of the contract, step by step: the tick publishes "caf"
   * and keeps the lead byte; é arrives whole in the next message. */
  capture_t c = {0};
  kn_output_t o;
  kn_output_init(&o, KN_OUTPUT_DEFAULT_LIMIT, capture_publish, &c);
  kn_output_add(&o, 'O', "caf\xc3", 4, 100);
  kn_output_tick(&o, 100 + KN_OUTPUT_BATCH_MS);
  CHECK_INT(c.n, 1);
  if (c.n == 1) CHECK_STR(c.text[0], "caf");
  kn_output_add(&o, 'O', "\xa9", 1, 140);
  kn_output_end(&o);
  CHECK_INT(c.n, 2);
  if (c.n == 2) CHECK_STR(c.text[1], "\xc3\xa9");
  kn_output_free(&o);
  capture_free(&c);
}

/* What the user sees of bytes that are not text, through the whole path. */
static void test_invalid_and_nul(void) {
  capture_t c = {0};
  kn_output_t o;
  kn_output_init(&o, KN_OUTPUT_DEFAULT_LIMIT, capture_publish, &c);
  kn_output_add(&o, 'O', "a\377b\0c\n", 6, 0);
  kn_output_end(&o);
  CHECK_INT(c.n, 1);
  if (c.n == 1) CHECK_STR(c.text[0], "a" FFFD "bc\n");

  /* Output that is only NUL bytes publishes nothing: no empty message. */
  capture_free(&c);
  kn_output_add(&o, 'O', "\0\0\0", 3, 10);
  kn_output_end(&o);
  CHECK_INT(c.n, 0);
  kn_output_free(&o);
  capture_free(&c);
}

/* Past the limit, exactly limit bytes are shown, and the end says how many
 * more there were. */
static void test_limit(void) {
  static const struct {
    size_t limit;
    const char *chunks[4];
    const char *shown;
    const char *note; /* the count the note must name, or NULL for no note */
  } cases[] = {
      {10, {"0123456789ABCDEF"}, "0123456789", "6 more bytes"},
      {10, {"01234", "56789", "xyz"}, "0123456789", "3 more bytes"},
      {10, {"0123", "456789AB", "CD", "EFGH"}, "0123456789", "8 more bytes"},
      {10, {"0123456789"}, "0123456789", NULL},
      {10, {"01234"}, "01234", NULL},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    capture_t c = {0};
    kn_output_t o;
    kn_output_init(&o, cases[i].limit, capture_publish, &c);
    for (int k = 0; k < 4 && cases[i].chunks[k]; k++)
      kn_output_add(&o, 'O', cases[i].chunks[k], strlen(cases[i].chunks[k]), k);
    kn_output_end(&o);
    char *out = joined(&c, 'O'), *err = joined(&c, 'E');
    CHECK_STR(out, cases[i].shown);
    if (cases[i].note) {
      CHECK(strstr(err, cases[i].note) != NULL);
      CHECK(strstr(err, "limit of 10 bytes") != NULL);
    } else {
      CHECK_STR(err, "");
    }
    if (c.n) CHECK_INT(c.kind[c.n - 1], cases[i].note ? 'E' : 'O'); /* the note comes last */
    free(out);
    free(err);
    kn_output_free(&o);
    capture_free(&c);
  }
}

/* A full batch is published when it fills, without waiting for a tick; an
 * incomplete UTF-8 sequence at its end stays for the next message. */
static void test_batch_bytes(void) {
  size_t n = KN_OUTPUT_BATCH_BYTES;
  char *big = fl__xmalloc(n + 1, 1);
  memset(big, 'x', n);
  capture_t c = {0};
  kn_output_t o;
  kn_output_init(&o, KN_OUTPUT_DEFAULT_LIMIT, capture_publish, &c);
  kn_output_add(&o, 'O', big, n - 1, 0);
  CHECK_INT(c.n, 0);
  kn_output_add(&o, 'O', big, 1, 0);
  CHECK_INT(c.n, 1);
  if (c.n == 1) CHECK_INT(strlen(c.text[0]), n);
  capture_free(&c);

  /* The batch fills with the first byte of é as its last byte. */
  big[n - 1] = '\xc3';
  kn_output_add(&o, 'O', big, n, 5);
  CHECK_INT(c.n, 1);
  if (c.n == 1) CHECK_INT(strlen(c.text[0]), n - 1);
  kn_output_add(&o, 'O', "\xa9", 1, 6);
  kn_output_end(&o);
  CHECK_INT(c.n, 2);
  if (c.n == 2) CHECK_STR(c.text[1], "\xc3\xa9");
  CHECK(all_clean(&c));
  kn_output_free(&o);
  capture_free(&c);
  free(big);
}

/* kn_output_tick: the ms left until the batch is due (counted from the
 * first byte waiting), nothing published before then, -1 once nothing
 * waits. */
static void test_tick(void) {
  static const struct {
    long long now_ms;
    const char *add; /* output arriving at now_ms, before the tick */
    int left;        /* what tick returns */
    int published;   /* messages published so far */
  } steps[] = {
      {100, "a", KN_OUTPUT_BATCH_MS, 0},            /* the first byte */
      {110, NULL, KN_OUTPUT_BATCH_MS - 10, 0},      /* 10 ms later */
      {120, "b", KN_OUTPUT_BATCH_MS - 20, 0},       /* more does not delay it */
      {100 + KN_OUTPUT_BATCH_MS - 1, NULL, 1, 0},   /* 1 ms before due */
      {100 + KN_OUTPUT_BATCH_MS, NULL, -1, 1},      /* due: published */
      {100 + KN_OUTPUT_BATCH_MS + 50, NULL, -1, 1}, /* nothing waits */
  };
  capture_t c = {0};
  kn_output_t o;
  kn_output_init(&o, KN_OUTPUT_DEFAULT_LIMIT, capture_publish, &c);
  CHECK_INT(kn_output_tick(&o, 0), -1); /* nothing waits */
  for (size_t i = 0; i < FL__ARRAY_SIZE(steps); i++) {
    if (steps[i].add) kn_output_add(&o, 'O', steps[i].add, strlen(steps[i].add), steps[i].now_ms);
    CHECK_INT(kn_output_tick(&o, steps[i].now_ms), steps[i].left);
    CHECK_INT(c.n, steps[i].published);
  }
  if (c.n == 1) CHECK_STR(c.text[0], "ab");

  /* Only a lead byte waits: it is held one batch more, and not published. */
  kn_output_add(&o, 'O', "\xe2\x82", 2, 1000);
  CHECK_INT(kn_output_tick(&o, 1000 + KN_OUTPUT_BATCH_MS), KN_OUTPUT_BATCH_MS);
  CHECK_INT(c.n, 1);
  kn_output_add(&o, 'O', "\xac", 1, 1040);
  CHECK_INT(kn_output_tick(&o, 1000 + 2 * KN_OUTPUT_BATCH_MS), -1);
  CHECK_INT(c.n, 2);
  if (c.n == 2) CHECK_STR(c.text[1], "\xe2\x82\xac");
  kn_output_end(&o);
  CHECK_INT(c.n, 2);
  kn_output_free(&o);
  capture_free(&c);
}

/* kn_utf8_clean: valid UTF-8 passes unchanged, NUL bytes are left out, and
 * each byte that is not part of a valid sequence becomes U+FFFD. Every
 * result must be a string jansson accepts, since it goes into a JSON
 * message. */
static void test_utf8_clean(void) {
  static const struct {
    const char *in;
    size_t len;
    const char *out;
  } cases[] = {
      {"", 0, ""},
      {"plain ascii\n", 12, "plain ascii\n"},
      {"caf\xc3\xa9", 5, "caf\xc3\xa9"},
      {"\xe6\x97\xa5", 3, "\xe6\x97\xa5"},
      {"\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80"},
      {"\xef\xbf\xbf", 3, "\xef\xbf\xbf"},         /* U+FFFF: a noncharacter, but valid */
      {"\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf"}, /* U+10FFFF, the last code point */
      {"a\0b\0", 4, "ab"},
      {"\xff", 1, FFFD},
      {"\xff\xfe", 2, FFFD FFFD},
      {"\x80x", 2, FFFD "x"},                       /* a lone continuation byte */
      {"\xc3", 1, FFFD},                            /* a lead byte at the end */
      {"\xc3(", 2, FFFD "("},                       /* a lead byte without its continuation */
      {"\xc0\xaf", 2, FFFD FFFD},                   /* overlong '/' in two bytes */
      {"\xe0\x80\xaf", 3, FFFD FFFD FFFD},          /* overlong '/' in three bytes */
      {"\xf0\x80\x80\xaf", 4, FFFD FFFD FFFD FFFD}, /* overlong '/' in four bytes */
      {"\xed\xa0\x80", 3, FFFD FFFD FFFD},          /* U+D800, a UTF-16 surrogate */
      {"\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD}, /* U+110000, past Unicode */
      {"\xf5\x80\x80\x80", 4, FFFD FFFD FFFD FFFD}, /* a lead byte no sequence has */
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    char *got = kn_utf8_clean((const unsigned char *)cases[i].in, cases[i].len);
    CHECK_STR(got, cases[i].out);
    json_t *s = json_string(got);
    CHECK(s != NULL);
    if (strcmp(got, cases[i].out) || !s) fprintf(stderr, "  case %zu\n", i);
    json_decref(s);
    free(got);
  }
}

/* Every four-byte input over bytes that sit at the edges of UTF-8's
 * ranges: the result is always a string jansson accepts, and input that
 * jansson accepts as it is (and holds no NUL) comes out unchanged. */
static void test_utf8_clean_edges(void) {
  static const unsigned char edges[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f,
                                        0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0,
                                        0xe1, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
  size_t m = sizeof edges, rejected = 0, changed = 0;
  for (size_t k = 0; k < m * m * m * m; k++) {
    unsigned char in[4] = {edges[k % m], edges[k / m % m], edges[k / m / m % m],
                           edges[k / m / m / m]};
    char *got = kn_utf8_clean(in, sizeof in);
    json_t *s = json_string(got);
    if (!s) rejected++;
    json_decref(s);
    json_t *as_is = memchr(in, 0, sizeof in) ? NULL : json_stringn((const char *)in, sizeof in);
    if (as_is && (strlen(got) != sizeof in || memcmp(got, in, sizeof in))) changed++;
    json_decref(as_is);
    free(got);
  }
  CHECK_INT(rejected, 0);
  CHECK_INT(changed, 0);
}

/* The unfinished last line of stdout, taken as a prompt: what comes
 * before it still goes out, and nothing is taken where the line is done,
 * on stderr, or too long to be a prompt. */
static void test_partial_line(void) {
  static const struct {
    char kind;
    const char *out;
    const char *line;      /* taken, or NULL */
    const char *published; /* joined after a flush */
  } cases[] = {
      {'O', "reading\ngive a: ", "give a: ", "reading\n"},
      {'O', "give a: ", "give a: ", ""},
      {'O', "all done\n", NULL, "all done\n"},
      {'E', "give a: ", NULL, "give a: "},
      {'O', "caf\xe9: ", "caf" FFFD ": ", ""},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    capture_t c = {0};
    kn_output_t o;
    kn_output_init(&o, KN_OUTPUT_DEFAULT_LIMIT, capture_publish, &c);
    kn_output_add(&o, cases[i].kind, cases[i].out, strlen(cases[i].out), 0);
    char *line = kn_output_take_partial_line(&o);
    kn_output_flush(&o, true);
    char *all = joined(&c, cases[i].kind);
    if (cases[i].line)
      CHECK_STR(line, cases[i].line);
    else
      CHECK(line == NULL);
    CHECK_STR(all, cases[i].published);
    free(line);
    free(all);
    capture_free(&c);
    kn_output_free(&o);
  }
  char *long_line = fl__xmalloc(KN_OUTPUT_PROMPT_BYTES + 2, 1);
  memset(long_line, 'x', KN_OUTPUT_PROMPT_BYTES + 1);
  long_line[KN_OUTPUT_PROMPT_BYTES + 1] = '\0';
  capture_t c = {0};
  kn_output_t o;
  kn_output_init(&o, KN_OUTPUT_DEFAULT_LIMIT, capture_publish, &c);
  kn_output_add(&o, 'O', long_line, strlen(long_line), 0);
  CHECK(kn_output_take_partial_line(&o) == NULL);
  kn_output_free(&o);
  capture_free(&c);
  free(long_line);
}

int main(void) {
  test_streams_in_order();
  test_partial_line();
  test_utf8_never_cut();
  test_invalid_and_nul();
  test_limit();
  test_batch_bytes();
  test_tick();
  test_utf8_clean();
  test_utf8_clean_edges();
  return TEST_DONE();
}
