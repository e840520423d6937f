#!/bin/sh
# docs.sh -- the reference keeps up with the code: every conf key and rule
# name the parser accepts is in docs/configuration.md, and every link of
# README.md and docs/ resolves (test/tools/docs_check.py).
cd "$(dirname "$0")/../.." || exit 1
exec python3 test/tools/docs_check.py .
