# tests/container/lib.sh: helpers for inside.sh and for the VM tier's tests/vm/guest.sh (sourced;
# runs inside the container or the guest).
# shellcheck shell=bash
# Every check prints one line: "ok: WHAT", or "FAIL: WHAT" with the command's output.
# Properties the container cannot enforce or show, and the VM tier (tests/vm) proves, are
# printed as "IN THE VM TIER (not enforced here): ..." with the script that proves them.

export PATH=/opt/boxmaker/bin:/usr/sbin:/usr/bin:/sbin:/bin
FAILED=0
OUT=/tmp/boxmaker-check.out

scenario() { printf '\n--- scenario %s\n' "$*"; }
in_vm_tier() { echo "IN THE VM TIER (not enforced here): $*"; }
note() { echo "    $*"; }

# expect WHAT COMMAND...: COMMAND (one string, run by bash -c) must succeed.
expect() {
    local what=$1
    shift
    expect_run "$what" bash -c "$*"
}

# expect_run WHAT PROGRAM ARGS...: the same, run as given (functions allowed).
expect_run() {
    local what=$1
    shift
    if "$@" >"$OUT" 2>&1; then
        echo "ok: $what"
    else
        echo "FAIL: $what"
        echo "    command: $*"
        sed 's/^/    | /' "$OUT" | tail -n 30
        FAILED=$((FAILED + 1))
    fi
}

# refuse WHAT COMMAND...: COMMAND (one string, run by bash -c) must fail; the last line of
# its output is shown, as the reason.
refuse() {
    local what=$1
    shift
    refuse_run "$what" bash -c "$*"
}

# refuse_run WHAT PROGRAM ARGS...: the same, run as given (functions allowed).
refuse_run() {
    local what=$1
    shift
    if "$@" >"$OUT" 2>&1; then
        echo "FAIL: $what (the command succeeded)"
        echo "    command: $*"
        sed 's/^/    | /' "$OUT" | tail -n 30
        FAILED=$((FAILED + 1))
    else
        echo "ok: $what ($(tail -n 1 "$OUT" | cut -c1-110))"
    fi
}

# wait_for SECONDS WHAT COMMAND...: retries COMMAND every 0.1 s until it succeeds.
wait_for() {
    local seconds=$1 what=$2 tries
    shift 2
    tries=$((seconds * 10))
    while ((tries-- > 0)); do
        if bash -c "$*" >"$OUT" 2>&1; then
            echo "ok: $what"
            return 0
        fi
        sleep 0.1
    done
    echo "FAIL: $what (not within ${seconds}s)"
    echo "    command: $*"
    sed 's/^/    | /' "$OUT" | tail -n 30
    FAILED=$((FAILED + 1))
    return 1
}

# owner COMMAND / stranger COMMAND: as the owner (boxmaker-admin, boxmaker-chat) or as a
# user in no boxmaker group.
owner() { runuser -u owner -- "$@"; }

active() { systemctl is-active --quiet "$1"; }
main_pid() { systemctl show -p MainPID --value "boxmaker-$1.service"; }
# The uid and gid a running role's DynamicUser got (they exist only while it runs).
role_uid() { id -u "boxmaker-$1"; }
role_gid() { id -g "boxmaker-$1"; }
# as_role ROLE: a command prefix that runs as that role's user, without its groups.
as_role() { echo "setpriv --reuid=$(role_uid "$1") --regid=$(role_gid "$1") --clear-groups"; }
# in_role ROLE: a command prefix that runs in that role's mount namespace, as its user and
# group (what the role itself sees).
in_role() { echo "nsenter -t $(main_pid "$1") -m -S $(role_uid "$1") -G $(role_gid "$1")"; }

# connect TARGET: python3 probe; TARGET is unix:PATH or tcp:HOST:PORT. Exit 0 if it connects.
# shellcheck disable=SC2034 # used by inside.sh and isolation.sh
PROBE='
import socket, sys
kind, _, where = sys.argv[1].partition(":")
if kind == "unix":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(where)
else:
    host, _, port = where.rpartition(":")
    s = socket.create_connection((host, int(port)), timeout=3)
print("connected to", sys.argv[1])
'

# The journal lines of one boot, for the "tool ran in a unit" checks.
journal() { journalctl -b --no-pager -o cat "$@"; }

# brokerd_config CONFIG WHY: brokerd, restarted at its next connection with --config CONFIG
# (a runtime drop-in that changes ExecStart= alone; every other property of the rendered unit
# stays). brokerd_rendered: back to the rendered unit.
BROKERD_DROPIN=/run/systemd/system/boxmaker-brokerd.service.d
brokerd_config() {
    mkdir -p "$BROKERD_DROPIN"
    printf '# %s; removed when it ends.\n[Service]\nExecStart=\nExecStart=/opt/boxmaker/bin/brokerd --config %s\n' \
        "$2" "$1" >"$BROKERD_DROPIN/50-test-config.conf"
    systemctl stop boxmaker-brokerd.service
    systemctl daemon-reload
}
brokerd_rendered() {
    rm -r "$BROKERD_DROPIN"
    systemctl stop boxmaker-brokerd.service
    systemctl daemon-reload
}

# tool_results PREFIX: what test-only tools answered, as loopd logged the tool results: the
# content of each tool_result record that starts with PREFIX, one per line.
tool_results() {
    python3 - /var/lib/private/boxmaker/sessions "$1" <<'PY'
import json, pathlib, sys
for log in pathlib.Path(sys.argv[1]).glob("*/*.jsonl"):
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "tool_result" and record["content"].startswith(sys.argv[2]):
            print(record["content"])
PY
}

# tool_props GRANT [CONFIG [KEY...]]: fills PROPS with `-p K=V` for every property of the
# unit brokerd would start for GRANT (brokerd --print-tool-unit, with CONFIG, default
# /etc/boxmaker/config.toml), leaving out the KEYs named (a negative control: the same
# unit without that one setting).
PROPS=()
tool_props() {
    local grant=$1 config=${2:-/etc/boxmaker/config.toml} line key skip
    shift
    (($#)) && shift
    PROPS=()
    while IFS= read -r line; do
        case $line in '' | '#'* | '['* | Type=* | ExecStart=* | Description=* | CollectMode=*) continue ;; esac
        skip=no
        for key in "$@"; do [[ $line == "$key="* ]] && skip=yes; done
        [[ $skip == yes ]] || PROPS+=(-p "$line")
    done <<<"$(brokerd --config "$config" --print-tool-unit "$grant" | sed -n '/^\[Service\]/,$p')"
}

# probe_unit_with PROGRAM ARGS...: runs PROGRAM in a transient unit with PROPS, stdin closed
# (or what the caller redirects).
probe_unit_with() {
    systemd-run --wait --pipe --quiet --collect --service-type=exec "${PROPS[@]}" -- "$@"
}

# make_owner: the owner (in boxmaker-admin and boxmaker-chat), a stranger in no boxmaker
# group, and the owner's files the test grants name.
make_owner() {
    useradd -m -G boxmaker-admin,boxmaker-chat owner
    useradd -m stranger
    mkdir -p /srv/notes /srv/inbox /srv/vault
    echo "buy milk, ship boxmaker" >/srv/notes/todo.md
    echo "hello from outside" >/srv/inbox/mail.txt
    # A secret file (grant vault-read, scenario (l)): there before brokerd's first start,
    # which binds the granted paths that exist then.
    echo "the zanzibar code is 4 7 1" >/srv/vault/code.md
    chmod 0644 /srv/notes/todo.md /srv/inbox/mail.txt /srv/vault/code.md
}

# tier_summary TIER STARTED: the tier's last lines (how many checks failed, how long since
# STARTED, a `date +%s.%N`) and, when any failed, the journal of the boxmaker units. Sets RC
# to the exit code: the number of failed checks, at most 100.
tier_summary() {
    RC=$FAILED
    ((RC > 100)) && RC=100
    printf '\n--- %s: %d check(s) failed, %.1fs of scenarios\n' "$1" "$FAILED" \
        "$(awk -v a="$2" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"
    if ((RC != 0)); then
        echo "--- journal of the boxmaker units, for the failures above:"
        journal -u boxmaker-brokerd.service -u boxmaker-loopd.service \
            -u boxmaker-inferproxy.service -u boxmaker-fake-llama-server.service \
            -u boxmaker-gatewayd.service -u boxmaker-fake-mattermost.service \
            -u 'boxmaker-job-*' -u 'boxmaker-indexer.*' \
            -u 'boxmaker-tool-*' -u polkit.service -u dbus.service | tail -n 80
    fi
}

# end_container TIER STARTED: the container's test unit's end (its EXIT trap): the tier's
# summary, then the container ends with RC as its exit code. The unit's ExecStopPost= ends it
# with a failure unless the .rc file exists.
end_container() {
    tier_summary "$1" "$2"
    echo "$RC" >/run/boxmaker-container-test.rc
    systemctl --no-block exit "$RC"
    exit 0
}

# indexer_probe LOG [LINE...]: runs tests/container/indexer-probe.py once as
# boxmaker-indexer.service (a runtime drop-in replaces ExecStart= and binds the probe in;
# every other rendered property stays; each LINE is added to the drop-in's [Service], e.g.
# a negative control's `SystemCallFilter=`), with LOG as the session log it reads, and
# leaves its output in /tmp/probe.out. The drop-in is gone when it returns.
indexer_probe() {
    local log=$1 dropin=/run/systemd/system/boxmaker-indexer.service.d run
    shift
    mkdir -p "$dropin"
    {
        printf '# tests/container/lib.sh indexer_probe: one run only.\n[Service]\nExecStart=\n'
        printf 'ExecStart=/usr/bin/python3 /opt/boxmaker-probe/indexer-probe.py %s\n' "$log"
        printf 'BindReadOnlyPaths=/opt/boxmaker-test/indexer-probe.py:/opt/boxmaker-probe/indexer-probe.py\n'
        printf '%s\n' "$@"
    } >"$dropin/50-probe.conf"
    systemctl daemon-reload
    systemctl start boxmaker-indexer.service
    run=$(systemctl show -p InvocationID --value boxmaker-indexer.service)
    # journald takes the unit's output a moment after the run: until its last line is there.
    for _ in $(seq 50); do
        journal _SYSTEMD_INVOCATION_ID="$run" | sed -n '/^uid /,$p' >/tmp/probe.out
        grep -q '^socket-inet ' /tmp/probe.out && break
        sleep 0.1
    done
    rm -r "$dropin"
    systemctl daemon-reload
}
# probe LINE: the stand-in's last run printed LINE.
probe() { grep -qxF "$1" /tmp/probe.out; }
