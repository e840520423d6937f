/* messages_deferred.c -- the tools an agent names but does not send, as
 * catalog entries of a discovery route (messages_api_int.h).
 *
 * Claude Code defers its MCP tools (and a few of its own: WebFetch,
 * NotebookEdit, ...): its first request's `tools` hold its built-in tools
 * and ToolSearch, and the deferred ones are only named, one a line, in a
 * system message ("The following deferred tools are now available via
 * ToolSearch. ... before calling them:\nCronCreate\n...\nmcp__x__y\n\n").
 * A tool's definition comes in `tools` (with defer_loading) only after its
 * ToolSearch loaded it. On a discovery route the model sees the
 * meta-tools, not ToolSearch, so without the names it could never find
 * those tools: each named tool that no tool of the request defines joins
 * the catalog as a stub (its name, a description that says how it loads,
 * an open object schema; the description does not name ToolSearch, which
 * successor hints would read as a link). Its name is all search_tools can match; a
 * call_tool of it reaches Claude Code as a call of the tool, which Claude
 * Code runs as it came, loaded or not (2.1.332: the MCP server gets the
 * arguments and judges them); and a
 * model that wants the schema first calls ToolSearch through call_tool,
 * whose tool_reference answer then carries the loaded definitions
 * (messages_content.c). Once loaded, the real definition replaces the
 * stub under the same name. Off discovery routes nothing is added: there
 * the model has ToolSearch itself; nor with discovery = auto when the
 * tools and the stubs together are not above its threshold, since the
 * request then goes up uncollapsed, ToolSearch in view.
 *
 * Only the headers Claude Code writes are read (every wording of
 * "The following deferred tools are ...:"); a shortened row such as
 * "mcp__slack__* (42)" and a name past the bound are skipped, a blank
 * line or any other line ends the list. Bounded: DEFERRED_MAX names, TOOL_NAME_MAX bytes each.
 */
#include <stdio.h>
#include <string.h>

#include "bridge/messages_deferred.h"

#define DEFERRED_MAX 2048  /* stubs a request adds at most */
#define TOOL_NAME_MAX 128  /* bytes of a tool name (Anthropic's limit) */

static const char header[] = "The following deferred tools are";

/* Is [s, s+n) a tool name as the Messages API spells one? */
static bool is_tool_name(const char *s, size_t n)
{
    if (n == 0 || n > TOOL_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* The names of one list, from the line after its header to a blank line
 * or a line that is neither a name nor a shortened row ("mcp__x__* (42)",
 * skipped): prose after a list never reads as names. */
static void read_list(const char *p, const char *end, json_t *names)
{
    while (p < end && json_object_size(names) < DEFERRED_MAX) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        size_t n = (size_t)(eol - p);
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
            n--;
        if (n == 0)
            return;
        if (is_tool_name(p, n)) {
            char name[TOOL_NAME_MAX + 1];
            memcpy(name, p, n);
            name[n] = '\0';
            json_object_set_new(names, name, json_true());
        } else if (!memchr(p, '*', n) && n <= TOOL_NAME_MAX) {
            return;
        }
        p = nl ? nl + 1 : end;
    }
}

void tg_msg_deferred_names(const char *text, size_t len, json_t *names)
{
    const char *end = text + len, *p = text;
    size_t hl = sizeof header - 1;
    while (p && (size_t)(end - p) > hl) {
        const char *at = memmem(p, (size_t)(end - p), header, hl);
        if (!at)
            return;
        const char *nl = memchr(at, '\n', (size_t)(end - at));
        if (!nl)
            return;
        read_list(nl + 1, end, names);
        p = nl + 1;
    }
}

/* The text of a system or user turn: a string, or its text blocks. */
static void names_in(const json_t *content, json_t *names)
{
    if (json_is_string(content)) {
        tg_msg_deferred_names(json_string_value(content), json_string_length(content), names);
        return;
    }
    size_t i;
    const json_t *b;
    json_array_foreach(content, i, b) {
        const json_t *t = json_object_get(b, "text");
        if (tg_msg_is_type(b, "text") && json_is_string(t))
            tg_msg_deferred_names(json_string_value(t), json_string_length(t), names);
    }
}

/* A catalog entry for a tool known by name only. */
static json_t *stub(const char *name)
{
    char desc[320];
    snprintf(desc, sizeof desc,
             "Deferred by the agent: only its name is known until the agent's tool search "
             "loads its definition (query \"select:%s\"). It can also be called as it is, "
             "with the arguments its name implies.",
             name);
    return json_pack("{s:s, s:{s:s, s:s, s:{s:s}}}", "type", "function", "function", "name",
                     name, "description", desc, "parameters", "type", "object");
}

void tg_msg_deferred_stubs(const json_t *body, json_t *tools, conv *cv)
{
    if (!cv->o->discovery)
        return;
    json_t *names = json_object();
    names_in(json_object_get(body, "system"), names);
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(body, "messages"), i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (role && (!strcmp(role, "system") || !strcmp(role, "user")))
            names_in(json_object_get(m, "content"), names);
    }
    const char *name;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(names, tmp, name, v)
        if (tg_tool_peek(tools, name))
            json_object_del(names, name);  /* defined: the request sent it */
    size_t total = json_array_size(tools) + json_object_size(names);
    if (json_object_size(names) &&
        (!cv->o->discovery_above || total > (size_t)cv->o->discovery_above)) {
        json_object_foreach(names, name, v)
            json_array_append_new(tools, stub(name));
        tg_bridge_drop(cv->translated, "tools", "deferred:named");
    }
    json_decref(names);
}
