#!/bin/sh
# bench/embed_bystander.sh -- issue 28 F1 measured: an embeddings endpoint
# that answers each call in DELAY_MS (default 300), one toolgate worker,
# client A sending a discovery request with a fresh catalog of TOOLS tools
# (default 4,096) and client B asking every 50 ms on the same worker
# (bench/embed_bystander.py). Prints A's time and B's worst wait. TG_BIN
# (default build/toolgate) picks the toolgate; EMBED=off measures the same
# without embeddings (the floor: the catalog's own discovery work).
TG_ROOT=$(cd "$(dirname "$0")/.." && pwd)
export TG_ROOT
export TG_BIN="${TG_BIN:-$TG_ROOT/build/toolgate}"
export TG_MOCK="${TG_MOCK:-$TG_ROOT/build/mock-upstream}"
. "$TG_ROOT/test/integration/lib.sh"
DELAY=${DELAY_MS:-300}
TOOLS=${TOOLS:-4096}
# lib.sh's start_script_upstream waits (60 s while it runs) for its port
start_script_upstream emb "$TG_ROOT/bench/embed_bystander.py" serve "$DELAY"
EPID=$UP_PID
EP=$UP_PORT
trap 'kill $EPID 2>/dev/null; stop_all' EXIT
start_mock
PORT=$(free_port)
{
    printf '[server]\nlisten = 127.0.0.1:%s\nthreads = 1\nlog_level = warn\naccess_log = off\nforward_headers = x-mock*\n\n' "$PORT"
    printf '[route emb]\nprefix = /emb\nupstream = http://127.0.0.1:%s/v1\n\n' "$EP"
    printf '[route plain]\nprefix = /plain\nupstream = http://127.0.0.1:%s/v1\n\n' "$MOCK_PORT"
    printf '[route disc]\nprefix = /disc\nupstream = http://127.0.0.1:%s/v1\ndiscovery = on\n' "$MOCK_PORT"
    [ "${EMBED:-on}" = off ] || printf 'discovery_embeddings = emb:stand-in\n'
} >"$TG_TMP/eb.conf"
start_toolgate "$TG_TMP/eb.conf" || exit 1
echo "# $TG_BIN, embeddings answered in $DELAY ms a call, $TOOLS tools"
"$PY" "$TG_ROOT/bench/embed_bystander.py" run "$TG_URL" "$TOOLS"
curl -s -m 5 "$TG_URL/metrics" | grep '^toolgate_discovery_embedding'
