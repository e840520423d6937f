/* bridges.h -- the agent APIs' glue (proxy/bridges.c): which API a path
 * speaks, the answer in its shape, whose stored items a request reads.
 * Above proxy/request.h, below proxy/prepare.h. */
#ifndef TG_BRIDGES_H
#define TG_BRIDGES_H

#include "proxy/request.h"

/* Gemini's API (proxy/gemini.h answers its side endpoints). */
extern const bridge_api gemini_api;
/* Is the client Gemini's SDK (its x-goog-api-client header: google-genai-sdk
 * in JS, genai-py...)? Its default apiVersion is v1, so it asks GET
 * /v1/models/MODEL, which OpenAI's clients ask too. */
bool gemini_sdk(tg_req *r);
/* &gemini_api for such a path asked by Gemini's SDK, else NULL. */
const bridge_api *api_of_gemini_sdk(tg_req *r);

/* The agent API a path (past the route prefix) belongs to, or NULL. */
const bridge_api *api_of(const char *rest);
/* Whether rest is an agent API's token count (Messages' count_tokens,
 * Responses' input_tokens): no chat form, so passed through, or estimated
 * on a route that bridges the API. */
bool token_count_path(const char *rest);
/* The API a path that is no endpoint of it aims at (a refused
 * /v1/messages/.. is refused in Messages' shape), or NULL. */
const bridge_api *api_aimed_at(const char *rest);

/* Whose Responses items a request may read and leaves (itemstore.h). */
uint64_t item_owner(tg_req *r, const tg_route *route);
/* What the bridge left out of the request: X-Toolgate-Dropped, log, metric. */
void note_dropped(tg_req *r);

/* A bridged request's whole answer in the API's shape (r->answer). */
void bridge_whole_answer(tg_req *r);
/* An error answer in the shape of the request's API, when it has its own. */
void api_error_shape(tg_req *r);

/* The chat stream's text so far (r->stream.chat_out) through the bridge
 * into the client's stream; end: the stream's close too. A request with
 * no bridge has nothing to pass (its chat stream is the client's). */
void bridge_stream_out(tg_req *r, bool end);
static inline void bridge_flush(tg_req *r, bool end)
{
    if (r->prep.bridge)
        bridge_stream_out(r, end);
}

/* A passed-through stream cut short: its end, an error event in the
 * shape its API's clients read, appended to r->stream.out. */
void raw_stream_error(tg_req *r, const char *code, const char *msg);

/* GET [prefix]/v1/models[/{id}] (r->route set): 0 to pass it upstream
 * (r->prep.models says how its answer is read), -1 answered from the conf
 * (see the comment in bridges.c). Any other request: 0, untouched. */
int models_route(tg_req *r);
/* The upstream's answer to such a request, in the request's shape, or the
 * conf's list when the upstream serves none: true with the answer in r,
 * false to relay the upstream's answer as it came. */
bool models_answer(tg_req *r);

#endif
