#!/bin/sh
# agents_flows.sh -- the agent flows added on 2026-12-06 (Claude Code's
# WebSearch, /compact and thinking replayed; Codex's freeform apply_patch;
# opencode's image read, task sub-agent and reasoning; Gemini CLI's image
# read, second turn and thought parts; pi's image read and reasoning; Qwen
# Code's reasoning), each on one route: agents.sh with TG_AGENT_SET=flows,
# a suite of its own, as agents_new.sh is, so that each stays within
# test/run.sh's time per suite. With TG_AGENTS set, agents.sh runs those
# and this suite runs nothing.
if [ -n "$TG_AGENTS" ]; then
    echo "1..0 # SKIP TG_AGENTS is set: agents.sh runs them"
    exit 0
fi
TG_AGENT_SET=flows exec sh "$(dirname "$0")/agents.sh"
