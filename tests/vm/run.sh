#!/usr/bin/env bash
# tests/vm/run.sh: the VM tier. Boots a Debian trixie guest (systemd 257, cgroup v2) under
# QEMU, with the units rendered from nix/units.nix for systemd 257 and the built binaries
# installed as the container tier installs them (tests/container/stage.sh), and proves in
# it what systemd-nspawn cannot (tests/vm/guest.sh): the tool units' MemoryMax= and
# TasksMax=, the IP address filters of an http_fetch unit and of gatewayd, polkit's
# unit-name check, and scenario (f), brokerd killed mid-session; it also measures a tool
# unit's launch cost (docs/performance.md).
#
# Usage: tests/vm/run.sh BIN_DIR     (target/debug or target/release)
# Environment:
#   BOXMAKER_CACHE       the image is built once under $BOXMAKER_CACHE/vm-trixie
#                        (default ~/.cache/boxmaker); the accelerator probe's answer too
#   BOXMAKER_VM_TIMEOUT  seconds before QEMU is stopped (default 900: a loaded host took 528)
#   BOXMAKER_VM_PARTS    the guest's parts to run after its setup, space-separated (default
#                        all: polkit limits network hands killed indexer launch); hands
#                        needs network's listener script, so `network hands`. The gate
#                        runs them all.
#   BOXMAKER_TIMINGS     a file to which `NAME SECONDS` lines are appended (tests/gate's
#                        timing lines: image, boot, guest, and part-NAME for each of the
#                        guest's parts)
# Needs root (debootstrap, chroot); installs QEMU, debootstrap and binutils with apt when
# they are missing. The guest has no network device (-nic none): only its loopback and a
# dummy interface it makes itself. Results come back through a 9p share.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
CACHE=${BOXMAKER_CACHE:-$HOME/.cache/boxmaker}
TIMEOUT=${BOXMAKER_VM_TIMEOUT:-900}
TIER=vm
# shellcheck source=tests/container/host.sh
source "$repo/tests/container/host.sh"
bin=$(bin_dir "$@") || exit 1
timing() { if [[ -n ${BOXMAKER_TIMINGS:-} ]]; then echo "$1 $2" >>"$BOXMAKER_TIMINGS"; fi; }
start_all=$(now)

# ---- 1. root and tools ------------------------------------------------------------------
say "step 1: checking for root, QEMU, debootstrap, nix-instantiate, python3, objcopy"
[[ $(id -u) == 0 ]] || die "needs root: debootstrap and chroot build the guest image (run the gate as root)"
install_missing debootstrap:debootstrap nix-instantiate:nix-bin python3:python3 objcopy:binutils mkfs.ext4:e2fsprogs
"$here/qemu.sh"

# ---- 2. the guest image (cached) ----------------------------------------------------------
say "step 2: the Debian trixie guest image (built once, cached under $CACHE/vm-trixie)"
t=$(now)
img=$("$here/image.sh" "$CACHE")
took=$(since "$t")
echo "image: $img (${took}s)"
timing image "$took"

# ---- 3. the accelerator: KVM if it can run this kernel here, else TCG (probed once) -------
say "step 3: the accelerator"
share=$(mktemp -d /tmp/boxmaker-vm.XXXXXX)
trap 'rm -rf "$share"' EXIT
# qemu ACCEL SHARE: boots the image with the 9p share; the guest runs SHARE/run.sh.
qemu() {
    local accel
    case $1 in
    kvm) accel=(-enable-kvm -cpu host) ;;
    *) accel=(-accel tcg,thread=multi -cpu max) ;;
    esac
    rm -rf "$2/out"
    timeout --kill-after=5 "$3" qemu-system-x86_64 "${accel[@]}" -m 2048 -smp 2 \
        -machine q35 -nodefaults -no-user-config -display none -no-reboot \
        -serial "file:$2/console.log" \
        -kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
        -append "root=/dev/vda rw console=ttyS0 quiet loglevel=4 panic=-1 systemd.show_status=error" \
        -drive "file=$img/root.raw,format=raw,if=virtio,snapshot=on,cache=unsafe" \
        -virtfs "local,path=$2,mount_tag=ci,security_model=none,id=ci" \
        -nic none
}
accel_cache=$CACHE/vm-trixie/accelerator
accel_key="$(basename "$img") $(uname -r) $(qemu-system-x86_64 --version | head -n1)"
if [[ -f $accel_cache && $(sed -n 2p "$accel_cache") == "$accel_key" ]]; then
    accel=$(sed -n 1p "$accel_cache")
    echo "accelerator: $accel (probed before: $accel_cache)"
elif [[ ! -w /dev/kvm ]]; then
    accel=tcg
    echo "accelerator: tcg (no writable /dev/kvm)"
    printf '%s\n%s\n' "$accel" "$accel_key" >"$accel_cache"
else
    # A KVM that cannot run a stock kernel (a nested "PVM" KVM) fails at once or hangs:
    # a short timeout, and the answer is kept.
    t=$(now)
    mkdir -p "$share/probe"
    echo 'exit 0' >"$share/probe/run.sh"
    if qemu kvm "$share/probe" 60 >/dev/null 2>&1 && [[ $(cat "$share/probe/out/rc" 2>/dev/null) == 0 ]]; then
        accel=kvm
    else
        accel=tcg
    fi
    rm -rf "$share/probe"
    echo "accelerator: $accel (probed a KVM boot in $(since "$t")s; kept in $accel_cache)"
    printf '%s\n%s\n' "$accel" "$accel_key" >"$accel_cache"
fi

# ---- 4. what the guest installs -------------------------------------------------------------
say "step 4: rendering nix/units.nix for systemd 257 and staging the share"
"$repo/tests/container/stage.sh" "$share/stage" "$bin" 257 \
    --grants "$here/grants" --rules "$here/rules.toml" \
    --tool test-tool=/opt/boxmaker-vm/test-tool.py
# The same rule rendered for systemd 252 (with the fallback): polkit.sh's negative control.
"$repo/tests/units/render.sh" "$share/render-252" --arg package '"/opt/boxmaker"' \
    --arg systemdVersion '"252"' >/dev/null
cp "$share/render-252/polkit.rules" "$share/polkit-252.rules"
rm -rf "$share/render-252"
# The binaries without their debug sections: the same code, a tenth of the bytes over 9p.
mkdir -p "$share/bin"
for b in "${BINARIES[@]}"; do
    objcopy --strip-debug "$bin/$b" "$share/bin/$b"
done
cp -r "$repo/tests/container" "$share/container-tests"
cp -r "$here" "$share/vm-tests"
cp "$here/guest.sh" "$share/run.sh"
echo "$accel" >"$share/accelerator"
echo "${BOXMAKER_VM_PARTS:-}" >"$share/parts"
echo "share: $share ($(du -sh "$share" | cut -f1))"

# ---- 5. boot ------------------------------------------------------------------------------
say "step 5: booting the guest under $accel; the scenarios run inside (stopped after ${TIMEOUT}s)"
# The guest's own clock: kernel start to its first scenario line ("" before it got there).
started() {
    grep -a -o 'ci-run: start at [0-9.]*' "$share/console.log" 2>/dev/null | head -n1 |
        awk '{ print $4 }' || true
}
t=$(now)
rc=0
qemu "$accel" "$share" "$TIMEOUT" || rc=$?
boot=$(started)
if [[ ! -f $share/out/rc && -z $boot ]]; then
    # The guest never reached its scenarios (it died booting): nothing of ours ran, so
    # the boot is tried once more, and what the console said is shown first.
    echo "the guest did not reach its scenarios (QEMU exit $rc); console tail:"
    tail -n 40 "$share/console.log" 2>/dev/null || true
    say "step 5 again: booting the guest a second time"
    rc=0
    qemu "$accel" "$share" "$TIMEOUT" || rc=$?
    boot=$(started)
fi
ran=$(since "$t")
[[ -f $share/out/log ]] && cat "$share/out/log"
timing boot "${boot:-?}"
timing guest "$ran"
# Each part's own seconds inside the guest (guest.sh), as `part-NAME SECONDS` lines.
if [[ -f $share/out/parts ]]; then
    while read -r part took; do timing "part-$part" "$took"; done <"$share/out/parts"
fi
say "result"
echo "accelerator $accel; guest booted to its scenarios in ${boot:-?}s (guest clock); QEMU ran ${ran}s; whole tier $(since "$start_all")s"
for f in launch launch-run; do
    if [[ -f $share/out/$f.txt ]]; then
        echo "$f cost (docs/performance.md):"
        sed 's/^/  /' "$share/out/$f.txt"
    fi
done
if [[ ! -f $share/out/rc ]]; then
    echo "no result from the guest (QEMU exit $rc); console tail:"
    tail -n 40 "$share/console.log"
    exit 1
fi
guest_rc=$(cat "$share/out/rc")
[[ $guest_rc == 0 ]] || die "$guest_rc check(s) failed in the guest: see the FAIL lines above"
echo "vm: every check passed"
