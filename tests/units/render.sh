#!/usr/bin/env bash
# tests/units/render.sh: the unit core (nix/units.nix) rendered by nix/render-units.nix to
# files: every .service and .socket unit, tmpfiles.conf, sysusers.conf, polkit.rules and
# config.toml. What tests/units/check.sh scores and tests/container/run.sh installs.
#
# Usage: tests/units/render.sh OUT_DIR [--arg NAME VALUE]...
#   The arguments go to nix-instantiate (any argument of nix/units.nix). The JSON it prints
#   is kept as OUT_DIR/rendered.json; one line `rendered NAME` per file written.
# Needs: nix-instantiate, python3.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: tests/units/render.sh OUT_DIR [--arg NAME VALUE]..." >&2
    exit 2
fi
out=$1
shift
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$out"
nix-instantiate --eval --strict --json "$repo/nix/render-units.nix" "$@" >"$out/rendered.json"
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
with open(os.path.join(out, "rendered.json")) as f:
    files = json.load(f)
for name, text in files.items():
    if "/" in name or name.startswith(".") or name == "rendered.json":
        sys.exit(f"render-units: bad file name {name!r}")
    with open(os.path.join(out, name), "w") as f:
        f.write(text)
    print("rendered", name)
PY
