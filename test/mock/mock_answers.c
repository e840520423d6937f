/* mock_answers.c -- the mock's personalities: what each scenario answers
 * (default, structured, agent, tools, parallel, discovery, status, stall,
 * reset, garbage, big, fixture, strict:<provider> with its validators in
 * mock_strict.c, and embeddings), built from the request and stream
 * helpers of mock_upstream.c. Included by mock_upstream.c (one
 * translation unit); the scripted calls of a user message (MOCK_CALL) are
 * in mock_script.c. */

static json_t *completion(const request *r, json_t *message, const char *finish)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:s}],s:{s:i,s:i,s:i}}", "id",
                     "chatcmpl-mock", "object", "chat.completion", "created",
                     (json_int_t)time(NULL), "model", request_model(r), "choices", "index", 0,
                     "message", message, "finish_reason", finish, "usage", "prompt_tokens", 5,
                     "completion_tokens", 5, "total_tokens", 10);
}

/* One chat.completion.chunk; finish may be NULL (JSON null). */
static json_t *chunk(const request *r, json_t *delta, const char *finish)
{
    return json_pack("{s:s,s:s,s:I,s:s,s:[{s:i,s:o,s:o}]}", "id", "chatcmpl-mock", "object",
                     "chat.completion.chunk", "created", (json_int_t)time(NULL), "model",
                     request_model(r), "choices", "index", 0, "delta", delta, "finish_reason",
                     finish ? json_string(finish) : json_null());
}

static int add_done(stream *s)
{
    return stream_add(s, "data: [DONE]\n\n", 14);
}

/* Closes a scripted stream: the finish chunk, [DONE], then queues it; rc is
 * the result of the events added so far. */
static enum MHD_Result end_stream(request *r, struct MHD_Connection *conn, stream *s, int rc,
                                  const char *finish)
{
    if (rc == 0)
        rc = stream_add_event(s, chunk(r, json_object(), finish));
    if (rc == 0)
        rc = add_done(s);
    if (rc) {
        stream_free(s);
        return MHD_NO;
    }
    return queue_stream(r, conn, s, MHD_SIZE_UNKNOWN, "text/event-stream");
}

static const char *first_tool_name(const request *r)
{
    json_t *tool = json_array_get(json_object_get(r->json, "tools"), 0);
    const char *name = json_string_value(json_object_get(json_object_get(tool, "function"), "name"));
    return name ? name : "mock_tool";
}

static bool answer_directive(request *r, struct MHD_Connection *conn, enum MHD_Result *ret);

static enum MHD_Result answer_default(request *r, struct MHD_Connection *conn)
{
    enum MHD_Result ret;
    if (answer_directive(r, conn, &ret))
        return ret;
    long chunks = header_long(conn, "X-Mock-Chunks", 5);
    long delay = header_long(conn, "X-Mock-Delay-Ms", 0);
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:s}", "role", "assistant", "content", "hello from mock");
        return queue_json(r, conn, 200, completion(r, msg, "stop"));
    }
    stream *s = stream_new(conn, (unsigned)delay);
    if (!s)
        return MHD_NO;
    s->stamp = header(conn, "X-Mock-Stamp") != NULL;
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", ""), NULL));
    for (long i = 0; i < chunks && rc == 0; i++) {
        char tok[48];
        snprintf(tok, sizeof(tok), "tok%ld %s", i, s->stamp ? STAMP " " : "");
        rc = stream_add_event(s, chunk(r, json_pack("{s:s}", "content", tok), NULL));
    }
    return end_stream(r, conn, s, rc, "stop");
}

/* A value for a schema node as a strict-mode model writes one: null where
 * the type allows null (an optional property made nullable), else a sample
 * of the type; objects get every property. */
static json_t *sample_value(json_t *node)
{
    json_t *type = json_object_get(node, "type");
    size_t i;
    json_t *t;
    json_array_foreach(type, i, t) if (!strcmp(json_string_value(t) ?: "", "null")) return json_null();
    json_array_foreach(json_object_get(node, "anyOf"), i, t)
        if (!strcmp(json_string_value(json_object_get(t, "type")) ?: "", "null")) return json_null();
    if (json_is_true(json_object_get(node, "nullable"))) /* the OpenAPI form (Gemini) */
        return json_null();
    if (json_array_size(json_object_get(node, "enum")))  /* as a constrained model would */
        return json_deep_copy(json_array_get(json_object_get(node, "enum"), 0));
    const char *ty = json_is_array(type) ? json_string_value(json_array_get(type, 0))
                                         : json_string_value(type);
    if (!ty)
        ty = json_object_get(node, "properties") ? "object" : "string";
    if (!strcmp(ty, "integer"))
        return json_integer(1);
    if (!strcmp(ty, "number"))
        return json_real(1.5);
    if (!strcmp(ty, "boolean"))
        return json_true();
    if (!strcmp(ty, "array"))
        return json_array();
    if (!strcmp(ty, "object")) {
        json_t *o = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(node, "properties"), k, v)
            json_object_set_new(o, k, sample_value(v));
        return o;
    }
    return json_string("x");
}

/* The schema a JSON-mode request (response_format json_object) gives in
 * its system turn, as toolgate writes a json_schema for a target that takes
 * only json_object (rule 97: "... matches this JSON Schema: {...}"); new
 * reference or NULL. A model in JSON mode follows it by being told. */
static json_t *schema_told(const request *r)
{
    const char *t = json_string_value(json_object_get(json_object_get(r->json, "response_format"),
                                                      "type"));
    json_t *first = json_array_get(json_object_get(r->json, "messages"), 0);
    const char *sys = json_string_value(json_object_get(first, "content"));
    const char *at = t && !strcmp(t, "json_object") && sys ? strstr(sys, "JSON Schema: ") : NULL;
    return at ? json_loads(at + 13, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
}

static bool wants_json_object(const request *r)
{
    json_t *told = schema_told(r);
    json_decref(told);
    return told != NULL;
}

static enum MHD_Result answer_structured(request *r, struct MHD_Connection *conn)
{
    json_t *told = schema_told(r);
    json_t *schema = told ? told : json_object_get(json_object_get(json_object_get(r->json, "response_format"),
                                                                   "json_schema"),
                                                   "schema");
    json_t *v = sample_value(schema);  /* a NULL schema samples a string */
    json_decref(told);
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    enum MHD_Result ret;
    if (!r->stream) {
        ret = queue_json(r, conn, 200,
                         completion(r, json_pack("{s:s,s:s}", "role", "assistant", "content", text), "stop"));
        free(text);
        return ret;
    }
    stream *s = stream_new(conn, 0);
    if (!s) {
        free(text);
        return MHD_NO;
    }
    size_t half = strlen(text) / 2;  /* the JSON in two pieces, as tokens come */
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s%}", "role", "assistant", "content", text, half), NULL));
    if (rc == 0)
        rc = stream_add_event(s, chunk(r, json_pack("{s:s}", "content", text + half), NULL));
    free(text);
    return end_stream(r, conn, s, rc, "stop");
}

static enum MHD_Result answer_tools(request *r, struct MHD_Connection *conn);
static const char *answered_call(const request *r, json_t **tool_msg);

/* The text the assistant turn before the tool answer carried (X-Mock-Say:
 * the agent's model said something beside its call), or NULL. */
static const char *said_before_call(const request *r)
{
    json_t *msgs = json_object_get(r->json, "messages");
    for (size_t i = json_array_size(msgs); i-- > 0;) {
        json_t *m = json_array_get(msgs, i);
        if (!strcmp(json_string_value(json_object_get(m, "role")) ?: "", "assistant"))
            return json_string_value(json_object_get(m, "content"));
    }
    return NULL;
}

/* One turn of an agent loop: the result of a call (matched by id, so a
 * proxy that rewrites ids must keep history and answer paired) ends it.
 * With X-Mock-Say the call's turn also says that text, and the answer is
 * "lost: ..." unless the history gives the text back with the call. */
static enum MHD_Result answer_agent(request *r, struct MHD_Connection *conn)
{
    json_t *tool_msg = NULL;
    if (!answered_call(r, &tool_msg))
        return answer_tools(r, conn);
    const char *result = json_string_value(json_object_get(tool_msg, "content"));
    const char *say = header(conn, "X-Mock-Say"), *said = said_before_call(r);
    char text[256];
    if (say && *say && (!said || strcmp(say, said)))
        snprintf(text, sizeof text, "lost: the turn of the call said '%.100s'", said ? said : "(nothing)");
    else
        snprintf(text, sizeof text, "result: %.200s", result ? result : "?");
    if (!r->stream)
        return queue_json(r, conn, 200,
                          completion(r, json_pack("{s:s,s:s}", "role", "assistant", "content", text),
                                     "stop"));
    stream *s = stream_new(conn, 0);
    if (!s)
        return MHD_NO;
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", text), NULL));
    return end_stream(r, conn, s, rc, "stop");
}

static enum MHD_Result answer_tools(request *r, struct MHD_Connection *conn)
{
    const char *name = first_tool_name(r);
    /* X-Mock-Say / X-Mock-Think: text and reasoning beside the call */
    const char *say = header(conn, "X-Mock-Say"), *think = header(conn, "X-Mock-Think");
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:n,s:[{s:s,s:s,s:{s:s,s:s}}]}", "role", "assistant",
                                "content", "tool_calls", "id", "call_mock1", "type", "function",
                                "function", "name", name, "arguments", "{}");
        if (say && *say)
            json_object_set_new(msg, "content", json_string(say));
        if (think && *think)
            json_object_set_new(msg, "reasoning_content", json_string(think));
        return queue_json(r, conn, 200, completion(r, msg, "tool_calls"));
    }
    stream *s = stream_new(conn, (unsigned)header_long(conn, "X-Mock-Delay-Ms", 0));
    if (!s)
        return MHD_NO;
    int rc = 0;
    if (think && *think)
        rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant",
                                                    "reasoning_content", think), NULL));
    if (say && *say && rc == 0)
        rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", say),
                                       NULL));
    json_t *first = json_pack("{s:s,s:n,s:[{s:i,s:s,s:s,s:{s:s,s:s}}]}", "role", "assistant",
                              "content", "tool_calls", "index", 0, "id", "call_mock1", "type",
                              "function", "function", "name", name, "arguments", "");
    if (rc == 0)
        rc = stream_add_event(s, chunk(r, first, NULL));
    else
        json_decref(first);
    const char *frag[] = { "{", "}" };
    for (size_t i = 0; i < 2 && rc == 0; i++)
        rc = stream_add_event(s, chunk(r, json_pack("{s:[{s:i,s:{s:s}}]}", "tool_calls", "index", 0,
                                                    "function", "arguments", frag[i]),
                                       NULL));
    return end_stream(r, conn, s, rc, "tool_calls");
}

/* ---- parallel: several tool calls in one turn ----
 * A user turn -> calls of the first N declared tools (N from X-Mock-Calls,
 * default min(3, tools); past the tool count the list is taken again, so
 * one function can be called twice in a turn), ids call_par0.., arguments
 * sampled from each tool's schema with strings "v<i>" so that no two calls
 * are alike. Streamed, each call opens with its id and name and its
 * arguments follow in three fragments (X-Mock-Arg-Pieces: n, at most one
 * per byte; the bench's time-to-first-argument test); with X-Mock-Style: gemini each call
 * comes whole in its own chunk without an index (R3); X-Mock-Ids: name gives
 * every call its function's name as id (R9), empty gives none (R2);
 * X-Mock-Untyped: 1 leaves out each call's "type" (R1; whole answers and
 * the gemini style). A turn
 * whose history ends with the tool answers of the last assistant turn -> a
 * text listing every result in call order ("results: a | b"), or
 * "unanswered: ID" for a call without its answer, so a proxy must keep
 * every pair together. */

static json_t *sample_tagged(json_t *node, const char *tag)
{
    json_t *v = sample_value(node);
    bool free_text = !json_object_get(node, "enum");
    if (json_is_string(v) && free_text) {
        json_decref(v);
        return json_string(tag);
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *p;
        json_object_foreach(json_object_get(node, "properties"), k, p) {
            json_t *cur = json_object_get(v, k);
            if (json_is_string(cur) && !json_object_get(p, "enum"))
                json_object_set_new(v, k, json_string(tag));
        }
    }
    return v;
}

/* The text for a history that ends with tool answers; NULL when the last
 * message is not one. */
static char *parallel_results(const request *r)
{
    json_t *msgs = json_object_get(r->json, "messages");
    size_t n = json_array_size(msgs);
    const char *lrole = json_string_value(json_object_get(json_array_get(msgs, n ? n - 1 : 0), "role"));
    if (n == 0 || !lrole || strcmp(lrole, "tool"))
        return NULL;
    size_t a = n;
    while (a-- > 0 && !json_array_size(json_object_get(json_array_get(msgs, a), "tool_calls")))
        ;
    tg_buf out = { 0 };
    if (a == (size_t)-1) {
        tg_buf_puts(&out, "unanswered: no assistant turn with tool_calls");
        return out.data;
    }
    json_t *calls = json_object_get(json_array_get(msgs, a), "tool_calls");
    tg_buf_puts(&out, "results: ");
    for (size_t k = 0; k < json_array_size(calls); k++) {
        const char *id = json_string_value(json_object_get(json_array_get(calls, k), "id")) ?: "";
        const char *content = NULL;
        for (size_t t = a + 1; t < n && !content; t++) {
            json_t *m = json_array_get(msgs, t);
            if (!strcmp(json_string_value(json_object_get(m, "tool_call_id")) ?: "", id))
                content = json_string_value(json_object_get(m, "content"));
        }
        if (!content) {
            out.len = 0;
            tg_buf_puts(&out, "unanswered: ");
            tg_buf_puts(&out, id);
            return out.data;
        }
        if (k)
            tg_buf_puts(&out, " | ");
        tg_buf_puts(&out, content);
    }
    return out.data;
}

static enum MHD_Result answer_text(request *r, struct MHD_Connection *conn, const char *text);

static enum MHD_Result answer_parallel(request *r, struct MHD_Connection *conn)
{
    char *text = parallel_results(r);
    if (text) {
        enum MHD_Result ret = answer_text(r, conn, text);
        free(text);
        return ret;
    }
    json_t *tools = json_object_get(r->json, "tools");
    size_t nt = json_array_size(tools);
    if (nt == 0)
        return answer_text(r, conn, "no tools");
    long n = header_long(conn, "X-Mock-Calls", nt < 3 ? (long)nt : 3);
    /* A forced tool_choice is obeyed as a model does: one call of that tool
     * (a name the list lacks is called all the same, as the agent would
     * then see it). */
    const char *forced = json_string_value(
        json_object_get(json_object_get(json_object_get(r->json, "tool_choice"), "function"), "name"));
    json_t *forced_tool = NULL;
    if (forced) {
        forced_tool = json_pack("{s:{s:s,s:O}}", "function", "name", forced, "parameters",
                                json_object_get(json_object_get(json_array_get(tools, 0), "function"), "parameters"));
        for (size_t t = 0; t < nt; t++)
            if (!strcmp(json_string_value(json_object_get(json_object_get(json_array_get(tools, t), "function"), "name")) ?: "", forced))
                json_object_set(forced_tool, "function", json_object_get(json_array_get(tools, t), "function"));
        n = 1;
    }
    const char *style = header(conn, "X-Mock-Style");
    bool gemini = style && !strcmp(style, "gemini");
    bool untyped = header_long(conn, "X-Mock-Untyped", 0) > 0;
    const char *ids = header(conn, "X-Mock-Ids");
    json_t *calls = json_array();
    for (long i = 0; i < n; i++) {
        json_t *fn = json_object_get(forced_tool ? forced_tool : json_array_get(tools, (size_t)i % nt), "function");
        char id[80], tag[24];
        snprintf(id, sizeof id, "call_par%ld", i);
        if (ids && !strcmp(ids, "name")) /* R9: native adapters' id is the function's name */
            snprintf(id, sizeof id, "%.70s", json_string_value(json_object_get(fn, "name")) ?: "");
        else if (ids && !strcmp(ids, "empty")) /* R2: Gemini's parallel calls */
            id[0] = '\0';
        snprintf(tag, sizeof tag, "v%ld", i);
        json_t *args = sample_tagged(json_object_get(fn, "parameters"), tag);
        if (!json_is_object(args)) {
            json_decref(args);
            args = json_object();
        }
        char *a = json_dumps(args, JSON_COMPACT);
        json_decref(args);
        json_t *call = json_pack("{s:s,s:s,s:{s:O,s:s}}", "id", id, "type", "function", "function",
                                 "name", json_object_get(fn, "name"), "arguments", a);
        if (untyped) /* R1 */
            json_object_del(call, "type");
        json_array_append_new(calls, call);
        free(a);
    }
    json_decref(forced_tool);
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:n,s:o}", "role", "assistant", "content", "tool_calls", calls);
        return queue_json(r, conn, 200, completion(r, msg, "tool_calls"));
    }
    stream *s = stream_new(conn, (unsigned)header_long(conn, "X-Mock-Delay-Ms", 0));
    if (!s) {
        json_decref(calls);
        return MHD_NO;
    }
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", ""), NULL));
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        json_t *fn = json_object_get(c, "function");
        const char *a = json_string_value(json_object_get(fn, "arguments"));
        if (rc)
            break;
        if (gemini) {
            rc = stream_add_event(s, chunk(r, json_pack("{s:[O]}", "tool_calls", c), NULL));
            continue;
        }
        rc = stream_add_event(s, chunk(r, json_pack("{s:[{s:I,s:O,s:s,s:{s:O,s:s}}]}", "tool_calls",
                                                    "index", (json_int_t)i, "id", json_object_get(c, "id"),
                                                    "type", "function", "function", "name",
                                                    json_object_get(fn, "name"), "arguments", ""),
                                       NULL));
        size_t len = strlen(a);
        long pieces = header_long(conn, "X-Mock-Arg-Pieces", 3);
        size_t np = pieces < 1 ? 1 : (size_t)pieces > len && len ? len : (size_t)pieces;
        for (size_t k = 0; k < np && rc == 0; k++) {
            size_t from = len * k / np, to = len * (k + 1) / np;
            rc = stream_add_event(s, chunk(r, json_pack("{s:[{s:I,s:{s:s%}}]}", "tool_calls", "index",
                                                        (json_int_t)i, "function", "arguments",
                                                        a + from, to - from),
                                           NULL));
        }
    }
    json_decref(calls);
    return end_stream(r, conn, s, rc, "tool_calls");
}

/* ---- discovery: a scripted model that follows the meta-tool protocol ----
 * user turn -> search_tools{query: the user's text} (a text "A || B || C"
 * searches query A with queries [B, C], and X-Mock-Group adds group);
 * search result ->
 * get_tool_schema{names:[first result]} (or, with X-Mock-Discovery: direct,
 * a call of that tool by its own name); schema -> call_tool{name,
 * arguments: X-Mock-Args}; the result of a real tool -> a text answer.
 * Meta-tools are found by suffix, so prefixed meta names work too.
 * X-Mock-Signature: SIG makes it Gemini 3: its calls carry
 * extra_content.google.thought_signature SIG, and a history in which one
 * of its calls lost it is refused with Gemini's 400 (R19).
 * X-Mock-Quiet: a streamed call comes without the text before it.
 * X-Mock-Refuse-Round: N refuses the request once the history holds N
 * tool answers (an inner round the proxy builds), with a 400 whose
 * message, type and code name the round.
 * Scenario discovery-fill (for agents, which send no headers): the call
 * after the schema carries a value for each required parameter (by type:
 * "x", 1, true, [], {}), so that an agent's own check of the arguments
 * lets it run, and when the search result's first hit carries its
 * parameters (toolgate's discovery_schemas, which search_tools' description
 * tells the model it can call right away) that call comes at once, without
 * the schema step; a user turn of text parts searches their joined text, the
 * last user turn's (a system turn after it is not the task), and an
 * agent's <system-reminder> blocks are no part of it.
 * Scenario discovery-toolsearch (Claude Code's own search): as
 * discovery-fill, but the user turn calls the agent's ToolSearch
 * {query: the user's text, max_results: 5} where it is offered, and its
 * result ("Tools loaded, now callable: A, B", the bridge's line, with the
 * loaded definitions in <function> blocks after it on a discovery route)
 * -> call_tool{name: A, arguments: a value for each required parameter}.
 * X-Mock-Follow-Hint: the result of a real tool that carries toolgate's
 * successor hints (<toolgate-next-tools> [...]) -> call_tool{name: the
 * first hinted tool, arguments: X-Mock-Args} instead of the text answer. */

static const char *tool_with_suffix(const request *r, const char *suffix)
{
    json_t *tools = json_object_get(r->json, "tools");
    size_t sl = strlen(suffix);
    for (size_t i = 0; i < json_array_size(tools); i++) {
        const char *n = json_string_value(
            json_object_get(json_object_get(json_array_get(tools, i), "function"), "name"));
        size_t nl = n ? strlen(n) : 0;
        if (nl >= sl && strcmp(n + nl - sl, suffix) == 0)
            return n;
    }
    return NULL;
}

/* The name of the call that the last tool message answers. */
static const char *answered_call(const request *r, json_t **tool_msg)
{
    json_t *msgs = json_object_get(r->json, "messages");
    size_t n = json_array_size(msgs);
    json_t *last = json_array_get(msgs, n ? n - 1 : 0);
    *tool_msg = last;
    if (n == 0 || strcmp(json_string_value(json_object_get(last, "role")) ?: "", "tool"))
        return NULL;
    const char *id = json_string_value(json_object_get(last, "tool_call_id"));
    for (size_t i = n; i-- > 0;) {
        json_t *calls = json_object_get(json_array_get(msgs, i), "tool_calls");
        for (size_t k = 0; k < json_array_size(calls); k++) {
            json_t *c = json_array_get(calls, k);
            if (id && !strcmp(json_string_value(json_object_get(c, "id")) ?: "", id))
                return json_string_value(json_object_get(json_object_get(c, "function"), "name"));
        }
    }
    return NULL;
}

/* X-Mock-Signature: the Gemini 3 signature of a call, as it rides on it. */
static json_t *signature_of(struct MHD_Connection *conn)
{
    const char *sig = header(conn, "X-Mock-Signature");
    return sig ? json_pack("{s:{s:s}}", "google", "thought_signature", sig) : NULL;
}

/* A call the mock made (id call_disc...) replayed without its signature. */
static bool signature_lost(const request *r, const char *sig)
{
    json_t *msgs = json_object_get(r->json, "messages");
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *calls = json_object_get(json_array_get(msgs, i), "tool_calls");
        for (size_t k = 0; k < json_array_size(calls); k++) {
            json_t *c = json_array_get(calls, k);
            const char *id = json_string_value(json_object_get(c, "id"));
            const char *got = json_string_value(json_object_get(
                json_object_get(json_object_get(c, "extra_content"), "google"),
                "thought_signature"));
            if (id && !strncmp(id, "call_disc", 9) && (!got || strcmp(got, sig)))
                return true;
        }
    }
    return false;
}

static size_t tool_answers(const request *r)
{
    json_t *msgs = json_object_get(r->json, "messages");
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(msgs); i++)
        n += !strcmp(json_string_value(json_object_get(json_array_get(msgs, i), "role")) ?: "", "tool");
    return n;
}

static enum MHD_Result answer_call(request *r, struct MHD_Connection *conn, const char *name,
                                   json_t *args)
{
    char *a = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(args);
    char id[32];
    snprintf(id, sizeof id, "call_disc%u", (unsigned)(json_array_size(json_object_get(r->json, "messages"))));
    enum MHD_Result ret;
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:n,s:[{s:s,s:s,s:{s:s,s:s}}]}", "role", "assistant",
                                "content", "tool_calls", "id", id, "type", "function",
                                "function", "name", name, "arguments", a);
        json_t *sig = signature_of(conn);
        if (sig)
            json_object_set_new(json_array_get(json_object_get(msg, "tool_calls"), 0),
                                "extra_content", sig);
        ret = queue_json(r, conn, 200, completion(r, msg, "tool_calls"));
    } else {
        stream *s = stream_new(conn, 0);
        int rc = s ? 0 : -1;
        if (rc == 0 && !header(conn, "X-Mock-Quiet"))  /* quiet: the call alone */
            rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", "Looking. "), NULL));
        if (rc == 0) {
            json_t *d = json_pack("{s:[{s:i,s:s,s:s,s:{s:s,s:s}}]}", "tool_calls", "index", 0,
                                  "id", id, "type", "function", "function", "name", name,
                                  "arguments", a);
            json_t *sig = signature_of(conn);
            if (sig)
                json_object_set_new(json_array_get(json_object_get(d, "tool_calls"), 0),
                                    "extra_content", sig);
            rc = stream_add_event(s, chunk(r, d, NULL));
        }
        if (rc == 0)
            rc = stream_add_event(s, chunk(r, json_object(), "tool_calls"));
        if (rc == 0)
            rc = add_done(s);
        ret = rc ? MHD_NO : queue_stream(r, conn, s, MHD_SIZE_UNKNOWN, "text/event-stream");
        if (rc && s)
            stream_free(s);
    }
    free(a);
    return ret;
}

static enum MHD_Result answer_text(request *r, struct MHD_Connection *conn, const char *text)
{
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:s}", "role", "assistant", "content", text);
        return queue_json(r, conn, 200, completion(r, msg, "stop"));
    }
    stream *s = stream_new(conn, 0);
    if (!s)
        return MHD_NO;
    int rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", text), NULL));
    return end_stream(r, conn, s, rc, "stop");
}

/* The first tool toolgate's successor hints name in a tool message (the
 * text after the note's opening line: "[{"name":"X", ...), or NULL; points
 * into a static buffer. */
static const char *first_hinted(json_t *tool_msg)
{
    static __thread char name[128];
    const char *c = json_string_value(json_object_get(tool_msg, "content"));
    const char *open = c ? strstr(c, "<toolgate-next-tools>") : NULL;
    const char *at = open ? strstr(open, "[{\"name\":\"") : NULL;
    if (!at)
        return NULL;
    at += 10;
    size_t n = strcspn(at, "\"");
    if (n == 0 || n >= sizeof name)
        return NULL;
    memcpy(name, at, n);
    name[n] = '\0';
    return name;
}

/* A value of each required parameter of a schema, by its type. */
static json_t *filled_args(json_t *params)
{
    json_t *out = json_object(), *props = json_object_get(params, "properties");
    json_t *req = json_object_get(params, "required");
    for (size_t i = 0; i < json_array_size(req); i++) {
        const char *k = json_string_value(json_array_get(req, i));
        json_t *t = json_object_get(json_object_get(props, k ? k : ""), "type");
        const char *ty = json_is_string(t) ? json_string_value(t)
                         : json_string_value(json_array_get(t, 0));
        json_t *v = !ty                          ? json_string("x")
                    : !strcmp(ty, "integer") || !strcmp(ty, "number") ? json_integer(1)
                    : !strcmp(ty, "boolean")     ? json_true()
                    : !strcmp(ty, "array")       ? json_array()
                    : !strcmp(ty, "object")      ? json_object()
                                                 : json_string("x");
        if (k)
            json_object_set_new(out, k, v);
        else
            json_decref(v);
    }
    return out;
}

/* Appends t to buf at o (a space between pieces) without the agent's
 * <system-reminder> blocks (Claude Code opens a user turn with one): the
 * model searches with the user's words, not the harness's. */
static size_t append_task(char *buf, size_t o, size_t len, const char *t)
{
    static const char open[] = "<system-reminder>", close[] = "</system-reminder>";
    while (*t && o + 1 < len) {
        const char *at = strstr(t, open);
        size_t n = at ? (size_t)(at - t) : strlen(t);
        while (n && strchr(" \t\r\n", *t))
            t++, n--;
        while (n && strchr(" \t\r\n", t[n - 1]))
            n--;
        if (n)
            o += (size_t)snprintf(buf + o, len - o, "%s%.*s", o ? " " : "", (int)n, t);
        if (!at)
            break;
        const char *end = strstr(at, close);
        t = end ? end + sizeof close - 1 : at + strlen(at);
    }
    return o < len ? o : len - 1;
}

/* A message's text, into buf: its content string, or its text parts
 * joined, without system reminders. */
static const char *message_text(json_t *msg, char *buf, size_t len)
{
    json_t *c = json_object_get(msg, "content");
    size_t o = 0;
    buf[0] = '\0';
    if (json_is_string(c))
        o = append_task(buf, o, len, json_string_value(c));
    for (size_t i = 0; i < json_array_size(c) && o + 1 < len; i++) {
        const char *t = json_string_value(json_object_get(json_array_get(c, i), "text"));
        if (t)
            o = append_task(buf, o, len, t);
    }
    return o ? buf : NULL;
}

/* The last user turn, else dflt: Claude Code ends its first request with
 * a system turn (its environment and the deferred tools' names), after
 * the user's. */
static json_t *last_user(const request *r, json_t *dflt)
{
    json_t *msgs = json_object_get(r->json, "messages");
    for (size_t i = json_array_size(msgs); i-- > 0;) {
        json_t *m = json_array_get(msgs, i);
        if (!strcmp(json_string_value(json_object_get(m, "role")) ?: "", "user"))
            return m;
    }
    return dflt;
}

/* search_tools' arguments for a user's text: "A || B" is two phrasings. */
static json_t *search_args(const char *text, const char *group)
{
    json_t *args = json_object(), *alts = json_array();
    const char *p = text;
    for (int first = 1;; first = 0) {
        const char *bar = strstr(p, " || ");
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (first)
            json_object_set_new(args, "query", json_stringn(p, n));
        else
            json_array_append_new(alts, json_stringn(p, n));
        if (!bar)
            break;
        p = bar + 4;
    }
    if (json_array_size(alts))
        json_object_set_new(args, "queries", alts);
    else
        json_decref(alts);
    if (group)
        json_object_set_new(args, "group", json_string(group));
    return args;
}

/* The first tool a ToolSearch result loaded ("Tools loaded, now
 * callable: A, B"), into name; its parameters from the <function> block
 * that defines it (a new reference), or NULL. */
static json_t *first_loaded(json_t *tool_msg, char *name, size_t len)
{
    static const char line[] = "Tools loaded, now callable: ";
    const char *c = json_string_value(json_object_get(tool_msg, "content"));
    const char *at = c ? strstr(c, line) : NULL;
    name[0] = '\0';
    if (!at)
        return NULL;
    at += sizeof line - 1;
    size_t n = strcspn(at, ", \n");
    if (n == 0 || n >= len)
        return NULL;
    memcpy(name, at, n);
    name[n] = '\0';
    for (const char *f = strstr(at, "<function>"); f; f = strstr(f + 1, "<function>")) {
        const char *end = strstr(f, "</function>");
        json_t *def = end ? json_loadb(f + 10, (size_t)(end - f - 10), 0, NULL) : NULL;
        const char *dn = json_string_value(json_object_get(def, "name"));
        if (dn && !strcmp(dn, name)) {
            json_t *params = json_incref(json_object_get(def, "parameters"));
            json_decref(def);
            return params;
        }
        json_decref(def);
    }
    return NULL;
}

/* discovery-toolsearch's turns: the user's -> ToolSearch, its result ->
 * call_tool of the first tool it loaded. */
static enum MHD_Result answer_toolsearch(request *r, struct MHD_Connection *conn,
                                         const char *answered, json_t *last, const char *call)
{
    if (!answered) {
        char text[2048];
        const char *q = message_text(last_user(r, last), text, sizeof text);
        return answer_call(r, conn, "ToolSearch",
                           json_pack("{s:s,s:i}", "query", q ? q : "tool", "max_results", 5));
    }
    char name[160];
    json_t *params = first_loaded(last, name, sizeof name);
    json_t *args = filled_args(params);
    json_decref(params);
    if (!name[0]) {
        json_decref(args);
        return answer_text(r, conn, "search found nothing");
    }
    if (!call)
        return answer_call(r, conn, name, args);
    return answer_call(r, conn, call, json_pack("{s:s,s:o}", "name", name, "arguments", args));
}

static enum MHD_Result answer_discovery(request *r, struct MHD_Connection *conn)
{
    const char *search = tool_with_suffix(r, "search_tools");
    const char *schema = tool_with_suffix(r, "get_tool_schema");
    const char *call = tool_with_suffix(r, "call_tool");
    json_t *last;
    const char *answered = answered_call(r, &last);
    const char *args_text = header(conn, "X-Mock-Args");
    json_t *args = json_loads(args_text ? args_text : "{}", 0, NULL);
    if (!args)
        args = json_object();
    bool direct = header(conn, "X-Mock-Discovery") && !strcmp(header(conn, "X-Mock-Discovery"), "direct");
    const char *sig = header(conn, "X-Mock-Signature");
    long refuse = header_long(conn, "X-Mock-Refuse-Round", 0);
    if (sig && signature_lost(r, sig)) {
        json_decref(args);
        /* Gemini's own words (dialects.md section 8) */
        return queue_error(r, conn, 400,
                           "Function call is missing a thought_signature in functionCall parts.",
                           "INVALID_ARGUMENT");
    }
    if (refuse > 0 && tool_answers(r) >= (size_t)refuse) {
        json_decref(args);
        char m[96];
        snprintf(m, sizeof m, "mock: round %ld refused", refuse);
        json_t *e = json_pack("{s:{s:s,s:s,s:n,s:s}}", "error", "message", m, "type",
                              "invalid_request_error", "param", "code", "round_refused");
        return queue_json(r, conn, 400, e);
    }
    if (!strcmp(r->scenario, "discovery-toolsearch") && tool_with_suffix(r, "ToolSearch") &&
        (!answered || !strcmp(answered, "ToolSearch"))) {
        json_decref(args);
        return answer_toolsearch(r, conn, answered, last, call);
    }
    if (!search || !answered) {
        json_decref(args);
        if (!search)
            return answer_text(r, conn, "no meta-tools offered");
        char text[2048];
        const char *q = message_text(last_user(r, last), text, sizeof text);
        return answer_call(r, conn, search, search_args(q ? q : "tool", header(conn, "X-Mock-Group")));
    }
    json_t *result = json_loads(json_string_value(json_object_get(last, "content")) ?: "", 0, NULL);
    enum MHD_Result ret;
    if (!strcmp(answered, search)) {
        json_t *top = json_array_get(json_object_get(result, "results"), 0);
        const char *first = json_string_value(json_object_get(top, "name"));
        bool fill = !args_text && !strcmp(r->scenario, "discovery-fill");
        if (!first)
            ret = answer_text(r, conn, "search found nothing");
        else if (direct)
            ret = answer_call(r, conn, first, json_incref(args));
        else if (fill && call && json_object_get(top, "parameters"))  /* its schema came along */
            ret = answer_call(r, conn, call, json_pack("{s:s,s:o}", "name", first, "arguments",
                                                       filled_args(json_object_get(top, "parameters"))));
        else
            ret = answer_call(r, conn, schema ? schema : search, json_pack("{s:[s]}", "names", first));
    } else if (schema && !strcmp(answered, schema)) {
        json_t *tool = json_array_get(json_object_get(result, "tools"), 0);
        const char *name = json_string_value(json_object_get(tool, "name"));
        if (name && !args_text && !strcmp(r->scenario, "discovery-fill")) {
            json_decref(args);
            args = filled_args(json_object_get(tool, "parameters"));
        }
        if (!name || !call)
            ret = answer_text(r, conn, "no schema came back");
        else
            ret = answer_call(r, conn, call, json_pack("{s:s,s:O}", "name", name, "arguments", args));
    } else if (header(conn, "X-Mock-Follow-Hint") && call && first_hinted(last)) {
        ret = answer_call(r, conn, call, json_pack("{s:s,s:O}", "name", first_hinted(last),
                                                   "arguments", args));
    } else {
        char text[512];
        snprintf(text, sizeof text, "done: %.400s",
                 json_string_value(json_object_get(last, "content")) ?: "");
        ret = answer_text(r, conn, text);
    }
    json_decref(result);
    json_decref(args);
    return ret;
}

static enum MHD_Result answer_status(request *r, struct MHD_Connection *conn)
{
    long status = header_long(conn, "X-Mock-Status", 500);
    if (status < 100 || status > 599)
        status = 500;
    char *body = strdup("{\"error\":{\"message\":\"mock failure\",\"type\":\"server_error\","
                        "\"param\":null,\"code\":null}}");
    if (!body)
        return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "application/json");
    if (status == 429 || status == 503)
        MHD_add_response_header(resp, "Retry-After", "0");
    r->status = (unsigned)status;
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Hold the request without answering; poll for a vanished client. */
static enum MHD_Result answer_stall(request *r, struct MHD_Connection *conn)
{
    uint64_t now = now_ms();
    if (r->hold_until && now >= r->hold_until)
        return answer_default(r, conn);
    if (r->dispatched) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        char c;
        ssize_t n = ci ? recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) : -1;
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            return MHD_NO; /* client gone: close our side too */
    }
    uint64_t due = now + STALL_POLL_MS;
    if (r->hold_until && r->hold_until < due)
        due = r->hold_until;
    sleep_until(conn, due);
    return MHD_YES;
}

static enum MHD_Result answer_reset(request *r, struct MHD_Connection *conn)
{
    stream *s = stream_new(conn, (unsigned)header_long(conn, "X-Mock-Delay-Ms", 0));
    if (!s)
        return MHD_NO;
    s->abort_at_end = true;
    int rc = 0;
    if (r->stream) {
        rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", "tok0 "), NULL));
        if (rc == 0)
            rc = stream_add_event(s, chunk(r, json_pack("{s:s}", "content", "tok1 "), NULL));
    } else {
        const char *part = "{\"id\":\"chatcmpl-mock\",\"object\":\"chat.completion\",\"choices\":[";
        rc = stream_add(s, part, strlen(part));
    }
    if (rc) {
        stream_free(s);
        return MHD_NO;
    }
    /* Non-stream: promise more bytes than we send, so the cut is visible. */
    return queue_stream(r, conn, s, r->stream ? MHD_SIZE_UNKNOWN : 4096,
                        r->stream ? "text/event-stream" : "application/json");
}

static enum MHD_Result answer_garbage(request *r, struct MHD_Connection *conn)
{
    if (!r->stream)
        return queue_text(r, conn, 200, "application/json", "{\"choices\": [ this is not json");
    return queue_text(r, conn, 200, "text/event-stream", "data: {not json}\n\ndata: [DONE]\n\n");
}

static enum MHD_Result answer_big(request *r, struct MHD_Connection *conn)
{
    char *text = malloc(BIG_CONTENT + 1);
    if (!text)
        return MHD_NO;
    static const char word[] = "lorem ipsum dolor sit amet ";
    for (size_t i = 0; i < BIG_CONTENT; i++)
        text[i] = word[i % (sizeof(word) - 1)];
    text[BIG_CONTENT] = '\0';
    json_t *msg = json_pack("{s:s,s:s%}", "role", "assistant", "content", text, (size_t)BIG_CONTENT);
    free(text);
    return queue_json(r, conn, 200, completion(r, msg, "stop"));
}

static char *read_file(const char *path, size_t *len)
{
    tg_buf b = { 0 };
    if (tg_buf_read_file(&b, path)) {
        tg_buf_free(&b);
        return NULL;
    }
    return tg_buf_steal(&b, len);
}

static enum MHD_Result answer_fixture(request *r, struct MHD_Connection *conn)
{
    const char *path = header(conn, "X-Mock-Fixture");
    size_t len = 0;
    char *data = path ? read_file(path, &len) : NULL;
    if (!data)
        return queue_error(r, conn, 500, "mock: cannot read X-Mock-Fixture", "server_error");
    if (!ends_with(path, ".sse")) {  /* X-Mock-Status / X-Mock-Content-Type may say otherwise */
        const char *ctype = header(conn, "X-Mock-Content-Type");
        return queue_buffer(r, conn, (unsigned)header_long(conn, "X-Mock-Status", 200),
                            ctype ? ctype : "application/json", data, len);
    }
    stream *s = stream_new(conn, (unsigned)header_long(conn, "X-Mock-Delay-Ms", 0));
    int rc = s ? 0 : -1;
    /* One piece per SSE event, so delays fall between events. */
    for (size_t at = 0; at < len && rc == 0;) {
        char *sep = memmem(data + at, len - at, "\n\n", 2);
        size_t end = sep ? (size_t)(sep - data) + 2 : len;
        rc = stream_add(s, data + at, end - at);
        at = end;
    }
    free(data);
    if (rc) {
        if (s)
            stream_free(s);
        return MHD_NO;
    }
    return queue_stream(r, conn, s, MHD_SIZE_UNKNOWN, "text/event-stream");
}

#include "mock_strict.c"

static enum MHD_Result answer_strict(request *r, struct MHD_Connection *conn)
{
    const char *provider = r->scenario + strlen("strict:");
    verdict v = strict_check(provider, r->json);
    if (v.body) {
        r->status = v.status;
        return queue_buffer(r, conn, v.status, "application/json", v.body, strlen(v.body));
    }
    const char *then = header(conn, "X-Mock-Then");
    if (then && strcmp(then, "tools") == 0)
        return answer_tools(r, conn);
    if (then && strcmp(then, "parallel") == 0)
        return answer_parallel(r, conn);
    /* a validated request answered with a scripted chat stream (the
     * conformance suite: each answer shape a bridge must turn into events) */
    if (then && strcmp(then, "fixture") == 0)
        return answer_fixture(r, conn);
    return answer_default(r, conn);
}

/* ------------------------------------------------------------------ */
/* Embeddings: POST {model, input: string | [strings]} answers OpenAI's
 * {object: list, data: [{object, index, embedding}], model, usage}, each
 * vector hash_embed's (deterministic), in reverse order so that a client
 * must read the indexes. The model picks a failure: mock-embed-status
 * (500), -stall (no answer until the client goes), -stall1 (the same for a
 * call of one input: a search's query, not a catalog's batch), -garbage (not JSON),
 * -dim (vectors of two sizes), -count (one vector short), -big (an answer
 * of 40 MB), -deep (arrays nested 100,000 deep). */

static enum MHD_Result answer_big_embedding(request *r, struct MHD_Connection *conn)
{
    static const char head[] = "{\"object\":\"list\",\"data\":[{\"index\":0,\"embedding\":[0";
    static const char tail[] = "]}]}";
    size_t zeros = 20u << 20, len = sizeof head - 1 + 2 * zeros + sizeof tail - 1;
    char *text = malloc(len), *p = text;
    if (!text)
        return MHD_NO;
    memcpy(p, head, sizeof head - 1);
    p += sizeof head - 1;
    for (size_t i = 0; i < zeros; i++, p += 2)
        memcpy(p, ",0", 2);
    memcpy(p, tail, sizeof tail - 1);
    return queue_buffer(r, conn, 200, "application/json", text, len);
}

static enum MHD_Result answer_embeddings(request *r, struct MHD_Connection *conn)
{
    r->json = r->body.data ? json_loadb(r->body.data, r->body.len, JSON_ALLOW_NUL, NULL) : NULL;
    const char *model = json_string_value(json_object_get(r->json, "model"));
    const char *mode = model && !strncmp(model, "mock-embed-", 11) ? model + 11 : "";
    json_t *in = json_object_get(r->json, "input");
    size_t n = json_is_string(in) ? 1 : json_array_size(in);
    pthread_mutex_lock(&seen.lock);
    seen.embed_calls++;
    seen.embed_inputs += (long)n;
    const char *auth = header(conn, "Authorization");
    snprintf(seen.embed_auth, sizeof seen.embed_auth, "%s", auth ? auth : "");
    pthread_mutex_unlock(&seen.lock);
    snprintf(r->scenario, sizeof r->scenario, "embed%s%s", *mode ? "-" : "", mode);
    r->dispatched = true;
    if (!r->json || (!json_is_string(in) && !json_is_array(in)))
        return queue_error(r, conn, 400, "mock: input must be a string or an array of strings",
                           "invalid_request_error");
    if (!strcmp(mode, "status"))
        return queue_error(r, conn, 500, "mock: embeddings failed", "server_error");
    if (!strcmp(mode, "stall") || (!strcmp(mode, "stall1") && n == 1)) {
        strcpy(r->scenario, "stall");  /* a resume polls whether the client is gone */
        return answer_stall(r, conn);
    }
    if (!strcmp(mode, "garbage"))
        return queue_text(r, conn, 200, "application/json", "<html>502 Bad Gateway</html>");
    if (!strcmp(mode, "big"))
        return answer_big_embedding(r, conn);
    if (!strcmp(mode, "deep")) {
        size_t depth = 100000;
        char *text = malloc(2 * depth + 1);
        if (!text)
            return MHD_NO;
        memset(text, '[', depth);
        memset(text + depth, ']', depth);
        return queue_buffer(r, conn, 200, "application/json", text, 2 * depth);
    }
    json_t *data = json_array();
    for (size_t k = 0; k < n; k++) {
        size_t i = n - 1 - k;
        if (!strcmp(mode, "count") && k + 1 == n)
            break;
        const char *text = json_is_string(in) ? json_string_value(in)
                                              : json_string_value(json_array_get(in, i));
        size_t dim = !strcmp(mode, "dim") && i % 2 ? HASH_EMBED_DIM / 2 : HASH_EMBED_DIM;
        json_array_append_new(data, json_pack("{s:s,s:I,s:o}", "object", "embedding", "index",
                                              (json_int_t)i, "embedding",
                                              hash_embed_json(text ? text : "", dim)));
    }
    return queue_json(r, conn, 200,
                      json_pack("{s:s,s:o,s:s,s:{s:I,s:I}}", "object", "list", "data", data,
                                "model", model ? model : "", "usage", "prompt_tokens",
                                (json_int_t)n, "total_tokens", (json_int_t)n));
}

