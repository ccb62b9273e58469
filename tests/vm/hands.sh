# tests/vm/hands.sh: the hands on systemd 257 (cgroup v2), sourced by guest.sh (helpers from
# tests/container/lib.sh). Through brokerd, python3 in a run unit: a fork bomb stopped by
# TasksMax=, a memory hog by MemoryMax= (systemd's oom-kill), a busy loop by its timeout,
# each its typed failure, each beside the same program under a grant with room for it
# (py-roomy), which ends well; a run with one host reaches that host's address and no other
# (IPAddressAllow=), and the same unit without IPAddressDeny= reaches the other (control).
# A write through brokerd lands as the hands user, in a unit with PrivatePIDs=; a probe in
# the commit unit's properties (brokerd --print-tool-unit project-write) writes its target
# and nothing else, reads none of the owner's other files, and sees none of the owner's
# processes; without PrivatePIDs= it sees them (control).
# shellcheck shell=bash

scenario "hands: a run unit's limits, each its typed failure; its host and no other; a write unit's reach"
# chat_run WORDS: one chat; its output in /tmp/hands.out, the runs' results so far (loopd's
# session logs) in /tmp/hands.results.
chat_run() {
    owner bxctl chat -m "$1" >/tmp/hands.out 2>&1
    sed 's/^/    | /' /tmp/hands.out
    tool_results 'exited with status' >/tmp/hands.results
}
chat_run 'hands limits fork'
expect "a fork bomb (64 children) under TasksMax=16 fails typed: exited with status 3, the fork refused" \
    "grep -qE '\\[-> failed: exited with status 3' /tmp/hands.out && grep -qE 'fork refused after 1[0-9] children: Resource temporarily unavailable' /tmp/hands.out"
chat_run 'hands roomy fork'
expect "control: with TasksMax=256 the same program forks all 64 and ends with status 0" \
    "grep -qE '\\[-> [0-9]+ bytes' /tmp/hands.out && grep -qx 'forked 64' /tmp/hands.results"
chat_run 'hands limits memory'
expect "256 MiB under MemoryMax=64M fails typed: out of memory (systemd's oom-kill)" \
    "grep -qE '\\[-> failed: the tool unit boxmaker-tool-[a-z0-9-]+ ran out of memory' /tmp/hands.out"
chat_run 'hands roomy memory'
expect "control: with MemoryMax=1024M the same program gets its 256 MiB" \
    "grep -qE '\\[-> [0-9]+ bytes' /tmp/hands.out && grep -qx 'allocated 256 MiB' /tmp/hands.results"
chat_run 'hands limits loop'
expect "a busy loop past its 8 s fails typed: its time limit" \
    "grep -qE '\\[-> failed: stopped at its time limit' /tmp/hands.out"
chat_run 'hands roomy loop'
expect "control: a second's spin within its time ends with status 0" \
    "grep -qE '\\[-> [0-9]+ bytes' /tmp/hands.out && grep -qx 'spun 1 s' /tmp/hands.results"
expect "each end is audited, typed: exited with status 3, out of memory, time limit" \
    "bxctl audit show | grep -qE ' run: FAILED, exited with status 3\$' && bxctl audit show | grep -qE ' run: FAILED, out of memory\$' && bxctl audit show | grep -qE ' run: FAILED, time limit\$'"

# The network: the listener of network.sh, again, on both addresses.
systemd-run --quiet --unit=boxmaker-vm-hands-listener python3 /tmp/listen.py 192.0.2.1 198.51.100.7
wait_for 10 "the listener answers on 192.0.2.1:8000 and 198.51.100.7:8000" \
    "python3 -c \"\$PROBE\" tcp:192.0.2.1:8000 && python3 -c \"\$PROBE\" tcp:198.51.100.7:8000"
chat_run 'hands vmnet dial'
tool_results 'exited with status 0' | grep '^NET ' | tail -n 2 >/tmp/hands-net.answer
sed 's/^/    | /' /tmp/hands-net.answer
expect "a run with the host granted.example reaches 192.0.2.1:8000" \
    "grep -qx 'NET 192.0.2.1 CONNECTED' /tmp/hands-net.answer"
expect "and cannot reach another address (198.51.100.7:8000)" \
    "grep -q '^NET 198.51.100.7 BLOCKED' /tmp/hands-net.answer"
# The same dial in the unit brokerd would start for py-vmnet, run straight from a probe.
python3 - <<'PY' >/tmp/hands-dial.py
import json, tomllib
rules = tomllib.load(open("/etc/boxmaker/fake-llama.toml", "rb"))["rule"]
call = next(r for r in rules if r["match"].get("user_contains") == "hands vmnet dial")
print(json.loads(call["answer"]["tool_calls"][0]["arguments"])["args"][1])
PY
dial_says() { probe_unit_with /usr/bin/python3 - </tmp/hands-dial.py | tee /dev/stderr | grep -q "$1"; }
tool_props py-vmnet
expect_run "the same unit (brokerd --print-tool-unit py-vmnet): 198.51.100.7 is blocked" \
    dial_says '^NET 198.51.100.7 BLOCKED'
tool_props py-vmnet /etc/boxmaker/config.toml IPAddressDeny
expect_run "control: the same unit without IPAddressDeny= reaches 198.51.100.7" \
    dial_says '^NET 198.51.100.7 CONNECTED'
systemctl stop boxmaker-vm-hands-listener.service

# A write through brokerd, on 257: the commit unit has PrivatePIDs=.
install -d -o owner -g owner -m 0750 /home/owner/project
expect "a write_file through brokerd lands as the owner's, 0640" \
    "owner bxctl chat -m 'hands: write the project plan' | grep -qE '\\[-> [0-9]+ bytes' && test \"\$(stat -c '%U:%G %a' /home/owner/project/plan.md)\" = 'owner:owner 640'"
# A probe in the commit unit's properties: what it can write, read and see.
# setpriv execs the sleep itself (runuser would stay its root parent, and $! would be that).
setpriv --reuid owner --regid owner --init-groups sleep 300 &
owner_sleep=$!
# Until setpriv has exec'd the sleep (a loaded TCG guest took longer than the next line once).
for _ in $(seq 100); do grep -qx sleep "/proc/$owner_sleep/comm" 2>/dev/null && break; sleep 0.1; done
expect "the owner's sleep runs as the owner (pid $owner_sleep)" \
    "test \"\$(stat -c %U /proc/$owner_sleep)\" = owner && grep -q sleep /proc/$owner_sleep/comm"
cat >/tmp/hands-probe.py <<'PY'
import os, sys
for p in ["/target/probe.txt", "/home/owner/outside.txt", "/etc/probe.txt", "/tmp/probe.txt",
          "/probe.txt", "/opt/boxmaker/probe.txt"]:
    try:
        with open(p, "w") as f:
            f.write("x")
        print("WROTE", p)
    except OSError as e:
        print("NO-WRITE", p, os.strerror(e.errno))
for p in ["/target/plan.md", "/home/owner/.profile", "/etc/shadow", "/etc/boxmaker/config.toml"]:
    try:
        open(p).read()
        print("READ", p)
    except OSError as e:
        print("NO-READ", p, os.strerror(e.errno))
print("PIDS", " ".join(sorted(d for d in os.listdir("/proc") if d.isdigit())))
print("SELF", os.getpid())
try:
    os.kill(int(sys.argv[1]), 0)
    print("SIGNAL", sys.argv[1], "ok")
except OSError as e:
    print("NO-SIGNAL", sys.argv[1], os.strerror(e.errno))
PY
tool_props project-write
note "the commit unit: $(printf '%s ' "${PROPS[@]}" | grep -oE 'User=[^ ]+|PrivatePIDs=[^ ]+|BindPaths=[^ ]+' | tr '\n' ' ')"
probe_unit_with /usr/bin/python3 - "$owner_sleep" </tmp/hands-probe.py >/tmp/hands-probe.out 2>&1
sed 's/^/    | /' /tmp/hands-probe.out
expect "the commit unit writes its target (/target, the granted directory)" \
    "grep -qx 'WROTE /target/probe.txt' /tmp/hands-probe.out && test \"\$(stat -c %U /home/owner/project/probe.txt)\" = owner"
for p in /home/owner/outside.txt /etc/probe.txt /tmp/probe.txt /probe.txt /opt/boxmaker/probe.txt; do
    expect "the kernel refuses it a write outside the target: $p" \
        "grep -q '^NO-WRITE $p ' /tmp/hands-probe.out && test ! -e $p"
done
setpriv --reuid owner --regid owner --init-groups python3 - "$owner_sleep" </tmp/hands-probe.py >/tmp/hands-probe-owner.out 2>&1
expect "control: the same probe as the owner outside the unit writes /home/owner/outside.txt and /tmp/probe.txt" \
    "grep -qx 'WROTE /home/owner/outside.txt' /tmp/hands-probe-owner.out && grep -qx 'WROTE /tmp/probe.txt' /tmp/hands-probe-owner.out"
rm -f /home/owner/outside.txt /tmp/probe.txt
expect "it reads its target, and none of the owner's other files, /etc/shadow or boxmaker's config" \
    "grep -qx 'READ /target/plan.md' /tmp/hands-probe.out && grep -q '^NO-READ /home/owner/.profile ' /tmp/hands-probe.out && grep -q '^NO-READ /etc/shadow ' /tmp/hands-probe.out && grep -q '^NO-READ /etc/boxmaker/config.toml ' /tmp/hands-probe.out"
expect "PrivatePIDs=: it is pid 1 of its own PID namespace, sees none of the owner's processes and cannot signal the owner's sleep (pid $owner_sleep)" \
    "grep -qx 'SELF 1' /tmp/hands-probe.out && grep -q '^PIDS ' /tmp/hands-probe.out && ! grep -qw 'PIDS.* $owner_sleep' /tmp/hands-probe.out && grep -qx 'NO-SIGNAL $owner_sleep No such process' /tmp/hands-probe.out"
tool_props project-write /etc/boxmaker/config.toml PrivatePIDs
probe_unit_with /usr/bin/python3 - "$owner_sleep" </tmp/hands-probe.py >/tmp/hands-probe-shared.out 2>&1
grep '^PIDS \|SELF\|SIGNAL' /tmp/hands-probe-shared.out | cut -c1-200 | sed 's/^/    | /'
expect "control: without PrivatePIDs= the same unit runs in the host's PID namespace and can signal the owner's sleep" \
    "! grep -qx 'SELF 1' /tmp/hands-probe-shared.out && grep -qx 'SIGNAL $owner_sleep ok' /tmp/hands-probe-shared.out"
kill "$owner_sleep" 2>/dev/null
wait "$owner_sleep" 2>/dev/null
rm -f /home/owner/project/probe.txt
