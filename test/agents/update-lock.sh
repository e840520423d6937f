#!/bin/sh
# update-lock.sh -- writes package-lock.json for the versions package.json
# pins, so that `npm ci` accepts it on every platform.
#
# Agent CLIs ship their native binaries as optional packages, one per
# platform. A registry mirror that holds only some of them (the one this
# lock was first made with lacked the darwin, windows, arm64 and musl
# builds of opencode and Qwen Code's clipboard module) makes npm leave the
# others out of the lock, and `npm ci` then refuses the lock as out of sync
# ("Missing: opencode-darwin-arm64@ from lock file"). Each missing optional
# package is added with the platform its name states, so npm skips it where
# it does not fit, as it would with the registry's own entry.
set -e
cd "$(dirname "$0")"
rm -f package-lock.json
npm install --package-lock-only --no-audit --no-fund --loglevel=error
python3 - <<'EOF'
import json, re

lock = json.load(open("package-lock.json"))
pkgs = lock["packages"]
added = []
for path, meta in list(pkgs.items()):
    for name, version in (meta.get("optionalDependencies") or {}).items():
        if "node_modules/" + name in pkgs:
            continue
        entry = {"version": version, "optional": True}
        os_ = re.search(r"(darwin|linux|win32|windows)", name)
        cpu = re.search(r"(arm64|x64|ia32|arm)(?![a-z0-9])", name)
        if os_:
            entry["os"] = ["win32" if os_.group(1) == "windows" else os_.group(1)]
        if cpu:
            entry["cpu"] = [cpu.group(1)]
        if "musl" in name:
            entry["libc"] = ["musl"]
        elif "-gnu" in name:
            entry["libc"] = ["glibc"]
        pkgs["node_modules/" + name] = entry
        added.append(name)
lock["packages"] = dict(sorted(pkgs.items(), key=lambda kv: (kv[0] != "", kv[0])))
with open("package-lock.json", "w") as f:
    json.dump(lock, f, indent=2)
    f.write("\n")
for name in added:
    print("added the optional platform package", name)
EOF
