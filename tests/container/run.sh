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
# scheduled job's timer fires and its run is delivered (tests/container/jobs.sh), and
# scenario (l): the indexer's oneshot started by its path unit, searched through brokerd,
# and what its unit can reach (tests/container/indexer.sh, indexer-probe.py), and scenario
# (m): the audit log's daily full verification, its timer's oneshot asking brokerd, a change
# before the checkpoint found and posted on Mattermost (tests/container/audit-verify.sh),
# scenario (n): `bxctl verify` against the real units (tests/container/verify.sh),
# scenario (o): the hands, a write as the owner and a run in its empty unit
# (tests/container/hands.sh), and scenario (p): the reference MCP server mcp-server-time
# (tests/mcp/setup.sh's cached virtualenv, bound at /opt/mcp-venv) pinned and called through
# brokerd's units, and its call timed beside a bare systemd-run (tests/container/mcp.sh,
# mcp-launch.py), and scenario (q): fake-mcp-server as a remote server over Streamable HTTP
# on loopback and over stdio, a grant's secret delivered as a credential of brokerd's unit
# (tests/container/mcp-remote.sh, mcp-http.json, mcp-stdio.json, grants-mcp-remote/).
#
# With --measure-search it runs no scenario but the search measure (tests/container/measure.sh,
# issue 14): the cached corpus of tests/stack/src/corpus.rs staged into the roles' state, the
# real indexer unit run on it, and note_search / session_search timed through brokerd and
# their transient units. Not part of the gate (it takes minutes); docs/container-tests.md.
#
# Usage: tests/container/run.sh [--measure-search] BIN_DIR
#   BIN_DIR holds the workspace's binaries (target/debug or target/release): brokerd,
#   loopd, inferproxy, gatewayd, bxctl, boxmaker-tool, boxmaker-job, fake-llama-server,
#   fake-mattermost, and fake-mcp-server (scenario (q)).
# Environment:
#   BOXMAKER_CACHE              the root file system is built once under
#                               $BOXMAKER_CACHE/rootfs-bookworm (default ~/.cache/boxmaker)
#   BOXMAKER_CONTAINER_TIMEOUT  seconds before the container is stopped (default 480; with
#                               --measure-search 1800)
#   BOXMAKER_MEASURE_ROUNDS     --measure-search: timed calls of each tool (default 30)
#   BOXMAKER_MCP_ROUNDS         scenario (p): timed MCP calls, each beside a bare unit
#                               (default 5)
# Needs root (systemd-nspawn, debootstrap); installs systemd-container and debootstrap with
# apt when they are missing. One container at a time, in its own cgroup folder.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
CACHE=${BOXMAKER_CACHE:-$HOME/.cache/boxmaker}
TIER=container
# shellcheck source=tests/container/host.sh
source "$here/host.sh"
measure=no
if [[ ${1:-} == --measure-search ]]; then
    measure=yes
    shift
fi
TIMEOUT=${BOXMAKER_CONTAINER_TIMEOUT:-$([[ $measure == yes ]] && echo 1800 || echo 480)}
bin=$(bin_dir "$@") || exit 1

start_all=$(now)

# ---- 1. root and tools ------------------------------------------------------------------
say "step 1: checking for root, systemd-nspawn, debootstrap, nix-instantiate, python3"
if [[ $(id -u) != 0 ]]; then
    die "needs root: systemd-nspawn boots a container and debootstrap builds its root file
system (run the gate as root, or: sudo tests/container/run.sh $1)"
fi
install_missing systemd-nspawn:systemd-container debootstrap:debootstrap nix-instantiate:nix-bin python3:python3
echo "ok: $(systemd-nspawn --version | head -n1), debootstrap, $(nix-instantiate --version)"

# ---- 2. the root file system (cached) ---------------------------------------------------
say "step 2: the Debian bookworm root file system (built once, cached under $CACHE)"
t=$(now)
root=$("$here/rootfs.sh" "$CACHE")
echo "root file system: $root ($(since "$t") s)"

# ---- 3. render the unit core and stage what gets bound into the container ---------------
say "step 3: rendering nix/units.nix with nix-instantiate (package /opt/boxmaker, systemd 252)"
work=$(mktemp -d /tmp/boxmaker-container.XXXXXX)
cgroup_name=boxmaker-container-$$
# Scenario (q): the secret grants hand to MCP servers; the scenario looks for it where it must
# and must not be.
MCP_KEY="Bearer sk-container-5e8d1c"
cleanup() {
    rm -rf "$work"
    local c
    for c in /sys/fs/cgroup/systemd/$cgroup_name /sys/fs/cgroup/unified/$cgroup_name; do
        # nspawn leaves its own sub-folders (payload, supervisor); empty ones go, deepest first.
        if [[ -d $c ]]; then find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
    done
}
trap cleanup EXIT
test_unit=boxmaker-container-test.service
# Scenario (q): the stand-ins' rules, and the key its grants hand to the MCP servers.
extra=(--rules "$here/mcp-remote-rules.toml" --secret "mcp-key=$MCP_KEY")
if [[ $measure == yes ]]; then
    say "step 3a: the search corpus (tests/stack/src/corpus.rs), made whole by its generator"
    # The bench's --corpus-only: regenerates ~/.cache/boxmaker/search-corpus-v2 unless its
    # stamp matches what is on disk, the check the stack bench itself makes.
    (cd "$repo" && cargo bench -q --locked --profile dev -p stack --bench search -- --corpus-only) ||
        die "the corpus generator failed"
    corpus=${HOME:-/root}/.cache/boxmaker/search-corpus-v2/home
    [[ -d $corpus/memory/notes ]] || die "no corpus at $corpus"
    test_unit=boxmaker-container-measure.service
    extra=(--rules "$here/measure-rules.toml")
fi
"$here/stage.sh" "$work" "$bin" 252 "${extra[@]}" \
    --tool sibling-tool=/opt/boxmaker-test/sibling-tool.py \
    --tool notes-tool=/opt/boxmaker-test/notes-tool.py
# Scenario (p): the reference servers' virtualenv (cached; a second run installs nothing),
# run inside by the container's python3.11, so it must be a 3.11 one; the config with the
# server, taken by a runtime drop-in for that scenario only.
if [[ $measure == no ]]; then
    say "step 3b: the MCP reference servers' virtualenv (tests/mcp/setup.sh, cached)"
    mcp_bin=$("$repo/tests/mcp/setup.sh" | sed -n 's/^BOXMAKER_MCP_PYTHON_BIN=//p')
    venv=$(dirname "$mcp_bin")
    [[ -d $venv/lib/python3.11/site-packages/mcp_server_time ]] ||
        die "$venv has no lib/python3.11/site-packages/mcp_server_time: scenario (p) runs it with the container's python3.11"
    cp "$work/etc-boxmaker/config.toml" "$work/etc-boxmaker/config-mcp.toml"
    cat >>"$work/etc-boxmaker/config-mcp.toml" <<'EOF'

# Scenario (p) (tests/container/mcp.sh): the reference time server from PyPI.
[[mcp]]
name = "time"
command = ["/usr/bin/python3", "-m", "mcp_server_time", "--local-timezone", "UTC"]
env = { PYTHONPATH = "/opt/mcp-venv/lib/python3.11/site-packages" }
binds = ["/opt/mcp-venv"]
EOF
    echo "${BOXMAKER_MCP_ROUNDS:-5}" >"$work/etc-boxmaker/mcp-rounds"
    echo "virtualenv: $venv (bound at /opt/mcp-venv)"
    # Scenario (q) (tests/container/mcp-remote.sh): fake-mcp-server as a remote server (its
    # --http stand-in on loopback) under three names whose grants differ, and over stdio
    # under two; the grants in tests/container/grants-mcp-remote, a directory of their own
    # (so no other scenario's brokerd or `bxctl verify` sees them).
    cp -r "$here/grants-mcp-remote" "$work/etc-boxmaker/grants-mcp-remote"
    "$bin/bxctl" grants check "$work/etc-boxmaker/grants-mcp-remote"
    sed 's|^grants = "/etc/boxmaker/grants"$|grants = "/etc/boxmaker/grants-mcp-remote"|' \
        "$work/etc-boxmaker/config.toml" >"$work/etc-boxmaker/config-mcp-remote.toml"
    grep -q '^grants = "/etc/boxmaker/grants-mcp-remote"$' "$work/etc-boxmaker/config-mcp-remote.toml" ||
        die "the rendered config.toml has no grants = \"/etc/boxmaker/grants\" line to replace"
    {
        echo
        echo "# Scenario (q) (tests/container/mcp-remote.sh): the stand-ins."
        for name in far farbare farshut; do
            printf '[[mcp]]\nname = "%s"\nurl = "http://127.0.0.1:8931/mcp"\n' "$name"
            [[ $name == farshut ]] || printf 'secret_header = "Authorization"\n'
        done
        for name in local localbare; do
            printf '[[mcp]]\nname = "%s"\n' "$name"
            printf 'command = ["/opt/boxmaker/bin/fake-mcp-server", "/opt/boxmaker-mcp/mcp-stdio.json"]\n'
            printf 'secret_env = "MCP_KEY"\nbinds = ["/opt/boxmaker-mcp"]\n'
        done
    } >>"$work/etc-boxmaker/config-mcp-remote.toml"
    mkdir "$work/mcp-stdio"
    cp "$here/mcp-stdio.json" "$work/mcp-stdio/"
    chmod -R a+rX "$work/mcp-stdio" "$work/etc-boxmaker/grants-mcp-remote" "$work/etc-boxmaker/config-mcp-remote.toml"
    [[ -x $bin/fake-mcp-server ]] || die "$bin/fake-mcp-server is missing: build with 'cargo build --workspace --bins' first"
fi
# What stage.sh placed, bound in read-only; then the test unit, the test scripts and the
# binaries.
binds=()
while read -r source destination; do
    binds+=("--bind-ro=$work/$source:$destination")
done <"$work/install.list"
binds+=(
    "--bind-ro=$here/$test_unit:/etc/systemd/system/$test_unit"
    "--bind-ro=$here:/opt/boxmaker-test"
)
if [[ $measure == no ]]; then
    binds+=("--bind-ro=$venv:/opt/mcp-venv" "--bind-ro=$work/mcp-stdio:/opt/boxmaker-mcp"
        "--bind-ro=$bin/fake-mcp-server:/opt/boxmaker/bin/fake-mcp-server")
fi
if [[ $measure == yes ]]; then
    mkdir "$work/measure"
    echo "${BOXMAKER_MEASURE_ROUNDS:-30}" >"$work/measure/rounds"
    binds+=("--bind-ro=$corpus:/opt/boxmaker-corpus" "--bind-ro=$work/measure:/opt/boxmaker-measure")
fi
for b in "${BINARIES[@]}"; do
    binds+=("--bind-ro=$bin/$b:/opt/boxmaker/bin/$b")
done

# ---- 4. boot ------------------------------------------------------------------------------
say "step 4: booting $root (ephemeral copy) with systemd as PID 1; the scenarios run inside"
echo "the test unit $test_unit runs tests/container/$([[ $measure == yes ]] && echo measure.sh || echo inside.sh) and ends"
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
        "systemd.wants=$test_unit" systemd.show_status=error
) || rc=$?
boot=$(since "$t")

say "result"
echo "container ran for ${boot}s; whole tier $(since "$start_all")s"
case $rc in
0) echo "container: every scenario passed" ;;
124 | 137) die "the container did not finish within ${TIMEOUT}s (exit $rc)" ;;
*) die "the container exited with $rc: see the FAIL lines above" ;;
esac
