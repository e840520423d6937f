/* mock_script.c -- the mock driven by its prompt: a user message with
 * "MOCK_CALL <tool> key=value..." scripts the call the model makes and,
 * once its result is in the history, a text quoting it (the comment below
 * says how). Included by mock_upstream.c after mock_answers.c, whose
 * answers (answer_text, answer_call, answer_structured) it uses. */


/* ---- directive: the user's text names the call the model makes ----
 * Agents cannot send X-Mock headers, so a real agent CLI drives the mock
 * through its prompt: a user message containing
 *     MOCK_CALL <tool> key=value key='value with spaces'
 * makes the model call <tool> with those (string) arguments (once the agent offers
 * it), and, once the result of that call is in the history, answer with a
 * text that quotes it ("MOCK_RESULT: ..."), so a test sees that the agent
 * really ran the tool. On a request whose tools were collapsed behind the
 * discovery meta-tools the model searches first (search_tools{query:
 * <tool>}) and then calls call_tool{name, arguments}. A request with the
 * directive but neither the tool nor the meta-tools (an agent's title or
 * summary side request) gets a short text, or JSON for its response_format's
 * schema when it asks for one (Gemini CLI's model router). Gemini 3 models (model names
 * containing "gemini-3") sign their first call of a step with a
 * thought_signature, as Gemini does (R19); strict:gemini wants it back.
 * With MOCK_CUT_STREAMS anywhere in that message every streamed answer is
 * cut short (non-streamed ones are not), to drive an agent's fallback to
 * non-streamed requests. With MOCK_THINK there, the call comes after
 * reasoning ("reasoning_content": "MOCK_THOUGHT: calling <tool>."), as a
 * reasoning model answers, so a test sees the reasoning reach the agent.
 * A tool's result holding "MOCK_THEN <tool> key=value..." (a line of the
 * file the call read) scripts the next call: a chain of steps, each made
 * from what the last one returned, ends with the text quoting the result
 * of the last.
 * Flows of more than one step: a tool the request does not offer is
 * loaded first through Claude Code's ToolSearch ({query: "select:<tool>"})
 * when that is offered; in a value, "\n" is a newline and MOCK_NEXT is
 * MOCK_CALL, so a sub-agent's prompt can carry a directive of its own (the
 * last MOCK_CALL of a message is the one that counts). The final text
 * also quotes what the history holds after the call beyond the tool's text
 * (an image or document moved to a user message, or text drawn from it):
 * every word "tok-..." in the text of later messages and in the decoded
 * base64 of their data URLs and file parts ("MOCK_SEEN: tok-..."), so a
 * test sees that a file's bytes reached the model. MOCK_RECALL in the last
 * user message answers with every such word of the whole history
 * (answer_recall). */

typedef struct directive {
    char tool[128];
    json_t *args;     /* owned */
    size_t at;        /* index of the message that carried it */
    bool cut_streams; /* MOCK_CUT_STREAMS: a streamed answer ends unfinished */
    bool think;       /* MOCK_THINK: the call comes after reasoning_content */
} directive;

/* The text of a message's content: the string, or its text parts joined. */
static void content_text(json_t *content, tg_buf *out)
{
    if (json_is_string(content)) {
        tg_buf_puts(out, json_string_value(content));
        return;
    }
    size_t i;
    json_t *part;
    json_array_foreach(content, i, part) {
        const char *t = json_string_value(json_object_get(part, "text"));
        if (t) {
            if (out->len)
                tg_buf_puts(out, " ");
            tg_buf_puts(out, t);
        }
    }
}

/* A directive's value as the model sends it: "\n" a newline, MOCK_NEXT
 * the nested directive's MOCK_CALL. */
static json_t *directive_value(const char *p, size_t n)
{
    tg_buf b = { 0 };
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\' && i + 1 < n && p[i + 1] == 'n') {
            tg_buf_puts(&b, "\n");
            i++;
        } else if (n - i >= 9 && !memcmp(p + i, "MOCK_NEXT", 9)) {
            tg_buf_puts(&b, "MOCK_CALL");
            i += 8;
        } else {
            tg_buf_append(&b, p + i, 1);
        }
    }
    json_t *v = json_stringn(b.data ? b.data : "", b.len);
    tg_buf_free(&b);
    return v;
}

/* The arguments after the tool's name: key=value pairs up to the end of
 * the line, a value either one word or in single quotes ('cat a.txt'), all
 * strings but a bare true or false. Not JSON: some agents quote the prompt (opencode run sends it
 * in double quotes) and escape the double quotes inside. */
static json_t *directive_args(const char *p)
{
    json_t *args = json_object();
    for (;;) {
        p += strspn(p, " \t");
        size_t kl = strcspn(p, "= \t\n'\"");
        if (!kl || p[kl] != '=')
            return args;
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(kl < sizeof key ? kl : sizeof key - 1), p);
        p += kl + 1;
        size_t vl;
        if (*p == '\'') {
            p++;
            vl = strcspn(p, "'\n");
            json_object_set_new(args, key, directive_value(p, vl));
            p += vl + (p[vl] == '\'');
        } else {
            vl = strcspn(p, " \t\n\"");
            bool yes = vl == 4 && !memcmp(p, "true", 4), no = vl == 5 && !memcmp(p, "false", 5);
            json_object_set_new(args, key, yes || no ? json_boolean(yes) : directive_value(p, vl));
            p += vl;
        }
    }
}

/* Finds the last MOCK_CALL in a user message; false when there is none. */
static bool find_directive(const request *r, directive *d)
{
    json_t *msgs = json_object_get(r->json, "messages");
    for (size_t i = json_array_size(msgs); i-- > 0;) {
        json_t *m = json_array_get(msgs, i);
        if (strcmp(json_string_value(json_object_get(m, "role")) ?: "", "user"))
            continue;
        tg_buf text = { 0 };
        content_text(json_object_get(m, "content"), &text);
        const char *at = text.data ? strstr(text.data, "MOCK_CALL ") : NULL;
        for (const char *next = at; next; next = strstr(next + 1, "MOCK_CALL "))
            at = next;
        if (!at) {
            tg_buf_free(&text);
            continue;
        }
        at += strlen("MOCK_CALL ");
        size_t n = strcspn(at, " \t\n");
        snprintf(d->tool, sizeof d->tool, "%.*s", (int)(n < sizeof d->tool ? n : sizeof d->tool - 1), at);
        d->args = directive_args(at + n);
        d->at = i;
        d->cut_streams = strstr(text.data, "MOCK_CUT_STREAMS") != NULL;
        d->think = strstr(text.data, "MOCK_THINK") != NULL;
        tg_buf_free(&text);
        return d->tool[0] != '\0';
    }
    return false;
}

static bool offers_tool(const request *r, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(r->json, "tools"), i, t)
        if (!strcmp(json_string_value(json_object_get(json_object_get(t, "function"), "name")) ?: "", name))
            return true;
    return false;
}

/* The answered call the model made last (after message `from`): its
 * function object, and the text of its result in *result. NULL when the
 * model has made no call since, or its result is not in yet. */
static json_t *last_answered_call(const request *r, size_t from, tg_buf *result)
{
    json_t *msgs = json_object_get(r->json, "messages");
    size_t n = json_array_size(msgs), a = n;
    while (a-- > from + 1)
        if (json_array_size(json_object_get(json_array_get(msgs, a), "tool_calls")))
            break;
    if (a == from || a == (size_t)-1)
        return NULL;
    json_t *calls = json_object_get(json_array_get(msgs, a), "tool_calls");
    /* the last answered one: a client may merge its turns' calls into
     * one assistant message */
    for (size_t k = json_array_size(calls); k-- > 0;) {
        json_t *c = json_array_get(calls, k);
        const char *id = json_string_value(json_object_get(c, "id")) ?: "";
        for (size_t t = a + 1; t < n; t++) {
            json_t *m = json_array_get(msgs, t);
            if (!strcmp(json_string_value(json_object_get(m, "role")) ?: "", "tool") &&
                !strcmp(json_string_value(json_object_get(m, "tool_call_id")) ?: "", id)) {
                content_text(json_object_get(m, "content"), result);
                return json_object_get(c, "function");
            }
        }
    }
    return NULL;
}

/* One call of `name` with `args` (consumed), whole or streamed in three
 * argument fragments, signed for Gemini 3, after reasoning when `think`. */
static enum MHD_Result answer_named_call(request *r, struct MHD_Connection *conn, const char *name,
                                         json_t *args, bool think)
{
    char thought[200];
    snprintf(thought, sizeof thought, "MOCK_THOUGHT: calling %s.", name);
    char *a = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    if (!a)
        return MHD_NO;
    char id[40];
    snprintf(id, sizeof id, "call_dir%zu", json_array_size(json_object_get(r->json, "messages")));
    json_t *call = json_pack("{s:s,s:s,s:{s:s,s:s}}", "id", id, "type", "function", "function",
                             "name", name, "arguments", a);
    if (strstr(request_model(r), "gemini-3")) {
        char sig[64];
        snprintf(sig, sizeof sig, "mock-signature-%s", id);
        json_object_set_new(call, "extra_content",
                            json_pack("{s:{s:s}}", "google", "thought_signature", sig));
    }
    enum MHD_Result ret;
    if (!r->stream) {
        json_t *msg = json_pack("{s:s,s:n,s:[o]}", "role", "assistant", "content", "tool_calls", call);
        if (think)
            json_object_set_new(msg, "reasoning_content", json_string(thought));
        ret = queue_json(r, conn, 200, completion(r, msg, "tool_calls"));
        free(a);
        return ret;
    }
    stream *s = stream_new(conn, 0);
    int rc = s ? 0 : -1;
    if (rc == 0 && think)
        rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant",
                                                    "reasoning_content", thought), NULL));
    json_t *first = json_deep_copy(call);
    json_object_set_new(first, "index", json_integer(0));
    json_object_set_new(json_object_get(first, "function"), "arguments", json_string(""));
    if (rc == 0)
        rc = stream_add_event(s, chunk(r, json_pack("{s:s,s:n,s:[o]}", "role", "assistant",
                                                    "content", "tool_calls", first), NULL));
    else
        json_decref(first);
    size_t len = strlen(a), cut[4] = { 0, len / 3, 2 * len / 3, len };
    for (int k = 0; k < 3 && rc == 0; k++)
        rc = stream_add_event(s, chunk(r, json_pack("{s:[{s:i,s:{s:s%}}]}", "tool_calls", "index", 0,
                                                    "function", "arguments", a + cut[k],
                                                    cut[k + 1] - cut[k]),
                                       NULL));
    json_decref(call);
    free(a);
    if (!s)
        return MHD_NO;
    return end_stream(r, conn, s, rc, "tool_calls");
}

/* Appends to `out` each word "tok-..." of `p` (n bytes) not in it yet. */
static void scan_tokens(const char *p, size_t n, tg_buf *out)
{
    for (const char *at = p; (at = memmem(at, n - (size_t)(at - p), "tok-", 4));) {
        size_t w = 4;
        while (at + w < p + n && (isalnum((unsigned char)at[w]) || at[w] == '-' || at[w] == '_'))
            w++;
        char word[128];
        snprintf(word, sizeof word, " %.*s", (int)(w < 120 ? w : 120), at);
        if (out->len < 1024 && !(out->data && strstr(out->data, word)))
            tg_buf_puts(out, word);
        at += w;
    }
}

/* The bytes of base64 text (standard or URL-safe; other characters are
 * skipped), into `out`. */
static void base64_decode(const char *p, size_t n, tg_buf *out)
{
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        const char *digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *d = p[i] ? strchr(digits, p[i]) : NULL;
        int v = d ? (int)(d - digits) : p[i] == '-' ? 62 : p[i] == '_' ? 63 : -1;
        if (v < 0)
            continue;
        acc = (acc << 6 | (unsigned)v) & 0xffffff;
        if ((bits += 6) >= 8) {
            bits -= 8;
            char c = (char)(acc >> bits & 0xff);
            tg_buf_append(out, &c, 1);
        }
    }
}

/* The tokens in a message's content: in its text, and in the decoded
 * bytes of every data URL or base64 file part it holds. */
static void content_tokens(json_t *v, tg_buf *out)
{
    if (json_is_string(v)) {
        const char *t = json_string_value(v), *b64 = strstr(t, ";base64,");
        size_t n = json_string_length(v);
        if (!strncmp(t, "data:", 5) && b64) {
            tg_buf bytes = { 0 };
            base64_decode(b64 + 8, n - (size_t)(b64 + 8 - t), &bytes);
            scan_tokens(bytes.data ? bytes.data : "", bytes.len, out);
            tg_buf_free(&bytes);
        } else {
            scan_tokens(t, n, out);
        }
        return;
    }
    size_t i;
    const char *k;
    json_t *e;
    if (json_is_array(v))
        json_array_foreach(v, i, e) content_tokens(e, out);
    else if (json_is_object(v))
        json_object_foreach(v, k, e) {
            if (!strcmp(k, "file_data") && json_is_string(e) && strncmp(json_string_value(e), "data:", 5)) {
                tg_buf bytes = { 0 };
                base64_decode(json_string_value(e), json_string_length(e), &bytes);
                scan_tokens(bytes.data ? bytes.data : "", bytes.len, out);
                tg_buf_free(&bytes);
            } else {
                content_tokens(e, out);
            }
        }
}

/* What the user and tool messages after message `from` hold ("MOCK_SEEN"
 * above). */
static void seen_tokens(const request *r, size_t from, tg_buf *out)
{
    json_t *msgs = json_object_get(r->json, "messages");
    for (size_t i = from + 1; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role")) ?: "";
        if (!strcmp(role, "user") || !strcmp(role, "tool"))
            content_tokens(json_object_get(m, "content"), out);
    }
}

/* The final text: the result, on one line and cut to a readable length,
 * and the tokens seen after the directive. */
static enum MHD_Result answer_result(request *r, struct MHD_Connection *conn, const char *result,
                                     size_t from)
{
    tg_buf tokens = { 0 };
    seen_tokens(r, from, &tokens);
    char text[1600];
    int n = snprintf(text, sizeof text, "MOCK_RESULT: %.360s%s%.1100s", result,
                     tokens.len ? " MOCK_SEEN:" : "", tokens.data ? tokens.data : "");
    tg_buf_free(&tokens);
    for (int i = 0; i < n && i < (int)sizeof text; i++)
        if (text[i] == '\n' || text[i] == '\r' || text[i] == '\t')
            text[i] = ' ';
    return answer_text(r, conn, text);
}

/* A stream that stops after its first words, without a finish_reason or
 * [DONE]: what makes Claude Code send its request again unstreamed. */
static enum MHD_Result answer_cut_stream(request *r, struct MHD_Connection *conn)
{
    stream *s = stream_new(conn, 0);
    if (!s)
        return MHD_NO;
    if (stream_add_event(s, chunk(r, json_pack("{s:s,s:s}", "role", "assistant", "content", "Cut "),
                                  NULL))) {
        stream_free(s);
        return MHD_NO;
    }
    return queue_stream(r, conn, s, MHD_SIZE_UNKNOWN, "text/event-stream");
}

/* The call a result scripts next (MOCK_THEN): its tool into `tool` and its
 * arguments (returned, owned); NULL when the result scripts none. */
static json_t *next_step(const char *result, char *tool, size_t size)
{
    const char *at = result ? strstr(result, "MOCK_THEN ") : NULL;
    if (!at)
        return NULL;
    at += strlen("MOCK_THEN ");
    size_t n = strcspn(at, " \t\n");
    snprintf(tool, size, "%.*s", (int)(n < size ? n : size - 1), at);
    return tool[0] ? directive_args(at + n) : NULL;
}

/* Whether a tool result after message `from` scripted a call of `name`:
 * the calls of a chain are expected ones. */
static bool chained_to(const request *r, size_t from, const char *name)
{
    json_t *msgs = json_object_get(r->json, "messages");
    bool found = false;
    for (size_t i = from + 1; i < json_array_size(msgs) && !found; i++) {
        json_t *m = json_array_get(msgs, i);
        if (strcmp(json_string_value(json_object_get(m, "role")) ?: "", "tool"))
            continue;
        tg_buf text = { 0 };
        char tool[128];
        content_text(json_object_get(m, "content"), &text);
        json_t *args = next_step(text.data, tool, sizeof tool);
        found = args && !strcmp(tool, name);
        json_decref(args);
        tg_buf_free(&text);
    }
    return found;
}

/* The next call of a chain (through call_tool, when the tools are behind
 * discovery's meta-tools), or its tool's absence said. */
static enum MHD_Result answer_step(request *r, struct MHD_Connection *conn, const char *tool,
                                   json_t *args, bool think, const char *call_tool)
{
    if (offers_tool(r, tool))
        return answer_named_call(r, conn, tool, args, think);
    if (call_tool)
        return answer_named_call(r, conn, call_tool,
                                 json_pack("{s:s,s:o}", "name", tool, "arguments", args), think);
    json_decref(args);
    return answer_text(r, conn, "mock: no such tool offered here");
}

/* MOCK_RECALL in the last user message: the model answers with every
 * "tok-..." word its user and tool messages hold ("MOCK_RECALLED: ..."),
 * directive or not, so a test sees what a session kept of its history (a
 * turn after Claude Code's /compact, which holds no directive). */
static bool answer_recall(request *r, struct MHD_Connection *conn, enum MHD_Result *ret)
{
    json_t *msgs = json_object_get(r->json, "messages");
    size_t i = json_array_size(msgs);
    while (i-- > 0 && strcmp(json_string_value(json_object_get(json_array_get(msgs, i), "role")) ?: "", "user"))
        ;
    if (i == (size_t)-1)
        return false;
    tg_buf text = { 0 }, tokens = { 0 };
    content_text(json_object_get(json_array_get(msgs, i), "content"), &text);
    bool recall = text.data && strstr(text.data, "MOCK_RECALL");
    tg_buf_free(&text);
    if (!recall)
        return false;
    seen_tokens(r, (size_t)-1, &tokens);
    char out[1200];
    snprintf(out, sizeof out, "MOCK_RECALLED:%.1100s", tokens.data ? tokens.data : " nothing");
    tg_buf_free(&tokens);
    *ret = answer_text(r, conn, out);
    return true;
}

/* Answers a request that carries a directive; false (nothing queued) when
 * it carries none. */
static bool answer_directive(request *r, struct MHD_Connection *conn, enum MHD_Result *ret)
{
    if (answer_recall(r, conn, ret))
        return true;
    directive d = { 0 };
    if (!find_directive(r, &d))
        return false;
    if (d.cut_streams && r->stream) {
        json_decref(d.args);
        *ret = answer_cut_stream(r, conn);
        return true;
    }
    const char *search = tool_with_suffix(r, "search_tools");
    const char *call_tool = tool_with_suffix(r, "call_tool");
    tg_buf result = { 0 };
    json_t *fn = last_answered_call(r, d.at, &result);
    const char *called = fn ? json_string_value(json_object_get(fn, "name")) ?: "" : NULL;
    char next[128];
    json_t *next_args = fn ? next_step(result.data, next, sizeof next) : NULL;
    bool expected = fn && (!strcmp(called, d.tool) || (call_tool && !strcmp(called, call_tool)) ||
                           chained_to(r, d.at, called));
    if (expected && next_args)
        *ret = answer_step(r, conn, next, json_incref(next_args), d.think, call_tool);
    else if (expected)
        *ret = answer_result(r, conn, result.data ? result.data : "", d.at);
    else if (fn && search && !strcmp(called, search) && call_tool)
        *ret = answer_named_call(r, conn, call_tool,
                                 json_pack("{s:s,s:O}", "name", d.tool, "arguments", d.args), d.think);
    else if (fn && !strcmp(called, "ToolSearch") && offers_tool(r, d.tool))
        *ret = answer_named_call(r, conn, d.tool, json_incref(d.args), d.think);
    else if (fn)
        *ret = answer_result(r, conn, "unexpected call answered", d.at);
    else if (offers_tool(r, d.tool))
        *ret = answer_named_call(r, conn, d.tool, json_incref(d.args), d.think);
    else if (offers_tool(r, "ToolSearch")) {
        char query[160];
        snprintf(query, sizeof query, "select:%s", d.tool);
        *ret = answer_named_call(r, conn, "ToolSearch", json_pack("{s:s}", "query", query), d.think);
    } else if (search)
        *ret = answer_named_call(r, conn, search, json_pack("{s:s}", "query", d.tool), d.think);
    else if (json_object_get(json_object_get(r->json, "response_format"), "json_schema") ||
             wants_json_object(r))
        *ret = answer_structured(r, conn);  /* a side request for JSON (Gemini CLI's model router),
                                               or JSON mode with the schema told (rule 97) */
    else
        *ret = answer_text(r, conn, "mock: no such tool offered here");
    tg_buf_free(&result);
    json_decref(next_args);
    json_decref(d.args);
    return true;
}

