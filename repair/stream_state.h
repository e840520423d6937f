/* stream_state.h -- the stream repair's state, which its files share:
 * repair_stream.c (the events, the ends, the API), stream_calls.c (which
 * call a fragment belongs to), stream_live.c (calls relayed as they come),
 * stream_relay.c (events that go out as the very bytes that came) and
 * stream_state.c (this state, and the chunks written from it). Each file
 * calls only those listed after it here and below it in repair/. Private
 * to repair/. */
#ifndef TG_STREAM_STATE_H
#define TG_STREAM_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/buf.h"
#include "core/ctx.h"
#include "repair/json_prefix.h"
#include "repair/stream_scan.h"

typedef struct tg_stream tg_stream;  /* as repair.h declares it */

typedef struct scall {
    long up_index;  /* upstream index hint, -1 when none came */
    char *id;       /* upstream id, NULL until a non-empty one came */
    char *name;     /* upstream name, NULL until a non-empty one came */
    tg_buf args;
    json_t *extra;  /* other fields of the call (extra_content, R18) */
    int out;        /* the agent's index, -1 until sent */
    char *agent_id; /* the id the agent got (for the discovery hooks) */
    bool complete, sent, meta;
    bool live;      /* relayed as its fragments come (see "Live calls") */
    bool closed;    /* a live call's end was handled */
    tg_jprefix jp;  /* live: how far args are the start of one object;
                       jp.pos bytes of args are with the agent */
    struct {        /* tg_rs_args_complete's scan of args so far */
        size_t pos;
        long depth;
        unsigned char st;  /* 0 before the value, 1 in it, 2 closed, 3 never */
        bool in_str, esc, ok;
    } ck;
} scall;

typedef struct schoice {
    long index;
    scall *calls;
    size_t ncalls, cap;
    long cur;         /* the most recent call, -1 */
    size_t next_out;  /* the next dense index for the agent */
    json_t *ids;      /* ids the agent has seen in this message (a set) */
    uint64_t seed;
    bool any_sent;    /* something of this choice went to the agent */
    bool finished;
    const char *finish;  /* upstream finish_reason (static copy below) */
    char finish_buf[32];
    char deferred[32];   /* a finish that came while a call's arguments were
                            still open: applied when they close, or at the end */
    bool wait_next;      /* the deferred finish came on a chunk with calls:
                            it waits for a chunk without any (R16) */
    tg_buf held;      /* R12: content not decided yet */
    tg_buf structured;/* content for a rewritten response_format schema:
                         restored as a whole at the finish */
    bool at_start;
    tg_buf rheld;     /* R12 in the reasoning: reasoning not decided yet, */
    json_t *rcalls;   /* the calls read in it (NULL: none), held to the finish */
    tg_buf rmarkup;   /* with their markup: reasoning again if they do not go */
    const char *rkey; /* the field they came in (static string) */
    tg_buf content;   /* this round's content, for discovery */
    json_t *opaque;   /* this round's reasoning fields as the provider sent
                         them ({reasoning_content: text, reasoning_details:
                         [...]}), for the discovery round that replays the
                         turn (the discovery intercept), or NULL */
    long live_open;   /* the call being relayed live, -1 */
    json_t *after;    /* chunks (text, reasoning) that came while it was
                         open: they follow it, so a call's fragments are
                         never split by other output (the bridges need
                         items one after the other); NULL until one does */
} schoice;

struct tg_stream {
    tg_ctx *ctx;
    schoice *ch;
    size_t nch;
    json_t *last;     /* the latest chunk: envelope for chunks we make */
    tg_buf first;     /* the latest chunk, when it went out unparsed (the
                         first plain one, or one tg_rs_relay_event took): parsed
                         into last only when an envelope is needed
                         (tg_rs_last_chunk), most streams never do */
    tg_frag_env env[TG_FRAG_ENV];  /* first's envelope as tg_scan_event read */
    int nenv;                      /* it (strings point into first.data), */
    size_t env_end;                /* its bytes' length in first, */
    bool env_ok;                   /* when tg_rs_relay_event kept it */
    bool r12;
    bool keep_content;
    bool finished;    /* a finish_reason came this round */
    bool done;        /* [DONE] (or the terminal error) went to the agent */
    bool saw_error;   /* upstream sent an error event */
    tg_buf bad_event; /* the first event that was not JSON (its start) */
    bool raw_sent;    /* a chunk went out unparsed: its choices had their role */
    bool hold;        /* discovery: finish and [DONE] wait for tg_stream_end */
    int live_open;    /* live calls not yet closed, over all choices */
    json_t *held_finish;  /* choice indexes whose finish is held */
    json_t *held_usage;   /* this round's usage, while held */
    json_t *wait_usage;   /* usage that came while a finish waits for the
                             next chunk (R16): it goes out with that finish */
    json_t *usage_sum;    /* usage of the rounds before (discovery) */
    unsigned rounds;      /* upstream rounds finished before this one */
    char own_id[40];      /* chunk id when upstream sent no chunk (R27) */
    char *live_name;      /* the tool tg_rs_tool_is_live answered last, */
    bool live_last;       /* its answer (most streams call one tool), */
    json_t *live_tools;   /* and the others': {upstream name: true|false} */
    uint64_t last_out_us;      /* when the agent last got bytes (monotonic µs) */
    uint64_t clock_us;         /* tg_stream_clock's time, 0: read the clock */
    long keepalive_ms;    /* TG_KEEPALIVE_MS, or what tg_stream_set_keepalive set */
    const char *fail_code, *fail_msg;  /* tg_stream_fail's, for send_truncated */
    char fail_buf[96];                 /* fail_msg naming a failed finish's word */
    unsigned no_scan;     /* tests: TG_SCAN_* fast paths turned off */
    tg_buf scratch;       /* tg_rs_live_fragment's decoded arguments, reused */
    /* tg_rs_live_fragment's shape: the last event it took after a full scan,
     * cut around its arguments string (head: up to the string's opening quote;
     * then tail: from its closing quote), and what the scan read of it. Valid
     * while s->last is the chunk it was checked against. */
    tg_buf shape;
    size_t shape_head;
    long shape_choice, shape_index;
    bool shape_ok;
    /* The event before was an argument fragment that tg_rs_live_fragment
     * (TG_RUN_LIVE) or tg_rs_held_fragment (TG_RUN_HELD) took, in the kept
     * shape, for choice s->ch[run_ch]'s live or current call: nothing has
     * run on the stream since (every other way clears it), so a fragment of
     * the same shape belongs to that call as well. */
    unsigned char run;
    size_t run_ch;
};

#define TG_RUN_LIVE 1
#define TG_RUN_HELD 2

/* --- output (stream_state.c) ---------------------------------------------- */

/* The chunk as one SSE event, serialized; and an event's bytes as they came. */
void tg_rs_send_json(tg_buf *out, const json_t *chunk);
void tg_rs_send_raw(tg_buf *out, const char *data, size_t len);
/* The latest upstream chunk, parsed now if it went out unparsed; or NULL. */
json_t *tg_rs_last_chunk(tg_stream *s);
/* A chunk for one choice in the latest chunk's envelope. Steals delta. */
json_t *tg_rs_make_chunk(tg_stream *s, long index, json_t *delta, const char *finish);
/* Queue a delta for the agent (the role first, R25). Steals delta. */
void tg_rs_queue_delta(tg_stream *s, schoice *c, json_t *events, json_t *delta,
                       const char *finish);

/* --- per-choice state (stream_state.c) ------------------------------------ */

schoice *tg_rs_choice_find(tg_stream *s, long index);
/* A new choice; its synthesized ids derive from the chunk id resp_id. */
schoice *tg_rs_choice_add(tg_stream *s, long index, const char *resp_id);
/* The choice, made from the latest chunk's id when new. */
schoice *tg_rs_choice_get(tg_stream *s, long index);
void tg_rs_calls_clear(schoice *c);
scall *tg_rs_call_new(schoice *c);
/* The call's arguments so far parse as JSON. */
bool tg_rs_args_complete(const scall *k);

/* --- sending calls (stream_state.c) --------------------------------------- */

/* Queue calls already repaired (steals calls), next dense indexes. */
void tg_rs_queue_fixed(tg_stream *s, schoice *c, json_t *calls, json_t *events);
/* Repair and queue calls (OpenAI shape; steals calls). */
void tg_rs_queue_calls(tg_stream *s, schoice *c, json_t *calls, json_t *events);
/* The call as upstream sent it, in OpenAI's shape (new reference). */
json_t *tg_rs_call_json(const scall *k);

#endif
