#!/bin/sh
# test/run.sh -- runs every suite and prints one closing line
# "N passed, N failed". Each suite speaks TAP ("ok N - name" / "not ok N -
# name"): cmocka unit binaries (CMOCKA_MESSAGE_OUTPUT=TAP), then every
# test/integration/*.sh, which start the ASan build of toolgate against the
# project's mock upstream, then every test/adversary/*.sh (hostile upstreams
# and clients, docs/security.md). Each suite must end within
# TG_SUITE_TIMEOUT seconds (600) and run as many checks as its TAP plan
# lines ("1..N") announce.
cd "$(dirname "$0")/.."
export TG_ROOT="$PWD"
export TG_BIN="${TG_BIN:-$PWD/build-asan/toolgate}"
export TG_MOCK="${TG_MOCK:-$PWD/build-asan/mock-upstream}"
export TG_SHARED="${TG_SHARED:-$(cd .. && pwd)/shared}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export CMOCKA_MESSAGE_OUTPUT=TAP
log=$(mktemp -d)
pass=0
fail=0
only="$1"

tally() {  # tally NAME LOGFILE EXITCODE
    # A TAP "# TODO" line is a known break waiting for its fix: counted
    # neither way, only listed.
    p=$(grep '^ok ' "$2" | grep -vc '# TODO')
    f=$(grep '^not ok ' "$2" | grep -vc '# TODO')
    t=$(grep -c '^\(not \)\{0,1\}ok .*# TODO' "$2")
    # The plan: a suite that stopped early (a crash, an exit in the middle)
    # ran fewer checks than its "1..N" lines announce, and one that never
    # printed a plan cannot show that it ran to the end.
    planned=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$2" | awk '{ n += $1 } END { print n + 0 }')
    ran=$(grep -c '^\(not \)\{0,1\}ok ' "$2")
    if [ "$3" = 124 ] || [ "$3" = 137 ]; then
        f=$((f + 1))
        echo "not ok - $1 did not end within ${TG_SUITE_TIMEOUT:-600} s" >>"$2"
    elif [ "$3" != 0 ] && [ "$f" = 0 ]; then
        f=1
        echo "not ok - $1 exited with status $3" >>"$2"
    fi
    if [ "$planned" != "$ran" ]; then
        f=$((f + 1))
        echo "not ok - $1 planned $planned checks (its 1..N lines) but ran $ran" >>"$2"
    fi
    pass=$((pass + p))
    fail=$((fail + f))
    if [ "$f" != 0 ]; then
        echo "FAIL  $1 ($p passed, $f failed)"
        grep -A3 '^not ok' "$2" | head -40
        tail -n 30 "$2" | grep -v '^ok ' | head -30
    else
        echo "ok    $1 ($p passed)"
    fi
    if [ "$t" != 0 ]; then
        echo "      $t known breaks marked TODO:"
        grep '^\(not \)\{0,1\}ok .*# TODO' "$2" | sed 's/^/        /'
    fi
}

for t in ${BUILD:-build}/test/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    case "$name" in *"$only"*) ;; *) continue ;; esac
    timeout -k 10 "${TG_SUITE_TIMEOUT:-600}" "$t" >"$log/$name.log" 2>&1
    tally "$name" "$log/$name.log" $?
done

for t in test/integration/*.sh test/adversary/*.sh; do
    [ -f "$t" ] || continue
    name=$(basename "$t" .sh)
    [ "$name" = lib ] && continue
    # adversary-NAME: an adversary suite may share an integration suite's
    # name (clients), and `sh test/run.sh adversary` runs them all
    case "$t" in test/adversary/*) name="adversary-$name" ;; esac
    case "$name" in *"$only"*) ;; *) continue ;; esac
    timeout -k 10 "${TG_SUITE_TIMEOUT:-600}" sh "$t" >"$log/$name.log" 2>&1
    tally "$name" "$log/$name.log" $?
done

rm -rf "$log"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
