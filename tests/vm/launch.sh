# tests/vm/launch.sh: a tool unit's launch cost, a harness figure (docs/performance.md),
# sourced by guest.sh. Never a pass/fail on time: the checks are that both sides ran.
# Alternating, ROUNDS times: a trivial tool call through brokerd (a read_file of the todo
# list under notes-read, witnessed on infer-broker as inferproxy would, then sent on
# loop-broker as loopd sends it, as loopd's user), and the
# floor: a bare `systemd-run --wait --pipe` of boxmaker-tool with the same properties
# (brokerd --print-tool-unit notes-read) and the same invocation on stdin. Written to
# /ci/out/launch.txt for tests/vm/run.sh to print.
# shellcheck shell=bash

scenario "launch cost: a trivial tool call through brokerd against a bare systemd-run"
tool_props notes-read
printf '{"call":{"tool":"read_file","arguments":{"path":"/srv/notes/todo.md"}},"max_bytes":65536,"roots":["/srv/notes"],"addresses":[],"timeout_ms":30000}' \
    >/tmp/invocation-todo.json
printf '%s\n' "${PROPS[@]}" >/tmp/launch-props
wait_for 10 "loopd runs (its DynamicUser exists)" "active boxmaker-loopd.service"
wait_for 10 "inferproxy runs (its DynamicUser exists: brokerd admits it on witness.sock)" "active boxmaker-inferproxy.service"
expect "the harness ran both sides 9 times" \
    "python3 /opt/boxmaker-vm/launch.py 9 /tmp/launch-props /tmp/invocation-todo.json | tee /ci/out/launch.txt | grep -q '^ratio '"
sed 's/^/    | /' /ci/out/launch.txt

# A run of `true` (grant true-run): through brokerd (its executor in the unit starts the
# program) against a bare `systemd-run` of /usr/bin/true with the same properties (brokerd
# --print-tool-unit true-run). Issue 25's bound: at most 1.3 times (docs/performance.md).
tool_props true-run
printf '%s\n' "${PROPS[@]}" >/tmp/launch-run-props
expect "the harness ran both sides of a run of true 9 times" \
    "python3 /opt/boxmaker-vm/launch.py 9 /tmp/launch-run-props /dev/null run '{\"program\":\"true\",\"args\":[]}' 'exited with status 0' /usr/bin/true | tee /ci/out/launch-run.txt | grep -q '^ratio '"
sed 's/^/    | /' /ci/out/launch-run.txt
