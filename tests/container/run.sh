#!/usr/bin/env bash
# tests/container/run.sh: test tier 4, the container tier. Boots Debian bookworm with systemd
# as PID 1 in systemd-nspawn, installs the units rendered from nix/units.nix (the same data
# the NixOS module deploys) and the built binaries, and runs scenarios (a) to (e) and (g) of
# nix/tests/ for real inside it: DynamicUser, socket activation, sd_notify readiness, and
# tool units that brokerd starts through dbus-broker and polkit (tests/container/inside.sh),
# scenario (g): gatewayd against fake-mattermost (tests/container/gateway.sh), and scenario
# (h): a test-only tool (tests/container/sibling-tool.py) that reads past the path its call
# covers, and finds nothing bound there (tests/container/binds.sh), and scenario (i): grants
# under a 0700 home and through a linked prefix (tests/container/grant-paths.sh),
# scenario (j): the agent's notes through brokerd and their units, with a test-only
# compromised note tool (tests/container/notes.sh, notes-tool.py), and scenario (k): a
# scheduled job's timer fires and its run is delivered (tests/container/jobs.sh).
#
# Usage: tests/container/run.sh BIN_DIR
#   BIN_DIR holds the workspace's binaries (target/debug or target/release): brokerd,
#   loopd, inferproxy, gatewayd, bxctl, boxmaker-tool, boxmaker-job, fake-llama-server,
#   fake-mattermost.
# Environment:
#   BOXMAKER_CACHE              the root file system is built once under
#                               $BOXMAKER_CACHE/rootfs-bookworm (default ~/.cache/boxmaker)
#   BOXMAKER_CONTAINER_TIMEOUT  seconds before the container is stopped (default 300)
# Needs root (systemd-nspawn, debootstrap); installs systemd-container and debootstrap with
# apt when they are missing. One container at a time, in its own cgroup folder.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
CACHE=${BOXMAKER_CACHE:-$HOME/.cache/boxmaker}
TIMEOUT=${BOXMAKER_CONTAINER_TIMEOUT:-300}
BINARIES=(brokerd loopd inferproxy gatewayd bxctl boxmaker-tool boxmaker-job fake-llama-server fake-mattermost)

say() { printf '\n=== container: %s\n' "$*"; }
die() {
    echo "container: $*" >&2
    exit 1
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

[[ $# -eq 1 ]] || die "usage: tests/container/run.sh BIN_DIR (target/debug or target/release)"
bin=$(cd "$1" && pwd) || die "no directory $1"
for b in "${BINARIES[@]}"; do
    [[ -x $bin/$b ]] || die "$bin/$b is missing: build with 'cargo build --workspace --bins' first"
done

start_all=$(now)

# ---- 1. root and tools ------------------------------------------------------------------
say "step 1: checking for root, systemd-nspawn, debootstrap, nix-instantiate, python3"
if [[ $(id -u) != 0 ]]; then
    die "needs root: systemd-nspawn boots a container and debootstrap builds its root file
system (run the gate as root, or: sudo tests/container/run.sh $1)"
fi
missing=()
command -v systemd-nspawn >/dev/null 2>&1 || missing+=(systemd-container)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v nix-instantiate >/dev/null 2>&1 || missing+=(nix-bin)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ((${#missing[@]})); then
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and there is no apt-get: install them by hand"
    echo "installing with apt: ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi
echo "ok: $(systemd-nspawn --version | head -n1), debootstrap, $(nix-instantiate --version)"

# ---- 2. the root file system (cached) ---------------------------------------------------
say "step 2: the Debian bookworm root file system (built once, cached under $CACHE)"
t=$(now)
root=$("$here/rootfs.sh" "$CACHE")
echo "root file system: $root ($(since "$t") s)"

# ---- 3. render the unit core and stage what gets bound into the container ---------------
say "step 3: rendering nix/units.nix with nix-instantiate (package /opt/boxmaker)"
work=$(mktemp -d /tmp/boxmaker-container.XXXXXX)
cgroup_name=boxmaker-container-$$
cleanup() {
    rm -rf "$work"
    local c
    for c in /sys/fs/cgroup/systemd/$cgroup_name /sys/fs/cgroup/unified/$cgroup_name; do
        # nspawn leaves its own sub-folders (payload, supervisor); empty ones go, deepest first.
        if [[ -d $c ]]; then find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
    done
}
trap cleanup EXIT
units=$work/units
mkdir -p "$units" "$work/etc-boxmaker/grants" "$work/sockets.target.wants" "$work/timers.target.wants"
# brokerd's read-only view of the granted paths (`grantPaths`), derived from the test grants
# as nix/module.nix derives it from services.boxmaker.grants: the paths of every read_file
# and list_dir grant. Scenario (i) needs the one under /home (ProtectHome=tmpfs).
grant_paths=$(python3 - "$here"/grants/*.toml <<'PY'
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
) || die "cannot read the grant paths of $here/grants (python3 >= 3.11, for tomllib)"
echo "grantPaths = $grant_paths"
"$repo/tests/units/render.sh" "$units" \
    --arg package '"/opt/boxmaker"' \
    --arg fakeLlama '{ script = "/etc/boxmaker/fake-llama.toml"; listen = "127.0.0.1:8080"; }' \
    --arg gateway '{ server = "http://127.0.0.1:8065"; owners = [ "ownerkp1dx4oy7wqbsm3e9t6ua" ];
        channel = "chan4mqx8ekdy1bwpu7s9ront3"; tokenFile = "/etc/boxmaker/secrets/mattermost-token";
        allowedAddresses = [ "localhost" ]; }' \
    --arg fakeMattermost '{ listen = "127.0.0.1:8065"; }' \
    --arg grantPaths "$grant_paths" \
    --arg jobs '{ morning-brief = { schedule = "2099-01-01 00:00:00"; prompt = "what is on my todo list?"; };
        watch-inbox = { schedule = "2099-01-01 00:00:00"; prompt = "what is in my inbox?"; }; }'
# /etc/boxmaker: the rendered config, the test grants, and the VM tests' fake model script
# with the container tier's own rules appended (tests/container/fake-rules.toml).
cp "$units/config.toml" "$work/etc-boxmaker/config.toml"
# Scenario (h)'s config: the same, with the test-only tests/container/sibling-tool.py as the
# tool (a drop-in points brokerd at it for that scenario only; the units stay as rendered).
sed 's|^tool = "/opt/boxmaker/bin/boxmaker-tool"$|tool = "/opt/boxmaker-test/sibling-tool.py"|' \
    "$units/config.toml" >"$work/etc-boxmaker/config-sibling-tool.toml"
grep -q '^tool = "/opt/boxmaker-test/sibling-tool.py"$' "$work/etc-boxmaker/config-sibling-tool.toml" ||
    die "the rendered config.toml has no tool = \"/opt/boxmaker/bin/boxmaker-tool\" line to replace"
# Scenario (j)'s config: the test-only tests/container/notes-tool.py as the tool (notes.sh).
sed 's|^tool = "/opt/boxmaker/bin/boxmaker-tool"$|tool = "/opt/boxmaker-test/notes-tool.py"|' \
    "$units/config.toml" >"$work/etc-boxmaker/config-notes-tool.toml"
cp "$here"/grants/*.toml "$work/etc-boxmaker/grants/"
cat "$repo/nix/tests/lib/fake-script.toml" "$here/fake-rules.toml" >"$work/etc-boxmaker/fake-llama.toml"
chmod -R a+rX "$work"
# The fake's bot token, root-only as a deployed secret is; PID 1 reads it (LoadCredential=).
mkdir -m 0700 "$work/etc-boxmaker/secrets"
(umask 077 && echo bot-token >"$work/etc-boxmaker/secrets/mattermost-token")
# The grants must load with brokerd's own loader before anything boots.
"$bin/bxctl" grants check "$work/etc-boxmaker/grants"

# Every unit file into /etc/systemd/system, and the sockets enabled as NixOS does
# (WantedBy=sockets.target).
binds=()
for f in "$units"/*.service "$units"/*.socket "$units"/*.timer; do
    binds+=("--bind-ro=$f:/etc/systemd/system/$(basename "$f")")
done
for f in "$units"/*.timer; do
    ln -s "/etc/systemd/system/$(basename "$f")" "$work/timers.target.wants/"
done
for f in "$units"/*.socket; do
    ln -s "/etc/systemd/system/$(basename "$f")" "$work/sockets.target.wants/"
done
binds+=(
    "--bind-ro=$work/sockets.target.wants:/etc/systemd/system/sockets.target.wants"
    "--bind-ro=$work/timers.target.wants:/etc/systemd/system/timers.target.wants"
    "--bind-ro=$units/tmpfiles.conf:/etc/tmpfiles.d/boxmaker.conf"
    "--bind-ro=$units/sysusers.conf:/etc/sysusers.d/boxmaker.conf"
    "--bind-ro=$units/polkit.rules:/etc/polkit-1/rules.d/50-boxmaker.rules"
    "--bind-ro=$work/etc-boxmaker:/etc/boxmaker"
    "--bind-ro=$here/boxmaker-container-test.service:/etc/systemd/system/boxmaker-container-test.service"
    "--bind-ro=$here:/opt/boxmaker-test"
)
for b in "${BINARIES[@]}"; do
    binds+=("--bind-ro=$bin/$b:/opt/boxmaker/bin/$b")
done

# ---- 4. boot ------------------------------------------------------------------------------
say "step 4: booting $root (ephemeral copy) with systemd as PID 1; the scenarios run inside"
echo "the test unit boxmaker-container-test.service runs tests/container/inside.sh and ends"
echo "the container with its exit code (systemctl exit); stopped after ${TIMEOUT}s at most"
# Its own cgroup folder, so that it never collides with another container on this host.
for c in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do
    [[ -d $c ]] && mkdir -p "$c/$cgroup_name"
done
t=$(now)
rc=0
(
    for c in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do
        if [[ -d $c/$cgroup_name ]]; then echo "$BASHPID" >"$c/$cgroup_name/cgroup.procs"; fi
    done
    exec timeout --kill-after=10 "$TIMEOUT" systemd-nspawn -D "$root" --ephemeral -b \
        --register=no --keep-unit --private-network --console=read-only \
        --machine="boxmaker-test-$$" \
        "${binds[@]}" \
        -- systemd.unit=multi-user.target systemd.wants=boxmaker-fake-llama-server.service \
        systemd.wants=boxmaker-fake-mattermost.service systemd.wants=boxmaker-gatewayd.service \
        systemd.wants=boxmaker-container-test.service systemd.show_status=error
) || rc=$?
boot=$(since "$t")

say "result"
echo "container ran for ${boot}s; whole tier $(since "$start_all")s"
case $rc in
0) echo "container: every scenario passed" ;;
124 | 137) die "the container did not finish within ${TIMEOUT}s (exit $rc)" ;;
*) die "the container exited with $rc: see the FAIL lines above" ;;
esac
