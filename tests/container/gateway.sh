# tests/container/gateway.sh: scenario (g), sourced by inside.sh; mirrors nix/tests/gateway.nix.
# shellcheck shell=bash
# gatewayd runs as its real unit (rendered from nix/units.nix with a gateway) against
# fake-mattermost (boxmaker-fake-mattermost.service, both started at boot). An owner's post
# goes through the whole stack: gatewayd -> loop.sock (socket-activated loopd) -> brokerd ->
# a tool unit -> inferproxy -> the fake llama-server, and the answer comes back in the
# post's thread. Then an `ask` grant's approval is answered by reactions. The owner and a
# stranger post and react through the fake's REST API with their own tokens (mm.py).

OWNER_MM=ownerkp1dx4oy7wqbsm3e9t6ua
STRANGER_MM=strangerq8ek1ycmw4pxduob7t
mm() { python3 /opt/boxmaker-test/mm.py "$@"; }
export -f mm

scenario "(g) gatewayd: the owner chats from Mattermost (fake-mattermost), through the real stack"
expect "gatewayd started at boot without a connection (WantedBy=multi-user.target), active" \
    "active boxmaker-gatewayd.service && systemctl show -p WantedBy --value boxmaker-gatewayd.service | grep -q multi-user.target"
expect "gatewayd is Type=notify and said READY=1 (STATUS= serving)" \
    "test \"\$(systemctl show -p Type --value boxmaker-gatewayd)\" = notify && systemctl show -p StatusText --value boxmaker-gatewayd | grep -q '^serving'"
expect "gatewayd runs as its DynamicUser boxmaker-gatewayd, with boxmaker-chat as a supplementary group" \
    "test \"\$(id -un \$(stat -c %u /proc/\$(main_pid gatewayd)))\" = boxmaker-gatewayd && grep -q \"^Groups:.*\\b\$(getent group boxmaker-chat | cut -d: -f3)\\b\" /proc/\$(main_pid gatewayd)/status"
expect "/run/boxmaker/broker-gateway is 750 root:boxmaker-broker-gateway; gateway.sock is 660" \
    "test \"\$(stat -c '%a %U %G' /run/boxmaker/broker-gateway)\" = '750 root boxmaker-broker-gateway' && test -S /run/boxmaker/broker-gateway/gateway.sock && test \"\$(stat -c %a /run/boxmaker/broker-gateway/gateway.sock)\" = 660"
expect "boxmaker-gatewayd.socket listens (FileDescriptorName=gateway)" \
    "systemctl is-active --quiet boxmaker-gatewayd.socket && test \"\$(systemctl show -p FileDescriptorName --value boxmaker-gatewayd.socket)\" = gateway"
refuse "the owner (not in boxmaker-broker-gateway) cannot reach gateway.sock" \
    "owner python3 -c \"\$PROBE\" unix:/run/boxmaker/broker-gateway/gateway.sock"
expect "the bot token came as a credential (LoadCredential=), not readable by the owner" \
    "test -s /run/credentials/boxmaker-gatewayd.service/mattermost-token && ! owner cat /run/credentials/boxmaker-gatewayd.service/mattermost-token"
wait_for 20 "gatewayd follows fake-mattermost's WebSocket" "mm live"
note "$(mm live)"

post=$(mm post stranger "what is on my todo list?")
owner_post=$(mm post owner "what is on my todo list?")
note "stranger's post $post, owner's post $owner_post"
wait_for 60 "the owner's post gets a threaded reply from the stack, built from the tool's result" \
    "mm reply $owner_post 'Your todo list says: buy milk.'"
sed 's/^/    | /' "$OUT"
expect "loopd was socket-activated by gatewayd's chat, and the tool ran in a transient unit" \
    "active boxmaker-loopd.service && bxctl audit show | grep -q 'ALLOWED by grant notes-read'"
expect "a stranger's post is heard but not answered (gatewayd logged it as ignored)" \
    "journal -u boxmaker-gatewayd.service | grep -q 'ignored a post from $STRANGER_MM' && test \"\$(mm replies $post)\" = 0"
second=$(mm post owner "hello again" "$owner_post")
wait_for 60 "a reply in the thread continues the conversation in the same thread" \
    "test \"\$(mm replies $owner_post)\" -ge 2"
note "thread $owner_post: $(mm replies "$owner_post") bot replies (after $second)"

# Isolation of the new role: the same walls as the others, plus its own.
expect "gatewayd's state directory is its own, mode 700" \
    "test \"\$(stat -c '%U %a' /var/lib/private/boxmaker/gateway)\" = 'boxmaker-gatewayd 700'"
refuse "gatewayd does not see brokerd's audit log in its mount namespace" \
    "nsenter -t \$(main_pid gatewayd) -m test -e /var/lib/private/boxmaker/audit"
refuse "gatewayd's user cannot reach the system bus" \
    "\$(in_role gatewayd) python3 -c \"\$PROBE\" unix:/run/dbus/system_bus_socket"
refuse "gatewayd's user cannot reach brokerd (not in boxmaker-loop-broker)" \
    "\$(as_role gatewayd) python3 -c \"\$PROBE\" unix:/run/boxmaker/loop-broker/broker.sock"
expect "gatewayd's unit admits loopback only (IPAddressAllow= from allowedAddresses; IPAddressDeny=any)" \
    "systemctl show -p IPAddressAllow --value boxmaker-gatewayd | tee /dev/stderr | grep -q 127.0.0.0/8 && systemctl show -p IPAddressDeny --value boxmaker-gatewayd | grep -q 0.0.0.0/0"
not_proven "that the kernel enforces gatewayd's IPAddressAllow=localhost (cgroup v1 under nspawn does not; nix/tests/gateway.nix checks the setting only)"

scenario "(g) gatewayd: an ask grant's approval is a root post; reactions answer it"
ask=$(mm post owner "list my notes")
if ! wait_for 30 "brokerd's approval appears as a bot root post naming the tool" "mm root-post list_dir $ask"; then
    return 0 # counted as failed; the rest would only fail after it
fi
approval_post=$(mm root-post list_dir "$ask")
note "approval post $approval_post: $(mm message "$approval_post" | head -c 200)"
expect "the approval post names a waiting approval id" \
    "id=\$(owner bxctl approvals | awk '/^approval /{ print \$2; exit }'); test -n \"\$id\" && mm message $approval_post | grep -q \"\$id\""
mm react stranger "$approval_post" +1
wait_for 15 "a stranger's +1 is refused and audited (approval_refused, not_owner)" \
    "grep -h approval_refused /var/lib/private/boxmaker/audit/*.jsonl | grep -q not_owner"
refuse "the stranger's +1 did not run the tool" "mm reply $ask 'Your notes directory holds'"
mm react owner "$approval_post" +1
wait_for 30 "the owner's +1 approves: the tool runs and the answer comes back in the thread" \
    "mm reply $ask 'Your notes directory holds'"
expect "the approval is audited with the owner's Mattermost id and the post" \
    "grep -h '\"approved\"' /var/lib/private/boxmaker/audit/*.jsonl | grep '$OWNER_MM' | grep -q '$approval_post'"
wait_for 15 "the approval post was edited to show the outcome" \
    "mm message $approval_post | grep -q 'Approved'"
note "approval post now: $(mm message "$approval_post" | head -c 200)"
expect "the chain still verifies" "bxctl audit verify | grep -q 'audit chain good'"
