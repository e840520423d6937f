/* stream_scan.h -- a live call's argument fragment, first chunk and
 * finish recognised by a scan of their bytes (stream_scan.c). Private to
 * repair/. */
#ifndef TG_STREAM_SCAN_H
#define TG_STREAM_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

#define TG_FRAG_ENV 6
typedef struct tg_frag_env {
    const char *key;   /* static: "id", "object", "model", ... "created" */
    const char *str;   /* the string's bytes in the event (no escapes); NULL for created */
    size_t len;
    long long num;     /* created */
} tg_frag_env;

/* Copy n envelope entries read from bytes at from to the same bytes at to
 * (their strings point into them). */
static inline void tg_frag_env_move(tg_frag_env *dst, const tg_frag_env *src, int n,
                                    const char *from, const char *to)
{
    for (int i = 0; i < n; i++) {
        dst[i] = src[i];
        if (src[i].str)
            dst[i].str = to + (src[i].str - from);
    }
}
/* An envelope tg_scan_event read before: the event's bytes up to its
 * "choices" key and the envelope it made of them. An event that starts
 * with the very same bytes is read the same up to there (the scans go
 * left to right and keep nothing else), so a scan given it compares them
 * and starts at "choices". Only tg_scan_event's (compact) reading: the
 * fragment scan accepts those bytes alike, not the other way round. */
typedef struct tg_frag_pre {
    const char *bytes;
    size_t len;
    const tg_frag_env *env;  /* strings point into bytes */
    int nenv;
} tg_frag_pre;
/* What the scan read of a live argument fragment. args is the caller's
 * buffer (appended to: the decoded arguments text). */
typedef struct tg_frag {
    const tg_frag_pre *pre;        /* in: an envelope read before, or NULL */
    size_t env_end;                /* tg_scan_event: where "choices" starts */
    tg_frag_env env[TG_FRAG_ENV];  /* the envelope keys, in the event's order */
    int nenv;
    long choice;  /* choices[0].index, -1 when absent */
    long index;   /* the call's index */
    tg_buf *args;
    size_t args_at, args_end;  /* the arguments string's bytes in the event:
                                  after its opening quote, at its closing one */
    /* tg_scan_event only (the bytes in the event, no escapes): */
    bool call;                 /* the delta is one call's start, else {} */
    const char *id, *name;     /* the call's */
    size_t id_len, name_len;
    const char *finish;        /* finish_reason, NULL for null */
    size_t finish_len;
} tg_frag;
/* True when data is surely one chunk of exactly the argument-fragment
 * shape (stream_scan.c's design comment); false when unsure. */
bool tg_scan_fragment(const char *data, size_t len, tg_frag *f);
/* The arguments string's bytes after the opening quote, decoded into out
 * as tg_scan_fragment decodes them; *end: the offset of the closing quote.
 * False where tg_scan_fragment would refuse the string. */
bool tg_scan_args(const char *data, size_t len, tg_buf *out, size_t *end);
/* True when data is surely, byte for byte, a chunk as tg_stream writes
 * it (compact, canonical escapes, the envelope's keys before choices, no
 * usage) of one of two shapes: one choice whose delta starts one call
 * ({"index","id","type":"function","function":{"name","arguments"}},
 * finish_reason null), or whose delta is {} (any finish_reason). Whether
 * tg_stream would write these very bytes is the caller's to decide
 * (stream_relay.c tg_rs_relay_event); false when unsure. */
bool tg_scan_event(const char *data, size_t len, tg_frag *f);

#endif
