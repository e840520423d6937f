#!/bin/sh
# agent_catalog_claude.sh -- agent_catalog.sh with Claude Code, whose
# deferred MCP tools reach toolgate's catalog as name-only stubs
# (bridge/messages_deferred.c): 400 of them, 2 queries of the test half
# (a Claude Code run takes a few seconds). A suite of its own, as
# agents_new.sh is, so that each stays within test/run.sh's time per
# suite; `make eval` runs 30 with each agent and mode.
TG_CATALOG_AGENT=claude TG_AGENT_QUERIES=${TG_CATALOG_CLAUDE_QUERIES:-2} \
    exec sh "$(dirname "$0")/agent_catalog.sh"
