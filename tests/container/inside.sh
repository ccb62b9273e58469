#!/bin/bash
# tests/container/inside.sh: the container tier's scenarios, run by
# boxmaker-container-test.service inside the booted container (systemd 252 as PID 1,
# dbus-broker, polkit). They mirror nix/tests/*.nix (a) to (e), (g), (j) and (k); scenario (h), a
# test-only tool that reads a sibling of the file its call covers and finds it unbound, is
# the container tier's own (tests/container/binds.sh), and so are scenario (i), granted
# paths under a 0700 home and through a linked prefix (tests/container/grant-paths.sh), and
# scenario (l), the indexer's units, with a test-only stand-in for the indexer
# (tests/container/indexer.sh), and scenario (m), the audit log's daily full verification
# (tests/container/audit-verify.sh), and scenario (n), `bxctl verify` against the real units
# and with a loosened drop-in (tests/container/verify.sh), and scenario (o), the hands: a
# write as the owner and a run in its empty unit (tests/container/hands.sh), and scenario
# (p), the reference MCP server mcp-server-time pinned and called through brokerd's units,
# and timed beside a bare systemd-run (tests/container/mcp.sh, mcp-launch.py), and scenario
# (q), a remote MCP server over Streamable HTTP and a grant's secret delivered as a credential
# (tests/container/mcp-remote.sh). The units are
# the ones rendered from nix/units.nix; the binaries are bound at /opt/boxmaker/bin.
# Ends the container with the number of failed checks as its exit code (0: all passed).
set -uo pipefail

# shellcheck source=tests/container/lib.sh
source /opt/boxmaker-test/lib.sh
export -f owner active main_pid role_uid role_gid as_role in_role journal
# shellcheck disable=SC2090 # PROBE is python source, read by python3, never split by a shell
export PROBE
started=$(date +%s.%N)

trap 'end_container "container tier" "$started"' EXIT

scenario "setup: what runs here, and the owner's files"
echo "systemd $(systemctl --version | awk 'NR == 1 { print $2 }') as PID 1; system bus:" \
    "$(systemctl show -p Id --value dbus.service); kernel $(uname -r)"
expect "the system bus is dbus-broker (a DynamicUser cannot reach dbus-daemon, systemd#22737)" \
    "test \"\$(systemctl show -p Id --value dbus.service)\" = dbus-broker.service"
expect "sysusers made the socket-directory groups" \
    "getent group boxmaker-admin boxmaker-chat boxmaker-loop-broker boxmaker-loop-infer boxmaker-infer-broker boxmaker-broker-gateway"
make_owner

# ---- (a) socket activation and readiness --------------------------------------------------
scenario "(a) socket activation: no role runs before its first connection; READY"
for s in boxmaker-brokerd-loop boxmaker-brokerd-admin boxmaker-brokerd-chat boxmaker-brokerd-witness boxmaker-loopd boxmaker-inferproxy; do
    wait_for 10 "$s.socket is listening" "systemctl is-active --quiet $s.socket"
done
for role in brokerd loopd inferproxy; do
    refuse "boxmaker-$role.service does not run before a connection" \
        "active boxmaker-$role.service"
done
for pair in loop-broker:boxmaker-loop-broker admin-broker:boxmaker-admin \
    loop-infer:boxmaker-loop-infer chat-loop:boxmaker-chat chat-broker:boxmaker-chat infer-broker:boxmaker-infer-broker; do
    expect "/run/boxmaker/${pair%%:*} is 750 root:${pair#*:}" \
        "test \"\$(stat -c '%a %U %G' /run/boxmaker/${pair%%:*})\" = '750 root ${pair#*:}'"
done
expect "admin-broker/broker.sock is a socket, mode 660" \
    "test -S /run/boxmaker/admin-broker/broker.sock && test \"\$(stat -c %a /run/boxmaker/admin-broker/broker.sock)\" = 660"
# Control for readiness: a Type=notify unit that never sends READY=1 stays "activating"
# here, so "active" for a role below means it said READY=1.
systemd-run --quiet --no-block --unit=boxmaker-probe-never-ready -p Type=notify -p TimeoutStartSec=60 sleep 60
sleep 1
expect "control: a Type=notify unit without READY=1 stays activating" \
    "test \"\$(systemctl show -p ActiveState --value boxmaker-probe-never-ready.service)\" = activating"
systemctl stop boxmaker-probe-never-ready.service 2>/dev/null || true

expect "the first bxctl connection (owner: bxctl approvals) is answered" \
    "owner bxctl approvals | grep -q 'no approvals waiting'"
expect "that connection started brokerd, which is active (READY=1 sent)" \
    "active boxmaker-brokerd.service"
expect "brokerd is Type=notify and its STATUS= says serving" \
    "test \"\$(systemctl show -p Type --value boxmaker-brokerd)\" = notify && systemctl show -p StatusText --value boxmaker-brokerd | grep -q '^serving'"
note "brokerd status: $(systemctl show -p StatusText --value boxmaker-brokerd)"
expect "brokerd runs as its DynamicUser boxmaker-brokerd (a uid in 61184-65519)" \
    "u=\$(stat -c %u /proc/\$(main_pid brokerd)); test \"\$(id -un \$u)\" = boxmaker-brokerd && test \$u -ge 61184 -a \$u -le 65519"
expect "brokerd took both sockets from systemd (socket activation, not its own bind)" \
    "journal -u boxmaker-brokerd.service | grep -q 'taken from systemd (socket activation)'"
refuse "only the admin side was used: loopd still does not run" "active boxmaker-loopd.service"
refuse "a user outside boxmaker-admin cannot reach brokerd" "runuser -u stranger -- bxctl approvals"
wait_for 10 "the fake llama-server listens on 127.0.0.1:8080" "python3 -c \"\$PROBE\" tcp:127.0.0.1:8080"
expect "a chat (owner: bxctl chat -m hello) gets the model's answer" \
    "owner bxctl chat -m hello | grep -q 'test model'"
for role in loopd inferproxy; do
    expect "the chat started $role, Type=notify, active (READY=1)" \
        "active boxmaker-$role.service && test \"\$(systemctl show -p Type --value boxmaker-$role)\" = notify"
done

# ---- (b) a chat round trip with an allowed tool, run in a transient unit -------------------
scenario "(b) chat round trip: an allowed read_file runs as a transient boxmaker-tool-* unit"
expect "the allowed tool call answers from the file" \
    "owner bxctl chat -m 'what is on my todo list?' | tee /tmp/todo.out | grep -q 'Your todo list says: buy milk.' && grep -q '\\[tool read_file' /tmp/todo.out"
sed 's/^/    | /' /tmp/todo.out
expect "systemd started the tool as a transient unit boxmaker-tool-*.service" \
    "journal | grep -E 'boxmaker-tool-[a-z0-9-]+\\.service'"
note "$(journal | grep -E -m 2 'boxmaker-tool-[a-z0-9-]+\.service' | tr '\n' ' ')"
expect "the unit was collected: no boxmaker-tool-* unit is left (but a job run of the timer's, scenario (k))" \
    "test -z \"\$(systemctl list-units --all --no-legend 'boxmaker-tool-*' | grep -v 'boxmaker-tool-job-')\""
expect "the decision is audited (ALLOWED by grant notes-read)" \
    "bxctl audit show | grep -q 'ALLOWED by grant notes-read'"
expect "loopd keeps the session" "owner bxctl sessions | grep -v -q 'no sessions'"
# brokerd is not root: systemd admits StartTransientUnit from it only through polkit.
run_tool='systemd-run --wait --quiet --no-ask-password -p DynamicUser=yes'
expect "polkit: brokerd's DynamicUser may start a DynamicUser boxmaker-tool-* unit" \
    "\$(as_role brokerd) $run_tool --unit=boxmaker-tool-probe-1 true"
refuse "polkit: the owner may not start one (no rule admits it)" \
    "owner $run_tool --unit=boxmaker-tool-probe-2 true"
refuse "polkit: the stranger may not start one" \
    "runuser -u stranger -- $run_tool --unit=boxmaker-tool-probe-3 true"

# ---- (c) a denied tool and the audit chain -------------------------------------------------
scenario "(c) a denied tool call; bxctl audit verify"
expect "read_file on /etc/passwd is denied and the model says so" \
    "owner bxctl chat -m 'show me /etc/passwd' | tee /tmp/passwd.out | grep -q 'I am not allowed to do that.' && grep -q denied /tmp/passwd.out && ! grep -q 'root:' /tmp/passwd.out"
expect "the denial is audited" "bxctl audit show | grep -q DENIED"
expect "bxctl audit verify: the chain is good" "bxctl audit verify | tee /dev/stderr | grep -q 'audit chain good'"
note "$(bxctl audit verify 2>&1 | head -n 1)"
# Tampering: a changed record is caught by the next record's `prev` link. The last record
# has no successor, so a change there is caught only against a head kept elsewhere (which
# is why verify prints the head): both are checked.
for copy in /root/audit-mid /root/audit-last; do
    rm -rf "$copy"
    cp -r /var/lib/private/boxmaker/audit "$copy"
done
head_before=$(bxctl audit verify --dir /root/audit-last | sed -n 's/.* head \([0-9a-f]*\).*/\1/p')
expect "control: an untouched copy of the chain verifies, with the same head" \
    "bxctl audit verify --dir /root/audit-mid | grep -q 'audit chain good.* head $head_before'"
note "last record: $(tail -n 1 /root/audit-last/*.jsonl | cut -c1-160)..."
# (b)'s ALLOWED record names todo.md and is followed by (c)'s DENIED record.
sed -i '0,/todo\.md/s//todo.mx/' /root/audit-mid/*.jsonl
refuse "a changed record (the ALLOWED one, not the last) breaks the chain" \
    "bxctl audit verify --dir /root/audit-mid"
sed -i '$s/passwd/passwq/' /root/audit-last/*.jsonl
expect "a changed last record still links, but its head differs from the one kept before" \
    "bxctl audit verify --dir /root/audit-last | grep 'audit chain good' && ! bxctl audit verify --dir /root/audit-last | grep -q 'head $head_before'"
refuse "the audit log is brokerd's alone: the owner cannot list it" \
    "owner ls /var/lib/private/boxmaker/audit"

# ---- (d) ask, then bxctl approve --------------------------------------------------------------
scenario "(d) a grant in ask mode: the call waits; bxctl approve lets it run once"
runuser -u owner -- sh -c "bxctl chat -m 'list my notes' > /tmp/list.out 2>&1 &"
wait_for 15 "the call waits for the owner (bxctl approvals lists it)" \
    "owner bxctl approvals | grep -q '^approval '"
wait_for 10 "bxctl chat says it waits for approval" "grep -q 'waits for your approval' /tmp/list.out"
approval=$(owner bxctl approvals | awk '/^approval /{ print $2; exit }')
note "approval $approval"
refuse "a user outside boxmaker-admin cannot answer" "runuser -u stranger -- bxctl approve $approval"
refuse "an unknown approval is refused" "owner bxctl approve 00000000000000000000000000000000"
expect "bxctl approve takes a unique 8-character prefix, echoes the whole id, answers approved" \
    "owner bxctl approve ${approval:0:8} > /tmp/approve.out && grep -qx 'approve $approval' /tmp/approve.out && grep -qx approved /tmp/approve.out"
wait_for 15 "the approved call ran and the model answered from the listing" \
    "grep -q 'Your notes directory holds todo.md.' /tmp/list.out"
sed 's/^/    | /' /tmp/list.out
expect "the approval is audited" "bxctl audit show | grep -q APPROVED"
refuse "an approval is used once" "owner bxctl approve $approval"
expect "the chain still verifies" "bxctl audit verify | grep -q 'audit chain good'"
expect "bxctl status: each role ready, the model ok, the units' state from systemd" \
    "owner bxctl status > /tmp/status.out; rc=\$?; sed 's/^/    | /' /tmp/status.out; [ \$rc = 0 ] && grep -q '^brokerd     reachable, ready' /tmp/status.out && grep -q '^model       ok' /tmp/status.out && grep -q '^unit        boxmaker-brokerd.service: active (running)' /tmp/status.out"
expect "bxctl status tells a user outside the owner's groups which group to join" \
    "runuser -u stranger -- bxctl status 2>&1 | grep -q 'help: join the group .boxmaker-admin. that may enter'"

# ---- (e) isolation --------------------------------------------------------------------------
scenario "(e) isolation: roles, the bus, and what a tool unit can reach"
# shellcheck source=tests/container/isolation.sh
source /opt/boxmaker-test/isolation.sh

# ---- (g) the Mattermost gateway ---------------------------------------------------------------
# shellcheck source=tests/container/gateway.sh
source /opt/boxmaker-test/gateway.sh

# ---- (h) a tool unit binds only the covered path ------------------------------------------------
# shellcheck source=tests/container/binds.sh
source /opt/boxmaker-test/binds.sh

# ---- (i) granted paths under /home, and through a linked prefix ---------------------------------
# shellcheck source=tests/container/grant-paths.sh
source /opt/boxmaker-test/grant-paths.sh

# ---- (j) the agent's notes ----------------------------------------------------------------
# shellcheck source=tests/container/notes.sh
source /opt/boxmaker-test/notes.sh

# ---- (k) scheduled jobs: a timer fires; job identity from the job's DynamicUser -----------------
# shellcheck source=tests/container/jobs.sh
source /opt/boxmaker-test/jobs.sh

# ---- (l) the indexer under systemd: its path unit, its DynamicUser, what it can reach ----------
# shellcheck source=tests/container/indexer.sh
source /opt/boxmaker-test/indexer.sh

# ---- (m) the audit log's daily full verification, and brokerd's checkpoint ----------------------
# shellcheck source=tests/container/audit-verify.sh
source /opt/boxmaker-test/audit-verify.sh

# ---- (n) bxctl verify: the live deployment against what the module generated ------------------
# shellcheck source=tests/container/verify.sh
source /opt/boxmaker-test/verify.sh

# ---- (o) the hands: writes as the owner, runs in an empty unit ----------------------------------
# shellcheck source=tests/container/hands.sh
source /opt/boxmaker-test/hands.sh

# ---- (p) an MCP server through brokerd's units ---------------------------------------------------
# shellcheck source=tests/container/mcp.sh
source /opt/boxmaker-test/mcp.sh

# ---- (q) a remote MCP server over HTTP, a grant's secret as a credential -------------------------
# shellcheck source=tests/container/mcp-remote.sh
source /opt/boxmaker-test/mcp-remote.sh

# ---- every honest prompt above was accounted for (issue 17) ----------------------------------
scenario "attested context: no honest prompt fell back to the highest label sent"
expect "brokerd read the owner's core memory from /etc/boxmaker/core.md and accounted every prompt" \
    "test \"\$(journal -u boxmaker-brokerd.service | grep -c 'are not accounted for')\" = 0"
