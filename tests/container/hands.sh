# tests/container/hands.sh: scenario (o) of the container tier, sourced by inside.sh (its
# helpers come from lib.sh). The hands through the real stack (issue 25): bxctl chat,
# loopd, brokerd, a transient unit started by PID 1 through polkit.
# - write_file (grant project-write, auto): the look and the commit run as the hands user
#   `owner` (broker.hands_user) with /home/owner/project bound at /target; the new file is
#   the owner's with the directory's read and write bits, a replace keeps the file's mode,
#   and nothing else on disk changes (every file under /home, /srv, /etc, /opt and /var/lib
#   but brokerd's own state, before and after, by path, mode, owner, size and time).
#   systemd 252 has no PrivatePIDs=: this tier's config says hands_shared_pids = true (the
#   VM tier runs them with it, on 257).
# - run (grants py-sandbox, py-net): python3 in its unit finds no /etc/shadow, no
#   /etc/passwd, none of the owner's files and no granted file it was not given; without
#   hosts it reaches nothing; with the host 127.0.0.1 it reaches the fake llama-server's
#   port. That it reaches only that host is the BPF filter's, which nspawn does not
#   enforce here: tests/vm/hands.sh proves it.
# shellcheck shell=bash

scenario "(o) the hands: a write lands as the owner, with the right mode, and nothing else changes; a run sees nothing of the machine"
install -d -o owner -g owner -m 0750 /home/owner/project
printf 'kept\n' >/home/owner/project/keep.md
chown owner:owner /home/owner/project/keep.md
chmod 0600 /home/owner/project/keep.md
# brokerd's own state changes with every call (the audit, the sessions, the accounting):
# everything else must stay as it is.
snapshot() {
    find /home /srv /etc /opt /var/lib -xdev \
        -path /var/lib/private/boxmaker -prune -o -path /var/lib/boxmaker -prune -o \
        -path /var/lib/systemd -prune -o -path /var/lib/polkit-1 -prune -o \
        -printf '%p %m %u:%g %s %T@\n' | sort
}
snapshot >/tmp/hands.before
expect "a write_file call creates /home/owner/project/plan.md through its units" \
    "owner bxctl chat -m 'hands: write the project plan' | tee /tmp/hands-write.out | grep -qE '\\[-> [0-9]+ bytes'"
sed 's/^/    | /' /tmp/hands-write.out
expect "the file holds what was written" \
    "test \"\$(cat /home/owner/project/plan.md)\" = \"\$(printf 'step one\\nstep two')\""
expect "it is the owner's, with the directory's read and write bits (0750 & 0664 = 0640)" \
    "test \"\$(stat -c '%U:%G %a' /home/owner/project/plan.md)\" = 'owner:owner 640'"
snapshot >/tmp/hands.after
diff /tmp/hands.before /tmp/hands.after | grep '^[<>]' >/tmp/hands.diff
sed 's/^/    | /' /tmp/hands.diff
expect "nothing else on disk changed: the new file, and its directory's times" \
    "test \"\$(grep -c . /tmp/hands.diff)\" = 3 && grep -q '^> /home/owner/project/plan.md 640 owner:owner 18 ' /tmp/hands.diff && test \"\$(grep -v ' /home/owner/project/plan.md ' /tmp/hands.diff | awk '{ print \$2, \$3, \$4 }' | sort -u)\" = '/home/owner/project 750 owner:owner'"
expect "the audit proves what was written: the path and the new content's hash" \
    "bxctl audit show | grep -F 'write /home/owner/project/plan.md: old sha256 none, new sha256 '\$(printf 'step one\\nstep two\\n' | sha256sum | cut -d' ' -f1)' (18 bytes)'"
expect "the write's units were collected: no boxmaker-tool-* unit is left (but a job run of the timer's, scenario (k))" \
    "test -z \"\$(systemctl list-units --all --no-legend 'boxmaker-tool-*' | grep -v 'boxmaker-tool-job-')\""
expect "a replace keeps the file's mode 0600 and owner, and writes the new content" \
    "owner bxctl chat -m 'hands: rewrite the kept file' | tee /dev/stderr | grep -qE '\\[-> [0-9]+ bytes' && test \"\$(stat -c '%U:%G %a' /home/owner/project/keep.md)\" = 'owner:owner 600' && test \"\$(cat /home/owner/project/keep.md)\" = 'kept, rewritten'"
expect "the replace's audit line names the old content's hash" \
    "bxctl audit show | grep -F 'write /home/owner/project/keep.md: old sha256 '\$(printf 'kept\\n' | sha256sum | cut -d' ' -f1)"

expect "control: root here reads /etc/shadow, and the container reaches 127.0.0.1:8080" \
    "test -r /etc/shadow && python3 -c \"\$PROBE\" tcp:127.0.0.1:8080"
expect "a run (py-sandbox) ends with status 0 through brokerd" \
    "owner bxctl chat -m 'hands: look around' | tee /tmp/hands-run.out | grep -qE '\\[-> [0-9]+ bytes'"
sed 's/^/    | /' /tmp/hands-run.out
tool_results 'exited with status 0' | tail -n 12 >/tmp/hands-run.answer
sed 's/^/    | /' /tmp/hands-run.answer
# Absent from its empty root, or (under /home, which ProtectHome= covers) inaccessible.
for p in /etc/shadow /etc/passwd /home/owner/project/keep.md /home/owner/notes/ferns.md /srv/notes/todo.md; do
    expect "the run cannot read $p" "grep -qE '^NO $p (FileNotFoundError|PermissionError)' /tmp/hands-run.answer"
done
expect "the run without hosts reaches nothing (its own network namespace)" \
    "grep -q '^NET none' /tmp/hands-run.answer"
owner bxctl chat -m 'hands: reach the model port' >/tmp/hands-net.out 2>&1
sed 's/^/    | /' /tmp/hands-net.out
expect "control: a run with the host 127.0.0.1 (py-net) ends with status 0" \
    "grep -qE '\\[-> [0-9]+ bytes' /tmp/hands-net.out"
tool_results 'exited with status 0' | grep '^NET ' >/tmp/hands-net.answer
expect "control: it reached 127.0.0.1:8080 (its result in loopd's session log)" \
    "grep -q '^NET reached 127.0.0.1:8080' /tmp/hands-net.answer"
in_vm_tier "a run reaches only the addresses of its hosts (IPAddressAllow=): tests/vm/hands.sh"
expect "the chain verifies" "bxctl audit verify | grep -q 'audit chain good'"
