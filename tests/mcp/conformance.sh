#!/usr/bin/env bash
# tests/mcp/conformance.sh: the official MCP conformance suite against boxmaker's client.
#
# Runs @modelcontextprotocol/conformance (installed by tests/mcp/setup.sh, which must have
# been evaluated: BOXMAKER_MCP_NODE and BOXMAKER_MCP_NODE_BIN) on the client scenarios that
# apply, with crates/mcp/examples/conformance-client.rs as the client. `initialize` and
# `tools_call` must pass; the scenarios in conformance-baseline.yml must fail (the suite
# itself says when one of them starts to pass). The OAuth scenarios (auth/*) do not apply:
# the client does no OAuth. Results go to a temporary directory, never the checkout.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
: "${BOXMAKER_MCP_NODE:?run eval \"\$(tests/mcp/setup.sh)\" first}"
: "${BOXMAKER_MCP_NODE_BIN:?run eval \"\$(tests/mcp/setup.sh)\" first}"
SUITE=$BOXMAKER_MCP_NODE_BIN/../@modelcontextprotocol/conformance/dist/index.js

cargo build --locked -q -p mcp --example conformance-client
# CARGO_TARGET_DIR may be absolute (the gate keeps it in the cache under CI) or relative.
TARGET=${CARGO_TARGET_DIR:-target}
[[ $TARGET == /* ]] || TARGET=$(pwd)/$TARGET
CLIENT=$TARGET/debug/examples/conformance-client
[[ -x $CLIENT ]] || { echo "conformance: no client at $CLIENT" >&2; exit 1; }
OUT=$(mktemp -d /tmp/boxmaker-mcp-conformance.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

failed=0
for scenario in initialize tools_call elicitation-sep1034-client-defaults sse-retry; do
    if "$BOXMAKER_MCP_NODE" "$SUITE" client --command "$CLIENT" --scenario "$scenario" \
        --expected-failures tests/mcp/conformance-baseline.yml --timeout 30000 \
        -o "$OUT/$scenario" >"$OUT/$scenario.log" 2>&1; then
        if grep -q -- "- $scenario\$" tests/mcp/conformance-baseline.yml; then
            echo "conformance: $scenario fails, as the baseline says"
        elif grep -q 'Passed: [1-9][0-9]*/[1-9]' "$OUT/$scenario.log" && ! grep -q 'CLIENT EXITED WITH ERROR' "$OUT/$scenario.log"; then
            echo "conformance: $scenario passes"
        else
            # The suite exits 0 on a scenario whose client never ran and no check failed;
            # a pass is a pass only when checks passed and the client exited cleanly.
            echo "conformance: $scenario: no check passed (the suite's output follows)" >&2
            sed 's/\x1b\[[0-9;]*m//g' "$OUT/$scenario.log" >&2
            failed=1
        fi
    else
        echo "conformance: $scenario: UNEXPECTED (the suite's output follows)" >&2
        sed 's/\x1b\[[0-9;]*m//g' "$OUT/$scenario.log" >&2
        failed=1
    fi
done
exit "$failed"
