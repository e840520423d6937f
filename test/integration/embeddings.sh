#!/bin/sh
# embeddings.sh -- search_tools' semantic rank through a route's embeddings
# endpoint (discovery_embeddings = ROUTE:MODEL), against the mock's
# deterministic embeddings (test/mock/hash_embed.h: a test device, not a
# model) and its scripted discovery model, which searches with the user's
# text and calls the first result:
#   - fusion changes the ranking: a tool that shares no word with the task
#     is found and called with embeddings on, not without;
#   - the catalog is embedded once: the next turn over the same tools makes
#     one embeddings call (its query);
#   - each failure of the endpoint (status, timeout, garbage, wrong
#     dimension, wrong count, an answer past the bound, no route key) falls
#     back to BM25: the turn is answered as without embeddings, counted in
#     /metrics by cause and logged once per cause, without the key.
. "$(dirname "$0")/lib.sh"

[ -x "$TG_BIN" ] || { not_ok "toolgate binary exists" "$TG_BIN missing"; finish; }
start_mock

PORT=$(free_port)
CONF="$TG_TMP/embeddings.conf"
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = warn\nforward_headers = x-mock*\n\n' "$PORT"
    # the embeddings routes: emb within toolgate's own bound (5 s), fast
    # within 1 s, for the stall (a 40 MB answer may need more under load)
    printf '[route emb]\nprefix = /emb\nupstream = http://127.0.0.1:%s/v1\napi_key = sk-embed-secret\n\n' "$MOCK_PORT"
    printf '[route fast]\nprefix = /fast\nupstream = http://127.0.0.1:%s/v1\napi_key = sk-embed-secret\nttfb_timeout = 1s\n\n' "$MOCK_PORT"
    # plain and the embedding routes without the built-in word vectors,
    # which know an automobile is a car too: the wv route has them
    printf '[route plain]\nprefix = /plain\nupstream = http://127.0.0.1:%s/v1\ndiscovery = on\ndiscovery_wordvec = off\n\n' "$MOCK_PORT"
    printf '[route wv]\nprefix = /wv\nupstream = http://127.0.0.1:%s/v1\ndiscovery = on\n\n' "$MOCK_PORT"
    for m in ok status stall garbage dim count big deep; do
        model=mock-embed-$m
        [ $m = ok ] && model=mock-embed
        via=emb
        [ $m = stall ] && via=fast
        printf '[route %s]\nprefix = /%s\nupstream = http://127.0.0.1:%s/v1\ndiscovery = on\ndiscovery_wordvec = off\ndiscovery_embeddings = %s:%s\n\n' \
            "$m" "$m" "$MOCK_PORT" "$via" "$model"
    done
    # F1: a stall within emb's 5 s budget, room for the bystander on a busy machine
    printf '[route f1]\nprefix = /f1\nupstream = http://127.0.0.1:%s/v1\ndiscovery = on\ndiscovery_embeddings = emb:mock-embed-stall\n\n' "$MOCK_PORT"
    # the catalog's calls answered, a search's query stalled
    printf '[route q1]\nprefix = /q1\nupstream = http://127.0.0.1:%s/v1\ndiscovery = on\ndiscovery_embeddings = emb:mock-embed-stall1\n\n' "$MOCK_PORT"
} >"$CONF"
start_toolgate "$CONF" || finish
B="$TG_TMP/body"

# 70 tools: two that matter, a third, and fillers (two catalog batches)
TOOLS=$("$PY" -c '
import json
t = [("plan_trip", "Plan a trip itinerary with stops and dates."),
     ("rent_car", "Book a car from a rental agency."),
     ("list_invoices", "List the invoices of an account.")]
nouns = ["widget", "gadget", "sprocket", "gizmo", "bolt", "flange", "valve", "lever", "spring", "gear"]
verbs = ["inspect", "polish", "weigh", "paint", "label"]
for i in range(len(t), 70):
    v, o = verbs[i % 5], nouns[(i // 5) % 10]
    t.append(("%s_%s_%d" % (v, o, i), "%s a %s on line %d." % (v, o, i)))
print(json.dumps([{"type": "function", "function": {"name": n, "description": d,
    "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}} for n, d in t]))')
body() {  # body TASK
    printf '{"model":"m","messages":[{"role":"user","content":"%s"}],"tools":%s}' "$1" "$TOOLS"
}
turn() {  # turn ROUTE TASK: prints the status; the answer in $B
    tg_req "$B" POST "/$1/v1/chat/completions" -H 'Content-Type: application/json' \
        -H 'X-Mock: discovery' -H 'Authorization: Bearer sk-client-key' --data-binary "$(body "$2")"
}
called() {  # the tool the agent was asked to call, or the answer's text
    json_get "$B" choices.0.message.tool_calls.0.function.name 2>/dev/null ||
        json_get "$B" choices.0.message.content
}
embed_calls() {
    curl -s -m 5 "$MOCK_URL/_count" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["embed_calls"])'
}
fallbacks() {  # fallbacks CAUSE
    curl -s -m 5 "$TG_URL/metrics" |
        sed -n "s/^toolgate_discovery_embedding_fallbacks_total{cause=\"$1\"} //p"
}

# ---- fusion changes the ranking ----------------------------------------------

TASK="hire an automobile"
expect_eq "without embeddings: answered" 200 "$(turn plain "$TASK")"
expect_eq "without embeddings: BM25 finds nothing for words no tool uses" "search found nothing" "$(called)"
expect_eq "built-in word vectors (discovery_wordvec on): answered" 200 "$(turn wv "$TASK")"
expect_eq "... the tool it means is found and called, no endpoint" rent_car "$(called)"
mock_reset
expect_eq "with embeddings: answered" 200 "$(turn ok "$TASK")"
expect_eq "with embeddings: the tool it means is found and called" rent_car "$(called)"
expect_eq "the catalog in two batches and the query: three calls" 3 "$(embed_calls)"
mock_last "$TG_TMP/last"
expect_eq "the last POST is the chat round after the search" /v1/chat/completions "$(json_get "$TG_TMP/last" path)"

# the first search's ranking as the model got it: BM25 ranks plan_trip
# first for a trip; embeddings add rent_car beside it
turn plain "hire an automobile for the trip" >/dev/null
expect_eq "BM25 alone: plan_trip" plan_trip "$(called)"
mock_last "$TG_TMP/last"
RANKS='import json, sys
b = json.loads(json.load(open(sys.argv[1]))["body"])
r = [json.loads(m["content"]) for m in b["messages"] if m.get("role") == "tool"][0]
print(",".join(x["name"] for x in r["results"][:3]))'
plain_top=$("$PY" -c "$RANKS" "$TG_TMP/last")
turn ok "hire an automobile for the trip" >/dev/null
mock_last "$TG_TMP/last"
fused_top=$("$PY" -c "$RANKS" "$TG_TMP/last")
case ",$plain_top," in *,rent_car,*) not_ok "BM25's top 3 lacks rent_car" "$plain_top" ;; *) ok "BM25's top 3 lacks rent_car" ;; esac
case ",$fused_top," in *,rent_car,*) ok "the fused top 3 has rent_car" ;; *) not_ok "the fused top 3 has rent_car" "$fused_top" ;; esac

# streamed: the search is answered while the upstream's stream is read
st=$(tg_req "$B" POST /ok/v1/chat/completions -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' --data-binary "$(body "$TASK" | sed 's/^{/{"stream":true,/')")
expect_eq "streamed, with embeddings: answered" 200 "$st"
expect_match "streamed, with embeddings: rent_car is called" '"name":"rent_car"' "$(cat "$B")"

# ---- the catalog is embedded once -----------------------------------------------

mock_reset
turn ok "$TASK" >/dev/null
expect_eq "next turn, same tools: only its query is embedded" 1 "$(embed_calls)"
expect_eq "... and the same tool is called" rent_car "$(called)"
n=$(curl -s -m 5 "$TG_URL/metrics" | sed -n 's/^toolgate_discovery_embedding_calls_total //p')
expect_eq "embedding calls counted in /metrics" 6 "$n"

# ---- every failure falls back to BM25 ------------------------------------------------

for c in status:status stall:timeout garbage:malformed dim:dimension count:count big:too_big; do
    route=${c%%:*}
    cause=${c#*:}
    expect_eq "$route: answered" 200 "$(turn "$route" "hire an automobile for the trip")"
    expect_eq "$route: ranked by BM25 alone" plan_trip "$(called)"
    expect_eq "$route: counted as cause $cause" 1 "$(fallbacks "$cause")"
    turn "$route" "hire an automobile for the trip" >/dev/null
    expect_eq "$route: counted again on the next turn" 2 "$(fallbacks "$cause")"
done
expect_eq "deep: answered" 200 "$(turn deep "hire an automobile for the trip")"
expect_eq "deep: ranked by BM25 alone" plan_trip "$(called)"
expect_eq "deep: an answer nested past any embedding's depth is malformed" 3 "$(fallbacks malformed)"
expect_eq "one warning per cause" 6 "$(grep -c 'discovery_embeddings [a-z]*:mock-embed.* failed' "$TG_LOG")"
expect_match "the warning names route, model and cause" \
    'route stall: discovery_embeddings fast:mock-embed-stall failed \(timeout' "$(cat "$TG_LOG")"
if grep -q 'sk-embed-secret\|sk-client-key' "$TG_LOG"; then
    not_ok "no key in the log" "$(grep 'sk-' "$TG_LOG" | head -3)"
else
    ok "no key in the log"
fi

# the embeddings route's own key went with the calls, not the client's
auth=$(curl -s -m 5 "$MOCK_URL/_count" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["embed_auth"])')
expect_eq "the embeddings route's api_key authorizes its calls" "Bearer sk-embed-secret" "$auth"

# ---- issue 28 F1: a bystander while a catalog is embedded -------------------------
# The catalog's embeddings calls run on the worker's loop (proxy/embed_wait.c):
# a bystander on the same (only) worker is answered while a stalled call
# holds the other request (route emb: its budget is 5 s, then BM25).
# Checked as an order: the bystander's answer comes first.
mock_reset
rm -f "$TG_TMP/f1.done"
(turn f1 "hire an automobile" >"$TG_TMP/f1.code"; touch "$TG_TMP/f1.done") &
F1_PID=$!
_i=0
while [ $_i -lt 100 ] && [ "$(embed_calls)" = 0 ]; do sleep 0.05; _i=$((_i + 1)); done
t0=$(now_ms)
code=$(tg_req "$TG_TMP/f1b" POST /plain/v1/chat/completions -H 'Content-Type: application/json' \
    --data-binary '{"model":"m","messages":[{"role":"user","content":"hi"}]}')
echo "# F1: the bystander waited $(($(now_ms) - t0)) ms"
a_done=$([ -e "$TG_TMP/f1.done" ] && echo "done" || echo "still waiting")
wait $F1_PID
expect_eq "F1: a bystander on the same worker is answered while a catalog is embedded" \
    "200 still waiting" "$code $a_done"
expect_eq "F1: the stalled request is answered (BM25 alone once its budget is spent)" 200 "$(cat "$TG_TMP/f1.code")"

# ---- issue 28: a streamed round's search query, on the loop too ----------------
# The catalog's two calls are answered, the search's query stalls: a
# bystander is answered while the streamed request waits for it (before,
# the streamed round's search made its call on the worker thread, and the
# bystander reached the upstream only once it gave up). The bystander's
# own upstream answers after 1.5 s, so that on a held worker the stalled
# request, whose last round is quick, ends first.
mock_reset
rm -f "$TG_TMP/q1.done"
(tg_req "$TG_TMP/q1a" POST /q1/v1/chat/completions -H 'Content-Type: application/json' \
    -H 'X-Mock: discovery' --data-binary "$(body "$TASK" | sed 's/^{/{"stream":true,/')" \
    >"$TG_TMP/q1.code"; touch "$TG_TMP/q1.done") &
Q1_PID=$!
_i=0
while [ $_i -lt 200 ] && [ "$(embed_calls)" -lt 3 ]; do sleep 0.05; _i=$((_i + 1)); done
expect_eq "streamed search: the catalog's two calls and the query's are out" 3 "$(embed_calls)"
code=$(tg_req "$TG_TMP/q1b" POST /plain/v1/chat/completions -H 'Content-Type: application/json' \
    -H 'X-Mock: stall' -H 'X-Mock-Delay-Ms: 1500' --data-binary '{"model":"m","messages":[{"role":"user","content":"hi"}]}')
a_done=$([ -e "$TG_TMP/q1.done" ] && echo "done" || echo "still waiting")
wait $Q1_PID
expect_eq "streamed search: a bystander is answered while its query is embedded" \
    "200 still waiting" "$code $a_done"
expect_eq "streamed search: answered (BM25 alone once its budget is spent)" 200 "$(cat "$TG_TMP/q1.code")"
expect_match "streamed search: the stream ends" 'data: \[DONE\]' "$(cat "$TG_TMP/q1a")"

stop_toolgate
finish
