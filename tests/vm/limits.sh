# tests/vm/limits.sh: a tool unit's MemoryMax= and TasksMax= hold, sourced by guest.sh
# (helpers from tests/container/lib.sh). brokerd runs the test-only tests/vm/test-tool.py
# (stage.sh's config-test-tool.toml, through a drop-in); the model's rules
# (tests/vm/rules.toml) make calls it answers by touching 512 MiB (MemoryMax= is
# broker.tool_memory_mib, 256) or forking 48 children (TasksMax= is broker.tool_tasks_max,
# 16). Negative control for each: the same unit (brokerd --print-tool-unit) without that
# one setting lets the same tool through.
# shellcheck shell=bash

scenario "limits: a tool unit's MemoryMax= and TasksMax= stop a tool that exceeds them"
echo "the call names this file; the test tool does not read it" >/srv/notes/hog-memory.md
echo "the call names this file; the test tool does not read it" >/srv/notes/hog-tasks.md
chmod 0644 /srv/notes/hog-memory.md /srv/notes/hog-tasks.md
config=/etc/boxmaker/config-test-tool.toml
tool=/opt/boxmaker-vm/test-tool.py
# What brokerd hands the tool for a read_file under notes-read, one file per call.
for hog in memory tasks; do
    printf '{"call":{"tool":"read_file","arguments":{"path":"/srv/notes/hog-%s.md"}},"max_bytes":65536,"roots":["/srv/notes"],"addresses":[],"timeout_ms":30000}' \
        "$hog" >"/tmp/invocation-$hog.json"
done
# hog_says HOG TEXT: the test tool, in a unit with PROPS, answers TEXT to the HOG call.
hog_says() {
    probe_unit_with "$tool" <"/tmp/invocation-$1.json" | tee /dev/stderr | grep -qF "$2"
}
has_prop() { printf '%s\n' "${PROPS[@]}" | grep -qx "$1"; }
tool_props notes-read "$config"
expect_run "the tool unit has MemoryMax=268435456 (brokerd --print-tool-unit notes-read)" has_prop MemoryMax=268435456
expect_run "the tool unit has TasksMax=16" has_prop TasksMax=16
refuse_run "the test tool in that unit does not get 512 MiB" hog_says memory "allocated 512 MiB"
refuse_run "the test tool in that unit cannot fork 48 children" hog_says tasks "started 48 children"
tool_props notes-read "$config" MemoryMax
refuse_run "control: the unit without MemoryMax= has no MemoryMax=" has_prop MemoryMax=268435456
expect_run "control: without MemoryMax= the same unit gets 512 MiB" hog_says memory "allocated 512 MiB"
tool_props notes-read "$config" TasksMax
expect_run "control: without TasksMax= the same unit forks 48 children" hog_says tasks "started 48 children"

brokerd_config "$config" "tests/vm/limits.sh only"
# What systemd-run --wait itself says of that end (without --quiet, as brokerd runs it): the
# text crates/brokerd/src/run/runner/unit_result/tests.rs parses.
tool_props notes-read "$config"
systemd-run --wait --pipe --collect --service-type=exec "${PROPS[@]}" -- "$tool" \
    <"/tmp/invocation-memory.json" 2>&1 >/dev/null | sed 's/^/    systemd-run says: /'
expect "through brokerd: the memory hog's call fails typed as out of memory, and the model is told" \
    "owner bxctl chat -m 'eat memory' | tee /tmp/memory.out | grep -qE '\[-> failed: the tool unit boxmaker-tool-[a-z0-9-]+ ran out of memory \(stopped at its MemoryMax=\)' && grep -q 'The tool did not work this time.' /tmp/memory.out"
sed 's/^/    | /' /tmp/memory.out
unit=$(grep -o -m 1 'the tool unit boxmaker-tool-[a-z0-9-]*' /tmp/memory.out | awk '{ print $4 }')
expect "systemd says why: brokerd's unit for that call ($unit) was OOM-killed" \
    "test -n '$unit' && journal | grep -F '$unit.service: Failed with result '\''oom-kill'\'"
session=$(sed -n 's/.*\[session \([^]]*\)\].*/\1/p' /tmp/memory.out | head -n 1)
note "session $session"
expect "the session goes on: the fork bomb's call in the same session fails with the tool's reason" \
    "owner bxctl chat --session $session -m 'spawn tasks' | tee /tmp/tasks.out | grep -qE '\[-> failed: the tool unit boxmaker-tool-[a-z0-9-]+ exited with status 3; stderr: test-tool: fork refused after 1[0-9] children: Resource temporarily unavailable\]'"
sed 's/^/    | /' /tmp/tasks.out
expect "both calls are audited (allowed by notes-read), and the chain verifies" \
    "test \"\$(bxctl audit show | grep -c 'ALLOWED by grant notes-read')\" -ge 2 && bxctl audit verify | grep -q 'audit chain good'"
bxctl audit show | grep -F 'FAILED, ' | sed 's/^/    | /'
expect "the audit types both ends: out of memory, then exited with status 3" \
    "bxctl audit show | grep -qE ' $session call [0-9]+ read_file: FAILED, out of memory\$' && bxctl audit show | grep -qE ' $session call [0-9]+ read_file: FAILED, exited with status 3\$'"
brokerd_rendered
expect "the session goes on: in the same session the rendered tool reads the todo list" \
    "owner bxctl chat --session $session -m 'what is on my todo list?' | grep -q 'Your todo list says: buy milk.'"
