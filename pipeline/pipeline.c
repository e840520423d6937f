/* pipeline.c -- the stage order (see pipeline.h). This file is the one place
 * that says which stage runs after which; each stage lives in its own file. */
#include "pipeline/pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/jsonio.h"

void tg_rules_preset(tg_dialect d, tg_rules_set *out)
{
    memset(out, 0, sizeof *out);
    tg_schema_rules_preset(d, &out->schema);
    tg_msg_rules_preset(d, &out->msg);
    tg_repair_rules_preset(d, &out->repair);
    out->disc.mode = TG_DISC_OFF;
    out->disc.threshold = 40;
    out->disc.search_schemas = 3;
    out->disc.max_rounds = 4;
    out->disc.list_names = 1;
    out->disc.hints = 1;
    out->disc.wordvec = 1;
}

/* The stream repair reaches the discovery intercept only through these
 * (core/ctx.h): repair sits below discovery, which uses it. */
static const tg_intercept discovery_hooks = {
    tg_discovery_is_meta, tg_discovery_stream_round, tg_discovery_final_note,
    tg_discovery_saw_call,
};

void tg_ctx_init(tg_ctx *ctx, const char *route_name, const tg_rules_set *rules,
                 const char *strip_prefix)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->route_name = route_name;
    ctx->dialect = rules->schema.dialect;
    ctx->schema = &rules->schema;
    ctx->msg = &rules->msg;
    ctx->repair = &rules->repair;
    ctx->disc = &rules->disc;
    if (rules->disc.mode != TG_DISC_OFF)
        ctx->intercept = &discovery_hooks;
    ctx->strip_prefix = strip_prefix ? strip_prefix : "_";
}

int tg_pipeline_request(json_t *body, tg_ctx *ctx, tg_error *err)
{
    ctx->stream = tg_json_is(tg_json_get(body, "stream"), JSON_TRUE);
    /* custom tools first: every stage after sees only function tools */
    tg_custom_stage(body, ctx);
    /* hygiene leaves tools as they came, but may make them from the
     * legacy functions[] */
    if (tg_hygiene_stage(body, ctx, err))
        return -1;
    json_t *tools = tg_json_get(body, "tools");
    if (json_is_array(tools)) {
        ctx->tools = json_incref(tools);
        ctx->stats.tools_in = (unsigned)json_array_size(tools);
    }
    if (tg_schema_stage(body, ctx, err))
        return -1;
    if (tg_discovery_stage(body, ctx, err))
        return -1;

    tools = tg_json_get(body, "tools");
    ctx->stats.tools_out = json_is_array(tools) ? (unsigned)json_array_size(tools) : 0;
    return 0;
}

int tg_pipeline_response(json_t *resp, tg_ctx *ctx, json_t **next_body)
{
    *next_body = NULL;
    tg_repair_response(resp, ctx);
    int rc = tg_discovery_intercept(resp, ctx, next_body);
    if (rc == 0 && ctx->legacy_functions)
        tg_repair_legacy_answer(resp);
    return rc;
}

/* ---- the raw fast path ---------------------------------------------------- */

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* p at a string: just past it (the scanner's string rule, via a one-string
 * container would be clumsier). */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

/* p at a value: returns just past it, or NULL on malformed input. */
static const char *skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p == '{' || *p == '[')
        return tg_json_value_end(p, end);
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' &&
           *p != '\r' && *p != '\t')
        p++;
    return p;
}

/* Tool arrays seen before are recognised without scanning or hashing
 * them: the cache maps a hash of an array's first bytes to [its bytes, the
 * hash of all of them], and one memcmp (much faster than hashing) proves the
 * body holds the same array. Identical bytes that form a complete JSON array
 * end where that array ended, so a match also gives the span. */
#define TG_SPAN_PREFIX 256

static uint64_t span_prefix_key(const char *v, size_t avail)
{
    return tg_hash64(v, avail < TG_SPAN_PREFIX ? avail : TG_SPAN_PREFIX, 0x7370616eULL);
}

static bool known_tools_span(tg_cache *cache, const char *v, const char *end, size_t *len,
                             uint64_t *hash)
{
    size_t avail = (size_t)(end - v);
    json_t *seen = tg_cache_get(cache, "rawspan", span_prefix_key(v, avail));
    json_t *bytes = json_array_get(seen, 0);
    size_t l = json_string_length(bytes);
    bool same = bytes && l <= avail && !memcmp(v, json_string_value(bytes), l);
    if (same) {
        *len = l;
        *hash = (uint64_t)json_integer_value(json_array_get(seen, 1));
    }
    json_decref(seen);
    return same;
}

/* Keyed as known_tools_span looks it up: by the first TG_SPAN_PREFIX bytes
 * from the array's start to the body's end (avail), so an array shorter
 * than that, and what follows it, is found again too (keyed on the
 * array's bytes alone, a short one never was). */
static void remember_tools_span(tg_cache *cache, const char *v, size_t len, size_t avail,
                                uint64_t hash)
{
    /* The bytes parsed as JSON a moment ago: valid UTF-8, no check needed. */
    json_t *seen = json_pack("[o,I]", json_stringn_nocheck(v, len), (json_int_t)hash);
    if (!seen)
        return;
    tg_cache_put(cache, "rawspan", span_prefix_key(v, avail), seen, len + 64);
    json_decref(seen);
}

/* The byte span of the value of top-level key "tools", and the hash of its
 * bytes (0 when not yet computed). False when absent, present twice, or
 * when the text is not a plain JSON object (the slow path then parses
 * everything and reports errors precisely). */
static bool find_tools(const char *raw, size_t n, tg_cache *cache, size_t *vs, size_t *ve,
                       uint64_t *hash)
{
    const char *p = raw, *end = raw + n;
    bool found = false;
    *hash = 0;
    p = skip_ws(p, end);
    if (p >= end || *p != '{')
        return false;
    p = skip_ws(p + 1, end);
    while (p < end && *p != '}') {
        if (*p != '"')
            return false;
        const char *ks = p + 1, *ke = skip_string(p, end);
        if (!ke)
            return false;
        bool is_tools = ke - ks - 1 == 5 && !memcmp(ks, "tools", 5);
        p = skip_ws(ke, end);
        if (p >= end || *p != ':')
            return false;
        p = skip_ws(p + 1, end);
        const char *v = p;
        size_t known;
        if (is_tools && !found && *v == '[' && known_tools_span(cache, v, end, &known, hash))
            p = v + known;
        else
            p = skip_value(p, end);
        if (!p)
            return false;
        if (is_tools) {
            if (found)
                return false;
            found = true;
            *vs = (size_t)(v - raw);
            *ve = (size_t)(p - raw);
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',')
            p = skip_ws(p + 1, end);
    }
    return found;
}

static bool too_deep(const char *raw, size_t n, int max_depth, tg_error *err)
{
    if (max_depth <= 0 || !tg_json_depth_exceeds(raw, n, max_depth))
        return false;
    tg_error_set(err, 400, "invalid_request_error", "json_too_deep", NULL,
                 "request body nests deeper than %d levels", max_depth);
    return true;
}

/* The fast reader keeps to max_depth itself; only a body it declines is
 * scanned for depth (before jansson, whose own limit is deeper) and then
 * handed to jansson for the error message, or for what the fast reader
 * leaves to it. */
static json_t *parse_body(const char *raw, size_t n, int max_depth, tg_error *err)
{
    json_t *body = tg_json_parse_depth(raw, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, max_depth);
    if (body || too_deep(raw, n, max_depth, err))
        return body;
    json_error_t je;
    body = json_loadb(raw, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!body)
        tg_error_set(err, 400, "invalid_request_error", "invalid_json", NULL,
                     "request body is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                     je.column);
    return body;
}

#define SMALL_BODY 4096  /* memmem costs less than the scan below this */

/* The request, parsed: the tools from the cache when these bytes were seen
 * before (only the rest of the body is parsed), else everything. */
json_t *tg_request_parse(const char *raw, size_t n, struct tg_cache *cache, int max_depth,
                         uint64_t *tools_hash, size_t *tools_bytes, tg_error *err)
{
    size_t vs, ve;
    *tools_hash = 0;
    *tools_bytes = 0;
    uint64_t h;
    /* find_tools finds only a key written "tools": a small body without
     * those bytes (a chat without tools) is not scanned for it */
    bool none = n <= SMALL_BODY && !memmem(raw, n, "\"tools\"", 7);
    if (!cache || none || !find_tools(raw, n, cache, &vs, &ve, &h) || raw[vs] != '[')
        return parse_body(raw, n, max_depth, err);
    if (!h) {
        h = tg_hash64(raw + vs, ve - vs, 0x746f6f6c73ULL);
        h = h ? h : 1;
    }
    *tools_hash = h;
    *tools_bytes = ve - vs;
    json_t *tools = tg_cache_get(cache, "rawtools", h);
    if (!tools) {
        /* the parsed array, its rewrite and their texts: about 8x the bytes */
        tg_heap_prefault((ve - vs) * 8);
        json_t *body = parse_body(raw, n, max_depth, err);
        json_t *t = tg_json_get(body, "tools");
        if (json_is_array(t)) {
            tg_cache_put(cache, "rawtools", h, t, (ve - vs) * 4);
            remember_tools_span(cache, raw + vs, ve - vs, n - vs, h);
        }
        return body;
    }
    tg_buf rest = {0};
    tg_buf_reserve(&rest, n - (ve - vs) + 1);
    tg_buf_append(&rest, raw, vs);
    tg_buf_append(&rest, "0", 1);
    tg_buf_append(&rest, raw + ve, n - ve);
    /* The cached tools passed the depth check when they were first seen. */
    json_t *body = parse_body(rest.data, rest.len, max_depth, err);
    tg_buf_free(&rest);
    if (body)
        json_object_set(body, "tools", tools);
    json_decref(tools);
    return body;
}

/* Serialize body; the tools array, which agents resend unchanged every
 * turn, is serialized once per distinct array and not copied at all: head
 * gets the body up to `"tools":` and *tools_text the cached text of the
 * array (a new reference to a string), and the body is head, that text and
 * "}". The tools key then comes last, which changes no meaning. Without a
 * cached array, head is the whole body and *tools_text NULL. */
int tg_request_dump_split(json_t *body, tg_ctx *ctx, tg_buf *head, json_t **tools_text)
{
    *tools_text = NULL;
    json_t *tools = tg_json_get(body, "tools");
    if (!ctx->cache || !json_is_array(tools) || !ctx->tools_hash)
        return tg_json_dump(body, head);
    /* The array is immutable once the stages are done, and the cache
     * entry holds a reference to it, so its address names its content. */
    uintptr_t a = (uintptr_t)tools;
    uint64_t key = tg_hash64(&a, sizeof a, 0x6f7574ULL);
    json_t *entry = tg_cache_get(ctx->cache, "toolsjson", key);
    if (entry && json_array_get(entry, 0) != tools) {
        json_decref(entry);
        entry = NULL;
    }
    if (!entry) {
        tg_buf t = {0};
        /* about the size the agent sent: one allocation, not a doubling series */
        tg_buf_reserve(&t, ctx->stats.tools_bytes_in + ctx->stats.tools_bytes_in / 4 + 64);
        tg_json_dump(tools, &t);  /* an array: cannot fail */
        entry = json_pack("[O,o]", tools, json_stringn_nocheck(t.data ? t.data : "", t.len));
        tg_cache_put(ctx->cache, "toolsjson", key, entry, t.len + 64);
        tg_buf_free(&t);
    }
    json_t *text = json_array_get(entry, 1);
    json_incref(tools);
    json_object_del(body, "tools");
    size_t start = head->len;
    tg_json_dump(body, head);  /* an object (it had tools): cannot fail */
    json_object_set_new(body, "tools", tools);
    bool empty = head->len - start <= 2;
    head->len--;  /* the closing brace */
    tg_buf_puts(head, empty ? "\"tools\":" : ",\"tools\":");
    ctx->stats.tools_bytes_out = json_string_length(text);
    *tools_text = json_incref(text);
    json_decref(entry);
    return 0;
}

int tg_request_dump(json_t *body, tg_ctx *ctx, tg_buf *out)
{
    json_t *text;
    int rc = tg_request_dump_split(body, ctx, out, &text);
    if (!rc && text) {
        tg_buf_reserve(out, json_string_length(text) + sizeof TG_REQUEST_TAIL);
        tg_buf_append(out, json_string_value(text), json_string_length(text));
        tg_buf_puts(out, TG_REQUEST_TAIL);
    }
    json_decref(text);
    return rc;
}

int tg_pipeline_request_raw(const char *raw, size_t n, tg_ctx *ctx, json_t **body_out,
                            tg_buf *out, tg_error *err)
{
    size_t tools_bytes;
    json_t *body = tg_request_parse(raw, n, ctx->cache, 0, &ctx->tools_hash, &tools_bytes, err);
    *body_out = body;
    if (!body)
        return -1;
    ctx->stats.tools_bytes_in = tools_bytes;
    if (!json_is_object(body)) {
        tg_error_set(err, 400, "invalid_request_error", "invalid_type", NULL,
                     "request body must be a JSON object");
        return -1;
    }
    if (tg_pipeline_request(body, ctx, err))
        return -1;
    tg_request_dump(body, ctx, out);  /* an object: cannot fail */
    return 0;
}
