#!/bin/sh
# layers.sh -- the include rule of the source tree (test/tools/layers.py):
# every include goes to the file's own layer or below, and no chain of
# includes loops. Fails on a tree that breaks either.
cd "$(dirname "$0")/../.." || exit 1
exec python3 test/tools/layers.py .
