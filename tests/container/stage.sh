#!/usr/bin/env bash
# tests/container/stage.sh: what the container tier and the VM tier install into the system
# they boot, made once in one place: the units rendered from nix/units.nix (the data the
# NixOS module deploys), /etc/boxmaker (config, test grants, the fake model's script, the
# bot token) and the list of where each file goes. tests/container/run.sh binds the files
# in; tests/vm/run.sh ships them to the guest, which copies them into place
# (tests/vm/install.sh).
#
# Usage: tests/container/stage.sh WORK BIN_DIR SYSTEMD_VERSION [--grants DIR]... \
#            [--rules FILE]... [--tool NAME=PATH]... [--secret NAME=CONTENT]...
#   WORK             an empty directory to fill
#   BIN_DIR          the built binaries (bxctl checks the grants)
#   SYSTEMD_VERSION  the target's systemd (the polkit rule depends on it)
#   --grants DIR     more test grants, beside tests/container/grants
#   --rules FILE     more fake-model rules, appended after tests/container/fake-rules.toml
#   --tool NAME=PATH also write /etc/boxmaker/config-NAME.toml: the rendered config with
#                    PATH (a test-only tool) in place of boxmaker-tool
#   --secret NAME=CONTENT  a secret the grants may name: /etc/boxmaker/secrets/NAME (0600
#                    root) holding CONTENT, given to brokerd's unit as the module does
#                    (services.boxmaker.secrets: LoadCredential=NAME:FILE)
# Writes WORK/install.list: one `SOURCE DESTINATION` line per file or directory, SOURCE
# relative to WORK. The binaries and the test scripts are each tier's own to place.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
die() {
    echo "stage: $*" >&2
    exit 1
}
[[ $# -ge 3 ]] || die "usage: stage.sh WORK BIN_DIR SYSTEMD_VERSION [--grants DIR]... [--rules FILE]... [--tool NAME=PATH]... [--secret NAME=CONTENT]..."
work=$1 bin=$2 systemd_version=$3
shift 3
grant_dirs=("$here/grants") rules=("$repo/nix/tests/lib/fake-script.toml" "$here/fake-rules.toml") tools=() secrets=()
while (($#)); do
    [[ $# -ge 2 ]] || die "$1 needs a value"
    case $1 in
    --grants) grant_dirs+=("$2") ;;
    --rules) rules+=("$2") ;;
    --tool) tools+=("$2") ;;
    --secret) secrets+=("$2") ;;
    *) die "unknown option $1" ;;
    esac
    shift 2
done

units=$work/units
etc=$work/etc-boxmaker
mkdir -p "$units" "$etc/grants" "$work/sockets.target.wants" "$work/timers.target.wants" "$work/paths.target.wants"
for dir in "${grant_dirs[@]}"; do cp "$dir"/*.toml "$etc/grants/"; done
# brokerd's read-only view of the granted paths (`grantPaths`), derived from the test grants
# as nix/module.nix derives it from services.boxmaker.grants: the paths of every read_file
# and list_dir grant. Scenario (i) needs the one under /home (ProtectHome=tmpfs).
grant_paths=$(python3 - "$etc"/grants/*.toml <<'PY'
import json, sys, tomllib
paths = []
for name in sys.argv[1:]:
    with open(name, "rb") as f:
        grant = tomllib.load(f)
    if grant.get("tool") in ("read_file", "list_dir"):
        for path in grant.get("constraints", {}).get("paths", []):
            if path not in paths:
                paths.append(path)
print("[ " + " ".join(json.dumps(p) for p in paths) + " ]")
PY
) || die "cannot read the grant paths of $etc/grants (python3 >= 3.11, for tomllib)"
echo "grantPaths = $grant_paths; systemd $systemd_version"
# The hands (docs/tools.md): the owner writes as the hands user; python3 and true are the
# programs run grants may name. Before 257 (no PrivatePIDs=) the write units may run only
# with the owner's consent to share the PID namespace (hands.sharedPids).
shared_pids=false
if ((${systemd_version%%.*} < 257)); then shared_pids=true; fi
# The secrets, as the module hands services.boxmaker.secrets to units.nix (name -> file).
secret_files="{"
for secret in "${secrets[@]}"; do
    secret_files+=" \"${secret%%=*}\" = \"/etc/boxmaker/secrets/${secret%%=*}\";"
done
secret_files+=" }"
"$repo/tests/units/render.sh" "$units" \
    --arg handsUser '"owner"' \
    --arg programs '{ python3 = "/usr/bin/python3"; "true" = "/usr/bin/true"; }' \
    --arg handsSharedPids "$shared_pids" \
    --arg package '"/opt/boxmaker"' \
    --arg systemdVersion "\"$systemd_version\"" \
    --arg fakeLlama '{ script = "/etc/boxmaker/fake-llama.toml"; listen = "127.0.0.1:8080"; }' \
    --arg gateway '{ server = "http://127.0.0.1:8065"; owners = [ "ownerkp1dx4oy7wqbsm3e9t6ua" ];
        channel = "chan4mqx8ekdy1bwpu7s9ront3"; tokenFile = "/etc/boxmaker/secrets/mattermost-token";
        allowedAddresses = [ "localhost" ]; }' \
    --arg fakeMattermost '{ listen = "127.0.0.1:8065"; }' \
    --arg grantPaths "$grant_paths" \
    --arg secrets "$secret_files" \
    --arg jobs '{ morning-brief = { schedule = "2099-01-01 00:00:00"; prompt = "what is on my todo list?"; };
        watch-inbox = { schedule = "2099-01-01 00:00:00"; prompt = "what is in my inbox?"; }; }'
cp "$units/config.toml" "$etc/config.toml"
# What the module generated, as the module installs it beside config.toml (`bxctl verify`).
cp "$units/units.json" "$etc/units.json"
# A test-only tool's config: the same, with that tool in place of boxmaker-tool (a drop-in
# points brokerd at it for one scenario; the units stay as rendered).
for tool in "${tools[@]}"; do
    name=${tool%%=*} path=${tool#*=}
    sed "s|^tool = \"/opt/boxmaker/bin/boxmaker-tool\"$|tool = \"$path\"|" "$units/config.toml" >"$etc/config-$name.toml"
    grep -q "^tool = \"$path\"$" "$etc/config-$name.toml" ||
        die "the rendered config.toml has no tool = \"/opt/boxmaker/bin/boxmaker-tool\" line to replace"
done
cat "${rules[@]}" >"$etc/fake-llama.toml"
# The owner's core memory where the NixOS module names it: root's, read by loopd (every
# prompt) and brokerd (which accounts for it).
echo "You are the container tier's assistant: answer briefly, use the tools." >"$etc/core.md"
chmod -R a+rX "$work"
# The fake's bot token, root-only as a deployed secret is; PID 1 reads it (LoadCredential=).
mkdir -m 0700 "$etc/secrets"
(umask 077 && echo bot-token >"$etc/secrets/mattermost-token")
for secret in "${secrets[@]}"; do
    (umask 077 && printf '%s' "${secret#*=}" >"$etc/secrets/${secret%%=*}")
done
# The grants must load with brokerd's own loader before anything boots.
"$bin/bxctl" grants check "$etc/grants"

# Every unit file into /etc/systemd/system, and the sockets, the jobs' timers and the
# indexer's path unit enabled as NixOS does (WantedBy=sockets.target, timers.target,
# paths.target).
{
    for f in "$units"/*.service "$units"/*.socket "$units"/*.timer "$units"/*.path; do
        echo "units/$(basename "$f") /etc/systemd/system/$(basename "$f")"
    done
    echo "sockets.target.wants /etc/systemd/system/sockets.target.wants"
    echo "timers.target.wants /etc/systemd/system/timers.target.wants"
    echo "paths.target.wants /etc/systemd/system/paths.target.wants"
    echo "units/tmpfiles.conf /etc/tmpfiles.d/boxmaker.conf"
    echo "units/sysusers.conf /etc/sysusers.d/boxmaker.conf"
    echo "units/polkit.rules /etc/polkit-1/rules.d/50-boxmaker.rules"
    echo "etc-boxmaker /etc/boxmaker"
} >"$work/install.list"
for f in "$units"/*.socket; do
    ln -s "/etc/systemd/system/$(basename "$f")" "$work/sockets.target.wants/"
done
for f in "$units"/*.timer; do
    ln -s "/etc/systemd/system/$(basename "$f")" "$work/timers.target.wants/"
done
for f in "$units"/*.path; do
    ln -s "/etc/systemd/system/$(basename "$f")" "$work/paths.target.wants/"
done
