/* groups.h -- the groups (server / namespace) of a tool catalog, derived
 * from the tools' names alone.
 *
 * Internal to discovery/. An agent's tool list says nothing of where its
 * tools come from but their names: MCP clients prefix them
 * (mcp__github__create_issue, github__create_issue, github.create_issue,
 * github/create_issue), and a server's tools often share a first word
 * (github_create_issue, github_list_issues, ...). A group is what such a
 * prefix names.
 */
#ifndef TG_DISC_GROUPS_H
#define TG_DISC_GROUPS_H

#include <jansson.h>

/* A bare first word (before _, - or a camelCase hump) is a group only when
 * at least this many tools of the catalog share it. */
#define TG_GROUP_MIN_SHARE 3

/* For `names` (borrowed array of strings, one per tool), a new array of the
 * same length: each tool's group as a lower-case string, or null when it
 * has none. Explicit namespaces (mcp__S__x, S__x, S.x, S/x, S:x) always
 * count; a shared first word counts when TG_GROUP_MIN_SHARE tools have it
 * and it is not a generic verb (get_, list_, create_ ... say what a tool
 * does, not where it belongs). A group longer than GROUP_MAX bytes is cut
 * there, on a character's boundary. NULL only when a name is not UTF-8. */
json_t *tg_disc_groups(json_t *names);

#endif
