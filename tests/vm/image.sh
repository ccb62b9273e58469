#!/usr/bin/env bash
# tests/vm/image.sh: builds the VM tier's guest image once and caches it. Prints the image
# directory (vmlinuz, initrd.img, root.raw) on stdout; everything else goes to stderr.
#
# Usage: tests/vm/image.sh CACHE_DIR     (root only; tests/vm/run.sh calls it)
#
# The guest is Debian trixie (systemd 257, cgroup v2), from debootstrap; its kernel and
# initrd come from its own linux-image-amd64, and the disk image is made from the directory
# with `mkfs.ext4 -d` (no loop mount). The image lives under CACHE_DIR/vm-trixie/<key>, where
# the key is the hash of this file: any change here (the package list, the guest's runner)
# builds a new image, and the old ones are removed. The downloaded .debs are kept in
# CACHE_DIR/vm-trixie/debs, so a rebuild downloads nothing new. The guest runs, as root,
# /ci/run.sh from the 9p share tagged `ci`, writes /ci/out/rc, and powers itself off.
set -euo pipefail

cache=${1:?usage: image.sh CACHE_DIR}/vm-trixie
key=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
img=$cache/$key
if [[ -f $img/root.raw && -f $img/.built ]]; then
    echo "vm image: cached at $img" >&2
    echo "$img"
    exit 0
fi

mirror=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
# systemd 257 as PID 1 with udev; dbus-broker as the system bus (a DynamicUser cannot reach
# dbus-daemon, systemd#22737); polkitd (it needs a logind: libpam-systemd) decides which
# units brokerd may start; libnss-systemd resolves DynamicUser names; python3 for the
# probes and the test-only tool; iproute2 for the dummy interface; the kernel, with an
# initramfs (virtio_blk and ext4 are modules); kmod loads 9p and dummy.
packages=systemd,systemd-sysv,udev,dbus-broker,libpam-systemd,libnss-systemd,polkitd,python3,iproute2,procps,kmod,linux-image-amd64,initramfs-tools,zstd
mkdir -p "$cache/debs"
tmp=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
echo "vm image: debootstrap trixie from $mirror into $tmp (once; about a minute)" >&2
if ! debootstrap --variant=minbase --cache-dir="$cache/debs" --include="$packages" trixie \
    "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1; then
    tail -n 20 "$tmp/debootstrap.log" >&2
    exit 1
fi

echo ci-vm >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 ci-vm\n' >"$root/etc/hosts"
# trixie's minbase has no fsck.ext4: pass 0.
printf '/dev/vda / ext4 rw,noatime 0 0\n' >"$root/etc/fstab"
# A small initrd: only what mounts an ext4 root on virtio-blk.
sed -i 's/^MODULES=.*/MODULES=list/; s/^FSTYPE=.*/FSTYPE=ext4/' "$root/etc/initramfs-tools/initramfs.conf"
printf 'virtio_pci\nvirtio_blk\next4\n' >"$root/etc/initramfs-tools/modules"
# The runner: mounts the share, runs /ci/run.sh (its output to the console and /ci/out/log),
# writes /ci/out/rc, and the unit's SuccessAction/FailureAction power the guest off.
cat >"$root/usr/local/sbin/ci-run" <<'EOS'
#!/bin/bash
mkdir -p /ci
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 ci /ci || { echo "ci-run: no 9p share tagged ci"; exit 1; }
mkdir -p /ci/out
echo "ci-run: start at $(cut -d' ' -f1 /proc/uptime)s after kernel start"
set -o pipefail
bash /ci/run.sh 2>&1 | tee /ci/out/log
rc=$?
echo "$rc" >/ci/out/rc
echo "ci-run: rc=$rc at $(cut -d' ' -f1 /proc/uptime)s"
sync
EOS
chmod 755 "$root/usr/local/sbin/ci-run"
cat >"$root/etc/systemd/system/ci-run.service" <<'EOS'
[Unit]
Description=Run /ci/run.sh from the host share, then power off
After=multi-user.target dbus.service polkit.service
Wants=polkit.service
SuccessAction=poweroff-force
FailureAction=poweroff-force
[Service]
# Not oneshot: no start job stays queued while the scenarios run (one of them calls
# ClearJobs, which would cancel it).
Type=exec
ExecStart=/usr/local/sbin/ci-run
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
TimeoutStartSec=900
[Install]
WantedBy=multi-user.target
EOS
ln -sf /etc/systemd/system/ci-run.service "$root/etc/systemd/system/multi-user.target.wants/ci-run.service"
# Nothing to log in on, no timers: keep the boot short.
for unit in serial-getty@.service getty@.service apt-daily.timer apt-daily-upgrade.timer \
    e2scrub_all.timer fstrim.timer systemd-tmpfiles-clean.timer; do
    ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
# A throwaway guest with no network: root may log in on the console when debugging.
chroot "$root" passwd -d root >/dev/null
# Kernel modules a headless virtio guest never loads (about a third of the tree).
kernel=$(ls "$root/usr/lib/modules")
for d in sound drivers/gpu drivers/media drivers/infiniband drivers/iio drivers/usb drivers/scsi \
    drivers/net/wireless drivers/net/ethernet drivers/net/can drivers/bluetooth drivers/hid \
    drivers/input drivers/staging drivers/isdn drivers/mmc drivers/mtd drivers/nfc drivers/thunderbolt; do
    rm -rf "$root/usr/lib/modules/$kernel/kernel/$d"
done
chroot "$root" depmod -a "$kernel"
mount --bind /proc "$root/proc"
chroot "$root" update-initramfs -u -k all >/dev/null 2>&1 || { umount "$root/proc"; exit 1; }
umount "$root/proc"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/* \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* "$root"/usr/share/info/*

mkdir -p "$tmp/img"
cp "$root"/boot/vmlinuz-* "$tmp/img/vmlinuz"
cp "$root"/boot/initrd.img-* "$tmp/img/initrd.img"
# Its stdout is this script's answer (the image's path): mke2fs says "Creating regular file"
# there even with -q, so what it prints goes to stderr (a cold cache once failed on it).
mkfs.ext4 -q -F -L ci-root -d "$root" "$tmp/img/root.raw" 2G >&2
touch "$tmp/img/.built"
# Older images (another key) go: only the current one is kept.
find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name debs ! -name "$(basename "$tmp")" -exec rm -rf {} +
mv "$tmp/img" "$img"
echo "vm image: built $img ($(du -sh "$img" | cut -f1) on disk)" >&2
echo "$img"
