# tests/container/mcp-remote.sh: scenario (q) of the container tier, sourced by inside.sh (its
# shellcheck shell=bash
# helpers come from lib.sh). A remote MCP server over Streamable HTTP, and a grant's secret
# delivered as a systemd credential, through brokerd's real units (issue 26, decisions
# P21-P25). run.sh writes /etc/boxmaker/config-mcp-remote.toml (taken by a runtime drop-in
# for this scenario only): the grants of tests/container/grants-mcp-remote, and
# fake-mcp-server configured five times:
#   far, farbare, farshut  `url = "http://127.0.0.1:8931/mcp"`, the --http stand-in started
#                          here; far and farbare name `secret_header = "Authorization"`.
#                          Grants: far lists 127.0.0.1 and names the secret mcp-key, farbare
#                          lists 127.0.0.1 and names no secret, farshut lists no host.
#   local, localbare       the stand-in over stdio, `secret_env = "MCP_KEY"`; its tool answers
#                          `MCP_KEY=` and that variable. Grant local names mcp-key, localbare
#                          none.
# mcp-key is /etc/boxmaker/secrets/mcp-key, which brokerd's rendered unit loads
# (LoadCredential=, as services.boxmaker.secrets does); a call's unit loads it from brokerd's
# credentials directory. Each call's unit file is copied from /run/systemd/transient while
# it runs. The container does not enforce IPAddressAllow= (see (g)): the unit's properties
# are checked here, the filter itself in the VM tier (tests/vm/network.sh).

scenario "(q) a remote MCP server over HTTP and a grant's secret as a credential, through brokerd's units"
q_started=$(date +%s.%N)
MCP_LOG=/tmp/boxmaker-mcp-http.log
MCP_KEY=$(cat /etc/boxmaker/secrets/mcp-key)
# call_results OUT: the tool results of the one session bxctl chat named in OUT.chat (its
# `[session ID]` line), as loopd logged them: what that call's server answered.
call_results() {
    local id
    id=$(sed -n 's/^\[session \(s-[0-9a-f-]*\)\]$/\1/p' "$1.chat")
    [[ -n $id ]] || return 1
    python3 - /var/lib/private/boxmaker/sessions/"$id" <<'PY'
import json, pathlib, sys
for log in sorted(pathlib.Path(sys.argv[1]).glob("*.jsonl")):
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "tool_result":
            print(record["content"])
PY
}
export -f call_results
rm -f "$MCP_LOG"
systemd-run --quiet --unit=boxmaker-test-mcp-http --service-type=exec \
    /opt/boxmaker/bin/fake-mcp-server --http 127.0.0.1:8931 /opt/boxmaker-test/mcp-http.json
wait_for 10 "the Streamable HTTP stand-in listens on 127.0.0.1:8931" \
    "python3 -c \"\$PROBE\" tcp:127.0.0.1:8931"
brokerd_config /etc/boxmaker/config-mcp-remote.toml "tests/container/mcp-remote.sh: scenario (q) only"
for name in far farbare farshut local localbare; do
    expect "bxctl mcp pin $name --yes: brokerd probes it in a unit, the owner pins its tool" \
        "owner bxctl mcp pin --config /etc/boxmaker/config-mcp-remote.toml $name --yes > /tmp/mcpq-pin-$name.out && grep -q '^pinned $name: ' /tmp/mcpq-pin-$name.out"
done
grep -E '^(server|tool|pinned) ' /tmp/mcpq-pin-far.out | sed 's/^/    | /'
expect "the remote server's pin says where it reached (bxctl reading the same config)" \
    "grep -q '^server far: container-far 1.0.0 (reached at http://127.0.0.1:8931/mcp from a unit of its own)' /tmp/mcpq-pin-far.out"
expect "the probes reached the stand-in and sent no secret (no Authorization)" \
    "grep -q '^tools/list' $MCP_LOG && ! grep -q '^http authorization' $MCP_LOG"

# mcpq_call WHAT OUT MESSAGE: the model's call through bxctl chat (loopd, inferproxy,
# brokerd); the first unit running `boxmaker-tool mcp-call` is copied to OUT.unit while it
# runs, the chat's output kept in OUT.chat.
mcpq_call() {
    local what=$1 out=$2 message=$3 watcher
    rm -f "$out.unit" "$out.stop"
    (
        while [[ ! -e $out.stop ]]; do
            for f in /run/systemd/transient/boxmaker-tool-*.service; do
                [[ -e $f ]] && grep -q 'mcp-call' "$f" && cp "$f" "$out.unit" && exit 0
            done
            sleep 0.005
        done
    ) &
    watcher=$!
    owner bxctl chat -m "$message" >"$out.chat" 2>&1
    touch "$out.stop"
    wait "$watcher"
    sed 's/^/    | /' "$out.chat"
    expect "$what" "grep -qE '\\[-> [0-9]+ bytes' $out.chat"
}

# ---- the remote server, its grant listing the host and naming the secret ----
before=$(wc -l <"$MCP_LOG")
mcpq_call "far: the model's call of mcp__far__echo answers" /tmp/mcpq-far "mcpq: far with the key"
expect "far: the stand-in's answer is in the call's session log" \
    "call_results /tmp/mcpq-far | grep -qx 'far says: ' && call_results /tmp/mcpq-far | grep -qF '{\"text\":\"hello far\"}'"
expect "far: the session reached the server (tools/call in its log)" \
    "tail -n +$((before + 1)) $MCP_LOG | grep -qx 'tools/call'"
expect "far: every request of the call carried the secret as Authorization, as is" \
    "tail -n +$((before + 1)) $MCP_LOG | grep '^http authorization' > /tmp/mcpq-auth && test -s /tmp/mcpq-auth && ! grep -vxF 'http authorization $MCP_KEY' /tmp/mcpq-auth"
grep -E '^(DynamicUser|PrivateNetwork|IPAddress|RestrictAddressFamilies|LoadCredential|BindReadOnlyPaths)' \
    /tmp/mcpq-far.unit | sed 's/^/    | /'
expect "far: its unit admits 127.0.0.1 alone (IPAddressAllow=), denies any other address (IPAddressDeny=), AF_INET only" \
    "test \"\$(grep '^IPAddressAllow=.' /tmp/mcpq-far.unit)\" = IPAddressAllow=127.0.0.1/32 && test \"\$(grep '^IPAddressDeny=.' /tmp/mcpq-far.unit | LC_ALL=C sort | tr '\\n' ' ')\" = 'IPAddressDeny=0.0.0.0/0 IPAddressDeny=::/0 ' && ! grep -qx 'PrivateNetwork=yes' /tmp/mcpq-far.unit && grep -qx 'RestrictAddressFamilies=AF_INET' /tmp/mcpq-far.unit"
expect "far: its unit loads the secret from brokerd's credentials (LoadCredential=), and holds not its content" \
    "grep -qx 'LoadCredential=mcp-key:/run/credentials/boxmaker-brokerd.service/mcp-key' /tmp/mcpq-far.unit && ! grep -qF '$MCP_KEY' /tmp/mcpq-far.unit"

# ---- the same server, its grant naming no secret (the control) ----
before=$(wc -l <"$MCP_LOG")
mcpq_call "farbare: the call answers" /tmp/mcpq-farbare "mcpq: far without a key"
expect "farbare: the session reached the server, with no Authorization at all" \
    "tail -n +$((before + 1)) $MCP_LOG | grep -qx 'tools/call' && ! tail -n +$((before + 1)) $MCP_LOG | grep -q '^http authorization'"
expect "farbare: its unit loads no credential" "! grep -q '^LoadCredential' /tmp/mcpq-farbare.unit"

# ---- the same server, its grant listing no host: nothing runs, nothing reaches it ----
before=$(wc -l <"$MCP_LOG")
owner bxctl chat -m "mcpq: far with no host" >/tmp/mcpq-farshut.chat 2>&1 || true
sed 's/^/    | /' /tmp/mcpq-farshut.chat
expect "farshut: the call fails, the grant's hosts not listing the URL's host" \
    "grep -q 'constraints.hosts do not list' /tmp/mcpq-farshut.chat && ! call_results /tmp/mcpq-farshut | grep -q 'far says'"
expect "farshut: no request reached the server (its log unchanged)" \
    "test \"\$(wc -l < $MCP_LOG)\" = $before"

# ---- the stdio server: the secret in its secret_env, from the unit's credentials ----
mcpq_call "local: the call of mcp__local__key answers" /tmp/mcpq-local "mcpq: local with the key"
expect "local: the server saw the secret in MCP_KEY" \
    "test \"\$(call_results /tmp/mcpq-local)\" = \"\$(printf 'MCP_KEY=\\n%s' '$MCP_KEY')\""
grep -E '^(LoadCredential|BindReadOnlyPaths|ExecStart)' /tmp/mcpq-local.unit | sed 's/^/    | /'
expect "local: its unit loads the secret from brokerd's credentials, and holds not its content" \
    "grep -qx 'LoadCredential=mcp-key:/run/credentials/boxmaker-brokerd.service/mcp-key' /tmp/mcpq-local.unit && ! grep -qF '$MCP_KEY' /tmp/mcpq-local.unit"
mcpq_call "localbare: the call answers" /tmp/mcpq-localbare "mcpq: local without a key"
expect "localbare (the control): the server saw no MCP_KEY" \
    "test \"\$(call_results /tmp/mcpq-localbare)\" = \"\$(printf 'MCP_KEY=\\n(unset)')\""
expect "localbare: its unit loads no credential" "! grep -q '^LoadCredential' /tmp/mcpq-localbare.unit"

expect "the calls are audited, allowed by their grants" \
    "bxctl audit show > /tmp/mcpq-audit && grep 'mcp__' /tmp/mcpq-audit | tail -n 8 && for g in far farbare local localbare; do grep -q \"mcp__\${g}__.*ALLOWED by grant \$g\\b\" /tmp/mcpq-audit || exit 1; done"
expect "the secret is nowhere in the audit log" \
    "! grep -rqF '$MCP_KEY' /var/lib/private/boxmaker/audit"
expect "the units were collected (but a job run of the timer's, scenario (k))" \
    "test -z \"\$(systemctl list-units --all --no-legend 'boxmaker-tool-*' | grep -v 'boxmaker-tool-job-')\""
expect "the chain verifies" "bxctl audit verify | grep -q 'audit chain good'"
systemctl stop boxmaker-test-mcp-http.service
brokerd_rendered
note "scenario (q) took $(awk -v a="$q_started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
