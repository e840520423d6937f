#!/bin/sh
# test/fuzz/run.sh SECONDS -- run every fuzz target for SECONDS on top of its
# seeds (test/fuzz/corpus/NAME plus the vectors named below); new inputs go
# to a scratch dir, crashes to build-fuzz/crash-NAME-*. TAP lines, then
# "N passed, N failed".
cd "$(dirname "$0")/../.."
secs=${1:-60}
pass=0
fail=0
n=0
for bin in build-fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    name=${bin#build-fuzz/fuzz_}
    seeds="test/fuzz/corpus/$name"
    case "$name" in
        conf) seeds="$seeds test/vectors/conf" ;;
        repair) [ -d test/vectors/repair ] && seeds="$seeds test/vectors/repair" ;;
        jsonio) seeds="$seeds test/vectors/json" ;;
        responses) seeds="$seeds test/vectors/responses_api" ;;
        messages) seeds="$seeds test/vectors/messages_api" ;;
        gemini) seeds="$seeds test/vectors/gemini_api" ;;
    esac
    scratch=$(mktemp -d)
    n=$((n + 1))
    if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="build-fuzz/crash-$name-" "$scratch" $seeds >"build-fuzz/$name.log" 2>&1; then
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/$name.log" | grep -o '[0-9]*$')
        echo "ok $n - fuzz $name (${runs:-?} runs in ${secs}s)"
        pass=$((pass + 1))
    else
        echo "not ok $n - fuzz $name (see build-fuzz/$name.log)"
        grep -E 'ERROR|SUMMARY|==[0-9]+==' "build-fuzz/$name.log" | head -5
        fail=$((fail + 1))
    fi
    rm -rf "$scratch"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
