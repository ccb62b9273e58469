# tests/vm/polkit.sh: polkit's unit-name check on systemd 257, sourced by guest.sh (helpers
# from tests/container/lib.sh). The rule is nix/units.nix's, rendered for systemd 257: no
# fallback for a call that carries no unit name. The negative control installs the same
# rule rendered for 252 (with the fallback), under which ClearJobs is admitted.
# shellcheck shell=bash

scenario "polkit: brokerd's user may manage boxmaker-tool-* units only (systemd 257)"
expect "the installed rule is the one rendered for systemd 257 (no fallback for a call without a unit)" \
    "grep -q 'for systemd 257' /etc/polkit-1/rules.d/50-boxmaker.rules && ! grep -q '!unit' /etc/polkit-1/rules.d/50-boxmaker.rules"
wait_for 10 "brokerd runs (its DynamicUser exists)" "active boxmaker-brokerd.service"
run_unit='systemd-run --wait --quiet --no-ask-password -p DynamicUser=yes'
clear_jobs='busctl call --allow-interactive-authorization=no org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager ClearJobs'
polkit_checks() { # polkit_checks: what holds under either rule
    expect "polkit: brokerd's user may start a boxmaker-tool-* unit" \
        "\$(as_role brokerd) $run_unit --unit=boxmaker-tool-probe-$1 true"
    refuse "polkit: brokerd's user may not start another unit (not-a-tool-probe)" \
        "\$(as_role brokerd) $run_unit --unit=not-a-tool-probe-$1 true"
    refuse "polkit: the owner may not start a boxmaker-tool-* unit" \
        "owner $run_unit --unit=boxmaker-tool-probe-owner-$1 true"
    refuse "polkit: brokerd's user may not stop a unit that is not a tool's" \
        "\$(as_role brokerd) systemctl --no-ask-password stop not-a-tool-probe-$1.service"
}
polkit_checks 1
expect "control: root may call ClearJobs" "$clear_jobs"
refuse "polkit: brokerd's user may not call ClearJobs (a call that carries no unit)" \
    "\$(as_role brokerd) $clear_jobs"

# Negative control: the rule as rendered for systemd 252 admits a call without a unit.
cp /etc/polkit-1/rules.d/50-boxmaker.rules /tmp/polkit-257.rules
cp /opt/boxmaker-vm/polkit-252.rules /etc/polkit-1/rules.d/50-boxmaker.rules
systemctl restart polkit.service
expect "control: under the rule rendered for systemd 252, brokerd's user may call ClearJobs" \
    "\$(as_role brokerd) $clear_jobs"
polkit_checks 2
cp /tmp/polkit-257.rules /etc/polkit-1/rules.d/50-boxmaker.rules
systemctl restart polkit.service
refuse "the rule for 257 back in place: ClearJobs is refused again" "\$(as_role brokerd) $clear_jobs"
