#!/bin/bash
# tests/container/measure.sh: the container tier's search measure (issue 14, "Measures";
# results in docs/performance.md), run by boxmaker-container-measure.service inside the
# booted container when tests/container/run.sh is given --measure-search. Not a scenario of
# the gate: the corpus takes minutes to index.
#
# The corpus of tests/stack/src/corpus.rs (10,000 notes, 1,000 session logs), bound
# read-only at /opt/boxmaker-corpus, is copied into the state as the roles keep it (the notes
# and their label records in brokerd's StateDirectories notes/ and note-state/, the session
# labels in its session-labels/, the logs in loopd's sessions/), before either role first
# starts, so that systemd gives each DynamicUser its directories at that start. Then the real
# indexer unit indexes it whole and publishes the partitions, and ROUNDS rounds each run,
# through `bxctl chat` and the fake model, a note_search for "zanzibar", a session_search
# for "quokka" and the floor, a read_file of a 24-byte file, all three through brokerd and
# its transient unit. Each call's duration is taken from loopd's session log: from the
# `assistant` record that carries the call to its `tool_result` record (brokerd's decision,
# the unit's start, the tool, the result back). The first round warms and is left out.
set -uo pipefail

# shellcheck source=tests/container/lib.sh
source /opt/boxmaker-test/lib.sh
export -f owner active journal
started=$(date +%s.%N)
ROUNDS=$(cat /opt/boxmaker-measure/rounds)
corpus=/opt/boxmaker-corpus
state=/var/lib/private/boxmaker

trap 'end_container "container tier, search measure" "$started"' EXIT

scenario "setup: the corpus into the roles' state, before they first start"
echo "systemd $(systemctl --version | awk 'NR == 1 { print $2 }') as PID 1; load average $(cut -d' ' -f1-3 /proc/loadavg)"
make_owner
# No indexer run while the corpus is copied in or while the calls are timed: the one run
# below is started by hand, and the chats' session logs do not start another.
systemctl stop boxmaker-indexer.path
refuse "brokerd and loopd have not started yet" "active boxmaker-brokerd.service || active boxmaker-loopd.service"
t=$(date +%s.%N)
copy() { # copy FROM TO DIR_MODE FILE_MODE
    mkdir -p "$2" && cp -r "$1/." "$2/" &&
        find "$2" -type d -exec chmod "$3" {} + && find "$2" -type f -exec chmod "$4" {} +
}
export -f copy
expect "the corpus is copied into the state directories" \
    "mkdir -p -m 0700 $state && copy $corpus/memory/notes $state/notes 0700 0600 &&
     copy $corpus/note-state $state/note-state 0755 0644 &&
     copy $corpus/session-labels $state/session-labels 0700 0600 &&
     copy $corpus/sessions $state/sessions 0700 0600 && chmod 0700 $state/note-state"
note "copied the corpus's $(find $corpus -type f | wc -l) files ($(du -sm --apparent-size $corpus | cut -f1) MB) in $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
expect "the first bxctl connection starts brokerd" "owner bxctl approvals | grep -q 'no approvals waiting'"
expect "the first chat starts loopd" "owner bxctl chat -m hello | grep -q 'test model'"
expect "systemd gave brokerd its notes and loopd its logs (their DynamicUsers' uids)" \
    "test \"\$(stat -c %U $state/notes/note-00000.md)\" = boxmaker-brokerd && test \"\$(stat -c %U $state/sessions/bench-0000/0.jsonl)\" = boxmaker-loopd"

scenario "the real indexer unit indexes the corpus and publishes its partitions"
t=$(date +%s.%N)
expect "boxmaker-indexer.service ran and ended well" \
    "systemctl start boxmaker-indexer.service && test \"\$(systemctl show -p Result --value boxmaker-indexer.service)\" = success"
note "the indexer's run took $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
expect "it published the six partitions" "test \"\$(ls $state/index/*.sqlite | wc -l)\" = 6"
note "$(du -sm "$state/index" | cut -f1) MB published in $state/index"

scenario "the measure: $ROUNDS rounds of note_search, session_search and read_file through brokerd"
note "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i <= ROUNDS; i++)); do
    for m in 'measure the note search' 'measure the session search' 'what is on my todo list?'; do
        owner bxctl chat -m "$m" >/tmp/measure.out 2>&1 ||
            { echo "FAIL: bxctl chat -m '$m' (round $i)"; sed 's/^/    | /' /tmp/measure.out; FAILED=$((FAILED + 1)); }
    done
done
note "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
expect "each call ran in a transient unit (one Started line per call at least)" \
    "test \"\$(journal | grep -cE 'Started boxmaker-tool-[a-z0-9-]+\\.service')\" -ge $((3 * (ROUNDS + 1)))"
# Every call of the owner's sessions (not the corpus's bench-*), in the order they ran:
# TOOL MS RESULT (as JSON); then the checks that each found its documents, and the table.
python3 - "$state/sessions" "$ROUNDS" >/tmp/measure.calls <<'PY'
import datetime, json, pathlib, sys
calls = []
for log in pathlib.Path(sys.argv[1]).glob("*/*.jsonl"):
    if log.parent.name.startswith("bench-"):
        continue
    pending = {}
    for line in log.read_text().splitlines():
        r = json.loads(line)
        t = datetime.datetime.fromisoformat(r.get("time", "").replace("Z", "+00:00")) if "time" in r else None
        if r.get("type") == "assistant":
            for c in r.get("tool_calls") or []:
                pending[c["id"]] = (c["name"], t)
        elif r.get("type") == "tool_result" and r.get("tool_call_id") in pending:
            name, t0 = pending.pop(r["tool_call_id"])
            calls.append((t0, name, (t - t0).total_seconds() * 1e3, r["content"]))
calls.sort(key=lambda c: c[0])
for name in ("note_search", "session_search", "read_file"):
    mine = [c for c in calls if c[1] == name][1:]  # the first one warms
    for _, _, ms, content in mine:
        print(name, f"{ms:.0f}", json.dumps(content))
PY
expect "every timed call is in the logs ($ROUNDS of each, after the warm-up)" \
    "for n in note_search session_search read_file; do test \"\$(grep -c \"^\$n \" /tmp/measure.calls)\" = $ROUNDS || exit 1; done"
# found TOOL CHECK: every timed call of TOOL passes CHECK (a command that reads its line).
found() {
    local line
    while IFS= read -r line; do
        bash -c "$2" <<<"$line" || { echo "not found in: ${line:0:300}"; return 1; }
    done < <(grep "^$1 " /tmp/measure.calls)
}
export -f found
expect "each note_search found the 10 notes with zanzibar (note-00000, note-01000, ...), no other" \
    "found note_search 'test \"\$(grep -oE \"note-[0-9]{5}\" | sort -u | paste -sd \" \")\" = \"\$(seq -f note-0%g000 0 9 | paste -sd \" \")\"'"
expect "each session_search found the 10 logs with quokka (bench-0000, bench-0050, ...), no other" \
    "found session_search 'test \"\$(grep -oE \"bench-[0-9]{4}\" | sort -u | paste -sd \" \")\" = \"\$(seq -f bench-%04g 0 50 450 | paste -sd \" \")\"'"
expect "each read_file read the todo list" "found read_file 'grep -q \"buy milk\"'"
python3 - /tmp/measure.calls <<'PY'
import sys
ms = {}
for line in open(sys.argv[1]):
    name, v, _ = line.split(" ", 2)
    ms.setdefault(name, []).append(float(v))
def pct(v, p):  # nearest rank below, as tests/stack/benches/search.rs
    v = sorted(v)
    return v[(len(v) - 1) * p // 100]
floor = pct(ms.get("read_file", [0]), 50) or 1
print("\n| the tool call through brokerd and its unit | calls | p50 | p99 | p50 ÷ the floor's p50 |")
print("|---|---|---|---|---|")
for name, what in (("note_search", '`note_search` "zanzibar" (10 notes)'),
                   ("session_search", '`session_search` "quokka" (10 logs)'),
                   ("read_file", "`read_file` of a 24-byte file (the floor)")):
    v = ms.get(name, [])
    if v:
        print(f"| {what} | {len(v)} | {pct(v, 50):.0f} ms | {pct(v, 99):.0f} ms | {pct(v, 50) / floor:.2f} |")
PY
