# tests/vm/killed.sh: scenario (f), brokerd killed mid-session, sourced by guest.sh (helpers
# from tests/container/lib.sh). Mirrors nix/tests/broker-killed.nix: SIGKILL while a call
# waits for the owner; systemd restarts brokerd, the session's taint and untrusted flag
# survive and still decide, and the audit chain verifies.
# shellcheck shell=bash

scenario "(f) brokerd killed mid-session: restarted by systemd, taint kept, chain verifies"
expect "reading the inbox answers" \
    "owner bxctl chat -m 'read my inbox' | tee /tmp/inbox.out | grep -q 'Your inbox has one mail.'"
session=$(sed -n 's/.*\[session \([^]]*\)\].*/\1/p' /tmp/inbox.out | head -n 1)
note "session $session"
expect "the session is tainted private and untrusted" \
    "owner bxctl session $session | tee /tmp/session.out | grep -q 'taint private' && grep -q 'untrusted true' /tmp/session.out"
expect "control: brokerd has not been restarted yet (NRestarts=0)" \
    "test \"\$(systemctl show -p NRestarts --value boxmaker-brokerd)\" = 0"
runuser -u owner -- sh -c "bxctl chat --session $session -m 'list my notes' > /tmp/killed-list.out 2>&1 &"
wait_for 15 "a call of the session waits for the owner" "owner bxctl approvals | grep -q '^approval '"
systemctl kill --signal=KILL boxmaker-brokerd.service
wait_for 20 "systemd restarted brokerd (Restart=on-failure), without waiting for a connection" \
    "test \"\$(systemctl show -p NRestarts --value boxmaker-brokerd)\" -ge 1 && active boxmaker-brokerd.service"
expect "the taint survived the restart" \
    "owner bxctl session $session | tee /tmp/session.out | grep -q 'taint private' && grep -q 'untrusted true' /tmp/session.out"
expect "and still decides: notes-read (if_untrusted = deny) is denied in the tainted session" \
    "owner bxctl chat --session $session -m 'what is on my todo list?' | tee /tmp/killed-todo.out | grep -q denied && ! grep -q 'buy milk' /tmp/killed-todo.out"
expect "control: a fresh session may read the notes" \
    "owner bxctl chat -m 'what is on my todo list?' | grep -q 'Your todo list says: buy milk.'"
expect "the audit chain survived: it verifies and keeps the inbox read" \
    "bxctl audit verify | grep -q 'audit chain good' && bxctl audit show | grep -q 'ALLOWED by grant inbox-read'"
