# tests/vm/indexer.sh: the indexer's unit on systemd 257, sourced by guest.sh (helpers from
# tests/container/lib.sh): it indexes, and open_by_handle_at is refused. With CAP_DAC_READ_SEARCH, open_by_handle_at opens
# any inode of a file system whatever the unit's mount namespace shows; the unit's system
# call filter (`~@privileged`) refuses it. systemd-nspawn refuses it to a whole container,
# so the container tier (scenario (l)) cannot tell the filter's part; here, without nspawn,
# the negative control (the same unit with its filter emptied) opens the inode.
# shellcheck shell=bash

export -f probe
scenario "the indexer's unit on systemd 257: it indexes; open_by_handle_at is refused by its filter"
# Here DynamicUser state directories are nobody's on the host and mounted idmapped into the
# unit (at /var/lib/boxmaker/index inside its root, which the link tmpfiles made leads to):
# the real indexer must still write its index and read loopd's logs.
expect "a run of the real indexer ends well and publishes the six partitions" \
    "systemctl start boxmaker-indexer.service && test \"\$(ls /var/lib/private/boxmaker/index/*.sqlite | wc -l)\" = 6"
expect "it indexed loopd's log of the first chat: bxctl search finds the session" \
    "owner bxctl search hello | grep -q '^session s-'"
log=$(ls /var/lib/private/boxmaker/sessions/*/*.jsonl | head -n 1)
indexer_probe "$log"
sed 's/^/    | /' /tmp/probe.out
expect "control: as the indexer's unit the stand-in reads loopd's 0600 log (CAP_DAC_READ_SEARCH)" \
    "grep -qE '^read-session-log ok [1-9][0-9]* bytes$' /tmp/probe.out"
expect "it writes index/ (idmapped), is refused open_by_handle_at (EPERM), and finds no /etc/shadow" \
    "probe 'write-index ok written and removed' && probe 'open-by-handle EPERM' && probe 'read-shadow ENOENT'"
indexer_probe "$log" "SystemCallFilter="
expect "negative control: the same unit without its system call filter opens an inode by its handle" \
    "probe 'open-by-handle ok opened an inode by its handle'"
