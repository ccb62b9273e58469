# tests/container/host.sh: what the two tier drivers on the host share (tests/container/run.sh
# and tests/vm/run.sh source it, with TIER set to their name): messages, a clock, and the
# check of the binary directory both install from.
# shellcheck shell=bash

# The workspace's binaries a tier installs at /opt/boxmaker/bin.
BINARIES=(brokerd loopd inferproxy gatewayd bxctl boxmaker-tool boxmaker-job boxmaker-indexer fake-llama-server fake-mattermost)

say() { printf '\n=== %s: %s\n' "$TIER" "$*"; }
die() {
    echo "$TIER: $*" >&2
    exit 1
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# bin_dir ARGS...: the one argument, BIN_DIR, as an absolute path, holding every binary.
bin_dir() {
    [[ $# -eq 1 ]] || die "usage: tests/$TIER/run.sh BIN_DIR (target/debug or target/release)"
    local dir b
    dir=$(cd "$1" && pwd) || die "no directory $1"
    for b in "${BINARIES[@]}"; do
        [[ -x $dir/$b ]] || die "$dir/$b is missing: build with 'cargo build --workspace --bins' first"
    done
    echo "$dir"
}

# install_missing COMMAND:PACKAGE...: installs with apt the package of every command that is
# not on PATH (the tiers need root anyway).
install_missing() {
    local pair missing=()
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
    done
    ((${#missing[@]})) || return 0
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and there is no apt-get: install them by hand"
    echo "installing with apt: ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
}
