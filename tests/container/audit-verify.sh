# tests/container/audit-verify.sh: scenario (m), sourced by inside.sh: the daily full
# verification of the audit log (nix/audit-verify.nix, docs/decisions.md A8) under real
# systemd. Its oneshot runs as its own DynamicUser with the owner's admin group as its
# primary group, and asks brokerd on the admin socket; brokerd verifies every line, checks
# its checkpoint and moves it. Then a line before the checkpoint is changed: brokerd's start
# (which reads only past the checkpoint) does not see it, the timer's run does, fails its
# unit, and brokerd says so in its journal and on Mattermost (scenario (g)'s gatewayd and
# fake-mattermost). The line is put back at the end.
# shellcheck shell=bash

scenario "(m) the audit log's daily full verification: its timer, its oneshot, brokerd's checkpoint"
expect "boxmaker-audit-verify.timer is enabled (timers.target) and waits" \
    "systemctl is-active --quiet boxmaker-audit-verify.timer && systemctl show -p WantedBy --value boxmaker-audit-verify.timer | grep -q timers.target"
expect "the timer's run (started as the timer starts it) succeeds: brokerd verified the whole chain" \
    "systemctl start boxmaker-audit-verify.service"
expect "it ran as its DynamicUser with boxmaker-admin as its group, and brokerd admitted it" \
    "journal -u boxmaker-audit-verify.service | grep -q 'audit chain good (verified by brokerd)' && test \"\$(systemctl show -p Group --value boxmaker-audit-verify.service)\" = boxmaker-admin"
note "$(journal -u boxmaker-audit-verify.service | grep -m 1 'audit chain good' | cut -c1-200)"
expect "brokerd logged the whole verification and moved its checkpoint there" \
    "journal -u boxmaker-brokerd.service | grep -q 'the whole chain verified.*the checkpoint now there'"
expect "bxctl audit verify (offline, every line) agrees with the checkpoint" \
    "bxctl audit verify | tee /dev/stderr | grep -q 'checkpoint at seq [0-9]* (.*) agrees'"

audit=/var/lib/private/boxmaker/audit
oldest=$(find "$audit" -name '*.jsonl' | sort | head -n 1)
# (b)'s ALLOWED record names todo.md; it is long before the checkpoint. Changed in place and
# changed back below (a copy put back would also take away what brokerd appends meanwhile,
# which its verification refuses too: the log would end before the line its writer is at).
sed -i '0,/todo\.md/s//todo.mx/' "$oldest"
refuse "control: the changed line breaks the chain for bxctl audit verify" "bxctl audit verify"
expect "brokerd restarts: its start reads only past the checkpoint, so it serves" \
    "systemctl restart boxmaker-brokerd.service && active boxmaker-brokerd.service && journal -u boxmaker-brokerd.service | grep -q 'verified past its checkpoint'"
refuse "the timer's run finds the change and fails its unit" \
    "systemctl start boxmaker-audit-verify.service"
expect "brokerd said it at error priority in its journal" \
    "journal -u boxmaker-brokerd.service -p err | grep -q 'the verification of the whole chain FAILED'"
wait_for 30 "and on Mattermost: a bot root post says the audit log does not verify" \
    "mm root-post 'the audit log does not verify'"
note "alert: $(mm message "$(mm root-post 'the audit log does not verify')" | head -c 240)"
sed -i '0,/todo\.mx/s//todo.md/' "$oldest"
# sed wrote a new file: brokerd reopens it.
systemctl restart boxmaker-brokerd.service
expect "the line put back, the next run succeeds again" "systemctl start boxmaker-audit-verify.service"
