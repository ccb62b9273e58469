# tests/container/indexer.sh: scenario (l) of the container tier, sourced by inside.sh (its
# helpers come from lib.sh). The indexer under real systemd (issue 14, docs/decisions.md
# M13): boxmaker-indexer.service, a oneshot with its own DynamicUser, started by
# boxmaker-indexer.path when a note's label record, a session's label or loopd's
# sessions/.changed changes. A note written through a tool call and a session that read a
# secret file both become searchable; a note_search and a session_search through brokerd
# and their units find them with their labels; the indexer's files are its own uid's, and
# only under index/. Then a test-only stand-in (tests/container/indexer-probe.py) runs as
# the indexer's unit, with CAP_DAC_READ_SEARCH, and proves what it cannot reach.

state=/var/lib/private/boxmaker
index=$state/index
# The indexer's last run: its invocation, and whether it ended well.
indexer_run() { systemctl show -p InvocationID --value boxmaker-indexer.service; }
indexer_done() {
    [[ $(indexer_run) != "$1" ]] && ! active boxmaker-indexer.service &&
        [[ $(systemctl show -p Result --value boxmaker-indexer.service) == success ]]
}
export -f indexer_run indexer_done tool_results probe journal

scenario "(l) the indexer: a oneshot with its own DynamicUser, started by its path unit"
expect "the path unit is enabled (paths.target) and waits on the three triggers" \
    "systemctl is-enabled --quiet boxmaker-indexer.path && test \"\$(systemctl show -p ActiveState --value boxmaker-indexer.path)\" = active && test \"\$(systemctl show -p Paths --value boxmaker-indexer.path | sort | paste -sd ' ')\" = '$state/note-state/labels (PathChanged) $state/session-labels (PathChanged) $state/sessions/.changed (PathChanged)'"
expect "the indexer's unit is a oneshot with its own DynamicUser" \
    "test \"\$(systemctl show -p Type -p User -p DynamicUser --value boxmaker-indexer.service | paste -sd ' ')\" = 'oneshot boxmaker-indexer yes'"

before=$(indexer_run)
expect "control: a chat's note_write runs" "owner bxctl chat -m 'remember the quinces' >/tmp/indexer.out"
wait_for 30 "the note's label record started the indexer, which ran and ended well" "indexer_done '$before'"
wait_for 10 "bxctl search finds the note, labelled as brokerd labelled it (private)" \
    "owner bxctl search quinces | grep -qxF 'orchard  private'"
before=$(indexer_run)
expect "control: a chat reads the secret file" \
    "owner bxctl chat -m 'open the vault' | tee /tmp/indexer.out | grep -qE '\\[-> [0-9]+ bytes, secret'"
vault=$(grep -l zanzibar "$state"/sessions/*/*.jsonl | head -n 1)
vault_session=$(basename "$(dirname "$vault")")
note "the secret session: $vault_session"
wait_for 30 "loopd's sessions/.changed started the indexer, which ran and ended well" "indexer_done '$before'"
wait_for 10 "bxctl search finds the session that read the secret, labelled secret" \
    "owner bxctl search zanzibar | grep -F '$vault_session' | grep -qF secret"

expect "a session_search through brokerd finds the secret session, in its unit, labelled secret" \
    "owner bxctl chat -m 'search the sessions for zanzibar' | tee /tmp/indexer.out | grep -qE '\\[-> [0-9]+ bytes, secret' && tool_results '' | grep -F '$vault_session' | grep -qF zanzibar"
sed 's/^/    | /' /tmp/indexer.out
expect "a note_search through brokerd finds the note the indexer published" \
    "owner bxctl chat -m 'search the notes for quinces' >/tmp/indexer.out && tool_results '' | grep -qF 'orchard: seven [quinces] by the wall'"
expect "both ran as the calls' transient units" \
    "test \"\$(journal | grep -cE 'Started boxmaker-tool-[a-z0-9-]+\\.service - /opt/boxmaker/bin/boxmaker-tool')\" -ge 2"

expect "brokerd sees the published index, read-only" \
    "\$(in_role brokerd) sh -c 'ls $index/*.sqlite' && ! \$(in_role brokerd) touch $index/probe"
refuse "the owner cannot read the index (only through bxctl)" "owner ls $index"

# The stand-in, as the indexer's unit, with a planted root-only file and the secret
# session's log to read.
echo "planted by the test" >/etc/boxmaker-planted-secret
chmod 0600 /etc/boxmaker-planted-secret
indexer_probe "$vault"
sed 's/^/    | /' /tmp/probe.out
expect "control: as the indexer it reads loopd's 0600 log (CAP_DAC_READ_SEARCH) and the note labels" \
    "grep -qE '^read-session-log ok [1-9][0-9]* bytes$' /tmp/probe.out && grep -q '^read-note-labels ok .*orchard.json' /tmp/probe.out"
expect "it cannot read /etc/shadow, a planted root-only /etc file, the bot token or its credential" \
    "probe 'read-shadow ENOENT' && probe 'read-planted ENOENT' && probe 'read-token ENOENT' && probe 'read-credential ENOENT'"
expect "nor the grants, nor the owner's files" "probe 'read-grants ENOENT' && probe 'read-owner-file ENOENT'"
expect "nor brokerd's audit log and state, the note tools' directories, gatewayd's or loopd's other state" \
    "probe 'list-audit ENOENT' && probe 'list-broker ENOENT' && probe 'list-incoming ENOENT' && probe 'list-gateway ENOENT' && probe 'list-memory ENOENT'"
expect "its /etc holds only boxmaker/, and the state only its sources and index/" \
    "probe 'list-etc ok boxmaker' && probe 'list-state ok index,note-state,notes,session-labels,sessions'"
expect "the sources are read-only; index/ is writable" \
    "probe 'write-sessions EROFS' && probe 'write-notes EROFS' && probe 'write-index ok written and removed'"
expect "open_by_handle_at, the way around its mount namespace, is refused (EPERM)" "probe 'open-by-handle EPERM'"
in_vm_tier "that EPERM is the unit's system call filter: systemd-nspawn refuses open_by_handle_at" \
    "to the whole container too, so only tests/vm/indexer.sh can show the filter's part"
expect "no socket of any family" "probe 'socket-unix EAFNOSUPPORT' && probe 'socket-inet EAFNOSUPPORT'"
expect "the indexer's unit is the rendered one again" \
    "systemctl show -p ExecStart --value boxmaker-indexer.service | grep -q /opt/boxmaker/bin/boxmaker-indexer"

# Its own DynamicUser: the uid the stand-in ran as (systemd gives a DynamicUser its state
# directory's uid again) is in the dynamic range and no role's, owns index/ and every
# partition, published 0644 in 0755, and owns nothing outside index/.
uid=$(sed -n 's/^uid //p' /tmp/probe.out)
note "the indexer's unit runs as uid ${uid:-unknown}"
expect "its unit runs as a dynamic uid of its own (not brokerd's, not loopd's)" \
    "test -n '$uid' && test '$uid' -ge 61184 -a '$uid' -le 65519 && test '$uid' != \"\$(role_uid brokerd)\" && test '$uid' != \"\$(role_uid loopd)\""
expect "index/ and its partitions are that uid's, 0755 and 0644" \
    "test \"\$(stat -c '%u %a' $index)\" = '$uid 755' && ls $index/*.sqlite >/dev/null && for f in $index/*.sqlite; do test \"\$(stat -c '%u %a' \$f)\" = '$uid 644' || exit 1; done"
expect "the indexer wrote only under index/: no file elsewhere is that uid's" \
    "test -z \"\$(find / /run /tmp /var/tmp -xdev -uid '$uid' -not -path '$index' -not -path '$index/*' 2>/dev/null)\""
expect "after every turn of the tier, the path unit still waits (no start limit was hit)" \
    "test \"\$(systemctl show -p ActiveState -p SubState --value boxmaker-indexer.path | paste -sd ' ')\" = 'active waiting'"
