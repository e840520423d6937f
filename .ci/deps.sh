#!/bin/sh
# Install the Debian packages toolgate builds and tests with, when missing.
# Idempotent: with everything present it only runs dpkg-query.
set -e
PKGS="build-essential pkg-config libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev
libinih-dev libpoppler-glib-dev libstemmer-dev zlib1g-dev libzstd-dev libcmocka-dev libhiredis-dev libssl-dev redis-server curl python3 python3-yaml nodejs npm wrk
nginx-light clang libclang-rt-14-dev openssl zstd strace"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# A machine that already has node/npm from elsewhere does not need Debian's.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
    missing=$(echo "$missing" | tr ' ' '\n' | grep -vx -e nodejs -e npm | tr '\n' ' ')
fi
missing=$(echo $missing)
[ -z "$missing" ] && exit 0
echo "installing:$missing"
if [ "$(id -u)" != 0 ]; then
    echo "toolgate: missing packages:$missing (run as root, or install them)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
