#!/bin/sh
# agents_new.sh -- the agents and flows added in issue 26 (Gemini CLI, pi,
# Continue cn, Kilo, grok-cli; Claude Code's PDF, image, ToolSearch,
# sub-agent and -c; Codex's default model, view_image, apply_patch and
# resume), each on one route: agents.sh with TG_AGENT_SET=new, a suite of
# its own so that each stays within test/run.sh's time per suite. With
# TG_AGENTS set, agents.sh runs those and this suite runs nothing.
if [ -n "$TG_AGENTS" ]; then
    echo "1..0 # SKIP TG_AGENTS is set: agents.sh runs them"
    exit 0
fi
TG_AGENT_SET=new exec sh "$(dirname "$0")/agents.sh"
