# tests/vm/indexer.sh: the indexer's unit against open_by_handle_at, sourced by guest.sh
# (helpers from tests/container/lib.sh). With CAP_DAC_READ_SEARCH, open_by_handle_at opens
# any inode of a file system whatever the unit's mount namespace shows; the unit's system
# call filter (`~@privileged`) refuses it. systemd-nspawn refuses it to a whole container,
# so the container tier (scenario (l)) cannot tell the filter's part; here, without nspawn,
# the negative control (the same unit with its filter emptied) opens the inode.
# shellcheck shell=bash

export -f probe
scenario "the indexer's unit: open_by_handle_at refused by its filter, not by the host (systemd 257)"
log=$(ls /var/lib/private/boxmaker/sessions/*/*.jsonl | head -n 1)
indexer_probe "$log"
sed 's/^/    | /' /tmp/probe.out
expect "control: as the indexer's unit the stand-in reads loopd's 0600 log (CAP_DAC_READ_SEARCH)" \
    "grep -qE '^read-session-log ok [1-9][0-9]* bytes$' /tmp/probe.out"
expect "it is refused open_by_handle_at (EPERM), and finds no /etc/shadow" \
    "probe 'open-by-handle EPERM' && probe 'read-shadow ENOENT'"
indexer_probe "$log" "SystemCallFilter="
expect "negative control: the same unit without its system call filter opens an inode by its handle" \
    "probe 'open-by-handle ok opened an inode by its handle'"
