#!/bin/sh
# demo.sh -- `make demo` (deploy/demo.sh) run once, as a newcomer sees it:
# it must start the mock in its Gemini-like personality (set by the path of
# conf/demo.conf's upstream URL), show the four bodies, name each change of
# the way up by its rule and each repair of the way down (R1 type, R3
# index, the tool name mapped back), and stop both processes cleanly.
. "$(dirname "$0")/lib.sh"

out="$TG_TMP/demo.out"
mkdir -p "$TG_TMP/logs"
DEMO_ONCE=1 DEMO_LOGDIR="$TG_TMP/logs" TOOLGATE_DEMO_LISTEN="127.0.0.1:$(free_port)" \
    sh "$TG_ROOT/deploy/demo.sh" >"$out" 2>&1
expect_eq "demo: exits 0 with DEMO_ONCE=1" 0 "$?"
text=$(cat "$out")
# section N of the output: from its "== N." line to the next "==" line
section() { sed -n "/^== $1\\./,/^==/p" "$out"; }

expect_match "demo: the four bodies shown" \
    '== 1\. the agent sent.*' "$(section 1)"
expect_match "demo: upstream body is the mock's record (no \$ref, no marker)" \
    'tools\[0\]: github_create_issue  parameters: \{"type":"object","properties"' "$(section 2)"
check "demo: upstream body lacks _bookkeeping and additionalProperties" \
    sh -c '! printf "%s" "$1" | grep -q "messages\[1\].*_bookkeeping\|tools\[0\].*additionalProperties"' x "$(section 2)"
for rule in 'marker \(section 4\.1\)' flatten-root-combinator drop-additionalProperties inline-ref rename-tool; do
    expect_match "demo: the way up names $rule" "^  $rule +/" "$(section 2)"
done
expect_match "demo: the raw answer has no index and no type (Gemini-like)" \
    '"tool_calls":\[\{"id":"call_par0","function":\{"name":"github_create_issue"' "$(section 3)"
expect_match "demo: the agent received the repaired call" \
    '"tool_calls":\[\{"index":0,"id":"call_par0","type":"function","function":\{"name":"github:create_issue"' "$(section 4)"
expect_match "demo: R3 named" '^  R3 index added +call call_par0' "$text"
expect_match "demo: R1 named" '^  R1 type added +call call_par0' "$text"
expect_match "demo: the name mapped back" '^  rename-tool reversed +"github_create_issue" -> "github:create_issue"' "$text"
check "demo: no colour when stdout is not a terminal" sh -c '! grep -q "$(printf "\033")" "$1"' x "$out"
sanitizer_clean "demo: toolgate" "$TG_TMP/logs/toolgate.log"
sanitizer_clean "demo: mock" "$TG_TMP/logs/mock.err"
finish
