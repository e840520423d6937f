/* mock_strict.c -- request validators that behave like strict providers.
 *
 * Included by mock_answers.c, part of mock_upstream.c's one translation
 * unit (the Makefile compiles that one file), and by test/unit/test_field.c. For
 * scenario "strict:<provider>" the mock checks the request the way the
 * provider is documented to (docs/dialects.md sections 4, 4.1, 3 and
 * 6, 9 rules 24-30, 36, 42-49 and 58-60) and answers with that provider's verbatim error
 * body and status (section 8). Only documented checks are made: a check
 * the real provider does not do would make toolgate's tests lie.
 *
 * strict_check() returns {0, NULL} when the body is acceptable.
 */

typedef struct verdict {
    unsigned status;
    char *body; /* malloc'd JSON text, NULL = accepted */
} verdict;

static verdict verdict_json(unsigned status, json_t *body)
{
    verdict v = { status, json_dumps(body, JSON_COMPACT) };
    json_decref(body);
    return v;
}

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return true;
    return false;
}

static bool matches_charset(const char *s, const char *extra, size_t min, size_t max)
{
    size_t n = strlen(s);
    if (n < min || n > max)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              (extra && strchr(extra, *s))))
            return false;
    return true;
}

/* ------------------------------------------------------------------ */
/* Message walker shared by the strict message validators (rules 43, 47).
 * A violation is a path (json array of "key" strings and integer indexes,
 * starting with "messages", i) plus what was wrong there. */

typedef enum { V_NONE, V_EXTRA, V_NULL } vkind;

typedef struct violation {
    vkind kind;
    json_t *path;  /* ["messages", 2, "tool_calls", 0, "call_id"] */
    json_t *value; /* borrowed */
    const char *role;
} violation;

typedef struct msg_rules {
    const char *const *(*allowed)(const char *role); /* keys a message may have */
    const char *const *tool_call_keys;  /* allow-list for tool_calls[j], or NULL */
    const char *const *tool_call_deny;  /* deny-list for tool_calls[j], or NULL */
    const char *const *function_keys;   /* allow-list for tool_calls[j].function, or NULL */
    bool nulls_forbidden;               /* any null-valued key is an error */
    bool null_assistant_content_ok;     /* ... except assistant content */
} msg_rules;

static json_t *path_with(json_t *base, json_t *part)
{
    json_t *p = json_copy(base);
    json_array_append_new(p, part);
    return p;
}

/* First key starting with '_' anywhere below v. */
static bool find_underscore(json_t *v, json_t *path, violation *out)
{
    const char *k;
    json_t *child;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach(v, k, child) {
            json_t *p = path_with(path, json_string(k));
            if (k[0] == '_') {
                *out = (violation){ V_EXTRA, p, child, NULL };
                return true;
            }
            bool found = find_underscore(child, p, out);
            json_decref(p);
            if (found)
                return true;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, child) {
            json_t *p = path_with(path, json_integer((json_int_t)i));
            bool found = find_underscore(child, p, out);
            json_decref(p);
            if (found)
                return true;
        }
    }
    return false;
}

static bool check_keys(json_t *obj, json_t *path, const char *const *allow,
                       const char *const *deny, violation *out)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        if (k[0] == '_' || (allow && !in_list(k, allow)) || (deny && in_list(k, deny))) {
            *out = (violation){ V_EXTRA, path_with(path, json_string(k)), v, NULL };
            return true;
        }
    }
    return false;
}

static bool check_nulls(json_t *msg, const char *role, json_t *path, const msg_rules *rules,
                        violation *out)
{
    const char *k;
    json_t *v;
    json_object_foreach(msg, k, v) {
        if (!json_is_null(v))
            continue;
        if (rules->null_assistant_content_ok && strcmp(role, "assistant") == 0 &&
            strcmp(k, "content") == 0)
            continue;
        *out = (violation){ V_NULL, path_with(path, json_string(k)), v, NULL };
        return true;
    }
    return false;
}

static bool check_message(json_t *msg, size_t i, const msg_rules *rules, violation *out)
{
    const char *role = json_string_value(json_object_get(msg, "role"));
    if (!role)
        role = "user";
    json_t *path = json_pack("[s,I]", "messages", (json_int_t)i);
    bool bad = (rules->nulls_forbidden && check_nulls(msg, role, path, rules, out)) ||
               check_keys(msg, path, rules->allowed(role), NULL, out);
    json_t *calls = json_object_get(msg, "tool_calls");
    size_t j;
    json_t *call;
    json_array_foreach(calls, j, call) {
        if (bad)
            break;
        json_t *cpath = json_pack("[s,I,s,I]", "messages", (json_int_t)i, "tool_calls", (json_int_t)j);
        bad = check_keys(call, cpath, rules->tool_call_keys, rules->tool_call_deny, out);
        if (!bad && rules->function_keys) {
            json_t *fpath = path_with(cpath, json_string("function"));
            bad = check_keys(json_object_get(call, "function"), fpath, rules->function_keys, NULL, out);
            json_decref(fpath);
        }
        json_decref(cpath);
    }
    if (!bad)
        bad = find_underscore(msg, path, out);
    json_decref(path);
    if (bad)
        out->role = role;
    return bad;
}

static bool check_messages(json_t *req, const msg_rules *rules, violation *out)
{
    size_t i;
    json_t *msg;
    json_array_foreach(json_object_get(req, "messages"), i, msg)
        if (json_is_object(msg) && check_message(msg, i, rules, out))
            return true;
    return false;
}

/* "messages.2.tool_calls.0.x" (sep ".") or "messages[2].tool_calls[0].x" (sep NULL). */
static void path_text(json_t *path, size_t upto, const char *sep, tg_buf *b)
{
    size_t i;
    json_t *part;
    json_array_foreach(path, i, part) {
        if (i >= upto)
            break;
        if (json_is_integer(part))
        {
            if (sep)
                tg_buf_printf(b, "%s%" JSON_INTEGER_FORMAT, sep, json_integer_value(part));
            else
                tg_buf_printf(b, "[%" JSON_INTEGER_FORMAT "]", json_integer_value(part));
        }
        else
            tg_buf_printf(b, "%s%s", i ? "." : "", json_string_value(part));
    }
}

/* ------------------------------------------------------------------ */
/* Mistral: pydantic extra="forbid" (422) then message-order rules (400). */

static const char *const *mistral_allowed(const char *role)
{
    static const char *const sys[] = { "role", "content", NULL };
    static const char *const asst[] = { "role", "content", "tool_calls", "prefix", NULL };
    static const char *const tool[] = { "role", "content", "tool_call_id", "name", NULL };
    if (strcmp(role, "assistant") == 0)
        return asst;
    if (strcmp(role, "tool") == 0)
        return tool;
    return sys;
}

static verdict mistral_extra(json_t *loc, json_t *input)
{
    json_t *body = json_pack("{s:s,s:{s:[{s:s,s:o,s:s,s:O}]},s:s,s:n,s:n}", "object", "error",
                             "message", "detail", "type", "extra_forbidden", "loc", loc, "msg",
                             "Extra inputs are not permitted", "input", input ? input : json_null(),
                             "type", "invalid_request_error", "param", "code");
    return verdict_json(422, body);
}

static verdict mistral_error(const char *message, const char *type, const char *code)
{
    return verdict_json(400, json_pack("{s:s,s:s,s:s,s:n,s:s?}", "object", "error", "message",
                                       message, "type", type, "param", "code", code));
}

static bool mistral_id_ok(json_t *id)
{
    return json_is_string(id) && matches_charset(json_string_value(id), NULL, 9, 9);
}

static verdict mistral_bad_id(json_t *id)
{
    char msg[256];
    snprintf(msg, sizeof(msg), "Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.",
             json_is_string(id) ? json_string_value(id) : "None");
    return mistral_error(msg, "invalid_function_call", "3280");
}

static verdict check_mistral(json_t *req)
{
    static const char *const top_forbidden[] = { "store", "max_completion_tokens", "n",
                                                 "frequency_penalty", NULL };
    static const char *const call_keys[] = { "id", "type", "function", NULL };
    static const char *const fn_keys[] = { "name", "arguments", NULL };
    const char *k;
    json_t *v;
    json_object_foreach(req, k, v)
        if (in_list(k, top_forbidden))
            return mistral_extra(json_pack("[s,s]", "body", k), v);

    msg_rules rules = { mistral_allowed, call_keys, NULL, fn_keys, true, false };
    violation bad;
    if (check_messages(req, &rules, &bad)) {
        /* loc is ["body","messages",i,role,...rest] like pydantic's tagged union */
        json_t *loc = json_pack("[s,O,O,s]", "body", json_array_get(bad.path, 0),
                                json_array_get(bad.path, 1), bad.role);
        for (size_t i = 2; i < json_array_size(bad.path); i++)
            json_array_append(loc, json_array_get(bad.path, i));
        json_decref(bad.path);
        return mistral_extra(loc, bad.value);
    }

    json_t *tc = json_object_get(req, "tool_choice");
    static const char *const choices[] = { "auto", "none", "any", "required", NULL };
    if (tc && !(json_is_string(tc) && in_list(json_string_value(tc), choices))) {
        json_t *body = json_pack("{s:s,s:{s:[{s:s,s:[s,s],s:s,s:O}]},s:s,s:n,s:n}", "object",
                                 "error", "message", "detail", "type", "enum", "loc", "body",
                                 "tool_choice", "msg",
                                 "Input should be 'auto', 'none', 'any' or 'required'", "input", tc,
                                 "type", "invalid_request_error", "param", "code");
        return verdict_json(422, body);
    }

    json_t *msgs = json_object_get(req, "messages");
    const char *prev = NULL;
    size_t i;
    json_t *msg;
    json_array_foreach(msgs, i, msg) {
        const char *role = json_string_value(json_object_get(msg, "role"));
        if (!role)
            role = "user";
        json_t *calls = json_object_get(msg, "tool_calls");
        size_t j;
        json_t *call;
        json_array_foreach(calls, j, call)
            if (!mistral_id_ok(json_object_get(call, "id")))
                return mistral_bad_id(json_object_get(call, "id"));
        if (strcmp(role, "tool") == 0 && !mistral_id_ok(json_object_get(msg, "tool_call_id")))
            return mistral_bad_id(json_object_get(msg, "tool_call_id"));
        if (prev && ((strcmp(role, "user") == 0 && strcmp(prev, "tool") == 0) ||
                     (strcmp(role, "tool") == 0 && strcmp(prev, "user") == 0))) {
            char m[96];
            snprintf(m, sizeof(m), "Unexpected role '%s' after role '%s'", role, prev);
            return mistral_error(m, "invalid_request_message_order", "3230");
        }
        if (strcmp(role, "assistant") == 0 && json_array_size(calls) == 0) {
            json_t *c = json_object_get(msg, "content");
            if (!c || (json_is_string(c) && json_string_length(c) == 0))
                return mistral_error("Assistant message must have either content or tool_calls, but not none.",
                                     "invalid_request_error", NULL);
        }
        if (json_array_size(calls) > 0) {
            size_t answers = 0;
            for (size_t t = i + 1; t < json_array_size(msgs); t++) {
                const char *r = json_string_value(json_object_get(json_array_get(msgs, t), "role"));
                if (!r || strcmp(r, "tool") != 0)
                    break;
                answers++;
            }
            if (answers != json_array_size(calls))
                return mistral_error("Not the same number of function calls and responses",
                                     "invalid_request_error", NULL);
        }
        prev = role;
    }
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    const char *lrole = json_string_value(json_object_get(last, "role"));
    if (lrole && strcmp(lrole, "user") != 0 && strcmp(lrole, "tool") != 0 &&
        !(strcmp(lrole, "assistant") == 0 && json_is_true(json_object_get(last, "prefix")))) {
        char m[160];
        snprintf(m, sizeof(m),
                 "Expected last role User or Tool (or Assistant with prefix True) for serving but got %s",
                 lrole);
        return mistral_error(m, "invalid_request_error", NULL);
    }
    return (verdict){ 0, NULL };
}

/* ------------------------------------------------------------------ */
/* Groq, Fireworks, Cerebras: OpenAI's per-role message schema, nothing more
 * (rule 47), plus each one's top-level and null rules (48, 49). */

static const char *const *openai_role_keys(const char *role)
{
    static const char *const plain[] = { "role", "content", "name", NULL };
    static const char *const asst[] = { "role", "content", "name", "tool_calls", NULL };
    static const char *const tool[] = { "role", "content", "tool_call_id", NULL };
    if (strcmp(role, "assistant") == 0)
        return asst;
    if (strcmp(role, "tool") == 0)
        return tool;
    return plain;
}

static const char *const call_deny[] = { "extra_content", "call_id", "response_item_id", NULL };

static verdict groq_error(const char *message)
{
    return verdict_json(400, json_pack("{s:{s:s,s:s}}", "error", "message", message, "type",
                                       "invalid_request_error"));
}

static verdict groq_message_error(const violation *bad)
{
    tg_buf msgpath = { 0 }, where = { 0 }, text = { 0 };
    path_text(bad->path, 2, ".", &msgpath);
    const char *key = json_string_value(json_array_get(bad->path, json_array_size(bad->path) - 1));
    if (bad->kind == V_NULL) {
        path_text(bad->path, json_array_size(bad->path), ".", &where);
        tg_buf_printf(&text, "'%s' : for 'role:%s' the following must be satisfied[('%s' : Value is not nullable)]",
                      msgpath.data, bad->role, where.data);
    } else {
        path_text(bad->path, json_array_size(bad->path) - 1, ".", &where);
        tg_buf_printf(&text, "'%s' : for 'role:%s' the following must be satisfied[('%s' : property '%s' is unsupported)]",
                      msgpath.data, bad->role, where.data, key);
    }
    verdict v = groq_error(text.data);
    tg_buf_free(&msgpath);
    tg_buf_free(&where);
    tg_buf_free(&text);
    return v;
}

static verdict check_groq(json_t *req)
{
    static const char *const top[] = { "store", "prompt_cache_key", "verbosity", "service_tier", NULL };
    const char *k;
    json_t *v;
    json_object_foreach(req, k, v) {
        if (in_list(k, top)) {
            char m[128];
            snprintf(m, sizeof(m), "property '%s' is unsupported%s", k,
                     strcmp(k, "store") == 0 ? ", did you mean 'stop'?" : "");
            return groq_error(m);
        }
    }
    msg_rules rules = { openai_role_keys, NULL, call_deny, NULL, true, true };
    violation bad;
    if (check_messages(req, &rules, &bad)) {
        verdict r = groq_message_error(&bad);
        json_decref(bad.path);
        return r;
    }
    size_t i;
    json_t *tool;
    json_array_foreach(json_object_get(req, "tools"), i, tool) {
        json_t *fn = json_object_get(tool, "function");
        char m[256];
        if (json_is_null(json_object_get(fn, "description"))) {
            snprintf(m, sizeof(m), "'tools.%zu.function.description' : Value is not nullable", i);
            return groq_error(m);
        }
        json_t *params = json_object_get(fn, "parameters");
        if (json_object_get(params, "required") && !json_object_get(params, "properties")) {
            const char *name = json_string_value(json_object_get(fn, "name"));
            snprintf(m, sizeof(m),
                     "invalid JSON schema for tool %s, tools[%zu].function.parameters: 'required' present but 'properties' is missing",
                     name ? name : "", i);
            return groq_error(m);
        }
    }
    json_t *rf = json_object_get(req, "response_format");
    const char *rft = json_string_value(json_object_get(rf, "type"));
    if (rft && strcmp(rft, "json_object") == 0 && json_array_size(json_object_get(req, "tools")) > 0)
        return groq_error("response_format json_object cannot be combined with tool/function calling");
    return (verdict){ 0, NULL };
}

static verdict check_fireworks(json_t *req)
{
    const char *k;
    json_t *v;
    json_object_foreach(req, k, v) {
        if (strcmp(k, "vl_high_resolution_images") == 0) {
            char m[160];
            snprintf(m, sizeof(m), "Extra inputs are not permitted, field: '%s'", k);
            return verdict_json(400, json_pack("{s:{s:s,s:s,s:s}}", "error", "object", "error",
                                               "type", "invalid_request_error", "message", m));
        }
    }
    msg_rules rules = { openai_role_keys, NULL, call_deny, NULL, false, false };
    violation bad;
    if (!check_messages(req, &rules, &bad))
        return (verdict){ 0, NULL };
    tg_buf where = { 0 }, text = { 0 };
    path_text(bad.path, json_array_size(bad.path), NULL, &where);
    tg_buf_printf(&text, "Extra inputs are not permitted, field: '%s'", where.data);
    json_decref(bad.path);
    verdict r = verdict_json(400, json_pack("{s:{s:s,s:s,s:s}}", "error", "object", "error", "type",
                                            "invalid_request_error", "message", text.data));
    tg_buf_free(&where);
    tg_buf_free(&text);
    return r;
}

static verdict cerebras_error(const char *message, const char *param)
{
    return verdict_json(400, json_pack("{s:s,s:s,s:s,s:s}", "message", message, "type",
                                       "invalid_request_error", "param", param, "code",
                                       "wrong_api_format"));
}

static verdict check_cerebras(json_t *req)
{
    static const char *const top[] = { "store", "prompt_cache_key", "verbosity", "service_tier",
                                       "parallel_tool_calls", "logit_bias", "frequency_penalty",
                                       "presence_penalty", NULL };
    const char *k;
    json_t *v;
    json_object_foreach(req, k, v) {
        if (in_list(k, top)) {
            char m[160];
            snprintf(m, sizeof(m), "body.%s: property 'body.%s' is unsupported", k, k);
            return cerebras_error(m, "validation_error");
        }
    }
    msg_rules rules = { openai_role_keys, NULL, call_deny, NULL, false, false };
    violation bad;
    if (check_messages(req, &rules, &bad)) {
        /* messages.2.assistant.reasoning_content: the role follows the index */
        tg_buf where = { 0 }, text = { 0 };
        tg_buf_printf(&where, "messages.%" JSON_INTEGER_FORMAT ".%s",
                      json_integer_value(json_array_get(bad.path, 1)), bad.role);
        for (size_t i = 2; i < json_array_size(bad.path); i++) {
            json_t *p = json_array_get(bad.path, i);
            if (json_is_integer(p))
                tg_buf_printf(&where, ".%" JSON_INTEGER_FORMAT, json_integer_value(p));
            else
                tg_buf_printf(&where, ".%s", json_string_value(p));
        }
        tg_buf_printf(&text, "%s: property '%s' is unsupported", where.data, where.data);
        json_decref(bad.path);
        verdict r = cerebras_error(text.data, "validation_error");
        tg_buf_free(&where);
        tg_buf_free(&text);
        return r;
    }
    size_t i;
    json_t *tool;
    int strict_seen = -1;
    json_array_foreach(json_object_get(req, "tools"), i, tool) {
        int s = json_is_true(json_object_get(json_object_get(tool, "function"), "strict"));
        if (strict_seen >= 0 && s != strict_seen)
            return cerebras_error("Tools with mixed values for 'strict' are not allowed. Please set all tools to 'strict: true' or 'strict: false'",
                                  "tools");
        strict_seen = s;
    }
    return (verdict){ 0, NULL };
}

/* ------------------------------------------------------------------ */
/* Gemini OpenAI-compat: unknown top-level keys (rule 36) and the native
 * Schema errors for tool parameters (rules 24-30, 32), array-wrapped. */

static verdict gemini_error(const char *message, bool field_violation, const char *field)
{
    json_t *err = json_pack("{s:i,s:s,s:s}", "code", 400, "message", message, "status",
                            "INVALID_ARGUMENT");
    if (field_violation) {
        json_t *fv = json_pack("{s:s}", "description", message);
        if (field)
            json_object_set_new(fv, "field", json_string(field));
        json_object_set_new(err, "details",
                            json_pack("[{s:s,s:[o]}]", "@type",
                                      "type.googleapis.com/google.rpc.BadRequest",
                                      "fieldViolations", fv));
    }
    return verdict_json(400, json_pack("[{s:o}]", "error", err));
}

static verdict gemini_unknown(const char *name, const char *at)
{
    char m[512];
    if (at)
        snprintf(m, sizeof(m), "Invalid JSON payload received. Unknown name \"%s\" at '%s': Cannot find field.", name, at);
    else
        snprintf(m, sizeof(m), "Invalid JSON payload received. Unknown name \"%s\": Cannot find field.", name);
    return gemini_error(m, true, at);
}

static verdict gemini_field(const char *path, const char *what)
{
    char m[512];
    snprintf(m, sizeof(m), "* GenerateContentRequest.%s%s\n", path, what);
    return gemini_error(m, false, NULL);
}

static const char *const gemini_schema_keys[] = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
    "maximum", NULL
};

/* Walks one Schema node; path is like tools[0].function_declarations[2].parameters */
static verdict gemini_schema(json_t *node, const char *path, bool root)
{
    const char *k;
    json_t *v;
    json_object_foreach(node, k, v)
        if (!in_list(k, gemini_schema_keys))
            return gemini_unknown(k, path);
    json_t *type = json_object_get(node, "type");
    if (json_is_array(type)) {
        char m[512];
        snprintf(m, sizeof(m), "Invalid JSON payload received. Unknown name \"type\" at '%s': Proto field is not repeating, cannot start list.", path);
        return gemini_error(m, true, path);
    }
    const char *t = json_string_value(type);
    json_t *anyof = json_object_get(node, "anyOf");
    if (!t && !anyof)
        return gemini_field(path, ".type: must be specified when not using one_of, any_of or all_of fields");
    json_t *en = json_object_get(node, "enum");
    if (en) {
        size_t i;
        json_t *e;
        json_array_foreach(en, i, e) {
            if (!json_is_string(e)) {
                char at[512], m[640];
                snprintf(at, sizeof(at), "%s.enum[%zu]", path, i);
                char *val = json_dumps(e, JSON_ENCODE_ANY | JSON_COMPACT);
                snprintf(m, sizeof(m), "Invalid JSON payload received. Invalid value at '%s' (TYPE_STRING), %s", at, val ? val : "");
                free(val);
                return gemini_error(m, true, at);
            }
        }
        const char *fmt = json_string_value(json_object_get(node, "format"));
        if (t && strcasecmp(t, "string") != 0 && !(fmt && strcmp(fmt, "enum") == 0))
            return gemini_field(path, ".enum: only allowed for STRING type");
    }
    if (t && strcasecmp(t, "array") == 0 && !json_is_object(json_object_get(node, "items")))
        return gemini_field(path, ".items: missing field.");
    json_t *props = json_object_get(node, "properties");
    /* the root must have properties (rule 30); below it an object may
     * have none, but never an empty properties (rule 58, browser-use#7) */
    if (t && strcasecmp(t, "object") == 0 && json_object_size(props) == 0 && (root || props))
        return gemini_field(path, ".properties: should be non-empty for OBJECT type");
    /* rule 59 (opencode#11889) */
    if (t && strcasecmp(t, "object") != 0 && props)
        return gemini_field(path, ".properties: only allowed for OBJECT type");
    size_t i;
    json_t *req;
    json_array_foreach(json_object_get(node, "required"), i, req) {
        if (!json_is_string(req) || !json_object_get(props, json_string_value(req))) {
            char what[64];
            snprintf(what, sizeof(what), ".required[%zu]: property is not defined", i);
            return gemini_field(path, what);
        }
    }
    char sub[1024];
    json_object_foreach(props, k, v) {
        snprintf(sub, sizeof(sub), "%s.properties[%s]", path, k);
        verdict r = gemini_schema(v, sub, false);
        if (r.body)
            return r;
    }
    json_t *items = json_object_get(node, "items");
    if (json_is_object(items)) {
        snprintf(sub, sizeof(sub), "%s.items", path);
        verdict r = gemini_schema(items, sub, false);
        if (r.body)
            return r;
    }
    json_array_foreach(anyof, i, v) {
        snprintf(sub, sizeof(sub), "%s.any_of[%zu]", path, i);
        verdict r = gemini_schema(v, sub, false);
        if (r.body)
            return r;
    }
    return (verdict){ 0, NULL };
}

static bool gemini_name_ok(const char *n)
{
    if (!n || !((n[0] >= 'a' && n[0] <= 'z') || (n[0] >= 'A' && n[0] <= 'Z') || n[0] == '_'))
        return false;
    return matches_charset(n, "_.-", 1, 64);
}

/* R19: Gemini 3 wants the thought signature back on the first function
 * call of every model step of the current turn (after the last user
 * message); the error is the one docs/dialects.md section 8 quotes. */
static verdict gemini_signatures(json_t *req)
{
    const char *model = json_string_value(json_object_get(req, "model"));
    if (!model || !strstr(model, "gemini-3"))
        return (verdict){ 0, NULL };
    json_t *msgs = json_object_get(req, "messages");
    size_t start = 0;
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        const char *r = json_string_value(json_object_get(json_array_get(msgs, i), "role"));
        if (r && !strcmp(r, "user"))
            start = i + 1;
    }
    for (size_t i = start; i < json_array_size(msgs); i++) {
        json_t *call = json_array_get(json_object_get(json_array_get(msgs, i), "tool_calls"), 0);
        if (!call)
            continue;
        json_t *sig = json_object_get(
            json_object_get(json_object_get(call, "extra_content"), "google"), "thought_signature");
        if (json_is_string(sig) && json_string_length(sig))
            continue;
        char m[600];
        snprintf(m, sizeof m,
                 "Function call is missing a thought_signature in functionCall parts. This is "
                 "required for tools to work correctly, and missing thought_signature may lead to "
                 "degraded model performance. Additional data, function call `default_api:%s` , "
                 "position %zu. Please refer to https://ai.google.dev/gemini-api/docs/"
                 "thought-signatures for more details.",
                 json_string_value(json_object_get(json_object_get(call, "function"), "name"))
                     ?: "?",
                 i + 1);
        return gemini_error(m, false, NULL);
    }
    return (verdict){ 0, NULL };
}

/* An explicit null where a typed field is read: "Value is not a string:
 * null" (a message's refusal, github/copilot-sdk#2061; top-level ones,
 * floneum/kalosm#354); content null beside calls is OpenAI's shape and
 * taken (rule 95). */
static bool gemini_has_null(json_t *req)
{
    const char *k;
    json_t *v;
    json_object_foreach(req, k, v)
        if (json_is_null(v))
            return true;
    size_t i, j;
    json_t *m, *tc;
    json_array_foreach(json_object_get(req, "messages"), i, m) {
        json_object_foreach(m, k, v)
            if (json_is_null(v) && strcmp(k, "content"))
                return true;
        json_array_foreach(json_object_get(m, "tool_calls"), j, tc) {
            json_object_foreach(tc, k, v)
                if (json_is_null(v))
                    return true;
        }
    }
    return false;
}

static verdict check_gemini(json_t *req)
{
    if (gemini_has_null(req))
        return gemini_error("Value is not a string: null", false, NULL);
    /* The chat-completions fields Gemini's compat endpoint maps; others 400. */
    static const char *const top[] = {
        "model", "messages", "tools", "tool_choice", "stream", "stream_options", "temperature",
        "top_p", "n", "max_tokens", "max_completion_tokens", "stop", "response_format",
        "reasoning_effort", "seed", "presence_penalty", "frequency_penalty", "logprobs",
        "top_logprobs", "user", "parallel_tool_calls", "extra_body", "modalities", "audio",
        "web_search_options", NULL
    };
    const char *k;
    json_t *v;
    json_object_foreach(req, k, v)
        if (!in_list(k, top))
            return gemini_unknown(k, NULL);
    size_t i;
    json_t *tool;
    json_array_foreach(json_object_get(req, "tools"), i, tool) {
        json_t *fn = json_object_get(tool, "function");
        char path[128];
        snprintf(path, sizeof(path), "tools[0].function_declarations[%zu]", i);
        if (!gemini_name_ok(json_string_value(json_object_get(fn, "name"))))
            return gemini_field(path, ".name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.) or dashes (-), with a maximum length of 64.");
        json_t *params = json_object_get(fn, "parameters");
        if (!params)
            continue;
        strcat(path, ".parameters");
        verdict r = gemini_schema(params, path, true);
        if (r.body)
            return r;
    }
    return gemini_signatures(req);
}

/* ------------------------------------------------------------------ */
/* OpenAI: tool names (rule 12, history too), tool count (13), and arrays
 * without items. */

static verdict openai_error(const char *message, const char *param, const char *code)
{
    return verdict_json(400, json_pack("{s:{s:s,s:s,s:s,s:s}}", "error", "message", message,
                                       "type", "invalid_request_error", "param", param, "code",
                                       code));
}

static verdict openai_name(const char *name, const char *param)
{
    char m[512];
    if (name && strlen(name) > 64) {
        snprintf(m, sizeof(m), "Invalid '%s': string too long. Expected a string with maximum length 64, but got a string with length %zu instead.",
                 param, strlen(name));
        return openai_error(m, param, "string_above_max_length");
    }
    if (name && matches_charset(name, "_-", 1, 64))
        return (verdict){ 0, NULL };
    snprintf(m, sizeof(m), "Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", param);
    return openai_error(m, param, "invalid_value");
}

/* Path of the first array node without items, as OpenAI's context=(...). */
static bool array_without_items(json_t *node, tg_buf *ctx)
{
    if (!json_is_object(node))
        return false;
    json_t *type = json_object_get(node, "type");
    bool is_array = (json_is_string(type) && strcmp(json_string_value(type), "array") == 0);
    size_t i;
    json_t *t;
    json_array_foreach(type, i, t)
        if (json_is_string(t) && strcmp(json_string_value(t), "array") == 0)
            is_array = true;
    if (is_array && !json_is_object(json_object_get(node, "items")))
        return true;
    size_t mark = ctx->len;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(node, "properties"), k, v) {
        tg_buf_printf(ctx, "%s'properties', '%s'", ctx->len ? ", " : "", k);
        if (array_without_items(v, ctx))
            return true;
        ctx->len = mark;
        if (ctx->data)
            ctx->data[mark] = '\0';
    }
    tg_buf_printf(ctx, "%s'items'", ctx->len ? ", " : "");
    if (array_without_items(json_object_get(node, "items"), ctx))
        return true;
    ctx->len = mark;
    if (ctx->data)
        ctx->data[mark] = '\0';
    static const char *const comb[] = { "anyOf", "oneOf", "allOf", NULL };
    for (const char *const *c = comb; *c; c++) {
        json_array_foreach(json_object_get(node, *c), i, v) {
            tg_buf_printf(ctx, "%s'%s', %zu", ctx->len ? ", " : "", *c, i);
            if (array_without_items(v, ctx))
                return true;
            ctx->len = mark;
            if (ctx->data)
                ctx->data[mark] = '\0';
        }
    }
    return false;
}

static verdict check_openai(json_t *req)
{
    json_t *tools = json_object_get(req, "tools");
    char m[512], param[128];
    if (json_array_size(tools) > 128) {
        snprintf(m, sizeof(m), "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length %zu instead.",
                 json_array_size(tools));
        return openai_error(m, "tools", "array_above_max_length");
    }
    size_t i, j;
    json_t *tool, *msg, *call;
    json_array_foreach(tools, i, tool) {
        json_t *fn = json_object_get(tool, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        snprintf(param, sizeof(param), "tools[%zu].function.name", i);
        verdict r = openai_name(name, param);
        if (r.body)
            return r;
        tg_buf ctx = { 0 };
        if (array_without_items(json_object_get(fn, "parameters"), &ctx)) {
            snprintf(m, sizeof(m), "Invalid schema for function '%s': In context=(%s), array schema missing items.",
                     name, ctx.data ? ctx.data : "");
            snprintf(param, sizeof(param), "tools[%zu].function.parameters", i);
            tg_buf_free(&ctx);
            return openai_error(m, param, "invalid_function_parameters");
        }
        tg_buf_free(&ctx);
    }
    json_array_foreach(json_object_get(req, "messages"), i, msg) {
        json_array_foreach(json_object_get(msg, "tool_calls"), j, call) {
            const char *id = json_string_value(json_object_get(call, "id"));
            if (id && strlen(id) > 40) {  /* rule 84 */
                snprintf(param, sizeof(param), "messages[%zu].tool_calls[%zu].id", i, j);
                snprintf(m, sizeof(m), "Invalid '%s': string too long. Expected a string with maximum length 40, but got a string with length %zu instead.",
                         param, strlen(id));
                return openai_error(m, param, "string_above_max_length");
            }
            snprintf(param, sizeof(param), "messages[%zu].tool_calls[%zu].function.name", i, j);
            verdict r = openai_name(json_string_value(json_object_get(json_object_get(call, "function"), "name")), param);
            if (r.body)
                return r;
        }
    }
    return (verdict){ 0, NULL };
}

/* ------------------------------------------------------------------ */
/* Anthropic (OpenAI-compat endpoint, errors in native wording): rules 37-39. */

static verdict anthropic_error(const char *message)
{
    return verdict_json(400, json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "type",
                                       "invalid_request_error", "message", message));
}

/* Anthropic refuses a property key outside ^[a-zA-Z0-9_.-]{1,64}$
 * ("tools.134.custom.input_schema.properties: Property keys should match
 * pattern ...", freee-mcp#15, Teamwork-MCP#8, claude-code#92648: all at the
 * root; checked here at every level, under properties, items and the
 * combinators). Returns the offending key's path, or false. */
static bool anthropic_bad_key(json_t *node, char *path, size_t cap, int depth)
{
    if (!json_is_object(node) || depth > 64)
        return false;
    const char *k;
    json_t *v;
    json_t *props = json_object_get(node, "properties");
    json_object_foreach(props, k, v) {
        if (!matches_charset(k, "_.-", 1, 64))
            return true;
        size_t len = strlen(path);
        snprintf(path + len, cap - len, ".properties.%s", k);
        if (anthropic_bad_key(v, path, cap, depth + 1))
            return true;
        path[len] = 0;
    }
    static const char *const subs[] = {"items", "additionalProperties", NULL};
    for (const char *const *s = subs; *s; s++)
        if (anthropic_bad_key(json_object_get(node, *s), path, cap, depth + 1))
            return true;
    static const char *const lists[] = {"anyOf", "oneOf", "allOf", NULL};
    for (const char *const *l = lists; *l; l++) {
        size_t i;
        json_array_foreach(json_object_get(node, *l), i, v)
            if (anthropic_bad_key(v, path, cap, depth + 1))
                return true;
    }
    return false;
}

static verdict check_anthropic(json_t *req)
{
    char m[512];
    size_t i, j;
    json_t *tool, *msg, *call;
    json_t *tools = json_object_get(req, "tools");
    json_array_foreach(tools, i, tool) {
        json_t *fn = json_object_get(tool, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (!name || !matches_charset(name, "_-", 1, 128)) {
            snprintf(m, sizeof(m), "tools.%zu.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i);
            return anthropic_error(m);
        }
        for (size_t o = 0; o < i; o++) {
            const char *other = json_string_value(json_object_get(json_object_get(json_array_get(tools, o), "function"), "name"));
            if (other && strcmp(other, name) == 0)
                return anthropic_error("tools: Tool names must be unique.");
        }
        json_t *params = json_object_get(fn, "parameters");
        if (!params)
            continue;
        const char *t = json_string_value(json_object_get(params, "type"));
        if (!t || strcmp(t, "object") != 0) {
            snprintf(m, sizeof(m), "tools.%zu.custom.input_schema.type: %s", i,
                     t ? "Input should be 'object'" : "Field required");
            return anthropic_error(m);
        }
        if (json_object_get(params, "anyOf") || json_object_get(params, "oneOf") ||
            json_object_get(params, "allOf")) {
            snprintf(m, sizeof(m), "tools.%zu.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level", i);
            return anthropic_error(m);
        }
        char kp[256] = "";
        if (anthropic_bad_key(params, kp, sizeof kp, 0)) {
            snprintf(m, sizeof(m), "tools.%zu.custom.input_schema%s.properties: Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'", i, kp);
            return anthropic_error(m);
        }
    }
    json_array_foreach(json_object_get(req, "messages"), i, msg) {
        json_array_foreach(json_object_get(msg, "tool_calls"), j, call) {
            const char *id = json_string_value(json_object_get(call, "id"));
            if (!id || !matches_charset(id, "_-", 1, SIZE_MAX)) {
                snprintf(m, sizeof(m), "messages.%zu.content.%zu.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'", i, j);
                return anthropic_error(m);
            }
        }
    }
    return (verdict){ 0, NULL };
}

/* Vertex takes what the Gemini API takes, but a node holding anyOf may hold
 * nothing else (docs/dialects.md rule 60; litellm#11164, opencode#15795). */
static verdict vertex_anyof(json_t *node, const char *fn, const char *path)
{
    if (!json_is_object(node))
        return (verdict){ 0, NULL };
    if (json_object_get(node, "anyOf") && json_object_size(node) > 1) {
        char m[768];
        snprintf(m, sizeof(m), "Unable to submit request because `%s` functionDeclaration `%s` schema "
                 "specified other fields alongside any_of. When using any_of, it must be the only "
                 "field set. Learn more: "
                 "https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling",
                 fn, path);
        return gemini_error(m, false, NULL);
    }
    char sub[1024];
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(node, "properties"), k, v) {
        snprintf(sub, sizeof(sub), "%s.%s", path, k);
        verdict r = vertex_anyof(v, fn, sub);
        if (r.body)
            return r;
    }
    snprintf(sub, sizeof(sub), "%s.items", path);
    verdict r = vertex_anyof(json_object_get(node, "items"), fn, sub);
    if (r.body)
        return r;
    size_t i;
    json_array_foreach(json_object_get(node, "anyOf"), i, v) {
        snprintf(sub, sizeof(sub), "%s.any_of[%zu]", path, i);
        r = vertex_anyof(v, fn, sub);
        if (r.body)
            return r;
    }
    return (verdict){ 0, NULL };
}

static verdict check_vertex(json_t *req)
{
    size_t i;
    json_t *tool;
    json_array_foreach(json_object_get(req, "tools"), i, tool) {
        json_t *fn = json_object_get(tool, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        verdict r = vertex_anyof(json_object_get(fn, "parameters"), name ? name : "?", "parameters");
        if (r.body)
            return r;
    }
    return check_gemini(req);
}

/* ------------------------------------------------------------------ */

/* Every strict provider takes text alone in a tool message (OpenAI's
 * words): an image a tool returned belongs to a user message. */
static verdict tool_message_text(json_t *req)
{
    size_t i, j;
    json_t *msg, *part;
    json_array_foreach(json_object_get(req, "messages"), i, msg) {
        const char *role = json_string_value(json_object_get(msg, "role"));
        if (!role || strcmp(role, "tool") != 0)
            continue;
        json_array_foreach(json_object_get(msg, "content"), j, part) {
            const char *type = json_string_value(json_object_get(part, "type"));
            if (type && strcmp(type, "text") == 0)
                continue;
            char m[256], param[96];
            snprintf(m, sizeof(m), "Invalid 'messages[%zu]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL.", i);
            snprintf(param, sizeof(param), "messages.[%zu].content.[%zu].type", i, j);
            return openai_error(m, param, "invalid_value");
        }
    }
    return (verdict){ 0, NULL };
}

static verdict strict_check(const char *provider, json_t *req)
{
    verdict t = tool_message_text(req);
    if (t.body)
        return t;
    if (strcmp(provider, "mistral") == 0)
        return check_mistral(req);
    if (strcmp(provider, "groq") == 0)
        return check_groq(req);
    if (strcmp(provider, "fireworks") == 0)
        return check_fireworks(req);
    if (strcmp(provider, "cerebras") == 0)
        return check_cerebras(req);
    if (strcmp(provider, "gemini") == 0)
        return check_gemini(req);
    if (strcmp(provider, "vertex") == 0)
        return check_vertex(req);
    if (strcmp(provider, "openai") == 0)
        return check_openai(req);
    if (strcmp(provider, "anthropic") == 0)
        return check_anthropic(req);
    char m[128];
    snprintf(m, sizeof(m), "mock: unknown strict provider '%s'", provider);
    return verdict_json(400, json_pack("{s:{s:s,s:s}}", "error", "message", m, "type", "mock_error"));
}
