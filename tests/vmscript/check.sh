#!/usr/bin/env bash
# tests/vmscript/check.sh: part of the `units` gate step. Type-checks every VM scenario's
# testScript (nix/tests/*.nix) as the NixOS test driver's build does before it runs a test
# (nixpkgs nixos/lib/testing/driver.nix): the script, taken with nix-instantiate --eval,
# after type hints for the driver's globals (prepend.py) and one `NAME: Machine` line per
# node, through `mypy --no-implicit-optional --pretty --no-color-output`, against the stub
# of the driver's API in stubs/. A script the driver's mypy would refuse (None where a value
# is needed, a Machine method that does not exist, a wrong argument) fails here, without
# nixpkgs and without booting anything.
#
# Usage: tests/vmscript/check.sh [SCENARIO.nix...]   (default: every nix/tests/*.nix)
# Needs: nix-instantiate, python3 (with venv). mypy comes from PyPI, pinned, installed once
# into ${BOXMAKER_CACHE:-~/.cache/boxmaker}/vmscript-mypy (about 5 s and 60 MB).
set -euo pipefail

MYPY_VERSION=1.13.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${BOXMAKER_CACHE:-$HOME/.cache/boxmaker}/vmscript-mypy
venv=$cache/venv

if [[ ! -x $venv/bin/mypy ]] || [[ $("$venv/bin/mypy" --version 2>/dev/null) != "mypy $MYPY_VERSION "* ]]; then
    echo "vmscript: installing mypy $MYPY_VERSION into $venv" >&2
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet "mypy==$MYPY_VERSION" >&2
fi

if [[ $# -gt 0 ]]; then
    files=("$@")
else
    files=("$repo"/nix/tests/*.nix)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

failed=0
for file in "${files[@]}"; do
    file=$(cd "$(dirname "$file")" && pwd)/$(basename "$file")
    name=$(basename "$file" .nix)
    script=$work/$name.py
    # The node names as the driver declares them: each node, pythonized; a lone node not
    # called `machine` is reachable as `machine` too.
    nix-instantiate --eval --strict --json -E "
      let
        t = import $file;
        names = builtins.attrNames (t.nodes or { });
        py = n: builtins.replaceStrings [ \"-\" \".\" ] [ \"_\" \"_\" ] n;
        lone = if builtins.length names == 1 && !(builtins.elem \"machine\" names) then [ \"machine\" ] else [ ];
      in { nodes = map py (names ++ lone); script = t.testScript; }" >"$work/$name.json"
    python3 - "$work/$name.json" "$here/prepend.py" "$script" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
with open(sys.argv[3], "w") as out:
    out.write(open(sys.argv[2]).read())
    for node in scenario["nodes"]:
        out.write(f"{node}: Machine\n")
    out.write(scenario["script"])
PY
    if MYPYPATH=$here/stubs "$venv/bin/mypy" --no-implicit-optional --pretty --no-color-output \
        --cache-dir "$cache/cache" "$script"; then
        echo "ok: nix/tests/$name.nix testScript type-checks"
    else
        echo "vmscript: nix/tests/$name.nix: the NixOS test driver's mypy would refuse this testScript" \
            "(its line numbers count the $(wc -l <"$here/prepend.py") lines of prepend.py and one per node first)" >&2
        failed=$((failed + 1))
    fi
done
((failed == 0))
