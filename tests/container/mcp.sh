# tests/container/mcp.sh: scenario (p) of the container tier, sourced by inside.sh (its
# shellcheck shell=bash
# helpers come from lib.sh). An MCP server through brokerd's real units (issue 26): the
# reference mcp-server-time from PyPI (tests/mcp/setup.sh's cached virtualenv, bound at
# /opt/mcp-venv; run by the container's own python3.11) is configured as `[[mcp]] time`
# (run.sh writes /etc/boxmaker/config-mcp.toml: the rendered config and that entry, taken by
# a runtime drop-in), pinned with `bxctl mcp pin`, and called by the model through loopd,
# inferproxy and brokerd, one transient unit per call. The call's unit file, as systemd
# keeps it under /run/systemd/transient while the unit exists, is copied when it appears:
# no network (grant mcp-time has no hosts), the virtualenv bound read-only, no
# MemoryDenyWriteExecute=. Then tests/container/mcp-launch.py times the call through brokerd
# beside a bare systemd-run of the same server with the same properties (issue 26's 1.3).

scenario "(p) an MCP server pinned and called through brokerd's units"
p_started=$(date +%s.%N)
brokerd_config /etc/boxmaker/config-mcp.toml "tests/container/mcp.sh: scenario (p) only"
expect "bxctl mcp list: the configured server, not pinned" \
    "owner bxctl mcp list | tee /dev/stderr | grep -q '^time  not pinned'"
expect "bxctl mcp pin time --yes: brokerd probes it in a unit and the owner pins its tools" \
    "owner bxctl mcp pin time --yes > /tmp/mcp-pin.out && grep -q 'tool mcp__time__get_current_time' /tmp/mcp-pin.out && grep -q '^pinned time: ' /tmp/mcp-pin.out"
sed -n '1p;$p' /tmp/mcp-pin.out | sed 's/^/    | /'
expect "the probe ran as a transient unit boxmaker-tool-mcp-pin-time-*" \
    "journal | grep -qE 'Started boxmaker-tool-mcp-pin-time-[0-9]+\\.service'"
expect "the pin is audited" "bxctl audit show | grep -q 'MCP server time pinned by '"

# The call's unit file (the one unit running `boxmaker-tool mcp-call`), copied the moment
# it appears, until the chat is over.
rm -f /tmp/mcp-unit.service /tmp/mcp-watch.stop
(
    while [[ ! -e /tmp/mcp-watch.stop ]]; do
        for f in /run/systemd/transient/boxmaker-tool-*.service; do
            [[ -e $f ]] && grep -q 'mcp-call' "$f" && cp "$f" /tmp/mcp-unit.service && exit 0
        done
        sleep 0.005
    done
) &
watcher=$!
expect "the model's call of mcp__time__get_current_time runs and answers" \
    "owner bxctl chat -m 'mcp: what time is it in Tokyo?' | tee /tmp/mcp-chat.out | grep -qE '\\[-> [0-9]+ bytes'"
sed 's/^/    | /' /tmp/mcp-chat.out
touch /tmp/mcp-watch.stop
wait "$watcher"
expect "the server's answer (in loopd's session log) is Tokyo's time" \
    "tool_results '{' | grep -q '\"timezone\": \"Asia/Tokyo\"'"
expect "the call is audited as allowed by grant mcp-time" \
    "bxctl audit show | grep -q 'mcp__time__get_current_time.*ALLOWED by grant mcp-time'"
expect "the call's unit was copied while it ran" "test -s /tmp/mcp-unit.service"
grep -E '^(DynamicUser|PrivateNetwork|RootDirectory|BindReadOnlyPaths|MemoryDenyWriteExecute|IPAddress)' \
    /tmp/mcp-unit.service | sed 's/^/    | /'
expect "its unit: a DynamicUser in an empty root, boxmaker-tool mcp-call" \
    "grep -qx 'DynamicUser=yes' /tmp/mcp-unit.service && grep -q '^RootDirectory=' /tmp/mcp-unit.service && grep -q 'boxmaker-tool.*mcp-call' /tmp/mcp-unit.service"
expect "no network: the grant has no hosts (PrivateNetwork=yes, no IPAddressAllow=)" \
    "grep -qx 'PrivateNetwork=yes' /tmp/mcp-unit.service && ! grep -q '^IPAddressAllow=' /tmp/mcp-unit.service"
expect "the server's closure, the virtualenv, bound read-only" \
    "grep -qE '^BindReadOnlyPaths=-/opt/mcp-venv( |$|:)' /tmp/mcp-unit.service"
expect "no MemoryDenyWriteExecute= (Python's libffi needs it off), unlike a plain tool's unit" \
    "! grep -q '^MemoryDenyWriteExecute=' /tmp/mcp-unit.service && brokerd --print-tool-unit notes-read | grep -qx 'MemoryDenyWriteExecute=yes'"
expect "the units were collected: no boxmaker-tool-* unit is left (but a job run of the timer's, scenario (k))" \
    "test -z \"\$(systemctl list-units --all --no-legend 'boxmaker-tool-*' | grep -v 'boxmaker-tool-job-')\""
expect "the chain verifies" "bxctl audit verify | grep -q 'audit chain good'"
note "scenario (p) checks took $(awk -v a="$p_started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

# The measure: the same server in a bare systemd-run with the call's own unit's properties,
# BOXMAKER_MCP_ROUNDS rounds (run.sh writes them to /etc/boxmaker/mcp-rounds).
MCP_ROUNDS=$(cat /etc/boxmaker/mcp-rounds)
m_started=$(date +%s.%N)
sed -n '/^\[Service\]/,$p' /tmp/mcp-unit.service |
    grep -vE '^(\[|#|$|ExecStart|Type=|Description=|CollectMode=|RemainAfterExit=)' >/tmp/mcp-props
expect "mcp-launch.py: $MCP_ROUNDS rounds of the call through brokerd beside a bare systemd-run" \
    "python3 /opt/boxmaker-test/mcp-launch.py $MCP_ROUNDS /tmp/mcp-props > /tmp/mcp-launch.out"
sed 's/^/    | /' /tmp/mcp-launch.out
note "the measure took $(awk -v a="$m_started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
brokerd_rendered
