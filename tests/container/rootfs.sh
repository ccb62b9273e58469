#!/usr/bin/env bash
# tests/container/rootfs.sh: builds the Debian bookworm root file system the container tier
# boots, once, and caches it. Prints the root's path on stdout (everything else on stderr).
#
# Usage: tests/container/rootfs.sh CACHE_DIR     (root only; the tier's run.sh calls it)
#
# The root lives at CACHE_DIR/rootfs-bookworm. It is rebuilt only when it is missing or when
# the package list below changes (a stamp file records it); a half-built root never counts,
# because debootstrap writes into a temporary directory that is renamed into place at the end.
set -euo pipefail

cache=${1:?usage: rootfs.sh CACHE_DIR}
root=$cache/rootfs-bookworm
# systemd as PID 1; dbus-broker, because a DynamicUser service (brokerd) cannot reach the
# classic dbus-daemon (systemd#22737); polkitd (which needs libpam-systemd) decides whether
# brokerd may start tool units; libnss-systemd resolves DynamicUser names; python3 for the
# probes (python3, not only python3-minimal: json and http.client for the fake Mattermost
# client, tests/container/mm.py); iproute2 to look at the network; util-linux (essential)
# brings setpriv and nsenter.
packages=systemd,systemd-sysv,dbus,dbus-broker,libnss-systemd,libpam-systemd,polkitd,python3-minimal,python3,iproute2
suite=bookworm
stamp="suite=$suite packages=$packages"

if [[ -f $root/.boxmaker-rootfs && $(cat "$root/.boxmaker-rootfs") == "$stamp" ]]; then
    echo "rootfs: cached at $root" >&2
    echo "$root"
    exit 0
fi

# The Debian mirror apt already uses (deb822 .sources or one-line .list), so no other network.
mirror=$(
    shopt -s nullglob
    for f in /etc/apt/sources.list.d/*.sources; do
        sed -n 's/^URIs:[[:space:]]*//p' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $f ]] && sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]*\).*/\2/p' "$f"
    done
    true
)
mirror=$(awk '{ print $1 }' <<<"$mirror" | grep -v -e security -e '^$' | head -n1 || true)
mirror=${mirror:-http://deb.debian.org/debian}

echo "rootfs: building $root with debootstrap from $mirror (once; about a minute, 280 MB)" >&2
mkdir -p "$cache"
rm -rf "$root.tmp" "$root"
debootstrap --variant=minbase --include="$packages" "$suite" "$root.tmp" "$mirror" >&2

# dbus-broker as the system bus (its unit carries Alias=dbus.service), not dbus-daemon.
systemctl --root="$root.tmp" disable dbus.service >&2 2>/dev/null || true
systemctl --root="$root.tmp" enable --force dbus-broker.service >&2
if [[ $(readlink "$root.tmp/etc/systemd/system/dbus.service") != */dbus-broker.service ]]; then
    echo "rootfs: could not make dbus-broker the system bus" >&2
    exit 1
fi
# Nothing the test does not need at boot: no getty on the read-only console, no timers.
rm -f "$root.tmp"/etc/systemd/system/getty.target.wants/* \
    "$root.tmp"/etc/systemd/system/timers.target.wants/*
# Keep the cache small: the downloaded packages are not needed once installed.
rm -rf "$root.tmp"/var/cache/apt/archives/*.deb
echo "$stamp" >"$root.tmp/.boxmaker-rootfs"
mv "$root.tmp" "$root"
echo "rootfs: built $root ($(du -sh "$root" | cut -f1))" >&2
echo "$root"
