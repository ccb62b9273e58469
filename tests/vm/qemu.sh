#!/usr/bin/env bash
# tests/vm/qemu.sh: installs qemu-system-x86 when it is missing (root only; tests/vm/run.sh
# calls it). It must match the installed qemu-utils: a Debian bookworm machine that has
# qemu-utils from bookworm-backports would lose it to bookworm's own qemu-system-x86 (apt
# removes the newer qemu-utils), so then the backports package is taken, through a private
# package list (the system's /etc/apt and lists are left alone). Anywhere else: plain apt.
set -euo pipefail

if command -v qemu-system-x86_64 >/dev/null 2>&1; then
    echo "ok: $(qemu-system-x86_64 --version | head -n1)"
    exit 0
fi
command -v apt-get >/dev/null 2>&1 || { echo "vm: no qemu-system-x86_64 and no apt-get: install QEMU by hand" >&2; exit 1; }
utils=$(dpkg-query -W -f '${Version}' qemu-utils 2>/dev/null || true)
if [[ $utils == *bpo12* ]]; then
    scratch=$(mktemp -d /tmp/boxmaker-qemu-apt.XXXXXX)
    trap 'rm -rf "$scratch"' EXIT
    mkdir -p "$scratch/lists/partial" "$scratch/archives/partial"
    mirror=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n1 || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" >"$scratch/bpo.list"
    opts=(-o "Dir::Etc::sourcelist=$scratch/bpo.list"
        -o "Dir::State::lists=$scratch/lists" -o "Dir::Cache::archives=$scratch/archives")
    echo "--- qemu-system-x86 from bookworm-backports (qemu-utils $utils is from there)"
    apt-get "${opts[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" install -y -qq --no-install-recommends \
        -t bookworm-backports qemu-system-x86 qemu-utils
else
    echo "--- apt-get install qemu-system-x86"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86
fi
echo "ok: $(qemu-system-x86_64 --version | head -n1)"
