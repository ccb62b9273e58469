#!/bin/bash
# tests/vm/guest.sh: the VM tier's scenarios, run as root inside the booted Debian trixie
# guest (systemd 257 as PID 1, cgroup v2, dbus-broker, polkit) from the 9p share at /ci
# (tests/vm/run.sh puts it there as run.sh; the image's ci-run.service runs it and powers
# the guest off). It installs what tests/container/stage.sh staged exactly where the
# container tier binds it, with the binaries at /opt/boxmaker/bin, and then proves what
# systemd-nspawn cannot: the tool units' limits (limits.sh), the IP address filters of an
# http_fetch unit and of gatewayd (network.sh), polkit's unit-name check (polkit.sh),
# brokerd killed mid-session (killed.sh), the indexer's unit refused open_by_handle_at by its
# own filter (indexer.sh); and it measures a tool unit's launch cost
# (launch.sh). Exits with the number of failed checks.
set -uo pipefail
share=/ci

# ---- install: the staged files, the binaries, the test scripts ----------------------------
mkdir -p /opt/boxmaker/bin
cp "$share"/bin/* /opt/boxmaker/bin/
cp -r "$share/container-tests" /opt/boxmaker-test
cp -r "$share/vm-tests" /opt/boxmaker-vm
while read -r source destination; do
    if [[ -d $share/stage/$source ]]; then
        mkdir -p "$destination"
        cp -a "$share/stage/$source/." "$destination/"
    else
        mkdir -p "$(dirname "$destination")"
        cp -a "$share/stage/$source" "$destination"
    fi
done <"$share/stage/install.list"
cp "$share/polkit-252.rules" /opt/boxmaker-vm/polkit-252.rules
chown -R root:root /opt/boxmaker /opt/boxmaker-test /opt/boxmaker-vm /etc/boxmaker

# shellcheck source=tests/container/lib.sh
source /opt/boxmaker-test/lib.sh
# shellcheck disable=SC2090 # PROBE is python source, read by python3, never split by a shell
export PROBE
export -f owner active main_pid role_uid role_gid as_role in_role journal
started=$(date +%s.%N)

finish() {
    tier_summary "vm tier" "$started"
    exit "$RC"
}
trap finish EXIT

scenario "setup: what runs here; the staged units as NixOS would have them"
echo "systemd $(systemctl --version | awk 'NR == 1 { print $2 }') as PID 1; kernel $(uname -r);" \
    "cgroup $(stat -fc %T /sys/fs/cgroup); accelerator $(cat "$share/accelerator")"
expect "systemd is 257 or later (the version the units were rendered for)" \
    "test \"\$(systemctl --version | awk 'NR == 1 { print \$2 }')\" -ge 257"
expect "cgroup v2 with the memory and pids controllers" \
    "test \"\$(stat -fc %T /sys/fs/cgroup)\" = cgroup2fs && grep -qw memory /sys/fs/cgroup/cgroup.controllers && grep -qw pids /sys/fs/cgroup/cgroup.controllers"
expect "the system bus is dbus-broker" \
    "test \"\$(systemctl show -p Id --value dbus.service)\" = dbus-broker.service"
systemd-sysusers >/dev/null
systemd-tmpfiles --create /etc/tmpfiles.d/boxmaker.conf
systemctl daemon-reload
systemctl restart polkit.service
# The guest's own name resolution serves the granted name (brokerd has AF_UNIX only, so
# NSS files: /etc/hosts); both addresses live on a dummy interface, so nothing leaves.
modprobe dummy
ip link add vmnet0 type dummy
ip addr add 192.0.2.1/24 dev vmnet0
ip addr add 198.51.100.7/24 dev vmnet0
ip link set vmnet0 up
echo "192.0.2.1 granted.example" >>/etc/hosts
for f in /etc/systemd/system/sockets.target.wants/boxmaker-*.socket \
    /etc/systemd/system/paths.target.wants/boxmaker-*.path; do
    systemctl start "$(basename "$f")"
done
systemctl start boxmaker-fake-llama-server.service boxmaker-fake-mattermost.service \
    boxmaker-gatewayd.service
make_owner
wait_for 20 "the fake llama-server listens on 127.0.0.1:8080" "python3 -c \"\$PROBE\" tcp:127.0.0.1:8080"
expect "a chat (owner: bxctl chat -m hello) gets the model's answer; brokerd, loopd, inferproxy run" \
    "owner bxctl chat -m hello | grep -q 'test model' && owner bxctl approvals | grep -q 'no approvals waiting'"

# bxctl verify's comparison on the systemd NixOS runs (257 and later): every unit as the
# core rendered it, each service within its limit (docs/verify.md; the container tier runs
# the whole verification on 252).
expect "bxctl verify --only units: every unit as generated and within its limit on systemd 257" \
    "bxctl verify --only units > /tmp/verify.out; rc=\$?; grep -v '^ok' /tmp/verify.out; test \$rc = 0 && ! grep -q '^FAIL' /tmp/verify.out && test \"\$(grep -c '^ok    units  boxmaker-' /tmp/verify.out)\" = \"\$(python3 -c 'import json; print(len(json.load(open(\"/etc/boxmaker/units.json\"))[\"units\"]))')\""
note "boot: $(systemd-analyze 2>/dev/null | head -n 1)"
note "slowest units: $(systemd-analyze blame 2>/dev/null | head -n 4 | awk '{ printf "%s %s; ", $2, $1 }')"
# tests/vm/run.sh's BOXMAKER_VM_PARTS, when given, names the parts to run.
read -r -a parts <"$share/parts" || parts=()
((${#parts[@]})) || parts=(polkit limits network hands killed indexer launch)
for part in "${parts[@]}"; do
    part_started=$(date +%s.%N)
    # shellcheck source=/dev/null
    source "/opt/boxmaker-vm/$part.sh"
    took=$(awk -v a="$part_started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    note "($part: ${took}s)"
    echo "$part $took" >>"$share/out/parts"
done
