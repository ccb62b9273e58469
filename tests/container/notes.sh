# tests/container/notes.sh: scenario (j) of the container tier, sourced by inside.sh
# shellcheck shell=bash
# (its helpers come from lib.sh). The agent's notes under real systemd (issue 14): brokerd
# owns /var/lib/private/boxmaker/notes (its StateDirectory), each note tool runs in its own
# transient unit, and brokerd labels every note itself. Then brokerd is restarted with the
# test-only tests/container/notes-tool.py as the tool (config-notes-tool.toml, made by
# run.sh), a stand-in for a compromised note tool: as note_write it tries to overwrite
# another note and to list the notes before writing its own into its per-call directory;
# as note_read it tries a sibling note and the listing. The unit's binds hold: nothing of
# either is there.

notes=/var/lib/private/boxmaker/notes
# tool_results (lib.sh) runs inside bash -c below.
export -f tool_results

scenario "(j) notes: brokerd writes and labels them; each note tool runs in its own unit"
expect "control: a chat's note_write runs" "owner bxctl chat -m 'remember the pears' >/tmp/notes.out"
expect "the note is in brokerd's notes directory, as the tool was asked" \
    "test \"\$(cat $notes/groceries.md)\" = 'two pears'"
expect "it is brokerd's file (its DynamicUser), not the tool unit's" \
    "test \"\$(stat -c %U $notes/groceries.md)\" = boxmaker-brokerd"
expect "systemd ran note_write as the call's transient unit" \
    "journal | grep -E 'Started boxmaker-tool-[a-z0-9-]+\\.service - /opt/boxmaker/bin/boxmaker-tool'"
expect "brokerd left nothing in its per-call directories" \
    "test -z \"\$(ls -A /var/lib/private/boxmaker/note-state/incoming)\""
expect "bxctl notes list shows it with the label brokerd computed (the session's: private)" \
    "owner bxctl notes list | tee /tmp/notes.list | grep -qF 'groceries.md  private  last written'"
sed 's/^/    | /' /tmp/notes.list
expect "control: a second note" "owner bxctl chat -m 'remember the plums' >/tmp/notes.out"
expect "a chat's note_read answers from the note, in its unit" \
    "owner bxctl chat -m 'recall the groceries' >/tmp/notes.out && tool_results 'two pears' | grep -qxF 'two pears'"
expect "a chat's note_list names both notes, in its unit" \
    "owner bxctl chat -m 'which notes are there' >/tmp/notes.out && tool_results 'groceries' | head -n 2 | paste -sd ' ' | grep -qxF 'groceries plums'"

echo "two pears, and a fig" >"$notes/groceries.md"
expect "a note edited on disk reads as secret and untrusted" \
    "owner bxctl notes list | grep -qF 'groceries.md  secret, untrusted  (NOT as brokerd wrote it'"
# The edit starts the indexer through its path unit. A relabel while that run is going would
# be merged into its start job by systemd (nix/indexer.nix: the five-minute timer catches
# it), so wait until the edit is indexed and the run is over: the relabel then starts a run
# of its own.
wait_for 60 "the indexer took the edit, and its run is over" \
    "owner bxctl search fig | grep -q '^groceries  ' && ! systemctl show -p ActiveState --value boxmaker-indexer.service | grep -qx 'activating\\|active\\|deactivating'"
expect "the owner relabels it, audited with the old label, the new one and the hash" \
    "owner bxctl notes relabel groceries --class private >/tmp/notes.out && bxctl audit show | grep -qE 'note groceries relabelled by .*: secret, untrusted -> private \(bytes [0-9a-f]{64}\)'"
expect "then it reads as the owner said" \
    "owner bxctl notes show groceries | grep -qF 'groceries.md  private  relabelled'"
# The relabel rewrote the note's record, whose path unit starts the indexer (scenario (l)).
# 60 s: a run queued behind others took more than 30 s once, with a VM booting beside it.
wait_for 60 "the indexer took the relabel: bxctl search shows the note with its new label" \
    "owner bxctl search fig | grep -qxF 'groceries  private'"
expect "control: a chat's note_search runs" "owner bxctl chat -m 'look for a fig' >/tmp/notes.out"
note "the search answered: $(grep -F -e '[tool' -e '[->' /tmp/notes.out | paste -sd ' ')"
expect "it found the relabelled note, in its unit" \
    "tool_results 'groceries:' | grep -qxF 'groceries: two pears, and a [fig]'"
expect "the index is the indexer's, not brokerd's, one published file per label" \
    "test \"\$(stat -c %U /var/lib/private/boxmaker/index/private.sqlite)\" != boxmaker-brokerd && test \"\$(ls /var/lib/private/boxmaker/index/*.sqlite | wc -l)\" = 6"

brokerd_config /etc/boxmaker/config-notes-tool.toml "tests/container/notes.sh: scenario (j) only"
expect "control: the stand-in writes the plums note again" \
    "owner bxctl chat -m 'remember the plums' >/tmp/notes.out && journal | grep -E 'Started boxmaker-tool-[a-z0-9-]+\\.service - /opt/boxmaker-test/notes-tool\\.py'"
note "the stand-in's write left: $(cat $notes/plums.md)"
expect "a write unit cannot reach another note: the notes directory is not there (ENOENT)" \
    "grep -qxF 'notes-tool: overwrite groceries.md ENOENT; notes dir ENOENT' $notes/plums.md"
expect "the other note is untouched" "test \"\$(cat $notes/groceries.md)\" = 'two pears, and a fig'"
expect "control: the stand-in reads the groceries note" \
    "owner bxctl chat -m 'recall the groceries' >/tmp/notes.out"
note "the stand-in's read answered: $(tool_results 'notes-tool:')"
expect "a read unit sees the named note" \
    "tool_results 'notes-tool:' | grep -qF 'named read (two pears, and a fig)'"
expect "a read unit does not see a sibling note (ENOENT), by its path or beside the bound one" \
    "tool_results 'notes-tool:' | grep -qF 'plums.md ENOENT; beside it plums.md ENOENT; notes dir ENOENT'"
expect "the bound note's directory in the unit holds it alone, under a fixed name" \
    "tool_results 'notes-tool:' | grep -qF 'its dir lists (note.md)'"
brokerd_rendered
expect "brokerd's unit is the rendered one again" \
    "! systemctl show -p ExecStart --value boxmaker-brokerd | grep -q config-notes-tool.toml"
