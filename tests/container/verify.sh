# tests/container/verify.sh: scenario (n), sourced by inside.sh: `bxctl verify` against the
# real units (docs/verify.md, nix/verify.nix). As root, as the owner and as its daily timer's
# oneshot (the static user boxmaker-verify) every check passes against the units rendered from
# nix/units.nix and /etc/boxmaker/units.json rendered with them; then a drop-in that loosens
# loopd, a drop-in that raises its exposure past its limit and a runtime change that widens
# inferproxy's IP allow list each FAIL, named, in the journal at error priority and in the
# oneshot's result, and the oneshot's failure is posted on Mattermost (--alert). Each is
# taken back at the end. The flows of the test grants are warns
# (private data to py-net's host and the morning brief's delivery), none secret.
# shellcheck shell=bash

scenario "(n) bxctl verify: the live deployment checked against what the module generated"
units_generated=$(python3 -c 'import json; print(len(json.load(open("/etc/boxmaker/units.json"))["units"]))')
note "/etc/boxmaker/units.json describes $units_generated units"
expect "sysusers made boxmaker-verify: primary group boxmaker-admin, a member of boxmaker-chat" \
    "test \"\$(id -gn boxmaker-verify)\" = boxmaker-admin && id -Gn boxmaker-verify | grep -qw boxmaker-chat"

expect "as root: bxctl verify passes (exit 0), no FAIL" \
    "bxctl verify > /tmp/verify.out; rc=\$?; sed 's/^/    | /' /tmp/verify.out; test \$rc = 0 && ! grep -q '^FAIL' /tmp/verify.out"
sed 's/^/    | /' /tmp/verify.out
expect "every generated unit is as generated and within its limit ($units_generated ok lines)" \
    "grep '  units  ' /tmp/verify.out | grep -v '^ok'; test \"\$(grep -c '^ok    units  boxmaker-' /tmp/verify.out)\" = $units_generated && grep -q '^ok    units  boxmaker-loopd.service: exposure 0.4 (limit 1.0); its [0-9]* compared properties as generated' /tmp/verify.out"
expect "the test's own unit is named as one the module did not generate" \
    "grep -q '^warn  units  boxmaker-container-test.service: a boxmaker unit the module did not generate' /tmp/verify.out"
expect "the model: reached through inferproxy, its /props read, the replay within 8 tokens a request" \
    "grep -q '^ok    model  reach: loopd reaches inferproxy' /tmp/verify.out && grep -q '^ok    model  tools: ' /tmp/verify.out && grep -q -e '^ok    model  replay: 3 turn(s) through loopd' -e '^warn  model  replay: 3 turn(s) through loopd.*could not be measured: another session shared its slot' /tmp/verify.out"
expect "as root, inferproxy's refusal of /slots* is asked as loopd's user (a transient unit)" \
    "grep -q '^ok    model  slots: inferproxy refuses GET /slots, .* (asked as boxmaker-loopd: 403' /tmp/verify.out"
expect "the state: the audit chain (read by root) and its checkpoint, the grants as loaded, the approvals" \
    "grep -q '^ok    state  audit: audit chain good: .*checkpoint at seq [0-9]* agrees' /tmp/verify.out && grep -q '^ok    state  grants: the grants on disk are the ones brokerd decides by' /tmp/verify.out && grep -q '^ok    state  approvals: ' /tmp/verify.out"
expect "the flows part: the job's private notes posted to Mattermost a warn, no secret flow (ok)" \
    "grep -q '^warn  flows  private_out: a hijacked model in job morning-brief.s runs can read /srv/notes (private) via grant brief-notes and post it to Mattermost' /tmp/verify.out && grep -q '^ok    flows  secret_out: no grant lets a hijacked model send anything secret out' /tmp/verify.out"
expect "bxctl verify --json: one line, good" \
    "bxctl verify --json --no-replay | python3 -c 'import json, sys; v = json.load(sys.stdin); assert v[\"good\"] and v[\"fail\"] == 0, v'"
expect "as the owner (admin and chat groups): passes; brokerd verifies the audit log, the /slots probe is not made" \
    "owner bxctl verify --no-replay > /tmp/verify-owner.out; rc=\$?; test \$rc = 0 && grep -q '^ok    state  audit: audit chain good (verified by brokerd)' /tmp/verify-owner.out && grep -q '^warn  model  slots: not checked: inferproxy admits only user boxmaker-loopd' /tmp/verify-owner.out"
expect "as a stranger: exit 2, the owner's sides are closed to it, each check said not made" \
    "runuser -u stranger -- bxctl verify --no-replay --only state > /tmp/verify-stranger.out; rc=\$?; cat /tmp/verify-stranger.out; test \$rc = 2 && grep -q '^warn  state  grants: not checked: ' /tmp/verify-stranger.out"

expect "boxmaker-verify.timer is enabled (timers.target) and waits" \
    "systemctl is-active --quiet boxmaker-verify.timer && systemctl show -p WantedBy --value boxmaker-verify.timer | grep -q timers.target"
expect "the timer's run succeeds, as the static user boxmaker-verify" \
    "systemctl start boxmaker-verify.service && test \"\$(systemctl show -p User --value boxmaker-verify.service)\" = boxmaker-verify"
expect "its checks are in the journal, each at its priority (warn lines at warning, none at err)" \
    "journal -u boxmaker-verify.service | grep -q -e '^ok    model  replay: ' -e '^warn  model  replay: .*another session shared its slot' && journal -u boxmaker-verify.service -p warning | grep -q '^warn  model  cache-reuse' && ! journal -u boxmaker-verify.service -p err | grep -q FAIL"

# A drop-in that loosens loopd within its exposure limit: the property check alone finds it.
loosen=/run/systemd/system/boxmaker-loopd.service.d
mkdir -p "$loosen"
printf '[Service]\nSupplementaryGroups=boxmaker-admin\n' >"$loosen/50-loosen.conf"
systemctl daemon-reload
expect "a drop-in putting loopd in the admin group: bxctl verify FAILs (exit 1)" \
    "bxctl verify --only units > /tmp/verify-loose.out; rc=\$?; grep -v '^ok' /tmp/verify-loose.out; test \$rc = 1"
expect "the FAIL names the property, its two values and the drop-in" \
    "grep -q '^FAIL  units  boxmaker-loopd.service: SupplementaryGroups=boxmaker-admin boxmaker-loop-broker boxmaker-loop-infer where the module generated SupplementaryGroups=boxmaker-loop-broker boxmaker-loop-infer (drop-ins: $loosen/50-loosen.conf)' /tmp/verify-loose.out"
refuse "the timer's run fails its unit" "systemctl start boxmaker-verify.service"
expect "and says it in the journal at error priority" \
    "journal -u boxmaker-verify.service -p err | grep -q '^FAIL  units  boxmaker-loopd.service: SupplementaryGroups='"
# With the gateway on the timer passes --alert: brokerd audits the FAIL line and gatewayd
# posts it (docs/verify.md, "Daily, under NixOS").
expect "the timer's run handed its FAIL line to brokerd (--alert), said in its journal" \
    "journal -u boxmaker-verify.service | grep -q '^verify: alert: [0-9]* FAIL line(s) handed to brokerd, which posts them'"
wait_for 30 "and on Mattermost: a bot root post with that FAIL line, nothing to answer" \
    "mm root-post 'FAIL  units  boxmaker-loopd.service: SupplementaryGroups=boxmaker-admin'"
note "alert: $(mm message "$(mm root-post 'FAIL  units  boxmaker-loopd.service')" | tr '\n' ' ' | head -c 240)"
expect "brokerd audited it, with the timer's user" \
    "bxctl audit show | grep -q 'a failed bxctl verify.s [0-9]* FAIL line(s) from uid [0-9]* (boxmaker-verify): forwarded to gatewayd'"
# A drop-in that opens loopd's network and gives it capabilities: past its exposure limit.
printf '[Service]\nPrivateNetwork=no\nRestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK AF_PACKET\nCapabilityBoundingSet=CAP_SYS_ADMIN CAP_NET_ADMIN CAP_NET_RAW\nProtectSystem=no\n' >"$loosen/50-loosen.conf"
systemctl daemon-reload
refuse "a drop-in raising loopd's exposure: bxctl verify FAILs" "bxctl verify --only units > /tmp/verify-loose.out"
expect "the FAIL says the exposure is above the limit, and which properties changed" \
    "grep '^FAIL  units  boxmaker-loopd.service' /tmp/verify-loose.out | grep 'exposure [0-9.]* is above its limit 1.0' | grep -q 'PrivateNetwork=no where the module generated PrivateNetwork=yes'"
note "$(grep '^FAIL' /tmp/verify-loose.out | cut -c1-240)"
rm -r "$loosen"
systemctl daemon-reload
# A runtime change (no file of the module's touched): inferproxy may reach any address.
systemctl set-property --runtime boxmaker-inferproxy.service IPAddressAllow=any
refuse "a runtime change widening inferproxy's IPAddressAllow=: bxctl verify FAILs" \
    "bxctl verify --only units > /tmp/verify-runtime.out"
expect "the FAIL names IPAddressAllow= and the runtime drop-in systemd wrote" \
    "grep -q '^FAIL  units  boxmaker-inferproxy.service: IPAddressAllow=0.0.0.0/0 127.0.0.0/8 ::/0 ::1/128 where the module generated IPAddressAllow=127.0.0.0/8 ::1/128 (drop-ins: .*system.control' /tmp/verify-runtime.out"
rm -rf /run/systemd/system.control/boxmaker-inferproxy.service.d
systemctl daemon-reload
expect "taken back, bxctl verify --only units passes again" "bxctl verify --only units"
