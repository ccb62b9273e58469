#!/usr/bin/env bash
# tests/units/check.sh: the `units` gate step. Renders the builtins-only unit core
# (nix/render-units.nix, through tests/units/render.sh) with Debian's nix-instantiate,
# checks that every expected file is there, and scores each service with
# `systemd-analyze security --offline` against its limit in the rendered units.json
# (nix/limits.nix through nix/expected.nix: the one source of these numbers, which the
# NixOS module installs as /etc/boxmaker/units.json and `bxctl verify` holds the live units
# to):
#   services without outbound network (brokerd, loopd, the jobs' and the indexer's
#     oneshots, the audit verification's)                  at most 1.0
#   services with outbound network (inferproxy, the test peers, the daily `bxctl verify`,
#     which reads llama-server's /props on loopback)       at most 2.0
#   gatewayd (Mattermost over the network)                at most 1.4, scored without an
#     address allow list (the default and the loosest) and with one (label `allow`:
#     allowedAddresses = [ "203.0.113.7" "2001:db8::7" ])
# The indexer's oneshot also has no socket of any family, no network, CAP_DAC_READ_SEARCH
# its one capability, an empty root; the audit verification's oneshot asks brokerd on the
# admin socket (`bxctl audit verify --brokerd`), in the admin group, daily; `bxctl verify`'s
# runs daily as its static user, in the admin group and a member of the chat group, with
# `--alert` when the gateway is on and without it otherwise.
# units.json's sections are what nix/unit-text.nix reads back from the rendered files (the
# parser the module reads the unit files NixOS writes with), and a changed file reads
# otherwise.
# Each rendered timer's OnCalendar= must parse (`systemd-analyze calendar`), and the core
# must refuse a job it cannot render (checked with a bad name, a missing gateway, a bad
# delivery target or note name, and a
# schedule on two lines), while a schedule systemd cannot parse is caught by the calendar
# check; gatewayd's jobs socket is rendered only with the gateway, and joined only by jobs
# that deliver to Mattermost.
# Any stderr from systemd-analyze fails the step: it only warns (exit 0) on unknown keys
# and bad values. Prints one line per role with its figure, for docs/nix.md.
#
# Usage: tests/units/check.sh [OUT_DIR]   (default: a temporary directory, removed after)
# Needs: nix-instantiate, systemd-analyze (systemd >= 250 for --offline), python3.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

if [[ $# -gt 0 ]]; then
    out=$1
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi

expected=(
    boxmaker-brokerd.service boxmaker-brokerd-loop.socket boxmaker-brokerd-admin.socket
    boxmaker-brokerd-chat.socket boxmaker-brokerd-witness.socket
    boxmaker-loopd.service boxmaker-loopd.socket
    boxmaker-inferproxy.service boxmaker-inferproxy.socket
    boxmaker-fake-llama-server.service
    boxmaker-gatewayd.service boxmaker-gatewayd.socket boxmaker-fake-mattermost.service
    boxmaker-job-morning-brief.service boxmaker-job-morning-brief.timer
    boxmaker-brokerd-jobs.socket boxmaker-loopd-jobs.socket boxmaker-gatewayd-jobs.socket
    boxmaker-indexer.service boxmaker-indexer.path boxmaker-indexer.timer
    boxmaker-audit-verify.service boxmaker-audit-verify.timer
    boxmaker-verify.service boxmaker-verify.timer
    tmpfiles.conf sysusers.conf polkit.rules config.toml units.json
)

status=0

# One complete job, as docs/jobs.md shows it.
jobs='{ morning-brief = { schedule = "Mon..Fri *-*-* 07:00:00"; randomizedDelaySec = 300;
    prompt = "Summarise my notes for today."; }; }'
# gateway [ALLOWED]: the gateway's settings, with an address allow list when given.
gateway() {
    echo '{ server = "https://chat.example.com"; owners = [ "ownerkp1dx4oy7wqbsm3e9t6ua" ];
        channel = "chan4mqx8ekdy1bwpu7s9ront3"; tokenFile = "/etc/boxmaker/secrets/mattermost-token";
        '"${1:+allowedAddresses = $1;}"' }'
}

# render DIR PACKAGE: every file of the core for this package path, written into DIR.
# The fake llama-server, a secret, the gateway (with its fake Mattermost, and without an
# address allow list: the default, and the loosest) and granted paths (one under /home, the
# loosest) are passed so that their parts render too.
render() {
    local dir=$1 package=$2 allowed=${3:-}
    tests/units/render.sh "$dir" \
        --arg package "\"$package\"" \
        --arg fakeLlama '{ script = "/etc/boxmaker/fake-llama.toml"; }' \
        --arg secrets '{ consult-key = "/etc/boxmaker/secrets/consult-key"; }' \
        --arg gateway "$(gateway "$allowed")" \
        --arg jobs "$jobs" \
        --arg fakeMattermost '{ }' \
        --arg grantPaths '[ "/home/owner/notes" "/srv/notes" ]' \
        >/dev/null
    local name
    for name in "${expected[@]}"; do
        if [[ ! -s $dir/$name ]]; then
            echo "units: $name was not rendered" >&2
            status=1
        fi
    done
}

# limits DIR: `SERVICE TENTHS` for each service of DIR/units.json with a limit.
limits() {
    python3 - "$1/units.json" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    units = json.load(f)["units"]
for name, unit in sorted(units.items()):
    if name.endswith(".service") and "max_exposure" in unit:
        print(name[: -len(".service")], unit["max_exposure"])
PY
}

# score DIR LABEL: systemd-analyze security on every service in DIR, against its limit.
score() {
    local dir=$1 label=$2 role unit max threshold rc report figure
    while read -r role threshold; do
        unit=$dir/$role.service
        [[ -f $unit ]] || continue
        max=$(awk -v t="$threshold" 'BEGIN { printf "%.1f", t / 10 }')
        # --threshold is exposure x 10: exit 1 above it.
        rc=0
        report=$(systemd-analyze security --offline=true --threshold="$threshold" "$unit" 2>"$dir/$role.stderr") || rc=$?
        figure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$report")
        if [[ -s $dir/$role.stderr ]]; then
            echo "units: systemd-analyze complained about $role.service ($label):" >&2
            cat "$dir/$role.stderr" >&2
            status=1
        fi
        if [[ $rc -ne 0 || -z $figure ]]; then
            echo "units: $role.service ($label) exposure ${figure:-unknown} is above $max" >&2
            grep -v '^ *✓' <<<"$report" >&2 || true
            status=1
        fi
        printf '%-28s %-6s exposure %s (limit %s)\n' "$role" "$label" "${figure:-?}" "$max"
    done < <(limits "$dir")
    # The roles' limits are there at all (a units.json without them would score nothing).
    # Read whole first: `grep -q` on the pipe would close it under python, and pipefail
    # would call the pipeline failed.
    local r listed
    listed=$(limits "$dir")
    for r in boxmaker-brokerd boxmaker-loopd boxmaker-inferproxy; do
        if ! grep -q "^$r [0-9]" <<<"$listed"; then
            echo "units: $dir/units.json holds no exposure limit for $r" >&2
            status=1
        fi
    done
}

# parsed DIR: units.json's section of every unit is what nix/unit-text.nix reads from its
# rendered file; and a file with one more line reads otherwise (the control).
parsed() {
    local dir=$1 differ
    differ=$(nix-instantiate --eval --strict --json --arg dir "\"$dir\"" -E '{ dir }:
        let
          parse = import ./nix/unit-text.nix;
          expected = builtins.fromJSON (builtins.readFile "${dir}/units.json");
          sectionOf = { service = "Service"; socket = "Socket"; timer = "Timer"; path = "Path"; };
          suffix = name: builtins.elemAt (builtins.match ".*[.]([a-z]+)" name) 0;
          text = name: builtins.readFile "${dir}/${name}";
          same = name: parse sectionOf.${suffix name} (text name) == expected.units.${name}.set;
          loosened = parse "Service" (text "boxmaker-loopd.service" + "\nProtectHome=no\n")
            == expected.units."boxmaker-loopd.service".set;
        in
        builtins.filter (n: !same n) (builtins.attrNames expected.units)
        ++ (if loosened then [ "(control: a line added to boxmaker-loopd.service read the same)" ] else [ ])') || differ=error
    if [[ $differ != "[]" ]]; then
        echo "units: nix/unit-text.nix reads these rendered files otherwise than units.json says: $differ" >&2
        status=1
    else
        echo "units: units.json is what nix/unit-text.nix reads from each rendered file ($dir)"
    fi
}

# calendars DIR: every timer's OnCalendar= parses as systemd parses it.
calendars() {
    local timer expr
    for timer in "$1"/*.timer; do
        expr=$(sed -n 's/^OnCalendar=//p' "$timer")
        # The indexer's timer follows its last run (OnUnitInactiveSec=), no calendar.
        [[ -n $expr || $(basename "$timer") != boxmaker-indexer.timer ]] || continue
        if ! systemd-analyze calendar "$expr" >/dev/null 2>&1; then
            echo "units: $(basename "$timer"): OnCalendar=$expr does not parse (systemd-analyze calendar)" >&2
            return 1
        fi
        echo "units: $(basename "$timer"): OnCalendar=$expr parses"
    done
}

# refused JOBS GATEWAY TEXT: the core refuses JOBS (with GATEWAY) and says TEXT.
refused() {
    local err
    if err=$(nix-instantiate --eval --strict --json nix/render-units.nix --arg jobs "$1" --arg gateway "$2" 2>&1 >/dev/null); then
        echo "units: the core rendered jobs it must refuse: $1" >&2
        status=1
    elif [[ $err != *"$3"* ]]; then
        echo "units: refusing $1, the core did not say \"$3\": $err" >&2
        status=1
    else
        echo "units: refused as it should be: $3"
    fi
}

# /opt/boxmaker: what the container tests install on Debian; a store path: what NixOS
# deploys (its ExecPaths= and the tools' binds differ, nothing else).
render "$out/opt" /opt/boxmaker
render "$out/nix" /nix/store/00000000000000000000000000000000-boxmaker
score "$out/opt" debian
score "$out/nix" nixos
# gatewayd with an address allow list (the Mattermost host's addresses): IPAddressAllow=.
render "$out/allow" /nix/store/00000000000000000000000000000000-boxmaker '[ "203.0.113.7" "2001:db8::7" ]'
if ! grep -qx 'IPAddressAllow=203.0.113.7' "$out/allow/boxmaker-gatewayd.service"; then
    echo "units: allowedAddresses did not become gatewayd's IPAddressAllow=" >&2
    status=1
fi
find "$out/allow" -name '*.service' ! -name boxmaker-gatewayd.service -delete
score "$out/allow" allow
parsed "$out/opt"
parsed "$out/nix"

calendars "$out/nix" || status=1

# The hands (docs/tools.md): the hands user, the programs and their closures reach brokerd's
# config.toml with the target's systemd major version (PrivatePIDs= from 257); the units
# they start are brokerd's (`brokerd --print-tool-unit`, scored in the test step's
# docs/tool-units.md), not the core's. A root hands user is refused by the core.
tests/units/render.sh "$out/hands" --arg systemdVersion '"252.39"' --arg handsUser '"owner"' \
    --arg programs '{ python3 = "/nix/store/00000000000000000000000000000000-python3/bin/python3"; }' \
    --arg programClosures '{ python3 = "/nix/store/00000000000000000000000000000001-closure-info/store-paths"; }' \
    --arg handsSharedPids true >/dev/null
python3 - "$out/hands/config.toml" <<'PY' || status=1
import sys, tomllib
broker = tomllib.load(open(sys.argv[1], "rb"))["broker"]
want = {
    "hands_user": "owner",
    "systemd_version": 252,
    "hands_shared_pids": True,
    "programs": {"python3": "/nix/store/00000000000000000000000000000000-python3/bin/python3"},
    "program_closures": {"python3": "/nix/store/00000000000000000000000000000001-closure-info/store-paths"},
}
bad = {k: broker.get(k) for k, v in want.items() if broker.get(k) != v}
print("units: FAILED: the hands' settings in config.toml: %s" % bad if bad else "units: the hands' settings reach config.toml (hands_user, programs, closures, systemd_version 252)")
sys.exit(1 if bad else 0)
PY
if ! grep -qx 'systemd_version = 257' "$out/nix/config.toml" || grep -q 'hands_user' "$out/nix/config.toml"; then
    echo "units: without the hands, config.toml must say systemd_version = 257 and name no hands user" >&2
    status=1
else
    echo "units: without the hands, systemd_version = 257 and no hands user"
fi
if err=$(nix-instantiate --eval --strict --json nix/render-units.nix --arg handsUser '"root"' 2>&1 >/dev/null); then
    echo "units: the core rendered a root hands user" >&2
    status=1
elif [[ $err != *"hands.user must not be root"* ]]; then
    echo "units: refusing a root hands user, the core did not say why: $err" >&2
    status=1
else
    echo "units: refused as it should be: a root hands user"
fi

# The indexer's units say what docs/decisions.md M10 says: the sources read-only and only
# they (never note-state/incoming, never another role's state), index/ its one StateDirectory
# and no writable bind, brokerd without index/ of its own but with the published one
# read-only, waiting for a run at its start; the path unit watches the three triggers.
python3 - "$out/opt" <<'PY' || status=1
import sys
from pathlib import Path

def unit(name):
    keys = {}
    for line in Path(sys.argv[1], name).read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, _, v = line.partition("=")
            keys.setdefault(k, []).append(v)
    return keys

h = "/var/lib/private/boxmaker"
idx, path, brokerd = unit("boxmaker-indexer.service"), unit("boxmaker-indexer.path"), unit("boxmaker-brokerd.service")
timer = unit("boxmaker-indexer.timer")
verify, vtimer = unit("boxmaker-audit-verify.service"), unit("boxmaker-audit-verify.timer")
bxv, bxvtimer = unit("boxmaker-verify.service"), unit("boxmaker-verify.timer")
sysusers = Path(sys.argv[1], "sysusers.conf").read_text().splitlines()
sources = [f"-{h}/notes", f"-{h}/note-state/labels", f"-{h}/session-labels", f"-{h}/sessions"]
runtime = ["/usr", "-/lib", "-/lib64", "/opt/boxmaker", "/etc/boxmaker/config.toml"]
checks = [
    (idx.get("BindReadOnlyPaths") == runtime + sources, f"the indexer binds its runtime and the four sources read-only, nothing else: {idx.get('BindReadOnlyPaths')}"),
    (not any(k in idx for k in ("BindPaths", "ReadWritePaths", "LoadCredential", "SupplementaryGroups")), "the indexer has no writable bind (index/ is its StateDirectory), no credential, no group"),
    (f"L+ /run/boxmaker/indexer-root{h}/index - - - - /var/lib/boxmaker/index" in Path(sys.argv[1], "tmpfiles.conf").read_text().splitlines(), "in its root, index/'s real path links to where systemd mounts its StateDirectory"),
    (idx.get("StateDirectory") == ["boxmaker/index"], f"the indexer's one StateDirectory is index: {idx.get('StateDirectory')}"),
    (idx.get("RootDirectory") == ["/run/boxmaker/indexer-root"], "the indexer runs in its own empty root"),
    (idx.get("CapabilityBoundingSet") == ["CAP_DAC_READ_SEARCH"] == idx.get("AmbientCapabilities"), "CAP_DAC_READ_SEARCH is its one capability"),
    (idx.get("PrivateNetwork") == ["yes"] and idx.get("RestrictAddressFamilies") == ["AF_UNIX", "~AF_UNIX"], "no network, no socket family"),
    (idx.get("Type") == ["oneshot"] and idx.get("DynamicUser") == ["yes"] and idx.get("User") == ["boxmaker-indexer"], "a oneshot with its own DynamicUser"),
    (path.get("PathChanged") == [f"{h}/note-state/labels", f"{h}/session-labels", f"{h}/sessions/.changed"] and path.get("Unit") == ["boxmaker-indexer.service"], f"the path unit watches the three triggers: {path.get('PathChanged')}"),
    (path.get("WantedBy") == ["paths.target"], "the path unit is enabled (paths.target)"),
    (idx.get("StartLimitIntervalSec") == ["0"], "no start limit: a turn starts several runs"),
    (timer.get("OnUnitInactiveSec") == ["5min"] and timer.get("Unit") == ["boxmaker-indexer.service"] and timer.get("WantedBy") == ["timers.target"], "a run five minutes after the last, for a merged trigger"),
    (verify.get("ExecStart") == ["/opt/boxmaker/bin/bxctl --config /etc/boxmaker/config.toml audit verify --brokerd"] and verify.get("Type") == ["oneshot"], f"the audit verification asks brokerd, once: {verify.get('ExecStart')}"),
    (verify.get("Group") == ["boxmaker-admin"] and verify.get("DynamicUser") == ["yes"] and verify.get("User") == ["boxmaker-audit-verify"] and "SupplementaryGroups" not in verify, "the audit verification runs as its own user in the admin group (brokerd's admin side admits it), nothing more"),
    (vtimer.get("OnCalendar") == ["daily"] and vtimer.get("Persistent") == ["yes"] and vtimer.get("Unit") == ["boxmaker-audit-verify.service"] and vtimer.get("WantedBy") == ["timers.target"], "the audit verification runs daily, and after boot when a run was missed"),
    (not any(d.endswith("/index") for d in " ".join(brokerd["StateDirectory"]).split()) and "boxmaker/session-labels" in " ".join(brokerd["StateDirectory"]).split(), f"brokerd's StateDirectory has session-labels and no index: {brokerd['StateDirectory']}"),
    (f"-{h}/index" in brokerd.get("BindReadOnlyPaths", []), "brokerd sees the published index read-only"),
    (bxv.get("ExecStart") == ["/opt/boxmaker/bin/bxctl --config /etc/boxmaker/config.toml verify --alert"] and bxv.get("Type") == ["oneshot"], f"the daily verification runs bxctl verify, once, and with the gateway on posts a failure (--alert): {bxv.get('ExecStart')}"),
    (bxv.get("User") == ["boxmaker-verify"] and bxv.get("DynamicUser") == ["no"] and bxv.get("Group") == ["boxmaker-admin"] and bxv.get("SupplementaryGroups") == ["boxmaker-chat"], "the daily verification runs as its static user, primary group the admin group, in the chat group"),
    ('u boxmaker-verify -:boxmaker-admin "boxmaker\'s daily verification (bxctl verify)" - -' in sysusers and "m boxmaker-verify boxmaker-chat" in sysusers, "sysusers.conf makes that user, and a member of the chat group"),
    (bxv.get("InaccessiblePaths") == ["-/run/systemd/private"] and bxv.get("IPAddressAllow") == ["localhost"] and bxv.get("PrivateNetwork") == ["no"], "its loosenings: the system bus (to ask systemd), loopback IP (llama-server's /props)"),
    (bxvtimer.get("OnCalendar") == ["daily"] and bxvtimer.get("Persistent") == ["yes"] and bxvtimer.get("Unit") == ["boxmaker-verify.service"] and bxvtimer.get("WantedBy") == ["timers.target"], "the verification runs daily, and after boot when a run was missed"),
    ("boxmaker-indexer.service" in brokerd.get("Wants", []) and "boxmaker-indexer.service" in brokerd.get("After", []), "brokerd waits for an indexer run at its start"),
]
for ok, what in checks:
    print(("units: " if ok else "units: FAILED: ") + what)
sys.exit(0 if all(ok for ok, _ in checks) else 1)
PY

refused '{ Morning = { schedule = "daily"; prompt = "p"; }; }' "$(gateway)" \
    "services.boxmaker.jobs.Morning: the name must be 1 to 18 characters"
refused '{ a-very-long-job-name = { schedule = "daily"; prompt = "p"; }; }' "$(gateway)" "boxmaker-job-<name>"
refused '{ brief = { schedule = "daily"; prompt = "p"; }; }' null "needs the gateway"
refused '{ brief = { schedule = "daily\nExecStart=/bin/sh"; prompt = "p"; }; }' "$(gateway)" "on one line"
refused '{ brief = { schedule = "daily"; prompt = ""; }; }' "$(gateway)" "prompt is empty"
refused '{ brief = { schedule = "daily"; prompt = "p"; deliver = "email"; }; }' "$(gateway)" "(the note NAME, written with the run's label)"
refused '{ brief = { schedule = "daily"; prompt = "p"; deliver = "note:../x"; }; }' null "name the note with 1 to 100"
refused '{ brief = { schedule = "daily"; prompt = "p"; deliver = "note:.x"; }; }' null "name the note with 1 to 100"
refused '{ brief = { schedule = "daily"; prompt = "p"; deliver = "note:"; }; }' null "name the note with 1 to 100"
# A job that delivers to a note needs no gateway, and its entry names the note.
if ! nix-instantiate --eval --strict --json nix/render-units.nix --arg gateway null \
    --arg jobs '{ brief = { schedule = "daily"; prompt = "p"; deliver = "note:brief.today"; }; }' \
    | grep -q 'deliver = \\"note:brief.today\\"'; then
    echo "units: a job delivering to a note did not render with its note" >&2
    status=1
else
    echo "units: a job delivering to a note renders without the gateway"
fi
# Without the gateway, a job that delivers to a note has no gateway jobs socket to want or
# join, and none is rendered; with it, only a job delivering to Mattermost joins it.
tests/units/render.sh "$out/notes" --arg gateway null \
    --arg jobs '{ brief = { schedule = "daily"; prompt = "p"; deliver = "note:brief.today"; }; }' >/dev/null
if [[ -e $out/notes/boxmaker-gatewayd-jobs.socket ]] || grep -q 'gateway' "$out/notes/boxmaker-job-brief.service" \
    || grep -q 'jobs_gateway' "$out/notes/config.toml"; then
    echo "units: without the gateway, a note job still names gatewayd's jobs socket" >&2
    status=1
else
    echo "units: a note job without the gateway names no gateway socket"
fi
tests/units/render.sh "$out/both" --arg gateway "$(gateway)" \
    --arg jobs '{ brief = { schedule = "daily"; prompt = "p"; deliver = "note:brief.today"; };
        morning = { schedule = "daily"; prompt = "p"; }; }' >/dev/null
if grep -q 'gateway' "$out/both/boxmaker-job-brief.service" \
    || ! grep -q '^SupplementaryGroups=.*boxmaker-jobs-gateway' "$out/both/boxmaker-job-morning.service" \
    || ! grep -q '^Wants=.*boxmaker-gatewayd-jobs.socket' "$out/both/boxmaker-job-morning.service"; then
    echo "units: only the job delivering to Mattermost may join gatewayd's jobs socket" >&2
    status=1
else
    echo "units: only the job delivering to Mattermost joins gatewayd's jobs socket"
fi
# Without the gateway the daily verification posts nothing: no --alert (it has it with one).
if ! grep -qx 'ExecStart=/nix/store/00000000000000000000000000000000-boxmaker/bin/bxctl --config /etc/boxmaker/config.toml verify' \
    "$out/notes/boxmaker-verify.service"; then
    echo "units: without the gateway, the daily verification is not a plain bxctl verify" >&2
    status=1
else
    echo "units: without the gateway, the daily verification passes no --alert"
fi
# A schedule on one line that systemd cannot parse renders, and the calendar check catches it.
tests/units/render.sh "$out/bad" --arg gateway "$(gateway)" \
    --arg jobs '{ brief = { schedule = "every tuesday"; prompt = "p"; }; }' >/dev/null
if calendars "$out/bad" 2>/dev/null; then
    echo "units: OnCalendar=every tuesday passed the calendar check" >&2
    status=1
else
    echo "units: refused as it should be: OnCalendar=every tuesday"
fi


exit "$status"
