# tests/container/lib.sh: helpers for inside.sh (sourced; runs inside the container).
# shellcheck shell=bash
# Every check prints one line: "ok: WHAT", or "FAIL: WHAT" with the command's output.
# Properties the container cannot enforce or show are printed as "NOT PROVEN HERE: ...".

export PATH=/opt/boxmaker/bin:/usr/sbin:/usr/bin:/sbin:/bin
FAILED=0
OUT=/tmp/boxmaker-check.out

scenario() { printf '\n--- scenario %s\n' "$*"; }
not_proven() { echo "NOT PROVEN HERE: $*"; }
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
